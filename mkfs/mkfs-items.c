/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The contents of a new filesystem: the items of every tree mkfs.btrfs 6.19
 * writes for the same features, the placement of their blocks inside the
 * system and metadata chunks, and the superblocks.
 *
 * The root, extent and free space trees describe where the blocks of all
 * trees (their own included) are, and how many blocks they need depends on
 * that: their items are filled, laid out and placed again until the number
 * of blocks stops changing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <isa-l.h>

#include "common/error.h"
#include "format/csum.h"
#include "mkfs/mkfs-private.h"

static const uint64_t tree_ids[BX_MKFS_NR_TREES] = {
	[BX_MKFS_T_ROOT] = BTRFS_ROOT_TREE_OBJECTID,
	[BX_MKFS_T_EXTENT] = BTRFS_EXTENT_TREE_OBJECTID,
	[BX_MKFS_T_CHUNK] = BTRFS_CHUNK_TREE_OBJECTID,
	[BX_MKFS_T_DEV] = BTRFS_DEV_TREE_OBJECTID,
	[BX_MKFS_T_FS] = BTRFS_FS_TREE_OBJECTID,
	[BX_MKFS_T_CSUM] = BTRFS_CSUM_TREE_OBJECTID,
	[BX_MKFS_T_QUOTA] = BTRFS_QUOTA_TREE_OBJECTID,
	[BX_MKFS_T_UUID] = BTRFS_UUID_TREE_OBJECTID,
	[BX_MKFS_T_FREE_SPACE] = BTRFS_FREE_SPACE_TREE_OBJECTID,
	[BX_MKFS_T_BLOCK_GROUP] = BTRFS_BLOCK_GROUP_TREE_OBJECTID,
	[BX_MKFS_T_DATA_RELOC] = BTRFS_DATA_RELOC_TREE_OBJECTID,
};

#define BTRFS_FT_DIR 2
#define QGROUP_STATUS_FLAG_ON 1ULL
#define QGROUP_STATUS_FLAG_SIMPLE_MODE (1ULL << 3)
#define QGROUP_STATUS_VERSION 1ULL

static const char default_subvol_name[] = "default";

static int add(struct bx_tree_build *tb, uint64_t objectid, uint8_t type, uint64_t offset,
	       const void *data, uint32_t size)
{
	struct btrfs_key key = { objectid, type, offset };

	return bx_tb_add(tb, &key, data, size);
}

/* btrfs_name_hash(): crc32c seeded with ~1, not inverted. */
static uint64_t name_hash(const char *name, size_t len)
{
	return crc32_iscsi((unsigned char *)name, (int)len, ~1U);
}

/* ---- the chunk and device trees ---- */

size_t bx_mkfs_chunk_item(const struct mkfs *mk, const struct bx_mkfs_chunk *c, uint8_t *buf)
{
	struct btrfs_chunk *chunk = (struct btrfs_chunk *)buf;

	memset(buf, 0, btrfs_chunk_item_size((int)c->num_stripes));
	chunk->length = htole64(c->length);
	chunk->owner = htole64(BTRFS_EXTENT_TREE_OBJECTID);
	chunk->stripe_len = htole64(BTRFS_STRIPE_LEN);
	chunk->type = htole64(c->type);
	chunk->io_align = htole32(BTRFS_STRIPE_LEN);
	chunk->io_width = htole32(BTRFS_STRIPE_LEN);
	chunk->sector_size = htole32(mk->sectorsize);
	chunk->num_stripes = htole16((uint16_t)c->num_stripes);
	chunk->sub_stripes = htole16((c->type & BTRFS_BLOCK_GROUP_RAID10) ? 2 : 1);
	for (uint32_t i = 0; i < c->num_stripes; i++) {
		chunk->stripe[i].devid = htole64(c->stripes[i].devid);
		chunk->stripe[i].offset = htole64(c->stripes[i].physical);
		memcpy(chunk->stripe[i].dev_uuid, mk->devs[c->stripes[i].devid - 1].uuid,
		       BTRFS_UUID_SIZE);
	}
	return btrfs_chunk_item_size((int)c->num_stripes);
}

static void dev_item(const struct mkfs *mk, const struct mk_dev *d, uint64_t devid,
		     struct btrfs_dev_item *item)
{
	memset(item, 0, sizeof(*item));
	item->devid = htole64(devid);
	item->total_bytes = htole64(d->size);
	item->bytes_used = htole64(d->bytes_used);
	item->io_align = htole32(mk->sectorsize);
	item->io_width = htole32(mk->sectorsize);
	item->sector_size = htole32(mk->sectorsize);
	item->type = htole64(d->hint);
	memcpy(item->uuid, d->uuid, BTRFS_UUID_SIZE);
	memcpy(item->fsid, mk->fsid, BTRFS_FSID_SIZE);
}

static int fill_chunk_tree(struct mkfs *mk)
{
	struct bx_tree_build *tb = &mk->trees[BX_MKFS_T_CHUNK];
	uint8_t buf[BX_MKFS_CHUNK_ITEM_MAX];
	int ret = 0;

	for (size_t i = 0; i < mk->nr_devs && !ret; i++) {
		struct btrfs_dev_item item;

		dev_item(mk, &mk->devs[i], i + 1, &item);
		ret = add(tb, BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, i + 1, &item,
			  sizeof(item));
	}
	for (int c = 0; c < 3 && !ret; c++) {
		size_t size = bx_mkfs_chunk_item(mk, mk->chunks[c], buf);

		ret = add(tb, BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
			  mk->chunks[c]->logical, buf, (uint32_t)size);
	}
	return ret;
}

/* The kernel's per-device error counters (btrfs_dev_stats_item), as mkfs.btrfs 6.19 writes them. */
#define DEV_STAT_VALUES 5

static int fill_dev_tree(struct mkfs *mk)
{
	struct bx_tree_build *tb = &mk->trees[BX_MKFS_T_DEV];
	const uint64_t stats[DEV_STAT_VALUES] = { 0 };
	int ret = 0;

	for (size_t i = 0; i < mk->nr_devs && !ret; i++)
		ret = add(tb, BTRFS_DEV_STATS_OBJECTID, BTRFS_PERSISTENT_ITEM_KEY, i + 1, stats,
			  sizeof(stats));

	for (int c = 0; c < 3 && !ret; c++) {
		const struct bx_mkfs_chunk *chunk = mk->chunks[c];

		for (uint32_t s = 0; s < chunk->num_stripes && !ret; s++) {
			struct btrfs_dev_extent ext = {
				.chunk_tree = htole64(BTRFS_CHUNK_TREE_OBJECTID),
				.chunk_objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID),
				.chunk_offset = htole64(chunk->logical),
				.length = htole64(chunk->stripe_size),
			};

			memcpy(ext.chunk_tree_uuid, mk->chunk_uuid, BTRFS_UUID_SIZE);
			ret = add(tb, chunk->stripes[s].devid, BTRFS_DEV_EXTENT_KEY,
				  chunk->stripes[s].physical, &ext, sizeof(ext));
		}
	}
	return ret;
}

/* ---- the subvolume trees ---- */

static void set_time(struct btrfs_timespec *ts, uint64_t sec)
{
	ts->sec = htole64(sec);
	ts->nsec = 0;
}

static void dir_inode(const struct mkfs *mk, struct btrfs_inode_item *inode, uint64_t nbytes,
		      bool otime)
{
	memset(inode, 0, sizeof(*inode));
	inode->generation = htole64(BX_MKFS_GENERATION);
	inode->transid = htole64(BX_MKFS_GENERATION);
	inode->nbytes = htole64(nbytes);
	inode->nlink = htole32(1);
	inode->mode = htole32(S_IFDIR | 0755);
	set_time(&inode->atime, mk->now);
	set_time(&inode->ctime, mk->now);
	set_time(&inode->mtime, mk->now);
	if (otime)
		set_time(&inode->otime, mk->now);
}

static int add_inode_ref(struct bx_tree_build *tb, uint64_t ino, uint64_t parent,
			 const char *name)
{
	uint8_t buf[sizeof(struct btrfs_inode_ref) + 16];
	struct btrfs_inode_ref *ref = (struct btrfs_inode_ref *)buf;
	size_t len = strlen(name);

	ref->index = 0;
	ref->name_len = htole16((uint16_t)len);
	memcpy(buf + sizeof(*ref), name, len);
	return add(tb, ino, BTRFS_INODE_REF_KEY, parent, buf, (uint32_t)(sizeof(*ref) + len));
}

/* The top directory (inode 256) of a subvolume tree. */
static int fill_root_dir(struct mkfs *mk, int t, uint64_t nbytes, bool otime)
{
	struct bx_tree_build *tb = &mk->trees[t];
	struct btrfs_inode_item inode;
	int ret;

	dir_inode(mk, &inode, nbytes, otime);
	ret = add(tb, BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0, &inode, sizeof(inode));
	if (!ret)
		ret = add_inode_ref(tb, BTRFS_FIRST_FREE_OBJECTID, BTRFS_FIRST_FREE_OBJECTID, "..");
	return ret;
}

static int fill_uuid_tree(struct mkfs *mk)
{
	uint64_t objectid, offset, subvol = htole64(BTRFS_FS_TREE_OBJECTID);

	memcpy(&objectid, mk->subvol_uuid, 8);
	memcpy(&offset, mk->subvol_uuid + 8, 8);
	return add(&mk->trees[BX_MKFS_T_UUID], le64toh(objectid), BTRFS_UUID_KEY_SUBVOL,
		   le64toh(offset), &subvol, sizeof(subvol));
}

/*
 * The quota tree: the status item and the top subvolume's qgroup, which
 * holds the fs tree's blocks. Simple quotas (squota) count what was written
 * from enable_gen on, a field the status item then has: this filesystem's
 * one generation, so every block counts, as in qgroup mode.
 */
static int fill_quota_tree(struct mkfs *mk)
{
	struct bx_tree_build *tb = &mk->trees[BX_MKFS_T_QUOTA];
	uint64_t fs_bytes = mk->trees[BX_MKFS_T_FS].nr_blocks * (uint64_t)mk->nodesize;
	bool simple = mk->features & BX_MKFS_F_SQUOTA;
	struct {
		struct btrfs_qgroup_status_item item;
		uint64_t enable_gen;
	} __attribute__((packed)) status = {
		.item.version = htole64(QGROUP_STATUS_VERSION),
		.item.generation = htole64(BX_MKFS_GENERATION),
		.item.flags = htole64(QGROUP_STATUS_FLAG_ON |
				      (simple ? QGROUP_STATUS_FLAG_SIMPLE_MODE : 0)),
		.enable_gen = htole64(BX_MKFS_GENERATION),
	};
	struct btrfs_qgroup_info_item info = {
		.generation = htole64(BX_MKFS_GENERATION),
		.rfer = htole64(fs_bytes),
		.rfer_cmpr = htole64(fs_bytes),
		.excl = htole64(fs_bytes),
		.excl_cmpr = htole64(fs_bytes),
	};
	struct btrfs_qgroup_limit_item limit = { 0 };
	int ret;

	ret = add(tb, 0, BTRFS_QGROUP_STATUS_KEY, 0, &status,
		  simple ? sizeof(status) : sizeof(status.item));
	if (!ret)
		ret = add(tb, 0, BTRFS_QGROUP_INFO_KEY, BTRFS_FS_TREE_OBJECTID, &info, sizeof(info));
	if (!ret)
		ret = add(tb, 0, BTRFS_QGROUP_LIMIT_KEY, BTRFS_FS_TREE_OBJECTID, &limit,
			  sizeof(limit));
	return ret;
}

/* ---- the root tree ---- */

static int add_root_item(struct mkfs *mk, int t)
{
	const struct mk_placed *p = &mk->placed[t];
	struct btrfs_root_item ri;

	memset(&ri, 0, sizeof(ri));
	/* The embedded inode as mkfs.btrfs fills it. */
	ri.inode.generation = htole64(1);
	ri.inode.size = htole64(3);
	ri.inode.nbytes = htole64(mk->nodesize);
	ri.inode.nlink = htole32(1);
	ri.inode.mode = htole32(S_IFDIR | 0755);
	ri.generation = htole64(BX_MKFS_GENERATION);
	ri.generation_v2 = htole64(BX_MKFS_GENERATION);
	ri.bytenr = htole64(p->blocks[p->nr - 1].bytenr);
	ri.level = (uint8_t)p->level;
	ri.bytes_used = htole64(p->nr * (uint64_t)mk->nodesize);
	ri.refs = htole32(1);
	if (t == BX_MKFS_T_FS || t == BX_MKFS_T_DATA_RELOC)
		ri.root_dirid = htole64(BTRFS_FIRST_FREE_OBJECTID);
	if (t == BX_MKFS_T_FS) {
		memcpy(ri.uuid, mk->subvol_uuid, BTRFS_UUID_SIZE);
		set_time(&ri.ctime, mk->now);
		set_time(&ri.otime, mk->now);
	}
	return add(&mk->trees[BX_MKFS_T_ROOT], mk->trees[t].owner, BTRFS_ROOT_ITEM_KEY, 0, &ri,
		   sizeof(ri));
}

static int fill_root_tree(struct mkfs *mk)
{
	struct bx_tree_build *tb = &mk->trees[BX_MKFS_T_ROOT];
	const size_t name_len = strlen(default_subvol_name);
	uint8_t buf[sizeof(struct btrfs_dir_item) + sizeof(default_subvol_name)];
	struct btrfs_dir_item *di = (struct btrfs_dir_item *)buf;
	struct btrfs_inode_item inode;
	int ret = 0;

	for (int t = 0; t < BX_MKFS_NR_TREES && !ret; t++)
		if (mk->present[t] && t != BX_MKFS_T_ROOT && t != BX_MKFS_T_CHUNK)
			ret = add_root_item(mk, t);
	/* The root tree directory with its "default" entry, and the back reference. */
	if (!ret)
		ret = add_inode_ref(tb, BTRFS_FS_TREE_OBJECTID, BTRFS_ROOT_TREE_DIR_OBJECTID,
				    default_subvol_name);
	dir_inode(mk, &inode, mk->nodesize, true);
	if (!ret)
		ret = add(tb, BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_INODE_ITEM_KEY, 0, &inode,
			  sizeof(inode));
	if (!ret)
		ret = add_inode_ref(tb, BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_ROOT_TREE_DIR_OBJECTID,
				    "..");
	memset(buf, 0, sizeof(buf));
	di->location.objectid = htole64(BTRFS_FS_TREE_OBJECTID);
	di->location.type = BTRFS_ROOT_ITEM_KEY;
	di->location.offset = htole64(UINT64_MAX);
	di->transid = htole64(BX_MKFS_GENERATION);
	di->name_len = htole16((uint16_t)name_len);
	di->type = BTRFS_FT_DIR;
	memcpy(buf + sizeof(*di), default_subvol_name, name_len);
	if (!ret)
		ret = add(tb, BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			  name_hash(default_subvol_name, name_len), buf,
			  (uint32_t)(sizeof(*di) + name_len));
	return ret;
}

/* ---- the extent and free space trees ---- */

static int add_tree_block_ref(struct mkfs *mk, const struct bx_tb_block *blk, uint64_t owner)
{
	uint8_t buf[sizeof(struct btrfs_extent_item) + sizeof(struct btrfs_tree_block_info) +
		    sizeof(struct btrfs_extent_inline_ref)];
	struct btrfs_extent_item *ei = (struct btrfs_extent_item *)buf;
	struct btrfs_extent_inline_ref *ref;
	bool skinny = mk->features & BX_MKFS_F_SKINNY_METADATA;
	size_t size = sizeof(*ei);

	memset(buf, 0, sizeof(buf));
	ei->refs = htole64(1);
	ei->generation = htole64(BX_MKFS_GENERATION);
	ei->flags = htole64(BTRFS_EXTENT_FLAG_TREE_BLOCK);
	if (!skinny) {
		struct btrfs_tree_block_info *info = (struct btrfs_tree_block_info *)(buf + size);

		info->key.objectid = htole64(blk->first_key.objectid);
		info->key.type = blk->first_key.type;
		info->key.offset = htole64(blk->first_key.offset);
		info->level = (uint8_t)blk->level;
		size += sizeof(*info);
	}
	ref = (struct btrfs_extent_inline_ref *)(buf + size);
	ref->type = BTRFS_TREE_BLOCK_REF_KEY;
	ref->offset = htole64(owner);
	size += sizeof(*ref);
	if (skinny)
		return add(&mk->trees[BX_MKFS_T_EXTENT], blk->bytenr, BTRFS_METADATA_ITEM_KEY,
			   (uint64_t)blk->level, buf, (uint32_t)size);
	return add(&mk->trees[BX_MKFS_T_EXTENT], blk->bytenr, BTRFS_EXTENT_ITEM_KEY, mk->nodesize,
		   buf, (uint32_t)size);
}

/* The block group items: in their own tree with block-group-tree, else in the extent tree. */
static int add_block_groups(struct mkfs *mk, struct bx_tree_build *tb)
{
	int ret = 0;

	for (int c = 0; c < 3 && !ret; c++) {
		const struct bx_mkfs_chunk *chunk = mk->chunks[c];
		struct btrfs_block_group_item bg = {
			.used = htole64(chunk->used),
			.chunk_objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID),
			.flags = htole64(chunk->type),
		};

		ret = add(tb, chunk->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, chunk->length, &bg,
			  sizeof(bg));
	}
	return ret;
}

static int fill_block_group_tree(struct mkfs *mk)
{
	return add_block_groups(mk, &mk->trees[BX_MKFS_T_BLOCK_GROUP]);
}

static int fill_extent_tree(struct mkfs *mk)
{
	int ret = 0;

	if (!mk->present[BX_MKFS_T_BLOCK_GROUP])
		ret = add_block_groups(mk, &mk->trees[BX_MKFS_T_EXTENT]);
	for (int t = 0; t < BX_MKFS_NR_TREES && !ret; t++) {
		const struct mk_placed *p = &mk->placed[t];

		for (size_t b = 0; mk->present[t] && b < p->nr && !ret; b++)
			ret = add_tree_block_ref(mk, &p->blocks[b], mk->trees[t].owner);
	}
	return ret;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* FREE_SPACE_INFO and FREE_SPACE_EXTENT items of one block group: the gaps between its blocks. */
static int fill_free_space_bg(struct mkfs *mk, const struct bx_mkfs_chunk *chunk,
			      const uint64_t *used, size_t nr_used)
{
	struct bx_tree_build *tb = &mk->trees[BX_MKFS_T_FREE_SPACE];
	uint64_t at = chunk->logical, end = chunk->logical + chunk->length;
	struct btrfs_free_space_info info = { 0 };
	uint32_t count = 0;
	int ret = 0;

	for (size_t i = 0; i <= nr_used && !ret; i++) {
		uint64_t next = i < nr_used ? used[i] : end;

		if (next > at) {
			ret = add(tb, at, BTRFS_FREE_SPACE_EXTENT_KEY, next - at, NULL, 0);
			count++;
		}
		if (i < nr_used)
			at = used[i] + mk->nodesize;
	}
	info.extent_count = htole32(count);
	if (!ret)
		ret = add(tb, chunk->logical, BTRFS_FREE_SPACE_INFO_KEY, chunk->length, &info,
			  sizeof(info));
	return ret;
}

static int fill_free_space_tree(struct mkfs *mk)
{
	size_t total = 0;
	uint64_t *addrs;
	int ret = 0;

	for (int t = 0; t < BX_MKFS_NR_TREES; t++)
		if (mk->present[t])
			total += mk->placed[t].nr;
	addrs = malloc((total + 1) * sizeof(*addrs));
	if (!addrs)
		return bx_error(-ENOMEM, "out of memory");
	for (int c = 0; c < 3 && !ret; c++) {
		const struct bx_mkfs_chunk *chunk = mk->chunks[c];
		size_t n = 0;

		for (int t = 0; t < BX_MKFS_NR_TREES; t++) {
			const struct mk_placed *p = &mk->placed[t];

			for (size_t b = 0; mk->present[t] && b < p->nr; b++)
				if (p->blocks[b].bytenr >= chunk->logical &&
				    p->blocks[b].bytenr < chunk->logical + chunk->length)
					addrs[n++] = p->blocks[b].bytenr;
		}
		qsort(addrs, n, sizeof(*addrs), u64_cmp);
		ret = fill_free_space_bg(mk, chunk, addrs, n);
	}
	free(addrs);
	return ret;
}

/* ---- planning ---- */

/* Block addresses for every tree: the chunk tree in the system chunk, the rest in metadata. */
static int assign_addresses(struct mkfs *mk)
{
	uint64_t cursor[3] = { 0 };
	int ret = 0;

	for (int c = 0; c < 3; c++)
		mk->chunks[c]->used = 0;
	mk->bytes_used = 0;
	for (int t = 0; t < BX_MKFS_NR_TREES && !ret; t++) {
		struct bx_tree_build *tb = &mk->trees[t];
		int c = t == BX_MKFS_T_CHUNK ? BX_MKFS_C_SYSTEM : BX_MKFS_C_METADATA;
		struct mk_placed *p = &mk->placed[t];

		if (!mk->present[t])
			continue;
		for (size_t b = 0; b < tb->nr_blocks && !ret; b++) {
			ret = bx_mkfs_next_block(mk, c, &cursor[c], &tb->blocks[b].bytenr);
			mk->chunks[c]->used += mk->nodesize;
			mk->bytes_used += mk->nodesize;
		}
		/* A copy: filling the tree again drops its layout. */
		free(p->blocks);
		p->blocks = malloc(tb->nr_blocks * sizeof(*p->blocks));
		if (!p->blocks && !ret)
			ret = bx_error(-ENOMEM, "out of memory");
		if (p->blocks)
			memcpy(p->blocks, tb->blocks, tb->nr_blocks * sizeof(*p->blocks));
		p->nr = p->blocks ? tb->nr_blocks : 0;
		p->level = tb->level;
	}
	return ret;
}

static int refill(struct mkfs *mk, int t, int (*fill)(struct mkfs *mk))
{
	int ret;

	bx_tb_reset(&mk->trees[t]);
	ret = fill(mk);
	if (!ret)
		ret = bx_tb_layout(&mk->trees[t], mk->nodesize);
	return ret;
}

static int no_items(struct mkfs *mk)
{
	return 0;
}

static int fill_fs_tree(struct mkfs *mk)
{
	return fill_root_dir(mk, BX_MKFS_T_FS, mk->nodesize, true);
}

static int fill_data_reloc_tree(struct mkfs *mk)
{
	return fill_root_dir(mk, BX_MKFS_T_DATA_RELOC, 0, false);
}

/* The trees whose items depend on where the blocks are (and the chunks' used bytes). */
static const struct {
	int tree;
	int (*fill)(struct mkfs *mk);
} dependent[] = {
	{ BX_MKFS_T_EXTENT, fill_extent_tree },
	{ BX_MKFS_T_FREE_SPACE, fill_free_space_tree },
	{ BX_MKFS_T_BLOCK_GROUP, fill_block_group_tree },
	{ BX_MKFS_T_ROOT, fill_root_tree },
};
#define NR_DEPENDENT (sizeof(dependent) / sizeof(dependent[0]))

int bx_mkfs_plan_trees(struct mkfs *mk)
{
	static const struct {
		int tree;
		int (*fill)(struct mkfs *mk);
	} fixed[] = {
		{ BX_MKFS_T_CHUNK, fill_chunk_tree },
		{ BX_MKFS_T_DEV, fill_dev_tree },
		{ BX_MKFS_T_FS, fill_fs_tree },
		{ BX_MKFS_T_CSUM, no_items },
		{ BX_MKFS_T_UUID, fill_uuid_tree },
		{ BX_MKFS_T_DATA_RELOC, fill_data_reloc_tree },
		{ BX_MKFS_T_QUOTA, fill_quota_tree },
	};
	size_t counts[NR_DEPENDENT];
	int ret = 0;

	for (int t = 0; t < BX_MKFS_NR_TREES; t++) {
		bx_tb_init(&mk->trees[t], tree_ids[t]);
		mk->present[t] = true;
	}
	mk->present[BX_MKFS_T_QUOTA] = mk->features & (BX_MKFS_F_QUOTA | BX_MKFS_F_SQUOTA);
	mk->present[BX_MKFS_T_FREE_SPACE] = mk->features & BX_MKFS_F_FREE_SPACE_TREE;
	mk->present[BX_MKFS_T_BLOCK_GROUP] = mk->features & BX_MKFS_F_BLOCK_GROUP_TREE;
	/* The quota tree counts the fs tree's blocks, so it comes after it. */
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && !ret; i++)
		if (mk->present[fixed[i].tree])
			ret = refill(mk, fixed[i].tree, fixed[i].fill);
	/* First guesses: one leaf each. */
	for (size_t i = 0; i < NR_DEPENDENT && !ret; i++)
		ret = refill(mk, dependent[i].tree, no_items);
	for (int round = 0; !ret; round++) {
		bool settled = true;

		if (round == 32)
			return bx_error(-ELOOP, "the tree layout does not settle");
		ret = assign_addresses(mk);
		for (size_t i = 0; i < NR_DEPENDENT && !ret; i++) {
			counts[i] = mk->trees[dependent[i].tree].nr_blocks;
			if (mk->present[dependent[i].tree])
				ret = refill(mk, dependent[i].tree, dependent[i].fill);
			settled &= counts[i] == mk->trees[dependent[i].tree].nr_blocks;
		}
		if (ret || !settled)
			continue;
		/*
		 * Same block counts: the same addresses. Fill once more so the
		 * contents name the final layout (first keys, root levels).
		 */
		ret = assign_addresses(mk);
		for (size_t i = 0; i < NR_DEPENDENT && !ret; i++) {
			if (mk->present[dependent[i].tree])
				ret = refill(mk, dependent[i].tree, dependent[i].fill);
			if (!ret && counts[i] != mk->trees[dependent[i].tree].nr_blocks)
				ret = bx_error(-EUCLEAN, "the tree layout changed on the last pass");
		}
		if (!ret)
			ret = assign_addresses(mk);
		break;
	}
	return ret;
}

int bx_mkfs_render_trees(struct mkfs *mk)
{
	struct bx_tb_header hdr = {
		.nodesize = mk->nodesize,
		.generation = BX_MKFS_GENERATION,
		.csum_type = mk->opts->csum_type,
	};
	size_t total = 0, n = 0;
	int ret = 0;

	memcpy(hdr.fsid, mk->fsid, BTRFS_FSID_SIZE);
	memcpy(hdr.chunk_tree_uuid, mk->chunk_uuid, BTRFS_UUID_SIZE);
	for (int t = 0; t < BX_MKFS_NR_TREES; t++)
		if (mk->present[t])
			total += mk->trees[t].nr_blocks;
	if (posix_memalign((void **)&mk->render_buf, 4096, total * mk->nodesize))
		return bx_error(-ENOMEM, "out of memory");
	mk->rendered = calloc(total, sizeof(*mk->rendered));
	if (!mk->rendered)
		return bx_error(-ENOMEM, "out of memory");
	for (int t = 0; t < BX_MKFS_NR_TREES && !ret; t++) {
		const struct bx_tree_build *tb = &mk->trees[t];

		for (size_t b = 0; mk->present[t] && b < tb->nr_blocks && !ret; b++) {
			uint8_t *buf = mk->render_buf + n * (size_t)mk->nodesize;

			ret = bx_tb_render(tb, b, &hdr, buf);
			mk->rendered[n].bytenr = tb->blocks[b].bytenr;
			mk->rendered[n].data = buf;
			n++;
		}
	}
	mk->nr_rendered = n;
	return ret;
}

/* ---- superblocks ---- */

static void fill_backup_root(const struct mkfs *mk, struct btrfs_root_backup *b)
{
	const struct bx_tree_build *t = mk->trees;
	const uint64_t gen = htole64(BX_MKFS_GENERATION);

	b->tree_root = htole64(bx_tb_root(&t[BX_MKFS_T_ROOT])->bytenr);
	b->tree_root_gen = gen;
	b->tree_root_level = (uint8_t)t[BX_MKFS_T_ROOT].level;
	b->chunk_root = htole64(bx_tb_root(&t[BX_MKFS_T_CHUNK])->bytenr);
	b->chunk_root_gen = gen;
	b->chunk_root_level = (uint8_t)t[BX_MKFS_T_CHUNK].level;
	b->extent_root = htole64(bx_tb_root(&t[BX_MKFS_T_EXTENT])->bytenr);
	b->extent_root_gen = gen;
	b->extent_root_level = (uint8_t)t[BX_MKFS_T_EXTENT].level;
	b->fs_root = htole64(bx_tb_root(&t[BX_MKFS_T_FS])->bytenr);
	b->fs_root_gen = gen;
	b->fs_root_level = (uint8_t)t[BX_MKFS_T_FS].level;
	b->dev_root = htole64(bx_tb_root(&t[BX_MKFS_T_DEV])->bytenr);
	b->dev_root_gen = gen;
	b->dev_root_level = (uint8_t)t[BX_MKFS_T_DEV].level;
	b->csum_root = htole64(bx_tb_root(&t[BX_MKFS_T_CSUM])->bytenr);
	b->csum_root_gen = gen;
	b->csum_root_level = (uint8_t)t[BX_MKFS_T_CSUM].level;
	b->total_bytes = htole64(mk->total_bytes);
	b->bytes_used = htole64(mk->bytes_used);
	b->num_devices = htole64(mk->nr_devs);
}

int bx_mkfs_super(const struct mkfs *mk, const struct mk_dev *d, int mirror,
		  enum bx_mkfs_sb_kind kind, struct btrfs_super_block *sb)
{
	const struct bx_mkfs_chunk *sys = mk->chunks[BX_MKFS_C_SYSTEM];
	struct btrfs_disk_key *key = (struct btrfs_disk_key *)sb->sys_chunk_array;
	uint64_t generation = BX_MKFS_GENERATION, incompat = mk->incompat;
	size_t size;

	memset(sb, 0, sizeof(*sb));
	if (kind == BX_MKFS_SB_UNFINISHED) {
		generation++;
		incompat |= BX_MKFS_INCOMPAT_UNFINISHED;
	}
	memcpy(sb->fsid, mk->fsid, BTRFS_FSID_SIZE);
	sb->bytenr = htole64(btrfs_sb_offset(mirror));
	sb->flags = htole64(BX_HEADER_FLAG_WRITTEN);
	sb->magic = htole64(BTRFS_MAGIC);
	sb->generation = htole64(generation);
	sb->root = htole64(bx_tb_root(&mk->trees[BX_MKFS_T_ROOT])->bytenr);
	sb->chunk_root = htole64(bx_tb_root(&mk->trees[BX_MKFS_T_CHUNK])->bytenr);
	sb->total_bytes = htole64(mk->total_bytes);
	sb->bytes_used = htole64(mk->bytes_used);
	sb->root_dir_objectid = htole64(BTRFS_ROOT_TREE_DIR_OBJECTID);
	sb->num_devices = htole64(mk->nr_devs);
	sb->sectorsize = htole32(mk->sectorsize);
	sb->nodesize = htole32(mk->nodesize);
	sb->leafsize = htole32(mk->nodesize);
	sb->stripesize = htole32(mk->sectorsize);
	sb->chunk_root_generation = htole64(BX_MKFS_GENERATION);
	sb->compat_ro_flags = htole64(mk->compat_ro);
	sb->incompat_flags = htole64(incompat);
	sb->csum_type = htole16((uint16_t)mk->opts->csum_type);
	sb->root_level = (uint8_t)mk->trees[BX_MKFS_T_ROOT].level;
	sb->chunk_root_level = (uint8_t)mk->trees[BX_MKFS_T_CHUNK].level;
	dev_item(mk, d, d->dev->devid, &sb->dev_item);
	if (mk->opts->label)
		strncpy(sb->label, mk->opts->label, BTRFS_LABEL_SIZE - 1);
	/* No v1 space cache: generation 0 with the free space tree, else "invalid". */
	sb->cache_generation = htole64((mk->features & BX_MKFS_F_FREE_SPACE_TREE) ? 0 : UINT64_MAX);
	sb->uuid_tree_generation = htole64(BX_MKFS_GENERATION);
	/* The system chunk array: the system chunk's key and item. */
	key->objectid = htole64(BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	key->type = BTRFS_CHUNK_ITEM_KEY;
	key->offset = htole64(sys->logical);
	size = bx_mkfs_chunk_item(mk, sys, sb->sys_chunk_array + sizeof(*key));
	sb->sys_chunk_array_size = htole32((uint32_t)(sizeof(*key) + size));
	fill_backup_root(mk, &sb->super_roots[0]);
	if (btrfsx_csum(mk->opts->csum_type, (uint8_t *)sb + BTRFS_CSUM_SIZE,
			BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb->csum))
		return bx_error(-EINVAL, "unknown checksum type %u", mk->opts->csum_type);
	return 0;
}
