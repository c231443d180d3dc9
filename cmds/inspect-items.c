/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Decoders of tree items for dump-tree: names, key display, fields per item type. */
#include <stdio.h>
#include <stdlib.h>
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

/* Object ids keys show by name, as btrfs-progs 6.19's dump-tree prints them. */
static const struct {
	uint64_t objectid;
	const char *name;
} objectid_names[] = {
	{ BTRFS_ROOT_TREE_OBJECTID, "ROOT_TREE" },
	{ BTRFS_EXTENT_TREE_OBJECTID, "EXTENT_TREE" },
	{ BTRFS_CHUNK_TREE_OBJECTID, "CHUNK_TREE" },
	{ BTRFS_DEV_TREE_OBJECTID, "DEV_TREE" },
	{ BTRFS_FS_TREE_OBJECTID, "FS_TREE" },
	{ BTRFS_ROOT_TREE_DIR_OBJECTID, "ROOT_TREE_DIR" },
	{ BTRFS_CSUM_TREE_OBJECTID, "CSUM_TREE" },
	{ BTRFS_QUOTA_TREE_OBJECTID, "QUOTA_TREE" },
	{ BTRFS_UUID_TREE_OBJECTID, "UUID_TREE" },
	{ BTRFS_FREE_SPACE_TREE_OBJECTID, "FREE_SPACE_TREE" },
	{ BTRFS_BLOCK_GROUP_TREE_OBJECTID, "BLOCK_GROUP_TREE" },
	{ BTRFS_RAID_STRIPE_TREE_OBJECTID, "RAID_STRIPE_TREE" },
	{ BTRFS_REMAP_TREE_OBJECTID, "REMAP_TREE" },
	{ BTRFS_BALANCE_OBJECTID, "BALANCE" },
	{ BTRFS_ORPHAN_OBJECTID, "ORPHAN" },
	{ BTRFS_TREE_LOG_OBJECTID, "TREE_LOG" },
	{ BTRFS_TREE_LOG_FIXUP_OBJECTID, "LOG_FIXUP" },
	{ BTRFS_TREE_RELOC_OBJECTID, "TREE_RELOC" },
	{ BTRFS_DATA_RELOC_TREE_OBJECTID, "DATA_RELOC_TREE" },
	{ BTRFS_EXTENT_CSUM_OBJECTID, "EXTENT_CSUM" },
	{ BTRFS_FREE_SPACE_OBJECTID, "FREE_SPACE" },
	{ BTRFS_FREE_INO_OBJECTID, "FREE_INO" },
	{ BTRFS_CSUM_CHANGE_OBJECTID, "CSUM_CHANGE" },
	{ BTRFS_MULTIPLE_OBJECTIDS, "MULTIPLE" },
	{ UINT64_MAX, "-1" },
};

const char *bx_objectid_name(uint64_t objectid, uint8_t type)
{
	/* Keys whose object id is a device or a count, never a tree. */
	if (type == BTRFS_PERSISTENT_ITEM_KEY)
		return objectid == BTRFS_DEV_STATS_OBJECTID ? "DEV_STATS" : NULL;
	if (type == BTRFS_DEV_EXTENT_KEY)
		return NULL;
	if (type == BTRFS_DEV_ITEM_KEY && objectid == BTRFS_DEV_ITEMS_OBJECTID)
		return "DEV_ITEMS";
	if (type == BTRFS_CHUNK_ITEM_KEY && objectid == BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		return "FIRST_CHUNK_TREE";
	for (size_t i = 0; i < sizeof(objectid_names) / sizeof(objectid_names[0]); i++)
		if (objectid_names[i].objectid == objectid)
			return objectid_names[i].name;
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

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void too_small(const struct item_ctx *ic, size_t need)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "item of %u bytes is smaller than its type needs (%zu)",
		 ic->size, need);
	bx_out_str(ic->out, "decode_error", msg, 0);
}

/* A line built without printf: a dump writes a key and a heading per item. */
struct line {
	char *p, *end;
};

static void line_str(struct line *l, const char *s)
{
	while (*s && l->p < l->end - 1)
		*l->p++ = *s++;
	*l->p = '\0';
}

static void line_u64(struct line *l, uint64_t value)
{
	char digits[24];

	line_str(l, bx_u64_decimal(value, digits, sizeof(digits)));
}

static void line_hex64(struct line *l, uint64_t value)
{
	char hex[24];

	snprintf(hex, sizeof(hex), "0x%016llx", (unsigned long long)value);
	line_str(l, hex);
}

/* A qgroup id as level/subvolume: 0/5. */
static void line_qgroup(struct line *l, uint64_t id)
{
	line_u64(l, id >> 48);
	line_str(l, "/");
	line_u64(l, id & ((1ULL << 48) - 1));
}

static bool is_qgroup_key(uint8_t type)
{
	return type == BTRFS_QGROUP_RELATION_KEY || type == BTRFS_QGROUP_INFO_KEY ||
	       type == BTRFS_QGROUP_LIMIT_KEY;
}

static void line_objectid(struct line *l, uint64_t objectid, uint8_t type)
{
	const char *name = bx_objectid_name(objectid, type);

	if (type == BTRFS_QGROUP_RELATION_KEY)
		line_qgroup(l, objectid);
	else if (type == BTRFS_UUID_KEY_SUBVOL || type == BTRFS_UUID_KEY_RECEIVED_SUBVOL)
		line_hex64(l, objectid);
	else if (name)
		line_str(l, name);
	else
		line_u64(l, objectid);
}

/*
 * "(256 INODE_ITEM 0)", as btrfs-progs 6.19 prints keys, so dumps can be
 * diffed: object ids of trees by name, qgroup ids as 0/5, the halves of a
 * UUID key in hex, an offset of -1 as -1 (but a ROOT_ITEM's offset, its
 * generation, as a number; a reloc tree's names its subvolume).
 */
static void line_key(struct line *l, const struct btrfs_key *key)
{
	const char *type_name = bx_key_type_name(key->type);
	char unknown[24];

	if (key->type == 0 && key->objectid != BTRFS_FREE_SPACE_OBJECTID)
		type_name = NULL;       /* UNTYPED only in the v1 space cache's keys */
	if (!type_name) {
		snprintf(unknown, sizeof(unknown), "UNKNOWN.%u", key->type);
		type_name = unknown;
	}
	line_str(l, "(");
	line_objectid(l, key->objectid, key->type);
	line_str(l, " ");
	line_str(l, type_name);
	line_str(l, " ");
	if (is_qgroup_key(key->type))
		line_qgroup(l, key->offset);
	else if (key->type == BTRFS_UUID_KEY_SUBVOL || key->type == BTRFS_UUID_KEY_RECEIVED_SUBVOL)
		line_hex64(l, key->offset);
	else if (key->type == BTRFS_ROOT_ITEM_KEY && key->objectid == BTRFS_TREE_RELOC_OBJECTID)
		line_objectid(l, key->offset, key->type);
	else if (key->type != BTRFS_ROOT_ITEM_KEY && key->offset == UINT64_MAX)
		line_str(l, "-1");
	else
		line_u64(l, key->offset);
	line_str(l, ")");
}

void bx_key_text(const struct btrfs_key *key, char *buf, size_t len)
{
	struct line l = { buf, buf + len };

	line_key(&l, key);
}

/* A key inside an item: text "(256 INODE_ITEM 0)", JSON {objectid, type, offset}. */
static void out_disk_key(struct bx_out *out, const char *name, const struct btrfs_disk_key *dk)
{
	struct btrfs_key key;
	char text[96];

	btrfs_disk_key_to_cpu(&key, dk);
	bx_key_text(&key, text, sizeof(text));
	bx_out_str(out, name, text, BX_F_TEXT_ONLY);
	bx_out_obj_begin(out, name, BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "objectid", key.objectid, 0);
	bx_out_u64(out, "type", key.type, 0);
	bx_out_u64(out, "offset", key.offset, 0);
	bx_out_obj_end(out);
}

/* Length of the well-formed UTF-8 sequence at @p (@len bytes left), 0 if there is none. */
static size_t utf8_seq_len(const uint8_t *p, size_t len)
{
	uint32_t cp;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
		return 0;
	if (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
		return 0;
	return n;
}

/*
 * Bytes from disk (a name, an xattr value) as a C string that is valid UTF-8,
 * so also valid in JSON: well-formed UTF-8 is kept, a backslash becomes \\,
 * control bytes, DEL and bytes that are not UTF-8 become \xNN. NULL: no memory.
 */
static char *escape_bytes(const uint8_t *p, size_t len)
{
	char *s = malloc(len * 4 + 1), *o = s;
	size_t i = 0;

	if (!s)
		return NULL;
	while (i < len) {
		size_t n = utf8_seq_len(p + i, len - i);

		if (n > 1 || (n == 1 && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')) {
			memcpy(o, p + i, n);
			o += n;
			i += n;
		} else if (p[i] == '\\') {
			*o++ = '\\';
			*o++ = '\\';
			i++;
		} else {
			o += sprintf(o, "\\x%02x", p[i++]);
		}
	}
	*o = '\0';
	return s;
}

static void out_bytes(struct bx_out *out, const char *key, const uint8_t *p, size_t len)
{
	char *s = escape_bytes(p, len);

	bx_out_str(out, key, s ? s : "<out of memory>", 0);
	free(s);
}

struct flag_name {
	uint64_t bit;
	const char *name;
};

static void append_word(char *buf, size_t len, const char *word)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? "|" : "", word);
}

/* "DATA|RAID1", "none", unknown bits as one hex number at the end. */
static void flags_to_str(char *buf, size_t len, uint64_t flags, const struct flag_name *names,
			 size_t nr)
{
	uint64_t rest = flags;
	char hex[24];

	buf[0] = '\0';
	for (size_t i = 0; i < nr; i++) {
		if (flags & names[i].bit) {
			append_word(buf, len, names[i].name);
			rest &= ~names[i].bit;
		}
	}
	if (rest) {
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)rest);
		append_word(buf, len, hex);
	}
	if (!flags)
		snprintf(buf, len, "none");
}

/* Flags: JSON the number and the names ("flags": 17, "flag_names": "DATA|RAID1"), text "0x11(DATA|RAID1)". */
static void out_flags(struct bx_out *out, const char *key, const char *names_key, uint64_t value,
		      const struct flag_name *names, size_t nr)
{
	char buf[400], text[440];

	flags_to_str(buf, sizeof(buf), value, names, nr);
	bx_out_u64(out, key, value, BX_F_JSON_ONLY);
	bx_out_str(out, names_key, buf, BX_F_JSON_ONLY);
	snprintf(text, sizeof(text), "0x%llx(%s)", (unsigned long long)value, buf);
	bx_out_str(out, key, text, BX_F_TEXT_ONLY);
}

static const char *enum_name(const char *const *names, size_t nr, uint64_t value)
{
	return value < nr ? names[value] : NULL;
}

/* An enumerated value: JSON the number and its name (null if unknown), text the name. */
static void out_enum(struct bx_out *out, const char *key, const char *name_key, uint64_t value,
		     const char *name)
{
	bx_out_u64(out, key, value, BX_F_JSON_ONLY);
	bx_out_str(out, name_key, name, BX_F_JSON_ONLY);
	if (name)
		bx_out_str(out, key, name, BX_F_TEXT_ONLY);
	else
		bx_out_u64(out, key, value, BX_F_TEXT_ONLY);
}

/* Text "sec.nsec", JSON {"sec": .., "nsec": ..}. */
static void out_time(struct bx_out *out, const char *key, const struct btrfs_timespec *ts)
{
	char text[40];

	snprintf(text, sizeof(text), "%llu.%09u", (unsigned long long)le64toh(ts->sec),
		 le32toh(ts->nsec));
	bx_out_str(out, key, text, BX_F_TEXT_ONLY);
	bx_out_obj_begin(out, key, BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "sec", le64toh(ts->sec), 0);
	bx_out_u64(out, "nsec", le32toh(ts->nsec), 0);
	bx_out_obj_end(out);
}

/* Item sizes of the types whose body does not matter here. */
static void decode_size_only(const struct item_ctx *ic)
{
	bx_out_u64(ic->out, "size", ic->size, 0);
}

/*
 * Items that pack several variable-length entries (names): @entry prints the
 * one at @off and returns its length, or returns 0 and sets *need when the
 * item ends inside it.
 */
typedef size_t (*entry_decoder)(const struct item_ctx *ic, size_t off, size_t *need);

static void decode_entries(const struct item_ctx *ic, const char *list, entry_decoder entry,
			   size_t min_size)
{
	size_t off = 0, need = ic->size ? 0 : min_size;

	bx_out_list_begin(ic->out, list);
	while (off < ic->size) {
		size_t len = entry(ic, off, &need);

		if (!len)
			break;
		off += len;
	}
	bx_out_list_end(ic->out);
	if (need)
		too_small(ic, need);
}

/* ---- chunk tree ---- */

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

/* ---- fs trees ---- */

static const struct flag_name inode_flags[] = {
	{ 1ULL << 0, "NODATASUM" },
	{ 1ULL << 1, "NODATACOW" },
	{ 1ULL << 2, "READONLY" },
	{ 1ULL << 3, "NOCOMPRESS" },
	{ 1ULL << 4, "PREALLOC" },
	{ 1ULL << 5, "SYNC" },
	{ 1ULL << 6, "IMMUTABLE" },
	{ 1ULL << 7, "APPEND" },
	{ 1ULL << 8, "NODUMP" },
	{ 1ULL << 9, "NOATIME" },
	{ 1ULL << 10, "DIRSYNC" },
	{ 1ULL << 11, "COMPRESS" },
	{ 1ULL << 31, "ROOT_ITEM_INIT" },
	{ 1ULL << 32, "VERITY" },       /* ro_flags live in the high half */
};

static void decode_inode_item(const struct item_ctx *ic)
{
	const struct btrfs_inode_item *ii = (const void *)ic->ptr;
	struct bx_out *out = ic->out;
	char mode[24];

	if (ic->size < sizeof(*ii))
		return too_small(ic, sizeof(*ii));
	bx_out_u64(out, "generation", le64toh(ii->generation), 0);
	bx_out_u64(out, "transid", le64toh(ii->transid), 0);
	bx_out_u64(out, "size", le64toh(ii->size), 0);
	bx_out_u64(out, "nbytes", le64toh(ii->nbytes), 0);
	bx_out_u64(out, "block_group", le64toh(ii->block_group), 0);
	bx_out_u64(out, "nlink", le32toh(ii->nlink), 0);
	bx_out_u64(out, "uid", le32toh(ii->uid), 0);
	bx_out_u64(out, "gid", le32toh(ii->gid), 0);
	snprintf(mode, sizeof(mode), "%o", le32toh(ii->mode));
	bx_out_str(out, "mode", mode, BX_F_TEXT_ONLY);
	bx_out_u64(out, "mode", le32toh(ii->mode), BX_F_JSON_ONLY);
	bx_out_u64(out, "rdev", le64toh(ii->rdev), 0);
	out_flags(out, "flags", "flag_names", le64toh(ii->flags), inode_flags,
		  ARRAY_LEN(inode_flags));
	bx_out_u64(out, "sequence", le64toh(ii->sequence), 0);
	out_time(out, "atime", &ii->atime);
	out_time(out, "ctime", &ii->ctime);
	out_time(out, "mtime", &ii->mtime);
	out_time(out, "otime", &ii->otime);
}

/*
 * Length of a name-carrying entry at @off: a @head-byte header whose last
 * two bytes are the little-endian name length, then the name. 0 with *need
 * set when the item is too short for it.
 */
static size_t named_entry_len(const struct item_ctx *ic, size_t off, size_t head, size_t *need)
{
	uint16_t name_len;
	size_t len;

	if (ic->size - off < head) {
		*need = off + head;
		return 0;
	}
	memcpy(&name_len, ic->ptr + off + head - sizeof(name_len), sizeof(name_len));
	len = head + le16toh(name_len);
	if (ic->size - off < len) {
		*need = off + len;
		return 0;
	}
	return len;
}

static size_t inode_ref_entry(const struct item_ctx *ic, size_t off, size_t *need)
{
	const struct btrfs_inode_ref *ref = (const void *)(ic->ptr + off);
	size_t len = named_entry_len(ic, off, sizeof(*ref), need);

	if (!len)
		return 0;
	bx_out_obj_begin(ic->out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(ic->out, "index", le64toh(ref->index), 0);
	bx_out_u64(ic->out, "name_len", le16toh(ref->name_len), 0);
	out_bytes(ic->out, "name", (const uint8_t *)(ref + 1), le16toh(ref->name_len));
	bx_out_obj_end(ic->out);
	return len;
}

static void decode_inode_ref(const struct item_ctx *ic)
{
	decode_entries(ic, "inode_refs", inode_ref_entry, sizeof(struct btrfs_inode_ref));
}

static size_t inode_extref_entry(const struct item_ctx *ic, size_t off, size_t *need)
{
	const struct btrfs_inode_extref *ref = (const void *)(ic->ptr + off);
	size_t len = named_entry_len(ic, off, sizeof(*ref), need);

	if (!len)
		return 0;
	bx_out_obj_begin(ic->out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(ic->out, "parent", le64toh(ref->parent_objectid), 0);
	bx_out_u64(ic->out, "index", le64toh(ref->index), 0);
	bx_out_u64(ic->out, "name_len", le16toh(ref->name_len), 0);
	out_bytes(ic->out, "name", (const uint8_t *)(ref + 1), le16toh(ref->name_len));
	bx_out_obj_end(ic->out);
	return len;
}

static void decode_inode_extref(const struct item_ctx *ic)
{
	decode_entries(ic, "inode_refs", inode_extref_entry, sizeof(struct btrfs_inode_extref));
}

static const char *const dir_types[] = {
	"UNKNOWN", "FILE", "DIR", "CHRDEV", "BLKDEV", "FIFO", "SOCK", "SYMLINK", "XATTR",
};

/* One entry of a DIR_ITEM, DIR_INDEX or XATTR_ITEM (the data is an xattr's value). */
static size_t dir_entry(const struct item_ctx *ic, size_t off, size_t *need)
{
	const struct btrfs_dir_item *di = (const void *)(ic->ptr + off);
	const uint8_t *name = (const uint8_t *)(di + 1);
	size_t name_len, data_len, len;

	if (ic->size - off < sizeof(*di)) {
		*need = off + sizeof(*di);
		return 0;
	}
	name_len = le16toh(di->name_len);
	data_len = le16toh(di->data_len);
	len = sizeof(*di) + name_len + data_len;
	if (ic->size - off < len) {
		*need = off + len;
		return 0;
	}
	bx_out_obj_begin(ic->out, NULL, BX_OBJ_INLINE, NULL);
	out_disk_key(ic->out, "location", &di->location);
	bx_out_u64(ic->out, "transid", le64toh(di->transid), 0);
	bx_out_u64(ic->out, "data_len", data_len, 0);
	bx_out_u64(ic->out, "name_len", name_len, 0);
	out_enum(ic->out, "type", "type_name", di->type,
		 enum_name(dir_types, ARRAY_LEN(dir_types), di->type));
	out_bytes(ic->out, "name", name, name_len);
	if (data_len || ic->key->type == BTRFS_XATTR_ITEM_KEY)
		out_bytes(ic->out, "data", name + name_len, data_len);
	bx_out_obj_end(ic->out);
	return len;
}

static void decode_dir_item(const struct item_ctx *ic)
{
	decode_entries(ic, "entries", dir_entry, sizeof(struct btrfs_dir_item));
}

static const char *const file_extent_types[] = { "inline", "regular", "prealloc" };
static const char *const compression_types[] = { "none", "zlib", "lzo", "zstd" };

static void decode_file_extent(const struct item_ctx *ic)
{
	const struct btrfs_file_extent_item *fi = (const void *)ic->ptr;
	struct bx_out *out = ic->out;

	if (ic->size < BTRFS_FILE_EXTENT_INLINE_DATA_START)
		return too_small(ic, BTRFS_FILE_EXTENT_INLINE_DATA_START);
	bx_out_u64(out, "generation", le64toh(fi->generation), 0);
	out_enum(out, "extent_type", "extent_type_name", fi->type,
		 enum_name(file_extent_types, ARRAY_LEN(file_extent_types), fi->type));
	bx_out_u64(out, "ram_bytes", le64toh(fi->ram_bytes), 0);
	out_enum(out, "compression", "compression_name", fi->compression,
		 enum_name(compression_types, ARRAY_LEN(compression_types), fi->compression));
	bx_out_u64(out, "encryption", fi->encryption, 0);
	bx_out_u64(out, "other_encoding", le16toh(fi->other_encoding), 0);
	if (fi->type == BTRFS_FILE_EXTENT_INLINE) {
		bx_out_u64(out, "inline_size", ic->size - BTRFS_FILE_EXTENT_INLINE_DATA_START, 0);
		return;
	}
	if (fi->type != BTRFS_FILE_EXTENT_REG && fi->type != BTRFS_FILE_EXTENT_PREALLOC) {
		bx_out_str(out, "decode_error", "unknown file extent type", 0);
		return;
	}
	if (ic->size < sizeof(*fi))
		return too_small(ic, sizeof(*fi));
	bx_out_u64(out, "disk_bytenr", le64toh(fi->disk_bytenr), 0);
	bx_out_u64(out, "disk_num_bytes", le64toh(fi->disk_num_bytes), 0);
	bx_out_u64(out, "offset", le64toh(fi->offset), 0);
	bx_out_u64(out, "num_bytes", le64toh(fi->num_bytes), 0);
}

/* Text: how many checksums and the range they cover; JSON also lists them. */
static void decode_extent_csum(const struct item_ctx *ic)
{
	size_t csum_size = ic->fs->csum_size;
	uint64_t count, length;

	if (!csum_size || csum_size > BTRFS_CSUM_SIZE) {
		bx_out_str(ic->out, "decode_error", "unknown checksum size", 0);
		return;
	}
	count = ic->size / csum_size;
	length = count * ic->fs->sectorsize;
	bx_out_u64(ic->out, "count", count, 0);
	bx_out_u64(ic->out, "start", ic->key->offset, 0);
	bx_out_u64(ic->out, "length", length, 0);
	bx_out_u64(ic->out, "end", ic->key->offset + length, 0);
	bx_out_list_begin(ic->out, "csums");
	for (uint64_t i = 0; i < count; i++)
		bx_out_hexbytes(ic->out, NULL, ic->ptr + i * csum_size, csum_size, BX_F_JSON_ONLY);
	bx_out_list_end(ic->out);
	if (ic->size % csum_size)
		too_small(ic, (count + 1) * csum_size);
}

static void decode_dir_log(const struct item_ctx *ic)
{
	const struct btrfs_dir_log_item *dl = (const void *)ic->ptr;

	if (ic->size < sizeof(*dl))
		return too_small(ic, sizeof(*dl));
	bx_out_u64(ic->out, "end", le64toh(dl->end), 0);
}

/* ---- root tree ---- */

static const struct flag_name root_flags[] = {
	{ 1ULL << 0, "RDONLY" },
	{ 1ULL << 48, "DEAD" },
};

/* The fields that items written by newer kernels add after BTRFS_ROOT_ITEM_V1_SIZE. */
static void out_root_item_v2(struct bx_out *out, const struct btrfs_root_item *ri)
{
	bx_out_u64(out, "generation_v2", le64toh(ri->generation_v2), 0);
	bx_out_uuid(out, "uuid", ri->uuid, 0);
	bx_out_uuid(out, "parent_uuid", ri->parent_uuid, 0);
	bx_out_uuid(out, "received_uuid", ri->received_uuid, 0);
	bx_out_u64(out, "ctransid", le64toh(ri->ctransid), 0);
	bx_out_u64(out, "otransid", le64toh(ri->otransid), 0);
	bx_out_u64(out, "stransid", le64toh(ri->stransid), 0);
	bx_out_u64(out, "rtransid", le64toh(ri->rtransid), 0);
	out_time(out, "ctime", &ri->ctime);
	out_time(out, "otime", &ri->otime);
	out_time(out, "stime", &ri->stime);
	out_time(out, "rtime", &ri->rtime);
}

static void decode_root_item(const struct item_ctx *ic)
{
	const struct btrfs_root_item *ri = (const void *)ic->ptr;
	struct bx_out *out = ic->out;

	if (ic->size < BTRFS_ROOT_ITEM_V1_SIZE)
		return too_small(ic, BTRFS_ROOT_ITEM_V1_SIZE);
	bx_out_u64(out, "generation", le64toh(ri->generation), 0);
	bx_out_u64(out, "root_dirid", le64toh(ri->root_dirid), 0);
	bx_out_u64(out, "bytenr", le64toh(ri->bytenr), 0);
	bx_out_u64(out, "level", ri->level, 0);
	bx_out_u64(out, "byte_limit", le64toh(ri->byte_limit), 0);
	bx_out_u64(out, "bytes_used", le64toh(ri->bytes_used), 0);
	bx_out_u64(out, "last_snapshot", le64toh(ri->last_snapshot), 0);
	out_flags(out, "flags", "flag_names", le64toh(ri->flags), root_flags,
		  ARRAY_LEN(root_flags));
	bx_out_u64(out, "refs", le32toh(ri->refs), 0);
	out_disk_key(out, "drop_progress", &ri->drop_progress);
	bx_out_u64(out, "drop_level", ri->drop_level, 0);
	/* Shorter items (old kernels) end here; the kernel zeroes the rest. */
	bx_out_bool(out, "v2", ic->size >= sizeof(*ri), BX_F_JSON_ONLY);
	if (ic->size >= sizeof(*ri))
		out_root_item_v2(out, ri);
}

static void decode_root_ref(const struct item_ctx *ic)
{
	const struct btrfs_root_ref *rr = (const void *)ic->ptr;
	size_t name_len;

	if (ic->size < sizeof(*rr))
		return too_small(ic, sizeof(*rr));
	name_len = le16toh(rr->name_len);
	if (ic->size - sizeof(*rr) < name_len)
		return too_small(ic, sizeof(*rr) + name_len);
	bx_out_u64(ic->out, "dirid", le64toh(rr->dirid), 0);
	bx_out_u64(ic->out, "sequence", le64toh(rr->sequence), 0);
	bx_out_u64(ic->out, "name_len", name_len, 0);
	out_bytes(ic->out, "name", (const uint8_t *)(rr + 1), name_len);
}

/* The v1 free space cache: a header per block group, pointing at the cache inode. */
static void decode_untyped(const struct item_ctx *ic)
{
	const struct btrfs_free_space_header *fsh = (const void *)ic->ptr;

	if (ic->key->objectid != BTRFS_FREE_SPACE_OBJECTID)
		return decode_size_only(ic);
	if (ic->size < sizeof(*fsh))
		return too_small(ic, sizeof(*fsh));
	out_disk_key(ic->out, "location", &fsh->location);
	bx_out_u64(ic->out, "generation", le64toh(fsh->generation), 0);
	bx_out_u64(ic->out, "num_entries", le64toh(fsh->num_entries), 0);
	bx_out_u64(ic->out, "num_bitmaps", le64toh(fsh->num_bitmaps), 0);
}

/* ---- extent tree ---- */

static const struct flag_name extent_flags[] = {
	{ BTRFS_EXTENT_FLAG_DATA, "DATA" },
	{ BTRFS_EXTENT_FLAG_TREE_BLOCK, "TREE_BLOCK" },
	{ BTRFS_BLOCK_FLAG_FULL_BACKREF, "FULL_BACKREF" },
};

static void out_data_ref(struct bx_out *out, const struct btrfs_extent_data_ref *dref)
{
	bx_out_u64(out, "root", le64toh(dref->root), 0);
	bx_out_u64(out, "objectid", le64toh(dref->objectid), 0);
	bx_out_u64(out, "offset", le64toh(dref->offset), 0);
	bx_out_u64(out, "count", le32toh(dref->count), 0);
}

/* Bytes an inline ref of @type takes, 0 for a type that cannot be inline. */
static size_t inline_ref_size(uint8_t type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		return sizeof(struct btrfs_extent_inline_ref);
	case BTRFS_SHARED_DATA_REF_KEY:
		return sizeof(struct btrfs_extent_inline_ref) + sizeof(struct btrfs_shared_data_ref);
	case BTRFS_EXTENT_DATA_REF_KEY:
		return 1 + sizeof(struct btrfs_extent_data_ref);
	}
	return 0;
}

/* One inline ref whose whole inline_ref_size() is inside the item. */
static void print_inline_ref(struct bx_out *out, const uint8_t *p)
{
	const struct btrfs_extent_inline_ref *iref = (const void *)p;
	const struct btrfs_shared_data_ref *sref = (const void *)(iref + 1);

	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(out, "type", iref->type, BX_F_JSON_ONLY);
	bx_out_str(out, "type_name", bx_key_type_name(iref->type), BX_F_NO_NAME);
	switch (iref->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		bx_out_u64(out, "root", le64toh(iref->offset), 0);
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		bx_out_u64(out, "parent", le64toh(iref->offset), 0);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		bx_out_u64(out, "parent", le64toh(iref->offset), 0);
		bx_out_u64(out, "count", le32toh(sref->count), 0);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		out_data_ref(out, (const void *)(p + 1));
		break;
	}
	bx_out_obj_end(out);
}

static void decode_inline_refs(const struct item_ctx *ic, size_t off)
{
	size_t need = 0;
	int bad_type = -1;
	char msg[80];

	bx_out_list_begin(ic->out, "inline_refs");
	while (off < ic->size) {
		size_t len = inline_ref_size(ic->ptr[off]);

		if (!len) {
			bad_type = ic->ptr[off];
			break;
		}
		if (ic->size - off < len) {
			need = off + len;
			break;
		}
		print_inline_ref(ic->out, ic->ptr + off);
		off += len;
	}
	bx_out_list_end(ic->out);
	if (need)
		too_small(ic, need);
	if (bad_type >= 0) {
		snprintf(msg, sizeof(msg), "unknown inline ref type %d at offset %zu", bad_type, off);
		bx_out_str(ic->out, "decode_error", msg, 0);
	}
}

/* EXTENT_ITEM and METADATA_ITEM (skinny: the level is the key offset, no tree_block_info). */
static void decode_extent_item(const struct item_ctx *ic)
{
	const struct btrfs_extent_item *ei = (const void *)ic->ptr;
	const struct btrfs_tree_block_info *info = (const void *)(ei + 1);
	size_t off = sizeof(*ei);

	if (ic->size < sizeof(*ei))
		return too_small(ic, sizeof(*ei));
	bx_out_u64(ic->out, "refs", le64toh(ei->refs), 0);
	bx_out_u64(ic->out, "generation", le64toh(ei->generation), 0);
	out_flags(ic->out, "flags", "flag_names", le64toh(ei->flags), extent_flags,
		  ARRAY_LEN(extent_flags));
	if (ic->key->type == BTRFS_METADATA_ITEM_KEY) {
		bx_out_u64(ic->out, "level", ic->key->offset, 0);
	} else if (le64toh(ei->flags) & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
		if (ic->size - off < sizeof(*info))
			return too_small(ic, off + sizeof(*info));
		out_disk_key(ic->out, "tree_block_key", &info->key);
		bx_out_u64(ic->out, "level", info->level, 0);
		off += sizeof(*info);
	}
	decode_inline_refs(ic, off);
}

/* Keyed backrefs: TREE_BLOCK_REF and SHARED_BLOCK_REF carry everything in the key. */
static void decode_tree_block_ref(const struct item_ctx *ic)
{
	bx_out_u64(ic->out, "root", ic->key->offset, 0);
}

static void decode_shared_block_ref(const struct item_ctx *ic)
{
	bx_out_u64(ic->out, "parent", ic->key->offset, 0);
}

static void decode_extent_data_ref(const struct item_ctx *ic)
{
	if (ic->size < sizeof(struct btrfs_extent_data_ref))
		return too_small(ic, sizeof(struct btrfs_extent_data_ref));
	out_data_ref(ic->out, (const void *)ic->ptr);
}

static void decode_shared_data_ref(const struct item_ctx *ic)
{
	const struct btrfs_shared_data_ref *sref = (const void *)ic->ptr;

	if (ic->size < sizeof(*sref))
		return too_small(ic, sizeof(*sref));
	bx_out_u64(ic->out, "parent", ic->key->offset, 0);
	bx_out_u64(ic->out, "count", le32toh(sref->count), 0);
}

static const struct flag_name block_group_flags[] = {
	{ BTRFS_BLOCK_GROUP_DATA, "DATA" },
	{ BTRFS_BLOCK_GROUP_SYSTEM, "SYSTEM" },
	{ BTRFS_BLOCK_GROUP_METADATA, "METADATA" },
	{ BTRFS_BLOCK_GROUP_RAID0, "RAID0" },
	{ BTRFS_BLOCK_GROUP_RAID1, "RAID1" },
	{ BTRFS_BLOCK_GROUP_DUP, "DUP" },
	{ BTRFS_BLOCK_GROUP_RAID10, "RAID10" },
	{ BTRFS_BLOCK_GROUP_RAID5, "RAID5" },
	{ BTRFS_BLOCK_GROUP_RAID6, "RAID6" },
	{ BTRFS_BLOCK_GROUP_RAID1C3, "RAID1C3" },
	{ BTRFS_BLOCK_GROUP_RAID1C4, "RAID1C4" },
};

static void decode_block_group(const struct item_ctx *ic)
{
	const struct btrfs_block_group_item *bg = (const void *)ic->ptr;

	if (ic->size < sizeof(*bg))
		return too_small(ic, sizeof(*bg));
	bx_out_u64(ic->out, "used", le64toh(bg->used), 0);
	bx_out_u64(ic->out, "chunk_objectid", le64toh(bg->chunk_objectid), 0);
	out_flags(ic->out, "flags", "flag_names", le64toh(bg->flags), block_group_flags,
		  ARRAY_LEN(block_group_flags));
}

/* ---- free space tree ---- */

static const struct flag_name free_space_flags[] = {
	{ 1ULL << 0, "USING_BITMAPS" },
};

static void decode_free_space_info(const struct item_ctx *ic)
{
	const struct btrfs_free_space_info *fsi = (const void *)ic->ptr;

	if (ic->size < sizeof(*fsi))
		return too_small(ic, sizeof(*fsi));
	bx_out_u64(ic->out, "extent_count", le32toh(fsi->extent_count), 0);
	out_flags(ic->out, "flags", "flag_names", le32toh(fsi->flags), free_space_flags,
		  ARRAY_LEN(free_space_flags));
}

/* ---- dev tree ---- */

static void decode_dev_extent(const struct item_ctx *ic)
{
	const struct btrfs_dev_extent *de = (const void *)ic->ptr;

	if (ic->size < sizeof(*de))
		return too_small(ic, sizeof(*de));
	bx_out_u64(ic->out, "chunk_tree", le64toh(de->chunk_tree), 0);
	bx_out_u64(ic->out, "chunk_objectid", le64toh(de->chunk_objectid), 0);
	bx_out_u64(ic->out, "chunk_offset", le64toh(de->chunk_offset), 0);
	bx_out_u64(ic->out, "length", le64toh(de->length), 0);
	bx_out_uuid(ic->out, "chunk_tree_uuid", de->chunk_tree_uuid, 0);
}

static const char *const dev_stats_names[] = {
	"write_io_errs", "read_io_errs", "flush_io_errs", "corruption_errs", "generation_errs",
};

/* DEV_STATS (key offset: devid): the counters the item is long enough to hold. */
static void decode_persistent_item(const struct item_ctx *ic)
{
	if (ic->key->objectid != BTRFS_DEV_STATS_OBJECTID)
		return decode_size_only(ic);
	bx_out_u64(ic->out, "devid", ic->key->offset, 0);
	for (size_t i = 0; i < ARRAY_LEN(dev_stats_names); i++) {
		uint64_t value;

		if (ic->size < (i + 1) * sizeof(value))
			break;
		memcpy(&value, ic->ptr + i * sizeof(value), sizeof(value));
		bx_out_u64(ic->out, dev_stats_names[i], le64toh(value), 0);
	}
}

static const char *const replace_states[] = {
	"NEVER_STARTED", "STARTED", "FINISHED", "CANCELED", "SUSPENDED",
};
static const char *const replace_read_modes[] = { "ALWAYS", "AVOID" };

static void decode_dev_replace(const struct item_ctx *ic)
{
	const struct btrfs_dev_replace_item *dr = (const void *)ic->ptr;
	struct bx_out *out = ic->out;
	uint64_t state, mode;

	if (ic->size < sizeof(*dr))
		return too_small(ic, sizeof(*dr));
	state = le64toh(dr->replace_state);
	mode = le64toh(dr->cont_reading_from_srcdev_mode);
	bx_out_u64(out, "src_devid", le64toh(dr->src_devid), 0);
	bx_out_u64(out, "cursor_left", le64toh(dr->cursor_left), 0);
	bx_out_u64(out, "cursor_right", le64toh(dr->cursor_right), 0);
	out_enum(out, "cont_reading_from_srcdev_mode", "cont_reading_from_srcdev_mode_name", mode,
		 enum_name(replace_read_modes, ARRAY_LEN(replace_read_modes), mode));
	out_enum(out, "replace_state", "replace_state_name", state,
		 enum_name(replace_states, ARRAY_LEN(replace_states), state));
	bx_out_u64(out, "time_started", le64toh(dr->time_started), 0);
	bx_out_u64(out, "time_stopped", le64toh(dr->time_stopped), 0);
	bx_out_u64(out, "num_write_errors", le64toh(dr->num_write_errors), 0);
	bx_out_u64(out, "num_uncorrectable_read_errors",
		   le64toh(dr->num_uncorrectable_read_errors), 0);
}

/* ---- quota tree ---- */

static const struct flag_name qgroup_status_flags[] = {
	{ 1ULL << 0, "ON" },
	{ 1ULL << 1, "RESCAN" },
	{ 1ULL << 2, "INCONSISTENT" },
	{ 1ULL << 3, "SIMPLE_MODE" },
};

static const struct flag_name qgroup_limit_flags[] = {
	{ 1ULL << 0, "MAX_RFER" },
	{ 1ULL << 1, "MAX_EXCL" },
	{ 1ULL << 2, "RSV_RFER" },
	{ 1ULL << 3, "RSV_EXCL" },
	{ 1ULL << 4, "RFER_CMPR" },
	{ 1ULL << 5, "EXCL_CMPR" },
};

/* A qgroup id as "level/id" (the level is the top 16 bits). */
static void out_qgroupid(struct bx_out *out, const char *key, uint64_t qgroupid)
{
	char text[32];

	snprintf(text, sizeof(text), "%llu/%llu", (unsigned long long)(qgroupid >> 48),
		 (unsigned long long)(qgroupid & ((1ULL << 48) - 1)));
	bx_out_str(out, key, text, 0);
}

static void decode_qgroup_status(const struct item_ctx *ic)
{
	const struct btrfs_qgroup_status_item *qs = (const void *)ic->ptr;
	uint64_t enable_gen;

	if (ic->size < sizeof(*qs))
		return too_small(ic, sizeof(*qs));
	bx_out_u64(ic->out, "version", le64toh(qs->version), 0);
	bx_out_u64(ic->out, "generation", le64toh(qs->generation), 0);
	out_flags(ic->out, "flags", "flag_names", le64toh(qs->flags), qgroup_status_flags,
		  ARRAY_LEN(qgroup_status_flags));
	bx_out_u64(ic->out, "rescan", le64toh(qs->rescan), 0);
	/* Simple quotas append the generation they were enabled in. */
	if (ic->size < sizeof(*qs) + sizeof(enable_gen))
		return;
	memcpy(&enable_gen, qs + 1, sizeof(enable_gen));
	bx_out_u64(ic->out, "enable_gen", le64toh(enable_gen), 0);
}

static void decode_qgroup_info(const struct item_ctx *ic)
{
	const struct btrfs_qgroup_info_item *qi = (const void *)ic->ptr;

	if (ic->size < sizeof(*qi))
		return too_small(ic, sizeof(*qi));
	out_qgroupid(ic->out, "qgroupid", ic->key->offset);
	bx_out_u64(ic->out, "generation", le64toh(qi->generation), 0);
	bx_out_u64(ic->out, "rfer", le64toh(qi->rfer), 0);
	bx_out_u64(ic->out, "rfer_cmpr", le64toh(qi->rfer_cmpr), 0);
	bx_out_u64(ic->out, "excl", le64toh(qi->excl), 0);
	bx_out_u64(ic->out, "excl_cmpr", le64toh(qi->excl_cmpr), 0);
}

static void decode_qgroup_limit(const struct item_ctx *ic)
{
	const struct btrfs_qgroup_limit_item *ql = (const void *)ic->ptr;

	if (ic->size < sizeof(*ql))
		return too_small(ic, sizeof(*ql));
	out_qgroupid(ic->out, "qgroupid", ic->key->offset);
	out_flags(ic->out, "flags", "flag_names", le64toh(ql->flags), qgroup_limit_flags,
		  ARRAY_LEN(qgroup_limit_flags));
	bx_out_u64(ic->out, "max_rfer", le64toh(ql->max_rfer), 0);
	bx_out_u64(ic->out, "max_excl", le64toh(ql->max_excl), 0);
	bx_out_u64(ic->out, "rsv_rfer", le64toh(ql->rsv_rfer), 0);
	bx_out_u64(ic->out, "rsv_excl", le64toh(ql->rsv_excl), 0);
}

/* ---- uuid tree and the rest ---- */

/* UUID_KEY_SUBVOL / _RECEIVED_SUBVOL: the key holds the uuid, the item subvolume ids. */
static void decode_uuid_item(const struct item_ctx *ic)
{
	uint64_t halves[2] = { htole64(ic->key->objectid), htole64(ic->key->offset) };
	size_t count = ic->size / sizeof(uint64_t);
	uint8_t uuid[BTRFS_UUID_SIZE];
	uint64_t id;

	memcpy(uuid, halves, sizeof(uuid));
	bx_out_uuid(ic->out, "uuid", uuid, 0);
	for (size_t i = 0; i < count; i++) {
		memcpy(&id, ic->ptr + i * sizeof(id), sizeof(id));
		bx_out_u64(ic->out, "subvol_id", le64toh(id), BX_F_TEXT_ONLY);
	}
	bx_out_list_begin(ic->out, "subvol_ids");
	for (size_t i = 0; i < count; i++) {
		memcpy(&id, ic->ptr + i * sizeof(id), sizeof(id));
		bx_out_u64(ic->out, NULL, le64toh(id), BX_F_JSON_ONLY);
	}
	bx_out_list_end(ic->out);
	if (!ic->size || ic->size % sizeof(id))
		too_small(ic, (count + 1) * sizeof(id));
}

static void decode_string_item(const struct item_ctx *ic)
{
	out_bytes(ic->out, "string", ic->ptr, ic->size);
}

static const struct {
	uint8_t type;
	item_decoder decode;
} decoders[] = {
	{ 0, decode_untyped },
	{ BTRFS_INODE_ITEM_KEY, decode_inode_item },
	{ BTRFS_INODE_REF_KEY, decode_inode_ref },
	{ BTRFS_INODE_EXTREF_KEY, decode_inode_extref },
	{ BTRFS_XATTR_ITEM_KEY, decode_dir_item },
	{ BTRFS_VERITY_DESC_ITEM_KEY, decode_size_only },
	{ BTRFS_VERITY_MERKLE_ITEM_KEY, decode_size_only },
	{ BTRFS_DIR_LOG_ITEM_KEY, decode_dir_log },
	{ BTRFS_DIR_LOG_INDEX_KEY, decode_dir_log },
	{ BTRFS_DIR_ITEM_KEY, decode_dir_item },
	{ BTRFS_DIR_INDEX_KEY, decode_dir_item },
	{ BTRFS_EXTENT_DATA_KEY, decode_file_extent },
	{ BTRFS_EXTENT_CSUM_KEY, decode_extent_csum },
	{ BTRFS_ROOT_ITEM_KEY, decode_root_item },
	{ BTRFS_ROOT_BACKREF_KEY, decode_root_ref },
	{ BTRFS_ROOT_REF_KEY, decode_root_ref },
	{ BTRFS_EXTENT_ITEM_KEY, decode_extent_item },
	{ BTRFS_METADATA_ITEM_KEY, decode_extent_item },
	{ BTRFS_TREE_BLOCK_REF_KEY, decode_tree_block_ref },
	{ BTRFS_EXTENT_DATA_REF_KEY, decode_extent_data_ref },
	{ BTRFS_SHARED_BLOCK_REF_KEY, decode_shared_block_ref },
	{ BTRFS_SHARED_DATA_REF_KEY, decode_shared_data_ref },
	{ BTRFS_BLOCK_GROUP_ITEM_KEY, decode_block_group },
	{ BTRFS_FREE_SPACE_INFO_KEY, decode_free_space_info },
	{ BTRFS_FREE_SPACE_BITMAP_KEY, decode_size_only },
	{ BTRFS_DEV_EXTENT_KEY, decode_dev_extent },
	{ BTRFS_DEV_ITEM_KEY, decode_dev_item },
	{ BTRFS_CHUNK_ITEM_KEY, decode_chunk_item },
	{ BTRFS_QGROUP_STATUS_KEY, decode_qgroup_status },
	{ BTRFS_QGROUP_INFO_KEY, decode_qgroup_info },
	{ BTRFS_QGROUP_LIMIT_KEY, decode_qgroup_limit },
	{ BTRFS_TEMPORARY_ITEM_KEY, decode_size_only },
	{ BTRFS_PERSISTENT_ITEM_KEY, decode_persistent_item },
	{ BTRFS_DEV_REPLACE_KEY, decode_dev_replace },
	{ BTRFS_UUID_KEY_SUBVOL, decode_uuid_item },
	{ BTRFS_UUID_KEY_RECEIVED_SUBVOL, decode_uuid_item },
	{ BTRFS_STRING_ITEM_KEY, decode_string_item },
};

void bx_print_leaf_item(struct bx_out *out, const struct bx_fs *fs, const struct bx_eb *eb,
			int slot)
{
	uint32_t itemoff = le32toh(bx_leaf_item(eb, slot)->offset);
	struct btrfs_key key;
	struct item_ctx ic;
	char heading[160];
	struct line l = { heading, heading + sizeof(heading) };

	bx_item_key(eb, slot, &key);
	line_str(&l, "item ");
	line_u64(&l, (uint64_t)slot);
	line_str(&l, " key ");
	line_key(&l, &key);
	line_str(&l, " itemoff ");
	line_u64(&l, itemoff);
	line_str(&l, " itemsize ");
	line_u64(&l, bx_item_size(eb, slot));
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_text(out, heading);
	bx_out_u64(out, "slot", (uint64_t)slot, BX_F_JSON_ONLY);
	bx_out_obj_begin(out, "key", BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "objectid", key.objectid, 0);
	bx_out_u64(out, "type", key.type, 0);
	bx_out_u64(out, "offset", key.offset, 0);
	bx_out_obj_end(out);
	bx_out_str(out, "type_name", bx_key_type_name(key.type), BX_F_JSON_ONLY);
	bx_out_u64(out, "itemoff", itemoff, BX_F_JSON_ONLY);
	bx_out_u64(out, "itemsize", bx_item_size(eb, slot), BX_F_JSON_ONLY);
	ic = (struct item_ctx){ out, fs, &key, bx_item_ptr(eb, slot), bx_item_size(eb, slot) };
	for (size_t i = 0; i < ARRAY_LEN(decoders); i++) {
		if (decoders[i].type == key.type) {
			bx_out_text_break(out);
			decoders[i].decode(&ic);
			break;
		}
	}
	bx_out_obj_end(out);
}
