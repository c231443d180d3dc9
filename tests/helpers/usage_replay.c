/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test helper (built by tests/test_allocator_kernel.py against libbtrfsx_core):
 * compares the allocator model with the chunks a real kernel created.
 *
 *   usage_replay dump <device>...
 *       Reads an unmounted filesystem with bx_snapshot_read_offline() and prints
 *       its state: "dev <devid> <total_bytes> <hint>", "ext <devid> <start> <length>
 *       <chunk_offset>", "chunk <logical> <type> <length> <num_stripes>
 *       <devid> <physical> ...".
 *   usage_replay replay [--ignore-hints] [--hint-kernel] [--data-enospc] <before> <after>
 *       Starts the model from the devices, hints and extents of dump <before> and
 *       allocates, one after the other, chunks of the types the kernel created
 *       since (the chunks of <after> missing from <before>, by logical
 *       address). Prints one line per chunk, "ok" or "MISMATCH" with both
 *       placements, then "replayed N chunks, M mismatches, K removed". A chunk
 *       of <before> missing from <after> was removed by the kernel during the
 *       fill: when the plain replay fails, its space is freed before each new
 *       chunk in turn and a position where everything matches is accepted.
 *       The model sorts devices with the running kernel's sort() (before or
 *       since 6.9). --ignore-hints runs the model as if no hint were set (what a kernel
 *       without hint support does); --hint-kernel: the kernel runs the hint
 *       allocator (BX_ALLOC_HINT_KERNEL); --data-enospc also checks that the model
 *       can place no further data chunk (the kernel's fill ended in ENOSPC):
 *       "enospc data predicted" or "MISMATCH enospc data".
 *       Exit 0 when everything matched.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/snapshot-read.h"
#include "fsops/usage.h"
#include "model/allocator.h"

static int dump(char **paths, int nr)
{
	struct bx_snapshot in;
	char mnt[256];
	int ret = bx_snapshot_read_offline(paths, nr, NULL, &in, mnt, sizeof(mnt));

	if (ret) {
		fprintf(stderr, "usage_replay: %s\n", bx_error_message(ret));
		return 1;
	}
	for (size_t i = 0; i < in.nr_devs; i++)
		printf("dev %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", in.devs[i].devid,
		       in.devs[i].total_bytes, in.devs[i].hint);
	for (size_t i = 0; i < in.nr_devs; i++)
		for (size_t e = 0; e < in.devs[i].nr_extents; e++)
			printf("ext %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
			       in.devs[i].devid, in.devs[i].extents[e].start,
			       in.devs[i].extents[e].length, in.devs[i].extents[e].chunk_offset);
	for (size_t c = 0; c < in.nr_chunks; c++) {
		const struct bx_snap_chunk *ch = &in.chunks[c];

		printf("chunk %" PRIu64 " %" PRIu64 " %" PRIu64 " %u", ch->logical, ch->type,
		       ch->length, ch->num_stripes);
		for (uint32_t s = 0; s < ch->num_stripes; s++)
			printf(" %" PRIu64 " %" PRIu64, in.stripes[ch->first_stripe + s].devid,
			       in.stripes[ch->first_stripe + s].physical);
		printf("\n");
	}
	bx_snapshot_release(&in);
	return 0;
}

#define MAX_DEVS 64
#define MAX_STRIPES 64

struct chunk_rec {
	uint64_t logical, type, length;
	uint32_t num_stripes;
	uint64_t devid[MAX_STRIPES], physical[MAX_STRIPES];
	uint64_t stripe_size;		/* from the device extents */
};

struct state {
	size_t nr_devs;
	uint64_t devid[MAX_DEVS], total[MAX_DEVS], hint[MAX_DEVS];
	size_t nr_ext, ext_cap;
	uint64_t (*ext)[4];
	size_t nr_chunks, chunks_cap;
	struct chunk_rec *chunks;
};

static int load(const char *file, struct state *st)
{
	char word[16];
	FILE *fp = fopen(file, "r");

	memset(st, 0, sizeof(*st));
	if (!fp) {
		perror(file);
		return -1;
	}
	while (fscanf(fp, "%15s", word) == 1) {
		if (!strcmp(word, "dev") && st->nr_devs < MAX_DEVS) {
			if (fscanf(fp, "%" SCNu64 " %" SCNu64 " %" SCNu64, &st->devid[st->nr_devs],
				   &st->total[st->nr_devs], &st->hint[st->nr_devs]) != 3)
				break;
			st->nr_devs++;
		} else if (!strcmp(word, "ext")) {
			if (st->nr_ext == st->ext_cap) {
				st->ext_cap = st->ext_cap ? 2 * st->ext_cap : 64;
				st->ext = realloc(st->ext, st->ext_cap * sizeof(*st->ext));
			}
			if (fscanf(fp, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
				   &st->ext[st->nr_ext][0], &st->ext[st->nr_ext][1],
				   &st->ext[st->nr_ext][2], &st->ext[st->nr_ext][3]) != 4)
				break;
			st->nr_ext++;
		} else if (!strcmp(word, "chunk")) {
			struct chunk_rec *c;

			if (st->nr_chunks == st->chunks_cap) {
				st->chunks_cap = st->chunks_cap ? 2 * st->chunks_cap : 64;
				st->chunks = realloc(st->chunks, st->chunks_cap * sizeof(*st->chunks));
			}
			c = &st->chunks[st->nr_chunks];
			memset(c, 0, sizeof(*c));
			if (fscanf(fp, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %u", &c->logical,
				   &c->type, &c->length, &c->num_stripes) != 4 ||
			    c->num_stripes > MAX_STRIPES)
				break;
			for (uint32_t s = 0; s < c->num_stripes; s++)
				if (fscanf(fp, "%" SCNu64 " %" SCNu64, &c->devid[s],
					   &c->physical[s]) != 2)
					break;
			st->nr_chunks++;
		}
	}
	fclose(fp);
	for (size_t c = 0; c < st->nr_chunks; c++)
		for (size_t e = 0; e < st->nr_ext; e++)
			if (st->ext[e][3] == st->chunks[c].logical)
				st->chunks[c].stripe_size = st->ext[e][2];
	return 0;
}

static bool has_chunk(const struct state *st, uint64_t logical)
{
	for (size_t c = 0; c < st->nr_chunks; c++)
		if (st->chunks[c].logical == logical)
			return true;
	return false;
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct chunk_rec *x = a, *y = b;

	return x->logical < y->logical ? -1 : x->logical > y->logical;
}

static void print_kernel(const struct chunk_rec *c)
{
	printf(" kernel: ss %" PRIu64, c->stripe_size);
	for (uint32_t s = 0; s < c->num_stripes; s++)
		printf(" %" PRIu64 "@%" PRIu64, c->devid[s], c->physical[s]);
}

/* The type of a data chunk of @st (0 when it has none). */
static uint64_t data_type(const struct state *st)
{
	for (size_t c = 0; c < st->nr_chunks; c++)
		if (st->chunks[c].type & BTRFS_BLOCK_GROUP_DATA)
			return st->chunks[c].type;
	return 0;
}

/* After the kernel's last chunk, the model must have no room for another data chunk. */
static bool predicts_data_enospc(struct bx_alloc_sim *sim, uint64_t type)
{
	struct bx_alloc_chunk m;
	int ret = type ? bx_alloc_sim_step(sim, type, &m) : -ENOSPC;

	printf("%s (model %d)\n", ret == -ENOSPC ? "enospc data predicted" :
	       "MISMATCH enospc data", ret);
	return ret == -ENOSPC;
}

struct replay {
	const struct state *before;
	const struct chunk_rec *fresh;	/* the kernel's new chunks, by logical address */
	size_t nr_new;
	const struct state *after;	/* a chunk of before missing here was removed */
	struct bx_alloc_params params;
	bool ignore_hints;
};

static bool was_removed(const struct replay *rp, uint64_t chunk_offset)
{
	return has_chunk(rp->before, chunk_offset) && !has_chunk(rp->after, chunk_offset);
}

/*
 * The model's devices as they were before new chunk #@at: the extents of
 * <before> (but those of removed chunks when @freed) and the stripes of the
 * new chunks before @at, where the kernel put them.
 */
static void devices_at(const struct replay *rp, size_t at, bool freed, struct bx_alloc_device *devs)
{
	const struct state *b = rp->before;

	for (size_t i = 0; i < b->nr_devs; i++) {
		bx_alloc_device_init(&devs[i], b->devid[i], b->total[i],
				     rp->ignore_hints ? 0 : b->hint[i]);
		for (size_t e = 0; e < b->nr_ext; e++)
			if (b->ext[e][0] == b->devid[i] && !(freed && was_removed(rp, b->ext[e][3])))
				bx_alloc_device_add_extent(&devs[i], b->ext[e][1], b->ext[e][2]);
		for (size_t c = 0; c < at; c++)
			for (uint32_t s = 0; s < rp->fresh[c].num_stripes; s++)
				if (rp->fresh[c].devid[s] == b->devid[i])
					bx_alloc_device_add_extent(&devs[i], rp->fresh[c].physical[s],
								   rp->fresh[c].stripe_size);
	}
}

static bool same_placement(const struct chunk_rec *k, int ret, const struct bx_alloc_chunk *m)
{
	bool ok = ret == 0 && m->num_stripes == k->num_stripes && m->stripe_size == k->stripe_size;

	for (uint32_t s = 0; ok && s < k->num_stripes; s++)
		ok = m->stripes[s].devid == k->devid[s] && m->stripes[s].physical == k->physical[s];
	return ok;
}

static void print_chunk(const struct chunk_rec *k, bool ok, int ret, const struct bx_alloc_chunk *m)
{
	printf("%s chunk %" PRIu64 " type 0x%" PRIx64, ok ? "ok" : "MISMATCH", k->logical, k->type);
	print_kernel(k);
	if (!ok) {
		printf(" | model(%d):", ret);
		if (!ret)
			printf(" ss %" PRIu64, m->stripe_size);
		for (uint32_t s = 0; !ret && s < m->num_stripes; s++)
			printf(" %" PRIu64 "@%" PRIu64, m->stripes[s].devid, m->stripes[s].physical);
	}
	printf("\n");
}

/*
 * Replays the new chunks from #@at on, the model started from devices_at();
 * the index of the first mismatch (nr_new when all matched), or -1 when the
 * model could not start. *@simp keeps the model for the ENOSPC check.
 */
static long replay_from(const struct replay *rp, size_t at, bool freed, bool print,
			struct bx_alloc_sim **simp, struct bx_alloc_device *devs)
{
	size_t c = at;

	devices_at(rp, at, freed, devs);
	if (bx_alloc_sim_new(devs, rp->before->nr_devs, &rp->params, simp))
		return -1;
	for (; c < rp->nr_new; c++) {
		struct bx_alloc_chunk m;
		int ret = bx_alloc_sim_step(*simp, rp->fresh[c].type, &m);
		bool ok = same_placement(&rp->fresh[c], ret, &m);

		if (print)
			print_chunk(&rp->fresh[c], ok, ret, &m);
		if (!ok)
			break;	/* the states differ from here on */
	}
	return (long)c;
}

static void release_devices(const struct replay *rp, struct bx_alloc_device *devs,
			    struct bx_alloc_sim *sim)
{
	bx_alloc_sim_free(sim);
	for (size_t i = 0; i < rp->before->nr_devs; i++)
		bx_alloc_device_release(&devs[i]);
}

/*
 * The kernel's cleaner may delete a block group it emptied during the fill
 * and reuse its space at once, at a moment no dump shows: when chunks were
 * removed and the plain replay fails, the removed chunks are freed before
 * each new chunk in turn (up to the first mismatch: the chunks before it were
 * placed with them still there); a position where all match is accepted.
 */
static bool replay_with_removal(const struct replay *rp, size_t first_mismatch, bool data_enospc,
				uint64_t dtype)
{
	for (size_t at = 0; at <= first_mismatch && at <= rp->nr_new; at++) {
		struct bx_alloc_device devs[MAX_DEVS];
		struct bx_alloc_sim *sim = NULL;
		long end = replay_from(rp, at, true, false, &sim, devs);
		bool ok = end == (long)rp->nr_new;

		if (ok && data_enospc) {
			struct bx_alloc_chunk m;

			ok = bx_alloc_sim_step(sim, dtype, &m) == -ENOSPC || !dtype;
		}
		release_devices(rp, devs, sim);
		if (ok) {
			printf("ok with the removed chunks freed before new chunk #%zu\n", at);
			return true;
		}
	}
	printf("MISMATCH with the removed chunks freed before any new chunk\n");
	return false;
}

static int replay(const char *before_file, const char *after_file, bool ignore_hints,
		  bool hint_kernel, bool data_enospc)
{
	struct bx_alloc_device devs[MAX_DEVS];
	struct state before, after;
	struct bx_kernel running;
	struct replay rp = {
		.before = &before, .after = &after, .ignore_hints = ignore_hints,
	};
	struct bx_alloc_sim *sim = NULL;
	struct chunk_rec *fresh;
	size_t nr_new = 0, removed = 0, bad = 0;
	long end;

	bx_kernel_running(&running);
	rp.params.flags = bx_kernel_alloc_flags(&running) | (hint_kernel ? BX_ALLOC_HINT_KERNEL : 0);
	if (load(before_file, &before) || load(after_file, &after))
		return 2;
	for (size_t c = 0; c < before.nr_chunks; c++)
		if (!has_chunk(&after, before.chunks[c].logical))
			removed++;
	fresh = calloc(after.nr_chunks + 1, sizeof(*fresh));
	for (size_t c = 0; c < after.nr_chunks; c++)
		if (!has_chunk(&before, after.chunks[c].logical))
			fresh[nr_new++] = after.chunks[c];
	qsort(fresh, nr_new, sizeof(*fresh), chunk_cmp);
	rp.fresh = fresh;
	rp.nr_new = nr_new;
	end = replay_from(&rp, 0, false, true, &sim, devs);
	if (end < 0)
		return 2;
	if (end < (long)nr_new)
		bad++;
	if (data_enospc && !bad && !predicts_data_enospc(sim, data_type(&after)))
		bad++;
	release_devices(&rp, devs, sim);
	if (bad && removed && replay_with_removal(&rp, (size_t)end, data_enospc, data_type(&after)))
		bad = 0;
	printf("replayed %zu chunks, %zu mismatches, %zu removed\n", nr_new, bad, removed);
	free(fresh);
	free(before.ext);
	free(before.chunks);
	free(after.ext);
	free(after.chunks);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "dump"))
		return dump(argv + 2, argc - 2);
	if (argc >= 4 && !strcmp(argv[1], "replay")) {
		bool ignore_hints = false, hint_kernel = false, data_enospc = false;
		int i = 2;

		for (; i < argc - 2; i++) {
			if (!strcmp(argv[i], "--ignore-hints"))
				ignore_hints = true;
			else if (!strcmp(argv[i], "--hint-kernel"))
				hint_kernel = true;
			else if (!strcmp(argv[i], "--data-enospc"))
				data_enospc = true;
			else
				break;
		}
		if (i == argc - 2)
			return replay(argv[i], argv[i + 1], ignore_hints, hint_kernel, data_enospc);
	}
	fprintf(stderr, "usage: usage_replay dump <device>... | "
		"replay [--ignore-hints] [--hint-kernel] [--data-enospc] <before> <after>\n");
	return 2;
}
