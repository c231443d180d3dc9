/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the kernel puts a data extent (fs/btrfs/extent-tree.c
 * find_free_extent()), on the kernel state (state.h); the relocation of a
 * data chunk extent by extent calls it for each (relocation.c):
 *
 *  - an extent needs one free range of its whole size (the relocation
 *    preallocates it with min_size = its size): the block group that holds
 *    the hint first, from the hint on (the end of the cluster's previous
 *    extent), then every block group in list order (by address), each
 *    offering its largest free range (the free space cache's bytes index);
 *    when none has room, a new chunk is allocated and the search repeated;
 *    in a raid5 or raid6 block group an extent of a full stripe or more
 *    starts on a full stripe (seen: a remove from a 4-device raid5 on 6.1
 *    took a new chunk for 7 MiB the unaligned free space would have held);
 *  - single data has no profile bit, so block_group_bits() lets it into a
 *    data block group of any profile: after the single ones, those of the
 *    other profiles in the kernel's raid index order (by profile bit), and
 *    its reservation counts their free space too. A convert to single
 *    first fills the old profile's block groups that are still to move
 *    (seen: raid5 to single on 6.1);
 *  - with size_classes (6.3 and later: below 128 KiB, below 8 MiB, larger)
 *    a block group gets the class of its first allocation, or of the
 *    smallest of five sampled extents when it is read in; an extent goes
 *    to a group of its class, then to one without a class, then a new
 *    chunk is allocated, and only then to a group of another class.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/error.h"
#include "format/ctree.h"
#include "model/kernel/state-private.h"

/* The passes of find_free_extent() that matter here. */
enum pass { PASS_CLASS, PASS_UNSET, PASS_ALLOC_CHUNK, PASS_WRONG_CLASS, PASS_END };

#define MAX_CLUSTER 128

static bool class_fits(const struct bx_kstate *s, const struct bx_ks_chunk *c, enum bx_ks_size_class cls,
		       enum pass pass)
{
	if (!s->size_classes || pass >= PASS_WRONG_CLASS)
		return true;
	if (pass >= PASS_UNSET && c->size_class == BX_KS_SC_NONE)
		return true;
	return c->size_class == cls;
}

/* Whether chunk @c takes extents at all: there, not moving, and with free space. */
static bool open_for_extents(const struct bx_ks_chunk *c)
{
	return !c->gone && !c->moving && c->nr_holes;
}

static bool usable(const struct bx_kstate *s, size_t idx, uint64_t type)
{
	const struct bx_ks_chunk *c = &s->chunks[idx];

	return c->type == type && open_for_extents(c);
}

/* usable(), for an extent of @type in a block group of another profile too. */
static bool usable_for(const struct bx_kstate *s, size_t idx, uint64_t type)
{
	const struct bx_ks_chunk *c = &s->chunks[idx];

	if (c->type == type || !bx_ks_takes_any_data(s, type))
		return usable(s, idx, type);
	return (c->type & BTRFS_BLOCK_GROUP_TYPE_MASK) == BTRFS_BLOCK_GROUP_DATA &&
	       open_for_extents(c);
}

/* The largest free range of @c (the lowest of equals), or NULL. */
static const struct bx_ks_hole *largest(const struct bx_ks_chunk *c)
{
	const struct bx_ks_hole *best = NULL;

	for (size_t h = 0; h < c->nr_holes; h++)
		if (!best || c->holes[h].len > best->len)
			best = &c->holes[h];
	return best;
}

/*
 * The alignment of an allocation of @len in @c (btrfs_find_space_for_alloc():
 * the block group's full stripe): in a raid5 or raid6 block group one of a
 * full stripe or more starts on a full stripe from the block group's start;
 * 0 for none.
 */
static uint64_t alignment(const struct bx_kstate *s, const struct bx_ks_chunk *c, uint64_t len)
{
	uint32_t parity = c->type & BTRFS_BLOCK_GROUP_RAID6 ? 2 :
			  c->type & BTRFS_BLOCK_GROUP_RAID5 ? 1 : 0;
	uint64_t full;

	if (!parity || c->num_stripes <= parity ||
	    !bx_kernel_has(&s->in->kernel, BX_KT_RAID56_FULL_STRIPE))
		return 0;
	full = (uint64_t)(c->num_stripes - parity) * BTRFS_STRIPE_LEN;
	return len >= full ? full : 0;
}

/* Where an extent of @len starts in free range @x of @c from @from on, or 0 when it does not fit. */
static uint64_t fit(const struct bx_kstate *s, const struct bx_ks_chunk *c,
		    const struct bx_ks_hole *x, uint64_t from, uint64_t len)
{
	uint64_t align = alignment(s, c, len), start = x->start > from ? x->start : from;

	if (align)
		start = c->logical + (start - c->logical + align - 1) / align * align;
	if (start >= x->start + x->len || x->start + x->len - start < len)
		return 0;
	return start;
}

/* The largest free range of @c an extent of @len fits in, aligned (the bytes index); its start, or 0. */
static uint64_t fit_largest(const struct bx_kstate *s, const struct bx_ks_chunk *c, uint64_t len)
{
	const struct bx_ks_hole *best = NULL;
	uint64_t at = 0;

	for (size_t h = 0; h < c->nr_holes; h++) {
		uint64_t start = fit(s, c, &c->holes[h], 0, len);

		if (start && (!best || c->holes[h].len > best->len)) {
			best = &c->holes[h];
			at = start;
		}
	}
	return at;
}

/* The first free range of @c from @at on (or holding it) of @len bytes; its start, or 0. */
static uint64_t from_hint(const struct bx_kstate *s, const struct bx_ks_chunk *c, uint64_t at,
			  uint64_t len)
{
	for (size_t h = 0; h < c->nr_holes; h++) {
		const struct bx_ks_hole *x = &c->holes[h];
		uint64_t start;

		if (x->start + x->len <= at)
			continue;
		start = fit(s, c, x, at, len);
		if (start)
			return start;
	}
	return 0;
}

/* The chunk holding @logical, or -1 (chunks are by address but for reused ranges). */
static long chunk_at(const struct bx_kstate *s, uint64_t logical)
{
	size_t lo = 0, hi = s->nr_chunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->chunks[mid].logical + s->chunks[mid].length <= logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < s->nr_chunks; i++)
		if (!s->chunks[i].gone && s->chunks[i].logical <= logical &&
		    logical < s->chunks[i].logical + s->chunks[i].length)
			return (long)i;
	return -1;
}

/* ---- the index of free ranges ---- */

static void tree_put(uint64_t *tree, size_t leaves, size_t i, uint64_t value)
{
	size_t k = leaves + i;

	tree[k] = value;
	for (k >>= 1; k; k >>= 1)
		tree[k] = tree[2 * k] > tree[2 * k + 1] ? tree[2 * k] : tree[2 * k + 1];
}

/* The first leaf of at least @len, or SIZE_MAX. */
static size_t tree_first(const uint64_t *tree, size_t leaves, uint64_t len)
{
	size_t k = 1;

	if (!leaves || tree[1] < len)
		return SIZE_MAX;
	while (k < leaves)
		k = tree[2 * k] >= len ? 2 * k : 2 * k + 1;
	return k - leaves;
}

static int class_of(const struct bx_kstate *s, const struct bx_ks_chunk *c)
{
	return s->size_classes ? (int)c->size_class : 0;
}

/* Chunk @i's leaf: its largest free range under its class, 0 under the others. */
void bx_ks_extent_index_set(struct bx_kstate *s, size_t i)
{
	struct bx_ks_hole_index *x = &s->hix;
	const struct bx_ks_hole *h = usable(s, i, x->type) ? largest(&s->chunks[i]) : NULL;
	int cls = class_of(s, &s->chunks[i]);

	for (int k = 0; k <= BX_KS_SC_LARGE; k++)
		if (k != cls && x->tree[k][x->leaves + i])
			tree_put(x->tree[k], x->leaves, i, 0);
	if (x->tree[cls][x->leaves + i] != (h ? h->len : 0))
		tree_put(x->tree[cls], x->leaves, i, h ? h->len : 0);
}

/* The index for chunks of @type, with every chunk there is. */
int bx_ks_extent_index(struct bx_kstate *s, uint64_t type)
{
	struct bx_ks_hole_index *x = &s->hix;

	if (x->stale || x->type != type || s->nr_chunks > x->leaves) {
		size_t leaves = 64;

		while (leaves < 2 * s->nr_chunks)
			leaves *= 2;
		for (int k = 0; k <= BX_KS_SC_LARGE; k++) {
			free(x->tree[k]);
			x->tree[k] = calloc(2 * leaves, sizeof(*x->tree[k]));
			if (!x->tree[k])
				return bx_error(-ENOMEM, "out of memory");
		}
		*x = (struct bx_ks_hole_index){ type, 0, leaves,
					     { x->tree[0], x->tree[1], x->tree[2], x->tree[3] }, false };
	}
	for (; x->nr < s->nr_chunks; x->nr++)
		bx_ks_extent_index_set(s, x->nr);
	return 0;
}

/* The first chunk (list order) of an allowed class with a free range of @len; or SIZE_MAX. */
static size_t hix_first(struct bx_kstate *s, enum bx_ks_size_class cls, enum pass pass, uint64_t len)
{
	size_t best = SIZE_MAX;

	for (int k = 0; k <= BX_KS_SC_LARGE; k++) {
		size_t i;

		if (s->size_classes && pass < PASS_WRONG_CLASS && k != (int)cls &&
		    !(pass >= PASS_UNSET && k == BX_KS_SC_NONE))
			continue;
		i = tree_first(s->hix.tree[k], s->hix.leaves, len);
		if (i < best)
			best = i;
	}
	return best;
}

/*
 * The first block group of another profile with a free range of @len, in
 * raid index order (the profile bits') and then list order; or SIZE_MAX.
 */
static size_t other_first(const struct bx_kstate *s, uint64_t type, enum bx_ks_size_class cls,
			  enum pass pass, uint64_t len)
{
	size_t best = SIZE_MAX;
	uint64_t best_profile = 0;

	for (size_t i = 0; i < s->nr_chunks; i++) {
		const struct bx_ks_chunk *c = &s->chunks[i];
		uint64_t profile = c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;

		if (c->type == type || !usable_for(s, i, type) || !class_fits(s, c, cls, pass) ||
		    !fit_largest(s, c, len))
			continue;
		if (best == SIZE_MAX || profile < best_profile) {
			best = i;
			best_profile = profile;
		}
	}
	return best;
}

/* Puts the extent at @at of chunk @i; the chunk takes @cls when it had none. */
static int put(struct bx_kstate *s, size_t i, uint64_t at, uint64_t len, enum bx_ks_size_class cls,
	       uint64_t *hint)
{
	int ret = bx_ks_put_extent(s, i, at, len);

	if (ret)
		return ret;
	if (s->size_classes && s->chunks[i].size_class == BX_KS_SC_NONE)
		s->chunks[i].size_class = cls;
	bx_ks_extent_index_set(s, i);
	*hint = at + len;
	return 1;
}

/* One search of find_free_extent(): 1 placed (at *@hint's new value), 0 not, or an errno. */
static int search(struct bx_kstate *s, uint64_t type, uint64_t len, enum pass pass, uint64_t *hint)
{
	enum bx_ks_size_class cls = bx_ks_size_class(len);
	long h = *hint ? chunk_at(s, *hint) : -1;
	uint64_t at;
	size_t i;
	int ret = bx_ks_extent_index(s, type);

	if (ret)
		return ret;
	if (h >= 0 && usable_for(s, (size_t)h, type) && class_fits(s, &s->chunks[h], cls, pass)) {
		at = from_hint(s, &s->chunks[h], *hint, len);
		if (at)
			return put(s, (size_t)h, at, len, cls, hint);
	}
	i = hix_first(s, cls, pass, len);
	at = i == SIZE_MAX ? 0 : fit_largest(s, &s->chunks[i], len);
	/* Aligned, the range the index offers may be short: the next ones in list order. */
	for (size_t j = i + 1; i != SIZE_MAX && !at && j < s->nr_chunks; j++) {
		if (usable(s, j, type) && class_fits(s, &s->chunks[j], cls, pass))
			at = fit_largest(s, &s->chunks[j], len);
		if (at)
			i = j;
	}
	if (!at && bx_ks_takes_any_data(s, type)) {
		i = other_first(s, type, cls, pass, len);
		at = i == SIZE_MAX ? 0 : fit_largest(s, &s->chunks[i], len);
	}
	return at ? put(s, i, at, len, cls, hint) : 0;
}

/* find_free_extent() for one extent: 1 placed, 0 no room (ENOSPC), or an errno. */
int bx_ks_place_extent(struct bx_kstate *s, uint64_t type, uint64_t len,
		       const struct bx_place_chunk *improve, uint64_t *hint)
{
	for (enum pass pass = PASS_CLASS; pass < PASS_END; pass++) {
		int ret;

		if (!s->size_classes && pass != PASS_CLASS && pass != PASS_ALLOC_CHUNK)
			continue;
		if (pass == PASS_ALLOC_CHUNK) {
			long n = bx_ks_pool_chunk(s, type, improve);

			if (n < 0 && n != -ENOSPC)
				return (int)n;
		}
		ret = search(s, type, len, pass, hint);
		if (ret)
			return ret;
	}
	return 0;
}

