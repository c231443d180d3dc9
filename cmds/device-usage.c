/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx device usage: btrfs-progs' per-device view (size, slack, bytes per
 * chunk type and profile, unallocated) with each device's allocation hint
 * and what of its unallocated space data and metadata can still take under
 * the hints. The figures are filesystem usage's (fsops/usage.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds/commands.h"
#include "cmds/device-usage.h"
#include "cmds/usage-tables.h"
#include "common/error.h"
#include "common/units.h"
#include "fsops/snapshot-read.h"
#include "fsops/usage.h"
#include "format/hints.h"

const char *const bx_device_usage_usage[] = {
	"btrfsx device usage [-T] [<units>] <path>...",
	"Show each device's allocations, allocation hint and allocatable space.",
	"",
	"<path> is a mount point (read through the kernel's ioctls; needs root),",
	"or member devices / image files of an unmounted filesystem (other",
	"members are found by fsid). Each mount point is a filesystem of its",
	"own; the devices and image files named are one filesystem together.",
	"",
	"Per device: its allocation hint, size and slack, the bytes of each",
	"chunk type and profile on it, what is unallocated, and how much of that",
	"a data-only fill and a metadata-only fill could allocate there under",
	"the hints (the allocator model of 'filesystem usage').",
	"",
	"-T              one table per filesystem",
	BX_UNITS_HELP_SHORT,
	NULL
};

/* A line of btrfs-progs' device usage: the label, the value right-aligned after it. */
static void text_line(struct bx_out *out, const char *label, const char *value)
{
	bx_out_textf(out, "   %-22s%10s", label, value);
}

static void text_size(struct bx_out *out, const char *label, uint64_t bytes, unsigned int units)
{
	char value[48];

	bx_pretty_size(bytes, units, value, sizeof(value));
	text_line(out, label, value);
}

static void print_device_text(struct bx_out *out, const struct bx_usage_report *rep,
			      const struct bx_usage_dev_row *r, unsigned int units)
{
	char label[64], hint[32], profile[16];

	bx_out_textf(out, "%s, ID: %llu", r->missing ? "missing" : r->path,
		     (unsigned long long)r->devid);
	/* btrfs-progs' Device size is what the device has: 0 when it is missing. */
	text_size(out, "Device size:", r->missing ? 0 : r->size + r->slack, units);
	text_size(out, "Device slack:", r->slack, units);
	bx_hint_describe(r->hint, hint, sizeof(hint));
	text_line(out, "Hint:", hint);
	for (size_t k = 0; k < rep->nr_types; k++) {
		if (!r->allocated[k])
			continue;
		bx_usage_profile_label(rep->types[k].flags, profile, sizeof(profile));
		snprintf(label, sizeof(label), "%s,%s:", bx_usage_type_name(rep->types[k].flags, true),
			 profile);
		text_size(out, label, r->allocated[k], units);
	}
	text_size(out, "Unallocated:", r->unallocated, units);
	text_size(out, "Data allocatable:", r->data_allocatable, units);
	text_size(out, "Metadata allocatable:", r->metadata_allocatable, units);
}

static int device_usage_print(struct bx_out *out, const struct bx_snapshot *in,
			  const struct bx_usage_report *rep, unsigned int units, bool table)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
	bx_out_uuid(out, "fsid", in->fsid, 0);
	bx_out_bool(out, "mounted", in->mounted, 0);
	bx_out_str(out, "mountpoint", in->mounted ? in->path : NULL, 0);
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < rep->nr_dev_rows; i++)
		bx_usage_device_json(out, rep, &rep->dev_rows[i], units);
	bx_out_list_end(out);
	bx_out_obj_end(out);
	if (table)
		return bx_usage_print_device_table(out, rep, units, BX_DEVICE_TABLE_ALLOCATABLE);
	for (size_t i = 0; i < rep->nr_dev_rows; i++) {
		if (i)
			bx_out_textf(out, "%s", "");
		print_device_text(out, rep, &rep->dev_rows[i], units);
	}
	return 0;
}

static int show_filesystem(struct bx_ctx *ctx, char **paths, int nr_paths, unsigned int units,
			   bool table, bool first)
{
	struct bx_usage_report rep;
	struct bx_snapshot in;
	int ret;

	ret = bx_snapshot_read(paths, nr_paths, ctx->sysfs_root, &in);
	if (ret)
		return ret;
	ret = bx_usage_compute(&in, 0, &rep);
	if (!ret) {
		if (!first)
			bx_out_textf(ctx->out, "%s", "");
		ret = device_usage_print(ctx->out, &in, &rep, units, table);
		bx_usage_report_release(&rep);
	}
	bx_snapshot_release(&in);
	return ret;
}

static bool is_directory(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int bx_cmd_device_usage(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		BX_UNITS_LONGOPTS,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	unsigned int units = 0;
	bool table = false, first = true;
	char **members;
	int opt, nr_members = 0, ret = 0;

	while ((opt = bx_getopt(ctx, argc, argv, BX_UNITS_SHORTOPTS "T", longopts)) != -1) {
		if (opt == 'T')
			table = true;
		else if (!bx_units_option(opt, &units))
			return bx_opt_result(opt);
	}
	if (bx_check_argc(argc - optind, 1, -1))
		return BX_EXIT_USAGE;
	members = calloc((size_t)(argc - optind), sizeof(*members));
	if (!members)
		return bx_error(-ENOMEM, "out of memory");
	bx_out_list_begin(ctx->out, "filesystems");
	for (int i = optind; i < argc && !ret; i++) {
		if (!is_directory(argv[i])) {
			members[nr_members++] = argv[i];
			continue;
		}
		ret = show_filesystem(ctx, &argv[i], 1, units, table, first);
		first = false;
	}
	if (!ret && nr_members)
		ret = show_filesystem(ctx, members, nr_members, units, table, first);
	bx_out_list_end(ctx->out);
	free(members);
	return ret;
}
