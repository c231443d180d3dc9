/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the usage computation (fsops/usage.c) on inputs built by
 * hand. Every expected value is worked out in the comment above its check.
 * MiB = 2^20, GiB = 2^30. A device's "hole" is its free range above the
 * reserved first MiB.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/usage.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "tests/unit/unit.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM
#define RAID0 BTRFS_BLOCK_GROUP_RAID0
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define DUP BTRFS_BLOCK_GROUP_DUP
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3

/* A hand-built input: up to 8 devices, 16 extents each, 16 chunks. */
struct fixture {
	struct bx_snapshot in;
	struct bx_snap_dev devs[8];
	struct bx_snap_extent ext[8][16];
	struct bx_snap_space spaces[8];
	struct bx_snap_chunk chunks[16];
	struct bx_snap_stripe stripes[64];
};

static void fx_init(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	bx_kernel_common(&fx->in.kernel);
	fx->in.devs = fx->devs;
	fx->in.spaces = fx->spaces;
	fx->in.chunks = fx->chunks;
	fx->in.stripes = fx->stripes;
	fx->in.nodesize = 16384;
	fx->in.sectorsize = 4096;
	fx->in.hints_effective = true;
}

static void fx_dev(struct fixture *fx, uint64_t devid, uint64_t size, uint64_t hint)
{
	struct bx_snap_dev *d = &fx->devs[fx->in.nr_devs];

	d->devid = devid;
	snprintf(d->path, sizeof(d->path), "/dev/fake%llu", (unsigned long long)devid);
	d->total_bytes = size;
	d->device_size = size;
	d->hint = hint;
	d->writable = true;
	d->extents = fx->ext[fx->in.nr_devs];
	fx->in.nr_devs++;
}

static void fx_space(struct fixture *fx, uint64_t flags, uint64_t total, uint64_t used)
{
	fx->spaces[fx->in.nr_spaces++] = (struct bx_snap_space){ flags, total, used };
}

/* A chunk at @logical with one stripe per (devid, physical) pair, extents added. */
static void fx_chunk(struct fixture *fx, uint64_t logical, uint64_t type, uint64_t length,
		     uint64_t stripe_size, int nr, const uint64_t *pairs)
{
	struct bx_snap_chunk *c = &fx->chunks[fx->in.nr_chunks++];

	c->logical = logical;
	c->length = length;
	c->type = type;
	c->num_stripes = (uint32_t)nr;
	c->sub_stripes = 1;
	c->first_stripe = fx->in.nr_stripes;
	for (int i = 0; i < nr; i++) {
		uint64_t devid = pairs[2 * i], phys = pairs[2 * i + 1];

		fx->stripes[fx->in.nr_stripes++] = (struct bx_snap_stripe){ devid, phys };
		for (size_t d = 0; d < fx->in.nr_devs; d++) {
			if (fx->devs[d].devid != devid)
				continue;
			fx->devs[d].extents[fx->devs[d].nr_extents++] =
				(struct bx_snap_extent){ phys, stripe_size, logical };
			fx->devs[d].bytes_used += stripe_size;
		}
	}
}

static const struct bx_usage_class *find_class(const struct bx_usage_report *rep, uint64_t hint)
{
	for (size_t i = 0; i < rep->nr_classes; i++)
		if (rep->classes[i].hint == hint)
			return &rep->classes[i];
	return NULL;
}

/*
 * Two 10 GiB devices, RAID1 everything. On each: system [1, 9) MiB,
 * metadata [9, 265) MiB, data [265, 1289) MiB; hole [1289, 10240) = 8951 MiB.
 * Data 1 GiB with 256 MiB used, metadata 256 MiB with 64 MiB used, system
 * 8 MiB with 16 KiB used, global reserve 16 MiB.
 */
static void raid1_fixture(struct fixture *fx, uint64_t meta_used)
{
	fx_init(fx);
	fx_dev(fx, 1, 10 * GiB, BX_HINT_DATA_PREFERRED);
	fx_dev(fx, 2, 10 * GiB, BX_HINT_DATA_PREFERRED);
	fx_chunk(fx, 22020096, SYS | RAID1, 8 * MiB, 8 * MiB, 2,
		 (uint64_t[]){ 1, 1 * MiB, 2, 1 * MiB });
	fx_chunk(fx, 30408704, META | RAID1, 256 * MiB, 256 * MiB, 2,
		 (uint64_t[]){ 1, 9 * MiB, 2, 9 * MiB });
	fx_chunk(fx, 298844160, DATA | RAID1, 1 * GiB, 1 * GiB, 2,
		 (uint64_t[]){ 1, 265 * MiB, 2, 265 * MiB });
	fx_space(fx, DATA | RAID1, 1 * GiB, 256 * MiB);
	fx_space(fx, META | RAID1, 256 * MiB, meta_used);
	fx_space(fx, SYS | RAID1, 8 * MiB, 16 * 1024);
	fx_space(fx, BX_SPACE_INFO_GLOBAL_RSV, 16 * MiB, 0);
	fx->in.have_global_reserve = true;
	fx->in.global_reserve = 16 * MiB;
	fx->in.have_statfs = true;
	fx->in.statfs_free = 12345;
}

static void test_overall_raid1(void)
{
	struct fixture fx;
	struct bx_usage_report rep;

	raid1_fixture(&fx, 64 * MiB);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	/* raw: data 2 GiB (used 512 MiB), metadata 512 MiB (128 MiB), system 16 MiB (32 KiB) */
	CHECK_EQ_U64(rep.overall.device_size, 20 * GiB);
	CHECK_EQ_U64(rep.overall.device_allocated, 2048 * MiB + 512 * MiB + 16 * MiB);
	/* 20480 - 2576 MiB */
	CHECK_EQ_U64((uint64_t)rep.overall.device_unallocated, 17904 * MiB);
	CHECK_EQ_U64(rep.overall.used, 512 * MiB + 128 * MiB + 32 * 1024);
	CHECK(rep.overall.data_ratio == 2.0 && rep.overall.metadata_ratio == 2.0);
	/* (2048 - 512) / 2 = 768 MiB in chunks, + 17904 / 2 = 8952 MiB unallocated */
	CHECK_EQ_U64(rep.overall.free_estimated, 9720 * MiB);
	/* the highest ratio in use is 2 as well */
	CHECK_EQ_U64(rep.overall.free_min, 9720 * MiB);
	CHECK(rep.overall.multiple_profiles[0] == '\0');
	CHECK_EQ_U64(rep.overall.device_missing, 0);
	bx_usage_report_release(&rep);
}

static void test_model_raid1(void)
{
	struct fixture fx;
	struct bx_usage_report rep;
	const struct bx_usage_class *cl;

	raid1_fixture(&fx, 64 * MiB);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_type, DATA | RAID1);
	CHECK_EQ_U64(rep.metadata_type, META | RAID1);
	/*
	 * Data: 20 GiB filesystem, so 1 GiB stripes (10% is 2 GiB); both holes are
	 * 8951 MiB = 8 x 1024 + 759: eight 1 GiB chunks and one of 759 MiB, all
	 * mirrored: 8951 MiB logical. Plus 768 MiB free in the data chunk. (progs
	 * says 9720 MiB: it counts the reserved first MiB of each device too.)
	 */
	CHECK_EQ_U64(rep.data_free_in_chunks, 768 * MiB);
	CHECK_EQ_U64(rep.data_new_chunks, 8951 * MiB);
	CHECK_EQ_U64(rep.free_estimated, 9719 * MiB);
	CHECK_EQ_U64(rep.free_strict, 9719 * MiB);
	CHECK(rep.have_statfs && rep.free_statfs == 12345);
	/*
	 * Metadata: 256 MiB stripes (under 50 GiB): 8951 = 34 x 256 + 247, all of
	 * it mirrored: 8951 MiB, plus 192 MiB free in the metadata chunk. After a
	 * data fill the holes are gone: 192 MiB.
	 */
	CHECK_EQ_U64(rep.metadata_free_in_chunks, 192 * MiB);
	CHECK_EQ_U64(rep.metadata_room, 9143 * MiB);
	CHECK_EQ_U64(rep.metadata_room_after_data, 192 * MiB);
	CHECK_EQ_U64(rep.metadata_needed, 32 * MiB);
	CHECK_EQ_U64(rep.warnings, 0);
	/* One class: both devices, holes 2 x 8951 MiB, all of it usable by either. */
	CHECK_EQ_U64(rep.nr_classes, 1);
	cl = find_class(&rep, BX_HINT_DATA_PREFERRED);
	CHECK(cl != NULL);
	if (cl) {
		CHECK_EQ_U64(cl->devices, 2);
		CHECK_EQ_U64(cl->size, 20 * GiB);
		CHECK_EQ_U64(cl->unallocated, 2 * 8951 * MiB);
		CHECK_EQ_U64(cl->data_allocatable, 2 * 8951 * MiB);
		CHECK_EQ_U64(cl->metadata_allocatable, 2 * 8951 * MiB);
	}
	/* Device rows: 10240 - 8 - 256 - 1024 = 8952 MiB (the first MiB included). */
	CHECK_EQ_U64(rep.nr_dev_rows, 2);
	CHECK_EQ_U64(rep.dev_rows[1].unallocated, 8952 * MiB);
	CHECK_EQ_U64(rep.dev_rows[1].data, 1 * GiB);
	CHECK_EQ_U64(rep.dev_rows[1].metadata, 256 * MiB);
	CHECK_EQ_U64(rep.dev_rows[1].system, 8 * MiB);
	bx_usage_report_release(&rep);
}

/* The devices full: the room is what the metadata chunk holds. */
static void full_raid1(struct fixture *fx, uint64_t meta_used)
{
	raid1_fixture(fx, meta_used);
	/* a data chunk over the rest of both devices: [1289, 10240) MiB */
	fx_chunk(fx, 1372585984, DATA | RAID1, 8951 * MiB, 8951 * MiB, 2,
		 (uint64_t[]){ 1, 1289 * MiB, 2, 1289 * MiB });
	fx->spaces[0].total_bytes += 8951 * MiB;
}

static void test_metadata_warning(void)
{
	struct fixture fx;
	struct bx_usage_report rep;
	size_t nr;

	/* used 170 MiB: room 256 - 170 = 86 MiB, 50% growth needs 85 MiB: fine */
	full_raid1(&fx, 170 * MiB);
	bx_warnings_clear();
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_new_chunks, 0);
	CHECK_EQ_U64(rep.metadata_room, 86 * MiB);
	CHECK_EQ_U64(rep.metadata_needed, 85 * MiB);
	CHECK_EQ_U64(rep.warnings, 0);
	CHECK_EQ_U64(bx_warnings_count(), 0);
	bx_usage_report_release(&rep);

	/* used 172 MiB: room 84 MiB < 86 MiB */
	full_raid1(&fx, 172 * MiB);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.metadata_room, 84 * MiB);
	CHECK_EQ_U64(rep.metadata_needed, 86 * MiB);
	CHECK_EQ_U64(rep.warnings, BX_USAGE_W_METADATA_LOW);
	nr = bx_warnings_count();
	CHECK_EQ_U64(nr, 1);
	if (nr)
		CHECK(strcmp(bx_warning(0), "metadata room 84.00MiB is less than the 86.00MiB that "
			     "50% growth of the metadata (172.00MiB used) needs") == 0);
	bx_warnings_clear();
	bx_usage_report_release(&rep);
}

/*
 * Three devices, single data, DUP metadata:
 *   devid 1, 2 GiB, metadata_only: metadata DUP stripes [1, 257) and
 *            [257, 513) MiB; hole [513, 2048) = 1535 MiB
 *   devid 2, 4 GiB, data_only: data [1, 9) MiB; hole [9, 4096) = 4087 MiB
 *   devid 3, 4 GiB, metadata_preferred: hole [1, 4096) = 4095 MiB
 * Data 8 MiB, nothing used; metadata 256 MiB, 1 MiB used.
 */
static void hinted_fixture(struct fixture *fx)
{
	fx_init(fx);
	fx_dev(fx, 1, 2 * GiB, BX_HINT_METADATA_ONLY);
	fx_dev(fx, 2, 4 * GiB, BX_HINT_DATA_ONLY);
	fx_dev(fx, 3, 4 * GiB, BX_HINT_METADATA_PREFERRED);
	fx_chunk(fx, 30408704, META | DUP, 256 * MiB, 256 * MiB, 2,
		 (uint64_t[]){ 1, 1 * MiB, 1, 257 * MiB });
	fx_chunk(fx, 298844160, DATA, 8 * MiB, 8 * MiB, 1, (uint64_t[]){ 2, 1 * MiB });
	fx_space(fx, DATA, 8 * MiB, 0);
	fx_space(fx, META | DUP, 256 * MiB, 1 * MiB);
}

static void test_hints(void)
{
	struct fixture fx;
	struct bx_usage_report rep;
	const struct bx_usage_class *c1, *c2, *c3;
	size_t nr;

	hinted_fixture(&fx);
	bx_warnings_clear();
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK(rep.hints_honoured);
	CHECK_EQ_U64(rep.data_type, DATA);
	CHECK_EQ_U64(rep.metadata_type, META | DUP);
	/* data: devid 2 (data_only, tier 1), then devid 3 (metadata_preferred, tier 3) */
	CHECK_EQ_U64(rep.free_estimated, 8 * MiB + 4087 * MiB + 4095 * MiB);
	/* strict: devid 3 becomes metadata_only */
	CHECK_EQ_U64(rep.free_strict, 8 * MiB + 4087 * MiB);
	/*
	 * metadata: DUP halves each hole it gets, devids 1 and 3 (devid 2 is
	 * data_only): 1535 / 2 + 4095 / 2 = 2815 MiB, plus 255 MiB free in the
	 * chunk. After a data fill only devid 1 is left: 767.5 + 255 MiB.
	 */
	CHECK_EQ_U64(rep.metadata_room, 2815 * MiB + 255 * MiB);
	CHECK_EQ_U64(rep.metadata_room_after_data, 1535 * MiB / 2 + 255 * MiB);
	c1 = find_class(&rep, BX_HINT_METADATA_ONLY);
	c2 = find_class(&rep, BX_HINT_DATA_ONLY);
	c3 = find_class(&rep, BX_HINT_METADATA_PREFERRED);
	CHECK(c1 && c2 && c3);
	if (c1 && c2 && c3) {
		CHECK_EQ_U64(c1->unallocated, 1535 * MiB);
		CHECK_EQ_U64(c1->data_allocatable, 0);
		CHECK_EQ_U64(c1->metadata_allocatable, 1535 * MiB);
		CHECK_EQ_U64(c2->unallocated, 4087 * MiB);
		CHECK_EQ_U64(c2->data_allocatable, 4087 * MiB);
		CHECK_EQ_U64(c2->metadata_allocatable, 0);
		CHECK_EQ_U64(c3->data_allocatable, 4095 * MiB);
		CHECK_EQ_U64(c3->metadata_allocatable, 4095 * MiB);
	}
	/* classes sorted by hint value: metadata_preferred 1, metadata_only 2, data_only 3 */
	CHECK(rep.nr_classes == 3 && rep.classes[0].hint == 1 && rep.classes[2].hint == 3);
	CHECK_EQ_U64(rep.warnings, BX_USAGE_W_DATA_ON_META_DEVS);
	CHECK_EQ_U64(rep.data_may_take_metadata_room, 4095 * MiB);
	nr = bx_warnings_count();
	CHECK_EQ_U64(nr, 1);
	if (nr)
		CHECK(strstr(bx_warning(0), "data chunks can take 4.00GiB of the "
			     "metadata_preferred devices") != NULL);
	bx_warnings_clear();
	bx_usage_report_release(&rep);

	/* --strict: data as free_strict above, metadata unchanged, no warning */
	CHECK(bx_usage_compute(&fx.in, BX_USAGE_STRICT, &rep) == 0);
	CHECK_EQ_U64(rep.free_estimated, 8 * MiB + 4087 * MiB);
	CHECK_EQ_U64(rep.free_strict, 8 * MiB + 4087 * MiB);
	CHECK_EQ_U64(rep.metadata_room, 2815 * MiB + 255 * MiB);
	CHECK_EQ_U64(rep.warnings, 0);
	bx_usage_report_release(&rep);

	/* a mounted kernel without hint support: the model ignores them, says so */
	fx.in.hints_effective = false;
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK(!rep.hints_honoured);
	/* data everywhere: 8 + 1535 + 4087 + 4095 MiB */
	CHECK_EQ_U64(rep.free_estimated, 9725 * MiB);
	/* free_strict is hypothetical: the stored hints, strict */
	CHECK_EQ_U64(rep.free_strict, 8 * MiB + 4087 * MiB);
	CHECK_EQ_U64(rep.warnings, BX_USAGE_W_HINTS_IGNORED);
	CHECK(bx_warnings_count() == 1 && strstr(bx_warning(0), "ignores allocation hints"));
	bx_warnings_clear();
	bx_usage_report_release(&rep);
}

/*
 * RAID5 as btrfs-progs counts it: one data chunk of 2 GiB over three 4 GiB
 * devices (1 GiB stripes at 1 MiB), 1 GiB used; RAID1 metadata 256 MiB on
 * devids 1 and 2 at 1025 MiB, nothing used.
 */
static void test_overall_raid5(void)
{
	struct fixture fx;
	struct bx_usage_report rep;

	fx_init(&fx);
	for (uint64_t id = 1; id <= 3; id++)
		fx_dev(&fx, id, 4 * GiB, BX_HINT_DATA_PREFERRED);
	fx_chunk(&fx, 30408704, DATA | RAID5, 2 * GiB, 1 * GiB, 3,
		 (uint64_t[]){ 1, 1 * MiB, 2, 1 * MiB, 3, 1 * MiB });
	fx_chunk(&fx, 2178940928, META | RAID1, 256 * MiB, 256 * MiB, 2,
		 (uint64_t[]){ 1, 1025 * MiB, 2, 1025 * MiB });
	fx_space(&fx, DATA | RAID5, 2 * GiB, 1 * GiB);
	fx_space(&fx, META | RAID1, 256 * MiB, 0);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	/*
	 * Each of the three (type, device) groups holds 2 GiB of chunk length;
	 * divided by the 2 data stripes: 1 GiB each, 3 GiB raw, used half of it.
	 * Data ratio 3 / 2 = 1.5. Allocated 3 GiB + 512 MiB; unallocated
	 * 12288 - 3584 = 8704 MiB = 9126805504 bytes.
	 */
	CHECK(rep.overall.data_ratio == 1.5);
	CHECK_EQ_U64(rep.overall.device_allocated, 3584 * MiB);
	CHECK_EQ_U64((uint64_t)rep.overall.device_unallocated, 8704 * MiB);
	CHECK_EQ_U64(rep.overall.used, 1536 * MiB);
	/* (3 - 1.5) GiB / 1.5 = 1 GiB; + 9126805504 / 1.5 = 6084537002.67, truncated */
	CHECK_EQ_U64(rep.overall.free_estimated, 1073741824ULL + 6084537002ULL);
	/* min: the highest ratio in use is RAID1's 2: 1 GiB + 4563402752 */
	CHECK_EQ_U64(rep.overall.free_min, 1073741824ULL + 4563402752ULL);
	bx_usage_report_release(&rep);
}

static void test_profiles(void)
{
	struct bx_snap_space s[] = {
		{ DATA | RAID0, 1, 0 }, { DATA | RAID1, 1, 0 }, { DATA | RAID1C3, 1, 0 },
		{ META | DUP, 1, 0 }, { BX_SPACE_INFO_GLOBAL_RSV, 1, 0 },
	};

	/* the most redundant profile the writable devices allow */
	CHECK_EQ_U64(bx_snap_alloc_profile(s, 5, DATA, 3), RAID1C3);
	CHECK_EQ_U64(bx_snap_alloc_profile(s, 5, DATA, 2), RAID1);
	CHECK_EQ_U64(bx_snap_alloc_profile(s, 5, DATA, 1), RAID0);
	CHECK_EQ_U64(bx_snap_alloc_profile(s, 5, META, 1), DUP);
	CHECK_EQ_U64(bx_snap_alloc_profile(s, 5, SYS, 4), 0);
}

/* A balance that converts: new chunks of that kind get its target, single included. */
static void test_balance_targets(void)
{
	struct bx_snap_space s[] = { { DATA | RAID1, 1, 0 }, { DATA, 1, 0 }, { META | RAID1, 1, 0 },
				      { META | DUP, 1, 0 }, { SYS | RAID1, 1, 0 } };
	struct bx_snapshot in = { 0 };

	bx_kernel_common(&in.kernel);
	/* none, or a balance that converts nothing: the most redundant profile */
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, DATA, 3), DATA | RAID1);
	in.balance = BX_SNAP_BALANCE_PAUSED;
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, DATA, 3), DATA | RAID1);
	/* raid1 -> single / dup, as `balance start -dconvert=single -mconvert=dup` stores it */
	in.balance_target[BX_SNAP_KIND_DATA] =
		bx_snap_balance_target(DATA, BTRFS_DISK_BALANCE_ARGS_CONVERT,
					BTRFS_AVAIL_ALLOC_BIT_SINGLE);
	in.balance_target[BX_SNAP_KIND_METADATA] =
		bx_snap_balance_target(META, BTRFS_DISK_BALANCE_ARGS_CONVERT, DUP);
	CHECK_EQ_U64(in.balance_target[BX_SNAP_KIND_DATA], DATA);
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, DATA, 3), DATA);
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, META, 3), META | DUP);
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, SYS, 3), SYS | RAID1);
	/* mixed block groups follow the data target, as the kernel checks data first */
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, DATA | META, 3), DATA | META);
	/* without CONVERT in the arguments the target means nothing */
	CHECK_EQ_U64(bx_snap_balance_target(SYS, 0, RAID1), 0);
	/* paused_balance_target off: the profiles in use decide */
	bx_kernel_set_trait(&in.kernel, BX_KT_PAUSED_BALANCE_TARGET, false);
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, DATA, 3), DATA | RAID1);
	bx_kernel_set_trait(&in.kernel, BX_KT_PAUSED_BALANCE_TARGET, true);
	/* the arguments stay, but without a balance nothing converts */
	in.balance = BX_SNAP_BALANCE_NONE;
	CHECK_EQ_U64(bx_snap_new_chunk_type(&in, s, 5, DATA, 3), DATA | RAID1);
}

static void test_multiple_profiles_and_missing(void)
{
	struct fixture fx;
	struct bx_usage_report rep;

	raid1_fixture(&fx, 0);
	fx_space(&fx, DATA, 0, 0);	/* a leftover single data block group */
	fx.devs[1].missing = true;
	fx.devs[1].device_size = 0;
	fx.devs[0].device_size = 11 * GiB;
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK(strcmp(rep.overall.multiple_profiles, "data") == 0);
	CHECK_EQ_U64(rep.overall.device_missing, 10 * GiB);
	CHECK_EQ_U64(rep.overall.device_slack, 1 * GiB);
	/* RAID1 is still the data profile but one device cannot make a mirror: */
	CHECK_EQ_U64(rep.data_type, DATA);
	CHECK_EQ_U64(rep.data_new_chunks, 8951 * MiB);
	bx_usage_report_release(&rep);
	CHECK(bx_usage_compute(&(struct bx_snapshot){ 0 }, 0, &rep) == -EINVAL);
}

/*
 * Data chunks already on metadata devices (allocated before the hints were
 * set, or by a kernel that ignores them): data_on_metadata_devices counts
 * them, whatever data could still take there.
 */
static void test_data_on_metadata_devices(void)
{
	struct fixture fx;
	struct bx_usage_report rep;

	fx_init(&fx);
	fx_dev(&fx, 1, 4 * GiB, BX_HINT_METADATA_ONLY);
	fx_dev(&fx, 2, 4 * GiB, BX_HINT_METADATA_ONLY);
	fx_dev(&fx, 3, 8 * GiB, BX_HINT_DATA_ONLY);
	fx_chunk(&fx, 30408704, META | RAID1, 256 * MiB, 256 * MiB, 2,
		 (uint64_t[]){ 1, 1 * MiB, 2, 1 * MiB });
	fx_chunk(&fx, 298844160, DATA | RAID1, 735 * MiB, 735 * MiB, 2,
		 (uint64_t[]){ 1, 257 * MiB, 2, 257 * MiB });
	fx_space(&fx, DATA | RAID1, 735 * MiB, 700 * MiB);
	fx_space(&fx, META | RAID1, 256 * MiB, 1 * MiB);
	bx_warnings_clear();
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_on_metadata_devices, 2 * 735 * MiB);
	CHECK_EQ_U64(rep.data_may_take_metadata_room, 0);
	bx_usage_report_release(&rep);
}

/*
 * One 1 GiB device, single everything: system [1, 5) MiB, metadata 8 MiB
 * at [5, 13) with 1.5 MiB used, data 64 MiB at [13, 77) empty; hole
 * [77, 1024) = 947 MiB. Global reserve 5.5 MiB: beside it and what is
 * used, the metadata chunk has 1 MiB, less than a file's creation reserves
 * (5 items x 8 levels x 2 x 16 KiB = 1.25 MiB, times 3 from 6.7 on with
 * the delayed refs, times 2 before).
 */
static void starved_fixture(struct fixture *fx, bool keeps_data_chunk)
{
	fx_init(fx);
	fx_dev(fx, 1, 1 * GiB, BX_HINT_DATA_PREFERRED);
	fx_chunk(fx, 22020096, SYS, 4 * MiB, 4 * MiB, 1, (uint64_t[]){ 1, 1 * MiB });
	fx_chunk(fx, 26214400, META, 8 * MiB, 8 * MiB, 1, (uint64_t[]){ 1, 5 * MiB });
	fx_chunk(fx, 34603008, DATA, 64 * MiB, 64 * MiB, 1, (uint64_t[]){ 1, 13 * MiB });
	fx_space(fx, DATA, 64 * MiB, 0);
	fx_space(fx, META, 8 * MiB, 3 * MiB / 2);
	fx_space(fx, SYS, 4 * MiB, 16 * 1024);
	fx_space(fx, BX_SPACE_INFO_GLOBAL_RSV, 11 * MiB / 2, 0);
	fx->in.have_global_reserve = true;
	fx->in.global_reserve = 11 * MiB / 2;
	/* 6.7 and later: both changes of the kernel's reservations came then. */
	bx_kernel_set_trait(&fx->in.kernel, BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK, keeps_data_chunk);
	bx_kernel_set_trait(&fx->in.kernel, BX_KT_DELAYED_REFS_RESERVED_TWICE, keeps_data_chunk);
}

static void test_metadata_grows_during_a_data_fill(void)
{
	struct fixture fx;
	struct bx_usage_report rep;

	/*
	 * Data chunks of 112 MiB (10 % of 1 GiB rounded up to 16 MiB): 947 =
	 * 8 x 112 + 51. From 6.7 on the kernel overcommits metadata only on
	 * what is unallocated beyond a data chunk (102.4 MiB), an eighth of it,
	 * and 2.75 MiB are missing: after 7 chunks 163 MiB are left (7.6 MiB to
	 * overcommit), after 8 51 MiB (none), and the metadata chunk takes them.
	 */
	starved_fixture(&fx, true);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_new_chunks, 896 * MiB);
	CHECK_EQ_U64(rep.free_estimated, 960 * MiB);
	CHECK_EQ_U64(rep.free_strict, 960 * MiB);
	CHECK_EQ_U64(rep.dev_rows[0].data_allocatable, 896 * MiB);
	/* 6.5 MiB free in the chunk, and the 51 MiB chunk */
	CHECK_EQ_U64(rep.metadata_room_after_data, 115 * MiB / 2);
	bx_usage_report_release(&rep);

	/*
	 * Before 6.7: an eighth of the 51 MiB left covers the 1.5 MiB missing;
	 * then nothing is left, for a metadata chunk either.
	 */
	starved_fixture(&fx, false);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_new_chunks, 947 * MiB);
	CHECK_EQ_U64(rep.free_estimated, 1011 * MiB);
	CHECK_EQ_U64(rep.metadata_room_after_data, 13 * MiB / 2);
	bx_usage_report_release(&rep);

	/*
	 * From 7.2 on a 64th: after 6 chunks 275 MiB are left, 2.7 MiB to
	 * overcommit, and the metadata chunk comes then (112 MiB); data gets
	 * the 163 MiB left after it (112 + 51).
	 */
	starved_fixture(&fx, true);
	bx_kernel_set_trait(&fx.in.kernel, BX_KT_FLUSH_OVERCOMMITS_64TH, true);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_new_chunks, 835 * MiB);
	CHECK_EQ_U64(rep.free_estimated, 899 * MiB);
	bx_usage_report_release(&rep);

	/* Unmounted, the reserve is not known: no metadata chunk. */
	starved_fixture(&fx, true);
	fx.in.have_global_reserve = false;
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_new_chunks, 947 * MiB);
	bx_usage_report_release(&rep);

	/* metadata_fill_grows off: the flusher forces nothing, data takes it all. */
	starved_fixture(&fx, true);
	bx_kernel_set_trait(&fx.in.kernel, BX_KT_METADATA_FILL_GROWS, false);
	CHECK(bx_usage_compute(&fx.in, 0, &rep) == 0);
	CHECK_EQ_U64(rep.data_new_chunks, 947 * MiB);
	bx_usage_report_release(&rep);
}

int main(void)
{
	test_overall_raid1();
	test_model_raid1();
	test_metadata_warning();
	test_hints();
	test_overall_raid5();
	test_profiles();
	test_balance_targets();
	test_multiple_profiles_and_missing();
	test_data_on_metadata_devices();
	test_metadata_grows_during_a_data_fill();
	bx_warnings_clear();
	return unit_summary();
}
