/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx filesystem usage: btrfs-progs' overall figures, the preference
 * breakdown per hint class, and the allocator model's free space. The
 * numbers come from fsops/usage.c; this file only reads options and prints.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmds/commands.h"
#include "cmds/filesystem-usage.h"
#include "cmds/kernel-option.h"
#include "cmds/reclaim-print.h"
#include "cmds/usage-tables.h"
#include "common/error.h"
#include "common/units.h"
#include "fsops/snapshot-read.h"
#include "fsops/usage.h"
#include "model/allocator.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "disk/volumes.h"

const char *const bx_filesystem_usage_usage[] = {
	"btrfsx filesystem usage [-T] [--strict] [--kernel <version>] [<units>] <path>...",
	"Show space usage, the allocation hint breakdown and model-based free space.",
	"",
	"<path> is a mount point (read through the kernel's ioctls; needs root),",
	"or member devices / image files of an unmounted filesystem (other",
	"members are found by fsid). A device of a mounted filesystem is read",
	"through its mount point.",
	"",
	"The Overall section is btrfs-progs' 'filesystem usage' computed the same",
	"way, its Free (estimated) included (unallocated space by the data ratio).",
	"Free (model) below it is the allocator model run forward until ENOSPC on",
	"each device's real free space, hints honoured (JSON: free_estimated);",
	"Free (strict) the same with every preference strict; Metadata room what",
	"metadata can still allocate, alone and after a data fill. When the",
	"kernel's block group reclaim is on (mounted; sysfs allocation/*/",
	"bg_reclaim_threshold, dynamic_reclaim, periodic_reclaim), its rule, the",
	"block groups below its threshold and what relocating them does to the",
	"figures, which leave it out.",
	"",
	"-T              a per-device table with the allocation hint",
	"--strict        model every preference as strict (metadata_preferred as",
	"                metadata_only, data_preferred as data_only)",
	BX_KERNEL_HELP,
	BX_UNITS_HELP_SHORT,
	NULL
};

/* "key=label": a JSON key and, in text, a btrfs-progs style label. */
static const char *keyed(const char *key, const char *label)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s=%s", key, label);
	return buf;
}

static void size_field(struct bx_out *out, const char *key, const char *label, uint64_t bytes,
		       unsigned int units)
{
	bx_out_size(out, keyed(key, label), bytes, units, 0);
}

/* A size with a second one in parentheses on the text line, e.g. "(min: ...)". */
static void size_pair(struct bx_out *out, const char *key, const char *label, uint64_t bytes,
		      const char *key2, const char *label2, uint64_t bytes2, unsigned int units)
{
	char a[48], b[48], text[128];

	bx_pretty_size(bytes, units, a, sizeof(a));
	bx_pretty_size(bytes2, units, b, sizeof(b));
	snprintf(text, sizeof(text), "%-14s (%s %s)", a, label2, b);
	bx_out_size(out, key, bytes, units, BX_F_JSON_ONLY);
	bx_out_size(out, key2, bytes2, units, BX_F_JSON_ONLY);
	bx_out_str(out, label, text, BX_F_TEXT_ONLY);
}

static void print_overall(struct bx_out *out, const struct bx_snapshot *in,
			  const struct bx_usage_report *rep, unsigned int units)
{
	const struct bx_usage_overall *ov = &rep->overall;
	char text[48];

	bx_out_obj_begin(out, "overall", BX_OBJ_LINES, "Overall:");
	size_field(out, "device_size", "    Device size:", ov->device_size, units);
	size_field(out, "device_allocated", "    Device allocated:", ov->device_allocated, units);
	if (ov->device_unallocated < 0) {
		bx_pretty_size((uint64_t)-ov->device_unallocated, units, text + 1, sizeof(text) - 1);
		text[0] = '-';
		bx_out_s64(out, "device_unallocated", ov->device_unallocated, BX_F_JSON_ONLY);
		bx_out_str(out, "    Device unallocated:", text, BX_F_TEXT_ONLY);
	} else {
		size_field(out, "device_unallocated", "    Device unallocated:",
			   (uint64_t)ov->device_unallocated, units);
	}
	size_field(out, "device_missing", "    Device missing:", ov->device_missing, units);
	size_field(out, "device_slack", "    Device slack:", ov->device_slack, units);
	size_field(out, "used", "    Used:", ov->used, units);
	/* btrfs-progs' ratio shortcut: distinct keys from the model's free_estimated. */
	size_pair(out, "free_estimated_by_ratio", "    Free (estimated):", ov->free_estimated,
		  "free_estimated_by_ratio_min", "min:", ov->free_min, units);
	if (in->have_statfs) {
		size_field(out, "free_statfs", "    Free (statfs, df):", in->statfs_free, units);
	} else {
		bx_out_str(out, "free_statfs", NULL, BX_F_JSON_ONLY);
		bx_out_str(out, "    Free (statfs, df):", "- (not mounted)", BX_F_TEXT_ONLY);
	}
	bx_out_double(out, "data_ratio=    Data ratio:", ov->data_ratio, 2, 0);
	bx_out_double(out, "metadata_ratio=    Metadata ratio:", ov->metadata_ratio, 2, 0);
	if (in->have_global_reserve) {
		size_pair(out, "global_reserve", "    Global reserve:", in->global_reserve,
			  "global_reserve_used", "used:", in->global_reserve_used, units);
	} else {
		bx_out_str(out, "global_reserve", NULL, BX_F_JSON_ONLY);
		bx_out_str(out, "global_reserve_used", NULL, BX_F_JSON_ONLY);
		bx_out_str(out, "    Global reserve:", "- (not mounted)", BX_F_TEXT_ONLY);
	}
	if (ov->multiple_profiles[0])
		snprintf(text, sizeof(text), "yes (%s)", ov->multiple_profiles);
	else
		snprintf(text, sizeof(text), "no");
	bx_out_bool(out, "multiple_profiles", ov->multiple_profiles[0] != '\0', BX_F_JSON_ONLY);
	bx_out_str(out, "    Multiple profiles:", text, BX_F_TEXT_ONLY);
	bx_out_obj_end(out);
}

/* The chunk types, one line each; -T shows them as the table's columns instead. */
static void print_spaces(struct bx_out *out, const struct bx_snapshot *in, unsigned int units,
			 bool table)
{
	if (!table)
		bx_out_textf(out, "%s", "");
	bx_out_list_begin(out, "spaces");
	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *s = &in->spaces[i];
		char profile[16], size[48], used[48], line[192];

		if (s->flags & BX_SPACE_INFO_GLOBAL_RSV)
			continue;
		bx_usage_profile_label(s->flags, profile, sizeof(profile));
		bx_pretty_size(s->total_bytes, units, size, sizeof(size));
		bx_pretty_size(s->used_bytes, units, used, sizeof(used));
		snprintf(line, sizeof(line), "%s,%s: Size:%s, Used:%s (%.2f%%)",
			 bx_usage_type_name(s->flags, true), profile, size, used,
			 100.0 * (double)s->used_bytes / ((double)s->total_bytes + 1));
		bx_out_obj_begin(out, NULL, table ? BX_OBJ_JSON_ONLY : BX_OBJ_INLINE, NULL);
		bx_out_str(out, "type", bx_usage_type_name(s->flags, false), BX_F_JSON_ONLY);
		bx_out_str(out, "profile", bx_usage_profile_key(s->flags), BX_F_JSON_ONLY);
		bx_out_size(out, "size", s->total_bytes, units, BX_F_JSON_ONLY);
		bx_out_size(out, "used", s->used_bytes, units, BX_F_JSON_ONLY);
		bx_out_textf(out, "%s", line);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

static int print_classes(struct bx_out *out, const struct bx_usage_report *rep,
			 unsigned int units)
{
	bx_out_textf(out, "%s", "");
	/* Device unallocated above counts that MiB, as btrfs-progs does. */
	bx_out_textf(out, "Allocation hint classes (device bytes; Unallocated: above each device's "
		     "first MiB, which is never allocated):");
	bx_usage_classes_json(out, rep);
	return bx_usage_print_class_table(out, rep, units);
}

/* Text-only label inside the model section; the JSON key at the top level. */
static void model_size(struct bx_out *out, const char *label, uint64_t bytes, unsigned int units)
{
	bx_out_size(out, label, bytes, units, BX_F_TEXT_ONLY);
}

static void print_model(struct bx_out *out, const struct bx_snapshot *in,
			const struct bx_usage_report *rep, unsigned int units)
{
	const char *balance = bx_snap_balance_name(in->balance);
	char heading[256], profile[16], meta_profile[16], during[64] = "", kernel[64] = "";

	bx_usage_profile_label(rep->data_type, profile, sizeof(profile));
	bx_usage_profile_label(rep->metadata_type, meta_profile, sizeof(meta_profile));
	if (rep->warnings & BX_USAGE_W_BALANCE_TARGET)
		snprintf(during, sizeof(during), " while the %s balance converts", balance);
	/* Unmounted, the hints are modelled as a kernel that honours them would: is this one? */
	if (!in->mounted && in->kernel_hints >= 0)
		snprintf(kernel, sizeof(kernel), ", which the running kernel %s",
			 in->kernel_hints ? "does too" : "does not");
	snprintf(heading, sizeof(heading), "Allocator model (new data %s, metadata %s%s; hints %s%s):",
		 profile, meta_profile, during,
		 !rep->hints_honoured ? "ignored" :
		 (rep->model_flags & BX_ALLOC_STRICT) ? "strict" : "honoured", kernel);
	bx_out_textf(out, "%s", "");
	bx_out_obj_begin(out, "model", BX_OBJ_LINES, heading);
	bx_out_bool(out, "hints_honoured", rep->hints_honoured, BX_F_JSON_ONLY);
	bx_out_str(out, "balance", balance, BX_F_JSON_ONLY);
	if (in->kernel_hints < 0)
		bx_out_str(out, "kernel_honours_hints", NULL, BX_F_JSON_ONLY);
	else
		bx_out_bool(out, "kernel_honours_hints", in->kernel_hints, BX_F_JSON_ONLY);
	bx_out_bool(out, "strict", (rep->model_flags & BX_ALLOC_STRICT) != 0, BX_F_JSON_ONLY);
	bx_out_str(out, "data_profile", bx_usage_profile_key(rep->data_type), BX_F_JSON_ONLY);
	bx_out_str(out, "metadata_profile", bx_usage_profile_key(rep->metadata_type),
		   BX_F_JSON_ONLY);
	bx_out_size(out, "data_free_in_chunks", rep->data_free_in_chunks, units, BX_F_JSON_ONLY);
	bx_out_size(out, "data_new_chunks", rep->data_new_chunks, units, BX_F_JSON_ONLY);
	bx_out_size(out, "metadata_free_in_chunks", rep->metadata_free_in_chunks, units,
		    BX_F_JSON_ONLY);
	bx_out_size(out, "metadata_needed", rep->metadata_needed, units, BX_F_JSON_ONLY);
	/* Not "Free (estimated)": that is btrfs-progs' figure in the Overall section. */
	model_size(out, "    Free (model):", rep->free_estimated, units);
	model_size(out, "    Free (strict):", rep->free_strict, units);
	if (rep->have_statfs)
		model_size(out, "    Free (statfs, df):", rep->free_statfs, units);
	else
		bx_out_str(out, "    Free (statfs, df):", "- (not mounted)", BX_F_TEXT_ONLY);
	model_size(out, "    Metadata room:", rep->metadata_room, units);
	model_size(out, "    Metadata after data:", rep->metadata_room_after_data, units);
	bx_out_obj_end(out);
	bx_out_kernel(out, &in->kernel);

	/* The model's figures scripts read most live at the top level of the JSON object. */
	bx_out_size(out, "free_estimated", rep->free_estimated, units, BX_F_JSON_ONLY);
	bx_out_size(out, "free_strict", rep->free_strict, units, BX_F_JSON_ONLY);
	if (rep->have_statfs)
		bx_out_size(out, "free_statfs", rep->free_statfs, units, BX_F_JSON_ONLY);
	else
		bx_out_str(out, "free_statfs", NULL, BX_F_JSON_ONLY);
	bx_out_size(out, "metadata_room", rep->metadata_room, units, BX_F_JSON_ONLY);
	bx_out_size(out, "metadata_room_after_data", rep->metadata_room_after_data, units,
		    BX_F_JSON_ONLY);
}

/* The devices: JSON always; in text the -T table, after the Overall section. */
static int print_devices(struct bx_out *out, const struct bx_usage_report *rep,
			 unsigned int units, bool table)
{
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < rep->nr_dev_rows; i++)
		bx_usage_device_json(out, rep, &rep->dev_rows[i], units);
	bx_out_list_end(out);
	if (!table)
		return 0;
	bx_out_textf(out, "%s", "");
	return bx_usage_print_device_table(out, rep, units, 0);
}

static int filesystem_usage_print(struct bx_out *out, const struct bx_snapshot *in,
			       const struct bx_usage_report *rep, unsigned int units, bool table)
{
	int ret;

	bx_out_uuid(out, "fsid", in->fsid, BX_F_JSON_ONLY);
	bx_out_bool(out, "mounted", in->mounted, BX_F_JSON_ONLY);
	bx_out_str(out, "mountpoint", in->mounted ? in->path : NULL, BX_F_JSON_ONLY);
	print_overall(out, in, rep, units);
	ret = print_devices(out, rep, units, table);
	print_spaces(out, in, units, table);
	if (!ret)
		ret = print_classes(out, rep, units);
	print_model(out, in, rep, units);
	bx_reclaim_print(out, in, in, "Kernel reclaim (not in the figures above):", units);
	return ret;
}

int bx_cmd_filesystem_usage(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_STRICT = 256 };
	static const struct option longopts[] = {
		BX_UNITS_LONGOPTS,
		{ "strict", no_argument, NULL, OPT_STRICT },
		BX_KERNEL_LONGOPT,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_usage_report rep;
	struct bx_snapshot in;
	struct bx_kernel kernel;
	const char *kernel_version = ctx->kernel;
	unsigned int units = 0, flags = 0;
	bool table = false;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, BX_UNITS_SHORTOPTS "T", longopts)) != -1) {
		if (opt == 'T')
			table = true;
		else if (opt == OPT_STRICT)
			flags |= BX_USAGE_STRICT;
		else if (opt == BX_OPT_KERNEL)
			kernel_version = optarg;
		else if (!bx_units_option(opt, &units))
			return bx_opt_result(opt);
	}
	if (bx_check_argc(argc - optind, 1, -1))
		return BX_EXIT_USAGE;
	ret = bx_kernel_arg(ctx, kernel_version, &kernel);
	if (ret)
		return ret;
	ret = bx_snapshot_read_usage(argv + optind, argc - optind, ctx->sysfs_root, &in);
	if (ret)
		return ret;
	bx_kernel_use(&kernel, &in);
	ret = bx_usage_compute(&in, flags, &rep);
	if (ret) {
		bx_snapshot_release(&in);
		return ret;
	}
	ret = filesystem_usage_print(ctx->out, &in, &rep, units, table);
	bx_usage_report_release(&rep);
	bx_snapshot_release(&in);
	return ret;
}
