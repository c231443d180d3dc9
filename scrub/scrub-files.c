/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which files a bad data extent belongs to: the extent item's backrefs
 * (inline and keyed EXTENT_DATA_REF, SHARED_DATA_REF through the parent
 * leaf), then each inode's path through INODE_REF / INODE_EXTREF items up to
 * its subvolume's root directory, and the subvolume's own place through its
 * ROOT_BACKREF, up to the top-level subvolume (tree 5), which is "/".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "scrub/scrub.h"
#include "disk/btree.h"

#define PATH_MAX_LEN 4096
#define MAX_DEPTH 256
/* The longest name btrfs stores (BTRFS_NAME_LEN); a longer one is corrupt. */
#define NAME_MAX_LEN 255

struct data_ref {
	uint64_t root;
	uint64_t inode;
	uint64_t offset;          /* file offset of the extent's first byte */
};

struct ref_list {
	struct data_ref refs[16];
	size_t nr;
};

static void add_ref(struct ref_list *list, uint64_t root, uint64_t inode, uint64_t offset)
{
	for (size_t i = 0; i < list->nr; i++)
		if (list->refs[i].root == root && list->refs[i].inode == inode)
			return;
	if (list->nr < sizeof(list->refs) / sizeof(list->refs[0]))
		list->refs[list->nr++] = (struct data_ref){ root, inode, offset };
}

/* File extent items in the leaf @parent that point at @extent_start. */
static void shared_ref(struct bx_fs *fs, uint64_t parent, uint64_t extent_start,
		       struct ref_list *list)
{
	struct bx_eb *leaf;

	if (bx_read_tree_block(fs, parent, NULL, &leaf))
		return;
	if (bx_eb_level(leaf) == 0) {
		for (uint32_t slot = 0; slot < bx_eb_nritems(leaf); slot++) {
			const struct btrfs_file_extent_item *fi = bx_item_ptr(leaf, (int)slot);
			struct btrfs_key key;

			bx_item_key(leaf, (int)slot, &key);
			if (key.type != BTRFS_EXTENT_DATA_KEY ||
			    bx_item_size(leaf, (int)slot) < sizeof(*fi) ||
			    fi->type == BTRFS_FILE_EXTENT_INLINE ||
			    le64toh(fi->disk_bytenr) != extent_start)
				continue;
			add_ref(list, le64toh(bx_eb_header(leaf)->owner), key.objectid,
				key.offset - le64toh(fi->offset));
		}
	}
	bx_eb_put(leaf);
}

/* Inline backrefs that follow the extent item. */
static void inline_refs(struct bx_fs *fs, const uint8_t *p, const uint8_t *end,
			uint64_t extent_start, struct ref_list *list)
{
	while (p < end) {
		uint8_t type = *p;

		if (type == BTRFS_EXTENT_DATA_REF_KEY) {
			const struct btrfs_extent_data_ref *dref = (const void *)(p + 1);

			if (p + 1 + sizeof(*dref) > end)
				return;
			add_ref(list, le64toh(dref->root), le64toh(dref->objectid),
				le64toh(dref->offset));
			p += 1 + sizeof(*dref);
		} else if (type == BTRFS_SHARED_DATA_REF_KEY) {
			const struct btrfs_extent_inline_ref *iref = (const void *)p;

			if (p + sizeof(*iref) + sizeof(struct btrfs_shared_data_ref) > end)
				return;
			shared_ref(fs, le64toh(iref->offset), extent_start, list);
			p += sizeof(*iref) + sizeof(struct btrfs_shared_data_ref);
		} else if (type == BTRFS_TREE_BLOCK_REF_KEY || type == BTRFS_SHARED_BLOCK_REF_KEY ||
			   type == BTRFS_EXTENT_OWNER_REF_KEY) {
			p += sizeof(struct btrfs_extent_inline_ref);
		} else {
			return;
		}
	}
}

static int collect_refs(struct bx_fs *fs, uint64_t extent_start, uint64_t extent_len,
			struct ref_list *list)
{
	struct btrfs_key key = { extent_start, BTRFS_EXTENT_ITEM_KEY, extent_len };
	struct bx_root root;
	struct bx_path path;
	int ret;

	ret = bx_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &root);
	if (ret)
		return ret;
	bx_path_init(&path, false);
	ret = bx_search(fs, &root, &key, &path);
	if (ret > 0)
		ret = bx_error(-ENOENT, "no extent item at %llu", (unsigned long long)extent_start);
	while (ret == 0) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		int slot = path.slots[0];
		const uint8_t *item = bx_item_ptr(leaf, slot);
		uint32_t size = bx_item_size(leaf, slot);

		bx_item_key(leaf, slot, &key);
		if (key.objectid != extent_start)
			break;
		if (key.type == BTRFS_EXTENT_ITEM_KEY && size >= sizeof(struct btrfs_extent_item))
			inline_refs(fs, item + sizeof(struct btrfs_extent_item), item + size,
				    extent_start, list);
		else if (key.type == BTRFS_EXTENT_DATA_REF_KEY &&
			 size >= sizeof(struct btrfs_extent_data_ref)) {
			const struct btrfs_extent_data_ref *dref = (const void *)item;

			add_ref(list, le64toh(dref->root), le64toh(dref->objectid),
				le64toh(dref->offset));
		} else if (key.type == BTRFS_SHARED_DATA_REF_KEY) {
			shared_ref(fs, key.offset, extent_start, list);
		}
		ret = bx_next_item(fs, &path);
	}
	bx_path_release(&path);
	return ret < 0 ? ret : 0;
}

/* Prepends "/name" to the path being built backwards at the end of @buf. */
static int prepend(char *buf, size_t *pos, const char *name, size_t len)
{
	if (len + 1 > *pos)
		return -ENAMETOOLONG;
	*pos -= len;
	memcpy(buf + *pos, name, len);
	buf[--*pos] = '/';
	return 0;
}

/*
 * The first INODE_REF or INODE_EXTREF of @ino: its parent directory and name
 * (@name holds NAME_MAX_LEN bytes).
 */
static int inode_parent(struct bx_fs *fs, const struct bx_root *root, uint64_t ino,
			uint64_t *parent, char *name, size_t *name_len)
{
	struct btrfs_key key = { ino, BTRFS_INODE_REF_KEY, 0 };
	struct bx_path path;
	int ret;

	bx_path_init(&path, false);
	ret = bx_search(fs, root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	if (ret == 0) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		int slot = path.slots[0];
		const uint8_t *item = bx_item_ptr(leaf, slot);
		uint32_t size = bx_item_size(leaf, slot);
		size_t len = 0;

		bx_item_key(leaf, slot, &key);
		ret = -ENOENT;
		if (key.objectid == ino && key.type == BTRFS_INODE_REF_KEY &&
		    size >= sizeof(struct btrfs_inode_ref)) {
			const struct btrfs_inode_ref *ref = (const void *)item;

			len = le16toh(ref->name_len);
			if (sizeof(*ref) + len <= size && len <= NAME_MAX_LEN) {
				*parent = key.offset;
				memcpy(name, ref + 1, len);
				ret = 0;
			}
		} else if (key.objectid == ino && key.type == BTRFS_INODE_EXTREF_KEY &&
			   size >= sizeof(struct btrfs_inode_extref)) {
			const struct btrfs_inode_extref *ref = (const void *)item;

			len = le16toh(ref->name_len);
			if (sizeof(*ref) + len <= size && len <= NAME_MAX_LEN) {
				*parent = le64toh(ref->parent_objectid);
				memcpy(name, ref + 1, len);
				ret = 0;
			}
		}
		*name_len = len;
	} else if (ret > 0) {
		ret = -ENOENT;
	}
	bx_path_release(&path);
	return ret;
}

/* Where subvolume @root_id sits: its parent tree, directory and name (NAME_MAX_LEN bytes). */
static int subvol_parent(struct bx_fs *fs, uint64_t root_id, uint64_t *parent_root,
			 uint64_t *dirid, char *name, size_t *name_len)
{
	struct btrfs_key key = { root_id, BTRFS_ROOT_BACKREF_KEY, 0 };
	struct bx_root tree_root;
	struct bx_path path;
	int ret = bx_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tree_root);

	if (ret)
		return ret;
	bx_path_init(&path, false);
	ret = bx_search(fs, &tree_root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	if (ret == 0) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		int slot = path.slots[0];
		const struct btrfs_root_ref *ref = bx_item_ptr(leaf, slot);

		bx_item_key(leaf, slot, &key);
		ret = -ENOENT;
		if (key.objectid == root_id && key.type == BTRFS_ROOT_BACKREF_KEY &&
		    bx_item_size(leaf, slot) >= sizeof(*ref) &&
		    bx_item_size(leaf, slot) >= sizeof(*ref) + le16toh(ref->name_len) &&
		    le16toh(ref->name_len) <= NAME_MAX_LEN) {
			*parent_root = key.offset;
			*dirid = le64toh(ref->dirid);
			*name_len = le16toh(ref->name_len);
			memcpy(name, ref + 1, *name_len);
			ret = 0;
		}
	} else if (ret > 0) {
		ret = -ENOENT;
	}
	bx_path_release(&path);
	return ret;
}

/* The path of inode @ino of subvolume @root_id from the top level; malloc'ed. */
static int inode_path(struct bx_fs *fs, uint64_t root_id, uint64_t ino, char **out)
{
	char *buf = malloc(PATH_MAX_LEN);
	size_t pos = PATH_MAX_LEN - 1;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	buf[pos] = '\0';
	for (int depth = 0; depth < MAX_DEPTH && !ret; depth++) {
		struct bx_root root;
		char name[NAME_MAX_LEN];
		size_t len;
		uint64_t parent;

		ret = bx_find_root(fs, root_id, &root);
		while (!ret && ino != BTRFS_FIRST_FREE_OBJECTID) {
			ret = inode_parent(fs, &root, ino, &parent, name, &len);
			if (!ret)
				ret = prepend(buf, &pos, name, len);
			if (!ret && parent == ino)
				ret = -ELOOP;
			ino = parent;
		}
		if (ret || root_id == BTRFS_FS_TREE_OBJECTID)
			break;
		ret = subvol_parent(fs, root_id, &root_id, &ino, name, &len);
		if (!ret)
			ret = prepend(buf, &pos, name, len);
	}
	if (!ret && root_id != BTRFS_FS_TREE_OBJECTID)
		ret = -ELOOP;
	if (ret) {
		free(buf);
		return ret;
	}
	*out = strdup(pos == PATH_MAX_LEN - 1 ? "/" : buf + pos);
	free(buf);
	return *out ? 0 : -ENOMEM;
}

int bx_scrub_resolve_files(struct bx_fs *fs, uint64_t logical, uint64_t extent_start,
			   uint64_t extent_len, struct bx_scrub_file **files, size_t *nr,
			   size_t max)
{
	struct ref_list list = { .nr = 0 };
	int ret = collect_refs(fs, extent_start, extent_len, &list);
	int added = 0;

	if (ret)
		return ret;
	for (size_t i = 0; i < list.nr && *nr < max; i++) {
		struct bx_scrub_file *grown = realloc(*files, (*nr + 1) * sizeof(**files));
		struct bx_scrub_file *f;

		if (!grown)
			return bx_error(-ENOMEM, "out of memory");
		*files = grown;
		f = &grown[(*nr)++];
		*f = (struct bx_scrub_file){ logical, list.refs[i].root, list.refs[i].inode,
					     list.refs[i].offset + (logical - extent_start), NULL };
		if (inode_path(fs, f->root, f->inode, &f->path))
			f->path = NULL;
		added++;
	}
	bx_error_clear();
	return added;
}
