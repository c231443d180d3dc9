/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for chunk placement against the hints (model/placement.c)
 * and the extent freeing it relies on (bx_alloc_device_remove_extent).
 *
 * Every expectation is worked out by hand in the comment above it, from the
 * tier table (SPEC): data tiers data_only 1, data_preferred 2,
 * metadata_preferred 3, none 4, metadata_only excluded; metadata tiers
 * metadata_only 1, metadata_preferred 2, data_preferred 3, none 4, data_only
 * excluded. MiB = 2^20, GiB = 2^30.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/placement.h"
#include "tests/unit/unit.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM
#define RAID0 BTRFS_BLOCK_GROUP_RAID0
#define RAID1 BTRFS_BLOCK_GROUP_RAID1

#define MONLY BX_HINT_METADATA_ONLY
#define MPREF BX_HINT_METADATA_PREFERRED
#define DONLY BX_HINT_DATA_ONLY
#define DPREF BX_HINT_DATA_PREFERRED
#define NONE BX_HINT_NONE

struct fixture {
	struct bx_alloc_device devs[8];
	size_t n;
	struct bx_place_model model;
};

/* Devices 1..n of @size with @hints, nothing allocated. */
static void setup(struct fixture *f, size_t n, uint64_t size, const uint64_t *hints)
{
	memset(f, 0, sizeof(*f));
	f->n = n;
	for (size_t i = 0; i < n; i++)
		if (bx_alloc_device_init(&f->devs[i], i + 1, size, hints[i]))
			exit(2);
	f->model.devs = f->devs;
	f->model.nr_devs = n;
	f->model.params.flags = BX_ALLOC_HINT_KERNEL;
}

static void teardown(struct fixture *f)
{
	for (size_t i = 0; i < f->n; i++)
		bx_alloc_device_release(&f->devs[i]);
}

/* A chunk of @type whose stripe i is on devids[i], at 1 MiB. */
struct test_chunk {
	struct bx_place_stripe stripes[8];
	struct bx_place_chunk c;
};

static void chunk_on(struct test_chunk *t, uint64_t type, uint64_t length, uint64_t used,
		     const uint64_t *devids, uint32_t n)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < n; i++)
		t->stripes[i] = (struct bx_place_stripe){ devids[i], 1 * MiB };
	t->c = (struct bx_place_chunk){ 1 << 30, length, used, type, n, t->stripes };
}

static enum bx_place_class classify(struct fixture *f, uint64_t type, const uint64_t *devids,
				    uint32_t n, struct bx_place_verdict *v)
{
	struct test_chunk t;

	chunk_on(&t, type, 256 * MiB, 100 * MiB, devids, n);
	CHECK(bx_place_classify(&f->model, &t.c, v) == 0);
	return v->cls;
}

static bool has_devid(const uint64_t *list, size_t n, uint64_t devid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == devid)
			return true;
	return false;
}

static bool target_has(const struct bx_place_verdict *v, uint64_t devid)
{
	for (uint32_t i = 0; i < v->target.num_stripes; i++)
		if (v->target.stripes[i].devid == devid)
			return true;
	return false;
}

/*
 * Devids 1..4: metadata_only, metadata_preferred, data_only, data_preferred,
 * 1 GiB each, empty. The model puts raid1 data on 3 (tier 1) and 4 (tier 2),
 * raid1 metadata on 1 (tier 1) and 2 (tier 2).
 */
static const uint64_t four_hints[] = { MONLY, MPREF, DONLY, DPREF };

static void test_forbidden(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 4, GiB, four_hints);
	/* data on 1 (metadata_only: excluded) and 3: forbidden, 1 offends */
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 1, 3 }, 2, &v) == BX_PLACE_FORBIDDEN);
	CHECK_EQ_U64(v.nr_offending, 1);
	CHECK_EQ_U64(v.offending[0], 1);
	/* bit 0 (excluded) and bit 1 (data_only) */
	CHECK_EQ_U64(v.tiers, 0x3);
	/* where the model puts it now: devids 3 and 4 */
	CHECK(v.target_ret == 0);
	CHECK(v.target.num_stripes == 2 && target_has(&v, 3) && target_has(&v, 4));
	bx_place_verdict_release(&v);
	/* metadata on 2 and 3 (data_only): forbidden, 3 offends */
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 2, 3 }, 2, &v) == BX_PLACE_FORBIDDEN);
	CHECK_EQ_U64(v.nr_offending, 1);
	CHECK_EQ_U64(v.offending[0], 3);
	bx_place_verdict_release(&v);
	/* system follows the metadata tiers */
	CHECK(classify(&f, SYS | RAID1, (uint64_t[]){ 3, 4 }, 2, &v) == BX_PLACE_FORBIDDEN);
	CHECK_EQ_U64(v.nr_offending, 1);
	bx_place_verdict_release(&v);
	teardown(&f);
}

static void test_off_preference(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 4, GiB, four_hints);
	/* metadata on 2 (tier 2) and 4 (tier 3) against the model's 1, 2 (tiers 1, 2) */
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 2, 4 }, 2, &v) == BX_PLACE_OFF_PREFERENCE);
	/* the worst tier in excess is 3: devid 4 offends */
	CHECK_EQ_U64(v.nr_offending, 1);
	CHECK_EQ_U64(v.offending[0], 4);
	bx_place_verdict_release(&v);
	/* data on 2 (metadata_preferred: tier 3) and 4 (tier 2) against 3, 4 (1, 2): 2 offends */
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 2, 4 }, 2, &v) == BX_PLACE_OFF_PREFERENCE);
	CHECK_EQ_U64(v.nr_offending, 1);
	CHECK_EQ_U64(v.offending[0], 2);
	bx_place_verdict_release(&v);
	/* well placed: the model's own devices, in either order */
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 4, 3 }, 2, &v) == BX_PLACE_OK);
	CHECK_EQ_U64(v.nr_offending, 0);
	bx_place_verdict_release(&v);
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 1, 2 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	teardown(&f);
}

/*
 * Devid 1 (metadata_only) full: the model's metadata chunk goes to 2 (tier
 * 2) and 4 (tier 3). A chunk on 1 and 4 (tiers 1, 3) is not worse: at tier
 * 2 or worse it has one stripe, the model two. A chunk on 2 and 4 is the
 * model's own placement. Nothing off-preference.
 */
static void test_no_better_room(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 4, GiB, four_hints);
	CHECK(bx_alloc_device_add_extent(&f.devs[0], 1 * MiB, GiB - 1 * MiB) == 0);
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 1, 4 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 2, 4 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	/* Data room gone on 3 and 4 too: data on 1, 3 stays forbidden, with no target */
	CHECK(bx_alloc_device_add_extent(&f.devs[2], 1 * MiB, GiB - 1 * MiB) == 0);
	CHECK(bx_alloc_device_add_extent(&f.devs[3], 1 * MiB, GiB - 1 * MiB) == 0);
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 1, 3 }, 2, &v) == BX_PLACE_FORBIDDEN);
	CHECK(v.target_ret == -ENOSPC);
	bx_place_verdict_release(&v);
	teardown(&f);
}

/* kakra's none (4) is the last tier: data on 1 and 3 (tiers 2, 4) vs the model's 1, 2. */
static void test_none_is_last(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 3, GiB, (uint64_t[]){ DPREF, DPREF, NONE });
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 1, 3 }, 2, &v) == BX_PLACE_OFF_PREFERENCE);
	CHECK_EQ_U64(v.nr_offending, 1);
	CHECK_EQ_U64(v.offending[0], 3);
	/* bits 2 and 4 */
	CHECK_EQ_U64(v.tiers, 0x14);
	bx_place_verdict_release(&v);
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 2, 3 }, 2, &v) == BX_PLACE_OFF_PREFERENCE);
	bx_place_verdict_release(&v);
	teardown(&f);
}

/* Nothing is misplaced without hints, for mixed block groups, or with hints ignored. */
static void test_hints_not_in_effect(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 3, GiB, (uint64_t[]){ DPREF, DPREF, DPREF });
	CHECK(classify(&f, META | RAID1, (uint64_t[]){ 1, 3 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	teardown(&f);

	setup(&f, 4, GiB, four_hints);
	CHECK(classify(&f, DATA | META | RAID1, (uint64_t[]){ 1, 3 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	f.model.params.flags |= BX_ALLOC_IGNORE_HINTS;
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 1, 2 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	teardown(&f);
}

/*
 * raid0 by shares: devids 1, 2 data_only, 3, 4 data_preferred. The model's
 * raid0 takes tier 1 alone (devs_min 1): devids 1 and 2. A chunk over all
 * four has half its stripes on tier 2, the model none: off-preference, 3 and
 * 4 offend. A chunk over 1 and 2 is the model's.
 */
static void test_raid0_shares(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 4, GiB, (uint64_t[]){ DONLY, DONLY, DPREF, DPREF });
	CHECK(classify(&f, DATA | RAID0, (uint64_t[]){ 1, 2, 3, 4 }, 4, &v) ==
	      BX_PLACE_OFF_PREFERENCE);
	CHECK_EQ_U64(v.nr_offending, 2);
	CHECK(has_devid(v.offending, v.nr_offending, 3) && has_devid(v.offending, v.nr_offending, 4));
	bx_place_verdict_release(&v);
	CHECK(classify(&f, DATA | RAID0, (uint64_t[]){ 2, 1 }, 2, &v) == BX_PLACE_OK);
	bx_place_verdict_release(&v);
	teardown(&f);

	/* 1 data_only, 2..4 data_preferred: raid0 over 1, 2, 3 vs the model's 1 alone */
	setup(&f, 4, GiB, (uint64_t[]){ DONLY, DPREF, DPREF, DPREF });
	CHECK(classify(&f, DATA | RAID0, (uint64_t[]){ 1, 2, 3 }, 3, &v) ==
	      BX_PLACE_OFF_PREFERENCE);
	bx_place_verdict_release(&v);
	teardown(&f);
}

static void test_unknown_device(void)
{
	struct fixture f;
	struct bx_place_verdict v;

	setup(&f, 4, GiB, four_hints);
	CHECK(classify(&f, DATA | RAID1, (uint64_t[]){ 1, 9 }, 2, &v) == BX_PLACE_OK);
	CHECK(v.unknown_device);
	bx_place_verdict_release(&v);
	teardown(&f);
}

static void test_improves(void)
{
	struct fixture f;
	struct test_chunk old;

	setup(&f, 4, GiB, four_hints);
	/* forbidden data on 1, 3: 3, 4 improves; 2, 3 too (not excluded); 1, 4 does not */
	chunk_on(&old, DATA | RAID1, 256 * MiB, MiB, (uint64_t[]){ 1, 3 }, 2);
	CHECK(bx_place_improves(&f.model, &old.c, (uint64_t[]){ 3, 4 }, 2));
	CHECK(bx_place_improves(&f.model, &old.c, (uint64_t[]){ 2, 3 }, 2));
	CHECK(!bx_place_improves(&f.model, &old.c, (uint64_t[]){ 1, 4 }, 2));
	/*
	 * off-preference data on 2, 4 (tiers 3, 2): 3, 4 (1, 2) improves, and so
	 * does 2, 3 (3, 1: one stripe a tier better); the same devices do not,
	 * nor 1, 4 (1 excluded)
	 */
	chunk_on(&old, DATA | RAID1, 256 * MiB, MiB, (uint64_t[]){ 2, 4 }, 2);
	CHECK(bx_place_improves(&f.model, &old.c, (uint64_t[]){ 3, 4 }, 2));
	CHECK(bx_place_improves(&f.model, &old.c, (uint64_t[]){ 2, 3 }, 2));
	CHECK(!bx_place_improves(&f.model, &old.c, (uint64_t[]){ 4, 2 }, 2));
	CHECK(!bx_place_improves(&f.model, &old.c, (uint64_t[]){ 1, 4 }, 2));
	teardown(&f);
}

/*
 * Room. Devids 1, 2 metadata_only, 3, 4 data_only, 1 GiB each (4 GiB: new
 * data chunks at most 416 MiB, metadata 256 MiB). Devids 3 and 4 have 300
 * MiB free each (the rest allocated to some other chunk).
 * Move 1: data raid1 on 1, 2 (forbidden), 512 MiB stripes at 1 MiB, 500
 * MiB used. A new data chunk on 3, 4 holds min(300 MiB hole) = 300 MiB;
 * then no data room is left: 200 MiB missing.
 * With 250 MiB of free space in well-placed data chunks, 250 MiB remain to
 * move: the 300 MiB chunk holds it, 50 MiB join the pool.
 * Move 2: metadata raid1 on 3, 4 (forbidden), 64 MiB stripes at 1 MiB, 50
 * MiB used: a new 256 MiB metadata chunk on 1, 2; with move 1 done, its
 * extents are free again and the metadata chunk starts at 1 MiB there.
 */
static void room_fixture(struct fixture *f)
{
	setup(f, 4, GiB, (uint64_t[]){ MONLY, MONLY, DONLY, DONLY });
	/* move 1's and move 2's extents, and 659 MiB of something else on 3, 4 */
	CHECK(bx_alloc_device_add_extent(&f->devs[0], 1 * MiB, 512 * MiB) == 0);
	CHECK(bx_alloc_device_add_extent(&f->devs[1], 1 * MiB, 512 * MiB) == 0);
	for (int d = 2; d < 4; d++) {
		CHECK(bx_alloc_device_add_extent(&f->devs[d], 1 * MiB, 64 * MiB) == 0);
		CHECK(bx_alloc_device_add_extent(&f->devs[d], 65 * MiB, 659 * MiB) == 0);
		CHECK_EQ_U64(bx_alloc_device_unallocated(&f->devs[d]), 300 * MiB);
	}
}

static void test_room(void)
{
	struct test_chunk move1, move2;
	struct bx_place_chunk moves[2];
	uint64_t pool[BX_PLACE_NR_KINDS] = { 250 * MiB, 0, 0 };
	struct bx_place_room room;
	struct fixture f;

	room_fixture(&f);
	chunk_on(&move1, DATA | RAID1, 512 * MiB, 500 * MiB, (uint64_t[]){ 1, 2 }, 2);
	chunk_on(&move2, META | RAID1, 64 * MiB, 50 * MiB, (uint64_t[]){ 3, 4 }, 2);
	moves[0] = move1.c;
	moves[1] = move2.c;

	CHECK(bx_place_room(&f.model, moves, 2, NULL, &room) == 0);
	CHECK_EQ_U64(room.nr_fit, 0);
	CHECK_EQ_U64(room.short_moves[BX_PLACE_KIND_DATA], 1);
	CHECK_EQ_U64(room.missing[BX_PLACE_KIND_DATA], 200 * MiB);
	CHECK_EQ_U64(room.new_chunk_bytes[BX_PLACE_KIND_DATA], 300 * MiB);
	/* move 2 still fits (devids 1, 2 have 511 MiB free beside move 1) */
	CHECK_EQ_U64(room.short_moves[BX_PLACE_KIND_METADATA], 0);
	CHECK_EQ_U64(room.new_chunk_bytes[BX_PLACE_KIND_METADATA], 256 * MiB);

	CHECK(bx_place_room(&f.model, moves, 2, pool, &room) == 0);
	CHECK_EQ_U64(room.nr_fit, 2);
	CHECK_EQ_U64(room.missing[BX_PLACE_KIND_DATA], 0);
	CHECK_EQ_U64(room.new_chunks[BX_PLACE_KIND_DATA], 1);
	CHECK_EQ_U64(room.new_chunks[BX_PLACE_KIND_METADATA], 1);
	/* the model's devices are untouched */
	CHECK_EQ_U64(bx_alloc_device_unallocated(&f.devs[0]), 511 * MiB);
	teardown(&f);
}

/* Freeing extents: merges with both neighbours, refuses what is free already. */
static void test_remove_extent(void)
{
	struct bx_alloc_device d;

	CHECK(bx_alloc_device_init(&d, 1, GiB, 0) == 0);
	CHECK(bx_alloc_device_add_extent(&d, 1 * MiB, 100 * MiB) == 0);
	CHECK(bx_alloc_device_add_extent(&d, 101 * MiB, 100 * MiB) == 0);
	CHECK(bx_alloc_device_add_extent(&d, 301 * MiB, 100 * MiB) == 0);
	/* holes: [201, 301) and [401, 1024) */
	CHECK_EQ_U64(d.nr_holes, 2);
	CHECK(bx_alloc_device_remove_extent(&d, 250 * MiB, 10 * MiB) == -EEXIST);
	/* [101, 201) joins the hole after it */
	CHECK(bx_alloc_device_remove_extent(&d, 101 * MiB, 100 * MiB) == 0);
	CHECK_EQ_U64(d.nr_holes, 2);
	CHECK_EQ_U64(d.holes[0].start, 101 * MiB);
	/* [301, 401) joins both: one hole from 101 MiB to the end */
	CHECK(bx_alloc_device_remove_extent(&d, 301 * MiB, 100 * MiB) == 0);
	CHECK_EQ_U64(d.nr_holes, 1);
	CHECK_EQ_U64(d.holes[0].len, GiB - 101 * MiB);
	/* [1, 101) joins it from the front; bytes_used back to 0 */
	CHECK(bx_alloc_device_remove_extent(&d, 1 * MiB, 100 * MiB) == 0);
	CHECK_EQ_U64(d.nr_holes, 1);
	CHECK_EQ_U64(d.holes[0].start, 1 * MiB);
	CHECK_EQ_U64(d.bytes_used, 0);
	/* a lone extent in the middle becomes a hole of its own */
	CHECK(bx_alloc_device_add_extent(&d, 1 * MiB, GiB - 1 * MiB) == 0);
	CHECK(bx_alloc_device_remove_extent(&d, 500 * MiB, 1 * MiB) == 0);
	CHECK_EQ_U64(d.nr_holes, 1);
	CHECK_EQ_U64(bx_alloc_device_unallocated(&d), 1 * MiB);
	CHECK(bx_alloc_device_remove_extent(&d, 0, 0) == -EINVAL);
	bx_alloc_device_release(&d);
}

int main(void)
{
	test_forbidden();
	test_off_preference();
	test_no_better_room();
	test_none_is_last();
	test_hints_not_in_effect();
	test_raid0_shares();
	test_unknown_device();
	test_improves();
	test_room();
	test_remove_extent();
	return unit_summary();
}
