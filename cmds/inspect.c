/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx inspect: read-only views of the on-disk format. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds/commands.h"
#include "cmds/inspect-items.h"
#include "cmds/inspect-kernel.h"
#include "common/error.h"
#include "common/units.h"
#include "disk/btree.h"
#include "disk/csum-tree.h"
#include "format/csum.h"
#include "disk/io.h"

/* ---- dump-super ---- */

static const char *const dump_super_usage[] = {
	"btrfsx inspect dump-super [-a] [--full] <device>",
	"Print the superblock of a device or image file.",
	"",
	"Shows the newest valid copy; with -a every copy (at 64KiB, 64MiB and",
	"256GiB, where the device is large enough) and why a copy is rejected.",
	"",
	"-a|--all     print every superblock copy",
	"-f|--full    also print the system chunk array and the backup roots",
	NULL
};

static void print_dev_item(struct bx_out *out, const struct btrfs_dev_item *d)
{
	bx_out_obj_begin(out, "dev_item", BX_OBJ_LINES, "dev_item:");
	bx_out_uuid(out, "uuid", d->uuid, 0);
	bx_out_uuid(out, "fsid", d->fsid, 0);
	bx_out_u64(out, "type", le64toh(d->type), 0);
	bx_out_u64(out, "total_bytes", le64toh(d->total_bytes), 0);
	bx_out_u64(out, "bytes_used", le64toh(d->bytes_used), 0);
	bx_out_u64(out, "io_align", le32toh(d->io_align), 0);
	bx_out_u64(out, "io_width", le32toh(d->io_width), 0);
	bx_out_u64(out, "sector_size", le32toh(d->sector_size), 0);
	bx_out_u64(out, "devid", le64toh(d->devid), 0);
	bx_out_u64(out, "dev_group", le32toh(d->dev_group), 0);
	bx_out_u64(out, "seek_speed", d->seek_speed, 0);
	bx_out_u64(out, "bandwidth", d->bandwidth, 0);
	bx_out_u64(out, "generation", le64toh(d->generation), 0);
	bx_out_obj_end(out);
}

static int print_sys_chunk(void *arg, const struct btrfs_key *key, const struct btrfs_chunk *c,
			   size_t size)
{
	struct bx_out *out = arg;

	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(out, "logical", key->offset, 0);
	bx_out_u64(out, "length", le64toh(c->length), 0);
	bx_out_str(out, "profile", bx_profile_name(le64toh(c->type)), 0);
	bx_out_u64(out, "type", le64toh(c->type), BX_F_HEX);
	bx_out_u64(out, "num_stripes", le16toh(c->num_stripes), 0);
	bx_out_list_begin(out, "stripes");
	for (int i = 0; i < le16toh(c->num_stripes); i++) {
		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(out, "devid", le64toh(c->stripe[i].devid), 0);
		bx_out_u64(out, "offset", le64toh(c->stripe[i].offset), 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	bx_out_obj_end(out);
	return 0;
}

static void print_backup_roots(struct bx_out *out, const struct btrfs_super_block *sb)
{
	bx_out_list_begin(out, "backup_roots");
	for (int i = 0; i < BTRFS_NUM_BACKUP_ROOTS; i++) {
		const struct btrfs_root_backup *b = &sb->super_roots[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(out, "backup", (uint64_t)i, 0);
		bx_out_u64(out, "tree_root", le64toh(b->tree_root), 0);
		bx_out_u64(out, "tree_root_gen", le64toh(b->tree_root_gen), 0);
		bx_out_u64(out, "chunk_root", le64toh(b->chunk_root), 0);
		bx_out_u64(out, "chunk_root_gen", le64toh(b->chunk_root_gen), 0);
		bx_out_u64(out, "extent_root", le64toh(b->extent_root), 0);
		bx_out_u64(out, "fs_root", le64toh(b->fs_root), 0);
		bx_out_u64(out, "dev_root", le64toh(b->dev_root), 0);
		bx_out_u64(out, "csum_root", le64toh(b->csum_root), 0);
		bx_out_u64(out, "total_bytes", le64toh(b->total_bytes), 0);
		bx_out_u64(out, "bytes_used", le64toh(b->bytes_used), 0);
		bx_out_u64(out, "num_devices", le64toh(b->num_devices), 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

static void print_super(struct bx_out *out, const struct btrfs_super_block *sb, bool full)
{
	unsigned int csum_type = le16toh(sb->csum_type);
	const char *csum_name = btrfsx_csum_name(csum_type);
	size_t csum_size = btrfsx_csum_size(csum_type);
	int ret;
	char label[BTRFS_LABEL_SIZE + 1];

	bx_out_u64(out, "csum_type", csum_type, 0);
	bx_out_str(out, "csum_name", csum_name ? csum_name : "unknown", 0);
	bx_out_u64(out, "csum_size", csum_size, 0);
	bx_out_hexbytes(out, "csum", sb->csum, csum_size ? csum_size : BTRFS_CSUM_SIZE, 0);
	bx_out_u64(out, "bytenr", le64toh(sb->bytenr), 0);
	bx_out_u64(out, "flags", le64toh(sb->flags), BX_F_HEX);
	bx_out_u64(out, "magic", le64toh(sb->magic), BX_F_HEX);
	bx_out_uuid(out, "fsid", sb->fsid, 0);
	/* As stored, as btrfs-progs 6.19 prints it: all zeros without the metadata_uuid feature. */
	bx_out_uuid(out, "metadata_uuid", sb->metadata_uuid, 0);
	memcpy(label, sb->label, BTRFS_LABEL_SIZE);
	label[BTRFS_LABEL_SIZE] = '\0';
	bx_out_str(out, "label", label, 0);
	bx_out_u64(out, "generation", le64toh(sb->generation), 0);
	bx_out_u64(out, "root", le64toh(sb->root), 0);
	bx_out_u64(out, "sys_array_size", le32toh(sb->sys_chunk_array_size), 0);
	bx_out_u64(out, "chunk_root_generation", le64toh(sb->chunk_root_generation), 0);
	bx_out_u64(out, "root_level", sb->root_level, 0);
	bx_out_u64(out, "chunk_root", le64toh(sb->chunk_root), 0);
	bx_out_u64(out, "chunk_root_level", sb->chunk_root_level, 0);
	bx_out_u64(out, "log_root", le64toh(sb->log_root), 0);
	bx_out_u64(out, "log_root_transid", le64toh(sb->log_root_transid), 0);
	bx_out_u64(out, "log_root_level", sb->log_root_level, 0);
	bx_out_u64(out, "total_bytes", le64toh(sb->total_bytes), 0);
	bx_out_u64(out, "bytes_used", le64toh(sb->bytes_used), 0);
	bx_out_u64(out, "sectorsize", le32toh(sb->sectorsize), 0);
	bx_out_u64(out, "nodesize", le32toh(sb->nodesize), 0);
	bx_out_u64(out, "leafsize", le32toh(sb->leafsize), 0);
	bx_out_u64(out, "stripesize", le32toh(sb->stripesize), 0);
	bx_out_u64(out, "root_dir", le64toh(sb->root_dir_objectid), 0);
	bx_out_u64(out, "num_devices", le64toh(sb->num_devices), 0);
	bx_out_u64(out, "compat_flags", le64toh(sb->compat_flags), BX_F_HEX);
	bx_out_u64(out, "compat_ro_flags", le64toh(sb->compat_ro_flags), BX_F_HEX);
	bx_out_u64(out, "incompat_flags", le64toh(sb->incompat_flags), BX_F_HEX);
	bx_out_u64(out, "cache_generation", le64toh(sb->cache_generation), 0);
	bx_out_u64(out, "uuid_tree_generation", le64toh(sb->uuid_tree_generation), 0);
	print_dev_item(out, &sb->dev_item);
	if (!full)
		return;
	bx_out_list_begin(out, "sys_chunk_array");
	ret = bx_parse_sys_chunk_array(sb, print_sys_chunk, out);
	if (ret) {
		bx_out_str(out, NULL, bx_error_message(ret), 0);
		bx_error_clear();  /* shown in place: dump-super goes on */
	}
	bx_out_list_end(out);
	print_backup_roots(out, sb);
}

/* Every copy with its status; what no copy makes valid is still listed. */
static int print_all_copies(struct bx_out *out, const char *path, bool full)
{
	uint64_t size;
	int fd, nr_valid = 0;
	int ret = bx_open_raw(path, &fd, &size);

	if (ret)
		return ret;
	bx_out_str(out, "device", path, BX_F_JSON_ONLY);
	bx_out_list_begin(out, "superblocks");
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		struct btrfs_super_block sb;
		enum bx_sb_status status = bx_read_super_copy(fd, size, i, &sb,
							      BX_IO_TIMEOUT_DEFAULT);
		char heading[96];

		snprintf(heading, sizeof(heading), "superblock copy %d at %llu: %s", i,
			 (unsigned long long)btrfs_sb_offset(i), bx_sb_status_str(status));
		bx_out_obj_begin(out, NULL, BX_OBJ_LINES, heading);
		bx_out_u64(out, "copy", (uint64_t)i, BX_F_JSON_ONLY);
		bx_out_u64(out, "offset", btrfs_sb_offset(i), BX_F_JSON_ONLY);
		bx_out_str(out, "status", bx_sb_status_str(status), BX_F_JSON_ONLY);
		/* A copy with the magic is worth showing even when its checksum fails. */
		if (status == BX_SB_OK || status == BX_SB_BAD_CSUM || status == BX_SB_BAD_BYTENR)
			print_super(out, &sb, full);
		bx_out_obj_end(out);
		nr_valid += status == BX_SB_OK;
	}
	bx_out_list_end(out);
	close(fd);
	if (!nr_valid)
		return bx_error(-EUCLEAN, "%s: no valid superblock copy", path);
	return 0;
}

static int cmd_dump_super(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "full", no_argument, NULL, 'f' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	bool all = false, full = false;
	struct bx_fs *fs;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "afh", longopts)) != -1) {
		if (opt == 'a')
			all = true;
		else if (opt == 'f')
			full = true;
		else
			return bx_opt_result(opt);
	}
	ret = bx_check_argc(argc - optind, 1, 1);
	if (ret)
		return ret;
	if (all)
		return print_all_copies(ctx->out, argv[optind], full);
	ret = bx_fs_open(&fs, argv + optind, 1, BX_OPEN_NO_SCAN | BX_OPEN_SB_ONLY);
	if (ret)
		return ret;
	bx_out_str(ctx->out, "device", fs->devs[0]->path, BX_F_JSON_ONLY);
	bx_out_obj_begin(ctx->out, "superblock", BX_OBJ_LINES, NULL);
	bx_out_u64(ctx->out, "copy", (uint64_t)fs->devs[0]->sb_mirror, BX_F_JSON_ONLY);
	print_super(ctx->out, &fs->devs[0]->sb, full);
	bx_out_obj_end(ctx->out);
	bx_fs_close(fs);
	return 0;
}

/* ---- dump-tree ---- */

static const char *const dump_tree_usage[] = {
	"btrfsx inspect dump-tree [-t <tree>]... [-b <bytenr>]... [--no-readahead] <device>...",
	"Print tree blocks and their items.",
	"",
	"Without -t: the root tree, the chunk tree and every tree the root tree",
	"lists. Tree names: root, chunk, dev, extent, csum, fs, free-space, uuid,",
	"quota, block-group, data-reloc, log, or a tree id.",
	"Other member devices are found by fsid; name image files explicitly.",
	"",
	"-t|--tree <tree>     print this tree (repeatable)",
	"-b|--block <bytenr>  print one tree block (repeatable)",
	"--no-readahead       read blocks one by one (for measurements)",
	NULL
};

struct dump_state {
	struct bx_out *out;
	struct bx_fs *fs;
	int nr_bad_blocks;
};

static void print_key_json(struct bx_out *out, const struct btrfs_key *key)
{
	bx_out_obj_begin(out, "key", BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "objectid", key->objectid, 0);
	bx_out_u64(out, "type", key->type, 0);
	bx_out_u64(out, "offset", key->offset, 0);
	bx_out_obj_end(out);
}

static void print_node_ptr(struct bx_out *out, const struct bx_eb *eb, int slot)
{
	const struct btrfs_key_ptr *ptr = bx_node_ptr(eb, slot);
	struct btrfs_key key;
	char text[96];

	bx_item_key(eb, slot, &key);
	bx_key_text(&key, text, sizeof(text));
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_textf(out, "key %s block %llu gen %llu", text,
		     (unsigned long long)le64toh(ptr->blockptr),
		     (unsigned long long)le64toh(ptr->generation));
	print_key_json(out, &key);
	bx_out_u64(out, "blockptr", le64toh(ptr->blockptr), BX_F_JSON_ONLY);
	bx_out_u64(out, "generation", le64toh(ptr->generation), BX_F_JSON_ONLY);
	bx_out_obj_end(out);
}

static int dump_block_cb(void *arg, struct bx_eb *eb)
{
	struct dump_state *ds = arg;
	struct bx_out *out = ds->out;
	const struct btrfs_header *hdr = bx_eb_header(eb);
	uint32_t nritems = bx_eb_nritems(eb);
	char heading[160];

	snprintf(heading, sizeof(heading), "%s %llu level %u items %u generation %llu owner %llu",
		 hdr->level ? "node" : "leaf", (unsigned long long)eb->start, hdr->level, nritems,
		 (unsigned long long)le64toh(hdr->generation),
		 (unsigned long long)le64toh(hdr->owner));
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, heading);
	bx_out_u64(out, "bytenr", eb->start, BX_F_JSON_ONLY);
	bx_out_u64(out, "level", hdr->level, BX_F_JSON_ONLY);
	bx_out_u64(out, "nritems", nritems, BX_F_JSON_ONLY);
	bx_out_u64(out, "generation", le64toh(hdr->generation), BX_F_JSON_ONLY);
	bx_out_u64(out, "owner", le64toh(hdr->owner), BX_F_JSON_ONLY);
	bx_out_u64(out, "flags", le64toh(hdr->flags), BX_F_JSON_ONLY);
	bx_out_u64(out, "mirror", (uint64_t)eb->mirror, BX_F_JSON_ONLY);
	bx_out_list_begin(out, hdr->level ? "ptrs" : "items");
	for (uint32_t slot = 0; slot < nritems; slot++) {
		if (hdr->level == 0)
			bx_print_leaf_item(out, ds->fs, eb, (int)slot);
		else
			print_node_ptr(out, eb, (int)slot);
	}
	bx_out_list_end(out);
	bx_out_obj_end(out);
	return 0;
}

/* A block of a snapshot being deleted, freed by design: listed, not read. */
static void dump_block_dropped(void *arg, uint64_t bytenr)
{
	struct dump_state *ds = arg;

	bx_out_obj_begin(ds->out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(ds->out, "dropped_block", bytenr, 0);
	bx_out_textf(ds->out, "(left of drop_progress: freed by the snapshot's deletion)");
	bx_out_obj_end(ds->out);
}

/* An unreadable block below the root: say so in the output and go on. */
static int dump_block_error(void *arg, uint64_t bytenr, int ret)
{
	struct dump_state *ds = arg;

	bx_out_obj_begin(ds->out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(ds->out, "bad_block", bytenr, 0);
	bx_out_str(ds->out, "error", bx_error_message(ret), 0);
	bx_out_obj_end(ds->out);
	ds->nr_bad_blocks++;
	return 0;
}

static int dump_one_tree(struct dump_state *ds, const struct bx_root *root)
{
	static const struct bx_walk_ops ops = { dump_block_cb, dump_block_error,
						dump_block_dropped };
	const char *name = bx_tree_name(root->objectid);
	char heading[128];
	int ret;

	snprintf(heading, sizeof(heading), "%s tree %llu root %llu level %d",
		 name ? name : "subvolume", (unsigned long long)root->objectid,
		 (unsigned long long)root->bytenr, root->level);
	bx_out_obj_begin(ds->out, NULL, BX_OBJ_LINES, heading);
	bx_out_str(ds->out, "tree", name, BX_F_JSON_ONLY);
	bx_out_u64(ds->out, "objectid", root->objectid, BX_F_JSON_ONLY);
	bx_out_u64(ds->out, "root", root->bytenr, BX_F_JSON_ONLY);
	bx_out_u64(ds->out, "level", (uint64_t)root->level, BX_F_JSON_ONLY);
	bx_out_list_begin(ds->out, "blocks");
	/* Only the root's read fails the walk: listed like any bad block, the next tree follows. */
	ret = bx_walk_tree(ds->fs, root, &ops, ds);
	if (ret)
		dump_block_error(ds, root->bytenr, ret);
	bx_out_list_end(ds->out);
	bx_out_obj_end(ds->out);
	return 0;
}

/* Every tree @parent (the root tree, or the log root tree) has a root item for. */
static int collect_roots(struct bx_fs *fs, const struct bx_root *parent, struct bx_root **roots,
			 size_t *nr)
{
	struct btrfs_key first = { 0, 0, 0 };
	struct bx_path path;
	size_t alloc = 0;
	int ret;

	bx_path_init(&path, fs->readahead);
	ret = bx_search(fs, parent, &first, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	for (; ret == 0; ret = bx_next_item(fs, &path)) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		int slot = path.slots[0];
		const struct btrfs_root_item *item;
		struct btrfs_key key;

		bx_item_key(leaf, slot, &key);
		if (key.type != BTRFS_ROOT_ITEM_KEY || bx_item_size(leaf, slot) < BTRFS_ROOT_ITEM_V1_SIZE)
			continue;
		if (*nr == alloc) {
			struct bx_root *grown;

			alloc = alloc ? alloc * 2 : 16;
			grown = realloc(*roots, alloc * sizeof(**roots));
			if (!grown) {
				ret = bx_error(-ENOMEM, "out of memory");
				break;
			}
			*roots = grown;
		}
		item = bx_item_ptr(leaf, slot);
		bx_root_from_item(&(*roots)[(*nr)++], key.objectid, item);
	}
	bx_path_release(&path);
	return ret < 0 ? ret : 0;
}

/* The trees @parent lists: subvolumes and the rest for the root tree, logs for the log root. */
static int dump_listed_trees(struct dump_state *ds, const struct bx_root *parent)
{
	struct bx_root *roots = NULL;
	size_t nr = 0;
	int ret = collect_roots(ds->fs, parent, &roots, &nr);

	for (size_t i = 0; !ret && i < nr; i++)
		ret = dump_one_tree(ds, &roots[i]);
	free(roots);
	return ret;
}

static int dump_all_trees(struct dump_state *ds)
{
	struct bx_root root;
	int ret;

	bx_find_root(ds->fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	ret = dump_one_tree(ds, &root);
	if (!ret) {
		bx_find_root(ds->fs, BTRFS_CHUNK_TREE_OBJECTID, &root);
		ret = dump_one_tree(ds, &root);
	}
	bx_find_root(ds->fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	if (!ret)
		ret = dump_listed_trees(ds, &root);
	if (ret)
		return ret;
	if (bx_find_root(ds->fs, BTRFS_TREE_LOG_OBJECTID, &root)) {
		bx_error_clear();  /* no log tree: nothing to replay, nothing to show */
		return 0;
	}
	ret = dump_one_tree(ds, &root);
	return ret ? ret : dump_listed_trees(ds, &root);
}

static int dump_blocks(struct dump_state *ds, const uint64_t *blocks, int nr)
{
	for (int i = 0; i < nr; i++) {
		struct bx_eb *eb;
		int ret = bx_read_tree_block(ds->fs, blocks[i], NULL, &eb);

		if (ret)
			return ret;
		dump_block_cb(ds, eb);
		bx_eb_put(eb);
	}
	return 0;
}

#define DUMP_TREE_MAX_ARGS 32

struct dump_tree_args {
	uint64_t trees[DUMP_TREE_MAX_ARGS];
	int nr_trees;
	uint64_t blocks[DUMP_TREE_MAX_ARGS];
	int nr_blocks;
	bool readahead;
};

static int parse_dump_tree_args(struct bx_ctx *ctx, int argc, char **argv,
				struct dump_tree_args *args)
{
	static const struct option longopts[] = {
		{ "tree", required_argument, NULL, 't' },
		{ "block", required_argument, NULL, 'b' },
		{ "no-readahead", no_argument, NULL, 'R' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int opt;

	args->readahead = true;
	while ((opt = bx_getopt(ctx, argc, argv, "t:b:h", longopts)) != -1) {
		if (opt == 't' || opt == 'b') {
			uint64_t *list = opt == 't' ? args->trees : args->blocks;
			int *nr = opt == 't' ? &args->nr_trees : &args->nr_blocks;
			int ret = opt == 't' ? bx_tree_id_by_name(optarg, &list[*nr])
					     : bx_parse_u64(optarg, &list[*nr]);

			if (ret)
				return bx_usage_error("unknown %s '%s'", opt == 't' ? "tree" : "block",
						      optarg);
			if (++*nr == DUMP_TREE_MAX_ARGS)
				return bx_usage_error("too many -%c options", opt);
		} else if (opt == 'R') {
			args->readahead = false;
		} else {
			return bx_opt_result(opt);
		}
	}
	return bx_check_argc(argc - optind, 1, -1);
}

static int cmd_dump_tree(struct bx_ctx *ctx, int argc, char **argv)
{
	struct dump_tree_args args = { 0 };
	struct dump_state ds = { ctx->out, NULL, 0 };
	int ret;

	ret = parse_dump_tree_args(ctx, argc, argv, &args);
	if (ret)
		return ret;
	/* Read-only: a degraded filesystem is dumped wherever a copy is left (one warning). */
	ret = bx_fs_open(&ds.fs, argv + optind, argc - optind, BX_OPEN_DEGRADED);
	if (ret)
		return ret;
	ds.fs->readahead = args.readahead;
	bx_out_uuid(ctx->out, "fsid", ds.fs->fsid, BX_F_JSON_ONLY);
	bx_out_list_begin(ctx->out, args.nr_blocks ? "blocks" : "trees");
	if (args.nr_blocks)
		ret = dump_blocks(&ds, args.blocks, args.nr_blocks);
	else if (!args.nr_trees)
		ret = dump_all_trees(&ds);
	for (int i = 0; !ret && i < args.nr_trees; i++) {
		struct bx_root root;

		ret = bx_find_root(ds.fs, args.trees[i], &root);
		if (!ret)
			ret = dump_one_tree(&ds, &root);
	}
	bx_out_list_end(ctx->out);
	if (!ret && ds.nr_bad_blocks)
		ret = bx_error(-EIO, "%d tree block%s could not be read", ds.nr_bad_blocks,
			       ds.nr_bad_blocks > 1 ? "s" : "");
	bx_fs_close(ds.fs);
	return ret;
}

/* ---- read-file ---- */

static const char *const read_file_usage[] = {
	"btrfsx inspect read-file [--mirror <n>] [--no-verify] [-o <file>] <path> <device>...",
	"Read a file of an unmounted filesystem through btrfsx's own chunk mapping.",
	"",
	"<path> is relative to the top-level subvolume (\"dir/file\"); subvolumes",
	"on the way are followed. Writes the contents to stdout or <file>.",
	"Compressed extents are not supported. Every sector with a checksum is",
	"verified: one that fails is read from the other copies (with a warning);",
	"when no copy matches, the command stops with an error.",
	"",
	"--mirror <n>     read copy n of every extent, and only that copy (default",
	"                 1, others as fallback; raid5/6: 2 and 3 rebuild from parity)",
	"--no-verify      write what the copy holds, checksums unchecked (forensics)",
	"-o|--output <f>  write to <f> instead of stdout",
	NULL
};

struct inode_ref {
	uint64_t root;  /* tree id of the subvolume */
	uint64_t ino;
};

/* Finds @name in directory @dir by scanning its DIR_INDEX items. */
static int lookup_name(struct bx_fs *fs, struct inode_ref *dir, const char *name, size_t len)
{
	struct btrfs_key key = { dir->ino, BTRFS_DIR_INDEX_KEY, 0 };
	struct bx_root root;
	struct bx_path path;
	int ret;

	ret = bx_find_root(fs, dir->root, &root);
	if (ret)
		return ret;
	bx_path_init(&path, true);
	ret = bx_search(fs, &root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(fs, &path);
	for (; ret == 0; ret = bx_next_item(fs, &path)) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		const struct btrfs_dir_item *di = bx_item_ptr(leaf, path.slots[0]);
		uint32_t size = bx_item_size(leaf, path.slots[0]);
		struct btrfs_key found, location;

		bx_item_key(leaf, path.slots[0], &found);
		if (found.objectid != dir->ino || found.type != BTRFS_DIR_INDEX_KEY)
			break;
		if (size < sizeof(*di) || size - sizeof(*di) < le16toh(di->name_len))
			continue;
		if (le16toh(di->name_len) != len || memcmp(di + 1, name, len))
			continue;
		btrfs_disk_key_to_cpu(&location, &di->location);
		if (location.type == BTRFS_ROOT_ITEM_KEY)
			*dir = (struct inode_ref){ location.objectid, BTRFS_FIRST_FREE_OBJECTID };
		else
			dir->ino = location.objectid;
		bx_path_release(&path);
		return 0;
	}
	bx_path_release(&path);
	return ret < 0 ? ret : -ENOENT;
}

static int resolve_path(struct bx_fs *fs, const char *path, struct inode_ref *ref)
{
	*ref = (struct inode_ref){ BTRFS_FS_TREE_OBJECTID, BTRFS_FIRST_FREE_OBJECTID };
	while (*path) {
		size_t len = strcspn(path, "/");
		int ret;

		if (len) {
			ret = lookup_name(fs, ref, path, len);
			if (ret == -ENOENT)
				return bx_error(-ENOENT, "'%.*s' not found", (int)len, path);
			if (ret)
				return ret;
		}
		path += len;
		path += strspn(path, "/");
	}
	return 0;
}

struct file_reader {
	struct bx_fs *fs;
	int mirror;
	bool mirror_only;   /* --mirror: that copy, no fallback */
	bool verify;        /* checksums checked (not --no-verify) */
	struct bx_csum_cursor csums;
	FILE *fp;
	uint64_t written;   /* file offset written so far */
	uint64_t size;      /* i_size */
};

/* 0 when the sector at @logical in @sector matches its checksum or has none; -EIO when not. */
static int verify_sector(struct file_reader *fr, uint64_t logical, const uint8_t *sector)
{
	uint8_t want[BTRFS_CSUM_SIZE], got[32];
	int ret = bx_csum_lookup(&fr->csums, logical, want);

	if (ret <= 0)
		return ret;
	btrfsx_csum(fr->fs->csum_type, sector, fr->fs->sectorsize, got);
	return memcmp(want, got, fr->fs->csum_size) ? -EIO : 0;
}

/* The sector at @logical from another copy that verifies, into @sector. */
static int sector_from_other_copy(struct file_reader *fr, uint64_t logical, uint8_t *sector,
				  uint64_t file_off)
{
	int copies = bx_num_copies(fr->fs, logical);

	for (int m = 1; !fr->mirror_only && m <= copies; m++) {
		if (m == fr->mirror || bx_read_logical(fr->fs, logical, sector,
						      fr->fs->sectorsize, m))
			continue;
		if (!verify_sector(fr, logical, sector)) {
			bx_warn("file offset %llu (logical %llu): copy %d fails its checksum, "
				"read copy %d", (unsigned long long)file_off,
				(unsigned long long)logical, fr->mirror, m);
			return 0;
		}
	}
	return bx_error(-EIO, "file offset %llu (logical %llu): %s its checksum",
			(unsigned long long)file_off, (unsigned long long)logical,
			fr->mirror_only ? "the copy asked for fails" : "no copy matches");
}

/* @len bytes of file data at @logical (file offset @file_off), verified. */
static int read_data(struct file_reader *fr, uint64_t logical, uint8_t *buf, size_t len,
		     uint64_t file_off)
{
	uint32_t ss = fr->fs->sectorsize;
	int ret = bx_read_logical(fr->fs, logical, buf, len, fr->mirror);

	for (size_t at = 0; !ret && fr->verify && at < len; at += ss) {
		ret = verify_sector(fr, logical + at, buf + at);
		if (ret == -EIO)
			ret = sector_from_other_copy(fr, logical + at, buf + at, file_off + at);
	}
	return ret;
}

static int write_zeros(struct file_reader *fr, uint64_t upto)
{
	static const uint8_t zeros[4096];

	if (upto > fr->size)
		upto = fr->size;
	while (fr->written < upto) {
		size_t n = upto - fr->written < sizeof(zeros) ? upto - fr->written : sizeof(zeros);

		if (fwrite(zeros, 1, n, fr->fp) != n)
			return bx_error(-EIO, "write failed: %m");
		fr->written += n;
	}
	return 0;
}

static int write_extent(struct file_reader *fr, const struct btrfs_key *key,
			const struct btrfs_file_extent_item *fi, uint32_t size)
{
	uint64_t len, chunk_len = 1024 * 1024;
	uint8_t *buf;
	int ret = write_zeros(fr, key->offset);

	if (ret)
		return ret;
	if (size < BTRFS_FILE_EXTENT_INLINE_DATA_START)
		return bx_error(-EUCLEAN, "file extent item too small");
	if (fi->compression != BTRFS_COMPRESS_NONE || fi->encryption)
		return bx_error(-EOPNOTSUPP, "extent at offset %llu is compressed or encrypted",
				(unsigned long long)key->offset);
	if (fi->type == BTRFS_FILE_EXTENT_INLINE) {
		len = size - BTRFS_FILE_EXTENT_INLINE_DATA_START;
		if (len > fr->size - fr->written)
			len = fr->size - fr->written;
		if (fwrite((const uint8_t *)fi + BTRFS_FILE_EXTENT_INLINE_DATA_START, 1, len,
			   fr->fp) != len)
			return bx_error(-EIO, "write failed: %m");
		fr->written += len;
		return 0;
	}
	if (size < sizeof(*fi))
		return bx_error(-EUCLEAN, "file extent item too small");
	len = le64toh(fi->num_bytes);
	if (fi->type == BTRFS_FILE_EXTENT_PREALLOC || !fi->disk_bytenr)
		return write_zeros(fr, key->offset + len);
	buf = malloc(chunk_len);
	if (!buf)
		return bx_error(-ENOMEM, "out of memory");
	for (uint64_t done = 0; !ret && done < len && fr->written < fr->size; done += chunk_len) {
		uint64_t n = len - done < chunk_len ? len - done : chunk_len;
		uint32_t ss = fr->fs->sectorsize;

		if (n > fr->size - fr->written)
			n = fr->size - fr->written;
		/* Whole sectors, as checksums cover them; the file's tail is cut when written. */
		ret = read_data(fr, le64toh(fi->disk_bytenr) + le64toh(fi->offset) + done, buf,
				(n + ss - 1) / ss * ss, key->offset + done);
		if (!ret && fwrite(buf, 1, n, fr->fp) != n)
			ret = bx_error(-EIO, "write failed: %m");
		fr->written += n;
	}
	free(buf);
	return ret;
}

static int inode_size(struct bx_fs *fs, const struct bx_root *root, uint64_t ino, uint64_t *size)
{
	struct btrfs_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 };
	const struct btrfs_inode_item *ii;
	struct bx_path path;
	int ret;

	bx_path_init(&path, false);
	ret = bx_search(fs, root, &key, &path);
	if (ret == 0 && bx_item_size(bx_path_leaf(&path), path.slots[0]) >= sizeof(*ii)) {
		ii = bx_item_ptr(bx_path_leaf(&path), path.slots[0]);
		if ((le32toh(ii->mode) & 0170000) != 0100000)
			ret = bx_error(-EISDIR, "not a regular file");
		*size = le64toh(ii->size);
	} else if (ret >= 0) {
		ret = bx_error(-EUCLEAN, "inode %llu has no inode item", (unsigned long long)ino);
	}
	bx_path_release(&path);
	return ret;
}

static int read_file(struct file_reader *fr, const struct inode_ref *ref)
{
	struct btrfs_key key = { ref->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	struct bx_root root;
	struct bx_path path;
	int ret;

	ret = bx_find_root(fr->fs, ref->root, &root);
	if (!ret)
		ret = inode_size(fr->fs, &root, ref->ino, &fr->size);
	if (ret)
		return ret;
	bx_path_init(&path, true);
	ret = bx_search(fr->fs, &root, &key, &path);
	if (ret >= 0)
		ret = bx_path_settle(fr->fs, &path);
	for (; ret == 0; ret = bx_next_item(fr->fs, &path)) {
		struct bx_eb *leaf = bx_path_leaf(&path);
		struct btrfs_key found;

		bx_item_key(leaf, path.slots[0], &found);
		if (found.objectid != ref->ino || found.type != BTRFS_EXTENT_DATA_KEY)
			break;
		ret = write_extent(fr, &found, bx_item_ptr(leaf, path.slots[0]),
				   bx_item_size(leaf, path.slots[0]));
		if (ret)
			break;
	}
	bx_path_release(&path);
	if (ret >= 0)
		ret = write_zeros(fr, fr->size);
	return ret;
}

static int cmd_read_file(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_NO_VERIFY = 256 };
	static const struct option longopts[] = {
		{ "mirror", required_argument, NULL, 'm' },
		{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
		{ "output", required_argument, NULL, 'o' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct file_reader fr = { .mirror = 1, .verify = true, .fp = stdout };
	const char *output = NULL;
	struct inode_ref ref;
	uint64_t mirror;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "o:h", longopts)) != -1) {
		if (opt == 'm') {
			if (bx_parse_u64(optarg, &mirror) || mirror < 1 || mirror > BTRFS_MAX_MIRRORS)
				return bx_usage_error("invalid mirror '%s' (1 to %d)", optarg,
						      BTRFS_MAX_MIRRORS);
			fr.mirror = (int)mirror;
			fr.mirror_only = true;
		} else if (opt == OPT_NO_VERIFY) {
			fr.verify = false;
		} else if (opt == 'o') {
			output = optarg;
		} else {
			return bx_opt_result(opt);
		}
	}
	ret = bx_check_argc(argc - optind, 2, -1);
	if (ret)
		return ret;
	if (!*argv[optind])
		return bx_usage_error("the file path is empty: name a file below the top-level "
				      "subvolume, e.g. dir/file");
	ret = bx_fs_open(&fr.fs, argv + optind + 1, argc - optind - 1, BX_OPEN_DEGRADED);
	if (ret)
		return ret;
	bx_csum_cursor_init(&fr.csums, fr.fs);
	ret = resolve_path(fr.fs, argv[optind], &ref);
	if (!ret && output && !(fr.fp = fopen(output, "we")))
		ret = bx_error(-errno, "%s: %m", output);
	if (!ret)
		ret = read_file(&fr, &ref);
	if (ret)
		ret = bx_error_wrap(ret, "%s", argv[optind]);
	if (fr.fp && fr.fp != stdout && fclose(fr.fp) && !ret)
		ret = bx_error(-errno, "%s: %m", output);
	bx_csum_cursor_release(&fr.csums);
	bx_fs_close(fr.fs);
	return ret;
}

static const char *const inspect_usage[] = {
	"btrfsx inspect <command> [<args>]",
	"Read-only views of the on-disk format, and of the kernel the models follow.",
	NULL
};

static const struct bx_cmd inspect_cmds[] = {
	{ "dump-super", cmd_dump_super, dump_super_usage, NULL, BX_CMD_JSON },
	{ "dump-tree", cmd_dump_tree, dump_tree_usage, NULL, BX_CMD_JSON },
	{ "read-file", cmd_read_file, read_file_usage, NULL, 0 },
	{ "kernel-traits", bx_cmd_inspect_kernel_traits, bx_inspect_kernel_traits_usage, NULL,
	  BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_inspect_group = { inspect_usage, inspect_cmds };
