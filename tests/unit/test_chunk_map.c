/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logical -> physical mapping for every profile, against layouts worked out
 * by hand from the format's striping rules (64 KiB stripes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/allocator.h"
#include "disk/volumes.h"
#include "tests/unit/unit.h"

#define K 1024ULL
#define M (1024 * K)
#define STRIPE (64 * K)

static struct btrfs_chunk *make_chunk(uint64_t length, uint64_t type, int num_stripes,
				      int sub_stripes)
{
	struct btrfs_chunk *c = calloc(1, btrfs_chunk_item_size(num_stripes));

	c->length = htole64(length);
	c->stripe_len = htole64(STRIPE);
	c->type = htole64(type);
	c->num_stripes = htole16((uint16_t)num_stripes);
	c->sub_stripes = htole16((uint16_t)sub_stripes);
	for (int i = 0; i < num_stripes; i++) {
		c->stripe[i].devid = htole64((uint64_t)i + 1);
		c->stripe[i].offset = htole64((uint64_t)(i + 1) * 100 * M);
	}
	return c;
}

static void add_chunk(struct bx_fs *fs, uint64_t logical, uint64_t length, uint64_t type,
		      int num_stripes, int sub_stripes)
{
	struct btrfs_chunk *c = make_chunk(length, type, num_stripes, sub_stripes);

	CHECK(bx_check_chunk_item(c, btrfs_chunk_item_size(num_stripes), 4096) == 0);
	CHECK(bx_chunk_map_insert(fs, logical, c) == 0);
	free(c);
}

/* Maps and checks devid, physical and the contiguous length. */
static void expect_map(struct bx_fs *fs, uint64_t logical, int mirror, uint64_t devid,
		       uint64_t physical, uint64_t len)
{
	struct bx_stripe_loc loc = { 0 };
	uint64_t got_len = 1 << 30;

	CHECK(bx_map_logical(fs, logical, &got_len, mirror, &loc) == 0);
	CHECK_EQ_U64(loc.devid, devid);
	CHECK_EQ_U64(loc.physical, physical);
	CHECK_EQ_U64(got_len, len);
}

static void test_single_dup_raid1(struct bx_fs *fs)
{
	uint64_t base = 1ULL << 30;

	add_chunk(fs, base, 8 * M, BTRFS_BLOCK_GROUP_DATA, 1, 0);
	expect_map(fs, base + 12345, 1, 1, 100 * M + 12345, 8 * M - 12345);
	CHECK_EQ_U64(bx_num_copies(fs, base), 1);

	add_chunk(fs, base + 8 * M, 8 * M, BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 2, 0);
	expect_map(fs, base + 8 * M + 4096, 2, 2, 200 * M + 4096, 8 * M - 4096);
	CHECK_EQ_U64(bx_num_copies(fs, base + 8 * M), 2);

	add_chunk(fs, base + 16 * M, 8 * M, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1C3, 3, 0);
	expect_map(fs, base + 16 * M, 3, 3, 300 * M, 8 * M);
	CHECK_EQ_U64(bx_num_copies(fs, base + 16 * M), 3);
}

static void test_raid0_raid10(struct bx_fs *fs)
{
	uint64_t base = 2ULL << 30;

	/* raid0 over 3: stripe n on device n % 3 at row n / 3. */
	add_chunk(fs, base, 3 * M, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID0, 3, 0);
	expect_map(fs, base + 4 * STRIPE + 100, 1, 2, 200 * M + STRIPE + 100, STRIPE - 100);

	/* raid10 over 4 (2 groups of 2): stripe 3 -> group 1 (devs 3,4), row 1. */
	add_chunk(fs, base + 3 * M, 4 * M, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID10, 4, 2);
	expect_map(fs, base + 3 * M + 3 * STRIPE, 1, 3, 300 * M + STRIPE, STRIPE);
	expect_map(fs, base + 3 * M + 3 * STRIPE, 2, 4, 400 * M + STRIPE, STRIPE);
	expect_map(fs, base + 3 * M + 2 * STRIPE + 5, 2, 2, 200 * M + STRIPE + 5, STRIPE - 5);
}

static void test_raid56(struct bx_fs *fs)
{
	uint64_t base = 3ULL << 30;
	struct bx_full_stripe fstripe;

	/* raid5 over 3: 2 data stripes per row; row r rotates by r. */
	add_chunk(fs, base, 4 * M, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID5, 3, 0);
	expect_map(fs, base, 1, 1, 100 * M, STRIPE);
	expect_map(fs, base + STRIPE, 1, 2, 200 * M, STRIPE);
	/* Row 1: data 0 on device (1+0)%3 = dev 2, data 1 on dev 3, P on dev 1. */
	expect_map(fs, base + 2 * STRIPE + 7, 1, 2, 200 * M + STRIPE + 7, STRIPE - 7);
	expect_map(fs, base + 3 * STRIPE, 1, 3, 300 * M + STRIPE, STRIPE);
	CHECK(bx_map_full_stripe(fs, base + 3 * STRIPE, &fstripe) == 0);
	CHECK_EQ_U64(fstripe.nr_data, 2);
	CHECK_EQ_U64(fstripe.stripes[2].devid, 1);
	CHECK_EQ_U64(fstripe.stripes[2].physical, 100 * M + STRIPE);
	CHECK_EQ_U64(bx_num_copies(fs, base), 2);

	/* raid6 over 4: P and Q follow the data stripes, rotated. */
	add_chunk(fs, base + 4 * M, 4 * M, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID6, 4, 0);
	CHECK(bx_map_full_stripe(fs, base + 4 * M + 2 * STRIPE, &fstripe) == 0);
	CHECK_EQ_U64(fstripe.logical_start, base + 4 * M + 2 * STRIPE);
	CHECK_EQ_U64(fstripe.stripes[0].devid, 2);
	CHECK_EQ_U64(fstripe.stripes[2].devid, 4);  /* P */
	CHECK_EQ_U64(fstripe.stripes[3].devid, 1);  /* Q */
	CHECK_EQ_U64(bx_num_copies(fs, base + 4 * M), 3);
}

static void test_bad_chunks(struct bx_fs *fs)
{
	struct btrfs_chunk *c = make_chunk(8 * M, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1, 1, 0);
	struct bx_stripe_loc loc;
	uint64_t len = 4096;

	CHECK(bx_check_chunk_item(c, btrfs_chunk_item_size(1), 4096) < 0);
	c->type = htole64(BTRFS_BLOCK_GROUP_RAID1);
	CHECK(bx_check_chunk_item(c, btrfs_chunk_item_size(1), 4096) < 0);
	c->type = htole64(BTRFS_BLOCK_GROUP_DATA);
	CHECK(bx_check_chunk_item(c, sizeof(*c), 4096) < 0);
	c->stripe_len = htole64(4096);
	CHECK(bx_check_chunk_item(c, btrfs_chunk_item_size(1), 4096) < 0);
	free(c);
	/* Overlapping chunk is refused, unmapped addresses and mirrors are errors. */
	c = make_chunk(8 * M, BTRFS_BLOCK_GROUP_DATA, 1, 0);
	CHECK(bx_chunk_map_insert(fs, (1ULL << 30) + 4 * M, c) < 0);
	free(c);
	CHECK(bx_map_logical(fs, 12345, &len, 1, &loc) == -ENOENT);
	CHECK(bx_map_logical(fs, 1ULL << 30, &len, 2, &loc) == -EINVAL);
}

/* One profile table: every name parses to bits that name it again. */
static void test_profile_names(void)
{
	static const char *const names[] = { "single", "dup", "raid0", "raid1", "raid1c3",
					      "raid1c4", "raid10", "raid5", "raid6" };
	uint64_t bits;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK(bx_profile_parse(names[i], &bits) == 0);
		CHECK(!strcmp(bx_profile_name(bits | BTRFS_BLOCK_GROUP_DATA), names[i]));
	}
	CHECK(bx_profile_parse("RAID1C3", &bits) == 0 && bits == BTRFS_BLOCK_GROUP_RAID1C3);
	CHECK(bx_profile_parse("raid7", &bits) == -EINVAL);
	CHECK(!strcmp(bx_profile_name(BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_DUP), "unknown"));
	CHECK(bx_profile_ncopies(BTRFS_BLOCK_GROUP_RAID1C4) == 4);
	CHECK(bx_profile_ncopies(BTRFS_BLOCK_GROUP_RAID5) == 1);
	CHECK(bx_profile_is_mirrored(BTRFS_BLOCK_GROUP_RAID10));
	CHECK(!bx_profile_is_mirrored(BTRFS_BLOCK_GROUP_DUP));
}

int main(void)
{
	struct bx_fs fs;

	test_profile_names();
	memset(&fs, 0, sizeof(fs));
	test_single_dup_raid1(&fs);
	test_raid0_raid10(&fs);
	test_raid56(&fs);
	test_bad_chunks(&fs);
	for (size_t i = 0; i < fs.chunks.nr; i++)
		free(fs.chunks.chunks[i]);
	free(fs.chunks.chunks);
	return unit_summary();
}
