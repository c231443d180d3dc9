/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx property: get, set and list properties of filesystems and devices. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds/commands.h"
#include "cmds/property.h"
#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "disk/volumes.h"

/* Add a property here: name, objects, description, get, set. */
static const struct bx_property properties[] = {
	{ "read_policy", BX_PROP_FILESYSTEM,
	  "read policy of RAID1/RAID1C3/RAID1C4/RAID10 reads (pid, round-robin[:<size>], devid[:<devid>])",
	  bx_read_policy_prop_get, bx_read_policy_prop_set },
	{ "allocation_hint", BX_PROP_DEVICE,
	  "which chunks the allocator puts on the device (data_preferred, metadata_preferred, "
	  "metadata_only, data_only, none)",
	  bx_alloc_hint_prop_get, bx_alloc_hint_prop_set, bx_alloc_hint_prop_details },
	{ NULL },
};

static const char *object_type_name(unsigned int type)
{
	return type == BX_PROP_DEVICE ? "device" : "filesystem";
}

static int parse_type(const char *arg, unsigned int *type)
{
	size_t len = strlen(arg);

	if (len && !strncmp(arg, "filesystem", len))
		*type = BX_PROP_FILESYSTEM;
	else if (len && !strncmp(arg, "device", len))
		*type = BX_PROP_DEVICE;
	else
		return bx_usage_error("unknown object type '%s' (filesystem or device)", arg);
	return 0;
}

/* The object's type: forced, else a directory is a filesystem, a block device or file a device. */
static int object_type(const char *object, unsigned int forced, unsigned int *type)
{
	struct stat st;

	if (forced) {
		*type = forced;
		return 0;
	}
	if (stat(object, &st) < 0)
		return bx_error(-errno, "%s: %m", object);
	if (S_ISDIR(st.st_mode))
		*type = BX_PROP_FILESYSTEM;
	else if (S_ISBLK(st.st_mode) || S_ISREG(st.st_mode))
		*type = BX_PROP_DEVICE;
	else
		return bx_error(-EINVAL, "%s: not a mount point, block device or image file", object);
	return 0;
}

/* That @object is a btrfs object of @type: a member device or image file, or a path on a mount. */
static int check_object(const char *object, unsigned int type)
{
	struct bx_mounted_fs mfs;
	struct bx_fs *fs;
	int ret;

	if (type == BX_PROP_FILESYSTEM) {
		ret = bx_mounted_open(object, &mfs);
		if (!ret)
			bx_mounted_close(&mfs);
		return ret;
	}
	ret = bx_fs_open(&fs, (char *const *)&object, 1, BX_OPEN_SB_ONLY | BX_OPEN_NO_SCAN);
	if (!ret)
		bx_fs_close(fs);
	return ret;
}

static const struct bx_property *find_property(const char *name, const char *object,
					       unsigned int type, int *ret)
{
	for (const struct bx_property *p = properties; p->name; p++) {
		if (strcmp(p->name, name))
			continue;
		if (!(p->objects & type)) {
			*ret = bx_bad_value(bx_error(-EINVAL, "%s: property '%s' does not apply "
						     "to a %s object", object, name,
						     object_type_name(type)));
			return NULL;
		}
		return p;
	}
	*ret = bx_bad_value(bx_error(-EINVAL, "unknown property '%s' (try 'btrfsx property list "
					 "%s')", name, object));
	return NULL;
}

/* Options shared by get/set/list: -t <type>; leaves optind at the object. */
static int parse_options(struct bx_ctx *ctx, int argc, char **argv, unsigned int *forced)
{
	static const struct option longopts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "t:fh", longopts)) != -1) {
		if (opt == 'f') {
			ctx->force = true;
		} else if (opt == 't') {
			if (*forced)
				return bx_usage_error("the object type is fixed here");
			ret = parse_type(optarg, forced);
			if (ret)
				return ret;
		} else {
			return bx_opt_result(opt);
		}
	}
	return 0;
}

static void print_value(struct bx_out *out, const char *name, const char *value)
{
	bx_out_str(out, name, value, BX_F_JSON_ONLY);
	bx_out_textf(out, "%s=%s", name, value);
}

/*
 * The options, then @min to @max arguments starting with the object, whose
 * type is found. On success optind points at the object.
 */
static int parse_object(struct bx_ctx *ctx, int argc, char **argv, unsigned int *objects,
			int min, int max, unsigned int *type)
{
	int ret = parse_options(ctx, argc, argv, objects);

	if (!ret)
		ret = bx_check_argc(argc - optind, min, max);
	if (!ret)
		ret = object_type(argv[optind], *objects, type);
	return ret;
}

int bx_property_get(struct bx_ctx *ctx, int argc, char **argv, unsigned int objects)
{
	unsigned int type;
	const char *object;
	char value[256];
	int ret;

	ret = parse_object(ctx, argc, argv, &objects, 1, 2, &type);
	if (ret)
		return ret;
	object = argv[optind];
	if (argc - optind == 2) {
		const struct bx_property *p = find_property(argv[optind + 1], object, type, &ret);

		if (!p)
			return ret;
		ret = p->get(ctx, object, value, sizeof(value));
		if (ret)
			return ret;
		print_value(ctx->out, p->name, value);
		return p->details ? p->details(ctx, object) : 0;
	}
	for (const struct bx_property *p = properties; p->name; p++) {
		if (!(p->objects & type))
			continue;
		ret = p->get(ctx, object, value, sizeof(value));
		if (!ret) {
			print_value(ctx->out, p->name, value);
			ret = p->details ? p->details(ctx, object) : 0;
		}
		if (ret)
			return bx_error_wrap(ret, "%s", p->name);
	}
	return 0;
}

int bx_property_set(struct bx_ctx *ctx, int argc, char **argv, unsigned int objects)
{
	const struct bx_property *p;
	unsigned int type;
	const char *object;
	char now[256];
	int ret;

	ret = parse_object(ctx, argc, argv, &objects, 3, 3, &type);
	if (ret)
		return ret;
	object = argv[optind];
	p = find_property(argv[optind + 1], object, type, &ret);
	if (!p)
		return ret;
	if (!p->set)
		return bx_error(-EINVAL, "property '%s' is read-only", p->name);
	ret = p->set(ctx, object, argv[optind + 2], now, sizeof(now));
	if (ret)
		return ret;
	bx_out_str(ctx->out, p->name, now, BX_F_JSON_ONLY);
	return p->details ? p->details(ctx, object) : 0;
}

int bx_property_list(struct bx_ctx *ctx, int argc, char **argv, unsigned int objects)
{
	unsigned int type = objects;
	int ret;

	ret = parse_options(ctx, argc, argv, &objects);
	if (ret)
		return ret;
	ret = bx_check_argc(argc - optind, 0, 1);
	if (ret)
		return ret;
	if (argc - optind == 1) {
		ret = object_type(argv[optind], objects, &type);
		if (!ret)
			ret = check_object(argv[optind], type);
		if (ret)
			return ret;
	} else {
		type = objects;
	}
	bx_out_list_begin(ctx->out, "properties");
	for (const struct bx_property *p = properties; p->name; p++) {
		if (type && !(p->objects & type))
			continue;
		bx_out_obj_begin(ctx->out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_str(ctx->out, "name", p->name, BX_F_NO_NAME);
		bx_out_str(ctx->out, "object",
			   p->objects == (BX_PROP_FILESYSTEM | BX_PROP_DEVICE) ? "any" :
			   object_type_name(p->objects), BX_F_JSON_ONLY);
		bx_out_str(ctx->out, "description", p->description, BX_F_NO_NAME);
		bx_out_obj_end(ctx->out);
	}
	bx_out_list_end(ctx->out);
	return 0;
}

static const char *const get_usage[] = {
	"btrfsx property get [-t <type>] <object> [<name>]",
	"Show a property of a filesystem or device, or all of them.",
	"",
	"<object> is a mount point (type filesystem) or a block device or image",
	"file (type device); the type is guessed from the object unless given.",
	"Text prints name=value lines; JSON an object keyed by property name.",
	"",
	"-t|--type <type>   filesystem or device",
	NULL
};

static const char *const set_usage[] = {
	"btrfsx property set [-t <type>] [-f] <object> <name> <value>",
	"Set a property of a filesystem or device.",
	"",
	"allocation_hint on an unmounted filesystem rewrites the device items",
	"(chunk tree and superblock copies) in a crash-safe order; mounted, it",
	"goes through the kernel's sysfs file and is read back.",
	"",
	"-t|--type <type>   filesystem or device",
	"-f|--force         allocation_hint: accept numeric values and skip the",
	"                   check that every profile can still allocate",
	NULL
};

static const char *const list_usage[] = {
	"btrfsx property list [-t <type>] [<object>]",
	"List the properties that apply to an object (or to a type).",
	"",
	"-t|--type <type>   filesystem or device",
	NULL
};

static int cmd_property_get(struct bx_ctx *ctx, int argc, char **argv)
{
	return bx_property_get(ctx, argc, argv, 0);
}

static int cmd_property_set(struct bx_ctx *ctx, int argc, char **argv)
{
	return bx_property_set(ctx, argc, argv, 0);
}

static int cmd_property_list(struct bx_ctx *ctx, int argc, char **argv)
{
	return bx_property_list(ctx, argc, argv, 0);
}

static const char *const property_usage[] = {
	"btrfsx property <command> [<args>]",
	"Get and set properties of filesystems and devices.",
	NULL
};

static const struct bx_cmd property_cmds[] = {
	{ "get", cmd_property_get, get_usage, NULL, BX_CMD_JSON },
	{ "set", cmd_property_set, set_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "list", cmd_property_list, list_usage, NULL, BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_property_group = { property_usage, property_cmds };

/* btrfsx device property: the same commands with the object type fixed to device. */

static const char *const dev_get_usage[] = {
	"btrfsx device property get <device> [<name>]",
	"Get a property of a device (block device or image file).",
	NULL
};

static const char *const dev_set_usage[] = {
	"btrfsx device property set [-f] <device> <name> <value>",
	"Set a property of a device, e.g. allocation_hint metadata_only.",
	"",
	"-f|--force         allocation_hint: accept numeric values and skip the",
	"                   check that every profile can still allocate",
	NULL
};

static const char *const dev_list_usage[] = {
	"btrfsx device property list [<device>]",
	"List the properties of devices.",
	NULL
};

static int cmd_dev_get(struct bx_ctx *ctx, int argc, char **argv)
{
	return bx_property_get(ctx, argc, argv, BX_PROP_DEVICE);
}

static int cmd_dev_set(struct bx_ctx *ctx, int argc, char **argv)
{
	return bx_property_set(ctx, argc, argv, BX_PROP_DEVICE);
}

static int cmd_dev_list(struct bx_ctx *ctx, int argc, char **argv)
{
	return bx_property_list(ctx, argc, argv, BX_PROP_DEVICE);
}

static const char *const dev_property_usage[] = {
	"btrfsx device property <command> [<args>]",
	"Get, set and list device properties (allocation_hint).",
	NULL
};

static const struct bx_cmd dev_property_cmds[] = {
	{ "get", cmd_dev_get, dev_get_usage, NULL, BX_CMD_JSON },
	{ "set", cmd_dev_set, dev_set_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "list", cmd_dev_list, dev_list_usage, NULL, BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_device_property_group = { dev_property_usage, dev_property_cmds };
