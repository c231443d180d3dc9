/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * B-tree access: verified tree block reads with mirror fallback, key search,
 * forward iteration and full walks, both with forward readahead.
 */
#ifndef BTRFSX_BTREE_H
#define BTRFSX_BTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "format/ctree.h"
#include "disk/volumes.h"

/* A tree block in memory. Shared through the block cache; release with bx_eb_put. */
struct bx_eb {
	uint64_t start;
	uint32_t len;
	int mirror;                 /* the copy that verified */
	int refs;
	uint8_t *data;
};

static inline const struct btrfs_header *bx_eb_header(const struct bx_eb *eb)
{
	return (const struct btrfs_header *)eb->data;
}

static inline int bx_eb_level(const struct bx_eb *eb)
{
	return bx_eb_header(eb)->level;
}

static inline uint32_t bx_eb_nritems(const struct bx_eb *eb)
{
	return le32toh(bx_eb_header(eb)->nritems);
}

static inline const struct btrfs_item *bx_leaf_item(const struct bx_eb *eb, int slot)
{
	return (const struct btrfs_item *)(eb->data + sizeof(struct btrfs_header)) + slot;
}

static inline const struct btrfs_key_ptr *bx_node_ptr(const struct bx_eb *eb, int slot)
{
	return (const struct btrfs_key_ptr *)(eb->data + sizeof(struct btrfs_header)) + slot;
}

/* Item data of a verified leaf: bounds were checked when it was read. */
static inline const void *bx_item_ptr(const struct bx_eb *eb, int slot)
{
	return eb->data + sizeof(struct btrfs_header) + le32toh(bx_leaf_item(eb, slot)->offset);
}

static inline uint32_t bx_item_size(const struct bx_eb *eb, int slot)
{
	return le32toh(bx_leaf_item(eb, slot)->size);
}

void bx_item_key(const struct bx_eb *eb, int slot, struct btrfs_key *key);

/* What a reader knows about a block before reading it, to verify it. */
struct bx_block_expect {
	uint64_t generation;        /* 0: any */
	int level;                  /* -1: any */
};

/* Why a tree block copy was rejected. */
enum bx_eb_status {
	BX_EB_OK,
	BX_EB_READ_ERROR,
	BX_EB_BAD_CSUM,
	BX_EB_BAD_BYTENR,
	BX_EB_BAD_FSID,
	BX_EB_BAD_LEVEL,
	BX_EB_BAD_GENERATION,
	BX_EB_BAD_ITEMS,
	BX_EB_BAD_KEY_ORDER,
	BX_EB_NO_DEVICE,
};

const char *bx_eb_status_str(enum bx_eb_status status);

/*
 * Checks one copy of a tree block in @buf (nodesize bytes) that claims to be
 * at @bytenr: checksum, bytenr, fsid, level, generation, item bounds, key
 * order. Pure: also the parser the fuzzer drives.
 */
enum bx_eb_status bx_check_tree_block(const struct bx_fs *fs, const uint8_t *buf, uint64_t bytenr,
				      const struct bx_block_expect *expect);

/*
 * Reads the tree block at @bytenr, trying each mirror until one verifies.
 * Returns 0 and a referenced *out, or -EIO with a message listing each
 * mirror's reason.
 */
int bx_read_tree_block(struct bx_fs *fs, uint64_t bytenr, const struct bx_block_expect *expect,
		       struct bx_eb **out);

/* Reads one specific copy, verified; for scrub and tests. */
int bx_read_tree_block_mirror(struct bx_fs *fs, uint64_t bytenr, int mirror,
			      const struct bx_block_expect *expect, struct bx_eb **out,
			      enum bx_eb_status *status);

void bx_eb_put(struct bx_eb *eb);

struct bx_block_cache *bx_block_cache_new(unsigned int slots);
void bx_block_cache_free(struct bx_block_cache *cache);

/* Where a tree's root block is. */
struct bx_root {
	uint64_t objectid;
	uint64_t bytenr;
	uint64_t generation;
	int level;
	/*
	 * A snapshot being deleted: the subtrees left of this key are freed
	 * (btrfs_drop_snapshot works left to right); objectid 0: none.
	 */
	struct btrfs_key drop_progress;
};

/* A root from its root item (@item has at least BTRFS_ROOT_ITEM_V1_SIZE bytes). */
void bx_root_from_item(struct bx_root *root, uint64_t objectid,
		       const struct btrfs_root_item *item);

/* The root of tree @objectid: from the superblock or the root tree. -ENOENT if absent. */
int bx_find_root(struct bx_fs *fs, uint64_t objectid, struct bx_root *root);

/* A position in a tree: one block and slot per level, leaf at level 0. */
struct bx_path {
	struct bx_eb *nodes[BTRFS_MAX_LEVEL];
	int slots[BTRFS_MAX_LEVEL];
	int reada_next[BTRFS_MAX_LEVEL]; /* first child slot not yet read ahead */
	bool reada;                      /* forward readahead (READA_FORWARD_ALWAYS) */
	bool reada_bounded;              /* no readahead of blocks from reada_end on */
	struct btrfs_key reada_end;
};

void bx_path_init(struct bx_path *path, bool reada);
/*
 * Limits the path's readahead to blocks holding keys before @end: a walk
 * that stops at @end then reads nothing it will not use.
 */
void bx_path_bound_readahead(struct bx_path *path, const struct btrfs_key *end);
void bx_path_release(struct bx_path *path);

/*
 * Finds @key in the tree. Returns 0 when found, 1 when not (the path is at
 * where it would be inserted, possibly one past the last item of a leaf;
 * bx_path_valid() tells), negative errno on error.
 */
int bx_search(struct bx_fs *fs, const struct bx_root *root, const struct btrfs_key *key,
	      struct bx_path *path);

/* True when the path points at an item. */
bool bx_path_valid(const struct bx_path *path);

/* Moves to the next item, crossing leaves. Returns 0, 1 past the end, <0 error. */
int bx_next_item(struct bx_fs *fs, struct bx_path *path);

/* Moves to the first item at or after the path's slot (fixes "one past" positions). */
int bx_path_settle(struct bx_fs *fs, struct bx_path *path);

/* The path's current item. */
static inline struct bx_eb *bx_path_leaf(const struct bx_path *path)
{
	return path->nodes[0];
}

/* Callbacks of a full walk, in depth-first order (each node before its children). */
struct bx_walk_ops {
	int (*block)(void *arg, struct bx_eb *eb);
	int (*error)(void *arg, uint64_t bytenr, int ret);  /* return 0 to go on */
	void (*dropped)(void *arg, uint64_t bytenr);        /* optional, see below */
};

/*
 * Visits every block of the tree, reading ahead if fs->readahead. In a
 * snapshot being deleted, a child whose keys all lie left of the root's
 * drop_progress is freed by design: it is not read, only reported to
 * ops->dropped.
 */
int bx_walk_tree(struct bx_fs *fs, const struct bx_root *root, const struct bx_walk_ops *ops,
		 void *arg);

/*
 * Tree names: "extent", "dev", "block-group" (as dump-tree -t takes them),
 * the objectid names keys show ("EXTENT_TREE"), and a phrase for messages
 * ("the extent tree (2)", "tree 260"). bx_tree_id_by_name takes either name
 * or a number.
 */
int bx_tree_id_by_name(const char *name, uint64_t *id);
const char *bx_tree_name(uint64_t id);
const char *bx_tree_objectid_name(uint64_t id);
const char *bx_tree_describe(uint64_t id, char *buf, size_t len);

#endif
