/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the libFuzzer harnesses: feeding a system chunk array into
 * a chunk map the way bx_fs_open does, and exercising the logical -> physical
 * mapping on what ended up in it.
 *
 * Everything here must leave no memory behind (libFuzzer runs with leak
 * detection) and must touch every byte it is handed back, so AddressSanitizer
 * sees any read outside what the library allocated.
 */
#ifndef BTRFSX_FUZZ_COMMON_H
#define BTRFSX_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "disk/volumes.h"

/* A sink the optimiser cannot remove: reads land here. */
static volatile uint64_t fuzz_sink;

static inline void fuzz_touch(const void *ptr, size_t len)
{
	const volatile uint8_t *p = ptr;
	uint64_t acc = 0;

	for (size_t i = 0; i < len; i++)
		acc += p[i];
	fuzz_sink += acc;
}

struct fuzz_chunk_ctx {
	struct bx_fs *fs;
	uint32_t sectorsize;
	int nr_chunks;      /* items the parser handed out */
	int nr_valid;       /* of those, accepted by bx_check_chunk_item */
	int nr_inserted;    /* of those, accepted by the chunk map (an exact
			       duplicate is accepted without a new entry) */
};

/* The callback of bx_parse_sys_chunk_array, as volumes.c's sys_chunk_cb. */
static inline int fuzz_sys_chunk_cb(void *arg, const struct btrfs_key *key,
			     const struct btrfs_chunk *chunk, size_t size)
{
	struct fuzz_chunk_ctx *ctx = arg;

	ctx->nr_chunks++;
	/* The parser promises @size bytes of chunk item: read them all. */
	fuzz_touch(chunk, size);
	if (bx_check_chunk_item(chunk, size, ctx->sectorsize))
		return 0;   /* go on: later items still get parsed */
	ctx->nr_valid++;
	if (ctx->fs && bx_chunk_map_insert(ctx->fs, key->offset, chunk) == 0)
		ctx->nr_inserted++;
	return 0;
}

/* The map is sorted and its chunks neither overlap nor wrap past 2^64. */
static inline void fuzz_check_map(const struct bx_fs *fs)
{
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *a = fs->chunks.chunks[i], *b;

		if (a->length > UINT64_MAX - a->logical)
			abort();
		if (i + 1 == fs->chunks.nr)
			break;
		b = fs->chunks.chunks[i + 1];
		if (a->logical >= b->logical || a->length > b->logical - a->logical)
			abort();
	}
}

static inline void fuzz_map_one(const struct bx_fs *fs, uint64_t logical)
{
	int copies = bx_num_copies(fs, logical);
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);

	/* Mirror 0 and one past the last are invalid and must be refused. */
	for (int mirror = 0; mirror <= copies + 1; mirror++) {
		struct bx_stripe_loc loc;
		uint64_t len = 1ULL << 20;

		memset(&loc, 0, sizeof(loc));
		if (bx_map_logical(fs, logical, &len, mirror, &loc) == 0) {
			/* What the mapping returns must stay inside the chunk. */
			if (!chunk || len == 0 || len > chunk->length - (logical - chunk->logical))
				abort();
			fuzz_sink += loc.physical + loc.devid + len;
		}
	}
	if (chunk && (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK)) {
		struct bx_full_stripe *fstripe = malloc(sizeof(*fstripe));

		if (fstripe && bx_map_full_stripe(fs, logical, fstripe) == 0) {
			int n = fstripe->nr_data + fstripe->nr_parity;

			if (n < 1 || n > BX_MAX_STRIPES || n != chunk->num_stripes)
				abort();
			for (int i = 0; i < n; i++)
				fuzz_sink += fstripe->stripes[i].physical;
		}
		free(fstripe);
	}
}

/*
 * A few addresses of every chunk (start, inside the first stripes, the
 * middle, the end, just past it), each with every mirror, plus @extra.
 */
static inline void fuzz_map_chunks(const struct bx_fs *fs, const uint64_t *extra, size_t nr_extra)
{
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *c = fs->chunks.chunks[i];
		const uint64_t probes[] = {
			c->logical,
			c->logical + 4096,
			c->logical + BTRFS_STRIPE_LEN + 512,
			c->logical + 5 * BTRFS_STRIPE_LEN + 12345,
			c->logical + c->length / 2,
			c->logical + c->length - 1,
			c->logical + c->length,
			c->logical - 1,
		};

		for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++)
			fuzz_map_one(fs, probes[p]);
	}
	for (size_t i = 0; i < nr_extra; i++)
		fuzz_map_one(fs, extra[i]);
}

static inline void fuzz_chunk_map_free(struct bx_fs *fs)
{
	for (size_t i = 0; i < fs->chunks.nr; i++)
		free(fs->chunks.chunks[i]);
	free(fs->chunks.chunks);
	memset(&fs->chunks, 0, sizeof(fs->chunks));
}

/* bx_error keeps a per-thread message; bx_warn allocates, so drain it. */
static inline void fuzz_reset_messages(void)
{
	bx_error_clear();
	bx_warnings_clear();
}

#endif
