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
 * Hints (SPEC "Allocation hints"): devices that the hint excludes are left
 * out; the rest are sorted by (tier, largest hole, total_avail) with the same
 * heapsort; whole tiers are taken until there are devs_min devices; RAID1,
 * RAID1C3 and RAID1C4 keep that order (so the first tiers fill the copies),
 * the other profiles sort the taken devices again by the mainline keys when
 * they span more than one tier. In tier order the last device need not have
 * the smallest hole, so the stripe size is the smallest hole of the devices
 * used (for mainline order that is the last one, as in the kernel).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-shared/allocator.h"

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

enum raid_index {
	RAID_SINGLE, RAID_RAID0, RAID_RAID1, RAID_DUP, RAID_RAID10,
	RAID_RAID5, RAID_RAID6, RAID_RAID1C3, RAID_RAID1C4, RAID_NR,
};

/* name, sub_stripes, dev_stripes, devs_max, devs_min, devs_increment, ncopies, nparity */
static const struct bx_alloc_raid_attr raid_table[RAID_NR] = {
	[RAID_SINGLE] = { "single", 1, 1, 1, 1, 1, 1, 0 },
	[RAID_RAID0] = { "raid0", 1, 1, 0, 1, 1, 1, 0 },
	[RAID_RAID1] = { "raid1", 1, 1, 2, 2, 2, 2, 0 },
	[RAID_DUP] = { "dup", 1, 2, 1, 1, 1, 2, 0 },
	[RAID_RAID10] = { "raid10", 2, 1, 0, 2, 2, 2, 0 },
	[RAID_RAID5] = { "raid5", 1, 1, 0, 2, 1, 1, 1 },
	[RAID_RAID6] = { "raid6", 1, 1, 0, 3, 1, 1, 2 },
	[RAID_RAID1C3] = { "raid1c3", 1, 1, 3, 3, 3, 3, 0 },
	[RAID_RAID1C4] = { "raid1c4", 1, 1, 4, 4, 4, 4, 0 },
};

static int raid_index(uint64_t type)
{
	uint64_t profile = type & ~BTRFS_BLOCK_GROUP_TYPE_MASK;

	if (profile & ~BTRFS_BLOCK_GROUP_PROFILE_MASK)
		return -EINVAL;
	if (profile & (profile - 1))
		return -EINVAL;
	switch (profile) {
	case 0:
		return RAID_SINGLE;
	case BTRFS_BLOCK_GROUP_RAID0:
		return RAID_RAID0;
	case BTRFS_BLOCK_GROUP_RAID1:
		return RAID_RAID1;
	case BTRFS_BLOCK_GROUP_DUP:
		return RAID_DUP;
	case BTRFS_BLOCK_GROUP_RAID10:
		return RAID_RAID10;
	case BTRFS_BLOCK_GROUP_RAID5:
		return RAID_RAID5;
	case BTRFS_BLOCK_GROUP_RAID6:
		return RAID_RAID6;
	case BTRFS_BLOCK_GROUP_RAID1C3:
		return RAID_RAID1C3;
	default:
		return RAID_RAID1C4;
	}
}

int bx_alloc_raid_attr(uint64_t type, struct bx_alloc_raid_attr *attr)
{
	int idx = raid_index(type);

	if (idx < 0)
		return idx;
	*attr = raid_table[idx];
	return 0;
}

static bool is_mixed(uint64_t type)
{
	return (type & BTRFS_BLOCK_GROUP_DATA) && (type & BTRFS_BLOCK_GROUP_METADATA);
}

static bool is_raid1_family(uint64_t type)
{
	return type & (BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID1C3 |
		       BTRFS_BLOCK_GROUP_RAID1C4);
}

/* x * 10 / 100 without overflowing for any x. */
static uint64_t ten_percent(uint64_t x)
{
	return (x / 100) * 10 + (x % 100) * 10 / 100;
}

int bx_alloc_limits(uint64_t type, uint64_t fs_total_bytes, uint32_t nodesize,
		    struct bx_alloc_limits *lim)
{
	uint64_t chunk_size;
	int idx = raid_index(type);

	if (idx < 0 || !(type & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return -EINVAL;
	if (nodesize == 0)
		nodesize = 16384;
	if (nodesize < 4096 || nodesize > 65536)
		return -EINVAL;

	memset(lim, 0, sizeof(*lim));
	lim->raid = raid_table[idx];

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

/* Tier of each hint for data chunks and for metadata/system chunks (SPEC). */
static const uint8_t tier_data[BX_HINT_MAX_KNOWN + 1] = { 2, 3, BX_TIER_NEVER, 1, 4 };
static const uint8_t tier_meta[BX_HINT_MAX_KNOWN + 1] = { 3, 2, 1, BX_TIER_NEVER, 4 };

int bx_alloc_hint_tier(uint64_t hint, uint64_t type, uint32_t flags, bool *unknown)
{
	bool data = type & BTRFS_BLOCK_GROUP_DATA;

	if (unknown)
		*unknown = hint > BX_HINT_MAX_KNOWN;
	if (hint > BX_HINT_MAX_KNOWN || is_mixed(type) || (flags & BX_ALLOC_IGNORE_HINTS))
		hint = BX_HINT_DATA_PREFERRED;
	else if (flags & BX_ALLOC_STRICT) {
		if (hint == BX_HINT_DATA_PREFERRED)
			hint = BX_HINT_DATA_ONLY;
		else if (hint == BX_HINT_METADATA_PREFERRED)
			hint = BX_HINT_METADATA_ONLY;
	}
	return data ? tier_data[hint] : tier_meta[hint];
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
static size_t normalize_holes(struct bx_alloc_hole *h, size_t nr, uint64_t total)
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
		nr = normalize_holes(copy, nr, dev->total_bytes);
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
		if (dev->nr_holes == dev->holes_cap) {
			size_t cap = dev->holes_cap ? 2 * dev->holes_cap : 4;
			struct bx_alloc_hole *n = realloc(dev->holes, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			dev->holes = n;
			dev->holes_cap = cap;
		}
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

/* ---- the decision, shared by one-shot and simulation ---- */

struct cand {
	uint64_t max_avail;
	uint64_t total_avail;
	uint64_t dev_offset;
	uint32_t tier;		/* sort key; 0 in mainline order */
	uint32_t real_tier;	/* for reporting */
	uint32_t dev;		/* index into the device array */
	uint32_t hole;		/* hole index (simulation only) */
};

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

/*
 * Exact but fast sorting for simulations, where the same device set is sorted
 * again for every chunk. The heapsort's result depends only on the outcome of
 * its comparisons, i.e. on the rank of each input position's key. So:
 *  - an insertion sort, started from the previous chunk's order, finds the
 *    sorted order in about O(n);
 *  - when no two keys are equal, that is the only possible result;
 *  - with equal keys, the heapsort's permutation is looked up by the rank
 *    vector in a small cache (filled by running the heapsort on a miss).
 * Filling equal devices cycles through a few rank patterns, so the heapsort
 * rarely runs.
 */
struct sorter {
	bool pre69;
	size_t cap;		/* elements */
	uint32_t *tmp;		/* positions being insertion-sorted */
	uint32_t *rank;		/* rank of each position */
	uint32_t *posof;	/* candidate index -> position */
	uint32_t *seen;		/* stamps, by position */
	uint32_t stamp;
	uint32_t *prev_devs;	/* devices in the previous first sort's order */
	size_t nprev;
	int32_t *cand_of_dev;	/* device -> candidate index or -1, set by the caller */
	size_t nslots;		/* cache: power of two */
	uint64_t *mhash;	/* 0: empty */
	uint32_t *mlen;
	uint32_t *mrank;	/* nslots * cap */
	uint32_t *mperm;	/* nslots * cap: positions in sorted order */
};

static void sorter_free(struct sorter *s)
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

static int sorter_init(struct sorter *s, size_t ndevs, bool pre69)
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
		sorter_free(s);
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

struct choice {
	size_t ndevs;
	uint64_t stripe_size;
	uint64_t length;
	uint32_t num_stripes;
	uint32_t flags;
	uint32_t tiers;
};

/*
 * Picks the devices and sizes from @nc gathered candidates (in alloc_list
 * order). On return ord[0 .. ndevs) are the devices in stripe order.
 */
static int choose(const struct bx_alloc_limits *lim, uint64_t type, bool tiered, bool pre69,
		  uint32_t best_tier, struct sorter *sorter, struct cand *c, uint32_t *ord,
		  size_t nc, struct choice *out)
{
	const struct bx_alloc_raid_attr *r = &lim->raid;
	size_t i, taken = nc, ndevs;
	uint64_t stripe, min_avail;
	uint32_t data_stripes, min_tier = 0, max_tier = 0;

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
		min_tier = c[ord[0]].tier;
		if (c[ord[taken - 1]].tier != min_tier && !is_raid1_family(type)) {
			for (i = 0; i < taken; i++)
				c[ord[i]].tier = 0;
			do_sort(sorter, pre69, c, ord, taken, false);
		}
		out->flags |= BX_ALLOC_F_HINTS;
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
static bool hints_in_effect(const uint64_t *hints, const bool *writable, size_t n,
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
	if (is_mixed(type))
		return false;
	return any || (flags & BX_ALLOC_STRICT);
}

/*
 * The best (lowest) tier any writable device has for @type, full or not;
 * BX_TIER_LAST + 1 when every device is excluded. A chunk that uses a worse
 * tier has fallen back.
 */
static uint32_t best_tier_of(const uint64_t *hints, const bool *writable, size_t n,
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

static uint64_t writable_total(const struct bx_alloc_device *devs, size_t n)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (devs[i].writable)
			sum += devs[i].total_bytes;
	return sum;
}

static void fill_stripes(const struct bx_alloc_limits *lim, const struct choice *ch,
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

static void fill_chunk(struct bx_alloc_chunk *chunk, uint64_t type,
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
			      writable_total(devs, nr_devs), params->nodesize, &lim);
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
	tiered = hints_in_effect(hints, writable, nr_devs, type, params->flags, &unknown);
	best_tier = tiered ? best_tier_of(hints, writable, nr_devs, type, params->flags) : 0;

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

	ret = choose(&lim, type, tiered, params->flags & BX_ALLOC_SORT_PRE_6_9, best_tier, NULL,
		     c, ord, nc, &ch);
	if (ret)
		goto out;
	chunk->stripes = malloc(ch.num_stripes * sizeof(*chunk->stripes));
	if (!chunk->stripes) {
		ret = -ENOMEM;
		goto out;
	}
	fill_stripes(&lim, &ch, c, ord, devids, chunk->stripes);
	fill_chunk(chunk, type, &lim, &ch, unknown, chunk->stripes);
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

/* ---- simulation ---- */

/*
 * Holes of a simulated device, with a max-tree over their lengths so that
 * "first hole at least this large" and "first largest hole" are O(log n).
 * Allocations are always taken from the front of a hole, so holes only shrink
 * and never split.
 */
struct sim_dev {
	uint64_t devid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint32_t nholes;
	uint32_t leaves;	/* power of two >= nholes */
	uint64_t *hstart;
	uint64_t *tree;		/* [leaves + i]: length of hole i; [k]: max of children */
	/* the last tree_find() answer, valid while the holes do not change */
	uint64_t cache_want;	/* 0: none */
	uint64_t cache_off;
	uint64_t cache_len;
	uint32_t cache_hole;
	bool cache_fit;
};

/* One chunk of a detection window: the devices are in win_devs. */
struct win_step {
	uint64_t stripe_size;
	uint64_t length;
	uint32_t ndevs;
	uint32_t num_stripes;
	uint32_t flags;
	uint32_t tiers;
};

struct bx_alloc_sim {
	struct bx_alloc_params params;
	uint64_t fs_total;
	size_t ndevs;
	struct sim_dev *devs;
	uint64_t *hints;
	uint64_t *devids;
	bool *writable;
	uint8_t *tiers;
	struct cand *cand;
	uint32_t *ord;
	struct bx_alloc_stripe *stripes;
	struct sorter sorter;
	/* period detection and replay, see sim_note() */
	size_t win_cap;		/* steps a window holds */
	size_t win_stride;	/* device slots per step */
	struct win_step *win;
	uint32_t *win_devs;	/* win_cap * win_stride device indices */
	size_t win_len;
	bool win_ok;
	uint64_t win_used;	/* bytes per device and chunk in this window */
	uint64_t *taken;	/* per device: bytes since the window started */
	uint64_t *bvals;	/* scratch for sim_window_repeats() */
	uint32_t *touched;	/* devices with taken > 0 */
	size_t ntouched;
	uint64_t max_taken;
	size_t at_max;		/* touched devices with taken == max_taken */
	uint64_t replay_left;	/* chunks still to replay */
	size_t replay_pos;
	size_t replay_len;
	/* per-type state, recomputed when the type changes */
	bool have_type;
	uint64_t type;
	struct bx_alloc_limits lim;
	bool tiered;
	bool unknown;
	uint32_t best_tier;
};

static void tree_set(struct sim_dev *d, uint32_t hole, uint64_t len)
{
	size_t k = d->leaves + hole;

	d->cache_want = 0;
	d->tree[k] = len;
	for (k >>= 1; k; k >>= 1) {
		uint64_t l = d->tree[2 * k], r = d->tree[2 * k + 1];

		d->tree[k] = l > r ? l : r;
	}
}

/* find_free_dev_extent() on the tree; *len is 0 when there is no hole. */
static bool tree_find(const struct sim_dev *d, uint64_t want, uint32_t *hole,
		      uint64_t *start, uint64_t *len)
{
	size_t k = 1;
	bool fit;

	if (!d->nholes || d->tree[1] == 0) {
		*hole = 0;
		*start = BX_ALLOC_RESERVED;
		*len = 0;
		return false;
	}
	fit = d->tree[1] >= want;
	while (k < d->leaves) {
		if (fit)
			k = d->tree[2 * k] >= want ? 2 * k : 2 * k + 1;
		else
			k = d->tree[2 * k] >= d->tree[2 * k + 1] ? 2 * k : 2 * k + 1;
	}
	*hole = (uint32_t)(k - d->leaves);
	*start = d->hstart[*hole];
	*len = d->tree[k];
	return fit;
}

/* tree_find(), remembered until the device's holes change. */
static bool dev_find(struct sim_dev *d, uint64_t want, uint32_t *hole, uint64_t *start,
		     uint64_t *len)
{
	if (d->cache_want != want) {
		d->cache_fit = tree_find(d, want, &d->cache_hole, &d->cache_off, &d->cache_len);
		d->cache_want = want;
	}
	*hole = d->cache_hole;
	*start = d->cache_off;
	*len = d->cache_len;
	return d->cache_fit;
}

void bx_alloc_sim_free(struct bx_alloc_sim *sim)
{
	size_t i;

	if (!sim)
		return;
	for (i = 0; sim->devs && i < sim->ndevs; i++) {
		free(sim->devs[i].hstart);
		free(sim->devs[i].tree);
	}
	free(sim->devs);
	free(sim->hints);
	free(sim->devids);
	free(sim->writable);
	free(sim->tiers);
	free(sim->cand);
	free(sim->ord);
	free(sim->stripes);
	free(sim->win);
	free(sim->win_devs);
	free(sim->taken);
	free(sim->bvals);
	free(sim->touched);
	sorter_free(&sim->sorter);
	free(sim);
}

static int sim_dev_init(struct sim_dev *sd, const struct bx_alloc_device *d)
{
	struct bx_alloc_hole *h = NULL;
	size_t n = d->nr_holes, i;

	sd->devid = d->devid;
	sd->total_bytes = d->total_bytes;
	sd->bytes_used = d->bytes_used;
	if (n) {
		h = malloc(n * sizeof(*h));
		if (!h)
			return -ENOMEM;
		memcpy(h, d->holes, n * sizeof(*h));
		for (i = 0; i < n; i++)
			if (h[i].start + h[i].len < h[i].start)
				h[i].len = UINT64_MAX - h[i].start;
		n = normalize_holes(h, n, d->total_bytes);
	}
	if (n > UINT32_MAX / 4) {
		free(h);
		return -EINVAL;
	}
	sd->nholes = (uint32_t)n;
	sd->leaves = 1;
	while (sd->leaves < n)
		sd->leaves *= 2;
	sd->hstart = malloc((n ? n : 1) * sizeof(*sd->hstart));
	sd->tree = calloc(2 * (size_t)sd->leaves, sizeof(*sd->tree));
	if (!sd->hstart || !sd->tree) {
		free(h);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		sd->hstart[i] = h[i].start;
		sd->tree[sd->leaves + i] = h[i].len;
	}
	for (i = sd->leaves - 1; i >= 1; i--) {
		uint64_t l = sd->tree[2 * i], r = sd->tree[2 * i + 1];

		sd->tree[i] = l > r ? l : r;
	}
	free(h);
	return 0;
}

int bx_alloc_sim_new(const struct bx_alloc_device *devs, size_t nr_devs,
		     const struct bx_alloc_params *params, struct bx_alloc_sim **simp)
{
	struct bx_alloc_sim *sim;
	size_t i, n1 = nr_devs + 1;
	int ret;

	*simp = NULL;
	if (nr_devs > UINT32_MAX / 4)
		return -EINVAL;
	sim = calloc(1, sizeof(*sim));
	if (!sim)
		return -ENOMEM;
	if (params)
		sim->params = *params;
	sim->fs_total = sim->params.fs_total_bytes ? sim->params.fs_total_bytes :
			writable_total(devs, nr_devs);
	sim->ndevs = nr_devs;
	sim->devs = calloc(n1, sizeof(*sim->devs));
	sim->hints = calloc(n1, sizeof(*sim->hints));
	sim->devids = calloc(n1, sizeof(*sim->devids));
	sim->writable = calloc(n1, sizeof(*sim->writable));
	sim->tiers = calloc(n1, sizeof(*sim->tiers));
	sim->cand = calloc(n1, sizeof(*sim->cand));
	sim->ord = calloc(n1, sizeof(*sim->ord));
	sim->stripes = calloc(2 * n1, sizeof(*sim->stripes));
	sim->win_stride = n1;
	sim->win_cap = n1 + 2;
	if (sim->win_cap * sim->win_stride > (1U << 20))
		sim->win_cap = (1U << 20) / sim->win_stride + 1;
	sim->win = calloc(sim->win_cap, sizeof(*sim->win));
	sim->win_devs = calloc(sim->win_cap * sim->win_stride, sizeof(*sim->win_devs));
	sim->taken = calloc(n1, sizeof(*sim->taken));
	sim->bvals = calloc(n1, sizeof(*sim->bvals));
	sim->touched = calloc(n1, sizeof(*sim->touched));
	if (!sim->devs || !sim->hints || !sim->devids || !sim->writable || !sim->tiers ||
	    !sim->cand || !sim->ord || !sim->stripes || !sim->win || !sim->win_devs ||
	    !sim->taken || !sim->bvals || !sim->touched ||
	    sorter_init(&sim->sorter, nr_devs, sim->params.flags & BX_ALLOC_SORT_PRE_6_9)) {
		bx_alloc_sim_free(sim);
		return -ENOMEM;
	}
	for (i = 0; i < nr_devs; i++) {
		ret = sim_dev_init(&sim->devs[i], &devs[i]);
		if (ret) {
			bx_alloc_sim_free(sim);
			return ret;
		}
		sim->hints[i] = devs[i].hint;
		sim->devids[i] = devs[i].devid;
		sim->writable[i] = devs[i].writable;
	}
	*simp = sim;
	return 0;
}

/*
 * Period detection. The decision for a chunk depends only on the candidate
 * set, which candidates fit the wanted extent, the tiers, and the comparison
 * outcomes of the (tier, largest hole, total_avail) keys. Suppose that over a
 * window of T chunks every chosen device fit, every device that was used lost
 * the same D bytes and the others nothing, and no used device crossed or met
 * an unused one that also fits (comparison signs equal at both ends, so,
 * values being monotonic, in between too). Then the state at
 * the end compares exactly like the state at the start, the next T decisions
 * are the same T decisions, and so on for m more windows as long as the used
 * devices keep fitting to the end (their current first-fitting hole is
 * checked) and keep their comparison signs. Those chunks are replayed without sorting;
 * only the physical offsets are worked out, from the holes as they are.
 */
static void sim_window_reset(struct bx_alloc_sim *sim)
{
	size_t i;

	for (i = 0; i < sim->ntouched; i++)
		sim->taken[sim->touched[i]] = 0;
	sim->ntouched = 0;
	sim->max_taken = 0;
	sim->at_max = 0;
	sim->win_len = 0;
	sim->win_ok = true;
}

/*
 * How many allocations of @used bytes device @a can take, from the front of
 * its first fitting hole and then of the next ones, and still have a hole of
 * @want bytes left; stops counting beyond @enough.
 */
static uint64_t fitting_allocations(const struct sim_dev *a, uint64_t want, uint64_t used,
				    uint64_t enough)
{
	uint64_t off, len, cnt = 0;
	uint32_t hole, i;

	if (!tree_find(a, want, &hole, &off, &len))
		return 0;
	for (i = hole; i < a->nholes && cnt <= enough; i++) {
		len = a->tree[a->leaves + i];
		if (len >= want)
			cnt += (len - want) / used + 1;
	}
	/* After all of them no hole fits any more: one fewer keeps it fitting. */
	return cnt - 1;
}

/* How many more times the window can be replayed (0: not a period). */
static uint64_t sim_window_repeats(struct bx_alloc_sim *sim)
{
	const uint64_t want = sim->lim.dev_extent_want, min = sim->lim.dev_extent_min;
	const uint64_t d_bytes = sim->max_taken, used = sim->win_used;
	const uint64_t per_window = d_bytes / used;	/* allocations per device */
	const struct win_step *last = &sim->win[sim->win_len - 1];
	const uint32_t *last_devs = &sim->win_devs[(sim->win_len - 1) * sim->win_stride];
	uint64_t m = UINT64_MAX, *bv = sim->bvals;
	size_t i, j, nb = 0;

	/* The unused devices that fit (the others cannot compare differently). */
	for (j = 0; j < sim->ndevs; j++) {
		const struct sim_dev *b = &sim->devs[j];

		if (sim->taken[j] || !sim->writable[j] ||
		    (sim->tiered && sim->tiers[j] == BX_TIER_NEVER) ||
		    b->bytes_used >= b->total_bytes || !b->nholes || b->tree[1] < want ||
		    b->total_bytes - b->bytes_used < min)
			continue;
		bv[nb++] = b->total_bytes - b->bytes_used;
	}

	/*
	 * Every pair of a used and an unused device: the same comparison at both
	 * ends of the window (the value went from av + D to av; it crossed or
	 * met bv iff av <= bv <= av + D), and above bv through the whole
	 * replay if above it now. Devices of different tiers count too: a
	 * non-raid1 profile compares the taken tiers by space. The devices of
	 * the last chunk go first: in a round-robin that is not complete yet,
	 * they are the ones that just crossed.
	 */
	for (i = 0; i < last->ndevs + sim->ntouched; i++) {
		uint32_t ai = i < last->ndevs ? last_devs[i] : sim->touched[i - last->ndevs];
		const struct sim_dev *a = &sim->devs[ai];
		uint64_t av;

		if (a->bytes_used >= a->total_bytes)
			return 0;
		av = a->total_bytes - a->bytes_used;
		for (j = 0; j < nb; j++) {
			if (av <= bv[j] && bv[j] - av <= d_bytes)
				return 0;
			if (av > bv[j] && (av - bv[j] - 1) / d_bytes < m)
				m = (av - bv[j] - 1) / d_bytes;
		}
	}

	/*
	 * Every used device must still fit at the end of the replay, not only
	 * before its own allocations: an unfit device would compare differently
	 * in the chunks after its last one. And bytes_used may say less is free
	 * than the holes do.
	 */
	for (i = 0; i < sim->ntouched && m; i++) {
		const struct sim_dev *a = &sim->devs[sim->touched[i]];
		uint64_t enough = m == UINT64_MAX ? UINT64_MAX : m * per_window;
		uint64_t fits, avail = a->total_bytes - a->bytes_used;

		if (avail < min + d_bytes)
			return 0;
		if ((avail - min) / d_bytes < m)
			m = (avail - min) / d_bytes;
		fits = fitting_allocations(a, want, used, enough);
		if (fits / per_window < m)
			m = fits / per_window;
	}
	return m == UINT64_MAX ? 0 : m;
}

/* Records a decided chunk in the window; may start a replay. */
static void sim_note(struct bx_alloc_sim *sim, const struct choice *ch,
		     const struct cand *c, const uint32_t *ord, uint64_t used)
{
	struct win_step *w;
	size_t i;

	if (sim->win_len == 0)
		sim->win_used = used;
	if (used != sim->win_used || sim->win_len >= sim->win_cap) {
		sim_window_reset(sim);
		sim->win_used = used;
	}
	w = &sim->win[sim->win_len];
	w->stripe_size = ch->stripe_size;
	w->length = ch->length;
	w->ndevs = (uint32_t)ch->ndevs;
	w->num_stripes = ch->num_stripes;
	w->flags = ch->flags;
	w->tiers = ch->tiers;
	for (i = 0; i < ch->ndevs; i++) {
		const struct cand *d = &c[ord[i]];

		if (d->max_avail != sim->lim.dev_extent_want)
			sim->win_ok = false;
		sim->win_devs[sim->win_len * sim->win_stride + i] = d->dev;
		if (!sim->taken[d->dev])
			sim->touched[sim->ntouched++] = d->dev;
		sim->taken[d->dev] += used;
		if (sim->taken[d->dev] > sim->max_taken) {
			sim->max_taken = sim->taken[d->dev];
			sim->at_max = 1;
		} else if (sim->taken[d->dev] == sim->max_taken) {
			sim->at_max++;
		}
	}
	sim->win_len++;
	if (!sim->win_ok) {
		sim_window_reset(sim);
		return;
	}
	/*
	 * Not a period yet (e.g. one device of a round-robin used so far): keep
	 * going. A period of T chunks uses at least T devices, so a window that
	 * is longer than the devices it used (plus slack) started at a bad point
	 * or spans a change: start again.
	 */
	if (sim->at_max == sim->ntouched) {
		uint64_t m = sim_window_repeats(sim);
		size_t len = sim->win_len;

		if (m && m <= UINT64_MAX / len) {
			sim_window_reset(sim);
			sim->replay_left = m * len;
			sim->replay_len = len;
			sim->replay_pos = 0;
			return;
		}
	}
	if (sim->win_len > sim->ntouched + 2)
		sim_window_reset(sim);
}

/*
 * Replays one chunk of the detected period. Returns 1 (and stops replaying)
 * if a device unexpectedly does not fit, so that the chunk is decided anew.
 */
static int sim_replay(struct bx_alloc_sim *sim, struct bx_alloc_chunk *chunk)
{
	const struct win_step *w = &sim->win[sim->replay_pos];
	const uint32_t *devs = &sim->win_devs[sim->replay_pos * sim->win_stride];
	const int dev_stripes = sim->lim.raid.dev_stripes;
	const uint64_t used = w->stripe_size * (uint64_t)dev_stripes;
	struct cand *c = sim->cand;
	size_t i, s = 0;
	int j;

	for (i = 0; i < w->ndevs; i++) {
		uint64_t len;

		if (!dev_find(&sim->devs[devs[i]], sim->lim.dev_extent_want, &c[i].hole,
			       &c[i].dev_offset, &len)) {
			sim->replay_left = 0;
			return 1;
		}
	}
	for (i = 0; i < w->ndevs; i++) {
		struct sim_dev *sd = &sim->devs[devs[i]];

		sd->hstart[c[i].hole] += used;
		tree_set(sd, c[i].hole, sd->tree[sd->leaves + c[i].hole] - used);
		sd->bytes_used += used;
		if (chunk) {
			for (j = 0; j < dev_stripes; j++, s++) {
				sim->stripes[s].devid = sim->devids[devs[i]];
				sim->stripes[s].physical = c[i].dev_offset + (uint64_t)j * w->stripe_size;
				sim->stripes[s].dev_index = devs[i];
			}
		}
	}
	if (chunk) {
		chunk->type = sim->type;
		chunk->length = w->length;
		chunk->stripe_size = w->stripe_size;
		chunk->num_stripes = w->num_stripes;
		chunk->ndevs = w->ndevs;
		chunk->sub_stripes = (uint32_t)sim->lim.raid.sub_stripes;
		chunk->flags = w->flags | (sim->unknown ? BX_ALLOC_F_UNKNOWN_HINT : 0);
		chunk->tiers = w->tiers;
		chunk->stripes = sim->stripes;
	}
	if (++sim->replay_pos == sim->replay_len)
		sim->replay_pos = 0;
	sim->replay_left--;
	return 0;
}

static int sim_set_type(struct bx_alloc_sim *sim, uint64_t type)
{
	size_t i;
	int ret;

	if (sim->have_type && sim->type == type)
		return 0;
	sim->replay_left = 0;
	sim_window_reset(sim);
	ret = bx_alloc_limits(type, sim->fs_total, sim->params.nodesize, &sim->lim);
	if (ret)
		return ret;
	sim->tiered = hints_in_effect(sim->hints, sim->writable, sim->ndevs, type,
				      sim->params.flags, &sim->unknown);
	for (i = 0; i < sim->ndevs; i++)
		sim->tiers[i] = sim->tiered ?
			(uint8_t)bx_alloc_hint_tier(sim->hints[i], type, sim->params.flags, NULL) : 0;
	sim->best_tier = sim->tiered ? best_tier_of(sim->hints, sim->writable, sim->ndevs, type,
						    sim->params.flags) : 0;
	sim->type = type;
	sim->have_type = true;
	return 0;
}

int bx_alloc_sim_step(struct bx_alloc_sim *sim, uint64_t type, struct bx_alloc_chunk *chunk)
{
	const struct bx_alloc_limits *lim;
	struct cand *c = sim->cand;
	struct choice ch;
	size_t i, nc = 0;
	uint64_t used;
	int ret;

	if (chunk)
		memset(chunk, 0, sizeof(*chunk));
	ret = sim_set_type(sim, type);
	if (ret)
		return ret;
	lim = &sim->lim;
	if (sim->replay_left && sim_replay(sim, chunk) == 0)
		return 0;

	for (i = 0; i < sim->ndevs; i++) {
		struct sim_dev *d = &sim->devs[i];
		uint64_t total_avail, off, avail;
		uint32_t hole;

		sim->sorter.cand_of_dev[i] = -1;
		if (!sim->writable[i])
			continue;
		if (sim->tiered && sim->tiers[i] == BX_TIER_NEVER)
			continue;
		total_avail = d->total_bytes > d->bytes_used ? d->total_bytes - d->bytes_used : 0;
		if (total_avail < lim->dev_extent_min)
			continue;
		if (dev_find(d, lim->dev_extent_want, &hole, &off, &avail))
			avail = lim->dev_extent_want;
		if (avail < lim->dev_extent_min)
			continue;
		c[nc].max_avail = avail;
		c[nc].total_avail = total_avail;
		c[nc].dev_offset = off;
		c[nc].tier = sim->tiers[i];
		c[nc].real_tier = sim->tiers[i];
		c[nc].dev = (uint32_t)i;
		c[nc].hole = hole;
		sim->sorter.cand_of_dev[i] = (int32_t)nc;
		nc++;
	}

	ret = choose(lim, type, sim->tiered, sim->params.flags & BX_ALLOC_SORT_PRE_6_9,
		     sim->best_tier, &sim->sorter, c, sim->ord, nc, &ch);
	if (ret)
		return ret;

	used = ch.stripe_size * (uint64_t)lim->raid.dev_stripes;
	for (i = 0; i < ch.ndevs; i++) {
		const struct cand *d = &c[sim->ord[i]];
		struct sim_dev *sd = &sim->devs[d->dev];

		sd->hstart[d->hole] += used;
		tree_set(sd, d->hole, sd->tree[sd->leaves + d->hole] - used);
		sd->bytes_used += used;
	}
	if (chunk) {
		fill_stripes(lim, &ch, c, sim->ord, sim->devids, sim->stripes);
		fill_chunk(chunk, type, lim, &ch, sim->unknown, sim->stripes);
	}
	sim_note(sim, &ch, c, sim->ord, used);
	return 0;
}

uint64_t bx_alloc_sim_unallocated(const struct bx_alloc_sim *sim, size_t index)
{
	const struct sim_dev *d;
	uint64_t sum = 0;
	uint32_t i;

	if (index >= sim->ndevs)
		return 0;
	d = &sim->devs[index];
	for (i = 0; i < d->nholes; i++)
		sum += d->tree[d->leaves + i];
	return sum;
}

void bx_alloc_sim_result_release(struct bx_alloc_sim_result *res)
{
	free(res->chunks);
	free(res->stripe_pool);
	memset(res, 0, sizeof(*res));
}

int bx_alloc_simulate(const struct bx_alloc_device *devs, size_t nr_devs, uint64_t type,
		      const struct bx_alloc_params *params, bool record,
		      struct bx_alloc_sim_result *res)
{
	struct bx_alloc_sim *sim;
	struct bx_alloc_chunk ch;
	size_t chunks_cap = 0, pool_len = 0, pool_cap = 0;
	uint64_t i;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = bx_alloc_sim_new(devs, nr_devs, params, &sim);
	if (ret)
		return ret;
	for (;;) {
		ret = bx_alloc_sim_step(sim, type, &ch);
		if (ret == -ENOSPC) {
			ret = 0;
			break;
		}
		if (ret)
			goto fail;
		res->logical_bytes += ch.length;
		res->physical_bytes += ch.stripe_size * ch.num_stripes;
		res->flags |= ch.flags;
		if (record) {
			if (res->nr_chunks == chunks_cap) {
				size_t cap = chunks_cap ? 2 * chunks_cap : 64;
				struct bx_alloc_chunk *n = realloc(res->chunks, cap * sizeof(*n));

				if (!n) {
					ret = -ENOMEM;
					goto fail;
				}
				res->chunks = n;
				chunks_cap = cap;
			}
			if (pool_len + ch.num_stripes > pool_cap) {
				size_t cap = pool_cap ? 2 * pool_cap : 256;
				struct bx_alloc_stripe *n;

				while (cap < pool_len + ch.num_stripes)
					cap *= 2;
				n = realloc(res->stripe_pool, cap * sizeof(*n));
				if (!n) {
					ret = -ENOMEM;
					goto fail;
				}
				res->stripe_pool = n;
				pool_cap = cap;
			}
			memcpy(&res->stripe_pool[pool_len], ch.stripes,
			       ch.num_stripes * sizeof(*ch.stripes));
			pool_len += ch.num_stripes;
			res->chunks[res->nr_chunks] = ch;
			res->chunks[res->nr_chunks].stripes = NULL;
		}
		res->nr_chunks++;
	}
	if (record) {
		pool_len = 0;
		for (i = 0; i < res->nr_chunks; i++) {
			res->chunks[i].stripes = &res->stripe_pool[pool_len];
			pool_len += res->chunks[i].num_stripes;
		}
	}
	bx_alloc_sim_free(sim);
	return 0;
fail:
	bx_alloc_sim_free(sim);
	bx_alloc_sim_result_release(res);
	return ret;
}
