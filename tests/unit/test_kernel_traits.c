/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the register of kernel behaviour (model/kernel/register.c)
 * and of the traits whose test is here: each on the same hand-built
 * filesystem with the trait on and off, and the difference it makes. The
 * other traits are pinned where their model is tested (the register names
 * the test: test_allocator.c, test_plan.c, test_usage.c).
 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "model/kernel/kernel.h"
#include "model/kernel/relocation.h"
#include "model/kernel/space-info.h"
#include "model/kernel/state.h"
#include "plan/plan.h"
#include "tests/unit/unit.h"
#include "tests/unit/snapshot-fixture.h"

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM
#define DUP BTRFS_BLOCK_GROUP_DUP

static int plan(const struct bx_snapshot *in, const char *op, const char *value,
		struct bx_plan_result *res)
{
	struct bx_plan_change c;

	if (bx_plan_parse_change(op, value, &c))
		return -100;
	return bx_plan_compute(in, &c, 1, res);
}

static void set(struct fs *f, enum bx_kernel_trait t, bool on)
{
	bx_kernel_set_trait(&f->in.kernel, t, on);
}

/* ---- the register ---- */

/* Every trait is described whole; versions are where the register says. */
static void test_register_entries(void)
{
	for (int t = 0; t < BX_KT_COUNT; t++) {
		const struct bx_kernel_trait_info *i = bx_kernel_trait_info(t);

		CHECK(i && i->name && i->function && i->model && i->summary && i->evidence &&
		      i->test);
		/* a version, or the sentence that says why none is known */
		CHECK(i && (i->first ? !i->unversioned : i->unversioned && !i->last));
		CHECK(i && (!i->last || i->last >= i->first));
		for (int u = 0; i && u < t; u++)
			CHECK(strcmp(i->name, bx_kernel_trait_info(u)->name));
	}
	CHECK(bx_kernel_trait_info(BX_KT_COUNT) == NULL);
}

/* A release picks the traits of its version; unknown is the newest. */
static void test_versions(void)
{
	struct bx_kernel k;
	unsigned int v;
	char text[16];

	bx_kernel_init(&k, "6.1.0-37-cloud-amd64", false);
	CHECK(k.version == BX_KV(6, 1) && !k.chosen);
	CHECK(bx_kernel_has(&k, BX_KT_SORT_TIES_PRE_6_9) && !bx_kernel_has(&k, BX_KT_SIZE_CLASSES));
	CHECK(bx_kernel_has(&k, BX_KT_RO_NEEDS_OVERCOMMIT));
	bx_kernel_init(&k, "6.18.0", false);
	CHECK(!bx_kernel_has(&k, BX_KT_SORT_TIES_PRE_6_9) && bx_kernel_has(&k, BX_KT_SIZE_CLASSES));
	CHECK(bx_kernel_has(&k, BX_KT_CLEANS_NEW_BLOCK_GROUPS) &&
	      bx_kernel_has(&k, BX_KT_REPLACE_KEEPS_CHUNK_TREE));
	bx_kernel_version_text(&k, text, sizeof(text));
	CHECK(!strcmp(text, "6.18"));
	/* the edges of a range */
	bx_kernel_init(&k, "6.8", false);
	CHECK(bx_kernel_has(&k, BX_KT_SORT_TIES_PRE_6_9) &&
	      bx_kernel_has(&k, BX_KT_CLEANS_NEW_BLOCK_GROUPS));
	bx_kernel_init(&k, "6.9", false);
	CHECK(!bx_kernel_has(&k, BX_KT_SORT_TIES_PRE_6_9));
	/* unknown: the newest behaviour, every trait without a last version */
	bx_kernel_init(&k, "nonsense", false);
	CHECK(k.version == 0 && !bx_kernel_has(&k, BX_KT_SORT_TIES_PRE_6_9) &&
	      bx_kernel_has(&k, BX_KT_SIZE_CLASSES));
	bx_kernel_version_text(&k, text, sizeof(text));
	CHECK(!strcmp(text, "unknown"));
	CHECK(bx_kernel_parse_version("7.3", &v) == 0 && v == BX_KV(7, 3));
	CHECK(bx_kernel_parse_version("6.18-rc1", &v) == 0 && v == BX_KV(6, 18));
	CHECK(bx_kernel_parse_version("6", &v) == -EINVAL);
	CHECK(bx_kernel_parse_version("6.x", &v) == -EINVAL);
	CHECK(bx_kernel_parse_version("6.1abc", &v) == -EINVAL);
}

/* --kernel takes the versions the register knows, 6.1 .. 7.3, and says why not. */
static void test_choose(void)
{
	struct bx_kernel k;

	CHECK(bx_kernel_choose("6.1", "--kernel", &k) == 0 && k.chosen && k.version == BX_KV(6, 1));
	CHECK(bx_kernel_choose("7.3", "--kernel", &k) == 0 && !strcmp(k.release, "7.3"));
	CHECK(bx_kernel_choose("5.15", "--kernel", &k) == -EINVAL);
	CHECK(strstr(bx_error_message(-EINVAL), "not a kernel the model knows (6.1 to 7.3)"));
	CHECK(bx_kernel_choose("7.4", "--kernel", &k) == -EINVAL);
	CHECK(bx_kernel_choose("6.19", "--kernel", &k) == 0);
	CHECK(bx_kernel_choose("6.20", "--kernel", &k) == -EINVAL);	/* 7.0 came next */
	CHECK(bx_kernel_choose("latest", "BTRFSX_KERNEL", &k) == -EINVAL);
	CHECK(strstr(bx_error_message(-EINVAL), "BTRFSX_KERNEL: 'latest' is not a kernel version"));
	bx_error_clear();
}

/* A kernel built by hand has what every kernel has, nothing keyed to a release. */
static void test_common_kernel(void)
{
	struct bx_kernel k;

	bx_kernel_common(&k);
	for (int t = 0; t < BX_KT_COUNT; t++)
		CHECK(bx_kernel_has(&k, t) == !bx_kernel_trait_info(t)->first);
	CHECK(bx_kernel_alloc_flags(&k) == 0);
	bx_kernel_set_trait(&k, BX_KT_SORT_TIES_PRE_6_9, true);
	bx_kernel_set_trait(&k, BX_KT_HINT_DATA_ONLY_LAST, true);
	CHECK(bx_kernel_alloc_flags(&k) == (BX_ALLOC_SORT_PRE_6_9 | BX_ALLOC_DATA_ONLY_LAST));
	bx_kernel_set_trait(&k, BX_KT_SORT_TIES_PRE_6_9, false);
	CHECK(bx_kernel_alloc_flags(&k) == BX_ALLOC_DATA_ONLY_LAST);
}

/* ---- space reservations ---- */

/* 4 GiB unallocated, raid1, 20 GiB writable: 2 GiB, or 1 GiB (a data chunk's room) less. */
static void test_overcommit_keeps_data_chunk(void)
{
	uint64_t sizes[1] = { 1 * GiB };
	struct fs f;

	fs_init(&f, 1, sizes, NULL);
	CHECK_EQ_U64(bx_kernel_overcommit_room(&f.in, 4 * GiB, 20 * GiB, 2), 2 * GiB);
	set(&f, BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK, true);
	CHECK_EQ_U64(bx_kernel_overcommit_room(&f.in, 4 * GiB, 20 * GiB, 2), 1 * GiB);
	/* A small filesystem: 10 % of it; nothing left below that. */
	CHECK_EQ_U64(bx_kernel_overcommit_room(&f.in, 400 * MiB, 2 * GiB, 1),
		     400 * MiB - 2 * GiB / 10);
	CHECK_EQ_U64(bx_kernel_overcommit_room(&f.in, 100 * MiB, 2 * GiB, 1), 0);
	bx_snapshot_release(&f.in);
}

/*
 * One 1 GiB device with no room left, dup metadata of 8 MiB holding 5 MiB
 * with the global reserve: a file's creation reserves 1.25 MiB of items
 * with 16 KiB nodes, and as much again for its delayed refs (7.5 MiB fits
 * the 8), or twice as much (8.75 MiB does not: the flusher forces a chunk).
 */
static void test_delayed_refs_reserved_twice(void)
{
	uint64_t sizes[1] = { 1 * GiB }, devid = 1, at = 1 * MiB;
	struct bx_snap_model m;
	struct bx_alloc_sim *sim;
	struct fs f;

	fs_init(&f, 1, sizes, NULL);
	add_chunk(&f, DATA, 1023 * MiB, 1023 * MiB, 0, 1, &devid, &at);
	f.in.have_global_reserve = true;
	f.in.global_reserve = 2 * MiB;
	CHECK(bx_snap_model_init(&f.in, 0, &m) == 0);
	CHECK(bx_alloc_sim_new(m.devs, m.nr, &m.params, &sim) == 0);
	CHECK(!bx_kernel_metadata_must_grow(&f.in, false, 3 * MiB, 8 * MiB, META | DUP, &m, sim));
	set(&f, BX_KT_DELAYED_REFS_RESERVED_TWICE, true);
	CHECK(bx_kernel_metadata_must_grow(&f.in, false, 3 * MiB, 8 * MiB, META | DUP, &m, sim));
	/* metadata_fill_grows off: the kernel would not force one at all */
	set(&f, BX_KT_METADATA_FILL_GROWS, false);
	CHECK(!bx_kernel_metadata_must_grow(&f.in, false, 3 * MiB, 8 * MiB, META | DUP, &m, sim));
	bx_alloc_sim_free(sim);
	bx_snap_model_release(&m);
	bx_snapshot_release(&f.in);
}

/* Devices with 64 MiB unallocated: raid1 metadata has 16 MiB per copy, halved: tight. */
static void test_tight_headroom(void)
{
	uint64_t sizes[2] = { 2 * GiB + 32 * MiB, 2 * GiB + 32 * MiB };
	struct bx_kstate s;
	struct fs f;

	fs_init(&f, 2, sizes, NULL);
	raid1(&f, META, 256 * MiB, 64 * MiB, 1, 2, 1 * MiB);
	raid1(&f, DATA, 1 * GiB, 1 * GiB, 1, 2, 257 * MiB);
	raid1(&f, DATA, 767 * MiB, 767 * MiB, 1, 2, 1281 * MiB);
	CHECK(bx_ks_init(&s, &f.in) == 0);
	CHECK(bx_ks_little_headroom(&s, META | RAID1));
	bx_ks_release(&s);
	set(&f, BX_KT_TIGHT_HEADROOM, false);
	CHECK(bx_ks_init(&s, &f.in) == 0);
	CHECK(!bx_ks_little_headroom(&s, META | RAID1));
	bx_ks_release(&s);
	bx_snapshot_release(&f.in);
}

/* ---- block groups ---- */

/* A new data chunk nothing was put in: the cleaner takes it, or it stays until a mount. */
static void test_cleans_new_block_groups(void)
{
	for (int on = 0; on < 2; on++) {
		struct bx_kstate s;
		struct fs f;
		long n;

		three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
		set(&f, BX_KT_CLEANS_NEW_BLOCK_GROUPS, on);
		CHECK(bx_ks_init(&s, &f.in) == 0);
		n = bx_ks_alloc_chunk(&s, DATA | RAID1, NULL);
		CHECK(n >= 0);
		CHECK(bx_ks_delete_unused(&s) == 0);
		CHECK(n >= 0 && s.chunks[n].gone == (bool)on);
		bx_ks_release(&s);
		bx_snapshot_release(&f.in);
	}
}

/*
 * Two metadata block groups, the first empty: the other holds 200 MiB in
 * use and the 100 MiB global reserve needs room too, so the cleaner keeps
 * the empty one (needed soon); without the rule it goes.
 */
static void test_cleaner_keeps_needed(void)
{
	for (int on = 0; on < 2; on++) {
		uint64_t sizes[2] = { 2 * GiB, 2 * GiB };
		struct bx_kstate s;
		struct fs f;

		fs_init(&f, 2, sizes, NULL);
		raid1(&f, META, 256 * MiB, 0, 1, 2, 1 * MiB);
		raid1(&f, META, 256 * MiB, 200 * MiB, 1, 2, 257 * MiB);
		f.in.global_reserve = 100 * MiB;
		set(&f, BX_KT_CLEANER_KEEPS_NEEDED, on);
		CHECK(bx_ks_init(&s, &f.in) == 0);
		CHECK(s.chunks[0].unused_listed);
		CHECK(bx_ks_delete_unused(&s) == 0);
		CHECK(s.chunks[0].gone == !on);
		bx_ks_release(&s);
		bx_snapshot_release(&f.in);
	}
}

/*
 * A metadata block group with 192 MiB free, and a 16 MiB global reserve,
 * on devices with no room: its free bytes cannot be overcommitted, so the
 * read-only switch is refused.
 */
static void test_ro_needs_overcommit(void)
{
	uint64_t sizes[2] = { 1281 * MiB, 1281 * MiB };
	struct bx_kstate s;
	struct fs f;

	fs_init(&f, 2, sizes, NULL);
	raid1(&f, META, 256 * MiB, 64 * MiB, 1, 2, 1 * MiB);
	raid1(&f, DATA, 1 * GiB, 1 * GiB, 1, 2, 257 * MiB);
	f.in.global_reserve = 16 * MiB;
	CHECK(bx_ks_init(&s, &f.in) == 0);
	CHECK(bx_ks_ro_refused(&s, 0, META | RAID1));
	CHECK(!bx_ks_ro_refused(&s, 1, DATA | RAID1));	/* data goes read-only as it is */
	bx_ks_release(&s);
	set(&f, BX_KT_RO_NEEDS_OVERCOMMIT, false);
	CHECK(bx_ks_init(&s, &f.in) == 0);
	CHECK(!bx_ks_ro_refused(&s, 0, META | RAID1));
	bx_ks_release(&s);
	bx_snapshot_release(&f.in);
}

/* A freed chunk's device extents: holes at the commit, or at once. */
static void test_dev_extents_free_at_commit(void)
{
	for (int on = 0; on < 2; on++) {
		struct bx_kstate s;
		uint64_t before;
		struct fs f;

		three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
		set(&f, BX_KT_DEV_EXTENTS_FREE_AT_COMMIT, on);
		CHECK(bx_ks_init(&s, &f.in) == 0);
		before = bx_ks_unallocated(&s, 2);
		CHECK(bx_ks_free_chunk(&s, 2) == 0);	/* data on devids 2 and 3 */
		CHECK_EQ_U64(bx_ks_unallocated(&s, 2), on ? before : before + 1 * GiB);
		CHECK(bx_ks_commit(&s) == 0);
		CHECK_EQ_U64(bx_ks_unallocated(&s, 2), before + 1 * GiB);
		bx_ks_release(&s);
		bx_snapshot_release(&f.in);
	}
}

/* ---- relocation ---- */

/*
 * Converting two half-full raid1 data chunks to single: each forces a
 * single chunk before its read-only switch (two new chunks); without the
 * rule the second fits the first new chunk's free space.
 */
static void test_ro_new_profile_chunk(void)
{
	for (int on = 0; on < 2; on++) {
		struct bx_plan_result res;
		struct fs f;

		three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
		set(&f, BX_KT_RO_NEW_PROFILE_CHUNK, on);
		CHECK(plan(&f.in, "convert", "data=single", &res) == 0);
		CHECK(res.possible);
		CHECK_EQ_U64(res.steps[0].new_chunks, on ? 2 : 1);
		bx_plan_result_release(&res);
		bx_snapshot_release(&f.in);
	}
}

/*
 * Removing devid 1: data X (900 MiB used, the highest extent there) finds
 * no room at first (no other raid1 data chunk, devid 3 full); metadata Y
 * moves into the free space of metadata M, and its 1 GiB extent on devid 3
 * is free from the next commit on, where the second try of X finds room.
 * Without the second try the remove fails.
 */
static void test_shrink_second_try(void)
{
	for (int on = 0; on < 2; on++) {
		uint64_t sizes[3] = { 2049 * MiB, 3 * GiB, 2313 * MiB };
		uint64_t y_devs[2] = { 1, 3 }, y_at[2] = { 1 * MiB, 265 * MiB };
		uint64_t x_devs[2] = { 1, 2 }, x_at[2] = { 1025 * MiB, 265 * MiB };
		uint64_t filler = 3, filler_at = 1289 * MiB;
		struct bx_plan_result res;
		struct fs f;

		fs_init(&f, 3, sizes, NULL);
		raid1(&f, SYS, 8 * MiB, 16384, 2, 3, 1 * MiB);
		raid1(&f, META, 256 * MiB, 1 * MiB, 2, 3, 9 * MiB);
		add_chunk(&f, META | RAID1, 1 * GiB, 1 * GiB, 16 * MiB, 2, y_devs, y_at);
		add_chunk(&f, DATA | RAID1, 1 * GiB, 1 * GiB, 900 * MiB, 2, x_devs, x_at);
		add_chunk(&f, DATA, 1 * GiB, 1 * GiB, 1 * GiB, 1, &filler, &filler_at);
		set(&f, BX_KT_SHRINK_SECOND_TRY, on);
		CHECK(plan(&f.in, "remove", "1", &res) == 0);
		CHECK(res.possible == (bool)on);
		CHECK(res.steps[0].tight_retry == (bool)on);
		bx_plan_result_release(&res);
		bx_snapshot_release(&f.in);
	}
}

/* ---- a replace ---- */

/*
 * Replacing devid 2, whose only system block group has no other with room:
 * the kernel makes a system chunk. With the trait the chunk tree stays and
 * the new chunk, never used, goes (with cleans_new_block_groups); without,
 * the tree moves into the new one and the old one goes at rest.
 */
static void test_replace_keeps_chunk_tree(void)
{
	for (int on = 0; on < 2; on++) {
		struct bx_plan_result res;
		uint64_t sys;
		bool old_there = false;
		struct fs f;

		three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
		sys = f.in.chunks[0].logical;
		set(&f, BX_KT_REPLACE_KEEPS_CHUNK_TREE, on);
		set(&f, BX_KT_CLEANS_NEW_BLOCK_GROUPS, on);
		CHECK(plan(&f.in, "replace", "2=8G", &res) == 0);
		CHECK(res.possible);
		for (size_t i = 0; i < res.after_in.nr_chunks; i++)
			old_there |= res.after_in.chunks[i].logical == sys;
		CHECK(old_there == (bool)on);
		bx_plan_result_release(&res);
		bx_snapshot_release(&f.in);
	}
}

int main(void)
{
	test_register_entries();
	test_versions();
	test_choose();
	test_common_kernel();
	test_overcommit_keeps_data_chunk();
	test_delayed_refs_reserved_twice();
	test_tight_headroom();
	test_cleans_new_block_groups();
	test_cleaner_keeps_needed();
	test_ro_needs_overcommit();
	test_dev_extents_free_at_commit();
	test_ro_new_profile_chunk();
	test_shrink_second_try();
	test_replace_keeps_chunk_tree();
	bx_warnings_clear();
	return unit_summary();
}
