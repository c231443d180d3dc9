/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx mkfs: a new filesystem with allocation hints, its first chunks placed by them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <uuid/uuid.h>

#include "cmds/commands.h"
#include "disk/btree.h"
#include "common/error.h"
#include "common/units.h"
#include "model/allocator.h"
#include "format/csum.h"
#include "format/hints.h"
#include "mkfs/mkfs.h"
#include "disk/volumes.h"

const char *const mkfs_usage[] = {
	"btrfsx mkfs [-d profile] [-m profile] [-L label] [-U uuid] "
	"[--csum crc32c|xxhash|sha256|blake2] [-n nodesize] [-s sectorsize] [-b bytes] "
	"[-O features] [-f] [-q] <dev>[:<hint>] ...",
	"Make a filesystem: allocation hints written, first chunks placed by them.",
	"",
	"<dev> is a block device or an image file. ':<hint>' gives it an allocation",
	"hint: data_preferred (the default), metadata_preferred, metadata_only,",
	"data_only or none (short: d, m, monly, donly). The system, metadata and data",
	"chunks go where the allocator of a kernel with hint support puts them.",
	"",
	"Options:",
	"-d|--data <profile>        data profile: single (default), dup, raid0, raid1,",
	"                           raid1c3, raid1c4, raid10, raid5, raid6",
	"-m|--metadata <profile>    metadata (and system) profile; default raid1 when two",
	"                           devices or more take metadata, else dup",
	"-L|--label <label>         filesystem label",
	"-U|--uuid <uuid>           filesystem UUID (default: random)",
	"--csum|--checksum <type>   crc32c (default), xxhash, sha256, blake2",
	"-n|--nodesize <size>       tree block size (default 16KiB)",
	"-s|--sectorsize <size>     data block size (default 4KiB)",
	"-b|--byte-count <size>     use this size of each device; an image file is",
	"                           created or grown to it",
	"-O|--features <list>       extref, skinny-metadata, no-holes, free-space-tree,",
	"                           block-group-tree, quota, squota; ^name turns one",
	"                           off (-R is the same, bgt and fst short names); the",
	"                           default is mkfs.btrfs 6.19's: the first five",
	"-f|--force                 overwrite existing filesystems and partition tables",
	"-q|--quiet                 print nothing but errors (JSON is still printed)",
	NULL
};

static int parse_csum(const char *arg, unsigned int *type)
{
	static const struct {
		const char *name;
		unsigned int type;
	} names[] = {
		{ "crc32c", BTRFS_CSUM_TYPE_CRC32 },
		{ "xxhash", BTRFS_CSUM_TYPE_XXHASH },
		{ "xxhash64", BTRFS_CSUM_TYPE_XXHASH },
		{ "sha256", BTRFS_CSUM_TYPE_SHA256 },
		{ "blake2", BTRFS_CSUM_TYPE_BLAKE2 },
		{ "blake2b", BTRFS_CSUM_TYPE_BLAKE2 },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(arg, names[i].name)) {
			*type = names[i].type;
			return 0;
		}
	}
	return bx_error(-EINVAL, "unknown checksum '%s' (crc32c, xxhash, sha256, blake2)", arg);
}

static int parse_size_opt(const char *opt, const char *arg, uint64_t max, uint64_t *value)
{
	int ret = bx_parse_size(arg, value);

	if (ret)
		return bx_error_wrap(ret, "invalid %s", opt);
	if (!*value || *value > max)
		return bx_error(-EINVAL, "invalid %s '%s'", opt, arg);
	return 0;
}

/*
 * <dev>[:<hint>]: a path that exists is taken whole (paths may hold colons);
 * otherwise the part after the last colon is the hint.
 */
static int parse_device(char *arg, struct bx_mkfs_device *dev)
{
	struct stat st;
	char *colon = strrchr(arg, ':');
	int ret;

	dev->path = arg;
	dev->hint = BX_HINT_DATA_PREFERRED;
	if (!colon || !stat(arg, &st))
		return 0;
	ret = bx_hint_parse(colon + 1, false, &dev->hint);
	if (ret)
		return bx_error_wrap(ret, "%s", arg);
	*colon = '\0';
	if (!*arg)
		return bx_error(-EINVAL, "'%s': no device before the hint", colon + 1);
	return 0;
}

static void print_chunk(struct bx_out *out, const struct bx_mkfs_chunk *c, const char *kind)
{
	char devs[256] = "";
	size_t used = 0;

	for (uint32_t s = 0; s < c->num_stripes && used < sizeof(devs); s++)
		used += (size_t)snprintf(devs + used, sizeof(devs) - used, "%s%llu", s ? "," : "",
					 (unsigned long long)c->stripes[s].devid);
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_str(out, "type", kind, 0);
	bx_out_str(out, "profile", bx_profile_name(c->type), 0);
	bx_out_size(out, "size", c->length, 0, 0);
	bx_out_u64(out, "logical", c->logical, 0);
	bx_out_size(out, "stripe_size", c->stripe_size, 0, BX_F_JSON_ONLY);
	bx_out_u64(out, "used", c->used, BX_F_JSON_ONLY);
	bx_out_str(out, "devids", devs, BX_F_TEXT_ONLY);
	bx_out_bool(out, "fallback", c->alloc_flags & BX_ALLOC_F_FALLBACK, BX_F_JSON_ONLY);
	bx_out_list_begin(out, "stripes");
	for (uint32_t s = 0; s < c->num_stripes; s++) {
		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_u64(out, "devid", c->stripes[s].devid, 0);
		bx_out_u64(out, "physical", c->stripes[s].physical, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	bx_out_obj_end(out);
}

static const char *const chunk_kinds[3] = { "system", "metadata", "data" };

static void print_device(struct bx_out *out, const struct bx_mkfs_result *res,
			 const struct bx_mkfs_dev_result *d)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(out, "devid", d->devid, 0);
	bx_out_size(out, "size", d->size, 0, 0);
	bx_out_str(out, "device=path", d->path, 0);
	bx_out_hint(out, "allocation_hint", d->hint, 0);
	bx_out_uuid(out, "uuid", d->uuid, BX_F_JSON_ONLY);
	bx_out_u64(out, "allocated", d->bytes_used, BX_F_JSON_ONLY);
	/* Which chunks it got: one line per device extent. */
	bx_out_list_begin(out, "chunks");
	for (int c = 0; c < 3; c++) {
		const struct bx_mkfs_chunk *chunk = res->chunks[c];

		for (uint32_t s = 0; s < chunk->num_stripes; s++) {
			if (chunk->stripes[s].devid != d->devid)
				continue;
			bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
			bx_out_str(out, "chunk", chunk_kinds[c], 0);
			bx_out_str(out, "profile", bx_profile_name(chunk->type), 0);
			bx_out_u64(out, "physical", chunk->stripes[s].physical, 0);
			bx_out_size(out, "length", chunk->stripe_size, 0, 0);
			bx_out_u64(out, "logical", chunk->logical, BX_F_JSON_ONLY);
			bx_out_obj_end(out);
		}
	}
	bx_out_list_end(out);
	bx_out_obj_end(out);
}

static void print_result(struct bx_out *out, const struct bx_mkfs_result *res)
{
	char features[256];

	bx_mkfs_feature_names(res->features, features, sizeof(features));
	bx_out_obj_begin(out, "filesystem", BX_OBJ_LINES, NULL);
	bx_out_str(out, "label", *res->label ? res->label : NULL, 0);
	bx_out_uuid(out, "fsid=uuid", res->fsid, 0);
	bx_out_u64(out, "nodesize=node_size", res->nodesize, 0);
	bx_out_u64(out, "sectorsize=sector_size", res->sectorsize, 0);
	bx_out_size(out, "total_bytes=filesystem_size", res->total_bytes, 0, 0);
	bx_out_str(out, "checksum", btrfsx_csum_name(res->csum_type), 0);
	bx_out_str(out, "features", features, BX_F_TEXT_ONLY);
	bx_out_list_begin(out, "features");
	for (char *name = strtok(features, ","); name; name = strtok(NULL, ","))
		bx_out_str(out, NULL, name, BX_F_JSON_ONLY);
	bx_out_list_end(out);
	bx_out_u64(out, "num_devices=number_of_devices", res->nr_devs, 0);
	bx_out_u64(out, "generation", res->generation, BX_F_JSON_ONLY);
	bx_out_u64(out, "bytes_used", res->bytes_used, BX_F_JSON_ONLY);
	bx_out_uuid(out, "chunk_tree_uuid", res->chunk_tree_uuid, BX_F_JSON_ONLY);
	bx_out_obj_end(out);

	bx_out_textf(out, "Block groups:");
	bx_out_list_begin(out, "block_groups");
	for (int c = 0; c < 3; c++)
		print_chunk(out, res->chunks[c], chunk_kinds[c]);
	bx_out_list_end(out);

	bx_out_textf(out, "Devices:");
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < res->nr_devs; i++)
		print_device(out, res, &res->devs[i]);
	bx_out_list_end(out);

	bx_out_list_begin(out, "trees");
	for (size_t i = 0; i < res->nr_trees; i++) {
		const struct bx_mkfs_tree *t = &res->trees[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_str(out, "name", bx_tree_name(t->objectid), 0);
		bx_out_s64(out, "objectid", (int64_t)t->objectid, 0);
		bx_out_u64(out, "bytenr", t->bytenr, 0);
		bx_out_u64(out, "level", (uint64_t)t->level, 0);
		bx_out_u64(out, "blocks", t->nr_blocks, 0);
		bx_out_u64(out, "items", t->nr_items, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

int cmd_mkfs(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "csum", required_argument, NULL, 'c' },
		{ "checksum", required_argument, NULL, 'c' },
		{ "nodesize", required_argument, NULL, 'n' },
		{ "sectorsize", required_argument, NULL, 's' },
		{ "byte-count", required_argument, NULL, 'b' },
		{ "features", required_argument, NULL, 'O' },
		{ "runtime-features", required_argument, NULL, 'R' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_mkfs_options opts = {
		.metadata_profile_default = true,
		.csum_type = BTRFS_CSUM_TYPE_CRC32,
		.features = BX_MKFS_F_DEFAULT,
		.writes = ctx->writes,
	};
	struct bx_mkfs_device *devs = NULL;
	struct bx_mkfs_result *res = NULL;
	uint8_t fsid[BTRFS_FSID_SIZE];
	uint32_t features_asked = 0;
	bool quiet = false;
	uint64_t size;
	int opt, ret = 0, nargs;

	while ((opt = bx_getopt(ctx, argc, argv, "d:m:L:U:n:s:b:O:R:fqh", longopts)) != -1) {
		switch (opt) {
		case 'd':
			ret = bx_profile_parse(optarg, &opts.data_profile);
			break;
		case 'm':
			ret = bx_profile_parse(optarg, &opts.metadata_profile);
			opts.metadata_profile_default = false;
			break;
		case 'L':
			opts.label = optarg;
			break;
		case 'U':
			if (uuid_parse(optarg, fsid))
				ret = bx_error(-EINVAL, "invalid UUID '%s'", optarg);
			opts.fsid = fsid;
			break;
		case 'c':
			ret = parse_csum(optarg, &opts.csum_type);
			break;
		case 'n':
			ret = parse_size_opt("node size", optarg, 65536, &size);
			opts.nodesize = (uint32_t)size;
			break;
		case 's':
			ret = parse_size_opt("sector size", optarg, 65536, &size);
			opts.sectorsize = (uint32_t)size;
			break;
		case 'b':
			ret = parse_size_opt("byte count", optarg, UINT64_MAX, &opts.byte_count);
			break;
		case 'O':
		case 'R':
			ret = bx_mkfs_parse_features(optarg, &opts.features, &features_asked);
			break;
		case 'f':
			opts.force = true;
			ctx->force = true;
			break;
		case 'q':
			quiet = true;
			break;
		default:
			return bx_opt_result(opt);
		}
		if (ret)
			return bx_bad_value(ret);
	}
	ret = bx_mkfs_check_sizes(opts.sectorsize, opts.nodesize);
	if (!ret)
		ret = bx_mkfs_settle_features(&opts.features, features_asked);
	if (ret)
		return bx_bad_value(ret);
	nargs = argc - optind;
	if (nargs < 1)
		return bx_usage_error("no device given");
	devs = calloc((size_t)nargs, sizeof(*devs));
	if (!devs)
		return bx_error(-ENOMEM, "out of memory");
	for (int i = 0; i < nargs && !ret; i++)
		ret = bx_bad_value(parse_device(argv[optind + i], &devs[i]));
	if (!ret) {
		opts.devs = devs;
		opts.nr_devs = (size_t)nargs;
		bx_mkfs_default_profiles(&opts);
		/* Checkable without a device: a usage error (btrfsx(8)). */
		ret = bx_bad_value(bx_mkfs_check_profiles(&opts));
	}
	if (!ret)
		ret = bx_mkfs(&opts, &res);
	if (!ret && (!quiet || bx_out_format(ctx->out) == BX_FORMAT_JSON))
		print_result(ctx->out, res);
	bx_mkfs_result_free(res);
	free(devs);
	return ret;
}
