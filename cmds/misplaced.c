/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx filesystem misplaced: every chunk whose devices break the current
 * allocation hints (fsops/misplaced.c), with totals and a time estimate.
 * Exit 0 when none, 4 when some are found (cron-friendly), 1 on errors.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmds/kernel-option.h"
#include "cmds/misplaced.h"
#include "common/error.h"
#include "common/units.h"
#include "disk/volumes.h"
#include "fsops/snapshot-read.h"

const char *const bx_filesystem_misplaced_usage[] = {
	"btrfsx filesystem misplaced [--kernel <version>] [<units>] <path>...",
	"List the chunks whose devices break the allocation hints.",
	"",
	"<path> is a mount point (read through the kernel's ioctls; needs root),",
	"or member devices / image files of an unmounted filesystem. The hints",
	"are the stored ones, also when the running kernel ignores them.",
	"",
	"forbidden: a stripe on a device whose hint excludes the chunk's type",
	"(data on metadata_only, metadata or system on data_only).",
	"off-preference: a stripe on a worse tier while the allocator model",
	"would place a new chunk of that kind better now (none is the last tier).",
	"Each chunk shows where the model would put it now ('model').",
	"",
	"Exit status: 0 nothing misplaced, 4 misplaced chunks found, 1 error.",
	"'btrfsx balance misplaced' moves them.",
	"",
	BX_KERNEL_HELP,
	BX_UNITS_HELP_SHORT,
	NULL
};

static const char *class_name(enum bx_place_class cls)
{
	switch (cls) {
	case BX_PLACE_FORBIDDEN:
		return "forbidden";
	case BX_PLACE_OFF_PREFERENCE:
		return "off-preference";
	default:
		return "ok";
	}
}

void misplaced_print_chunk_head(struct bx_out *out, enum bx_place_class cls, uint64_t type,
				uint64_t logical, uint64_t length, uint64_t used, unsigned int units)
{
	bx_out_str(out, "class", class_name(cls), BX_F_NO_NAME);
	bx_out_str(out, "type", bx_place_type_name(type), BX_F_NO_NAME);
	bx_out_str(out, "profile", bx_profile_name(type), BX_F_NO_NAME);
	bx_out_u64(out, "flags", type, BX_F_JSON_ONLY);
	bx_out_u64(out, "logical", logical, 0);
	bx_out_size(out, "size", length, units, 0);
	bx_out_size(out, "used", used, units, 0);
}

void misplaced_devids_text(const uint64_t *devids, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? "," : "",
					 (unsigned long long)devids[i]);
}

void misplaced_devids_json(struct bx_out *out, const char *key, const uint64_t *devids, size_t n)
{
	if (bx_out_format(out) != BX_FORMAT_JSON)
		return;
	bx_out_list_begin(out, key);
	for (size_t i = 0; i < n; i++)
		bx_out_u64(out, NULL, devids[i], 0);
	bx_out_list_end(out);
}

void misplaced_duration_text(double seconds, char *buf, size_t len)
{
	unsigned long long s = seconds > 0 ? (unsigned long long)(seconds + 0.5) : 0;

	snprintf(buf, len, "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
}

/* The stripes' devids: "1,3" into @buf, and a JSON list (in JSON only). */
static void stripes_text(const struct bx_misplaced_chunk *c, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t s = 0; s < c->num_stripes && used < len; s++)
		used += (size_t)snprintf(buf + used, len - used, "%s%llu", s ? "," : "",
					 (unsigned long long)c->stripes[s].devid);
}

static void stripes_json(struct bx_out *out, const struct bx_misplaced_chunk *c)
{
	if (bx_out_format(out) != BX_FORMAT_JSON)
		return;
	bx_out_list_begin(out, "devids");
	for (uint32_t s = 0; s < c->num_stripes; s++)
		bx_out_u64(out, NULL, c->stripes[s].devid, 0);
	bx_out_list_end(out);
}

void misplaced_print_chunk(struct bx_out *out, const struct bx_misplaced_chunk *c,
			   unsigned int units)
{
	char devs[512], offending[512], model[512];

	stripes_text(c, devs, sizeof(devs));
	misplaced_devids_text(c->offending, c->nr_offending, offending, sizeof(offending));
	if (c->have_target)
		misplaced_devids_text(c->target_devids, c->target_stripes, model, sizeof(model));
	else
		snprintf(model, sizeof(model), "none(no-room)");
	bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
	misplaced_print_chunk_head(out, c->cls, c->type, c->logical, c->length, c->used, units);
	bx_out_str(out, "devids", devs, BX_F_TEXT_ONLY);
	bx_out_str(out, "offending", offending, BX_F_TEXT_ONLY);
	bx_out_str(out, "model", model, BX_F_TEXT_ONLY);
	stripes_json(out, c);
	misplaced_devids_json(out, "offending", c->offending, c->nr_offending);
	if (c->have_target) {
		bx_out_obj_begin(out, "model", BX_OBJ_JSON_ONLY, NULL);
		bx_out_str(out, "type", bx_place_type_name(c->target_type), 0);
		bx_out_str(out, "profile", bx_profile_name(c->target_type), 0);
		bx_out_u64(out, "flags", c->target_type, 0);
		bx_out_u64(out, "length", c->target_length, 0);
		misplaced_devids_json(out, "devids", c->target_devids, c->target_stripes);
		bx_out_obj_end(out);
	} else {
		bx_out_str(out, "model", NULL, BX_F_JSON_ONLY);
	}
	bx_out_obj_end(out);
}

static void print_totals(struct bx_out *out, const char *key, const char *heading,
			 const struct bx_misplaced_totals *t, unsigned int units)
{
	char eta[32];

	bx_out_obj_begin(out, key, BX_OBJ_INLINE, heading);
	bx_out_u64(out, "chunks", t->chunks, 0);
	bx_out_size(out, "allocated", t->allocated, units, 0);
	bx_out_size(out, "used", t->used, units, 0);
	if (t->estimate_seconds >= 0) {
		misplaced_duration_text(t->estimate_seconds, eta, sizeof(eta));
		bx_out_str(out, "estimate", eta, BX_F_TEXT_ONLY);
		bx_out_double(out, "estimate_seconds", t->estimate_seconds, 1, BX_F_JSON_ONLY);
	} else {
		bx_out_str(out, "estimate", "unknown", BX_F_TEXT_ONLY);
		bx_out_str(out, "estimate_seconds", NULL, BX_F_JSON_ONLY);
	}
	bx_out_obj_end(out);
}

void misplaced_print_summary(struct bx_out *out, const struct bx_misplaced_report *rep,
			     unsigned int units)
{
	char rate[48];

	bx_out_uuid(out, "fsid", rep->fsid, 0);
	/* text names what was read; JSON the mount point (null unmounted), as usage */
	bx_out_str(out, "path", rep->path, BX_F_TEXT_ONLY);
	bx_out_str(out, "mountpoint", rep->mounted ? rep->path : NULL, BX_F_JSON_ONLY);
	bx_out_bool(out, "mounted", rep->mounted, BX_F_JSON_ONLY);
	bx_out_bool(out, "hints_effective", rep->hints_effective, 0);
	/* Unmounted, hints_effective assumes the next kernel honours them: does this one? */
	if (rep->kernel_hints < 0)
		bx_out_str(out, "kernel_honours_hints", NULL, 0);
	else
		bx_out_bool(out, "kernel_honours_hints", rep->kernel_hints, 0);
	bx_out_u64(out, "chunks_checked", rep->chunks_checked, 0);
	if (rep->have_rate) {
		bx_pretty_size((uint64_t)rep->rate, units, rate, sizeof(rate));
		strncat(rate, "/s", sizeof(rate) - strlen(rate) - 1);
		bx_out_str(out, "copy_rate", rate, BX_F_TEXT_ONLY);
		bx_out_double(out, "copy_rate", rep->rate, 0, BX_F_JSON_ONLY);
	} else {
		bx_out_str(out, "copy_rate", "unknown (no relocation measured on this filesystem "
			   "yet)", BX_F_TEXT_ONLY);
		bx_out_str(out, "copy_rate", NULL, BX_F_JSON_ONLY);
	}
	print_totals(out, "forbidden", "forbidden:", &rep->forbidden, units);
	print_totals(out, "off_preference", "off-preference:", &rep->off_preference, units);
}

int bx_cmd_filesystem_misplaced(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		BX_UNITS_LONGOPTS,
		BX_KERNEL_LONGOPT,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_misplaced_report rep;
	struct bx_snapshot in;
	struct bx_kernel kernel;
	const char *kernel_version = ctx->kernel;
	unsigned int units = 0;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, BX_UNITS_SHORTOPTS, longopts)) != -1) {
		if (opt == BX_OPT_KERNEL)
			kernel_version = optarg;
		else if (!bx_units_option(opt, &units))
			return bx_opt_result(opt);
	}
	if (bx_check_argc(argc - optind, 1, -1))
		return BX_EXIT_USAGE;
	ret = bx_kernel_arg(ctx, kernel_version, &kernel);
	if (ret)
		return ret;
	ret = bx_snapshot_read_used(argv + optind, argc - optind, ctx->sysfs_root, &in);
	if (ret)
		return ret;
	bx_kernel_use(&kernel, &in);
	kernel = in.kernel;
	ret = bx_misplaced_compute(&in, ctx->state_dir, &rep);
	bx_snapshot_release(&in);
	if (ret)
		return ret;
	bx_out_obj_begin(ctx->out, "misplaced", BX_OBJ_LINES, NULL);
	misplaced_print_summary(ctx->out, &rep, units);
	bx_out_kernel(ctx->out, &kernel);
	if (rep.nr_chunks)
		bx_out_textf(ctx->out, "chunks (forbidden first; model: where a new chunk goes now):");
	bx_out_list_begin(ctx->out, "chunks");
	for (size_t i = 0; i < rep.nr_chunks; i++)
		misplaced_print_chunk(ctx->out, &rep.chunks[i], units);
	bx_out_list_end(ctx->out);
	bx_out_obj_end(ctx->out);
	ret = rep.nr_chunks ? BX_EXIT_MISPLACED : 0;
	bx_misplaced_report_release(&rep);
	return ret;
}
