/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: one item of a real filesystem, of a type the input
 * chooses, replaced by the input's bytes, then read by every command that
 * decodes that type.
 *
 *   byte 0   base image (index modulo the number of images, see fuzz-image.h)
 *   byte 1   item type: index into item_types[] below (modulo its size)
 *   byte 2   which item of that type in the image (modulo their number)
 *   byte 3   flags: bit 0 JSON output; bit 1 a key offset (u64 LE) follows,
 *            bit 2 a key objectid (u64 LE) follows (applied when the leaf
 *            stays sorted); bits 4-6 read-file's file; bits 3 and 7 unused
 *            (they once ran every command and read every file: fuzz_image
 *            runs the commands together, here speed matters more)
 *   then     the item's new body (as much as fits in the leaf)
 *
 * The leaf is rebuilt with the item's data packed as the format requires,
 * its checksum recomputed on every copy, so the decoders see the body. A
 * type the image has no item of is inserted, with the key the table gives
 * (and the input's overrides), into a leaf of the tree it belongs to.
 *
 * What runs: dump-tree of the tree holding the leaf (every item through
 * dump-tree's decoders), and by type read-file (inodes, directory indexes,
 * file extents, root items), filesystem usage (chunks, devices, device
 * extents, block groups), device property get (device items), scrub -r
 * (extents, csums, block groups, chunks) and the file resolution scrub uses
 * for uncorrectable data (extent backrefs, inode and root refs).
 *
 * BTRFSX_FUZZ_ITEM_SEEDS=<dir> writes one seed per base image and type (the
 * image's own first item of the type, or a zeroed body of the usual size for
 * insertion) into <dir> and exits: make-corpus.py builds corpus/fuzz_item
 * from them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz-common.h"
#include "tests/fuzz/fuzz-image.h"

#define R FUZZ_CMD_READ_FILE
#define U FUZZ_CMD_USAGE
#define P FUZZ_CMD_PROPERTY
#define S FUZZ_CMD_SCRUB
#define F FUZZ_CMD_RESOLVE

/* Every type dump-tree names; the order is part of the input format. */
static const struct item_type {
	uint8_t type;
	uint64_t tree;          /* where one is inserted when the image has none */
	uint64_t objectid;      /* the key objectid it is inserted with */
	uint32_t seed_size;     /* a usual body size, for insertion seeds */
	unsigned int readers;   /* the commands that decode it besides dump-tree */
} item_types[] = {
	{ 0, BTRFS_ROOT_TREE_OBJECTID, 0, 8, 0 },
	{ BTRFS_INODE_ITEM_KEY, BTRFS_FS_TREE_OBJECTID, 257, 160, R | F },
	{ BTRFS_INODE_REF_KEY, BTRFS_FS_TREE_OBJECTID, 257, 14, F },
	{ BTRFS_INODE_EXTREF_KEY, BTRFS_FS_TREE_OBJECTID, 257, 22, F },
	{ BTRFS_XATTR_ITEM_KEY, BTRFS_FS_TREE_OBJECTID, 257, 40, 0 },
	{ BTRFS_VERITY_DESC_ITEM_KEY, BTRFS_FS_TREE_OBJECTID, 257, 64, 0 },
	{ BTRFS_VERITY_MERKLE_ITEM_KEY, BTRFS_FS_TREE_OBJECTID, 257, 64, 0 },
	{ BTRFS_ORPHAN_ITEM_KEY, BTRFS_ROOT_TREE_OBJECTID, BTRFS_ORPHAN_OBJECTID, 0, 0 },
	{ BTRFS_DIR_LOG_ITEM_KEY, BTRFS_FS_TREE_OBJECTID, 256, 8, 0 },
	{ BTRFS_DIR_LOG_INDEX_KEY, BTRFS_FS_TREE_OBJECTID, 256, 8, 0 },
	{ BTRFS_DIR_ITEM_KEY, BTRFS_FS_TREE_OBJECTID, 256, 34, R },
	{ BTRFS_DIR_INDEX_KEY, BTRFS_FS_TREE_OBJECTID, 256, 34, R },
	{ BTRFS_EXTENT_DATA_KEY, BTRFS_FS_TREE_OBJECTID, 257, 53, R | F },
	{ BTRFS_EXTENT_CSUM_KEY, BTRFS_CSUM_TREE_OBJECTID, BTRFS_EXTENT_CSUM_OBJECTID, 32, S },
	{ BTRFS_ROOT_ITEM_KEY, BTRFS_ROOT_TREE_OBJECTID, 257, 439, R | U | S | F },
	{ BTRFS_ROOT_BACKREF_KEY, BTRFS_ROOT_TREE_OBJECTID, 256, 24, F },
	{ BTRFS_ROOT_REF_KEY, BTRFS_ROOT_TREE_OBJECTID, 5, 24, 0 },
	{ BTRFS_EXTENT_ITEM_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 53, S | F },
	{ BTRFS_METADATA_ITEM_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 33, S },
	{ BTRFS_EXTENT_OWNER_REF_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 8, F },
	{ BTRFS_TREE_BLOCK_REF_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 0, F },
	{ BTRFS_EXTENT_DATA_REF_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 28, F },
	{ BTRFS_SHARED_BLOCK_REF_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 0, F },
	{ BTRFS_SHARED_DATA_REF_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 4, F },
	{ BTRFS_BLOCK_GROUP_ITEM_KEY, BTRFS_EXTENT_TREE_OBJECTID, 1 << 20, 24, U | S },
	{ BTRFS_FREE_SPACE_INFO_KEY, BTRFS_FREE_SPACE_TREE_OBJECTID, 1 << 20, 8, 0 },
	{ BTRFS_FREE_SPACE_EXTENT_KEY, BTRFS_FREE_SPACE_TREE_OBJECTID, 1 << 20, 0, 0 },
	{ BTRFS_FREE_SPACE_BITMAP_KEY, BTRFS_FREE_SPACE_TREE_OBJECTID, 1 << 20, 128, 0 },
	{ BTRFS_DEV_EXTENT_KEY, BTRFS_DEV_TREE_OBJECTID, 1, 48, U | S },
	{ BTRFS_DEV_ITEM_KEY, BTRFS_CHUNK_TREE_OBJECTID, BTRFS_DEV_ITEMS_OBJECTID, 98, U | P | S },
	{ BTRFS_CHUNK_ITEM_KEY, BTRFS_CHUNK_TREE_OBJECTID, BTRFS_FIRST_CHUNK_TREE_OBJECTID, 80,
	  R | U | S },
	{ BTRFS_RAID_STRIPE_KEY, BTRFS_RAID_STRIPE_TREE_OBJECTID, 1 << 20, 32, 0 },
	{ BTRFS_QGROUP_STATUS_KEY, BTRFS_QUOTA_TREE_OBJECTID, 0, 40, 0 },
	{ BTRFS_QGROUP_INFO_KEY, BTRFS_QUOTA_TREE_OBJECTID, 0, 40, 0 },
	{ BTRFS_QGROUP_LIMIT_KEY, BTRFS_QUOTA_TREE_OBJECTID, 0, 40, 0 },
	{ BTRFS_QGROUP_RELATION_KEY, BTRFS_QUOTA_TREE_OBJECTID, 0, 0, 0 },
	{ BTRFS_TEMPORARY_ITEM_KEY, BTRFS_ROOT_TREE_OBJECTID, BTRFS_BALANCE_OBJECTID, 64, 0 },
	{ BTRFS_PERSISTENT_ITEM_KEY, BTRFS_DEV_TREE_OBJECTID, BTRFS_DEV_STATS_OBJECTID, 40, 0 },
	{ BTRFS_DEV_REPLACE_KEY, BTRFS_DEV_TREE_OBJECTID, 0, 80, 0 },
	{ BTRFS_UUID_KEY_SUBVOL, BTRFS_UUID_TREE_OBJECTID, 0x1234, 8, 0 },
	{ BTRFS_UUID_KEY_RECEIVED_SUBVOL, BTRFS_UUID_TREE_OBJECTID, 0x1234, 8, 0 },
	{ BTRFS_STRING_ITEM_KEY, BTRFS_ROOT_TREE_OBJECTID, 0, 16, 0 },
};
#define NR_TYPES (sizeof(item_types) / sizeof(item_types[0]))

#define FLAG_JSON 0x01
#define FLAG_OFFSET 0x02
#define FLAG_OBJECTID 0x04

/* One item of a leaf being rebuilt. */
struct slot {
	struct btrfs_disk_key key;
	const uint8_t *data;
	uint32_t size;
};

/* The @k-th item of @type in @img (modulo their number), or NULL. */
static const struct fuzz_item_ref *find_item(const struct fuzz_image *img, uint8_t type,
					     unsigned int k)
{
	size_t nr = 0;

	for (size_t i = 0; i < img->nr_items; i++)
		nr += img->items[i].type == type;
	if (!nr)
		return NULL;
	k %= nr;
	for (size_t i = 0; i < img->nr_items; i++)
		if (img->items[i].type == type && k-- == 0)
			return &img->items[i];
	return NULL;
}

/* The @k-th leaf of @tree (the root tree's first when @tree has none). */
static int find_leaf(const struct fuzz_image *img, uint64_t tree, unsigned int k)
{
	size_t nr = 0;

	for (size_t i = 0; i < img->nr_blocks; i++)
		nr += img->blocks[i].level == 0 && img->blocks[i].owner == tree;
	if (!nr)
		return tree == BTRFS_ROOT_TREE_OBJECTID ? -1 :
		       find_leaf(img, BTRFS_ROOT_TREE_OBJECTID, 0);
	k %= nr;
	for (size_t i = 0; i < img->nr_blocks; i++)
		if (img->blocks[i].level == 0 && img->blocks[i].owner == tree && k-- == 0)
			return (int)i;
	return -1;
}

static void read_leaf(const struct fuzz_image *img, const struct fuzz_block *b, uint8_t *buf)
{
	fuzz_dev_read(img, b->copies.at[0].dev, b->copies.at[0].physical, buf, img->nodesize);
}

static int cmp_disk_keys(const struct btrfs_disk_key *a, const struct btrfs_disk_key *b)
{
	struct btrfs_key x, y;

	btrfs_disk_key_to_cpu(&x, a);
	btrfs_disk_key_to_cpu(&y, b);
	return btrfs_key_cmp(&x, &y);
}

/* Whether @key fits at @slot of @slots (strictly between its neighbours). */
static bool key_fits(const struct slot *slots, int nr, int slot, const struct btrfs_disk_key *key)
{
	return (slot == 0 || cmp_disk_keys(&slots[slot - 1].key, key) < 0) &&
	       (slot + 1 >= nr || cmp_disk_keys(key, &slots[slot + 1].key) < 0);
}

/* Writes @nr slots into @out (a copy of the leaf's header), data packed from the end. */
static void pack_leaf(uint8_t *out, uint32_t nodesize, const struct slot *slots, int nr)
{
	struct btrfs_header *hdr = (struct btrfs_header *)out;
	struct btrfs_item *items = (struct btrfs_item *)(out + sizeof(*hdr));
	uint32_t end = nodesize - sizeof(*hdr);

	for (int i = 0; i < nr; i++) {
		end -= slots[i].size;
		items[i].key = slots[i].key;
		items[i].offset = htole32(end);
		items[i].size = htole32(slots[i].size);
		memcpy(out + sizeof(*hdr) + end, slots[i].data, slots[i].size);
	}
	hdr->nritems = htole32((uint32_t)nr);
}

struct edit {
	const struct item_type *t;
	unsigned int which;
	uint8_t flags;
	uint64_t offset, objectid;
	const uint8_t *body;
	size_t body_len;
};

/*
 * Rebuilds leaf @old into @out with the edited item. Returns false when
 * there is no room for it at all.
 */
static bool edit_leaf(const struct fuzz_image *img, const uint8_t *old, uint8_t *out,
		      int replace_slot, const struct edit *e)
{
	const struct btrfs_header *hdr = (const struct btrfs_header *)old;
	uint32_t nritems = le32toh(hdr->nritems), used = 0;
	uint32_t space = img->nodesize - sizeof(*hdr);
	struct slot *slots = calloc(nritems + 1, sizeof(*slots));
	struct btrfs_disk_key key;
	int nr = (int)nritems, at = replace_slot;

	if (!slots)
		abort();
	for (uint32_t i = 0; i < nritems; i++) {
		const struct btrfs_item *it = (const struct btrfs_item *)(old + sizeof(*hdr)) + i;

		slots[i] = (struct slot){ it->key, old + sizeof(*hdr) + le32toh(it->offset),
					  le32toh(it->size) };
	}
	if (at >= 0) {
		key = slots[at].key;
	} else {
		key = (struct btrfs_disk_key){ htole64(e->t->objectid), e->t->type, 0 };
	}
	if (e->flags & FLAG_OFFSET)
		key.offset = htole64(e->offset);
	if (e->flags & FLAG_OBJECTID)
		key.objectid = htole64(e->objectid);
	if (at < 0) {
		/* Insert in key order; an equal key is replaced instead. */
		at = 0;
		while (at < nr && cmp_disk_keys(&slots[at].key, &key) < 0)
			at++;
		if (at == nr || cmp_disk_keys(&slots[at].key, &key)) {
			memmove(slots + at + 1, slots + at, (size_t)(nr - at) * sizeof(*slots));
			nr++;
		}
		slots[at].key = key;
	} else if (key_fits(slots, nr, at, &key)) {
		slots[at].key = key;
	}
	for (int i = 0; i < nr; i++)
		if (i != at)
			used += slots[i].size + sizeof(struct btrfs_item);
	if (used + sizeof(struct btrfs_item) > space) {
		free(slots);
		return false;
	}
	slots[at].size = (uint32_t)(e->body_len < space - used - sizeof(struct btrfs_item) ?
				    e->body_len : space - used - sizeof(struct btrfs_item));
	slots[at].data = e->body;
	/* The data comes from @old and the input, never from @out: no overlap. */
	memcpy(out, old, img->nodesize);
	pack_leaf(out, img->nodesize, slots, nr);
	free(slots);
	return true;
}

/* Writes the rebuilt leaf to every copy, checksums recomputed. */
static void write_leaf(struct fuzz_image *img, const struct fuzz_block *b, const uint8_t *leaf)
{
	for (int i = 0; i < b->copies.nr; i++) {
		fuzz_dev_write(img, b->copies.at[i].dev, b->copies.at[i].physical, leaf,
			       img->nodesize);
		fuzz_fix_tree_block_csum(img, b->copies.at[i].dev, b->copies.at[i].physical);
	}
}

/* The u64 (LE) at *@pos when @flag is set in @flags; -1 when the input ends first. */
static int take_u64(const uint8_t *data, size_t size, size_t *pos, uint8_t flags, uint8_t flag,
		    uint64_t *value)
{
	if (!(flags & flag))
		return 0;
	if (size - *pos < 8)
		return -1;
	memcpy(value, data + *pos, 8);
	*value = le64toh(*value);
	*pos += 8;
	return 0;
}

static int parse(const uint8_t *data, size_t size, struct fuzz_image **img, struct edit *e)
{
	size_t pos = 4;

	if (size < 4)
		return -1;
	*img = &fuzz_images[data[0] % fuzz_nr_images];
	*e = (struct edit){ &item_types[data[1] % NR_TYPES], data[2], data[3] };
	if (take_u64(data, size, &pos, e->flags, FLAG_OFFSET, &e->offset) ||
	    take_u64(data, size, &pos, e->flags, FLAG_OBJECTID, &e->objectid))
		return -1;
	e->body = data + pos;
	e->body_len = size - pos;
	return 0;
}

static void write_seed(const char *dir, size_t image, size_t type, const uint8_t *body,
		       size_t len)
{
	char path[4096];
	uint8_t head[4] = { (uint8_t)image, (uint8_t)type, 0, (uint8_t)(image & FLAG_JSON) };
	FILE *fp;

	snprintf(path, sizeof(path), "%s/seed-%02zu-%02zu", dir, image, type);
	fp = fopen(path, "wb");
	if (!fp || fwrite(head, 1, 4, fp) != 4 || fwrite(body, 1, len, fp) != len || fclose(fp)) {
		perror(path);
		exit(1);
	}
}

static void write_seeds(const char *dir)
{
	uint8_t *leaf = malloc(65536), zeros[512] = { 0 };

	if (!leaf)
		abort();
	for (size_t i = 0; i < fuzz_nr_images; i++) {
		struct fuzz_image *img = &fuzz_images[i];

		for (size_t t = 0; t < NR_TYPES; t++) {
			const struct fuzz_item_ref *ref = find_item(img, item_types[t].type, 0);

			if (ref) {
				const struct btrfs_item *it;

				read_leaf(img, &img->blocks[ref->block], leaf);
				it = (const struct btrfs_item *)(leaf + sizeof(struct btrfs_header)) +
				     ref->slot;
				write_seed(dir, i, t, leaf + sizeof(struct btrfs_header) +
					   le32toh(it->offset), le32toh(it->size));
			} else {
				write_seed(dir, i, t, zeros, item_types[t].seed_size);
			}
		}
	}
	free(leaf);
	fprintf(stderr, "fuzz_item: %zu seeds written to %s\n", fuzz_nr_images * NR_TYPES, dir);
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("BTRFSX_FUZZ_ITEM_SEEDS");

	(void)argc;
	(void)argv;
	fuzz_images_init();
	if (seeds && *seeds)
		write_seeds(seeds);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_item_ref *ref;
	const struct fuzz_block *b;
	struct fuzz_image *img;
	struct fuzz_run run;
	struct edit e;
	uint8_t *old, *leaf;
	int block;

	if (parse(data, size, &img, &e))
		return -1;
	ref = find_item(img, e.t->type, e.which);
	block = ref ? (int)ref->block : find_leaf(img, e.t->tree, e.which);
	if (block < 0)
		return 0;
	b = &img->blocks[block];
	old = malloc(img->nodesize);
	leaf = malloc(img->nodesize);
	if (!old || !leaf)
		abort();
	read_leaf(img, b, old);
	if (edit_leaf(img, old, leaf, ref ? ref->slot : -1, &e)) {
		write_leaf(img, b, leaf);
		run = (struct fuzz_run){
			.cmds = FUZZ_CMD_DUMP_TREE | e.t->readers,
			.format = (e.flags & FLAG_JSON) ? BX_FORMAT_JSON : BX_FORMAT_TEXT,
			.member = e.which,
			.file = (e.flags >> 4) & 7,
			.tree = b->owner,
		};
		fuzz_run_commands(img, &run);
		fuzz_undo();
	}
	free(leaf);
	free(old);
	return 0;
}
