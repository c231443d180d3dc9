/* Decoders of tree items for dump-tree: names, key display, fields per item type. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmds/inspect-items.h"
#include "common/units.h"

static const struct {
	uint8_t type;
	const char *name;
} key_types[] = {
	{ 0, "UNTYPED" },
	{ BTRFS_INODE_ITEM_KEY, "INODE_ITEM" },
	{ BTRFS_INODE_REF_KEY, "INODE_REF" },
	{ BTRFS_INODE_EXTREF_KEY, "INODE_EXTREF" },
	{ BTRFS_XATTR_ITEM_KEY, "XATTR_ITEM" },
	{ BTRFS_VERITY_DESC_ITEM_KEY, "VERITY_DESC_ITEM" },
	{ BTRFS_VERITY_MERKLE_ITEM_KEY, "VERITY_MERKLE_ITEM" },
	{ BTRFS_ORPHAN_ITEM_KEY, "ORPHAN_ITEM" },
	{ BTRFS_DIR_LOG_ITEM_KEY, "DIR_LOG_ITEM" },
	{ BTRFS_DIR_LOG_INDEX_KEY, "DIR_LOG_INDEX" },
	{ BTRFS_DIR_ITEM_KEY, "DIR_ITEM" },
	{ BTRFS_DIR_INDEX_KEY, "DIR_INDEX" },
	{ BTRFS_EXTENT_DATA_KEY, "EXTENT_DATA" },
	{ BTRFS_EXTENT_CSUM_KEY, "EXTENT_CSUM" },
	{ BTRFS_ROOT_ITEM_KEY, "ROOT_ITEM" },
	{ BTRFS_ROOT_BACKREF_KEY, "ROOT_BACKREF" },
	{ BTRFS_ROOT_REF_KEY, "ROOT_REF" },
	{ BTRFS_EXTENT_ITEM_KEY, "EXTENT_ITEM" },
	{ BTRFS_METADATA_ITEM_KEY, "METADATA_ITEM" },
	{ BTRFS_EXTENT_OWNER_REF_KEY, "EXTENT_OWNER_REF" },
	{ BTRFS_TREE_BLOCK_REF_KEY, "TREE_BLOCK_REF" },
	{ BTRFS_EXTENT_DATA_REF_KEY, "EXTENT_DATA_REF" },
	{ BTRFS_SHARED_BLOCK_REF_KEY, "SHARED_BLOCK_REF" },
	{ BTRFS_SHARED_DATA_REF_KEY, "SHARED_DATA_REF" },
	{ BTRFS_BLOCK_GROUP_ITEM_KEY, "BLOCK_GROUP_ITEM" },
	{ BTRFS_FREE_SPACE_INFO_KEY, "FREE_SPACE_INFO" },
	{ BTRFS_FREE_SPACE_EXTENT_KEY, "FREE_SPACE_EXTENT" },
	{ BTRFS_FREE_SPACE_BITMAP_KEY, "FREE_SPACE_BITMAP" },
	{ BTRFS_DEV_EXTENT_KEY, "DEV_EXTENT" },
	{ BTRFS_DEV_ITEM_KEY, "DEV_ITEM" },
	{ BTRFS_CHUNK_ITEM_KEY, "CHUNK_ITEM" },
	{ BTRFS_RAID_STRIPE_KEY, "RAID_STRIPE" },
	{ BTRFS_QGROUP_STATUS_KEY, "QGROUP_STATUS" },
	{ BTRFS_QGROUP_INFO_KEY, "QGROUP_INFO" },
	{ BTRFS_QGROUP_LIMIT_KEY, "QGROUP_LIMIT" },
	{ BTRFS_QGROUP_RELATION_KEY, "QGROUP_RELATION" },
	{ BTRFS_TEMPORARY_ITEM_KEY, "TEMPORARY_ITEM" },
	{ BTRFS_PERSISTENT_ITEM_KEY, "PERSISTENT_ITEM" },
	{ BTRFS_DEV_REPLACE_KEY, "DEV_REPLACE" },
	{ BTRFS_UUID_KEY_SUBVOL, "UUID_KEY_SUBVOL" },
	{ BTRFS_UUID_KEY_RECEIVED_SUBVOL, "UUID_KEY_RECEIVED_SUBVOL" },
	{ BTRFS_STRING_ITEM_KEY, "STRING_ITEM" },
};

const char *bx_key_type_name(uint8_t type)
{
	for (size_t i = 0; i < sizeof(key_types) / sizeof(key_types[0]); i++)
		if (key_types[i].type == type)
			return key_types[i].name;
	return NULL;
}

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

const char *bx_objectid_name(uint64_t objectid, uint8_t type)
{
	if (type == BTRFS_DEV_ITEM_KEY && objectid == BTRFS_DEV_ITEMS_OBJECTID)
		return "DEV_ITEMS";
	if (type == BTRFS_CHUNK_ITEM_KEY && objectid == BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		return "FIRST_CHUNK_TREE";
	if (type == BTRFS_PERSISTENT_ITEM_KEY && objectid == BTRFS_DEV_STATS_OBJECTID)
		return "DEV_STATS";
	if (objectid == BTRFS_EXTENT_CSUM_OBJECTID)
		return "EXTENT_CSUM";
	if (objectid == BTRFS_FREE_SPACE_OBJECTID)
		return "FREE_SPACE";
	if (objectid == BTRFS_ORPHAN_OBJECTID)
		return "ORPHAN";
	if (objectid == BTRFS_BALANCE_OBJECTID)
		return "BALANCE";
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++)
		if (trees[i].id == objectid && (objectid > BTRFS_ROOT_TREE_DIR_OBJECTID ||
						type == BTRFS_ROOT_ITEM_KEY ||
						type == BTRFS_ROOT_REF_KEY ||
						type == BTRFS_ROOT_BACKREF_KEY))
			return trees[i].objectid;
	return NULL;
}

/* The decoders: one per item type, each given the item's bytes and size. */
struct item_ctx {
	struct bx_out *out;
	const struct bx_fs *fs;
	const struct btrfs_key *key;
	const uint8_t *ptr;
	uint32_t size;
};

typedef void (*item_decoder)(const struct item_ctx *ic);

static void too_small(const struct item_ctx *ic, size_t need)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "item of %u bytes is smaller than its type needs (%zu)",
		 ic->size, need);
	bx_out_str(ic->out, "decode_error", msg, 0);
}

static void decode_dev_item(const struct item_ctx *ic)
{
	const struct btrfs_dev_item *d = (const void *)ic->ptr;

	if (ic->size < sizeof(*d))
		return too_small(ic, sizeof(*d));
	bx_out_u64(ic->out, "devid", le64toh(d->devid), 0);
	bx_out_u64(ic->out, "total_bytes", le64toh(d->total_bytes), 0);
	bx_out_u64(ic->out, "bytes_used", le64toh(d->bytes_used), 0);
	bx_out_u64(ic->out, "io_align", le32toh(d->io_align), 0);
	bx_out_u64(ic->out, "io_width", le32toh(d->io_width), 0);
	bx_out_u64(ic->out, "sector_size", le32toh(d->sector_size), 0);
	bx_out_u64(ic->out, "type", le64toh(d->type), BX_F_HEX);
	bx_out_u64(ic->out, "generation", le64toh(d->generation), 0);
	bx_out_u64(ic->out, "start_offset", le64toh(d->start_offset), 0);
	bx_out_u64(ic->out, "dev_group", le32toh(d->dev_group), 0);
	bx_out_u64(ic->out, "seek_speed", d->seek_speed, 0);
	bx_out_u64(ic->out, "bandwidth", d->bandwidth, 0);
	bx_out_uuid(ic->out, "uuid", d->uuid, 0);
	bx_out_uuid(ic->out, "fsid", d->fsid, 0);
}

static void decode_chunk_item(const struct item_ctx *ic)
{
	const struct btrfs_chunk *c = (const void *)ic->ptr;
	int num_stripes;

	if (ic->size < sizeof(*c))
		return too_small(ic, sizeof(*c));
	num_stripes = le16toh(c->num_stripes);
	if (ic->size < btrfs_chunk_item_size(num_stripes))
		return too_small(ic, btrfs_chunk_item_size(num_stripes));
	bx_out_u64(ic->out, "length", le64toh(c->length), 0);
	bx_out_u64(ic->out, "owner", le64toh(c->owner), 0);
	bx_out_u64(ic->out, "stripe_len", le64toh(c->stripe_len), 0);
	bx_out_u64(ic->out, "type", le64toh(c->type), BX_F_HEX);
	bx_out_str(ic->out, "profile", bx_profile_name(le64toh(c->type)), 0);
	bx_out_u64(ic->out, "io_align", le32toh(c->io_align), 0);
	bx_out_u64(ic->out, "io_width", le32toh(c->io_width), 0);
	bx_out_u64(ic->out, "sector_size", le32toh(c->sector_size), 0);
	bx_out_u64(ic->out, "num_stripes", (uint64_t)num_stripes, 0);
	bx_out_u64(ic->out, "sub_stripes", le16toh(c->sub_stripes), 0);
	bx_out_list_begin(ic->out, "stripes");
	for (int i = 0; i < num_stripes; i++) {
		bx_out_obj_begin(ic->out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(ic->out, "stripe", (uint64_t)i, BX_F_TEXT_ONLY);
		bx_out_u64(ic->out, "devid", le64toh(c->stripe[i].devid), 0);
		bx_out_u64(ic->out, "offset", le64toh(c->stripe[i].offset), 0);
		bx_out_uuid(ic->out, "dev_uuid", c->stripe[i].dev_uuid, 0);
		bx_out_obj_end(ic->out);
	}
	bx_out_list_end(ic->out);
}

static const struct {
	uint8_t type;
	item_decoder decode;
} decoders[] = {
	{ BTRFS_DEV_ITEM_KEY, decode_dev_item },
	{ BTRFS_CHUNK_ITEM_KEY, decode_chunk_item },
};

void bx_print_leaf_item(struct bx_out *out, const struct bx_fs *fs, const struct bx_eb *eb,
			int slot)
{
	struct btrfs_key key;
	const char *obj_name, *type_name;
	char objbuf[32], typebuf[8];
	struct item_ctx ic;

	bx_item_key(eb, slot, &key);
	obj_name = bx_objectid_name(key.objectid, key.type);
	type_name = bx_key_type_name(key.type);
	if (!obj_name) {
		snprintf(objbuf, sizeof(objbuf), "%llu", (unsigned long long)key.objectid);
		obj_name = objbuf;
	}
	if (!type_name) {
		snprintf(typebuf, sizeof(typebuf), "%u", key.type);
		type_name = typebuf;
	}
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_textf(out, "item %d key (%s %s %llu) itemoff %u itemsize %u", slot, obj_name,
		     type_name, (unsigned long long)key.offset, le32toh(bx_leaf_item(eb, slot)->offset),
		     bx_item_size(eb, slot));
	bx_out_u64(out, "slot", (uint64_t)slot, BX_F_JSON_ONLY);
	bx_out_obj_begin(out, "key", BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "objectid", key.objectid, 0);
	bx_out_u64(out, "type", key.type, 0);
	bx_out_u64(out, "offset", key.offset, 0);
	bx_out_obj_end(out);
	bx_out_str(out, "type_name", bx_key_type_name(key.type), BX_F_JSON_ONLY);
	bx_out_u64(out, "itemoff", le32toh(bx_leaf_item(eb, slot)->offset), BX_F_JSON_ONLY);
	bx_out_u64(out, "itemsize", bx_item_size(eb, slot), BX_F_JSON_ONLY);
	ic = (struct item_ctx){ out, fs, &key, bx_item_ptr(eb, slot), bx_item_size(eb, slot) };
	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++) {
		if (decoders[i].type == key.type) {
			bx_out_text_break(out);
			decoders[i].decode(&ic);
			break;
		}
	}
	bx_out_obj_end(out);
}
