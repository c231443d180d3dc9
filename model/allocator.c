/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The chunk allocator model (see allocator.h for the contract).
 *
 * Modelled after Linux 6.18, fs/btrfs/volumes.c (regular allocation policy),
 * written from the format and algorithm facts, not from its code:
 *
 *  1. Limits (init_alloc_chunk_ctl): the per-profile constants; the space
 *     info's chunk size (data 10 GiB, system 32 MiB, metadata 1 GiB when the
 *     writable size is above 50 GiB else 256 MiB); max stripe size = min(chunk
 *     size, 1 GiB); system chunks on at most 58 devices, others on at most as
 *     many as a chunk item holds (506 with 16 KiB nodes); max chunk size also
 *     capped at 10% of the writable bytes (x * 10 / 100, rounded down); the
 *     minimum device extent is 64 KiB per stripe on the device.
 *  2. Gathering (gather_device_info): for every writable device in alloc_list
 *     order, total_avail = total_bytes - bytes_used; skipped when below the
 *     minimum extent; then find_free_dev_extent() for max stripe size times
 *     stripes per device: the first hole (above 1 MiB) at least that large
 *     wins and counts as exactly that large; failing that the largest hole
 *     (the first of equal ones) with its real size; skipped when that is below
 *     the minimum extent. The extent always starts at the hole's start.
 *  3. Sorting: lib/sort.c heapsort (not stable) by largest hole, then
 *     total_avail, both descending.
 *  4. decide_stripe_size_regular: devices rounded down to the increment,
 *     ENOSPC below the minimum, capped at the maximum; stripe size = the last
 *     device's hole / stripes per device; data stripes = (stripes - parity) /
 *     copies; if stripe * data stripes exceeds the max chunk size the stripe
 *     becomes min(roundup(max chunk / data stripes, 16 MiB), stripe); then at
 *     most 1 GiB and rounded down to 64 KiB; length = stripe * data stripes.
 *  5. create_chunk: stripe j of device i is at its hole start + j * stripe.
 *
 * Hints (README, "Allocation hints"): devices that the hint excludes are left
 * out; the rest are sorted by (tier, largest hole, total_avail) with the same
 * heapsort; whole tiers are taken until there are devs_min devices, and the
 * taken devices are sorted again by the mainline keys, every profile, one tier
 * or several. The hint kernels (V12, kakra's series) do that second sort even
 * with no hint set and for mixed block groups (BX_ALLOC_HINT_KERNEL), which
 * changes the order of devices with equal free space. (An earlier model kept
 * the tier order for RAID1, RAID1C3 and RAID1C4; both patched kernels re-sort,
 * tests/vm/test_vm_allocator.py shows it chunk by chunk.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/allocator.h"
#include "model/allocator-private.h"

#define SZ_64K (64 * 1024ULL)
#define SZ_16M (16 * 1024 * 1024ULL)
#define SZ_32M (32 * 1024 * 1024ULL)
#define SZ_256M (256 * 1024 * 1024ULL)
#define SZ_1G (1024 * 1024 * 1024ULL)
#define MAX_DATA_CHUNK_SIZE (10 * SZ_1G)
#define METADATA_1G_THRESHOLD (50 * SZ_1G)

/* On-disk sizes that bound the stripes of one chunk item. */
#define DISK_KEY_SIZE 17
#define HEADER_SIZE 101
#define ITEM_SIZE 25
#define CHUNK_ITEM_SIZE 80	/* struct btrfs_chunk with its first stripe */
#define STRIPE_SIZE 32
#define MAX_DEVS_SYS_CHUNK \
	((BTRFS_SYSTEM_CHUNK_ARRAY_SIZE - 2 * DISK_KEY_SIZE - 2 * CHUNK_ITEM_SIZE) / STRIPE_SIZE + 1)

/* x * 10 / 100 without overflowing for any x. */
static uint64_t ten_percent(uint64_t x)
{
	return (x / 100) * 10 + (x % 100) * 10 / 100;
}

int bx_alloc_limits(uint64_t type, uint64_t fs_total_bytes, uint32_t nodesize,
		    struct bx_alloc_limits *lim)
{
	struct bx_raid_attr raid;
	uint64_t chunk_size;

	if (bx_raid_attr(type, &raid) || !(type & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return -EINVAL;
	if (nodesize == 0)
		nodesize = 16384;
	if (nodesize < 4096 || nodesize > 65536)
		return -EINVAL;

	memset(lim, 0, sizeof(*lim));
	lim->raid = raid;

	/* calc_chunk_size(): the data bit wins for mixed block groups. */
	if (type & BTRFS_BLOCK_GROUP_DATA)
		chunk_size = MAX_DATA_CHUNK_SIZE;
	else if (type & BTRFS_BLOCK_GROUP_SYSTEM)
		chunk_size = SZ_32M;
	else if (fs_total_bytes > METADATA_1G_THRESHOLD)
		chunk_size = SZ_1G;
	else
		chunk_size = SZ_256M;

	lim->max_stripe_size = chunk_size < SZ_1G ? chunk_size : SZ_1G;
	lim->devs_max = lim->raid.devs_max;
	if (!lim->devs_max)
		lim->devs_max = (int)((nodesize - HEADER_SIZE - ITEM_SIZE - CHUNK_ITEM_SIZE) /
				      STRIPE_SIZE + 1);
	if ((type & BTRFS_BLOCK_GROUP_SYSTEM) && lim->devs_max > MAX_DEVS_SYS_CHUNK)
		lim->devs_max = MAX_DEVS_SYS_CHUNK;
	lim->max_chunk_size = ten_percent(fs_total_bytes);
	if (lim->max_chunk_size > chunk_size)
		lim->max_chunk_size = chunk_size;
	lim->dev_extent_min = SZ_64K * (uint64_t)lim->raid.dev_stripes;
	lim->dev_extent_want = lim->max_stripe_size * (uint64_t)lim->raid.dev_stripes;
	return 0;
}

/* Tier of each hint for data chunks and for metadata/system chunks (README's table). */
static const uint8_t tier_data[BX_HINT_MAX_KNOWN + 1] = { 2, 3, BX_TIER_NEVER, 1, 4 };
static const uint8_t tier_meta[BX_HINT_MAX_KNOWN + 1] = { 3, 2, 1, BX_TIER_NEVER, 4 };
/* For data with BX_ALLOC_DATA_ONLY_LAST: the map's priorities 0, -1, -99, -255. */
static const uint8_t tier_data_unsigned_map[BX_HINT_MAX_KNOWN + 1] = {
	1, 2, BX_TIER_NEVER, 4, 3
};

int bx_alloc_hint_tier(uint64_t hint, uint64_t type, uint32_t flags, bool *unknown)
{
	bool data = type & BTRFS_BLOCK_GROUP_DATA;

	if (unknown)
		*unknown = hint > BX_HINT_MAX_KNOWN;
	if (hint > BX_HINT_MAX_KNOWN || bx_type_is_mixed(type) || (flags & BX_ALLOC_IGNORE_HINTS))
		hint = BX_HINT_DATA_PREFERRED;
	else if (flags & BX_ALLOC_STRICT) {
		if (hint == BX_HINT_DATA_PREFERRED)
			hint = BX_HINT_DATA_ONLY;
		else if (hint == BX_HINT_METADATA_PREFERRED)
			hint = BX_HINT_METADATA_ONLY;
	}
	if (!data)
		return tier_meta[hint];
	return (flags & BX_ALLOC_DATA_ONLY_LAST) ? tier_data_unsigned_map[hint] : tier_data[hint];
}

/* ---- devices ---- */

int bx_alloc_device_init(struct bx_alloc_device *dev, uint64_t devid,
			 uint64_t total_bytes, uint64_t hint)
{
	memset(dev, 0, sizeof(*dev));
	dev->devid = devid;
	dev->total_bytes = total_bytes;
	dev->hint = hint;
	dev->writable = true;
	if (total_bytes <= BX_ALLOC_RESERVED)
		return 0;
	dev->holes = malloc(sizeof(*dev->holes));
	if (!dev->holes)
		return -ENOMEM;
	dev->holes[0].start = BX_ALLOC_RESERVED;
	dev->holes[0].len = total_bytes - BX_ALLOC_RESERVED;
	dev->nr_holes = 1;
	dev->holes_cap = 1;
	return 0;
}

void bx_alloc_device_release(struct bx_alloc_device *dev)
{
	free(dev->holes);
	dev->holes = NULL;
	dev->nr_holes = 0;
	dev->holes_cap = 0;
}

static int hole_cmp(const void *a, const void *b)
{
	const struct bx_alloc_hole *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/*
 * Sorts @h, clips it to [1 MiB, total) and merges overlapping and adjacent
 * holes, in place. Returns the new count.
 */
size_t alloc_normalize_holes(struct bx_alloc_hole *h, size_t nr, uint64_t total)
{
	size_t i, out = 0;

	qsort(h, nr, sizeof(*h), hole_cmp);
	for (i = 0; i < nr; i++) {
		uint64_t s = h[i].start, e = h[i].start + h[i].len;

		if (s < BX_ALLOC_RESERVED)
			s = BX_ALLOC_RESERVED;
		if (e > total)
			e = total;
		if (e <= s)
			continue;
		if (out && h[out - 1].start + h[out - 1].len >= s) {
			uint64_t pe = h[out - 1].start + h[out - 1].len;

			if (e > pe)
				h[out - 1].len = e - h[out - 1].start;
			continue;
		}
		h[out].start = s;
		h[out].len = e - s;
		out++;
	}
	return out;
}

int bx_alloc_device_set_holes(struct bx_alloc_device *dev,
			      const struct bx_alloc_hole *holes, size_t nr)
{
	struct bx_alloc_hole *copy = NULL;
	uint64_t reserved, free_bytes = 0;
	size_t i;

	for (i = 0; i < nr; i++)
		if (holes[i].start + holes[i].len < holes[i].start)
			return -EINVAL;
	if (nr) {
		copy = malloc(nr * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, holes, nr * sizeof(*copy));
		nr = alloc_normalize_holes(copy, nr, dev->total_bytes);
	}
	free(dev->holes);
	dev->holes = copy;
	dev->nr_holes = nr;
	dev->holes_cap = copy ? nr : 0;
	for (i = 0; i < nr; i++)
		free_bytes += copy[i].len;
	reserved = dev->total_bytes < BX_ALLOC_RESERVED ? dev->total_bytes : BX_ALLOC_RESERVED;
	dev->bytes_used = dev->total_bytes - reserved - free_bytes;
	return 0;
}

/* Whether @extents are by start already: a device's, read in key order, mostly are. */
static bool in_order(const struct bx_alloc_hole *extents, size_t nr)
{
	for (size_t i = 1; i < nr; i++)
		if (hole_cmp(&extents[i - 1], &extents[i]) > 0)
			return false;
	return true;
}

int bx_alloc_device_set_extents(struct bx_alloc_device *dev, struct bx_alloc_hole *extents,
				size_t nr)
{
	struct bx_alloc_hole *holes = calloc(nr + 1, sizeof(*holes));
	uint64_t pos = BX_ALLOC_RESERVED;
	size_t nh = 0;
	int ret;

	if (!holes)
		return -ENOMEM;
	if (!in_order(extents, nr))
		qsort(extents, nr, sizeof(*extents), hole_cmp);
	for (size_t i = 0; i < nr; i++) {
		if (extents[i].start > pos)
			holes[nh++] = (struct bx_alloc_hole){ pos, extents[i].start - pos };
		if (extents[i].start + extents[i].len > pos)
			pos = extents[i].start + extents[i].len;
	}
	if (dev->total_bytes > pos)
		holes[nh++] = (struct bx_alloc_hole){ pos, dev->total_bytes - pos };
	ret = bx_alloc_device_set_holes(dev, holes, nh);
	free(holes);
	return ret;
}

uint64_t bx_alloc_device_unallocated(const struct bx_alloc_device *dev)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < dev->nr_holes; i++) {
		uint64_t s = dev->holes[i].start, e = s + dev->holes[i].len;

		if (s < BX_ALLOC_RESERVED)
			s = BX_ALLOC_RESERVED;
		if (e > dev->total_bytes)
			e = dev->total_bytes;
		if (e > s)
			sum += e - s;
	}
	return sum;
}

/* Room for one more hole. Returns 0 or -ENOMEM. */
static int grow_holes(struct bx_alloc_device *dev)
{
	size_t cap = dev->holes_cap ? 2 * dev->holes_cap : 4;
	struct bx_alloc_hole *n;

	if (dev->nr_holes < dev->holes_cap)
		return 0;
	n = realloc(dev->holes, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	dev->holes = n;
	dev->holes_cap = cap;
	return 0;
}

int bx_alloc_device_add_extent(struct bx_alloc_device *dev, uint64_t start, uint64_t len)
{
	uint64_t end = start + len, s, e, hs, he;
	size_t i;

	if (len == 0 || end < start)
		return -EINVAL;
	s = start < BX_ALLOC_RESERVED ? BX_ALLOC_RESERVED : start;
	e = end > dev->total_bytes ? dev->total_bytes : end;
	if (e <= s) {
		dev->bytes_used += len;
		return 0;
	}
	for (i = 0; i < dev->nr_holes; i++) {
		hs = dev->holes[i].start;
		he = hs + dev->holes[i].len;
		if (hs <= s && e <= he)
			break;
		if (hs >= e)
			return -EEXIST;
	}
	if (i == dev->nr_holes)
		return -EEXIST;

	if (hs < s && e < he) {
		/* Split: the hole keeps its head, a new one takes the tail. */
		if (grow_holes(dev))
			return -ENOMEM;
		memmove(&dev->holes[i + 2], &dev->holes[i + 1],
			(dev->nr_holes - i - 1) * sizeof(dev->holes[0]));
		dev->holes[i + 1].start = e;
		dev->holes[i + 1].len = he - e;
		dev->holes[i].len = s - hs;
		dev->nr_holes++;
	} else if (hs < s) {
		dev->holes[i].len = s - hs;
	} else if (e < he) {
		dev->holes[i].start = e;
		dev->holes[i].len = he - e;
	} else {
		memmove(&dev->holes[i], &dev->holes[i + 1],
			(dev->nr_holes - i - 1) * sizeof(dev->holes[0]));
		dev->nr_holes--;
	}
	dev->bytes_used += len;
	return 0;
}

int bx_alloc_device_remove_extent(struct bx_alloc_device *dev, uint64_t start, uint64_t len)
{
	uint64_t end = start + len, s, e;
	size_t i;

	if (len == 0 || end < start)
		return -EINVAL;
	s = start < BX_ALLOC_RESERVED ? BX_ALLOC_RESERVED : start;
	e = end > dev->total_bytes ? dev->total_bytes : end;
	/* The first hole at or after s: the new one goes before it. */
	for (i = 0; i < dev->nr_holes && dev->holes[i].start < s; i++)
		;
	if (e > s) {
		uint64_t prev_end = i ? dev->holes[i - 1].start + dev->holes[i - 1].len : 0;
		bool joins_prev = i > 0 && prev_end == s;
		bool joins_next = i < dev->nr_holes && dev->holes[i].start == e;

		if ((i > 0 && prev_end > s) || (i < dev->nr_holes && dev->holes[i].start < e))
			return -EEXIST;
		if (joins_prev && joins_next) {
			dev->holes[i - 1].len += e - s + dev->holes[i].len;
			memmove(&dev->holes[i], &dev->holes[i + 1],
				(dev->nr_holes - i - 1) * sizeof(dev->holes[0]));
			dev->nr_holes--;
		} else if (joins_prev) {
			dev->holes[i - 1].len += e - s;
		} else if (joins_next) {
			dev->holes[i].start = s;
			dev->holes[i].len += e - s;
		} else {
			if (grow_holes(dev))
				return -ENOMEM;
			memmove(&dev->holes[i + 1], &dev->holes[i],
				(dev->nr_holes - i) * sizeof(dev->holes[0]));
			dev->holes[i].start = s;
			dev->holes[i].len = e - s;
			dev->nr_holes++;
		}
	}
	dev->bytes_used = dev->bytes_used > len ? dev->bytes_used - len : 0;
	return 0;
}


/* btrfs_cmp_device_info() with the tier in front: < 0 sorts first. */
static inline int cand_cmp(const struct cand *a, const struct cand *b)
{
	if (a->tier != b->tier)
		return a->tier < b->tier ? -1 : 1;
	if (a->max_avail != b->max_avail)
		return a->max_avail > b->max_avail ? -1 : 1;
	if (a->total_avail != b->total_avail)
		return a->total_avail > b->total_avail ? -1 : 1;
	return 0;
}

#define CMP(i, j) cand_cmp(&c[ord[i]], &c[ord[j]])
#define SWAP(i, j)                      \
	do {                            \
		uint32_t t_ = ord[i];   \
		ord[i] = ord[j];        \
		ord[j] = t_;            \
	} while (0)

/*
 * Bottom-up sift-down of element @a in the heap [0, n): follow the larger
 * child down to a leaf (on a tie the right child, or the left one before
 * 6.9), climb back to where @a belongs and rotate it into place.
 */
static void sift_down(const struct cand *c, uint32_t *ord, size_t a, size_t n, bool pre69)
{
	size_t b = a, l, r, target;

	for (;;) {
		l = 2 * b + 1;
		r = l + 1;
		if (r >= n)
			break;
		if (pre69)
			b = CMP(l, r) >= 0 ? l : r;
		else
			b = CMP(l, r) > 0 ? l : r;
	}
	if (r == n)
		b = l;
	while (b != a && CMP(a, b) >= 0)
		b = (b - 1) / 2;
	target = b;
	while (b != a) {
		b = (b - 1) / 2;
		SWAP(b, target);
	}
}

/*
 * The kernel's sort() (lib/sort.c): a heapsort, so devices with equal keys end
 * up in an order that depends on the input order. Since 6.9 it pops the two
 * largest elements per round; before, one.
 */
static void kernel_sort(const struct cand *c, uint32_t *ord, size_t num, bool pre69)
{
	size_t n = num, a = num / 2;
	unsigned int shift = 0;

	if (a == 0)
		return;
	if (pre69) {
		for (;;) {
			if (a)
				a--;
			else if (--n)
				SWAP(0, n);
			else
				break;
			sift_down(c, ord, a, n, true);
		}
		return;
	}
	for (;;) {
		if (a) {
			a -= (size_t)1 << shift;
		} else if (n > 3) {
			n--;
			SWAP(0, n);
			shift = CMP(1, 2) <= 0;
			a = (size_t)1 << shift;
			n--;
			SWAP(a, n);
		} else {
			break;
		}
		sift_down(c, ord, a, n, false);
	}
	n--;
	SWAP(0, n);
	if (n == 2 && CMP(0, 1) > 0)
		SWAP(0, 1);
}

#undef CMP
#undef SWAP


void alloc_sorter_free(struct sorter *s)
{
	free(s->tmp);
	free(s->rank);
	free(s->posof);
	free(s->seen);
	free(s->prev_devs);
	free(s->cand_of_dev);
	free(s->mhash);
	free(s->mlen);
	free(s->mrank);
	free(s->mperm);
}

int alloc_sorter_init(struct sorter *s, size_t ndevs, bool pre69)
{
	size_t cap = ndevs + 1;

	memset(s, 0, sizeof(*s));
	s->pre69 = pre69;
	s->cap = cap;
	s->nslots = 1024;
	while (s->nslots > 16 && s->nslots * cap * 2 * sizeof(uint32_t) > (8U << 20))
		s->nslots /= 2;
	s->tmp = calloc(cap, sizeof(uint32_t));
	s->rank = calloc(cap, sizeof(uint32_t));
	s->posof = calloc(cap, sizeof(uint32_t));
	s->seen = calloc(cap, sizeof(uint32_t));
	s->prev_devs = calloc(cap, sizeof(uint32_t));
	s->cand_of_dev = calloc(cap, sizeof(int32_t));
	s->mhash = calloc(s->nslots, sizeof(uint64_t));
	s->mlen = calloc(s->nslots, sizeof(uint32_t));
	s->mrank = calloc(s->nslots * cap, sizeof(uint32_t));
	s->mperm = calloc(s->nslots * cap, sizeof(uint32_t));
	if (!s->tmp || !s->rank || !s->posof || !s->seen || !s->prev_devs ||
	    !s->cand_of_dev || !s->mhash || !s->mlen || !s->mrank || !s->mperm) {
		alloc_sorter_free(s);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Sorts seq[0 .. m) (candidate indices) exactly as kernel_sort() would.
 * @first: seq is 0 .. m-1 in alloc order and the previous order is a hint.
 */
static void exact_sort(struct sorter *s, const struct cand *c, uint32_t *seq, size_t m,
		       bool first)
{
	uint32_t *t = s->tmp, *rank = s->rank;
	uint64_t h = 1469598103934665603ULL ^ m;
	size_t i, k = 0, slot;
	bool ties = false;

	if (m < 2)
		return;
	/* Starting order: the previous result, then any newcomers. */
	if (++s->stamp == 0) {
		memset(s->seen, 0, s->cap * sizeof(uint32_t));
		s->stamp = 1;
	}
	if (first) {
		for (i = 0; i < s->nprev; i++) {
			int32_t p = s->cand_of_dev[s->prev_devs[i]];

			if (p >= 0 && (size_t)p < m && s->seen[p] != s->stamp) {
				s->seen[p] = s->stamp;
				t[k++] = (uint32_t)p;
			}
		}
	}
	for (i = 0; i < m; i++)
		if (s->seen[i] != s->stamp)
			t[k++] = (uint32_t)i;

	/* Insertion sort of positions by key. */
	for (i = 1; i < m; i++) {
		uint32_t x = t[i];
		const struct cand *cx = &c[seq[x]];
		size_t j = i;

		while (j > 0 && cand_cmp(&c[seq[t[j - 1]]], cx) > 0) {
			t[j] = t[j - 1];
			j--;
		}
		t[j] = x;
	}

	/* Ranks by position; any tie? */
	rank[t[0]] = 0;
	for (i = 1; i < m; i++) {
		int d = cand_cmp(&c[seq[t[i - 1]]], &c[seq[t[i]]]);

		rank[t[i]] = rank[t[i - 1]] + (d != 0);
		if (d == 0)
			ties = true;
	}

	if (!ties) {
		for (i = 0; i < m; i++)
			s->posof[i] = seq[t[i]];
		memcpy(seq, s->posof, m * sizeof(uint32_t));
	} else {
		uint32_t *mr, *mp;

		for (i = 0; i < m; i++)
			h = (h ^ rank[i]) * 1099511628211ULL;
		if (h == 0)
			h = 1;
		slot = (size_t)(h ^ (h >> 29)) & (s->nslots - 1);
		mr = &s->mrank[slot * s->cap];
		mp = &s->mperm[slot * s->cap];
		if (s->mhash[slot] != h || s->mlen[slot] != m ||
		    memcmp(mr, rank, m * sizeof(uint32_t)) != 0) {
			/* Miss: run the heapsort, remember its permutation. */
			for (i = 0; i < m; i++)
				s->posof[seq[i]] = (uint32_t)i;
			memcpy(t, seq, m * sizeof(uint32_t));
			kernel_sort(c, t, m, s->pre69);
			for (i = 0; i < m; i++)
				mp[i] = s->posof[t[i]];
			memcpy(mr, rank, m * sizeof(uint32_t));
			s->mhash[slot] = h;
			s->mlen[slot] = (uint32_t)m;
		}
		for (i = 0; i < m; i++)
			t[i] = seq[mp[i]];
		memcpy(seq, t, m * sizeof(uint32_t));
	}
	if (first) {
		for (i = 0; i < m; i++)
			s->prev_devs[i] = c[seq[i]].dev;
		s->nprev = m;
	}
}

static void do_sort(struct sorter *s, bool pre69, const struct cand *c, uint32_t *seq,
		    size_t m, bool first)
{
	if (s)
		exact_sort(s, c, seq, m, first);
	else
		kernel_sort(c, seq, m, pre69);
}


/*
 * Picks the devices and sizes from @nc gathered candidates (in alloc_list
 * order). On return ord[0 .. ndevs) are the devices in stripe order.
 */
int alloc_choose(const struct bx_alloc_limits *lim, uint64_t type, bool tiered, uint32_t flags,
		  uint32_t best_tier, struct sorter *sorter, struct cand *c, uint32_t *ord,
		  size_t nc, struct choice *out)
{
	bool pre69 = flags & BX_ALLOC_SORT_PRE_6_9;
	const struct bx_raid_attr *r = &lim->raid;
	size_t i, taken = nc, ndevs;
	uint64_t stripe, min_avail;
	uint32_t data_stripes, max_tier = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < nc; i++)
		ord[i] = (uint32_t)i;
	do_sort(sorter, pre69, c, ord, nc, true);

	if (tiered && nc) {
		/* Whole tiers, in order, until there are devs_min devices. */
		for (i = 0; i < nc; i++) {
			bool tier_ends = i + 1 == nc || c[ord[i + 1]].tier != c[ord[i]].tier;

			if (tier_ends && i + 1 >= (size_t)r->devs_min)
				break;
		}
		taken = i < nc ? i + 1 : nc;
		out->flags |= BX_ALLOC_F_HINTS;
	}
	/* The hint allocator sorts the devices it keeps again, by free space alone. */
	if ((tiered || (flags & BX_ALLOC_HINT_KERNEL)) && taken) {
		for (i = 0; i < taken; i++)
			c[ord[i]].tier = 0;
		do_sort(sorter, pre69, c, ord, taken, false);
	}

	ndevs = taken - taken % (size_t)r->devs_increment;
	if (ndevs < (size_t)r->devs_min || ndevs == 0)
		return -ENOSPC;
	if (ndevs > (size_t)lim->devs_max)
		ndevs = (size_t)lim->devs_max;

	min_avail = c[ord[ndevs - 1]].max_avail;
	for (i = 0; i < ndevs; i++) {
		const struct cand *d = &c[ord[i]];

		if (d->max_avail < min_avail)
			min_avail = d->max_avail;
		if (tiered) {
			out->tiers |= 1U << d->real_tier;
			if (d->real_tier > max_tier)
				max_tier = d->real_tier;
		}
	}
	if (tiered && max_tier > best_tier)
		out->flags |= BX_ALLOC_F_FALLBACK;

	stripe = min_avail / (uint64_t)r->dev_stripes;
	out->num_stripes = (uint32_t)(ndevs * (size_t)r->dev_stripes);
	data_stripes = (out->num_stripes - (uint32_t)r->nparity) / (uint32_t)r->ncopies;
	if (stripe * data_stripes > lim->max_chunk_size) {
		uint64_t want = lim->max_chunk_size / data_stripes;

		want = (want + SZ_16M - 1) / SZ_16M * SZ_16M;
		if (want < stripe)
			stripe = want;
	}
	if (stripe > SZ_1G)
		stripe = SZ_1G;
	stripe -= stripe % SZ_64K;
	if (stripe == 0)	/* only with an absurdly small fs_total_bytes */
		return -ENOSPC;
	out->ndevs = ndevs;
	out->stripe_size = stripe;
	out->length = stripe * data_stripes;
	return 0;
}

/* Is any hint in effect for @type, and is any value unknown? */
bool alloc_hints_in_effect(const uint64_t *hints, const bool *writable, size_t n,
			    uint64_t type, uint32_t flags, bool *unknown)
{
	bool any = false;
	size_t i;

	*unknown = false;
	if (flags & BX_ALLOC_IGNORE_HINTS)
		return false;
	for (i = 0; i < n; i++) {
		if (!writable[i])
			continue;
		if (hints[i] > BX_HINT_MAX_KNOWN)
			*unknown = true;
		else if (hints[i] != BX_HINT_DATA_PREFERRED)
			any = true;
	}
	if (bx_type_is_mixed(type))
		return false;
	return any || (flags & BX_ALLOC_STRICT);
}

/*
 * The best (lowest) tier any writable device has for @type, full or not;
 * BX_TIER_LAST + 1 when every device is excluded. A chunk that uses a worse
 * tier has fallen back.
 */
uint32_t alloc_best_tier_of(const uint64_t *hints, const bool *writable, size_t n,
			     uint64_t type, uint32_t flags)
{
	uint32_t best = BX_TIER_LAST + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		int t;

		if (!writable[i])
			continue;
		t = bx_alloc_hint_tier(hints[i], type, flags, NULL);
		if (t != BX_TIER_NEVER && (uint32_t)t < best)
			best = (uint32_t)t;
	}
	return best;
}

/* find_free_dev_extent() over a hole list. Returns true when a hole fits. */
static bool find_free_linear(const struct bx_alloc_device *dev, uint64_t want,
			     uint64_t *start, uint64_t *len)
{
	uint64_t max_start = BX_ALLOC_RESERVED, max_len = 0;
	size_t i = 0;

	while (i < dev->nr_holes) {
		uint64_t s = dev->holes[i].start, e = s + dev->holes[i].len;

		/* Adjacent holes are one hole to the kernel. */
		for (i++; i < dev->nr_holes && dev->holes[i].start <= e; i++)
			if (dev->holes[i].start + dev->holes[i].len > e)
				e = dev->holes[i].start + dev->holes[i].len;
		if (s < BX_ALLOC_RESERVED)
			s = BX_ALLOC_RESERVED;
		if (e > dev->total_bytes)
			e = dev->total_bytes;
		if (e <= s)
			continue;
		if (e - s > max_len) {
			max_start = s;
			max_len = e - s;
		}
		if (e - s >= want) {
			*start = s;
			*len = e - s;
			return true;
		}
	}
	*start = max_start;
	*len = max_len;
	return false;
}

uint64_t alloc_writable_total(const struct bx_alloc_device *devs, size_t n)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (devs[i].writable)
			sum += devs[i].total_bytes;
	return sum;
}

void alloc_fill_stripes(const struct bx_alloc_limits *lim, const struct choice *ch,
			 const struct cand *c, const uint32_t *ord,
			 const uint64_t *devids, struct bx_alloc_stripe *st)
{
	size_t i, s = 0;
	int j;

	for (i = 0; i < ch->ndevs; i++) {
		const struct cand *d = &c[ord[i]];

		for (j = 0; j < lim->raid.dev_stripes; j++, s++) {
			st[s].devid = devids[d->dev];
			st[s].physical = d->dev_offset + (uint64_t)j * ch->stripe_size;
			st[s].dev_index = d->dev;
		}
	}
}

void alloc_fill_chunk(struct bx_alloc_chunk *chunk, uint64_t type,
		       const struct bx_alloc_limits *lim, const struct choice *ch,
		       bool unknown, struct bx_alloc_stripe *stripes)
{
	chunk->type = type;
	chunk->length = ch->length;
	chunk->stripe_size = ch->stripe_size;
	chunk->num_stripes = ch->num_stripes;
	chunk->ndevs = (uint32_t)ch->ndevs;
	chunk->sub_stripes = (uint32_t)lim->raid.sub_stripes;
	chunk->flags = ch->flags | (unknown ? BX_ALLOC_F_UNKNOWN_HINT : 0);
	chunk->tiers = ch->tiers;
	chunk->stripes = stripes;
}

int bx_alloc_decide(const struct bx_alloc_device *devs, size_t nr_devs, uint64_t type,
		    const struct bx_alloc_params *params, struct bx_alloc_chunk *chunk)
{
	static const struct bx_alloc_params defaults;
	struct bx_alloc_limits lim;
	struct cand *c = NULL;
	uint32_t *ord = NULL;
	uint64_t *hints = NULL, *devids = NULL;
	bool *writable = NULL, tiered, unknown;
	uint32_t best_tier;
	struct choice ch;
	size_t i, nc = 0;
	int ret;

	memset(chunk, 0, sizeof(*chunk));
	if (!params)
		params = &defaults;
	if (nr_devs > UINT32_MAX)
		return -EINVAL;
	ret = bx_alloc_limits(type, params->fs_total_bytes ? params->fs_total_bytes :
			      alloc_writable_total(devs, nr_devs), params->nodesize, &lim);
	if (ret)
		return ret;

	c = calloc(nr_devs + 1, sizeof(*c));
	ord = calloc(nr_devs + 1, sizeof(*ord));
	hints = calloc(nr_devs + 1, sizeof(*hints));
	devids = calloc(nr_devs + 1, sizeof(*devids));
	writable = calloc(nr_devs + 1, sizeof(*writable));
	if (!c || !ord || !hints || !devids || !writable) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr_devs; i++) {
		hints[i] = devs[i].hint;
		writable[i] = devs[i].writable;
		devids[i] = devs[i].devid;
	}
	tiered = alloc_hints_in_effect(hints, writable, nr_devs, type, params->flags, &unknown);
	best_tier = tiered ? alloc_best_tier_of(hints, writable, nr_devs, type, params->flags) : 0;

	for (i = 0; i < nr_devs; i++) {
		const struct bx_alloc_device *d = &devs[i];
		uint64_t total_avail, off, avail;
		int tier = 0;

		if (!d->writable)
			continue;
		total_avail = d->total_bytes > d->bytes_used ? d->total_bytes - d->bytes_used : 0;
		if (total_avail < lim.dev_extent_min)
			continue;
		if (find_free_linear(d, lim.dev_extent_want, &off, &avail))
			avail = lim.dev_extent_want;
		if (avail < lim.dev_extent_min)
			continue;
		if (tiered) {
			tier = bx_alloc_hint_tier(d->hint, type, params->flags, NULL);
			if (tier == BX_TIER_NEVER)
				continue;
		}
		c[nc].max_avail = avail;
		c[nc].total_avail = total_avail;
		c[nc].dev_offset = off;
		c[nc].tier = (uint32_t)tier;
		c[nc].real_tier = (uint32_t)tier;
		c[nc].dev = (uint32_t)i;
		c[nc].hole = 0;
		nc++;
	}

	ret = alloc_choose(&lim, type, tiered, params->flags, best_tier, NULL, c, ord, nc, &ch);
	if (ret)
		goto out;
	chunk->stripes = malloc(ch.num_stripes * sizeof(*chunk->stripes));
	if (!chunk->stripes) {
		ret = -ENOMEM;
		goto out;
	}
	alloc_fill_stripes(&lim, &ch, c, ord, devids, chunk->stripes);
	alloc_fill_chunk(chunk, type, &lim, &ch, unknown, chunk->stripes);
out:
	free(c);
	free(ord);
	free(hints);
	free(devids);
	free(writable);
	return ret;
}

void bx_alloc_chunk_release(struct bx_alloc_chunk *chunk)
{
	free(chunk->stripes);
	memset(chunk, 0, sizeof(*chunk));
}

int bx_alloc_apply(struct bx_alloc_device *devs, size_t nr_devs,
		   const struct bx_alloc_chunk *chunk)
{
	uint32_t i;
	int ret;

	for (i = 0; i < chunk->num_stripes; i++) {
		const struct bx_alloc_stripe *s = &chunk->stripes[i];

		if (s->dev_index >= nr_devs || devs[s->dev_index].devid != s->devid)
			return -EINVAL;
		ret = bx_alloc_device_add_extent(&devs[s->dev_index], s->physical,
						 chunk->stripe_size);
		if (ret)
			return ret;
	}
	return 0;
}
