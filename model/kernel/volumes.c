/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which chunks an operation relocates, in the kernel's order
 * (fs/btrfs/volumes.c: btrfs_shrink_device() from the highest device extent
 * down, __btrfs_balance() from the last chunk down), and the usage filter
 * of a balance (chunk_usage_range_filter()). See relocation.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/error.h"
#include "format/ctree.h"
#include "model/kernel/relocation.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

/* @pct percent of @len, as the kernel's balance filters compute it (div_factor_fine). */
static uint64_t percent_of(uint64_t len, unsigned int pct)
{
	return pct == 100 ? len : len * pct / 100;
}

/*
 * The kernel's usage filter (chunk_usage_range_filter; a single value N is
 * the range 0..N, chunk_usage_filter): the chunk is balanced when its used
 * bytes are at least MIN % and below MAX % of its size; MAX 0 takes the
 * empty ones. Mixed chunks take data's filter.
 */
bool bx_usage_filter_selects(const struct bx_usage_filter *f, uint64_t type, uint64_t length,
			     uint64_t used)
{
	bool data = type & BTRFS_BLOCK_GROUP_DATA;
	unsigned int min = data ? f->data_min : f->metadata_min;
	unsigned int max = data ? f->data_max : f->metadata_max;
	uint64_t low = min ? percent_of(length, min) : 0;
	uint64_t high = max ? percent_of(length, max) : 1;

	return low <= used && used < high;
}

/* ---- the order of the chunks ---- */

struct chunk_key {
	size_t idx;
	uint64_t key;
};

static int key_desc(const void *a, const void *b)
{
	const struct chunk_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int bx_ks_chunks_on_device(const struct bx_kstate *s, uint64_t devid, uint64_t end,
			   struct bx_reloc_list *ml)
{
	struct chunk_key *keys = calloc(s->nr_chunks + 1, sizeof(*keys));
	size_t nr = 0;

	if (!keys)
		return OOM();
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct bx_ks_chunk *pc = &s->chunks[c];
		bool found = false;
		uint64_t top = 0;

		for (uint32_t k = 0; !pc->gone && k < pc->num_stripes; k++) {
			if (pc->stripes[k].devid != devid ||
			    pc->stripes[k].physical + pc->stripe_size <= end)
				continue;
			found = true;
			if (pc->stripes[k].physical > top)
				top = pc->stripes[k].physical;
		}
		if (found)
			keys[nr++] = (struct chunk_key){ c, top };
	}
	qsort(keys, nr, sizeof(*keys), key_desc);
	ml->idx = calloc(nr + 1, sizeof(*ml->idx));
	if (!ml->idx) {
		free(keys);
		return OOM();
	}
	for (size_t i = 0; i < nr; i++)
		ml->idx[i] = keys[i].idx;
	ml->nr = nr;
	free(keys);
	return 0;
}

int bx_ks_chunks_of_type(const struct bx_kstate *s, uint64_t types, struct bx_reloc_list *ml)
{
	ml->idx = calloc(s->nr_chunks + 1, sizeof(*ml->idx));
	if (!ml->idx)
		return OOM();
	for (size_t c = s->nr_chunks; c-- > 0;)
		if (!s->chunks[c].gone && (s->chunks[c].type & types))
			ml->idx[ml->nr++] = c;
	return 0;
}

int bx_ks_balance_chunks(const struct bx_kstate *s, uint64_t types, struct bx_reloc_list *ml)
{
	if (types & BTRFS_BLOCK_GROUP_METADATA)
		types |= BTRFS_BLOCK_GROUP_SYSTEM;
	return bx_ks_chunks_of_type(s, types, ml);
}

