/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the maintain engine's pure parts: the choice
 * (maintain/choose.c, snapshots built by hand), the policy file
 * (maintain/policy.c) and the budget's wait (maintain/pace.c).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/error.h"
#include "maintain/maintain.h"
#include "maintain/pace.h"
#include "maintain/policy.h"
#include "tests/unit/unit.h"
#include "tests/unit/snapshot-fixture.h"

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP)
#define SYS (BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_DUP)

#define DATA_CHUNK (112 * MiB)

/* A DUP chunk on device 1, both copies at @phys and @phys + @stripe. */
static void dup(struct fs *f, uint64_t type, uint64_t stripe, uint64_t used, uint64_t phys)
{
	uint64_t devids[2] = { 1, 1 }, physs[2] = { phys, phys + stripe };

	add_chunk(f, type, stripe, stripe, used, 2, devids, physs);
}

static void single(struct fs *f, uint64_t length, uint64_t used, uint64_t phys)
{
	uint64_t devid = 1;

	add_chunk(f, DATA, length, length, used, 1, &devid, &phys);
}

/*
 * The trap: one device, metadata DUP with 8 MiB free, eight data chunks of
 * 112 MiB holding @used each, the device allocated to the last byte.
 */
static void trap(struct fs *f, const uint64_t used[8])
{
	uint64_t size = 113 * MiB + 8 * DATA_CHUNK;

	fs_init(f, 1, &size, NULL);
	f->in.hints_effective = false;
	dup(f, SYS, 8 * MiB, 16384, 1 * MiB);
	dup(f, META, 48 * MiB, 40 * MiB, 17 * MiB);
	for (int i = 0; i < 8; i++)
		single(f, DATA_CHUNK, used[i], 113 * MiB + (uint64_t)i * DATA_CHUNK);
}

static struct bx_maintain_inputs no_history = { .pace = -1, .copy_rate = 0 };

static void defaults(struct bx_maintain_policy *p)
{
	bx_maintain_policy_defaults(p);
}

/* Half-full data chunks: the fewest that make room for a metadata chunk, nothing more. */
static void test_trap_half_full(void)
{
	uint64_t used[8];
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	for (int i = 0; i < 8; i++)
		used[i] = 56 * MiB;
	trap(&f, used);
	defaults(&pol);
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.status == BX_MAINTAIN_PLANNED);
	CHECK(p.room_below && p.before.metadata_room < p.target);
	CHECK(p.after.metadata_room >= p.target);
	CHECK_EQ_U64(p.before.unallocated, 1 * MiB);	/* the first MiB, never allocated */
	/* One chunk frees room for a 56 MiB metadata chunk: too little. */
	CHECK(p.nr_actions == 2);
	for (size_t i = 0; i < p.nr_actions; i++)
		CHECK(p.actions[i].reason == BX_MAINTAIN_ROOM && p.actions[i].type == DATA);
	/*
	 * The first chunk's data fills the next one: that one is full now and
	 * not taken; the second action is the one after it.
	 */
	CHECK_EQ_U64(p.actions[0].logical, f.in.chunks[2].logical);
	CHECK_EQ_U64(p.actions[1].logical, f.in.chunks[4].logical);
	CHECK_EQ_U64(p.bytes_planned, p.nr_actions * 56 * MiB);
	CHECK(p.seconds_planned < 0 && p.actions[0].seconds < 0);
	CHECK(p.chunks_created == 0);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

/* An empty chunk goes first and moves no byte; its reason says so. */
static void test_empty_first(void)
{
	uint64_t used[8] = { 100 * MiB, 100 * MiB, 0, 100 * MiB, 2 * MiB, 100 * MiB, 100 * MiB,
			     100 * MiB };
	struct bx_maintain_inputs rate = { .pace = -1, .copy_rate = 10 * MiB };
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	trap(&f, used);
	defaults(&pol);
	CHECK(bx_maintain_choose(&f.in, &pol, &rate, &p) == 0);
	CHECK(p.nr_actions >= 1);
	CHECK_EQ_U64(p.actions[0].logical, f.in.chunks[4].logical);
	CHECK(p.actions[0].reason == BX_MAINTAIN_EMPTY && p.actions[0].used == 0);
	if (p.nr_actions > 1) {
		CHECK_EQ_U64(p.actions[1].logical, f.in.chunks[6].logical);
		CHECK(p.actions[1].reason == BX_MAINTAIN_EMPTY);
		CHECK(fabs(p.actions[1].seconds - 0.2) < 1e-9);
	}
	CHECK(p.status == BX_MAINTAIN_PLANNED);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

/* Full data chunks free nothing: cannot meet, with a device that would. */
static void test_full_cannot(void)
{
	uint64_t used[8];
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	for (int i = 0; i < 8; i++)
		used[i] = DATA_CHUNK;
	trap(&f, used);
	defaults(&pol);
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.status == BX_MAINTAIN_CANNOT && p.nr_actions == 0);
	CHECK(p.device_needed >= 2 * (p.target - p.after.metadata_room));
	CHECK(strstr(p.reason, "add a device of at least") != NULL);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

/* The trap's metadata chunk holding @used (chunk and space info). */
static void metadata_used(struct fs *f, uint64_t used)
{
	f->in.chunks[1].used = used;
	for (size_t i = 0; i < f->in.nr_spaces; i++)
		if (f->in.spaces[i].flags == META)
			f->in.spaces[i].used_bytes = used;
}

/*
 * Packed data chunks: the one chunk that could move would leave the data
 * chunks 24 MiB free, and the kernel's next data chunk would take the
 * 112 MiB it frees; it stays, and the reason says why. With metadata
 * past the kernel's threshold for a new chunk it moves.
 */
static void test_data_slack_kept(void)
{
	uint64_t used[8] = { 100 * MiB, 100 * MiB, 100 * MiB, 60 * MiB, 100 * MiB, 100 * MiB,
			     100 * MiB, 100 * MiB };
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	trap(&f, used);
	metadata_used(&f, 30 * MiB);	/* below the kernel's 80 %: no chunk yet */
	defaults(&pol);
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.status == BX_MAINTAIN_CANNOT && p.nr_actions == 0);
	CHECK(strstr(p.reason, "the next data chunk") != NULL);
	bx_maintain_plan_release(&p);
	/* Metadata at 83 %: the kernel gives it the space freed first. */
	metadata_used(&f, 40 * MiB);
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.nr_actions == 1 && p.actions[0].logical == f.in.chunks[5].logical);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

/* Room to spare: nothing to do; and no target at all: nothing either. */
static void test_young_and_no_target(void)
{
	uint64_t size = 4 * GiB;
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	fs_init(&f, 1, &size, NULL);
	f.in.hints_effective = false;
	dup(&f, SYS, 8 * MiB, 16384, 1 * MiB);
	dup(&f, META, 256 * MiB, 1 * MiB, 17 * MiB);
	single(&f, 1 * GiB, 10 * MiB, 529 * MiB);
	defaults(&pol);
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.status == BX_MAINTAIN_NOTHING && p.nr_actions == 0 && !p.room_below);
	CHECK(strncmp(p.target_why, "auto: ", 6) == 0 && p.target > 0);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);

	uint64_t used[8] = { 56 * MiB, 56 * MiB, 56 * MiB, 56 * MiB, 56 * MiB, 56 * MiB,
			     56 * MiB, 56 * MiB };

	trap(&f, used);
	pol.room_auto = false;
	pol.room_days = 0;
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.target == 0 && p.status == BX_MAINTAIN_NOTHING);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

/* The days at the pace raise the target above auto; days left follow the pace. */
static void test_days_at_pace(void)
{
	uint64_t used[8];
	struct bx_maintain_inputs paced = { .pace = 8 * MiB, .copy_rate = 0 };
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	for (int i = 0; i < 8; i++)
		used[i] = 28 * MiB;
	trap(&f, used);
	defaults(&pol);
	pol.room_days = 30;		/* 240 MiB */
	CHECK(bx_maintain_choose(&f.in, &pol, &paced, &p) == 0);
	CHECK_EQ_U64(p.target, 240 * MiB);
	CHECK(strncmp(p.target_why, "metadata-room-days", 18) == 0);
	CHECK(fabs(p.before.days_left - (double)p.before.metadata_room / (8 * MiB)) < 1e-9);
	CHECK(p.status == BX_MAINTAIN_PLANNED && p.after.metadata_room >= 240 * MiB);
	CHECK(p.after.days_left >= 30);
	bx_maintain_plan_release(&p);
	/* No growth: not consumed. */
	paced.pace = 0;
	CHECK(bx_maintain_choose(&f.in, &pol, &paced, &p) == 0);
	CHECK(isinf(p.before.days_left));
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

/*
 * A data chunk with a stripe on a metadata_only device: moved first, for
 * its placement, and none is misplaced afterwards; placement off leaves it.
 */
static void test_misplaced_first(void)
{
	uint64_t sizes[4] = { 4 * GiB, 4 * GiB, 4 * GiB, 4 * GiB };
	uint64_t hints[4] = { BX_HINT_METADATA_ONLY, BX_HINT_METADATA_ONLY, BX_HINT_DATA_ONLY,
			      BX_HINT_DATA_ONLY };
	struct bx_maintain_policy pol;
	struct bx_maintain_plan p;
	struct fs f;

	fs_init(&f, 4, sizes, hints);
	raid1(&f, BTRFS_BLOCK_GROUP_SYSTEM, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(&f, BTRFS_BLOCK_GROUP_METADATA, 256 * MiB, 64 * MiB, 1, 2, 9 * MiB);
	raid1(&f, DATA, 1 * GiB, 512 * MiB, 3, 4, 265 * MiB);
	raid1(&f, DATA, 1 * GiB, 256 * MiB, 1, 3, 1289 * MiB);
	defaults(&pol);
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.status == BX_MAINTAIN_PLANNED && p.placement_wanted && !p.room_below);
	CHECK(p.nr_actions == 1 && p.actions[0].reason == BX_MAINTAIN_MISPLACED);
	CHECK_EQ_U64(p.actions[0].logical, f.in.chunks[3].logical);
	CHECK(p.before.misplaced == 1 && p.after.misplaced == 0);
	bx_maintain_plan_release(&p);
	pol.placement = BX_MAINTAIN_PLACEMENT_OFF;
	CHECK(bx_maintain_choose(&f.in, &pol, &no_history, &p) == 0);
	CHECK(p.status == BX_MAINTAIN_NOTHING && p.nr_actions == 0 && p.before.misplaced == 1);
	bx_maintain_plan_release(&p);
	bx_snapshot_release(&f.in);
}

static void test_policy_file(void)
{
	struct bx_maintain_policy p;
	bool found;
	const char *text =
		"# comment\n[default]\nbudget = 20   # MiB/s\nplacement = forbidden-only\n"
		"[/srv]\nmetadata-room = 2G\nquiet-hours = 22:00-06:00\n"
		"[0a1b2c3d-0000-0000-0000-000000000000]\nbusy-pressure = 0\n";

	bx_maintain_policy_defaults(&p);
	CHECK(p.room_auto && p.room_days == 30 && p.budget == 100 && p.window_start == -1);
	CHECK(bx_maintain_policy_parse(text, "t", "/srv", NULL, &p, &found) == 0 && found);
	CHECK(p.budget == 20 && p.placement == BX_MAINTAIN_PLACEMENT_FORBIDDEN_ONLY);
	CHECK(!p.room_auto && p.room_bytes == 2 * GiB);
	CHECK(p.window_start == 22 * 60 && p.window_end == 6 * 60 && p.busy_pressure == 40);
	CHECK(bx_maintain_in_window(&p, 23 * 60) && bx_maintain_in_window(&p, 60));
	CHECK(!bx_maintain_in_window(&p, 12 * 60) && !bx_maintain_in_window(&p, 6 * 60));
	bx_maintain_policy_defaults(&p);
	CHECK(bx_maintain_policy_parse(text, "t", "/home", "0A1B2C3D-0000-0000-0000-000000000000",
				       &p, &found) == 0 && found);
	CHECK(p.busy_pressure == 0 && p.room_auto && p.window_start == -1);
	bx_maintain_policy_defaults(&p);
	CHECK(bx_maintain_policy_parse(text, "t", "/home", NULL, &p, &found) == 0 && !found);
	CHECK(p.budget == 20);

	static const char *const bad[][2] = {
		{ "[default]\nfoo = 1\n", "t:2: unknown key 'foo'" },
		{ "x\n", "t:1: 'x' is not 'key = value'" },
		{ "[]\n", "t:1: '[]' is not a section" },
		{ "[a] b\n", "is not a section" },
		{ "[default]\nmetadata-room = 0\n", "metadata-room: '0'" },
		{ "[default]\nbudget = 1e400\n", "budget: '1e400'" },
		{ "[default]\nmetadata-room-days = nan\n", "metadata-room-days: 'nan'" },
		{ "[default]\nquiet-hours = 6:0-7:00\n", "quiet-hours:" },
		{ "[elsewhere]\nbudget = -1\n", "budget: '-1'" },
		{ "[default]\nbusy-device = 0\n", "busy-device: '0'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bx_maintain_policy_defaults(&p);
		CHECK(bx_maintain_policy_parse(bad[i][0], "t", "/srv", NULL, &p, &found) == -EINVAL);
		CHECK(strstr(bx_error_message(-EINVAL), bad[i][1]) != NULL);
		bx_error_clear();
	}
}

static void test_window_and_budget(void)
{
	int s, e;

	CHECK(bx_maintain_parse_window("01:30-05:00", &s, &e) == 0 && s == 90 && e == 300);
	CHECK(bx_maintain_parse_window("23:59-00:00", &s, &e) == 0);
	CHECK(bx_maintain_parse_window("24:00-01:00", &s, &e) == -EINVAL);
	CHECK(bx_maintain_parse_window("01:00-01:00", &s, &e) == -EINVAL);
	CHECK(bx_maintain_parse_window("01:00-02:60", &s, &e) == -EINVAL);
	CHECK(bx_maintain_parse_window("01:00-02:00x", &s, &e) == -EINVAL);
	bx_error_clear();
	/* 100 MiB at 50 MiB/s is due after 2 s. */
	CHECK(fabs(bx_pace_budget_wait(50, 100 * MiB, 0.5) - 1.5) < 1e-9);
	CHECK(bx_pace_budget_wait(50, 100 * MiB, 3) == 0);
	CHECK(bx_pace_budget_wait(0, 100 * MiB, 0) == 0);
}

int main(void)
{
	test_trap_half_full();
	test_empty_first();
	test_full_cannot();
	test_data_slack_kept();
	test_young_and_no_target();
	test_days_at_pace();
	test_misplaced_first();
	test_policy_file();
	test_window_and_budget();
	return unit_summary();
}
