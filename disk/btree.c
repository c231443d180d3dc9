/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "disk/btree.h"
#include "format/csum.h"
#include "disk/io.h"
#include "common/units.h"

/* How far a forward walk reads ahead of the block it is in, per level. */
#define READA_WINDOW_BYTES (4 * 1024 * 1024)

const char *bx_eb_status_str(enum bx_eb_status status)
{
	switch (status) {
	case BX_EB_OK:
		return "ok";
	case BX_EB_READ_ERROR:
		return "read error";
	case BX_EB_BAD_CSUM:
		return "checksum mismatch";
	case BX_EB_BAD_BYTENR:
		return "bytenr mismatch";
	case BX_EB_BAD_FSID:
		return "fsid mismatch";
	case BX_EB_BAD_LEVEL:
		return "bad level";
	case BX_EB_BAD_GENERATION:
		return "generation mismatch (stale or misdirected write)";
	case BX_EB_BAD_ITEMS:
		return "item offsets out of bounds";
	case BX_EB_BAD_KEY_ORDER:
		return "keys out of order";
	case BX_EB_NO_DEVICE:
		return "device missing";
	}
	return "unknown";
}

void bx_item_key(const struct bx_eb *eb, int slot, struct btrfs_key *key)
{
	if (bx_eb_level(eb) == 0)
		btrfs_disk_key_to_cpu(key, &bx_leaf_item(eb, slot)->key);
	else
		btrfs_disk_key_to_cpu(key, &bx_node_ptr(eb, slot)->key);
}

static enum bx_eb_status check_leaf_items(const uint8_t *buf, uint32_t nodesize)
{
	const struct btrfs_header *hdr = (const struct btrfs_header *)buf;
	const struct btrfs_item *items = (const struct btrfs_item *)(buf + sizeof(*hdr));
	uint32_t nritems = le32toh(hdr->nritems);
	uint32_t data_space = nodesize - sizeof(*hdr);
	uint32_t prev_start = data_space;

	if ((uint64_t)nritems * sizeof(struct btrfs_item) > data_space)
		return BX_EB_BAD_ITEMS;
	for (uint32_t i = 0; i < nritems; i++) {
		uint32_t off = le32toh(items[i].offset), size = le32toh(items[i].size);

		/* Item data is packed from the end of the block, in slot order. */
		if ((uint64_t)off + size != prev_start ||
		    off < (i + 1) * sizeof(struct btrfs_item))
			return BX_EB_BAD_ITEMS;
		prev_start = off;
	}
	return BX_EB_OK;
}

static enum bx_eb_status check_key_order(const uint8_t *buf, uint32_t nodesize)
{
	const struct btrfs_header *hdr = (const struct btrfs_header *)buf;
	uint32_t nritems = le32toh(hdr->nritems);
	size_t stride = hdr->level ? sizeof(struct btrfs_key_ptr) : sizeof(struct btrfs_item);
	struct btrfs_key prev, cur;

	if (hdr->level && (uint64_t)nritems * stride > nodesize - sizeof(*hdr))
		return BX_EB_BAD_ITEMS;
	if (hdr->level && nritems == 0)
		return BX_EB_BAD_ITEMS;
	for (uint32_t i = 0; i < nritems; i++) {
		btrfs_disk_key_to_cpu(&cur, (const struct btrfs_disk_key *)(buf + sizeof(*hdr) +
									      i * stride));
		if (i && btrfs_key_cmp(&prev, &cur) >= 0)
			return BX_EB_BAD_KEY_ORDER;
		prev = cur;
	}
	return BX_EB_OK;
}

enum bx_eb_status bx_check_tree_block(const struct bx_fs *fs, const uint8_t *buf, uint64_t bytenr,
				      const struct bx_block_expect *expect)
{
	const struct btrfs_header *hdr = (const struct btrfs_header *)buf;
	uint8_t csum[BTRFS_CSUM_SIZE];
	enum bx_eb_status status;

	if (btrfsx_csum(fs->csum_type, buf + BTRFS_CSUM_SIZE, fs->nodesize - BTRFS_CSUM_SIZE,
			csum) || memcmp(csum, hdr->csum, fs->csum_size))
		return BX_EB_BAD_CSUM;
	if (le64toh(hdr->bytenr) != bytenr)
		return BX_EB_BAD_BYTENR;
	if (!bx_fs_block_fsid_ok(fs, hdr->fsid))
		return BX_EB_BAD_FSID;
	if (hdr->level >= BTRFS_MAX_LEVEL || (expect && expect->level >= 0 &&
					      hdr->level != expect->level))
		return BX_EB_BAD_LEVEL;
	if (expect && expect->generation && le64toh(hdr->generation) != expect->generation)
		return BX_EB_BAD_GENERATION;
	if (hdr->level == 0) {
		status = check_leaf_items(buf, fs->nodesize);
		if (status != BX_EB_OK)
			return status;
	}
	return check_key_order(buf, fs->nodesize);
}

/* A direct-mapped cache of verified blocks; each slot holds one reference. */
struct bx_block_cache {
	unsigned int nr_slots;
	struct bx_eb *slots[];
};

struct bx_block_cache *bx_block_cache_new(unsigned int nr_slots)
{
	struct bx_block_cache *cache = calloc(1, sizeof(*cache) + nr_slots * sizeof(cache->slots[0]));

	if (cache)
		cache->nr_slots = nr_slots;
	return cache;
}

void bx_block_cache_free(struct bx_block_cache *cache)
{
	if (!cache)
		return;
	for (unsigned int i = 0; i < cache->nr_slots; i++)
		bx_eb_put(cache->slots[i]);
	free(cache);
}

static struct bx_eb **cache_slot(struct bx_fs *fs, uint64_t bytenr)
{
	if (!fs->cache)
		return NULL;
	return &fs->cache->slots[(bytenr / fs->nodesize) % fs->cache->nr_slots];
}

void bx_eb_put(struct bx_eb *eb)
{
	if (eb && --eb->refs == 0) {
		free(eb->data);
		free(eb);
	}
}

static struct bx_eb *eb_new(uint64_t bytenr, uint32_t len)
{
	struct bx_eb *eb = calloc(1, sizeof(*eb));

	if (!eb)
		return NULL;
	eb->data = malloc(len);
	if (!eb->data) {
		free(eb);
		return NULL;
	}
	eb->start = bytenr;
	eb->len = len;
	eb->refs = 1;
	return eb;
}

static enum bx_eb_status read_copy(struct bx_fs *fs, struct bx_eb *eb, int mirror,
				   const struct bx_block_expect *expect)
{
	int ret = bx_read_logical(fs, eb->start, eb->data, eb->len, mirror);

	if (ret == -ENODEV)
		return BX_EB_NO_DEVICE;
	if (ret)
		return BX_EB_READ_ERROR;
	return bx_check_tree_block(fs, eb->data, eb->start, expect);
}

int bx_read_tree_block_mirror(struct bx_fs *fs, uint64_t bytenr, int mirror,
			      const struct bx_block_expect *expect, struct bx_eb **out,
			      enum bx_eb_status *status)
{
	struct bx_eb *eb = eb_new(bytenr, fs->nodesize);

	if (!eb)
		return bx_error(-ENOMEM, "out of memory");
	eb->mirror = mirror;
	*status = read_copy(fs, eb, mirror, expect);
	if (*status == BX_EB_READ_ERROR) {
		/* The I/O layer's message says what the read hit (a short device, EIO). */
		bx_eb_put(eb);
		return -EIO;
	}
	if (*status != BX_EB_OK) {
		bx_eb_put(eb);
		return bx_error(-EIO, "tree block %llu mirror %d: %s", (unsigned long long)bytenr,
				mirror, bx_eb_status_str(*status));
	}
	*out = eb;
	return 0;
}

static bool cached_block_fits(const struct bx_eb *eb, const struct bx_block_expect *expect)
{
	const struct btrfs_header *hdr = bx_eb_header(eb);

	if (expect && expect->level >= 0 && hdr->level != expect->level)
		return false;
	return !(expect && expect->generation && le64toh(hdr->generation) != expect->generation);
}

int bx_read_tree_block(struct bx_fs *fs, uint64_t bytenr, const struct bx_block_expect *expect,
		       struct bx_eb **out)
{
	struct bx_eb **slot = cache_slot(fs, bytenr);
	char reasons[512] = "", read_error[256] = "";
	bool only_missing = true;	/* the copies before failed on missing devices alone */
	size_t used = 0;
	int copies;

	if (slot && *slot && (*slot)->start == bytenr && cached_block_fits(*slot, expect)) {
		(*slot)->refs++;
		*out = *slot;
		return 0;
	}
	if (bytenr % fs->sectorsize)
		return bx_error(-EUCLEAN, "tree block %llu is not sector aligned",
				(unsigned long long)bytenr);
	copies = bx_num_copies(fs, bytenr);
	if (!copies)
		return bx_error(-EUCLEAN, "tree block %llu is outside every chunk",
				(unsigned long long)bytenr);
	for (int mirror = 1; mirror <= copies; mirror++) {
		enum bx_eb_status status;
		struct bx_eb *eb;
		int ret = bx_read_tree_block_mirror(fs, bytenr, mirror, expect, &eb, &status);

		if (ret == 0) {
			/* A copy on a missing device is no news: the open said it is degraded. */
			if (mirror > 1 && !fs->bad_mirrors_counted && !only_missing)
				bx_warn("tree block %llu: mirror 1 bad, read mirror %d (%s)",
					(unsigned long long)bytenr, mirror, reasons + 2);
			if (slot) {
				bx_eb_put(*slot);
				*slot = eb;
				eb->refs++;
			}
			*out = eb;
			return 0;
		}
		only_missing &= status == BX_EB_NO_DEVICE;
		if (status == BX_EB_READ_ERROR && !*read_error)
			snprintf(read_error, sizeof(read_error), "; the first read: %s",
				 bx_error_message(ret));
		used += (size_t)snprintf(reasons + used, sizeof(reasons) - used, "%smirror %d: %s",
					 "; ", mirror, bx_eb_status_str(status));
		if (used >= sizeof(reasons))
			used = sizeof(reasons) - 1;
	}
	return bx_error(-EIO, "tree block %llu: no good copy (%s%s)", (unsigned long long)bytenr,
			reasons + 2, read_error);
}

void bx_root_from_item(struct bx_root *root, uint64_t objectid,
		       const struct btrfs_root_item *item)
{
	*root = (struct bx_root){ objectid, le64toh(item->bytenr), le64toh(item->generation),
				  item->level };
	btrfs_disk_key_to_cpu(&root->drop_progress, &item->drop_progress);
}

int bx_find_root(struct bx_fs *fs, uint64_t objectid, struct bx_root *root)
{
	const struct btrfs_super_block *sb = &fs->sb;
	struct btrfs_key key = { objectid, BTRFS_ROOT_ITEM_KEY, (uint64_t)-1 };
	struct bx_root tree_root = { BTRFS_ROOT_TREE_OBJECTID, le64toh(sb->root),
				     le64toh(sb->generation), sb->root_level };
	struct bx_path path;
	struct btrfs_key found;
	struct bx_eb *leaf;
	int ret;

	if (objectid == BTRFS_ROOT_TREE_OBJECTID) {
		*root = tree_root;
		return 0;
	}
	if (objectid == BTRFS_CHUNK_TREE_OBJECTID) {
		*root = (struct bx_root){ objectid, le64toh(sb->chunk_root),
					  le64toh(sb->chunk_root_generation), sb->chunk_root_level };
		return 0;
	}
	if (objectid == BTRFS_TREE_LOG_OBJECTID) {
		if (!sb->log_root)
			return bx_error(-ENOENT, "no log tree");
		*root = (struct bx_root){ objectid, le64toh(sb->log_root), 0, sb->log_root_level };
		return 0;
	}
	/* The newest root item of @objectid: the last key <= (objectid, ROOT_ITEM, -1). */
	bx_path_init(&path, false);
	ret = bx_search(fs, &tree_root, &key, &path);
	if (ret < 0)
		goto out;
	ret = -ENOENT;
	leaf = bx_path_leaf(&path);
	if (path.slots[0] == 0)
		goto out;
	bx_item_key(leaf, path.slots[0] - 1, &found);
	if (found.objectid != objectid || found.type != BTRFS_ROOT_ITEM_KEY)
		goto out;
	if (bx_item_size(leaf, path.slots[0] - 1) < BTRFS_ROOT_ITEM_V1_SIZE) {
		ret = bx_error(-EUCLEAN, "root item of tree %llu is too small",
			       (unsigned long long)objectid);
		goto out;
	}
	bx_root_from_item(root, objectid, bx_item_ptr(leaf, path.slots[0] - 1));
	ret = 0;
out:
	bx_path_release(&path);
	if (ret == -ENOENT)
		return bx_error(-ENOENT, "tree %llu not found in the root tree",
				(unsigned long long)objectid);
	return ret;
}

void bx_path_init(struct bx_path *path, bool reada)
{
	memset(path, 0, sizeof(*path));
	path->reada = reada;
}

void bx_path_bound_readahead(struct bx_path *path, const struct btrfs_key *end)
{
	path->reada_bounded = true;
	path->reada_end = *end;
}

void bx_path_release(struct bx_path *path)
{
	for (int i = 0; i < BTRFS_MAX_LEVEL; i++) {
		bx_eb_put(path->nodes[i]);
		path->nodes[i] = NULL;
	}
}

/*
 * Starts reads of the children of @node that follow @slot, up to a window
 * ahead and before the first child whose keys start at @end (NULL: no
 * bound), merging physically adjacent blocks into one request. @next keeps
 * how far earlier calls got, so each block is asked for once.
 */
static void reada_children(struct bx_fs *fs, const struct bx_eb *node, int slot, int *next,
			   const struct btrfs_key *end)
{
	uint32_t nritems = bx_eb_nritems(node);
	int window = READA_WINDOW_BYTES / fs->nodesize;
	uint64_t run_start = 0, run_len = 0;
	int first = *next > slot + 1 ? *next : slot + 1;
	int last = slot + window < (int)nritems ? slot + window : (int)nritems;

	/* Refill only when half the window has been consumed. */
	if (*next - slot > window / 2)
		return;
	for (int i = first; i < last; i++) {
		uint64_t bytenr = le64toh(bx_node_ptr(node, i)->blockptr);
		struct btrfs_key child_first;

		if (end) {
			bx_item_key(node, i, &child_first);
			if (btrfs_key_cmp(&child_first, end) >= 0) {
				last = i;
				break;
			}
		}

		if (run_len && bytenr == run_start + run_len) {
			run_len += fs->nodesize;
			continue;
		}
		if (run_len)
			bx_readahead_logical(fs, run_start, run_len, 1);
		run_start = bytenr;
		run_len = fs->nodesize;
	}
	if (run_len)
		bx_readahead_logical(fs, run_start, run_len, 1);
	if (last > *next)
		*next = last;
}

static int read_child(struct bx_fs *fs, struct bx_path *path, int level)
{
	struct bx_eb *parent = path->nodes[level];
	int slot = path->slots[level];
	const struct btrfs_key_ptr *ptr = bx_node_ptr(parent, slot);
	struct bx_block_expect expect = { le64toh(ptr->generation), level - 1 };
	struct bx_eb *child;
	int ret;

	if (path->reada)
		reada_children(fs, parent, slot, &path->reada_next[level],
			       path->reada_bounded ? &path->reada_end : NULL);
	ret = bx_read_tree_block(fs, le64toh(ptr->blockptr), &expect, &child);
	if (ret)
		return ret;
	bx_eb_put(path->nodes[level - 1]);
	path->nodes[level - 1] = child;
	path->slots[level - 1] = 0;
	path->reada_next[level - 1] = 0;
	return 0;
}

/* Binary search in one block: 0 and the slot if found, else 1 and the insert slot. */
static int block_search(const struct bx_eb *eb, const struct btrfs_key *key, int *slot)
{
	int lo = 0, hi = (int)bx_eb_nritems(eb);

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		struct btrfs_key cur;
		int cmp;

		bx_item_key(eb, mid, &cur);
		cmp = btrfs_key_cmp(&cur, key);
		if (cmp == 0) {
			*slot = mid;
			return 0;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*slot = lo;
	return 1;
}

int bx_search(struct bx_fs *fs, const struct bx_root *root, const struct btrfs_key *key,
	      struct bx_path *path)
{
	struct bx_block_expect expect = { root->generation, root->level };
	struct bx_eb *eb;
	int level, ret;

	bx_path_release(path);
	ret = bx_read_tree_block(fs, root->bytenr, &expect, &eb);
	if (ret) {
		char tree[64];

		return bx_error_wrap(ret, "root of %s",
				     bx_tree_describe(root->objectid, tree, sizeof(tree)));
	}
	level = bx_eb_level(eb);
	path->nodes[level] = eb;
	for (;;) {
		int slot;

		ret = block_search(path->nodes[level], key, &slot);
		if (level == 0) {
			path->slots[0] = slot;
			return ret;
		}
		/* In a node, descend into the child whose range holds @key. */
		if (ret && slot > 0)
			slot--;
		path->slots[level] = slot;
		ret = read_child(fs, path, level);
		if (ret)
			return ret;
		level--;
	}
}

bool bx_path_valid(const struct bx_path *path)
{
	return path->nodes[0] && path->slots[0] < (int)bx_eb_nritems(path->nodes[0]);
}

/* Moves the path to the first item of the next leaf. 0, 1 at the end, <0 error. */
static int next_leaf(struct bx_fs *fs, struct bx_path *path)
{
	int level = 1;

	while (level < BTRFS_MAX_LEVEL && path->nodes[level] &&
	       path->slots[level] + 1 >= (int)bx_eb_nritems(path->nodes[level]))
		level++;
	if (level == BTRFS_MAX_LEVEL || !path->nodes[level])
		return 1;
	path->slots[level]++;
	for (; level > 0; level--) {
		int ret = read_child(fs, path, level);

		if (ret)
			return ret;
	}
	return 0;
}

int bx_path_settle(struct bx_fs *fs, struct bx_path *path)
{
	while (!bx_path_valid(path)) {
		int ret = next_leaf(fs, path);

		if (ret)
			return ret;
	}
	return 0;
}

int bx_next_item(struct bx_fs *fs, struct bx_path *path)
{
	path->slots[0]++;
	return bx_path_settle(fs, path);
}

struct walk_state {
	struct bx_fs *fs;
	const struct bx_walk_ops *ops;
	void *arg;
	const struct btrfs_key *drop_progress;  /* NULL: the tree is whole */
};

/* Whether child @slot of node @eb holds only keys left of the drop progress. */
static bool child_dropped(const struct walk_state *ws, const struct bx_eb *eb, int slot)
{
	struct btrfs_key next;

	if (!ws->drop_progress || slot + 1 >= (int)bx_eb_nritems(eb))
		return false;
	bx_item_key(eb, slot + 1, &next);
	return btrfs_key_cmp(&next, ws->drop_progress) <= 0;
}

static int walk_block(struct walk_state *ws, struct bx_eb *eb)
{
	int reada_next = 0;
	int ret = ws->ops->block(ws->arg, eb);

	if (ret || bx_eb_level(eb) == 0)
		return ret;
	for (int slot = 0; slot < (int)bx_eb_nritems(eb); slot++) {
		const struct btrfs_key_ptr *ptr = bx_node_ptr(eb, slot);
		struct bx_block_expect expect = { le64toh(ptr->generation), bx_eb_level(eb) - 1 };
		uint64_t bytenr = le64toh(ptr->blockptr);
		struct bx_eb *child;

		if (child_dropped(ws, eb, slot)) {
			if (ws->ops->dropped)
				ws->ops->dropped(ws->arg, bytenr);
			continue;
		}
		if (ws->fs->readahead)
			reada_children(ws->fs, eb, slot - 1, &reada_next, NULL);
		ret = bx_read_tree_block(ws->fs, bytenr, &expect, &child);
		if (ret) {
			if (!ws->ops->error || (ret = ws->ops->error(ws->arg, bytenr, ret)))
				return ret;
			continue;
		}
		ret = walk_block(ws, child);
		bx_eb_put(child);
		if (ret)
			return ret;
	}
	return 0;
}

int bx_walk_tree(struct bx_fs *fs, const struct bx_root *root, const struct bx_walk_ops *ops,
		 void *arg)
{
	struct bx_block_expect expect = { root->generation, root->level };
	struct walk_state ws = { fs, ops, arg, root->drop_progress.objectid ?
					       &root->drop_progress : NULL };
	struct bx_eb *eb;
	int ret;

	ret = bx_read_tree_block(fs, root->bytenr, &expect, &eb);
	if (ret) {
		char tree[64];

		return bx_error_wrap(ret, "root of %s",
				     bx_tree_describe(root->objectid, tree, sizeof(tree)));
	}
	ret = walk_block(&ws, eb);
	bx_eb_put(eb);
	return ret;
}

/* ---- tree names ---- */

static const struct {
	uint64_t id;
	const char *name;      /* as dump-tree -t takes it */
	const char *objectid;  /* as keys show it */
} trees[] = {
	{ BTRFS_ROOT_TREE_OBJECTID, "root", "ROOT_TREE" },
	{ BTRFS_EXTENT_TREE_OBJECTID, "extent", "EXTENT_TREE" },
	{ BTRFS_CHUNK_TREE_OBJECTID, "chunk", "CHUNK_TREE" },
	{ BTRFS_DEV_TREE_OBJECTID, "dev", "DEV_TREE" },
	{ BTRFS_FS_TREE_OBJECTID, "fs", "FS_TREE" },
	{ BTRFS_ROOT_TREE_DIR_OBJECTID, "root-dir", "ROOT_TREE_DIR" },
	{ BTRFS_CSUM_TREE_OBJECTID, "csum", "CSUM_TREE" },
	{ BTRFS_QUOTA_TREE_OBJECTID, "quota", "QUOTA_TREE" },
	{ BTRFS_UUID_TREE_OBJECTID, "uuid", "UUID_TREE" },
	{ BTRFS_FREE_SPACE_TREE_OBJECTID, "free-space", "FREE_SPACE_TREE" },
	{ BTRFS_BLOCK_GROUP_TREE_OBJECTID, "block-group", "BLOCK_GROUP_TREE" },
	{ BTRFS_RAID_STRIPE_TREE_OBJECTID, "raid-stripe", "RAID_STRIPE_TREE" },
	{ BTRFS_TREE_LOG_OBJECTID, "log", "TREE_LOG" },
	{ BTRFS_TREE_RELOC_OBJECTID, "tree-reloc", "TREE_RELOC" },
	{ BTRFS_DATA_RELOC_TREE_OBJECTID, "data-reloc", "DATA_RELOC_TREE" },
};

int bx_tree_id_by_name(const char *name, uint64_t *id)
{
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		if (!strcasecmp(name, trees[i].name) || !strcasecmp(name, trees[i].objectid)) {
			*id = trees[i].id;
			return 0;
		}
	}
	return bx_parse_u64(name, id);
}

const char *bx_tree_name(uint64_t id)
{
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++)
		if (trees[i].id == id)
			return trees[i].name;
	return NULL;
}

const char *bx_tree_objectid_name(uint64_t id)
{
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++)
		if (trees[i].id == id)
			return trees[i].objectid;
	return NULL;
}

const char *bx_tree_describe(uint64_t id, char *buf, size_t len)
{
	const char *name = bx_tree_name(id);

	if (name)
		snprintf(buf, len, "the %s tree (%llu)", name, (unsigned long long)id);
	else
		snprintf(buf, len, "tree %llu", (unsigned long long)id);
	return buf;
}
