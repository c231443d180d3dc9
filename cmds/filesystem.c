/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx filesystem: show (devices with their allocation hints). */
#include <errno.h>
#include <linux/btrfs.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <blkid/blkid.h>
#include <uuid/uuid.h>

#include "cmds/commands.h"
#include "cmds/filesystem-plan.h"
#include "cmds/filesystem-usage.h"
#include "cmds/misplaced.h"
#include "common/array.h"
#include "fsops/alloc-hint.h"
#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/offline.h"
#include "common/units.h"
#include "disk/dev-item.h"
#include "format/hints.h"

static const char *const show_usage[] = {
	"btrfsx filesystem show [-d|-m] [<units>] [<path>...]",
	"Show filesystems with their devices' sizes, usage and allocation hints.",
	"",
	"<path> is a mount point, or member devices / image files of an",
	"unmounted filesystem (other members are found by fsid). Without a",
	"path: every btrfs filesystem on the block devices libblkid sees.",
	"",
	"-d|--all-devices   every filesystem on the block devices (the default)",
	"-m|--mounted       only mounted filesystems",
	BX_UNITS_HELP_LONG,
	NULL
};

struct show_opts {
	unsigned int units;
};

static void print_hint_fields(struct bx_out *out, const struct bx_hint_state *st, bool known)
{
	/* A mounted member the kernel names by a path btrfsx cannot read: hint unknown. */
	if (!known) {
		bx_out_str(out, "hint=allocation_hint", NULL, 0);
		bx_out_str(out, "hint_value", NULL, BX_F_JSON_ONLY);
	} else {
		bx_out_hint(out, "allocation_hint", st->hint, 0);
	}
	bx_out_bool(out, "effective", known && st->effective, BX_F_JSON_ONLY);
}

static void print_device(struct bx_out *out, uint64_t devid, uint64_t size, uint64_t used,
			 const char *path, const struct bx_hint_state *st, bool hint_known,
			 unsigned int units)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_u64(out, "devid", devid, 0);
	bx_out_size(out, "size", size, units, 0);
	bx_out_size(out, "allocated=used", used, units, 0);
	bx_out_str(out, "device=path", path, 0);
	bx_out_bool(out, "missing", !path, BX_F_JSON_ONLY);
	print_hint_fields(out, st, hint_known);
	bx_out_obj_end(out);
}

static void print_fs_header(struct bx_out *out, const char *label, const uint8_t fsid[16],
			    uint64_t nr_devices, uint64_t bytes_used, const char *mountpoint,
			    unsigned int units)
{
	char fsid_str[37], heading[512], used[48];

	uuid_unparse(fsid, fsid_str);
	bx_pretty_size(bytes_used, units, used, sizeof(used));
	/* The first two lines are btrfs-progs': 'label' quoted, none without quotes. */
	snprintf(heading, sizeof(heading), "Label: %s%s%s  uuid: %s\n\tTotal devices %llu FS bytes "
		 "used %s%s%s", *label ? "'" : "", *label ? label : "none", *label ? "'" : "",
		 fsid_str, (unsigned long long)nr_devices,
		 used, mountpoint ? "  mounted at " : "", mountpoint ? mountpoint : "");
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, heading);
	bx_out_str(out, "label", *label ? label : NULL, BX_F_JSON_ONLY);
	bx_out_uuid(out, "fsid", fsid, BX_F_JSON_ONLY);
	bx_out_u64(out, "num_devices", nr_devices, BX_F_JSON_ONLY);
	bx_out_u64(out, "bytes_used", bytes_used, BX_F_JSON_ONLY);
	bx_out_bool(out, "mounted", mountpoint != NULL, BX_F_JSON_ONLY);
	bx_out_str(out, "mountpoint", mountpoint, BX_F_JSON_ONLY);
	bx_out_list_begin(out, "devices");
}

struct offline_show {
	struct bx_ctx *ctx;
	struct bx_fs *fs;
	unsigned int units;
};

static int show_dev_item(void *arg, const struct btrfs_dev_item *item)
{
	struct offline_show *os = arg;
	uint64_t devid = le64toh(item->devid);
	struct bx_device *dev = bx_fs_device(os->fs, devid);
	struct bx_hint_state st = { .devid = devid, .type = le64toh(item->type) };
	char shorter[PATH_MAX + 128];

	/* Unmounted: the stored value is the hint, and no kernel applies it now. */
	st.hint = bx_hint_of_type(st.type);
	bx_hint_warn_unusual(&st);
	/* The readers and writers refuse such a filesystem; show says why in a warning. */
	if (dev && bx_device_short(dev, le64toh(item->total_bytes), shorter, sizeof(shorter)))
		bx_warn("%s; the kernel does not mount the filesystem so", shorter);
	print_device(os->ctx->out, devid, le64toh(item->total_bytes), le64toh(item->bytes_used),
		     dev ? dev->path : NULL, &st, true, os->units);
	return 0;
}

static int show_mounted(struct bx_ctx *ctx, const char *path, unsigned int units);

/* A filesystem named by members; one that is mounted is shown through its mount point. */
static int show_offline(struct bx_ctx *ctx, char *const *paths, int nr_paths, unsigned int units,
			bool mounted_only)
{
	struct offline_show os = { ctx, NULL, units };
	char mnt[4096], label[BTRFS_LABEL_SIZE + 1];
	int ret;

	ret = bx_fs_open(&os.fs, paths, nr_paths, BX_OPEN_DEGRADED);
	if (ret)
		return ret;
	if (bx_fs_is_mounted(ctx->sysfs_root, os.fs->fsid, mnt, sizeof(mnt))) {
		bx_fs_close(os.fs);
		return show_mounted(ctx, mnt, units);
	}
	if (mounted_only) {
		bx_fs_close(os.fs);
		return 0;
	}
	memcpy(label, os.fs->sb.label, BTRFS_LABEL_SIZE);
	label[BTRFS_LABEL_SIZE] = '\0';
	print_fs_header(ctx->out, label, os.fs->fsid, le64toh(os.fs->sb.num_devices),
			le64toh(os.fs->sb.bytes_used), NULL, units);
	ret = bx_for_each_dev_item(os.fs, show_dev_item, &os);
	bx_out_list_end(ctx->out);
	bx_out_obj_end(ctx->out);
	bx_fs_close(os.fs);
	return ret;
}

/* "FS bytes used" as btrfs-progs counts it on a mounted filesystem: the spaces' used bytes. */
static int mounted_bytes_used(const struct bx_mounted_fs *mfs, uint64_t *used)
{
	struct btrfs_ioctl_space_args *spaces;
	int ret = bx_mounted_space_info(mfs->fd, mfs->path, &spaces);

	*used = 0;
	if (ret)
		return ret;
	for (uint64_t i = 0; i < spaces->total_spaces; i++)
		*used += spaces->spaces[i].used_bytes;
	free(spaces);
	return 0;
}

static int show_mounted(struct bx_ctx *ctx, const char *path, unsigned int units)
{
	char label[BTRFS_LABEL_SIZE + 1];
	struct bx_mounted_fs mfs;
	uint64_t used;
	int ret = bx_mounted_open(path, &mfs);

	if (ret)
		return ret;
	ret = bx_mounted_label(&mfs, label, sizeof(label));
	if (!ret)
		ret = mounted_bytes_used(&mfs, &used);
	if (ret) {
		bx_mounted_close(&mfs);
		return ret;
	}
	print_fs_header(ctx->out, label, mfs.fsid, mfs.nr_devs, used, path, units);
	for (size_t i = 0; i < mfs.nr_devs; i++) {
		const struct bx_mounted_dev *d = &mfs.devs[i];
		struct bx_hint_state st = { .devid = d->devid };
		int got = *d->path ? bx_hint_get(ctx->sysfs_root, d->path, &st) : -ENOENT;

		/* The hint is read from the member's superblock, which only root may read. */
		if (got == -EACCES || got == -EPERM)
			bx_warn("reading the allocation hints needs root (they are read from the "
				"member devices): 'allocation_hint -' is a hint not read");
		print_device(ctx->out, d->devid, d->total_bytes, d->bytes_used,
			     *d->path ? d->path : NULL, &st, !got, units);
	}
	bx_error_clear();
	bx_out_list_end(ctx->out);
	bx_out_obj_end(ctx->out);
	bx_mounted_close(&mfs);
	return 0;
}

/*
 * Whether @ret says the device libblkid listed is gone or no longer btrfs: a
 * loop device detached, or a filesystem unmounted and its device reused,
 * between the scan and the open.
 */
static bool vanished(int ret)
{
	return ret == -ENOENT || ret == -ENXIO || ret == -ENODEV ||
	       bx_error_last_kind() == BX_ERROR_KIND_NOT_BTRFS;
}

/*
 * One filesystem of the machine that cannot be shown (gone meanwhile, or
 * unreadable: members missing, a half-written one another program is making)
 * is skipped with a warning, as btrfs-progs lists the others; the listing is
 * about every filesystem, so one is not the whole command's failure.
 */
static void skip_unshowable(const char *dev, int ret)
{
	if (vanished(ret))
		bx_warn("skipped %s, gone while listing: %s", dev, bx_error_message(ret));
	else
		bx_warn("skipped %s: %s", dev, bx_error_message(ret));
	bx_error_clear();
}

/* The fsids shown so far: a filesystem with several members is shown once. */
struct seen_fsids {
	char (*uuid)[37];
	size_t nr, cap;
};

/* Whether @uuid was shown already; else it is recorded as shown now. */
static int seen_before(struct seen_fsids *seen, const char *uuid, bool *before)
{
	int ret;

	for (size_t i = 0; i < seen->nr; i++) {
		if (!strcmp(seen->uuid[i], uuid)) {
			*before = true;
			return 0;
		}
	}
	*before = false;
	ret = bx_array_grow((void **)&seen->uuid, &seen->cap, seen->nr + 1, sizeof(*seen->uuid));
	if (!ret)
		snprintf(seen->uuid[seen->nr++], sizeof(*seen->uuid), "%s", uuid);
	return ret;
}

/* Every btrfs filesystem libblkid sees, one member named per fsid. */
static int show_all(struct bx_ctx *ctx, unsigned int units, bool mounted_only)
{
	struct seen_fsids seen = { 0 };
	blkid_dev_iterate iter;
	blkid_cache cache;
	blkid_dev bdev;
	int ret = 0;

	if (blkid_get_cache(&cache, "/dev/null") < 0)
		return bx_error(-ENOMEM, "cannot scan block devices");
	blkid_probe_all(cache);
	iter = blkid_dev_iterate_begin(cache);
	blkid_dev_set_search(iter, "TYPE", "btrfs");
	while (!ret && blkid_dev_next(iter, &bdev) == 0) {
		char *uuid = blkid_get_tag_value(cache, "UUID", blkid_dev_devname(bdev));
		char *name = (char *)blkid_dev_devname(bdev);
		bool before = true;

		ret = uuid ? seen_before(&seen, uuid, &before) : 0;
		if (!ret && !before) {
			int shown = show_offline(ctx, &name, 1, units, mounted_only);

			if (shown)
				skip_unshowable(name, shown);
		}
		free(uuid);
	}
	blkid_dev_iterate_end(iter);
	blkid_put_cache(cache);
	free(seen.uuid);
	return ret;
}

static int cmd_show(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all-devices", no_argument, NULL, 'd' },
		{ "mounted", no_argument, NULL, 'm' },
		BX_UNITS_LONGOPTS,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	unsigned int units = 0;
	bool mounted_only = false;
	struct stat st;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "dmh", longopts)) != -1) {
		if (opt == 'm')
			mounted_only = true;
		else if (opt != 'd' && !bx_units_option(opt, &units))
			return bx_opt_result(opt);
	}
	if (mounted_only && argc > optind)
		return bx_usage_error("--mounted takes no path");
	bx_out_list_begin(ctx->out, "filesystems");
	if (argc == optind)
		ret = show_all(ctx, units, mounted_only);
	else if (stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode))
		ret = bx_check_argc(argc - optind, 1, 1) ? BX_EXIT_USAGE :
		      show_mounted(ctx, argv[optind], units);
	else
		ret = show_offline(ctx, argv + optind, argc - optind, units, false);
	bx_out_list_end(ctx->out);
	return ret;
}

static const char *const filesystem_usage[] = {
	"btrfsx filesystem <command> [<args>]",
	"Filesystem-wide views: devices, hints and space usage.",
	NULL
};

static const struct bx_cmd filesystem_cmds[] = {
	{ "show", cmd_show, show_usage, NULL, BX_CMD_JSON },
	{ "usage", bx_cmd_filesystem_usage, bx_filesystem_usage_usage, NULL, BX_CMD_JSON },
	{ "misplaced", bx_cmd_filesystem_misplaced, bx_filesystem_misplaced_usage, NULL,
	  BX_CMD_JSON },
	{ "plan", bx_cmd_filesystem_plan, bx_filesystem_plan_usage, NULL, BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_filesystem_group = { filesystem_usage, filesystem_cmds };
