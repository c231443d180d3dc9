/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the allocator's decision code (allocator.c) shares with its
 * simulation (allocator-sim.c). Not part of the model's interface.
 */
#ifndef BTRFSX_ALLOCATOR_PRIVATE_H
#define BTRFSX_ALLOCATOR_PRIVATE_H

#include <stdbool.h>

#include "model/allocator.h"

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

struct choice {
	size_t ndevs;
	uint64_t stripe_size;
	uint64_t length;
	uint32_t num_stripes;
	uint32_t flags;
	uint32_t tiers;
};

uint32_t alloc_best_tier_of(const uint64_t *hints, const bool *writable, size_t n,
			     uint64_t type, uint32_t flags);
int alloc_choose(const struct bx_alloc_limits *lim, uint64_t type, bool tiered, uint32_t flags,
		  uint32_t best_tier, struct sorter *sorter, struct cand *c, uint32_t *ord,
		  size_t nc, struct choice *out);
void alloc_fill_chunk(struct bx_alloc_chunk *chunk, uint64_t type,
		       const struct bx_alloc_limits *lim, const struct choice *ch,
		       bool unknown, struct bx_alloc_stripe *stripes);
void alloc_fill_stripes(const struct bx_alloc_limits *lim, const struct choice *ch,
			 const struct cand *c, const uint32_t *ord,
			 const uint64_t *devids, struct bx_alloc_stripe *st);
bool alloc_hints_in_effect(const uint64_t *hints, const bool *writable, size_t n,
			    uint64_t type, uint32_t flags, bool *unknown);
size_t alloc_normalize_holes(struct bx_alloc_hole *h, size_t nr, uint64_t total);
void alloc_sorter_free(struct sorter *s);
int alloc_sorter_init(struct sorter *s, size_t ndevs, bool pre69);
uint64_t alloc_writable_total(const struct bx_alloc_device *devs, size_t n);

#endif
