/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The chunk map: chunk items in, logical -> physical per profile out. */
#ifndef BTRFSX_CHUNK_H
#define BTRFSX_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "format/ctree.h"
#include "format/profiles.h"

struct bx_device;
struct bx_fs;

/* Chunks with more stripes than this are refused (no real array has them). */
#define BX_MAX_STRIPES 256

struct bx_chunk_stripe {
	uint64_t devid;
	uint64_t physical;
	struct bx_device *dev;        /* NULL when the device is missing */
};

struct bx_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t type;
	uint64_t stripe_len;
	int num_stripes;
	int sub_stripes;
	struct bx_chunk_stripe stripes[];
};

struct bx_chunk_map {
	struct bx_chunk **chunks;     /* sorted by logical */
	size_t nr;
	size_t alloc;
};

/* One copy of a logical range on one device. */
struct bx_stripe_loc {
	struct bx_device *dev;        /* NULL when the device is missing */
	uint64_t devid;
	uint64_t physical;
};

/*
 * A RAID5/6 full stripe: its data stripes in logical order, then P, then Q
 * (RAID6), each with where it lives for the row holding the address asked for.
 */
struct bx_full_stripe {
	uint64_t logical_start;       /* logical address of data stripe 0's row */
	uint64_t stripe_len;
	int nr_data;
	int nr_parity;
	struct bx_stripe_loc stripes[BX_MAX_STRIPES];
};

const struct bx_chunk *bx_chunk_lookup(const struct bx_fs *fs, uint64_t logical);

/* Number of copies a logical address has (RAID5/6: 2 or 3, counting rebuilds). */
int bx_num_copies(const struct bx_fs *fs, uint64_t logical);

/*
 * Where copy @mirror (1-based) of @logical lives. *len is cut to what stays
 * contiguous on that device. RAID5/6 map mirror 1 to the data stripe; higher
 * mirrors are rebuilds, see bx_map_full_stripe. Returns 0, -ENOENT when no
 * chunk holds @logical, -EINVAL for a mirror that does not exist.
 */
int bx_map_logical(const struct bx_fs *fs, uint64_t logical, uint64_t *len, int mirror,
		   struct bx_stripe_loc *loc);

/* The RAID5/6 full stripe row holding @logical. */
int bx_map_full_stripe(const struct bx_fs *fs, uint64_t logical, struct bx_full_stripe *fstripe);

/* Iterates the items of a system chunk array; for the parser and its fuzzer. */
int bx_parse_sys_chunk_array(const struct btrfs_super_block *sb,
			     int (*fn)(void *arg, const struct btrfs_key *key,
				       const struct btrfs_chunk *chunk, size_t size),
			     void *arg);

/* Validates a chunk item of @size bytes; returns 0 or -EUCLEAN with a message. */
int bx_check_chunk_item(const struct btrfs_chunk *chunk, size_t size, uint32_t sectorsize);

int bx_chunk_map_insert(struct bx_fs *fs, uint64_t logical, const struct btrfs_chunk *chunk);

#endif
