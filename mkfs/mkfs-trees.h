/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * B-trees built in memory, for writers that create trees whole (mkfs):
 * items are collected in any order, sorted, packed into leaves of one node
 * size with nodes above them, and each block is rendered into a buffer with
 * its header, items and checksum, ready to be written once.
 *
 * Pure functions over memory: no I/O, no printing. Errors are negative
 * errno values with a message (common/error.h).
 */
#ifndef BTRFSX_MKFS_TREES_H
#define BTRFSX_MKFS_TREES_H

#include <stddef.h>
#include <stdint.h>

#include "format/ctree.h"

/* The header flag of a written block and the backref revision of today's format. */
#define BX_HEADER_FLAG_WRITTEN (1ULL << 0)
#define BX_HEADER_BACKREF_MIXED (1ULL << 56)

struct bx_tb_item {
	struct btrfs_key key;
	uint32_t size;
	uint8_t *data;          /* owned by the builder; NULL when size is 0 */
};

/*
 * One block of a laid-out tree. Leaves come first (left to right), then
 * each node level bottom up; the root is the last block.
 */
struct bx_tb_block {
	uint64_t bytenr;        /* set by the caller before rendering */
	int level;
	struct btrfs_key first_key;
	size_t first;           /* first item (leaf) or first child block (node) */
	size_t nr;              /* how many of them */
};

struct bx_tree_build {
	uint64_t owner;         /* tree id for the headers */
	struct bx_tb_item *items;
	size_t nr_items;
	size_t items_cap;
	struct bx_tb_block *blocks;     /* valid after bx_tb_layout() */
	size_t nr_blocks;
	int level;                      /* of the root */
	int sorted;
};

/* What every block of a new filesystem shares. */
struct bx_tb_header {
	uint32_t nodesize;
	uint64_t generation;
	unsigned int csum_type;
	uint8_t fsid[BTRFS_FSID_SIZE];          /* the metadata uuid */
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
};

void bx_tb_init(struct bx_tree_build *tb, uint64_t owner);
/* Frees items and layout; the builder can be reused after bx_tb_init(). */
void bx_tb_release(struct bx_tree_build *tb);
/* Drops the items (and the layout), keeping the owner. */
void bx_tb_reset(struct bx_tree_build *tb);

/* Adds an item; @data (@size bytes, may be NULL when 0) is copied. 0 or -ENOMEM. */
int bx_tb_add(struct bx_tree_build *tb, const struct btrfs_key *key, const void *data,
	      uint32_t size);

/*
 * Sorts the items and packs them: leaves greedily filled, then nodes until
 * one root. An empty tree is one empty leaf. Returns 0, -EEXIST (the same
 * key twice), -E2BIG (an item larger than a leaf holds), -ENOMEM.
 */
int bx_tb_layout(struct bx_tree_build *tb, uint32_t nodesize);

/* The root block after bx_tb_layout(). */
static inline const struct bx_tb_block *bx_tb_root(const struct bx_tree_build *tb)
{
	return &tb->blocks[tb->nr_blocks - 1];
}

/*
 * Renders block @index into @buf (nodesize bytes): header, items or key
 * pointers, zeroed free space, checksum. Every block's bytenr must be set.
 * Returns 0 or -EINVAL (unknown checksum type).
 */
int bx_tb_render(const struct bx_tree_build *tb, size_t index, const struct bx_tb_header *hdr,
		 uint8_t *buf);

/* Leaf capacity helpers for callers that plan sizes. */
static inline uint32_t bx_tb_leaf_space(uint32_t nodesize)
{
	return nodesize - (uint32_t)sizeof(struct btrfs_header);
}

#endif
