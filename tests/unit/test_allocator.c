/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the chunk allocator model (model/allocator.c).
 *
 * Every expected value below is worked out by hand in the comment above its
 * check, from the rules in allocator.c's header comment. Units: MiB = 2^20,
 * GiB = 2^30. "hole" is the largest free range of a device above 1 MiB,
 * "avail" the kernel's total_avail (total_bytes - bytes_used, which includes
 * the reserved first MiB).
 *
 * Build: gcc -std=gnu11 -Wall -Wextra -I. -o test_allocator \
 *            tests/unit/test_allocator.c model/allocator.c
 * The last line printed is "N passed, N failed"; the exit status is nonzero
 * on any failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/allocator.h"

#define MiB (1024 * 1024ULL)
#define GiB (1024 * MiB)
#define TiB (1024 * GiB)
#define PiB (1024 * TiB)

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM
#define RAID0 BTRFS_BLOCK_GROUP_RAID0
#define RAID1 BTRFS_BLOCK_GROUP_RAID1
#define DUP BTRFS_BLOCK_GROUP_DUP
#define RAID10 BTRFS_BLOCK_GROUP_RAID10
#define RAID5 BTRFS_BLOCK_GROUP_RAID5
#define RAID6 BTRFS_BLOCK_GROUP_RAID6
#define RAID1C3 BTRFS_BLOCK_GROUP_RAID1C3
#define RAID1C4 BTRFS_BLOCK_GROUP_RAID1C4

static int passed, failed;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			passed++;                                          \
		} else {                                                   \
			failed++;                                          \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);        \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
		}                                                          \
	} while (0)

#define CHECK_U64(got, want, what)                                               \
	do {                                                                     \
		uint64_t g_ = (got), w_ = (want);                                \
		CHECK(g_ == w_, "%s: got %" PRIu64 " want %" PRIu64, what, g_, w_); \
	} while (0)

#define CHECK_INT(got, want, what)                                     \
	do {                                                           \
		long long g_ = (got), w_ = (want);                     \
		CHECK(g_ == w_, "%s: got %lld want %lld", what, g_, w_); \
	} while (0)

/* Devices with devids 1..n, one hole [1 MiB, size) each. */
static void mkdevs(struct bx_alloc_device *d, size_t n, const uint64_t *sizes,
		   const uint64_t *hints)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (bx_alloc_device_init(&d[i], i + 1, sizes[i], hints ? hints[i] : 0)) {
			printf("out of memory\n");
			exit(2);
		}
}

static void freedevs(struct bx_alloc_device *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		bx_alloc_device_release(&d[i]);
}

/* Checks the devids of a chunk's stripes, in order. */
static void check_devids(const struct bx_alloc_chunk *c, const uint64_t *want, size_t n,
			 const char *what)
{
	size_t i;
	char buf[128];

	CHECK_INT(c->num_stripes, n, what);
	for (i = 0; i < n && i < c->num_stripes; i++) {
		snprintf(buf, sizeof(buf), "%s: stripe %zu devid", what, i);
		CHECK_U64(c->stripes[i].devid, want[i], buf);
	}
}

static uint64_t sizes_1236[4] = { 1 * GiB, 2 * GiB, 3 * GiB, 6 * GiB };

/* ---- limits ---- */

static void test_limits(void)
{
	struct bx_alloc_limits l;

	/* Data on 12 GiB: stripe 1 GiB, chunk min(10 GiB, 12 GiB * 10 / 100). */
	CHECK_INT(bx_alloc_limits(DATA, 12 * GiB, 0, &l), 0, "limits data");
	CHECK_U64(l.max_stripe_size, 1 * GiB, "data max stripe");
	CHECK_U64(l.max_chunk_size, 1288490188ULL, "data 10% of 12 GiB, rounded down");
	CHECK_U64(l.dev_extent_min, 64 * 1024, "data min extent");
	CHECK_U64(l.dev_extent_want, 1 * GiB, "data want");
	CHECK_INT(l.devs_max, 1, "single devs_max");

	/* Data on 1 PiB: the 10 GiB cap wins. */
	bx_alloc_limits(DATA | RAID0, PiB, 0, &l);
	CHECK_U64(l.max_chunk_size, 10 * GiB, "data chunk cap");
	/* devs_max 0 in the table: (16384 - 101 - 25 - 80) / 32 + 1 = 506. */
	CHECK_INT(l.devs_max, 506, "raid0 devs_max with 16 KiB nodes");
	bx_alloc_limits(DATA | RAID0, PiB, 4096, &l);
	CHECK_INT(l.devs_max, 122, "raid0 devs_max with 4 KiB nodes"); /* 3890 / 32 + 1 */

	/* Metadata: 256 MiB up to 50 GiB (inclusive), 1 GiB above. */
	bx_alloc_limits(META, 12 * GiB, 0, &l);
	CHECK_U64(l.max_stripe_size, 256 * MiB, "meta stripe small fs");
	CHECK_U64(l.max_chunk_size, 256 * MiB, "meta chunk small fs");
	bx_alloc_limits(META, 50 * GiB, 0, &l);
	CHECK_U64(l.max_chunk_size, 256 * MiB, "meta chunk at exactly 50 GiB");
	bx_alloc_limits(META | DUP, 50 * GiB + 1, 0, &l);
	CHECK_U64(l.max_chunk_size, 1 * GiB, "meta chunk above 50 GiB");
	CHECK_U64(l.dev_extent_min, 128 * 1024, "dup min extent: 2 stripes");
	CHECK_U64(l.dev_extent_want, 2 * GiB, "dup want: 2 stripes");

	/* System: 32 MiB, and at most 58 devices ((2048 - 34 - 160) / 32 + 1). */
	bx_alloc_limits(SYS | RAID1, 12 * GiB, 0, &l);
	CHECK_U64(l.max_chunk_size, 32 * MiB, "system chunk");
	CHECK_U64(l.max_stripe_size, 32 * MiB, "system stripe");
	bx_alloc_limits(SYS | RAID0, 12 * GiB, 0, &l);
	CHECK_INT(l.devs_max, 58, "system devs_max");

	/* Mixed groups use the data chunk size. */
	bx_alloc_limits(DATA | META, 100 * GiB, 0, &l);
	CHECK_U64(l.max_chunk_size, 10 * GiB, "mixed chunk size");

	/* 6.x profile table: degenerate raid0 (1 device) and raid10 (2). */
	bx_alloc_limits(DATA | RAID0, GiB, 0, &l);
	CHECK_INT(l.raid.devs_min, 1, "raid0 devs_min");
	bx_alloc_limits(DATA | RAID10, GiB, 0, &l);
	CHECK_INT(l.raid.devs_min, 2, "raid10 devs_min");
	CHECK_INT(l.raid.devs_increment, 2, "raid10 increment");

	CHECK_INT(bx_alloc_limits(DATA | RAID0 | RAID1, GiB, 0, &l), -EINVAL, "two profiles");
	CHECK_INT(bx_alloc_limits(RAID1, GiB, 0, &l), -EINVAL, "no type bit");
	CHECK_INT(bx_alloc_limits(DATA | (1ULL << 20), GiB, 0, &l), -EINVAL, "unknown bit");
}

/* ---- mainline, first chunk on uneven devices 1, 2, 3, 6 GiB ---- */

/*
 * Devids 1..4 = 1, 2, 3, 6 GiB, fresh. Holes 1023, 2047, 3071, 6143 MiB;
 * avail 1, 2, 3, 6 GiB. fs 12 GiB: data max chunk 1288490188 (1228.8 MiB),
 * metadata 256 MiB. For data (want 1 GiB) the holes count as 1023 MiB, 1 GiB,
 * 1 GiB, 1 GiB, so the sort order is 4, 3, 2 (by avail), then 1.
 */
static void test_first_chunks(void)
{
	struct bx_alloc_device d[4];
	struct bx_alloc_chunk c;
	static const uint64_t o4[] = { 4 }, o43[] = { 4, 3 }, o432[] = { 4, 3, 2 },
			      o4321[] = { 4, 3, 2, 1 }, o44[] = { 4, 4 };

	mkdevs(d, 4, sizes_1236, NULL);

	/* single: devid 4 at 1 MiB, stripe = chunk = 1 GiB (below 1228.8 MiB). */
	CHECK_INT(bx_alloc_decide(d, 4, DATA, NULL, &c), 0, "single");
	check_devids(&c, o4, 1, "single");
	CHECK_U64(c.stripes[0].physical, 1 * MiB, "single physical");
	CHECK_U64(c.stripe_size, 1 * GiB, "single stripe");
	CHECK_U64(c.length, 1 * GiB, "single length");
	bx_alloc_chunk_release(&c);

	/*
	 * raid0: all four; stripe = last device's hole 1023 MiB; 4 data stripes
	 * make 4092 MiB > 1228.8 MiB, so stripe = roundup(1288490188 / 4 =
	 * 307.2 MiB, 16 MiB) = 320 MiB; length 1280 MiB (above the 10%: the
	 * kernel rounds up).
	 */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID0, NULL, &c), 0, "raid0");
	check_devids(&c, o4321, 4, "raid0");
	CHECK_U64(c.stripe_size, 320 * MiB, "raid0 stripe");
	CHECK_U64(c.length, 1280 * MiB, "raid0 length");
	bx_alloc_chunk_release(&c);

	/* raid1: 4 and 3, 1 GiB each, 1 data stripe: length 1 GiB. */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID1, NULL, &c), 0, "raid1");
	check_devids(&c, o43, 2, "raid1");
	CHECK_U64(c.stripe_size, 1 * GiB, "raid1 stripe");
	CHECK_U64(c.length, 1 * GiB, "raid1 length");
	bx_alloc_chunk_release(&c);

	/* raid1c3: 4, 3, 2 at 1 GiB. */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID1C3, NULL, &c), 0, "raid1c3");
	check_devids(&c, o432, 3, "raid1c3");
	CHECK_U64(c.length, 1 * GiB, "raid1c3 length");
	bx_alloc_chunk_release(&c);

	/* raid1c4: all four, limited by devid 1's 1023 MiB hole. */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID1C4, NULL, &c), 0, "raid1c4");
	check_devids(&c, o4321, 4, "raid1c4");
	CHECK_U64(c.stripe_size, 1023 * MiB, "raid1c4 stripe");
	CHECK_U64(c.length, 1023 * MiB, "raid1c4 length");
	bx_alloc_chunk_release(&c);

	/*
	 * raid10: 4 devices (even), stripe 1023 MiB, 2 data stripes = 2046 MiB
	 * > 1228.8: roundup(644245094, 16 MiB) = 624 MiB; length 1248 MiB.
	 */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID10, NULL, &c), 0, "raid10");
	check_devids(&c, o4321, 4, "raid10");
	CHECK_U64(c.stripe_size, 624 * MiB, "raid10 stripe");
	CHECK_U64(c.length, 1248 * MiB, "raid10 length");
	CHECK_INT(c.sub_stripes, 2, "raid10 sub_stripes");
	bx_alloc_chunk_release(&c);

	/* raid5: 3 data stripes: roundup(429496729, 16 MiB) = 416 MiB; 1248 MiB. */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID5, NULL, &c), 0, "raid5");
	check_devids(&c, o4321, 4, "raid5");
	CHECK_U64(c.stripe_size, 416 * MiB, "raid5 stripe");
	CHECK_U64(c.length, 1248 * MiB, "raid5 length");
	bx_alloc_chunk_release(&c);

	/* raid6: 2 data stripes: 624 MiB stripes, 1248 MiB. */
	CHECK_INT(bx_alloc_decide(d, 4, DATA | RAID6, NULL, &c), 0, "raid6");
	check_devids(&c, o4321, 4, "raid6");
	CHECK_U64(c.stripe_size, 624 * MiB, "raid6 stripe");
	CHECK_U64(c.length, 1248 * MiB, "raid6 length");
	bx_alloc_chunk_release(&c);

	/*
	 * dup metadata: want 2 * 256 MiB; devid 4 (largest avail); stripe
	 * 256 MiB; 1 data stripe; both stripes in the same hole, back to back.
	 */
	CHECK_INT(bx_alloc_decide(d, 4, META | DUP, NULL, &c), 0, "dup");
	check_devids(&c, o44, 2, "dup");
	CHECK_U64(c.stripes[0].physical, 1 * MiB, "dup stripe 0");
	CHECK_U64(c.stripes[1].physical, 257 * MiB, "dup stripe 1");
	CHECK_U64(c.stripe_size, 256 * MiB, "dup stripe");
	CHECK_U64(c.length, 256 * MiB, "dup length");
	bx_alloc_chunk_release(&c);

	/* system raid1: 32 MiB on 4 and 3. */
	CHECK_INT(bx_alloc_decide(d, 4, SYS | RAID1, NULL, &c), 0, "system");
	check_devids(&c, o43, 2, "system");
	CHECK_U64(c.stripe_size, 32 * MiB, "system stripe");
	bx_alloc_chunk_release(&c);

	freedevs(d, 4);
}

/* ---- mainline, filling the devices ---- */

static struct bx_alloc_sim_result fill(const struct bx_alloc_device *d, size_t n, uint64_t type,
				       const struct bx_alloc_params *p)
{
	struct bx_alloc_sim_result r;

	if (bx_alloc_simulate(d, n, type, p, true, &r)) {
		printf("simulate failed\n");
		exit(2);
	}
	return r;
}

static void check_lengths(const struct bx_alloc_sim_result *r, const uint64_t *mib, size_t n,
			  const char *what)
{
	size_t i;
	char buf[128];

	CHECK_U64(r->nr_chunks, n, what);
	for (i = 0; i < n && i < r->nr_chunks; i++) {
		snprintf(buf, sizeof(buf), "%s: chunk %zu length", what, i);
		CHECK_U64(r->chunks[i].length, mib[i] * MiB, buf);
	}
}

static void test_fill_uneven(void)
{
	struct bx_alloc_device d[4];
	struct bx_alloc_sim_result r;

	mkdevs(d, 4, sizes_1236, NULL);

	/*
	 * single: every device ends as (size - 1) chunks of 1 GiB plus one of
	 * 1023 MiB: 12 chunks, 12 GiB - 4 MiB, nothing left.
	 */
	r = fill(d, 4, DATA, NULL);
	CHECK_U64(r.nr_chunks, 12, "single fill chunks");
	CHECK_U64(r.logical_bytes, 12 * GiB - 4 * MiB, "single fill bytes");
	bx_alloc_sim_result_release(&r);

	/*
	 * raid0, holes in MiB (1023, 2047, 3071, 6143):
	 *  1-3: 4 devices at 320           -> 63, 1087, 2111, 5183  (1280 each)
	 *  4:   4 devices at 63 (252 < 1228.8)  -> 0, 1024, 2048, 5120 (252)
	 *  5:   3 devices, 1 GiB each * 3 > 1228.8: roundup(409.6) = 416
	 *                                   -> 608, 1632, 4704 (1248)
	 *  6:   last hole 608, still 416    -> 192, 1216, 4288 (1248)
	 *  7:   192 * 3 = 576                -> 0, 1024, 4096  (576)
	 *  8:   2 devices: roundup(614.4) = 624 -> 400, 3472   (1248)
	 *  9:   400 * 2 = 800                -> 0, 3072        (800)
	 * 10-12: devid 4 alone (raid0 devs_min is 1 since 5.15): 1 GiB each.
	 * Sum 12284 MiB: every byte.
	 */
	{
		static const uint64_t len[] = { 1280, 1280, 1280, 252, 1248, 1248,
						576, 1248, 800, 1024, 1024, 1024 };

		r = fill(d, 4, DATA | RAID0, NULL);
		check_lengths(&r, len, 12, "raid0 fill");
		CHECK_U64(r.logical_bytes, 12284 * MiB, "raid0 fill bytes");
		CHECK_INT(r.chunks[3].ndevs, 4, "raid0 chunk 4 devices");
		CHECK_INT(r.chunks[4].ndevs, 3, "raid0 chunk 5 devices");
		CHECK_INT(r.chunks[9].ndevs, 1, "raid0 chunk 10 devices");
		bx_alloc_sim_result_release(&r);
	}

	/*
	 * raid1: 4+3, 4+(3|2: equal), 4+(the other), then devid 4 with each
	 * 1023 MiB device in turn: 3 * 1024 + 3 * 1023 = 6141 MiB, which is
	 * min(12284 / 2, 12284 - 6143). 2 MiB stay on devid 4.
	 */
	{
		static const uint64_t len[] = { 1024, 1024, 1024, 1023, 1023, 1023 };
		struct bx_alloc_sim *sim;
		struct bx_alloc_chunk c;
		int i;

		r = fill(d, 4, DATA | RAID1, NULL);
		check_lengths(&r, len, 6, "raid1 fill");
		CHECK_U64(r.logical_bytes, 6141 * MiB, "raid1 fill bytes");
		CHECK_U64(r.physical_bytes, 2 * 6141 * MiB, "raid1 physical");
		for (i = 0; i < 6 && (uint64_t)i < r.nr_chunks; i++)
			CHECK_U64(r.chunks[i].stripes[0].devid, 4, "raid1: devid 4 in every chunk");
		bx_alloc_sim_result_release(&r);

		bx_alloc_sim_new(d, 4, NULL, &sim);
		while (bx_alloc_sim_step(sim, DATA | RAID1, &c) == 0)
			;
		CHECK_U64(bx_alloc_sim_unallocated(sim, 3), 2 * MiB, "raid1 leftover on devid 4");
		CHECK_U64(bx_alloc_sim_unallocated(sim, 0), 0, "raid1 devid 1 full");
		bx_alloc_sim_free(sim);
	}

	/*
	 * raid1c3: 4,3,2 at 1024 -> 1023, 1023, 2047, 5119; then 4, 3 and one
	 * of the two 1023 MiB devices at 1023 -> 3: 1024; then 4, 3 (exactly
	 * 1024: a fit) and the other at 1023 -> 3: 1 MiB. Only 4 and 3 left:
	 * ENOSPC. 3070 MiB.
	 */
	{
		static const uint64_t len[] = { 1024, 1023, 1023 };

		r = fill(d, 4, DATA | RAID1C3, NULL);
		check_lengths(&r, len, 3, "raid1c3 fill");
		bx_alloc_sim_result_release(&r);
	}

	/*
	 * raid10 (devs_min 2, increment 2):
	 *  1: 4 devices, 624 MiB (1248)     -> 399, 1423, 2447, 5519
	 *  2: 4 devices at 399 (798)        -> 0, 1024, 2048, 5120
	 *  3: 3 devices -> 2 (4 and 3), 1 GiB, 1 data stripe (1024)
	 *  4, 5: devid 4 with devid 3 and 2 (1024 each); devid 4 alone: ENOSPC.
	 * 5118 MiB.
	 */
	{
		static const uint64_t len[] = { 1248, 798, 1024, 1024, 1024 };

		r = fill(d, 4, DATA | RAID10, NULL);
		check_lengths(&r, len, 5, "raid10 fill");
		CHECK_INT(r.chunks[2].ndevs, 2, "raid10: 3 devices round down to 2");
		bx_alloc_sim_result_release(&r);
	}

	/*
	 * raid5 (1 parity):
	 *  1: 4 devs, 3 data stripes, 416 (1248) -> 607, 1631, 2655, 5727
	 *  2: 416 again (607 * 3 > 1228.8) (1248) -> 191, 1215, 2239, 5311
	 *  3: 191 * 3 = 573                       -> 0, 1024, 2048, 5120
	 *  4: 3 devs, 2 data stripes: 624 (1248)  -> 400, 1424, 4496
	 *  5: 400 * 2 = 800                       -> 0, 1024, 4096
	 *  6: 2 devs, 1 data stripe, 1024        -> 0, 3072; then ENOSPC.
	 * 6141 MiB.
	 */
	{
		static const uint64_t len[] = { 1248, 1248, 573, 1248, 800, 1024 };

		r = fill(d, 4, DATA | RAID5, NULL);
		check_lengths(&r, len, 6, "raid5 fill");
		CHECK_U64(r.logical_bytes, 6141 * MiB, "raid5 fill bytes");
		bx_alloc_sim_result_release(&r);
	}

	/*
	 * raid6 (2 parity): 4 devs at 624 (1248) -> 399, ...; 4 devs at 399
	 * (798) -> 0, 1024, 2048, 5120; 3 devs, 1 data stripe, 1024; then only
	 * 2 devices: ENOSPC. 3070 MiB.
	 */
	{
		static const uint64_t len[] = { 1248, 798, 1024 };

		r = fill(d, 4, DATA | RAID6, NULL);
		check_lengths(&r, len, 3, "raid6 fill");
		bx_alloc_sim_result_release(&r);
	}

	/*
	 * dup data (want 2 GiB): one device per chunk, two stripes from the
	 * front of its hole. The first chunk: devid 4 (hole 6143 >= 2048):
	 * stripe 1 GiB, 1 data stripe, length 1 GiB, stripes at 1 MiB and
	 * 1025 MiB.
	 */
	{
		r = fill(d, 4, DATA | DUP, NULL);
		CHECK_U64(r.chunks[0].stripes[0].devid, 4, "dup data devid");
		CHECK_U64(r.chunks[0].stripes[1].devid, 4, "dup data devid 2");
		CHECK_U64(r.chunks[0].stripes[1].physical, 1025 * MiB, "dup data 2nd stripe");
		CHECK_U64(r.chunks[0].length, 1 * GiB, "dup data length");
		bx_alloc_sim_result_release(&r);
	}

	freedevs(d, 4);
}

/*
 * DUP metadata on one 1 GiB device (fs 1 GiB): want 512 MiB, max chunk =
 * min(256 MiB, 107374182) = 102.4 MiB, so stripe = roundup(102.4, 16) =
 * 112 MiB while the hole allows it. Hole 1023 -> 799 -> 575 -> 351 (three
 * fits); 351 < 512: half of it is 175.5 MiB, still cut to 112 -> 127; then
 * half of 127 is 63.5 MiB (already 64 KiB aligned, below the 10%) -> 0.
 * 4 * 112 + 63.5 = 511.5 MiB in 5 chunks, all 1023 MiB used.
 */
static void test_dup_one_device(void)
{
	struct bx_alloc_device d[1];
	struct bx_alloc_sim_result r;
	static const uint64_t size[] = { 1 * GiB };
	struct bx_alloc_chunk c;

	mkdevs(d, 1, size, NULL);
	CHECK_INT(bx_alloc_decide(d, 1, META | DUP, NULL, &c), 0, "dup 1 GiB");
	CHECK_U64(c.stripe_size, 112 * MiB, "dup 1 GiB stripe (10% rule)");
	CHECK_U64(c.stripes[1].physical, 113 * MiB, "dup 1 GiB 2nd stripe");
	bx_alloc_chunk_release(&c);

	r = fill(d, 1, META | DUP, NULL);
	CHECK_U64(r.nr_chunks, 5, "dup fill chunks");
	CHECK_U64(r.chunks[3].stripe_size, 112 * MiB, "dup 4th chunk still cut to 112");
	CHECK_U64(r.chunks[4].stripe_size, 127 * MiB / 2, "dup last chunk: half the hole");
	CHECK_U64(r.logical_bytes, 4 * 112 * MiB + 127 * MiB / 2, "dup fill bytes");
	CHECK_U64(r.physical_bytes, 1023 * MiB, "dup uses the whole hole");
	bx_alloc_sim_result_release(&r);

	/* raid1 needs two devices. */
	CHECK_INT(bx_alloc_decide(d, 1, META | RAID1, NULL, &c), -ENOSPC, "raid1 on one device");
	freedevs(d, 1);
}

/*
 * The 10% rule on a 2 GiB single device: max chunk 214748364 (204.8 MiB),
 * data stripe roundup to 208 MiB. Hole 2047 MiB: 9 chunks of 208 (1872),
 * then 175 MiB. 10 chunks, 2047 MiB. With fs_total_bytes given as 100 GiB
 * the same device gets 1 GiB chunks.
 */
static void test_ten_percent(void)
{
	struct bx_alloc_device d[1];
	struct bx_alloc_sim_result r;
	static const uint64_t size[] = { 2 * GiB };
	struct bx_alloc_params p = { .fs_total_bytes = 100 * GiB };

	mkdevs(d, 1, size, NULL);
	r = fill(d, 1, DATA, NULL);
	CHECK_U64(r.nr_chunks, 10, "10% chunks");
	CHECK_U64(r.chunks[0].length, 208 * MiB, "10% first chunk");
	CHECK_U64(r.chunks[9].length, 175 * MiB, "10% last chunk");
	CHECK_U64(r.logical_bytes, 2047 * MiB, "10% fill bytes");
	bx_alloc_sim_result_release(&r);

	r = fill(d, 1, DATA, &p);
	CHECK_U64(r.chunks[0].length, 1 * GiB, "fs_total_bytes honoured");
	CHECK_U64(r.nr_chunks, 2, "fs_total_bytes: 1024 + 1023");
	bx_alloc_sim_result_release(&r);
	freedevs(d, 1);
}

/*
 * Where in which hole. Device of 10 GiB with holes 300 MiB @ 1 MiB, 500 MiB
 * @ 400 MiB, 500 MiB @ 1000 MiB and 4 GiB @ 2 GiB (fs_total 100 GiB so that
 * the 10% rule does not interfere):
 *  - data (want 1 GiB): the first hole that fits is the one at 2 GiB.
 *  - metadata dup (fs 100 GiB: 1 GiB stripes, want 2 GiB): also at 2 GiB,
 *    stripes at 2 GiB and 3 GiB.
 *  - with only the three small holes: no fit, the largest hole wins and
 *    the first of the two 500 MiB ones is taken: 400 MiB, stripe 500 MiB.
 */
static void test_holes(void)
{
	struct bx_alloc_device d[1];
	struct bx_alloc_chunk c;
	struct bx_alloc_params p = { .fs_total_bytes = 100 * GiB };
	struct bx_alloc_hole h[] = {
		{ 2 * GiB, 4 * GiB }, { 400 * MiB, 500 * MiB },
		{ 1 * MiB, 300 * MiB }, { 1000 * MiB, 500 * MiB },
	};

	bx_alloc_device_init(&d[0], 7, 10 * GiB, 0);
	CHECK_INT(bx_alloc_device_set_holes(&d[0], h, 4), 0, "set holes");
	CHECK_INT(d[0].nr_holes, 4, "holes kept");
	CHECK_U64(d[0].holes[0].start, 1 * MiB, "holes sorted");
	CHECK_U64(d[0].bytes_used, 10 * GiB - 1 * MiB - 5396 * MiB, "bytes_used derived");

	CHECK_INT(bx_alloc_decide(d, 1, DATA, &p, &c), 0, "first fit");
	CHECK_U64(c.stripes[0].physical, 2 * GiB, "first fit: hole at 2 GiB");
	CHECK_U64(c.stripes[0].devid, 7, "devid");
	bx_alloc_chunk_release(&c);

	CHECK_INT(bx_alloc_decide(d, 1, META | DUP, &p, &c), 0, "dup first fit");
	CHECK_U64(c.stripes[0].physical, 2 * GiB, "dup at 2 GiB");
	CHECK_U64(c.stripes[1].physical, 3 * GiB, "dup 2nd stripe right after");
	bx_alloc_chunk_release(&c);

	CHECK_INT(bx_alloc_device_set_holes(&d[0], h + 1, 3), 0, "small holes");
	CHECK_INT(bx_alloc_decide(d, 1, DATA, &p, &c), 0, "largest hole");
	CHECK_U64(c.stripes[0].physical, 400 * MiB, "first of the largest holes");
	CHECK_U64(c.stripe_size, 500 * MiB, "stripe = the hole");
	CHECK_INT(bx_alloc_apply(d, 1, &c), 0, "apply");
	CHECK_INT(d[0].nr_holes, 2, "apply removed the hole");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 1, DATA, &p, &c), 0, "next largest");
	CHECK_U64(c.stripes[0].physical, 1000 * MiB, "then the other 500 MiB hole");
	bx_alloc_chunk_release(&c);

	/* Holes below 1 MiB are clipped; adjacent ones merge. */
	{
		struct bx_alloc_hole h2[] = { { 0, 3 * MiB }, { 3 * MiB, 5 * MiB } };

		bx_alloc_device_set_holes(&d[0], h2, 2);
		CHECK_INT(d[0].nr_holes, 1, "merged");
		CHECK_U64(d[0].holes[0].start, 1 * MiB, "clipped to 1 MiB");
		CHECK_U64(d[0].holes[0].len, 7 * MiB, "merged length");
	}

	/* add_extent: split, shrink, refuse what is not free. */
	bx_alloc_device_release(&d[0]);
	bx_alloc_device_init(&d[0], 7, 10 * GiB, 0);
	CHECK_INT(bx_alloc_device_add_extent(&d[0], 2 * GiB, 1 * GiB), 0, "split");
	CHECK_INT(d[0].nr_holes, 2, "split holes");
	CHECK_U64(d[0].holes[1].start, 3 * GiB, "tail hole");
	CHECK_U64(d[0].bytes_used, 1 * GiB, "bytes_used");
	CHECK_INT(bx_alloc_device_add_extent(&d[0], 2 * GiB + MiB, MiB), -EEXIST, "not free");
	CHECK_INT(bx_alloc_device_add_extent(&d[0], 0, 1 * MiB), 0, "reserved range counted");
	CHECK_U64(d[0].bytes_used, 1 * GiB + 1 * MiB, "reserved counted");
	CHECK_U64(bx_alloc_device_unallocated(&d[0]), 9 * GiB - 1 * MiB, "unallocated");
	CHECK_INT(bx_alloc_device_add_extent(&d[0], 1 * MiB, 0), -EINVAL, "empty extent");
	bx_alloc_device_release(&d[0]);
}

/*
 * Exact ties: the kernel's heapsort is not stable, so devices that tie on
 * both keys come out in an order that depends on the algorithm.
 *
 * raid10 on five fresh 10 GiB devices: 5 rounds down to 4; all compare
 * equal. Since 6.9 (two pops per round, right child on ties):
 *   build: sift 1 (children 3, 4 tie: path to 4, back to 1), sift 0 (no move)
 *   pop:   swap 0<->4 [4 1 2 3 0]; children 1, 2 tie -> 2; swap 2<->3
 *          [4 1 3 2 0]; sift 2, sift 0: no moves; 3 left: swap 0<->2
 *          -> [3 1 4 2 0]: devids 4, 2, 5, 3.
 * Before 6.9 (one pop, left child on ties) the pops rotate the array to
 * [1 2 3 4 0]: devids 2, 3, 4, 5. Either way devid 1 is left out.
 * Two equal devices come out swapped with both: 2, 1.
 */
static void test_ties(void)
{
	struct bx_alloc_device d[5];
	struct bx_alloc_chunk c;
	static const uint64_t sz[5] = { 10 * GiB, 10 * GiB, 10 * GiB, 10 * GiB, 10 * GiB };
	static const uint64_t new_order[] = { 4, 2, 5, 3 }, old_order[] = { 2, 3, 4, 5 },
			      two[] = { 2, 1 };
	struct bx_alloc_params old = { .flags = BX_ALLOC_SORT_PRE_6_9 };

	mkdevs(d, 5, sz, NULL);
	CHECK_INT(bx_alloc_decide(d, 5, DATA | RAID10, NULL, &c), 0, "raid10 odd");
	check_devids(&c, new_order, 4, "raid10 odd, 6.9+ order");
	CHECK_U64(c.stripe_size, 1 * GiB, "raid10 odd stripe");
	CHECK_U64(c.length, 2 * GiB, "raid10 odd length (2 data stripes)");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 5, DATA | RAID10, &old, &c), 0, "raid10 odd old");
	check_devids(&c, old_order, 4, "raid10 odd, pre-6.9 order");
	bx_alloc_chunk_release(&c);

	CHECK_INT(bx_alloc_decide(d, 2, META | RAID1, NULL, &c), 0, "two equal");
	check_devids(&c, two, 2, "two equal devices");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 2, META | RAID1, &old, &c), 0, "two equal old");
	check_devids(&c, two, 2, "two equal devices, pre-6.9");
	bx_alloc_chunk_release(&c);

	/* raid10 on 3 devices: 2 of them, 1 data stripe. */
	CHECK_INT(bx_alloc_decide(d, 3, DATA | RAID10, NULL, &c), 0, "raid10 on 3");
	CHECK_INT(c.ndevs, 2, "raid10 on 3 uses 2");
	CHECK_U64(c.length, 1 * GiB, "raid10 on 3 length");
	bx_alloc_chunk_release(&c);
	freedevs(d, 5);
}

static void test_enospc(void)
{
	struct bx_alloc_device d[3];
	struct bx_alloc_chunk c;
	static const uint64_t sz[3] = { 10 * GiB, 20 * GiB, 30 * GiB };
	struct bx_alloc_hole tiny = { 5 * MiB, 32 * 1024 }, small = { 5 * MiB, 100 * 1024 };

	mkdevs(d, 3, sz, NULL);
	CHECK_INT(bx_alloc_decide(d, 2, DATA | RAID1C3, NULL, &c), -ENOSPC, "raid1c3 on 2");
	CHECK_INT(bx_alloc_decide(d, 3, DATA | RAID1C4, NULL, &c), -ENOSPC, "raid1c4 on 3");
	CHECK_INT(bx_alloc_decide(d, 2, DATA | RAID6, NULL, &c), -ENOSPC, "raid6 on 2");
	CHECK_INT(bx_alloc_decide(d, 1, DATA | RAID5, NULL, &c), -ENOSPC, "raid5 on 1");
	CHECK_INT(bx_alloc_decide(d, 0, DATA, NULL, &c), -ENOSPC, "no devices");
	CHECK_INT(bx_alloc_decide(d, 3, RAID1, NULL, &c), -EINVAL, "no type");

	/* Read-only devices are not in the alloc list: raid1 uses 2 and 1. */
	d[2].writable = false;
	CHECK_INT(bx_alloc_decide(d, 3, DATA | RAID1, NULL, &c), 0, "ro skipped");
	CHECK_U64(c.stripes[0].devid, 2, "ro skipped: 2 first");
	CHECK_U64(c.stripes[1].devid, 1, "ro skipped: then 1");
	bx_alloc_chunk_release(&c);
	d[1].writable = false;
	CHECK_INT(bx_alloc_decide(d, 3, DATA | RAID1, NULL, &c), -ENOSPC, "one writable");
	d[1].writable = d[2].writable = true;

	/* Holes below the minimum extent (64 KiB, 128 KiB for dup) don't count. */
	bx_alloc_device_set_holes(&d[0], &tiny, 1);
	CHECK_INT(bx_alloc_decide(d, 1, DATA, NULL, &c), -ENOSPC, "32 KiB hole");
	bx_alloc_device_set_holes(&d[0], &small, 1);
	CHECK_INT(bx_alloc_decide(d, 1, DATA, NULL, &c), 0, "100 KiB hole, single");
	CHECK_U64(c.stripe_size, 64 * 1024, "100 KiB hole: 64 KiB stripe");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 1, META | DUP, NULL, &c), -ENOSPC, "100 KiB hole, dup");
	bx_alloc_device_set_holes(&d[0], NULL, 0);
	CHECK_INT(bx_alloc_decide(d, 1, DATA, NULL, &c), -ENOSPC, "full device");
	freedevs(d, 3);
}

/* ---- hints ---- */

static bool chunk_uses(const struct bx_alloc_chunk *c, uint64_t devid)
{
	uint32_t i;

	for (i = 0; i < c->num_stripes; i++)
		if (c->stripes[i].devid == devid)
			return true;
	return false;
}

/*
 * (a) 2 small metadata_only (4, 5 GiB: devids 1, 2) + 3 large data_only
 * (100, 110, 120 GiB: 3, 4, 5). fs 339 GiB: 1 GiB metadata chunks.
 *  - metadata raid1: data_only devices are excluded; tier 1 = {2, 1}
 *    (equal holes, 2 has more avail): stripes 2, 1.
 *  - data single: tier 1 = data_only: devid 5 (largest).
 *  - metadata fill: 4 GiB device: 3 chunks of 1024 + one of 1023 ->
 *    4095 MiB; then devid 2 alone, nothing else allowed: ENOSPC.
 *  - data fill: only the data_only devices, never the metadata ones:
 *    330 GiB - 3 MiB.
 */
static void test_hints_a(void)
{
	static const uint64_t sz[5] = { 4 * GiB, 5 * GiB, 100 * GiB, 110 * GiB, 120 * GiB };
	static const uint64_t hint[5] = { BX_HINT_METADATA_ONLY, BX_HINT_METADATA_ONLY,
					  BX_HINT_DATA_ONLY, BX_HINT_DATA_ONLY, BX_HINT_DATA_ONLY };
	static const uint64_t m[] = { 2, 1 }, dsingle[] = { 5 }, draid1[] = { 5, 4 };
	struct bx_alloc_device d[5];
	struct bx_alloc_chunk c;
	struct bx_alloc_sim_result r;
	uint64_t i;
	bool on_meta = false;

	mkdevs(d, 5, sz, hint);
	CHECK_INT(bx_alloc_decide(d, 5, META | RAID1, NULL, &c), 0, "(a) metadata");
	check_devids(&c, m, 2, "(a) metadata raid1");
	CHECK_U64(c.stripe_size, 1 * GiB, "(a) metadata stripe");
	CHECK(c.flags & BX_ALLOC_F_HINTS, "(a) hints flag");
	CHECK(!(c.flags & BX_ALLOC_F_FALLBACK), "(a) no fallback");
	CHECK_INT(c.tiers, 1 << 1, "(a) tier 1 only");
	bx_alloc_chunk_release(&c);

	CHECK_INT(bx_alloc_decide(d, 5, DATA, NULL, &c), 0, "(a) data");
	check_devids(&c, dsingle, 1, "(a) data single");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 5, DATA | RAID1, NULL, &c), 0, "(a) data raid1");
	check_devids(&c, draid1, 2, "(a) data raid1");
	bx_alloc_chunk_release(&c);

	r = fill(d, 5, META | RAID1, NULL);
	CHECK_U64(r.logical_bytes, 4095 * MiB, "(a) metadata capacity");
	CHECK_U64(r.nr_chunks, 4, "(a) metadata chunks");
	bx_alloc_sim_result_release(&r);

	r = fill(d, 5, DATA, NULL);
	CHECK_U64(r.logical_bytes, 330 * GiB - 3 * MiB, "(a) data capacity");
	for (i = 0; i < r.nr_chunks; i++)
		if (chunk_uses(&r.chunks[i], 1) || chunk_uses(&r.chunks[i], 2))
			on_meta = true;
	CHECK(!on_meta, "(a) no data chunk on a metadata_only device");
	bx_alloc_sim_result_release(&r);

	/* Only excluded devices: metadata on data_only devices is ENOSPC. */
	CHECK_INT(bx_alloc_decide(d + 2, 3, META | RAID1, NULL, &c), -ENOSPC,
		  "(a) only excluded devices");
	CHECK_INT(bx_alloc_decide(d, 2, DATA, NULL, &c), -ENOSPC, "(a) data on metadata_only");
	freedevs(d, 5);
}

/*
 * (b1) SSD 100 GiB metadata_preferred (devid 1) + HDD 1000 GiB
 * data_preferred (2). Metadata tiers: SSD 2, HDD 3; raid1 needs 2, so both
 * tiers are taken and, as both patched kernels do, sorted again by free
 * space: HDD, SSD (as mainline). Capacity: every chunk pairs the SSD with
 * the HDD: 100 GiB - 1 MiB. Data single: HDD (tier 2).
 * (b2) SSD 500 GiB metadata_preferred + HDD 400 GiB: data single fills the
 * HDD first (mainline would start on the bigger SSD): 399 chunks of 1 GiB
 * and one of 1023 MiB on devid 2, then 500 chunks on devid 1 (fallback).
 * Strict: data only on the HDD: 400 GiB - 1 MiB.
 */
static void test_hints_b(void)
{
	static const uint64_t sz1[2] = { 100 * GiB, 1000 * GiB }, sz2[2] = { 500 * GiB, 400 * GiB };
	static const uint64_t hint[2] = { BX_HINT_METADATA_PREFERRED, BX_HINT_DATA_PREFERRED };
	static const uint64_t hdd_ssd[] = { 2, 1 }, hdd[] = { 2 }, ssd[] = { 1 };
	struct bx_alloc_params ignore = { .flags = BX_ALLOC_IGNORE_HINTS };
	struct bx_alloc_params strict = { .flags = BX_ALLOC_STRICT };
	struct bx_alloc_device d[2];
	struct bx_alloc_chunk c;
	struct bx_alloc_sim_result r;
	uint64_t i;
	bool ok = true;

	mkdevs(d, 2, sz1, hint);
	CHECK_INT(bx_alloc_decide(d, 2, META | RAID1, NULL, &c), 0, "(b1) metadata");
	check_devids(&c, hdd_ssd, 2, "(b1) metadata raid1 sorted again by free space");
	CHECK(c.flags & BX_ALLOC_F_FALLBACK, "(b1) fallback to tier 3");
	CHECK_INT(c.tiers, (1 << 2) | (1 << 3), "(b1) tiers 2 and 3");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 2, META | RAID1, &ignore, &c), 0, "(b1) mainline");
	check_devids(&c, hdd_ssd, 2, "(b1) mainline order");
	CHECK_INT(c.flags, 0, "(b1) mainline flags");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 2, DATA, NULL, &c), 0, "(b1) data");
	check_devids(&c, hdd, 1, "(b1) data on the HDD");
	bx_alloc_chunk_release(&c);
	r = fill(d, 2, META | RAID1, NULL);
	CHECK_U64(r.logical_bytes, 100 * GiB - 1 * MiB, "(b1) metadata capacity");
	bx_alloc_sim_result_release(&r);
	freedevs(d, 2);

	mkdevs(d, 2, sz2, hint);
	CHECK_INT(bx_alloc_decide(d, 2, DATA, &ignore, &c), 0, "(b2) mainline data");
	check_devids(&c, ssd, 1, "(b2) mainline picks the bigger SSD");
	bx_alloc_chunk_release(&c);
	r = fill(d, 2, DATA, NULL);
	CHECK_U64(r.nr_chunks, 900, "(b2) chunks");
	CHECK_U64(r.logical_bytes, 900 * GiB - 2 * MiB, "(b2) data capacity");
	for (i = 0; i < r.nr_chunks && i < 900; i++)
		if (r.chunks[i].stripes[0].devid != (i < 400 ? 2 : 1))
			ok = false;
	CHECK(ok, "(b2) 400 chunks on the HDD, then the SSD");
	CHECK_U64(r.chunks[399].length, 1023 * MiB, "(b2) HDD's last chunk");
	CHECK(!(r.chunks[0].flags & BX_ALLOC_F_FALLBACK), "(b2) HDD: preferred tier");
	CHECK(r.chunks[400].flags & BX_ALLOC_F_FALLBACK, "(b2) SSD: fallback");
	bx_alloc_sim_result_release(&r);
	r = fill(d, 2, DATA, &strict);
	CHECK_U64(r.logical_bytes, 400 * GiB - 1 * MiB, "(b2) strict data capacity");
	bx_alloc_sim_result_release(&r);
	freedevs(d, 2);
}

static bool same_chunks(const struct bx_alloc_sim_result *a, const struct bx_alloc_sim_result *b)
{
	uint64_t i;
	uint32_t j;

	if (a->nr_chunks != b->nr_chunks || a->logical_bytes != b->logical_bytes)
		return false;
	for (i = 0; i < a->nr_chunks; i++) {
		const struct bx_alloc_chunk *x = &a->chunks[i], *y = &b->chunks[i];

		if (x->length != y->length || x->stripe_size != y->stripe_size ||
		    x->num_stripes != y->num_stripes)
			return false;
		for (j = 0; j < x->num_stripes; j++)
			if (x->stripes[j].devid != y->stripes[j].devid ||
			    x->stripes[j].physical != y->stripes[j].physical)
				return false;
	}
	return true;
}

/*
 * (c) All devices in one class: the result is the hint kernel's with no hint
 * set, chunk for chunk, for every profile. All data_only: metadata has
 * nowhere to go.
 */
static void test_hints_c(void)
{
	static const uint64_t profiles[] = { 0, RAID0, RAID1, RAID1C3, RAID1C4, RAID10,
					     RAID5, RAID6, DUP };
	static const uint64_t kinds[] = { DATA, META, SYS };
	struct bx_alloc_params hint_kernel = { .flags = BX_ALLOC_HINT_KERNEL };
	struct bx_alloc_params ignore = { .flags = BX_ALLOC_IGNORE_HINTS | BX_ALLOC_HINT_KERNEL };
	uint64_t h;
	size_t i, k;

	for (h = 0; h <= BX_HINT_NONE; h++) {
		uint64_t hints[4] = { h, h, h, h };
		struct bx_alloc_device d[4];

		mkdevs(d, 4, sizes_1236, hints);
		for (k = 0; k < 3; k++) {
			for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
				uint64_t type = kinds[k] | profiles[i];
				struct bx_alloc_sim_result a, b;
				int excluded = bx_alloc_hint_tier(h, type, 0, NULL) == BX_TIER_NEVER;
				char what[96];

				a = fill(d, 4, type, &hint_kernel);
				b = fill(d, 4, type, &ignore);
				snprintf(what, sizeof(what), "(c) hint %" PRIu64 " type 0x%" PRIx64,
					 h, type);
				if (excluded)
					CHECK_U64(a.nr_chunks, 0, what);
				else
					CHECK(same_chunks(&a, &b), "%s: same as with no hint", what);
				bx_alloc_sim_result_release(&a);
				bx_alloc_sim_result_release(&b);
			}
		}
		freedevs(d, 4);
	}
}

/*
 * (d) A full preferred tier falling back. Metadata raid1 on devid 1
 * metadata_only 1 GiB, 2 metadata_only 2 GiB, 3 data_preferred 10 GiB,
 * 4 data_preferred 11 GiB. fs 24 GiB: 256 MiB metadata chunks.
 *  - chunks 1-4 on tier 1 {2, 1}: 256, 256, 256, then devid 1's last 255.
 *  - devid 1 full: tier 1 has one device, so tier 3 is taken too, and the
 *    three are sorted again by free space, as both patched kernels do: 4 and
 *    3 come first, so the next chunks go to the data_preferred devices while
 *    the metadata_only devid 2 still has 1 GiB free (it joins once 3 and 4
 *    are down to its free space).
 *  Total 1023 + 1024 + 10239 = 12286 MiB. Every chunk from the 5th on is a
 *  fallback: tier 1 alone cannot hold a raid1 chunk any more.
 */
static void test_hints_d(void)
{
	static const uint64_t sz[4] = { 1 * GiB, 2 * GiB, 10 * GiB, 11 * GiB };
	static const uint64_t hint[4] = { BX_HINT_METADATA_ONLY, BX_HINT_METADATA_ONLY, 0, 0 };
	static const uint64_t t1[] = { 2, 1 }, by_free_space[] = { 4, 3 };
	struct bx_alloc_device d[4];
	struct bx_alloc_sim_result r;
	uint64_t i;
	bool ok = true;

	mkdevs(d, 4, sz, hint);
	r = fill(d, 4, META | RAID1, NULL);
	CHECK_U64(r.logical_bytes, 12286 * MiB, "(d) metadata capacity");
	if (r.nr_chunks > 8) {
		for (i = 0; i < 4; i++) {
			check_devids(&r.chunks[i], t1, 2, "(d) tier 1");
			CHECK(!(r.chunks[i].flags & BX_ALLOC_F_FALLBACK), "(d) tier 1: no fallback");
		}
		CHECK_U64(r.chunks[3].stripe_size, 255 * MiB, "(d) devid 1's last 255 MiB");
		check_devids(&r.chunks[4], by_free_space, 2, "(d) tier 1 + tier 3 by free space");
		CHECK_INT(r.chunks[4].tiers, 1 << 3, "(d) tier 3 devices only");
		for (i = 4; i < r.nr_chunks; i++)
			if (!(r.chunks[i].flags & BX_ALLOC_F_FALLBACK) || chunk_uses(&r.chunks[i], 1))
				ok = false;
		CHECK(ok, "(d) fallbacks from the 5th chunk on, never devid 1 again");
		for (i = 4, ok = false; i < r.nr_chunks; i++)
			ok |= chunk_uses(&r.chunks[i], 2);
		CHECK(ok, "(d) devid 2 used again once 3 and 4 are down to its free space");
	} else {
		CHECK(false, "(d) too few chunks: %zu", (size_t)r.nr_chunks);
	}
	bx_alloc_sim_result_release(&r);
	freedevs(d, 4);
}

/*
 * (e) Both patched kernels sort the taken tiers again by free space, raid1
 * family included ("RAID1 keeps the tier order", as the project's first
 * description said, is not what they do;
 * tests/vm/test_vm_allocator.py compares chunk by chunk): NVMe 100 GiB
 * metadata_preferred (devid 1) + HDDs 1000, 1100, 1200 GiB (2, 3, 4). Tier 2
 * has one device, tier 3 three: all taken, sorted by space: 4, 3, 2; raid1c3
 * takes three and the NVMe is left out.
 * raid10 data with a 2 GiB data_only device (1) and data_preferred 10 and
 * 11 GiB (2, 3): tier 1 has one device (< 2), tier 2 is added, the three are
 * sorted by space (3, 2, 1) and rounded down to two: 3, 2; the data_only
 * device is not used. raid1 on the same devices: the same two.
 */
static void test_hints_e(void)
{
	static const uint64_t sz[4] = { 100 * GiB, 1000 * GiB, 1100 * GiB, 1200 * GiB };
	static const uint64_t hint[4] = { BX_HINT_METADATA_PREFERRED, 0, 0, 0 };
	static const uint64_t sz2[3] = { 2 * GiB, 10 * GiB, 11 * GiB };
	static const uint64_t hint2[3] = { BX_HINT_DATA_ONLY, 0, 0 };
	static const uint64_t hdds[] = { 4, 3, 2 }, r10[] = { 3, 2 };
	struct bx_alloc_device d[4];
	struct bx_alloc_chunk c;

	mkdevs(d, 4, sz, hint);
	CHECK_INT(bx_alloc_decide(d, 4, META | RAID1C3, NULL, &c), 0, "(e) raid1c3");
	check_devids(&c, hdds, 3, "(e) raid1c3 by free space: the NVMe left out");
	bx_alloc_chunk_release(&c);
	freedevs(d, 4);

	mkdevs(d, 3, sz2, hint2);
	CHECK_INT(bx_alloc_decide(d, 3, DATA | RAID10, NULL, &c), 0, "(e) raid10");
	check_devids(&c, r10, 2, "(e) raid10 re-sorted by space");
	CHECK(c.flags & BX_ALLOC_F_FALLBACK, "(e) raid10 fallback");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_decide(d, 3, DATA | RAID1, NULL, &c), 0, "(e) raid1");
	check_devids(&c, r10, 2, "(e) raid1 by free space");
	bx_alloc_chunk_release(&c);
	freedevs(d, 3);
}

/*
 * Mixed block groups ignore hints; unknown hint values are ordered as
 * data_preferred and reported.
 */
static void test_hints_misc(void)
{
	static const uint64_t sz[2] = { 10 * GiB, 20 * GiB };
	static const uint64_t hint[2] = { BX_HINT_DATA_ONLY, BX_HINT_METADATA_ONLY };
	static const uint64_t sz2[2] = { 20 * GiB, 30 * GiB };
	static const uint64_t hint2[2] = { 7, BX_HINT_METADATA_PREFERRED };
	static const uint64_t two[] = { 2 }, one[] = { 1 };
	struct bx_alloc_device d[2];
	struct bx_alloc_chunk c;
	bool unknown = false;

	/* Mixed: mainline picks devid 2 (more space) though it is metadata_only. */
	mkdevs(d, 2, sz, hint);
	CHECK_INT(bx_alloc_decide(d, 2, DATA | META, NULL, &c), 0, "mixed");
	check_devids(&c, two, 1, "mixed ignores hints");
	CHECK(!(c.flags & BX_ALLOC_F_HINTS), "mixed: no hints flag");
	bx_alloc_chunk_release(&c);
	/* Data: devid 1, the only data device. */
	CHECK_INT(bx_alloc_decide(d, 2, DATA, NULL, &c), 0, "data with hints");
	check_devids(&c, one, 1, "data_only device");
	bx_alloc_chunk_release(&c);
	freedevs(d, 2);

	/*
	 * Devid 1 hint 7 (unknown: data_preferred, tier 2 for data), devid 2
	 * metadata_preferred (tier 3): data goes to devid 1 though devid 2 is
	 * bigger; the unknown value is flagged.
	 */
	mkdevs(d, 2, sz2, hint2);
	CHECK_INT(bx_alloc_decide(d, 2, DATA, NULL, &c), 0, "unknown hint");
	check_devids(&c, one, 1, "unknown hint ordered as data_preferred");
	CHECK(c.flags & BX_ALLOC_F_UNKNOWN_HINT, "unknown hint flagged");
	bx_alloc_chunk_release(&c);
	CHECK_INT(bx_alloc_hint_tier(7, META, 0, &unknown), 3, "unknown: metadata tier 3");
	CHECK(unknown, "unknown reported");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_NONE, DATA, 0, NULL), 4, "none: last resort");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_DATA_PREFERRED, DATA, BX_ALLOC_STRICT, NULL), 1,
		  "strict data_preferred = data_only");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_DATA_PREFERRED, META, BX_ALLOC_STRICT, NULL),
		  BX_TIER_NEVER, "strict: no metadata on data_preferred");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_DATA_ONLY, SYS | RAID1, 0, NULL), BX_TIER_NEVER,
		  "system chunks follow metadata");
	freedevs(d, 2);
}

/* One decision on @d: it succeeds and takes @want's devices. */
static void expect_devids(struct bx_alloc_device *d, size_t n, uint64_t type,
			  const struct bx_alloc_params *p, const uint64_t *want, size_t nr_want,
			  const char *what)
{
	struct bx_alloc_chunk c;

	CHECK_INT(bx_alloc_decide(d, n, type, p, &c), 0, what);
	check_devids(&c, want, nr_want, what);
	bx_alloc_chunk_release(&c);
}

/*
 * BX_ALLOC_DATA_ONLY_LAST (the hint patches' char map on kernels built with
 * -funsigned-char, 6.2 on; the 6.12 guests place every chunk so): for data
 * chunks data_only is the last tier, after data_preferred, metadata_preferred
 * and none; metadata keeps its order. Devices 1..4: data_only 10 GiB,
 * data_preferred 20, metadata_preferred 30, none 40.
 */
static void test_hints_data_only_last(void)
{
	static const uint64_t sz[4] = { 10 * GiB, 20 * GiB, 30 * GiB, 40 * GiB };
	static const uint64_t hint[4] = { BX_HINT_DATA_ONLY, BX_HINT_DATA_PREFERRED,
					  BX_HINT_METADATA_PREFERRED, BX_HINT_NONE };
	static const uint64_t one[] = { 1 }, two[] = { 2 }, r1[] = { 2, 1 }, r1_last[] = { 3, 2 },
			      meta[] = { 3, 2 };
	struct bx_alloc_params last = { .flags = BX_ALLOC_DATA_ONLY_LAST };
	struct bx_alloc_device d[4];

	CHECK_INT(bx_alloc_hint_tier(BX_HINT_DATA_ONLY, DATA, BX_ALLOC_DATA_ONLY_LAST, NULL), 4,
		  "data_only last for data");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_NONE, DATA, BX_ALLOC_DATA_ONLY_LAST, NULL), 3,
		  "none before it");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_METADATA_ONLY, DATA, BX_ALLOC_DATA_ONLY_LAST, NULL),
		  BX_TIER_NEVER, "metadata_only still excluded");
	CHECK_INT(bx_alloc_hint_tier(BX_HINT_DATA_ONLY, META, BX_ALLOC_DATA_ONLY_LAST, NULL),
		  BX_TIER_NEVER, "no metadata on data_only");
	mkdevs(d, 4, sz, hint);
	expect_devids(d, 4, DATA, NULL, one, 1, "data on data_only");
	expect_devids(d, 4, DATA, &last, two, 1, "data on data_preferred");
	expect_devids(d, 4, DATA | RAID1, NULL, r1, 2, "data raid1: data_only, data_preferred");
	expect_devids(d, 4, DATA | RAID1, &last, r1_last, 2,
		      "data raid1: data_preferred, metadata_preferred");
	expect_devids(d, 4, META | RAID1, &last, meta, 2, "metadata as without the flag");
	freedevs(d, 4);
}

/* ---- the simulation equals decide + apply, step by step ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_sim_equals_decide(void)
{
	static const uint64_t profiles[] = { 0, RAID0, RAID1, RAID1C3, RAID1C4, RAID10,
					     RAID5, RAID6, DUP };
	static const uint64_t kinds[] = { DATA, META, SYS, DATA | META };
	int round, mismatches = 0, steps_total = 0;

	for (round = 0; round < 300; round++) {
		struct bx_alloc_device d[10];
		struct bx_alloc_params p = { 0 };
		struct bx_alloc_sim *sim;
		size_t n = 1 + rnd() % 10, i;
		int step;

		p.flags = (uint32_t)(rnd() % 8) & (BX_ALLOC_STRICT | BX_ALLOC_SORT_PRE_6_9 |
						   BX_ALLOC_IGNORE_HINTS);
		if (rnd() % 4 == 0)
			p.fs_total_bytes = (1 + rnd() % 200) * GiB;
		for (i = 0; i < n; i++) {
			/* Sizes from 1 MiB to 64 GiB, 4 KiB aligned, some equal. */
			uint64_t size = rnd() % 3 == 0 ? 8 * GiB : (1 + rnd() % (16 * 1024 * 1024)) * 4096;
			int e, ne = (int)(rnd() % 20);

			bx_alloc_device_init(&d[i], i + 1, size, rnd() % 7);
			d[i].writable = rnd() % 10 != 0;
			/* Random existing extents: fragmented free space. */
			for (e = 0; e < ne; e++) {
				uint64_t s = rnd() % size, l = 1 + rnd() % (size / 8 + 1);

				bx_alloc_device_add_extent(&d[i], s, l);
			}
		}
		if (bx_alloc_sim_new(d, n, &p, &sim)) {
			failed++;
			break;
		}
		uint64_t type = 0;

		for (step = 0; step < 400; step++) {
			/* Runs of one type, so that replays start and get cut off. */
			if (step == 0 || rnd() % 8 == 0)
				type = kinds[rnd() % 4] | profiles[rnd() % 9];
			struct bx_alloc_chunk a, b;
			int ra, rb;
			uint32_t j;

			ra = bx_alloc_decide(d, n, type, &p, &a);
			rb = bx_alloc_sim_step(sim, type, &b);
			steps_total++;
			if (ra != rb) {
				mismatches++;
				printf("mismatch round %d step %d: decide %d sim %d\n", round, step, ra, rb);
				break;
			}
			if (ra) {
				if (rnd() % 3 == 0)
					break;
				type = kinds[rnd() % 4] | profiles[rnd() % 9];
				continue;
			}
			if (a.length != b.length || a.stripe_size != b.stripe_size ||
			    a.num_stripes != b.num_stripes || a.flags != b.flags || a.tiers != b.tiers)
				mismatches++;
			else
				for (j = 0; j < a.num_stripes; j++)
					if (a.stripes[j].devid != b.stripes[j].devid ||
					    a.stripes[j].physical != b.stripes[j].physical)
						mismatches++;
			if (bx_alloc_apply(d, n, &a))
				mismatches++;
			bx_alloc_chunk_release(&a);
		}
		for (i = 0; i < n; i++)
			if (bx_alloc_sim_unallocated(sim, i) != bx_alloc_device_unallocated(&d[i]))
				mismatches++;
		bx_alloc_sim_free(sim);
		freedevs(d, n);
	}
	CHECK_INT(mismatches, 0, "simulation == decide + apply");
	CHECK(steps_total > 1000, "enough random steps (%d)", steps_total);
}

/*
 * Whole fills: bx_alloc_simulate() (which detects repeating periods and
 * replays them without sorting) against a plain decide + apply loop, chunk
 * by chunk, on random filesystems: equal devices (ties, round-robins),
 * a few sizes, random sizes, fragmented free space, hints, both sorts.
 */
static void test_fill_equals_reference(void)
{
	static const uint64_t profiles[] = { 0, RAID0, RAID1, RAID1C3, RAID1C4, RAID10,
					     RAID5, RAID6, DUP };
	static const uint64_t kinds[] = { DATA, DATA, META, SYS };
	int round, bad_rounds = 0, rounds = 400;
	uint64_t chunks = 0;

	/* ALLOC_ROUNDS (and ALLOC_SEED, see main()): longer runs by hand. */
	if (getenv("ALLOC_ROUNDS"))
		rounds = atoi(getenv("ALLOC_ROUNDS"));
	for (round = 0; round < rounds; round++) {
		struct bx_alloc_device d[12], ref[12];
		struct bx_alloc_params p = { 0 };
		struct bx_alloc_sim_result r;
		size_t n = 1 + rnd() % 12, i;
		int shape = (int)(rnd() % 4), hinted = rnd() % 3 == 0;
		uint64_t type = kinds[rnd() % 4] | profiles[rnd() % 9], k;
		uint64_t budget = (type & SYS) ? 8 * GiB : (type & DATA) ? 400 * GiB : 60 * GiB;
		bool ok = true;

		p.flags = (uint32_t)(rnd() % 4) & (BX_ALLOC_STRICT | BX_ALLOC_SORT_PRE_6_9);
		for (i = 0; i < n; i++) {
			uint64_t size;

			if (shape == 0)
				size = budget / n;
			else if (shape == 1)
				size = (1 + rnd() % 3) * (budget / n / 2);
			else
				size = (1 + rnd() % (budget / n / (64 * 1024))) * 64 * 1024;
			bx_alloc_device_init(&d[i], i + 1, size, hinted ? rnd() % 6 : 0);
			if (shape == 3) {
				int e;

				for (e = 0; e < 8; e++)
					bx_alloc_device_add_extent(&d[i], rnd() % size,
								   1 + rnd() % (size / 16 + 1));
			}
			bx_alloc_device_init(&ref[i], i + 1, size, d[i].hint);
			bx_alloc_device_set_holes(&ref[i], d[i].holes, d[i].nr_holes);
			ref[i].bytes_used = d[i].bytes_used;
		}
		if (bx_alloc_simulate(d, n, type, &p, true, &r)) {
			failed++;
			break;
		}
		for (k = 0; ok; k++) {
			struct bx_alloc_chunk a;
			const struct bx_alloc_chunk *b = k < r.nr_chunks ? &r.chunks[k] : NULL;
			uint32_t j;
			int ret = bx_alloc_decide(ref, n, type, &p, &a);

			if (ret) {
				ok = ret == -ENOSPC && !b;
				if (!ok && getenv("ALLOC_DEBUG"))
					printf("decide %d at chunk %" PRIu64 ", simulation has %" PRIu64 "\n",
					       ret, k, r.nr_chunks);
				break;
			}
			if (!b || a.length != b->length || a.stripe_size != b->stripe_size ||
			    a.num_stripes != b->num_stripes || a.flags != b->flags ||
			    a.tiers != b->tiers)
				ok = false;
			for (j = 0; ok && j < a.num_stripes; j++)
				if (a.stripes[j].devid != b->stripes[j].devid ||
				    a.stripes[j].physical != b->stripes[j].physical)
					ok = false;
			if (!ok && getenv("ALLOC_DEBUG")) {
				printf("flags %u sizes:", p.flags);
				for (i = 0; i < n; i++)
					printf(" %" PRIu64 "/%" PRIu64 "/h%" PRIu64, ref[i].total_bytes >> 20,
					       bx_alloc_device_unallocated(&ref[i]) >> 20, ref[i].hint);
				printf("\nref:");
				for (j = 0; j < a.num_stripes; j++)
					printf(" %" PRIu64 "@%" PRIu64, a.stripes[j].devid, a.stripes[j].physical >> 20);
				printf(" len %" PRIu64 "\nsim:", a.length >> 20);
				for (j = 0; b && j < b->num_stripes; j++)
					printf(" %" PRIu64 "@%" PRIu64, b->stripes[j].devid, b->stripes[j].physical >> 20);
				printf(" len %" PRIu64 "\n", b ? b->length >> 20 : 0);
			}
			bx_alloc_apply(ref, n, &a);
			bx_alloc_chunk_release(&a);
		}
		if (!ok) {
			bad_rounds++;
			printf("fill mismatch: round %d type 0x%" PRIx64 " devices %zu shape %d chunk %"
			       PRIu64 "\n", round, type, n, shape, k);
		}
		chunks += r.nr_chunks;
		bx_alloc_sim_result_release(&r);
		freedevs(d, n);
		freedevs(ref, n);
	}
	CHECK_INT(bad_rounds, 0, "fills equal decide + apply");
	CHECK(chunks > 20000, "enough chunks compared (%" PRIu64 ")", chunks);
}

/* ---- speed ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * 1 PiB over 24 devices, filled with data. Timed, not asserted; the
 * capacity is checked: equal devices of S bytes each lose 1 MiB at the front.
 */
static void test_speed(void)
{
	static const struct {
		const char *name;
		uint64_t type;
	} runs[] = {
		{ "single", DATA }, { "raid0", DATA | RAID0 }, { "raid1", DATA | RAID1 },
		{ "raid10", DATA | RAID10 }, { "raid6", DATA | RAID6 },
		{ "raid1c3", DATA | RAID1C3 },
	};
	struct bx_alloc_device d[24];
	uint64_t size = PiB / 24 / MiB * MiB, sizes[24];
	size_t i, k;

	for (i = 0; i < 24; i++)
		sizes[i] = size;
	mkdevs(d, 24, sizes, NULL);
	for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct bx_alloc_sim_result r;
		double t0 = now(), t;

		bx_alloc_simulate(d, 24, runs[k].type, NULL, false, &r);
		t = now() - t0;
		printf("1 PiB / 24 equal devices, %-7s: %.3f s, %" PRIu64 " chunks, %" PRIu64
		       " GiB\n", runs[k].name, t, r.nr_chunks, (uint64_t)(r.logical_bytes / GiB));
		if (runs[k].type == DATA)
			CHECK_U64(r.logical_bytes, 24 * (size - MiB), "1 PiB single capacity");
		bx_alloc_sim_result_release(&r);
	}
	freedevs(d, 24);

	/* Uneven: 24 devices from 10 to 79 TiB-ish, 1 PiB in total. */
	{
		uint64_t total = 0;
		struct bx_alloc_sim_result r;
		double t0, t;

		for (i = 0; i < 24; i++) {
			sizes[i] = (10 + (i * 37) % 70) * TiB;
			total += sizes[i];
		}
		for (i = 0; i < 24; i++)
			sizes[i] = (uint64_t)((double)sizes[i] / (double)total * (double)PiB) / MiB * MiB;
		mkdevs(d, 24, sizes, NULL);
		for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
			t0 = now();
			bx_alloc_simulate(d, 24, runs[k].type, NULL, k == 0, &r);
			t = now() - t0;
			printf("1 PiB / 24 uneven devices, %-7s: %.3f s, %" PRIu64 " chunks, %" PRIu64
			       " GiB%s\n", runs[k].name, t, r.nr_chunks, (uint64_t)(r.logical_bytes / GiB),
			       k == 0 ? " (chunk list recorded)" : "");
			bx_alloc_sim_result_release(&r);
		}
		freedevs(d, 24);
	}

	/*
	 * With hints: 4 metadata_only (2 TiB), 4 metadata_preferred (8 TiB),
	 * 16 data_preferred (40..69 TiB): about 0.9 PiB.
	 */
	{
		static const struct {
			const char *name;
			uint64_t type;
		} hruns[] = {
			{ "data single", DATA }, { "data raid1", DATA | RAID1 },
			{ "data raid10", DATA | RAID10 }, { "meta raid1c3", META | RAID1C3 },
		};
		uint64_t hints[24];
		struct bx_alloc_sim_result r;
		double t0, t;

		for (i = 0; i < 24; i++) {
			hints[i] = i < 4 ? BX_HINT_METADATA_ONLY : i < 8 ? BX_HINT_METADATA_PREFERRED : 0;
			sizes[i] = i < 4 ? 2 * TiB : i < 8 ? 8 * TiB : (40 + (i * 13) % 30) * TiB;
		}
		mkdevs(d, 24, sizes, hints);
		for (k = 0; k < sizeof(hruns) / sizeof(hruns[0]); k++) {
			t0 = now();
			bx_alloc_simulate(d, 24, hruns[k].type, NULL, false, &r);
			t = now() - t0;
			printf("0.9 PiB / 24 hinted devices, %-12s: %.3f s, %" PRIu64 " chunks, %" PRIu64
			       " GiB\n", hruns[k].name, t, r.nr_chunks, (uint64_t)(r.logical_bytes / GiB));
			bx_alloc_sim_result_release(&r);
		}
		freedevs(d, 24);
	}
}

int main(void)
{
	if (getenv("ALLOC_SEED"))
		rng_state = strtoull(getenv("ALLOC_SEED"), NULL, 0) * 2654435761ULL + 1;
	test_limits();
	test_first_chunks();
	test_fill_uneven();
	test_dup_one_device();
	test_ten_percent();
	test_holes();
	test_ties();
	test_enospc();
	test_hints_a();
	test_hints_b();
	test_hints_c();
	test_hints_d();
	test_hints_e();
	test_hints_misc();
	test_hints_data_only_last();
	test_sim_equals_decide();
	test_fill_equals_reference();
	test_speed();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
