/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the what-if planner (plan/plan.c) on filesystems built by
 * hand: every change, the relocation rules, impossible changes, bad input,
 * and the change parser.
 *
 * Sizes are chosen so the expectations can be worked out by hand: devices
 * of a few GiB, chunks of 1 GiB data / 256 MiB metadata (the allocator
 * model's sizes on filesystems of this size are smaller: 10% of the
 * writable bytes, rounded down to 16 MiB, so the new chunks of a plan are
 * checked by their sum, not one by one). MiB = 2^20, GiB = 2^30.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "plan/plan.h"
#include "tests/unit/unit.h"
#include "tests/unit/snapshot-fixture.h"

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM
#define RAID6 BTRFS_BLOCK_GROUP_RAID6
#define DUP BTRFS_BLOCK_GROUP_DUP

static int plan(const struct bx_snapshot *in, const char *const *changes, size_t nr,
		struct bx_plan_result *res)
{
	struct bx_plan_change c[8];

	for (size_t i = 0; i < nr; i++)
		if (bx_plan_parse_change(changes[2 * i], changes[2 * i + 1], &c[i]))
			return -100;
	return bx_plan_compute(in, c, nr, res);
}

static const struct bx_snap_dev *dev_of(const struct bx_snapshot *in, uint64_t devid)
{
	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].devid == devid)
			return &in->devs[i];
	return NULL;
}

static uint64_t chunks_with(const struct bx_snapshot *in, uint64_t type_bits, uint64_t profile)
{
	uint64_t n = 0;

	for (size_t i = 0; i < in->nr_chunks; i++)
		if ((in->chunks[i].type & type_bits) &&
		    (in->chunks[i].type & BTRFS_BLOCK_GROUP_PROFILE_MASK) == profile)
			n++;
	return n;
}

/* Adding a device: the next devid, nothing moves, more room. */
static void test_add(void)
{
	static const char *const ch[] = { "add", "4G:metadata_only" };
	struct bx_plan_result res;
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].devid, 4);
	CHECK_EQ_U64(res.nr_moved, 0);
	CHECK_EQ_U64(res.after_in.nr_devs, 4);
	CHECK_EQ_U64(dev_of(&res.after_in, 4)->hint, BX_HINT_METADATA_ONLY);
	/* Data may not use the new device: free space for data stays. */
	CHECK_EQ_U64(res.after.free_estimated, res.before.free_estimated);
	/* raid1 pairs the new device with the others: each copy there doubles the raw room. */
	CHECK_EQ_U64(res.after.metadata_room, res.before.metadata_room + 2 * GiB);
	/* The metadata chunk on 1,2 now has a better place (tier 1): off-preference. */
	CHECK(res.have_misplaced);
	CHECK(res.newly_misplaced_chunks >= 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Removing devid 1: the system, metadata and one data chunk have a stripe
 * there; they move to devids 2 and 3. The data chunk on 3,1 is the highest
 * extent on devid 1 (1289 MiB), so it moves first. Its 512 MiB used go into
 * the 512 MiB free of the data chunk on 2,3 that stays: no new data chunk.
 */
static void test_remove_fills_free_space_first(void)
{
	static const char *const ch[] = { "remove", "1" };
	struct bx_plan_result res;
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 3);
	CHECK_EQ_U64(res.steps[0].moved_bytes, 512 * MiB + 64 * MiB + 16384);
	CHECK_EQ_U64(res.moved[0].logical, 1 * GiB + 8 * MiB + 256 * MiB + 1 * GiB);
	CHECK(dev_of(&res.after_in, 1) == NULL);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 1);
	CHECK_EQ_U64(res.after.data_used, 1 * GiB);
	CHECK_EQ_U64(res.after.data_size, 1 * GiB);
	/* Metadata and system needed new chunks on 2 and 3 (nothing else of theirs stays). */
	CHECK_EQ_U64(res.steps[0].new_chunks, 2);
	for (size_t i = 0; i < res.after_in.nr_stripes; i++)
		CHECK(res.after_in.stripes[i].devid != 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/* A remove the others cannot hold: impossible, the device stays, later changes not reached. */
static void test_remove_impossible(void)
{
	static const char *const ch[] = { "remove", "1", "add", "8G" };
	uint64_t sizes[3] = { 4 * GiB, 1 * GiB + 512 * MiB, 1 * GiB + 512 * MiB };
	struct bx_plan_result res;
	struct fs f;

	fs_init(&f, 3, sizes, NULL);
	raid1(&f, DATA, 1 * GiB, 1 * GiB, 1, 2, 1 * MiB);
	raid1(&f, DATA, 1 * GiB, 1 * GiB, 1, 3, 1025 * MiB);
	CHECK(plan(&f.in, ch, 2, &res) == 0);
	CHECK(!res.possible);
	CHECK(res.steps[0].status == BX_PLAN_STEP_IMPOSSIBLE);
	CHECK(res.steps[1].status == BX_PLAN_STEP_NOT_REACHED);
	CHECK(strstr(res.steps[0].reason, "ENOSPC") != NULL);
	CHECK(strstr(res.steps[0].reason, "data raid1 is short by") != NULL);
	CHECK_EQ_U64(res.steps[0].nr_short, 1);
	CHECK_EQ_U64(res.steps[0].shorts[0].type, DATA | RAID1);
	CHECK_EQ_U64(res.steps[0].shorts[0].nr_devs, 2);	/* devids 2 and 3 */
	CHECK(res.steps[0].shorts[0].missing >= 1 * GiB);
	CHECK(dev_of(&res.after_in, 1) != NULL);
	CHECK(dev_of(&res.after_in, 4) == NULL);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

static void expect_einval(const struct bx_snapshot *in, const char *const *ch, size_t nr,
			  const char *words)
{
	struct bx_plan_result res;
	int ret = plan(in, ch, nr, &res);

	if (ret != -EINVAL)
		fprintf(stderr, "%s %s: %d\n", ch[0], ch[1], ret);
	CHECK(ret == -EINVAL);
	if (ret == -EINVAL && !strstr(bx_error_message(ret), words))
		fprintf(stderr, "message '%s' lacks '%s'\n", bx_error_message(ret), words);
	CHECK(ret != -EINVAL || strstr(bx_error_message(ret), words));
	bx_plan_result_release(&res);
	bx_error_clear();
}

static void test_bad_plans(void)
{
	static const char *const unknown[] = { "remove", "9" };
	static const char *const twice[] = { "remove", "3", "hint", "3=data_only" };
	static const char *const too_few[] = { "remove", "1", "remove", "2" };
	static const char *const raid1c4[] = { "convert", "data=raid1c4" };
	static const char *const converted[] = { "convert", "data=single", "convert",
						 "data=raid1" };
	static const char *const small[] = { "resize", "1=100M" };
	static const char *const replace[] = { "replace", "2=1G" };
	static const char *const huge[] = { "add", "2P" };
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
	expect_einval(&f.in, unknown, 1, "devid 9 is not in the filesystem");
	expect_einval(&f.in, twice, 2, "devid 3 is removed by an earlier change");
	expect_einval(&f.in, too_few, 2, "leaves 1 device, but");
	expect_einval(&f.in, raid1c4, 1, "raid1c4 needs at least 4 devices");
	expect_einval(&f.in, converted, 2, "converted twice");
	expect_einval(&f.in, small, 1, "at least 256.00MiB");
	expect_einval(&f.in, replace, 1, "smaller than devid 2");
	expect_einval(&f.in, huge, 1, "at most 1.00PiB");
	bx_snapshot_release(&f.in);
}

/* Shrinking devid 1 to 1 GiB: the data chunk at 1289 MiB lies beyond and moves; growing moves nothing. */
static void test_resize(void)
{
	static const char *const shrink[] = { "resize", "1=1G" };
	static const char *const grow[] = { "resize", "2=8G" };
	struct bx_plan_result res;
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
	CHECK(plan(&f.in, shrink, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 1);
	CHECK_EQ_U64(res.moved[0].logical, 1 * GiB + 8 * MiB + 256 * MiB + 1 * GiB);
	CHECK_EQ_U64(dev_of(&res.after_in, 1)->total_bytes, 1 * GiB);
	for (size_t i = 0; i < dev_of(&res.after_in, 1)->nr_extents; i++) {
		const struct bx_snap_extent *e = &dev_of(&res.after_in, 1)->extents[i];

		CHECK(e->start + e->length <= 1 * GiB);
	}
	bx_plan_result_release(&res);
	CHECK(plan(&f.in, grow, 1, &res) == 0);
	CHECK_EQ_U64(res.nr_moved, 0);
	CHECK_EQ_U64(res.after.overall.device_size, 16 * GiB);
	CHECK(res.nr_warnings == 1 && strstr(res.warnings[0], "grow the device"));
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/* Converting data to single rewrites both data chunks; nothing raid1 is left of data. */
static void test_convert(void)
{
	static const char *const ch[] = { "convert", "data=single" };
	static const char *const meta[] = { "convert", "metadata=single" };
	struct bx_plan_result res;
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 2);
	CHECK_EQ_U64(res.steps[0].moved_bytes, 1 * GiB);
	/* The last chunk moves first (balance goes down the chunk tree). */
	CHECK(res.moved[0].logical > res.moved[1].logical);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 0);
	CHECK(chunks_with(&res.after_in, DATA, 0) >= 1);
	CHECK_EQ_U64(res.after.data_type, DATA);
	CHECK_EQ_U64(res.after.data_used, 1 * GiB);
	/* Half the raw bytes per data byte: more room. */
	CHECK(res.after.free_estimated > res.before.free_estimated + res.before.free_estimated / 2);
	bx_plan_result_release(&res);
	/* Metadata takes the system chunks along, and loses redundancy: a warning. */
	CHECK(plan(&f.in, meta, 1, &res) == 0);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 2);
	CHECK_EQ_U64(chunks_with(&res.after_in, SYS, RAID1), 0);
	CHECK(res.nr_warnings >= 1 && strstr(res.warnings[0], "reduces its redundancy"));
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Issue 39, defect 1: raid1 on three devices, one metadata_only; data to
 * raid1c3 needs all three. A kernel that honours hints would fail it (the
 * guard rails refuse); mounted on one that ignores them the convert is
 * made, so the verdict is possible and the broken hint a warning.
 */
static void test_convert_guard_rails_follow_the_kernel(void)
{
	static const char *const ch[] = { "convert", "data=raid1c3" };
	uint64_t hints[3] = { 0, 0, BX_HINT_METADATA_ONLY };
	struct bx_plan_result res;
	bool warned = false;
	struct fs f;

	three_raid1(&f, 4 * GiB, hints, 64 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(!res.possible);
	CHECK(strstr(res.steps[0].reason, "guard rails refuse the convert") != NULL);
	bx_plan_result_release(&res);
	f.in.mounted = true;
	f.in.hints_effective = false;
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].status, BX_PLAN_STEP_DONE);
	CHECK(chunks_with(&res.after_in, DATA, BTRFS_BLOCK_GROUP_RAID1C3) >= 1);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 0);
	for (size_t i = 0; i < res.nr_warnings; i++)
		warned |= strstr(res.warnings[i], "the convert breaks the allocation hints") &&
			  strstr(res.warnings[i], "this kernel ignores the hints");
	CHECK(warned);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/* raid1 metadata on two devices: making one data_only leaves one device for metadata. */
static void test_hint_guard(void)
{
	static const char *const ch[] = { "hint", "1=data_only", "remove", "3" };
	uint64_t sizes[2] = { 4 * GiB, 4 * GiB };
	struct bx_plan_result res;
	struct fs f;

	fs_init(&f, 2, sizes, NULL);
	raid1(&f, META, 256 * MiB, 1 * MiB, 1, 2, 1 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(!res.possible);
	CHECK(strstr(res.steps[0].reason, "guard rails refuse") != NULL);
	CHECK(strstr(res.steps[0].reason, "1 device would allow metadata, but raid1") != NULL);
	CHECK_EQ_U64(dev_of(&res.after_in, 1)->hint, BX_HINT_DATA_PREFERRED);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Hints: devid 3 metadata_only makes both data chunks forbidden (a stripe
 * there); relocate moves them to 1 and 2, after which nothing is misplaced.
 */
static void test_hint_then_relocate(void)
{
	static const char *const hint[] = { "hint", "3=metadata_only" };
	static const char *const both[] = { "hint", "3=metadata_only", "relocate", NULL };
	struct bx_plan_result res;
	struct fs f;

	three_raid1(&f, 8 * GiB, NULL, 512 * MiB);
	CHECK(plan(&f.in, hint, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.nr_moved, 0);
	CHECK_EQ_U64(res.misplaced_after.forbidden.chunks, 2);
	CHECK_EQ_U64(res.newly_misplaced_chunks >= 2, 1);
	CHECK_EQ_U64(res.misplaced_after.forbidden.used, 1 * GiB);
	bx_plan_result_release(&res);
	CHECK(plan(&f.in, both, 2, &res) == 0);
	CHECK(res.possible);
	CHECK(res.steps[1].moved_chunks >= 2);
	CHECK_EQ_U64(res.misplaced_after.forbidden.chunks, 0);
	for (size_t i = 0; i < res.after_in.nr_chunks; i++) {
		const struct bx_snap_chunk *c = &res.after_in.chunks[i];

		for (uint32_t k = 0; (c->type & DATA) && k < c->num_stripes; k++)
			CHECK(res.after_in.stripes[c->first_stripe + k].devid != 3);
	}
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/* A replace keeps the size and extents; the hint is not copied unless given. */
static void test_replace(void)
{
	static const char *const ch[] = { "replace", "2=8G" };
	static const char *const hinted[] = { "replace", "2=8G:metadata_only" };
	uint64_t hints[3] = { 0, BX_HINT_METADATA_ONLY, 0 };
	struct bx_plan_result res;
	struct fs f;

	three_raid1(&f, 4 * GiB, hints, 512 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(dev_of(&res.after_in, 2)->total_bytes, 4 * GiB);
	CHECK_EQ_U64(dev_of(&res.after_in, 2)->device_size, 8 * GiB);
	CHECK_EQ_U64(dev_of(&res.after_in, 2)->hint, BX_HINT_DATA_PREFERRED);
	/*
	 * Three extents: copying the only system block group made another,
	 * which took the chunk tree, and the old one, empty, went at rest;
	 * the only metadata block group makes the replace tight.
	 */
	CHECK_EQ_U64(dev_of(&res.after_in, 2)->nr_extents, 3);
	CHECK(res.steps[0].tight);
	/* System 16 KiB + metadata 64 MiB + data 512 MiB, each raid1 copy on devid 2. */
	CHECK_EQ_U64(res.steps[0].copied_bytes, 16384 + 64 * MiB + 512 * MiB);
	CHECK(res.nr_warnings >= 3 && strstr(res.warnings[0], "does not copy the allocation hint"));
	bx_plan_result_release(&res);
	CHECK(plan(&f.in, hinted, 1, &res) == 0);
	CHECK_EQ_U64(dev_of(&res.after_in, 2)->hint, BX_HINT_METADATA_ONLY);
	bx_plan_result_release(&res);
	/* replace_copies_read_only off: nothing needs another system chunk, nothing is tight. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_REPLACE_COPIES_READ_ONLY, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(!res.steps[0].tight && res.steps[0].new_chunks == 0);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/* Nothing used in data: moving the data chunk first allocates an empty one (profile kept). */
static void test_empty_data_chunk_kept(void)
{
	static const char *const ch[] = { "remove", "1" };
	uint64_t sizes[3] = { 2 * GiB, 2 * GiB, 2 * GiB };
	struct bx_plan_result res;
	struct fs f;

	fs_init(&f, 3, sizes, NULL);
	raid1(&f, DATA, 256 * MiB, 0, 1, 2, 1 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].new_chunks, 1);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 1);
	bx_plan_result_release(&res);
	/* may_alloc_data_chunk off: nothing keeps the profile. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_MAY_ALLOC_DATA_CHUNK, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(res.steps[0].new_chunks, 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 0);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Three 4 GiB devices, raid1 (system, metadata 64 of 256 MiB used), data
 * chunk 2 (on 2,3) with @used2 and data chunk 3 (on 3,1, the last) with @used3.
 */
static void two_data_chunks(struct fs *f, uint64_t used2, uint64_t used3)
{
	uint64_t sizes[3] = { 4 * GiB, 4 * GiB, 4 * GiB };

	fs_init(f, 3, sizes, NULL);
	raid1(f, SYS, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(f, META, 256 * MiB, 64 * MiB, 1, 2, 9 * MiB);
	raid1(f, DATA, 1 * GiB, used2, 2, 3, 265 * MiB);
	raid1(f, DATA, 1 * GiB, used3, 3, 1, 1289 * MiB);
}

/*
 * -dusage=50: the balance walks down from the last chunk and asks each
 * chunk's usage as it reaches it. Chunk 3 (100 MiB) moves into chunk 2's
 * free space; chunk 2, 450 MiB before, holds 550 MiB by then (above half
 * of 1 GiB) and stays. -dusage=0 takes no chunk with data.
 */
static void test_balance_usage(void)
{
	static const char *const half[] = { "balance", "dusage=50" };
	static const char *const empty[] = { "balance", "dusage=0" };
	static const char *const range[] = { "balance", "dusage=40..50" };
	struct bx_plan_result res;
	struct fs f;

	two_data_chunks(&f, 450 * MiB, 100 * MiB);
	CHECK(plan(&f.in, half, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 1);
	CHECK_EQ_U64(res.moved[0].logical, f.in.chunks[3].logical);
	CHECK_EQ_U64(res.steps[0].moved_bytes, 100 * MiB);
	CHECK_EQ_U64(res.steps[0].new_chunks, 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 1);
	CHECK_EQ_U64(res.after.data_used, 550 * MiB);
	/* A GiB of each of two devices back as unallocated space; the free bytes stay. */
	CHECK(res.after.overall.device_unallocated ==
	      res.before.overall.device_unallocated + 2 * (int64_t)GiB);
	bx_plan_result_release(&res);
	CHECK(plan(&f.in, empty, 1, &res) == 0);
	CHECK(res.possible && res.steps[0].moved_chunks == 0);
	bx_plan_result_release(&res);
	/* 40..50: chunk 2 alone (43.9 %), its 450 MiB into chunk 3's free space. */
	CHECK(plan(&f.in, range, 1, &res) == 0);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 1);
	CHECK_EQ_U64(res.moved[0].logical, f.in.chunks[2].logical);
	CHECK_EQ_U64(res.steps[0].new_chunks, 0);
	bx_plan_result_release(&res);
	/* balance_usage_on_arrival off: chunk 2 is judged as it began (43.9 %) and moves too. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_BALANCE_USAGE_ON_ARRIVAL, false);
	CHECK(plan(&f.in, half, 1, &res) == 0);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 2);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * -musage=30: metadata (25 % used) and system (musage holds for system too)
 * move; each is the only one of its type, so each needs a new chunk.
 * Data is not touched. A paused balance refuses a new one.
 */
static void test_balance_metadata(void)
{
	static const char *const meta[] = { "balance", "-musage=30" };
	struct bx_plan_result res;
	struct fs f;

	two_data_chunks(&f, 450 * MiB, 100 * MiB);
	CHECK(plan(&f.in, meta, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 2);
	CHECK_EQ_U64(res.steps[0].moved_bytes, 64 * MiB + 16384);
	for (size_t i = 0; i < res.nr_moved; i++)
		CHECK(!(res.moved[i].type & DATA));
	CHECK_EQ_U64(res.steps[0].new_chunks, 2);
	bx_plan_result_release(&res);
	f.in.balance = BX_SNAP_BALANCE_PAUSED;
	CHECK(plan(&f.in, meta, 1, &res) == 0);
	CHECK(!res.possible && strstr(res.steps[0].reason, "refuses a new balance"));
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * raid1 -> single paused after one chunk: the resume converts the raid1
 * chunks left and leaves the single one (the soft filter); afterwards the
 * balance is over: a remove is no longer refused, new data is single.
 */
static void test_resume(void)
{
	static const char *const resume[] = { "resume", NULL, "remove", "1" };
	uint64_t one = 2, at = 2 * GiB;
	struct bx_plan_result res;
	struct fs f;

	two_data_chunks(&f, 300 * MiB, 200 * MiB);
	add_chunk(&f, DATA, 512 * MiB, 512 * MiB, 100 * MiB, 1, &one, &at);
	f.in.balance = BX_SNAP_BALANCE_PAUSED;
	f.in.balance_target[BX_SNAP_KIND_DATA] = DATA;
	CHECK(plan(&f.in, resume, 2, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 2);
	CHECK_EQ_U64(res.steps[0].moved_bytes, 500 * MiB);
	for (size_t i = 0; i < res.steps[0].nr_moved; i++)
		CHECK(res.moved[i].type & RAID1);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 0);
	CHECK(res.steps[1].status == BX_PLAN_STEP_DONE);
	CHECK(res.after_in.balance == BX_SNAP_BALANCE_NONE);
	CHECK_EQ_U64(res.after.data_type, DATA);
	CHECK_EQ_U64(res.after.data_used, 600 * MiB);
	bx_plan_result_release(&res);
	/* resume_soft_filter off: the single chunk is rewritten too. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_RESUME_SOFT_FILTER, false);
	CHECK(plan(&f.in, resume, 2, &res) == 0);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 3);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

static void test_bad_balances(void)
{
	static const char *const resume[] = { "resume", NULL };
	static const char *const twice[] = { "resume", NULL, "resume", NULL };
	struct fs f;

	two_data_chunks(&f, 450 * MiB, 100 * MiB);
	expect_einval(&f.in, resume, 1, "no paused or interrupted balance");
	f.in.balance = BX_SNAP_BALANCE_RUNNING;
	f.in.balance_target[BX_SNAP_KIND_DATA] = DATA;
	expect_einval(&f.in, resume, 1, "the balance is running");
	f.in.balance = BX_SNAP_BALANCE_INTERRUPTED;
	expect_einval(&f.in, twice, 2, "no paused or interrupted balance");
	f.in.balance_target[BX_SNAP_KIND_DATA] = 0;
	expect_einval(&f.in, resume, 1, "converts nothing");
	bx_snapshot_release(&f.in);
}

static void test_parse(void)
{
	struct bx_plan_change c;
	char text[160];

	CHECK(bx_plan_parse_change("add", "64G:metadata_only", &c) == 0);
	CHECK(c.op == BX_PLAN_ADD && c.size == 64 * GiB && c.has_hint &&
	      c.hint == BX_HINT_METADATA_ONLY);
	bx_plan_describe_change(&c, text, sizeof(text));
	CHECK(!strcmp(text, "add a 64.00GiB device as metadata_only"));
	CHECK(bx_plan_parse_change("replace", "3=1T:donly", &c) == 0);
	CHECK(c.devid == 3 && c.size == 1024 * GiB && c.hint == BX_HINT_DATA_ONLY);
	CHECK(bx_plan_parse_change("convert", "metadata=raid1c3", &c) == 0);
	CHECK(c.type == META && c.profile == BTRFS_BLOCK_GROUP_RAID1C3);
	CHECK(bx_plan_parse_change("relocate", NULL, &c) == 0 && c.op == BX_PLAN_RELOCATE);
	CHECK(bx_plan_parse_change("hint", "2=M", &c) == 0 && c.hint == BX_HINT_METADATA_PREFERRED);
	CHECK(bx_plan_parse_change("add", "64X", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("add", "64G:fast", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("hint", "2=4", &c) == 0 && c.hint == BX_HINT_NONE);
	CHECK(bx_plan_parse_change("hint", "2=5", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("remove", "0", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("remove", "-1", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("resize", "3:10G", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("resize", "=10G", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("resize", "3=", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("convert", "system=raid1", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("convert", "data=raid7", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("relocate", "1", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "1", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("hint", NULL, &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=50,musage=10..30", &c) == 0);
	CHECK(c.op == BX_PLAN_BALANCE && c.type == (DATA | META));
	CHECK(c.data_usage_min == 0 && c.data_usage_max == 50);
	CHECK(c.metadata_usage_min == 10 && c.metadata_usage_max == 30);
	bx_plan_describe_change(&c, text, sizeof(text));
	CHECK(!strcmp(text, "balance data chunks below 50 % used and metadata and system chunks "
		      "10 % to 30 % used"));
	CHECK(bx_plan_parse_change("balance", "-dusage=0", &c) == 0 && c.type == DATA);
	bx_plan_describe_change(&c, text, sizeof(text));
	CHECK(!strcmp(text, "balance the empty data chunks"));
	/* btrfs-progs sets the single-value filter beside a range: from 0, the empty ones. */
	CHECK(bx_plan_parse_change("balance", "musage=0..90", &c) == 0 && c.type == META);
	CHECK(c.metadata_usage_min == 0 && c.metadata_usage_max == 0);
	CHECK(bx_plan_parse_change("resume", NULL, &c) == 0 && c.op == BX_PLAN_RESUME);
	CHECK(bx_plan_parse_change("resume", "1", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=101", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=50..10", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=..10", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=5,dusage=6", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "dusage=5,", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "susage=5", &c) == -EINVAL);
	CHECK(bx_plan_parse_change("balance", "usage=5", &c) == -EINVAL);
	bx_error_clear();
}

/* The data extents of chunk @chunk: @n of @len bytes, one every @step bytes from its start. */
static void add_dextents(struct fs *f, size_t chunk, uint64_t len, uint64_t step, size_t n)
{
	struct bx_snapshot *in = &f->in;
	struct bx_snap_chunk *c = &in->chunks[chunk];

	in->dextents = realloc(in->dextents, (in->nr_dextents + n) * sizeof(*in->dextents));
	c->first_dextent = in->nr_dextents;
	c->nr_dextents = n;
	for (size_t k = 0; k < n; k++)
		in->dextents[in->nr_dextents++] = (struct bx_snap_dextent){ c->logical + k * step,
									     len };
	in->dextents_known = true;
}

/*
 * Three 4 GiB devices, raid1: data chunk 2 (on 2,3) holds @n2 extents of
 * @len2 one every 128 MiB; data chunk 3 (on 3,1) four 100 MiB extents.
 */
static void fragmented(struct fs *f, uint64_t len2, size_t n2)
{
	uint64_t sizes[3] = { 4 * GiB, 4 * GiB, 4 * GiB };

	fs_init(f, 3, sizes, NULL);
	raid1(f, SYS, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(f, META, 256 * MiB, 64 * MiB, 1, 2, 9 * MiB);
	raid1(f, DATA, 1 * GiB, len2 * n2, 2, 3, 265 * MiB);
	raid1(f, DATA, 1 * GiB, 400 * MiB, 3, 1, 1289 * MiB);
	add_dextents(f, 2, len2, 128 * MiB, n2);
	add_dextents(f, 3, 100 * MiB, 100 * MiB, 4);
}

/*
 * Relocated extents need one free range of their size each (the kernel
 * preallocates them whole): 512 MiB free in 64 MiB pieces take none of the
 * 100 MiB extents, a new data chunk does. Counted in bytes they would fit.
 */
static void test_relocation_needs_contiguous_room(void)
{
	static const char *const ch[] = { "remove", "1" };
	struct bx_plan_result res;
	struct fs f;

	fragmented(&f, 64 * MiB, 8);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 2);
	CHECK_EQ_U64(res.after.data_used, 912 * MiB);
	bx_plan_result_release(&res);
	/* A kernel that moved bytes, not extents (relocates_extent_by_extent off): they fit. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_RELOCATES_EXTENT_BY_EXTENT, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 1);
	bx_plan_result_release(&res);
	/* Without the extents, the bytes fit the free space of chunk 2 too. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_RELOCATES_EXTENT_BY_EXTENT, true);
	f.in.dextents_known = false;
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Size classes (6.3+): chunk 2 holds 64 KiB extents (small), with 128 MiB
 * free ranges; the 100 MiB extents (large) go to a new chunk first. Kernels
 * before 6.3 put them into chunk 2.
 */
static void test_size_classes(void)
{
	static const char *const ch[] = { "remove", "1" };
	struct bx_plan_result res;
	struct fs f;

	fragmented(&f, 64 * 1024, 8);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 1);
	bx_plan_result_release(&res);
	bx_kernel_set_trait(&f.in.kernel, BX_KT_SIZE_CLASSES, true);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 2);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Converting to single, relocated extents go to the block groups of the old
 * profile still to move too (single has no profile bit: find_free_extent()
 * takes any data block group), before a new chunk. Two 1 GiB devices,
 * raid1: system [1, 9), metadata [9, 73), data A [73, 329) with one
 * 100 MiB extent, data B [329, 585) with three 80 MiB extents; holes
 * [585, 1024) = 439 MiB. New single chunks are 208 MiB (10 % of 2 GiB,
 * rounded up to 16 MiB). B moves first: its forced chunk takes two
 * extents, the third goes into A's free space (not into a new chunk); then
 * A (now 180 MiB) fills a second forced chunk.
 */
static void test_convert_to_single_fills_the_old_profile(void)
{
	static const char *const ch[] = { "convert", "data=single" };
	uint64_t sizes[2] = { 1 * GiB, 1 * GiB };
	struct bx_plan_result res;
	struct fs f;

	fs_init(&f, 2, sizes, NULL);
	raid1(&f, SYS, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(&f, META, 64 * MiB, 1 * MiB, 1, 2, 9 * MiB);
	raid1(&f, DATA, 256 * MiB, 100 * MiB, 1, 2, 73 * MiB);
	raid1(&f, DATA, 256 * MiB, 240 * MiB, 1, 2, 329 * MiB);
	add_dextents(&f, 2, 100 * MiB, 100 * MiB, 1);
	add_dextents(&f, 3, 80 * MiB, 80 * MiB, 3);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, RAID1), 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, 0), 2);
	CHECK_EQ_U64(res.after.data_used, 340 * MiB);
	/* What the two held before the change. */
	CHECK_EQ_U64(res.steps[0].moved_bytes, 340 * MiB);
	bx_plan_result_release(&res);
	/* single_data_any_profile off: B's third extent needs a single chunk of its own. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_SINGLE_DATA_ANY_PROFILE, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, 0), 3);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * In a raid5 block group an allocation of a full stripe or more starts on
 * a full stripe (btrfs_find_space_for_alloc()). Three 1 GiB devices, raid5
 * data (2 data stripes: full stripes of 128 KiB): A with 256 KiB free at
 * 64 KiB from its start, B with one 256 KiB extent. B moves (dusage=1):
 * aligned to 128 KiB its extent would end past A's free range, so it takes
 * a new chunk; counted from the range's start it would have fitted.
 */
static void test_raid5_full_stripe_alignment(void)
{
	static const char *const ch[] = { "balance", "dusage=1" };
	uint64_t sizes[3] = { 1 * GiB, 1 * GiB, 1 * GiB };
	uint64_t devids[3] = { 1, 2, 3 }, a_phys[3] = { 1 * MiB, 1 * MiB, 1 * MiB };
	uint64_t b_phys[3] = { 65 * MiB, 65 * MiB, 65 * MiB };
	struct bx_plan_result res;
	struct fs f;
	size_t a;

	fs_init(&f, 3, sizes, NULL);
	raid1(&f, SYS, 8 * MiB, 16384, 1, 2, 129 * MiB);
	raid1(&f, META, 64 * MiB, 1 * MiB, 1, 2, 137 * MiB);
	a = f.in.nr_chunks;
	add_chunk(&f, DATA | BTRFS_BLOCK_GROUP_RAID5, 128 * MiB, 64 * MiB, 128 * MiB - 256 * 1024,
		  3, devids, a_phys);
	add_chunk(&f, DATA | BTRFS_BLOCK_GROUP_RAID5, 128 * MiB, 64 * MiB, 256 * 1024, 3, devids,
		  b_phys);
	f.in.dextents = calloc(3, sizeof(*f.in.dextents));
	f.in.dextents[0] = (struct bx_snap_dextent){ f.in.chunks[a].logical, 64 * 1024 };
	f.in.dextents[1] = (struct bx_snap_dextent){ f.in.chunks[a].logical + 320 * 1024,
						      128 * MiB - 320 * 1024 };
	f.in.dextents[2] = (struct bx_snap_dextent){ f.in.chunks[a + 1].logical, 256 * 1024 };
	f.in.nr_dextents = 3;
	f.in.chunks[a].nr_dextents = 2;
	f.in.chunks[a + 1].first_dextent = 2;
	f.in.chunks[a + 1].nr_dextents = 1;
	f.in.dextents_known = true;
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 1);
	CHECK_EQ_U64(res.steps[0].new_chunks, 1);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, BTRFS_BLOCK_GROUP_RAID5), 2);
	bx_plan_result_release(&res);
	/* raid56_full_stripe off: the extent fits A's free range from its start. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_RAID56_FULL_STRIPE, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(res.steps[0].new_chunks, 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, DATA, BTRFS_BLOCK_GROUP_RAID5), 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Converting metadata with the system block group above the metadata one
 * (it moves first): the system chunk check_system_chunk() makes brings a
 * metadata chunk of the new profile, and the metadata block group still
 * forces one of its own (seen on 6.1): two dup metadata chunks, one dup
 * system chunk. Below the metadata one, the system block group moves last
 * and the metadata block group's forced chunk brings the system chunk.
 */
static void test_convert_metadata_system_first(void)
{
	static const char *const ch[] = { "convert", "metadata=dup" };
	uint64_t sizes[2] = { 2 * GiB, 2 * GiB };
	struct bx_plan_result res;
	struct fs f;

	fs_init(&f, 2, sizes, NULL);
	raid1(&f, META, 256 * MiB, 2 * MiB, 1, 2, 1 * MiB);
	raid1(&f, SYS, 8 * MiB, 16384, 1, 2, 257 * MiB);
	raid1(&f, DATA, 1 * GiB, 100 * MiB, 1, 2, 265 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(res.steps[0].moved_chunks, 2);
	CHECK_EQ_U64(chunks_with(&res.after_in, META, DUP), 2);
	CHECK_EQ_U64(chunks_with(&res.after_in, SYS, DUP), 1);
	bx_plan_result_release(&res);
	/* convert_pairs_system_chunk off: no metadata chunk comes with the system one. */
	bx_kernel_set_trait(&f.in.kernel, BX_KT_CONVERT_PAIRS_SYSTEM_CHUNK, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, META, DUP), 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);

	fs_init(&f, 2, sizes, NULL);
	raid1(&f, SYS, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(&f, META, 256 * MiB, 2 * MiB, 1, 2, 9 * MiB);
	raid1(&f, DATA, 1 * GiB, 100 * MiB, 1, 2, 265 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, META, DUP), 1);
	CHECK_EQ_U64(chunks_with(&res.after_in, SYS, DUP), 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Converting metadata to raid1c3 beside a single system block group (aged
 * seed 2 of the stock series): the chunk tree's new blocks go into the
 * single one, so no system chunk comes with the metadata chunk (traced on
 * 6.18). The system block group moves last and must go read-only first,
 * counted against unallocated space per raid1c3 copy (the convert's
 * target): from 6.7 on, less a data chunk (128 MiB here), nothing is left
 * and the convert fails with ENOSPC (6.12, 6.18, 7.3); before, it moves
 * and its raid1c3 chunk is made then (6.1).
 */
static void single_system_layout(struct fs *f)
{
	uint64_t sizes[4] = { 256 * MiB, 384 * MiB, 320 * MiB, 320 * MiB };
	uint64_t one[1] = { 1 }, at[1] = { 1 * MiB };
	uint64_t all[4] = { 1, 2, 3, 4 }, data_at[4] = { 21 * MiB, 1 * MiB, 1 * MiB, 1 * MiB };

	fs_init(f, 4, sizes, NULL);
	f->in.global_reserve = 5 * MiB + 512 * 1024;
	f->in.have_global_reserve = true;
	add_chunk(f, SYS, 4 * MiB, 4 * MiB, 16384, 1, one, at);
	at[0] = 5 * MiB;
	add_chunk(f, META, 8 * MiB, 8 * MiB, 3 * MiB, 1, one, at);
	add_chunk(f, DATA | BTRFS_BLOCK_GROUP_RAID0, 640 * MiB, 160 * MiB, 281 * MiB, 4, all, data_at);
}

static void test_convert_metadata_single_system(void)
{
	static const char *const ch[] = { "convert", "metadata=raid1c3" };
	const uint64_t c3 = BTRFS_BLOCK_GROUP_RAID1C3;
	struct bx_plan_result res;
	struct fs f;

	single_system_layout(&f);
	bx_kernel_set_trait(&f.in.kernel, BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK, true);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(!res.possible);
	CHECK_EQ_U64(chunks_with(&res.after_in, SYS, c3), 0);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);

	single_system_layout(&f);
	bx_kernel_set_trait(&f.in.kernel, BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(res.possible);
	CHECK_EQ_U64(chunks_with(&res.after_in, META, c3), 1);
	CHECK_EQ_U64(chunks_with(&res.after_in, SYS, c3), 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);

	/* chunk_tree_in_single_system off: the system chunk comes with the metadata chunk. */
	single_system_layout(&f);
	bx_kernel_set_trait(&f.in.kernel, BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK, true);
	bx_kernel_set_trait(&f.in.kernel, BX_KT_CHUNK_TREE_IN_SINGLE_SYSTEM, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK_EQ_U64(chunks_with(&res.after_in, SYS, c3), 1);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

/*
 * Removing devid 1 of three 1 GiB devices: data chunk X (1,3) moves first
 * into the free space of Y (2,3), then the only metadata chunk (1,2). Its
 * read-only switch counts X's freed extents, the commit before its
 * relocation cannot use them yet: the kernel may abort the transaction
 * (seen both ways). With X of 4 MiB (too little to overcommit the global
 * reserve) the switch is refused: a plain ENOSPC.
 */
static void abort_layout(struct fs *f, uint64_t x_len)
{
	uint64_t sizes[3] = { 1 * GiB, 1 * GiB, 1 * GiB };
	uint64_t y_devs[2] = { 2, 3 }, y_phys[2] = { 265 * MiB, 9 * MiB + x_len };
	uint64_t x_devs[2] = { 1, 3 }, x_phys[2] = { 265 * MiB, 9 * MiB };
	uint64_t sys_devs[2] = { 2, 3 }, sys_phys[2] = { 1 * MiB, 1 * MiB };
	uint64_t f_devs[1] = { 3 }, f_phys[1] = { 9 * MiB + x_len + 759 * MiB };

	fs_init(f, 3, sizes, NULL);
	f->in.global_reserve = 5 * MiB + 512 * 1024;
	add_chunk(f, SYS | RAID1, 8 * MiB, 8 * MiB, 16384, 2, sys_devs, sys_phys);
	raid1(f, META, 256 * MiB, 1 * MiB, 1, 2, 9 * MiB);
	add_chunk(f, DATA | RAID1, x_len, x_len, x_len / 2, 2, x_devs, x_phys);
	add_chunk(f, DATA | RAID1, 759 * MiB, 759 * MiB, 256 * MiB, 2, y_devs, y_phys);
	add_dextents(f, 2, x_len / 2, x_len / 2, 1);
	add_dextents(f, 3, 64 * MiB, 64 * MiB, 4);
	/* Devid 3 full: a single data chunk (full too) takes the rest. */
	if (x_len < 256 * MiB) {
		add_chunk(f, DATA, 256 * MiB - x_len, 256 * MiB - x_len, 256 * MiB - x_len, 1,
			  f_devs, f_phys);
		add_dextents(f, 4, 256 * MiB - x_len, 256 * MiB - x_len, 1);
	}
}

static void test_metadata_move_aborts(void)
{
	static const char *const ch[] = { "remove", "1" };
	struct bx_plan_result res;
	struct fs f;

	abort_layout(&f, 256 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	/*
	 * Whether the commit needs a new block is not in the on-disk state:
	 * tight, and why. (Had it not aborted, devid 2 full, the metadata finds
	 * no room after the commit either: ENOSPC.)
	 */
	CHECK(res.steps[0].tight && res.steps[0].tight_abort);
	CHECK(res.nr_warnings >= 1 && strstr(res.warnings[0], "may abort the transaction"));
	bx_plan_result_release(&res);
	bx_kernel_set_trait(&f.in.kernel, BX_KT_COMMIT_MAY_ABORT, false);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(!res.steps[0].tight_abort);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);

	abort_layout(&f, 4 * MiB);
	CHECK(plan(&f.in, ch, 1, &res) == 0);
	CHECK(!res.possible);
	CHECK(!res.steps[0].tight_abort);
	CHECK(strstr(res.steps[0].reason, "ENOSPC") != NULL);
	bx_plan_result_release(&res);
	bx_snapshot_release(&f.in);
}

int main(void)
{
	test_add();
	test_remove_fills_free_space_first();
	test_remove_impossible();
	test_bad_plans();
	test_resize();
	test_convert();
	test_convert_guard_rails_follow_the_kernel();
	test_hint_guard();
	test_hint_then_relocate();
	test_replace();
	test_empty_data_chunk_kept();
	test_relocation_needs_contiguous_room();
	test_size_classes();
	test_convert_to_single_fills_the_old_profile();
	test_raid5_full_stripe_alignment();
	test_convert_metadata_system_first();
	test_convert_metadata_single_system();
	test_metadata_move_aborts();
	test_balance_usage();
	test_balance_metadata();
	test_resume();
	test_bad_balances();
	test_parse();
	bx_warnings_clear();
	return unit_summary();
}
