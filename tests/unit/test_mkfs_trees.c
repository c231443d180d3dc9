/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The in-memory tree builder of mkfs: packing into leaves and nodes, key
 * order, duplicate keys, and rendered blocks (header, item offsets, key
 * pointers, checksum), worked out by hand from the format's sizes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/csum.h"
#include "mkfs/mkfs-trees.h"
#include "tests/unit/unit.h"

#define NODESIZE 4096U

static void add_u64(struct bx_tree_build *tb, uint64_t objectid, uint8_t type, uint64_t offset,
		    uint32_t size)
{
	struct btrfs_key key = { objectid, type, offset };
	uint8_t data[512];

	memset(data, (int)(objectid & 0xff), sizeof(data));
	CHECK(bx_tb_add(tb, &key, data, size) == 0);
}

static void test_empty_tree(void)
{
	struct bx_tree_build tb;

	bx_tb_init(&tb, BTRFS_CSUM_TREE_OBJECTID);
	CHECK(bx_tb_layout(&tb, NODESIZE) == 0);
	CHECK_EQ_U64(tb.nr_blocks, 1);
	CHECK_EQ_U64(tb.level, 0);
	CHECK_EQ_U64(tb.blocks[0].nr, 0);
	bx_tb_release(&tb);
}

/* A leaf of 4096 bytes holds (4096 - 101) / (25 + 100) = 31 items of 100 bytes. */
static void test_leaves_and_nodes(void)
{
	struct bx_tree_build tb;
	const struct bx_tb_block *root;

	bx_tb_init(&tb, BTRFS_EXTENT_TREE_OBJECTID);
	/* Added backwards: the builder sorts. */
	for (int i = 99; i >= 0; i--)
		add_u64(&tb, 1000 + (uint64_t)i, BTRFS_EXTENT_ITEM_KEY, 4096, 100);
	CHECK(bx_tb_layout(&tb, NODESIZE) == 0);
	/* 100 items: leaves of 31, 31, 31, 7, then one node. */
	CHECK_EQ_U64(tb.nr_blocks, 5);
	CHECK_EQ_U64(tb.level, 1);
	CHECK_EQ_U64(tb.blocks[0].nr, 31);
	CHECK_EQ_U64(tb.blocks[3].nr, 7);
	CHECK_EQ_U64(tb.blocks[1].first_key.objectid, 1031);
	root = bx_tb_root(&tb);
	CHECK_EQ_U64(root->level, 1);
	CHECK_EQ_U64(root->nr, 4);
	CHECK_EQ_U64(root->first_key.objectid, 1000);
	bx_tb_release(&tb);
}

/* A node of 4096 bytes holds (4096 - 101) / 33 = 121 pointers: 122 leaves need two levels. */
static void test_two_node_levels(void)
{
	struct bx_tree_build tb;

	bx_tb_init(&tb, BTRFS_DEV_TREE_OBJECTID);
	for (uint64_t i = 0; i < 122 * 31; i++)
		add_u64(&tb, i, BTRFS_DEV_EXTENT_KEY, 0, 100);
	CHECK(bx_tb_layout(&tb, NODESIZE) == 0);
	CHECK_EQ_U64(tb.level, 2);
	/* 122 leaves, 2 level-1 nodes, 1 root. */
	CHECK_EQ_U64(tb.nr_blocks, 125);
	CHECK_EQ_U64(tb.blocks[122].nr, 121);
	CHECK_EQ_U64(tb.blocks[123].nr, 1);
	CHECK_EQ_U64(bx_tb_root(&tb)->nr, 2);
	bx_tb_release(&tb);
}

static void test_duplicates_and_big_items(void)
{
	struct bx_tree_build tb;
	struct btrfs_key key = { 5, BTRFS_ROOT_ITEM_KEY, 0 };
	static uint8_t big[NODESIZE];

	bx_tb_init(&tb, BTRFS_ROOT_TREE_OBJECTID);
	add_u64(&tb, 5, BTRFS_ROOT_ITEM_KEY, 0, 8);
	add_u64(&tb, 5, BTRFS_ROOT_ITEM_KEY, 0, 8);
	CHECK(bx_tb_layout(&tb, NODESIZE) == -EEXIST);
	bx_tb_reset(&tb);
	CHECK(bx_tb_add(&tb, &key, big, NODESIZE - 101 - 25 + 1) == 0);
	CHECK(bx_tb_layout(&tb, NODESIZE) == -E2BIG);
	bx_tb_reset(&tb);
	CHECK(bx_tb_add(&tb, &key, big, NODESIZE - 101 - 25) == 0);
	CHECK(bx_tb_layout(&tb, NODESIZE) == 0);
	CHECK_EQ_U64(tb.nr_blocks, 1);
	bx_tb_release(&tb);
}

static void test_render(void)
{
	struct bx_tb_header hdr = {
		.nodesize = NODESIZE,
		.generation = 7,
		.csum_type = BTRFS_CSUM_TYPE_CRC32,
		.fsid = { 1, 2, 3 },
		.chunk_tree_uuid = { 9, 8, 7 },
	};
	static uint8_t buf[NODESIZE];
	const struct btrfs_header *h = (const struct btrfs_header *)buf;
	const struct btrfs_item *items = (const struct btrfs_item *)(buf + sizeof(*h));
	const struct btrfs_key_ptr *ptrs = (const struct btrfs_key_ptr *)(buf + sizeof(*h));
	struct bx_tree_build tb;
	uint8_t csum[32];

	bx_tb_init(&tb, BTRFS_FS_TREE_OBJECTID);
	for (int i = 0; i < 40; i++)
		add_u64(&tb, 256 + (uint64_t)i, BTRFS_INODE_ITEM_KEY, 0, 100);
	CHECK(bx_tb_layout(&tb, NODESIZE) == 0);
	CHECK_EQ_U64(tb.nr_blocks, 3);
	for (size_t b = 0; b < tb.nr_blocks; b++)
		tb.blocks[b].bytenr = (1 + b) * 1024 * 1024;

	CHECK(bx_tb_render(&tb, 0, &hdr, buf) == 0);
	CHECK_EQ_U64(le64toh(h->bytenr), 1024 * 1024);
	CHECK_EQ_U64(le64toh(h->generation), 7);
	CHECK_EQ_U64(le64toh(h->owner), BTRFS_FS_TREE_OBJECTID);
	CHECK_EQ_U64(le32toh(h->nritems), 31);
	CHECK_EQ_U64(h->level, 0);
	CHECK_EQ_U64(le64toh(h->flags), BX_HEADER_FLAG_WRITTEN | BX_HEADER_BACKREF_MIXED);
	CHECK(h->fsid[2] == 3 && h->chunk_tree_uuid[0] == 9);
	/* Item data from the end of the leaf backwards. */
	CHECK_EQ_U64(le32toh(items[0].offset), NODESIZE - 101 - 100);
	CHECK_EQ_U64(le32toh(items[1].offset), NODESIZE - 101 - 200);
	CHECK_EQ_U64(le64toh(items[30].key.objectid), 286);
	CHECK(buf[101 + le32toh(items[0].offset)] == 0);   /* objectid 256 & 0xff */
	CHECK(buf[101 + le32toh(items[1].offset)] == 1);
	CHECK(btrfsx_csum(BTRFS_CSUM_TYPE_CRC32, buf + 32, NODESIZE - 32, csum) == 0);
	CHECK(!memcmp(csum, h->csum, 4));

	CHECK(bx_tb_render(&tb, 2, &hdr, buf) == 0);
	CHECK_EQ_U64(h->level, 1);
	CHECK_EQ_U64(le32toh(h->nritems), 2);
	CHECK_EQ_U64(le64toh(ptrs[0].blockptr), 1024 * 1024);
	CHECK_EQ_U64(le64toh(ptrs[1].blockptr), 2 * 1024 * 1024);
	CHECK_EQ_U64(le64toh(ptrs[1].key.objectid), 256 + 31);
	CHECK_EQ_U64(le64toh(ptrs[1].generation), 7);
	bx_tb_release(&tb);
}

int main(void)
{
	test_empty_tree();
	test_leaves_and_nodes();
	test_two_node_levels();
	test_duplicates_and_big_items();
	test_render();
	return unit_summary();
}
