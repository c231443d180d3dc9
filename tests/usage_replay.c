/*
 * Test helper (built by tests/test_allocator_kernel.py against libbtrfsx_core):
 * compares the allocator model with the chunks a real kernel created.
 *
 *   usage_replay dump <device>...
 *       Reads an unmounted filesystem with bx_usage_read_offline() and prints
 *       its state: "dev <devid> <total_bytes> <hint>", "ext <devid> <start> <length>
 *       <chunk_offset>", "chunk <logical> <type> <length> <num_stripes>
 *       <devid> <physical> ...".
 *   usage_replay replay [--ignore-hints] [--hint-kernel] [--data-enospc] <before> <after>
 *       Starts the model from the devices, hints and extents of dump <before> and
 *       allocates, one after the other, chunks of the types the kernel created
 *       since (the chunks of <after> missing from <before>, by logical
 *       address). Prints one line per chunk, "ok" or "MISMATCH" with both
 *       placements, then "replayed N chunks, M mismatches, K removed".
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
#include "fsops/usage.h"
#include "kernel-shared/allocator.h"

static int dump(char **paths, int nr)
{
	struct bx_usage_input in;
	char mnt[256];
	int ret = bx_usage_read_offline(paths, nr, NULL, &in, mnt, sizeof(mnt));

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
		const struct bx_usage_chunk *ch = &in.chunks[c];

		printf("chunk %" PRIu64 " %" PRIu64 " %" PRIu64 " %u", ch->logical, ch->type,
		       ch->length, ch->num_stripes);
		for (uint32_t s = 0; s < ch->num_stripes; s++)
			printf(" %" PRIu64 " %" PRIu64, in.stripes[ch->first_stripe + s].devid,
			       in.stripes[ch->first_stripe + s].physical);
		printf("\n");
	}
	bx_usage_input_release(&in);
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

static int replay(const char *before_file, const char *after_file, bool ignore_hints,
		  bool hint_kernel, bool data_enospc)
{
	struct bx_alloc_device devs[MAX_DEVS];
	struct bx_alloc_params params = {
		.flags = (bx_kernel_sort_pre_6_9() ? BX_ALLOC_SORT_PRE_6_9 : 0) |
			 (hint_kernel ? BX_ALLOC_HINT_KERNEL : 0),
	};
	struct state before, after;
	struct bx_alloc_sim *sim;
	size_t nr_new = 0, bad = 0, removed = 0;
	struct chunk_rec *fresh;

	if (load(before_file, &before) || load(after_file, &after))
		return 2;
	for (size_t i = 0; i < before.nr_devs; i++) {
		bx_alloc_device_init(&devs[i], before.devid[i], before.total[i],
				     ignore_hints ? 0 : before.hint[i]);
		for (size_t e = 0; e < before.nr_ext; e++)
			if (before.ext[e][0] == before.devid[i])
				bx_alloc_device_add_extent(&devs[i], before.ext[e][1], before.ext[e][2]);
	}
	for (size_t c = 0; c < before.nr_chunks; c++)
		if (!has_chunk(&after, before.chunks[c].logical))
			removed++;
	fresh = calloc(after.nr_chunks + 1, sizeof(*fresh));
	for (size_t c = 0; c < after.nr_chunks; c++)
		if (!has_chunk(&before, after.chunks[c].logical))
			fresh[nr_new++] = after.chunks[c];
	qsort(fresh, nr_new, sizeof(*fresh), chunk_cmp);
	if (bx_alloc_sim_new(devs, before.nr_devs, &params, &sim))
		return 2;
	for (size_t c = 0; c < nr_new; c++) {
		const struct chunk_rec *k = &fresh[c];
		struct bx_alloc_chunk m;
		int ret = bx_alloc_sim_step(sim, k->type, &m);
		bool ok = ret == 0 && m.num_stripes == k->num_stripes &&
			  m.stripe_size == k->stripe_size;

		for (uint32_t s = 0; ok && s < k->num_stripes; s++)
			ok = m.stripes[s].devid == k->devid[s] && m.stripes[s].physical == k->physical[s];
		printf("%s chunk %" PRIu64 " type 0x%" PRIx64, ok ? "ok" : "MISMATCH", k->logical,
		       k->type);
		print_kernel(k);
		if (!ok) {
			printf(" | model(%d):", ret);
			if (!ret) {
				printf(" ss %" PRIu64, m.stripe_size);
				for (uint32_t s = 0; s < m.num_stripes; s++)
					printf(" %" PRIu64 "@%" PRIu64, m.stripes[s].devid,
					       m.stripes[s].physical);
			}
			bad++;
		}
		printf("\n");
		if (!ok)
			break;	/* the states differ from here on */
	}
	if (data_enospc && !bad && !predicts_data_enospc(sim, data_type(&after)))
		bad++;
	printf("replayed %zu chunks, %zu mismatches, %zu removed\n", nr_new, bad, removed);
	bx_alloc_sim_free(sim);
	for (size_t i = 0; i < before.nr_devs; i++)
		bx_alloc_device_release(&devs[i]);
	free(fresh);
	free(before.ext);
	free(before.chunks);
	free(after.ext);
	free(after.chunks);
	return bad || removed ? 1 : 0;
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
