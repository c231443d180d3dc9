/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx filesystem plan: the space and placement after a list of changes,
 * before making them (plan/plan.c). This file reads the options and prints
 * the result: text before and after side by side, JSON with both sides.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/commands.h"
#include "cmds/filesystem-plan.h"
#include "cmds/kernel-option.h"
#include "cmds/misplaced.h"
#include "cmds/reclaim-print.h"
#include "cmds/usage-tables.h"
#include "common/error.h"
#include "common/units.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "disk/volumes.h"
#include "fsops/copy-rate.h"
#include "plan/plan.h"
#include "fsops/snapshot-read.h"

const char *const bx_filesystem_plan_usage[] = {
	"btrfsx filesystem plan [--kernel <version>] [<units>] <path>... <change>...",
	"Show the space and placement after changes, before making them.",
	"",
	"<path> is a mount point (read through the kernel's ioctls; needs root),",
	"or member devices / image files of an unmounted filesystem. Nothing is",
	"changed. The changes apply in the order given:",
	"",
	"--add SIZE[:HINT]        a new device (the next devid), its hint set after",
	"--remove DEVID           remove a device: its chunks move to the others",
	"--resize DEVID=SIZE      resize a device; shrinking moves what lies beyond",
	"--resize DEVID=max       ... to the size of the device itself",
	"--hint DEVID=HINT        set an allocation hint (the guard rails apply);",
	"                         nothing moves, chunks breaking it are listed",
	"--convert data=PROFILE   rewrite every data chunk in PROFILE",
	"--convert metadata=PROFILE",
	"                         the same for metadata (and system) chunks",
	"--replace DEVID=SIZE[:HINT]",
	"                         replace a device; a replace keeps the old size",
	"                         and does not copy the hint (give it to set it)",
	"--relocate               move the misplaced chunks as 'btrfsx balance",
	"                         misplaced' would",
	"--balance dusage=U,musage=U",
	"                         a balance with usage filters, as btrfs balance",
	"                         makes it: the data (dusage) or metadata and",
	"                         system (musage) chunks used below U percent",
	"                         (U: N, or MIN..MAX; name one kind or both)",
	"--resume                 the paused or interrupted balance resumed to its",
	"                         end ('btrfs balance resume')",
	"",
	"Shown: Free (estimated), Free (strict), Metadata room (alone and after a",
	"data fill), the hint classes and every device's unallocated space, before",
	"and after; what moves and how much (used bytes: what is copied); chunks",
	"that break the hints afterwards; and whether each change is possible",
	"(a remove, shrink or convert the devices cannot hold: which tier is short",
	"by how much; a hint the guard rails refuse: why). When the kernel's",
	"block group reclaim is on, its thresholds after the plan and the block",
	"groups below them: the figures leave out what it relocates.",
	"",
	"Exit status: 0 possible, 5 a change would fail, 1 error, 2 bad input",
	"(an unknown devid, a size below the smallest device or a replace's",
	"source, a profile the devices cannot hold, conflicting changes).",
	"",
	BX_KERNEL_HELP,
	BX_UNITS_HELP_SHORT,
	NULL
};

/* "RAID1" / "single", as btrfs-progs prints profiles. */
static void profile_text(uint64_t type, char *buf, size_t len)
{
	const char *name = bx_profile_name(type);
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = strcmp(name, "single") ? (char)toupper((unsigned char)name[i]) : name[i];
	buf[i] = '\0';
}

/* "+1.00GiB", "-512.00MiB" or "" for no change. */
static void change_text(uint64_t before, uint64_t after, unsigned int units, char *buf,
			size_t len)
{
	char size[32];

	if (before == after) {
		buf[0] = '\0';
		return;
	}
	bx_pretty_size(after > before ? after - before : before - after, units, size, sizeof(size));
	snprintf(buf, len, "%c%s", after > before ? '+' : '-', size);
}

static void size_row(struct bx_out *out, const char *label, uint64_t before, uint64_t after,
		     unsigned int units)
{
	char a[32], b[32], d[40];

	bx_pretty_size(before, units, a, sizeof(a));
	bx_pretty_size(after, units, b, sizeof(b));
	change_text(before, after, units, d, sizeof(d));
	bx_out_textf(out, "    %-24s %16s %16s %16s", label, a, b, d);
}

static void text_row(struct bx_out *out, const char *label, const char *before, const char *after)
{
	bx_out_textf(out, "    %-24s %16s %16s", label, before, after);
}

/* ---- JSON: one side (the usage report's stable keys) ---- */

static void json_devices(struct bx_out *out, const struct bx_snapshot *in,
			 const struct bx_usage_report *rep)
{
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < rep->nr_dev_rows; i++) {
		const struct bx_usage_dev_row *r = &rep->dev_rows[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_u64(out, "devid", r->devid, 0);
		bx_out_str(out, "device", r->missing || !r->path[0] ? NULL : r->path, 0);
		bx_out_bool(out, "missing", r->missing, 0);
		bx_out_hint(out, "hint", r->hint, 0);
		bx_out_u64(out, "size", r->size, 0);
		bx_out_u64(out, "device_size", in->devs[i].device_size, 0);
		bx_out_u64(out, "unallocated", r->unallocated, 0);
		bx_out_u64(out, "data", r->data, 0);
		bx_out_u64(out, "metadata", r->metadata, 0);
		bx_out_u64(out, "system", r->system, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

static void json_side(struct bx_out *out, const char *key, const struct bx_snapshot *in,
		      const struct bx_usage_report *rep)
{
	const struct bx_usage_overall *ov = &rep->overall;

	bx_out_obj_begin(out, key, BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "device_size", ov->device_size, 0);
	bx_out_u64(out, "device_allocated", ov->device_allocated, 0);
	bx_out_s64(out, "device_unallocated", ov->device_unallocated, 0);
	bx_out_u64(out, "used", ov->used, 0);
	bx_out_str(out, "data_profile", bx_profile_name(rep->data_type), 0);
	bx_out_str(out, "metadata_profile", bx_profile_name(rep->metadata_type), 0);
	bx_out_bool(out, "hints_honoured", rep->hints_honoured, 0);
	bx_out_u64(out, "data_size", rep->data_size, 0);
	bx_out_u64(out, "data_used", rep->data_used, 0);
	bx_out_u64(out, "metadata_size", rep->metadata_size, 0);
	bx_out_u64(out, "metadata_used", rep->metadata_used, 0);
	bx_out_u64(out, "free_estimated", rep->free_estimated, 0);
	bx_out_u64(out, "free_strict", rep->free_strict, 0);
	bx_out_u64(out, "metadata_room", rep->metadata_room, 0);
	bx_out_u64(out, "metadata_room_after_data", rep->metadata_room_after_data, 0);
	bx_usage_classes_json(out, rep);
	json_devices(out, in, rep);
	bx_out_obj_end(out);
}

/* ---- text: before and after side by side ---- */

static void print_summary(struct bx_out *out, const struct bx_plan_result *res,
			  unsigned int units)
{
	const struct bx_usage_report *b = &res->before, *a = &res->after;
	char pb[16], pa[16];

	bx_out_textf(out, "%s", "");
	bx_out_textf(out, "    %-24s %16s %16s %16s", "", "Before", "After", "Change");
	size_row(out, "Device size:", b->overall.device_size, a->overall.device_size, units);
	size_row(out, "Device allocated:", b->overall.device_allocated,
		 a->overall.device_allocated, units);
	size_row(out, "Used:", b->overall.used, a->overall.used, units);
	size_row(out, "Free (estimated):", b->free_estimated, a->free_estimated, units);
	size_row(out, "Free (strict):", b->free_strict, a->free_strict, units);
	size_row(out, "Metadata room:", b->metadata_room, a->metadata_room, units);
	size_row(out, "Metadata after data:", b->metadata_room_after_data,
		 a->metadata_room_after_data, units);
	profile_text(b->data_type, pb, sizeof(pb));
	profile_text(a->data_type, pa, sizeof(pa));
	text_row(out, "Data profile:", pb, pa);
	profile_text(b->metadata_type, pb, sizeof(pb));
	profile_text(a->metadata_type, pa, sizeof(pa));
	text_row(out, "Metadata profile:", pb, pa);
}

static const struct bx_usage_class *class_of(const struct bx_usage_report *rep, uint64_t hint)
{
	for (size_t i = 0; i < rep->nr_classes; i++)
		if (rep->classes[i].hint == hint)
			return &rep->classes[i];
	return NULL;
}

/* "before -> after" of one size, or the one value when they agree. */
static void pair_text(uint64_t before, bool have_before, uint64_t after, bool have_after,
		      unsigned int units, char *buf, size_t len)
{
	char a[32] = "-", b[32] = "-";

	if (have_before)
		bx_pretty_size(before, units, a, sizeof(a));
	if (have_after)
		bx_pretty_size(after, units, b, sizeof(b));
	if (have_before && have_after && before == after)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s -> %s", a, b);
}

static void print_classes(struct bx_out *out, const struct bx_plan_result *res,
			  unsigned int units)
{
	bx_out_textf(out, "%s", "");
	bx_out_textf(out, "Allocation hint classes (device bytes, before -> after; unallocated "
		     "above each device's first MiB):");
	for (uint64_t hint = 0; hint < 256; hint++) {
		const struct bx_usage_class *b = class_of(&res->before, hint);
		const struct bx_usage_class *a = class_of(&res->after, hint);
		char name[32], unalloc[80], data[80], meta[80];

		if (!a && !b)
			continue;
		bx_hint_describe(hint, name, sizeof(name));
		pair_text(b ? b->unallocated : 0, b, a ? a->unallocated : 0, a, units, unalloc,
			  sizeof(unalloc));
		pair_text(b ? b->data_allocatable : 0, b, a ? a->data_allocatable : 0, a, units,
			  data, sizeof(data));
		pair_text(b ? b->metadata_allocatable : 0, b, a ? a->metadata_allocatable : 0, a,
			  units, meta, sizeof(meta));
		bx_out_textf(out, "    %-20s devices %u -> %u  unallocated %s  data_allocatable %s  "
			     "metadata_allocatable %s", name, b ? b->devices : 0, a ? a->devices : 0,
			     unalloc, data, meta);
	}
}

static const struct bx_usage_dev_row *row_of(const struct bx_usage_report *rep, uint64_t devid)
{
	for (size_t i = 0; i < rep->nr_dev_rows; i++)
		if (rep->dev_rows[i].devid == devid)
			return &rep->dev_rows[i];
	return NULL;
}

static void device_line(struct bx_out *out, const struct bx_usage_dev_row *b,
			const struct bx_usage_dev_row *a, unsigned int units)
{
	char hint[80], hb[32] = "", ha[32] = "", size[80], unalloc[80];

	if (b)
		bx_hint_describe(b->hint, hb, sizeof(hb));
	if (a)
		bx_hint_describe(a->hint, ha, sizeof(ha));
	if (!a)
		snprintf(hint, sizeof(hint), "%s -> removed", hb);
	else if (!b)
		snprintf(hint, sizeof(hint), "new, %s", ha);
	else if (strcmp(hb, ha))
		snprintf(hint, sizeof(hint), "%s -> %s", hb, ha);
	else
		snprintf(hint, sizeof(hint), "%s", hb);
	pair_text(b ? b->size : 0, b, a ? a->size : 0, a, units, size, sizeof(size));
	pair_text(b ? b->unallocated : 0, b, a ? a->unallocated : 0, a, units, unalloc,
		  sizeof(unalloc));
	bx_out_textf(out, "    %-6llu %-36s size %-28s unallocated %s",
		     (unsigned long long)(b ? b->devid : a->devid), hint, size, unalloc);
}

static void print_devices(struct bx_out *out, const struct bx_plan_result *res,
			  unsigned int units)
{
	bx_out_textf(out, "%s", "");
	bx_out_textf(out, "Devices (before -> after):");
	for (size_t i = 0; i < res->before.nr_dev_rows; i++) {
		const struct bx_usage_dev_row *b = &res->before.dev_rows[i];

		device_line(out, b, row_of(&res->after, b->devid), units);
	}
	for (size_t i = 0; i < res->after.nr_dev_rows; i++) {
		const struct bx_usage_dev_row *a = &res->after.dev_rows[i];

		if (!row_of(&res->before, a->devid))
			device_line(out, NULL, a, units);
	}
}

/* ---- the changes ---- */

static const char *status_name(enum bx_plan_status st)
{
	switch (st) {
	case BX_PLAN_STEP_DONE:
		return "possible";
	case BX_PLAN_STEP_IMPOSSIBLE:
		return "impossible";
	default:
		return "not-reached";
	}
}

static void step_text(struct bx_out *out, const struct bx_plan_step *st, size_t n,
		      unsigned int units)
{
	char what[160], moved[32], created[32], copied[32], line[512];
	size_t used;

	bx_plan_describe_change(&st->change, what, sizeof(what));
	bx_pretty_size(st->moved_bytes, units, moved, sizeof(moved));
	bx_pretty_size(st->new_length, units, created, sizeof(created));
	bx_pretty_size(st->copied_bytes, units, copied, sizeof(copied));
	used = (size_t)snprintf(line, sizeof(line), "   %zu. %s", n, what);
	if (st->change.op == BX_PLAN_ADD && st->status == BX_PLAN_STEP_DONE)
		used += (size_t)snprintf(line + used, sizeof(line) - used, ": devid %llu",
					 (unsigned long long)st->devid);
	if (st->moved_chunks && used < sizeof(line))
		used += (size_t)snprintf(line + used, sizeof(line) - used, ": moves %llu chunk%s "
					 "(%s used)", (unsigned long long)st->moved_chunks,
					 st->moved_chunks == 1 ? "" : "s", moved);
	if (st->new_chunks && used < sizeof(line))
		used += (size_t)snprintf(line + used, sizeof(line) - used, ", %llu new chunk%s (%s)",
					 (unsigned long long)st->new_chunks,
					 st->new_chunks == 1 ? "" : "s", created);
	if (st->change.op == BX_PLAN_REPLACE && used < sizeof(line))
		snprintf(line + used, sizeof(line) - used, ": copies %s", copied);
	if (st->status != BX_PLAN_STEP_DONE && used < sizeof(line))
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " [%s]",
			 status_name(st->status));
	else if (st->tight && used < sizeof(line))
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " [tight]");
	bx_out_textf(out, "%s", line);
	/* The reason can be longer than a text line of the formatter takes. */
	if (st->status == BX_PLAN_STEP_IMPOSSIBLE)
		bx_out_str(out, "      impossible:", st->reason, BX_F_TEXT_ONLY);
}

static void print_short(struct bx_out *out, const struct bx_plan_short *sh)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
	bx_out_str(out, "type", bx_place_type_name(sh->type), 0);
	bx_out_str(out, "profile", bx_profile_name(sh->type), 0);
	bx_out_u64(out, "flags", sh->type, 0);
	bx_out_u64(out, "missing_bytes", sh->missing, 0);
	bx_out_u64(out, "chunks", sh->chunks, 0);
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < sh->nr_devs; i++) {
		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_u64(out, "devid", sh->devs[i].devid, 0);
		bx_out_hint(out, "hint", sh->devs[i].hint, 0);
		bx_out_u64(out, "tier", sh->devs[i].tier, 0);
		bx_out_u64(out, "unallocated", sh->devs[i].unallocated, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	bx_out_obj_end(out);
}

/* The device path of @devid in @in, or a placeholder naming it. */
static void device_of(const struct bx_snapshot *in, uint64_t devid, char *buf, size_t len)
{
	for (size_t i = 0; i < in->nr_devs; i++) {
		if (in->devs[i].devid == devid && in->devs[i].path[0]) {
			snprintf(buf, len, "%s", in->devs[i].path);
			return;
		}
	}
	snprintf(buf, len, "<device of devid %llu>", (unsigned long long)devid);
}

/* A balance usage filter as btrfs balance spells it: "usage=50" or "usage=10..30". */
static void usage_filter(char *buf, size_t len, char kind, uint8_t min, uint8_t max)
{
	if (min)
		snprintf(buf, len, " -%cusage=%u..%u", kind, min, max);
	else
		snprintf(buf, len, " -%cusage=%u", kind, max);
}

/*
 * The command that makes change @c on the filesystem @in (btrfs-progs', or
 * btrfsx's for what only btrfsx does): what the web console shows beside a
 * plan, and the plan's JSON "command". A new device is named <new-device>;
 * an unmounted filesystem's mount point <mountpoint> (btrfs-progs changes
 * mounted filesystems; an allocation hint is set offline on a device).
 */
static void progs_command(const struct bx_snapshot *in, const struct bx_plan_change *c,
			  char *buf, size_t len)
{
	const char *mnt = in->mounted ? in->path : "<mountpoint>";
	const char *kind = c->type & BTRFS_BLOCK_GROUP_DATA ? "d" : "m";
	char dev[1100], hint[96] = "", filters[64] = "", more[32];

	if (c->has_hint)
		snprintf(hint, sizeof(hint), " && btrfsx device property set <new-device> "
			 "allocation_hint %s", bx_hint_name(c->hint));
	switch (c->op) {
	case BX_PLAN_ADD:
		snprintf(buf, len, "btrfs device add <new-device> %s%s", mnt, hint);
		break;
	case BX_PLAN_REMOVE:
		snprintf(buf, len, "btrfs device remove %llu %s", (unsigned long long)c->devid, mnt);
		break;
	case BX_PLAN_RESIZE:
		snprintf(buf, len, "btrfs filesystem resize %llu:%llu %s",
			 (unsigned long long)c->devid, (unsigned long long)c->size, mnt);
		break;
	case BX_PLAN_HINT:
		device_of(in, c->devid, dev, sizeof(dev));
		snprintf(buf, len, "btrfsx device property set %s allocation_hint %s", dev,
			 bx_hint_name(c->hint));
		break;
	case BX_PLAN_CONVERT:
		snprintf(buf, len, "btrfs balance start -%sconvert=%s %s", kind,
			 bx_profile_name(c->profile), mnt);
		break;
	case BX_PLAN_REPLACE:
		snprintf(buf, len, "btrfs replace start %llu <new-device> %s%s",
			 (unsigned long long)c->devid, mnt, hint);
		break;
	case BX_PLAN_RELOCATE:
		snprintf(buf, len, "btrfsx balance misplaced %s", mnt);
		break;
	case BX_PLAN_BALANCE:
		if (c->type & BTRFS_BLOCK_GROUP_DATA)
			usage_filter(filters, sizeof(filters), 'd', c->data_usage_min,
				     c->data_usage_max);
		if (c->type & BTRFS_BLOCK_GROUP_METADATA) {
			usage_filter(more, sizeof(more), 'm', c->metadata_usage_min,
				     c->metadata_usage_max);
			strncat(filters, more, sizeof(filters) - strlen(filters) - 1);
		}
		snprintf(buf, len, "btrfs balance start%s %s", filters, mnt);
		break;
	case BX_PLAN_RESUME:
		snprintf(buf, len, "btrfs balance resume %s", mnt);
		break;
	}
}

static void print_step(struct bx_out *out, const struct bx_snapshot *in,
		       const struct bx_plan_step *st, size_t n, unsigned int units, double rate)
{
	char what[160], command[1400];

	step_text(out, st, n, units);
	progs_command(in, &st->change, command, sizeof(command));
	bx_out_textf(out, "    command: %s", command);
	bx_plan_describe_change(&st->change, what, sizeof(what));
	bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
	bx_out_str(out, "change", bx_plan_op_name(st->change.op), 0);
	bx_out_str(out, "description", what, 0);
	bx_out_u64(out, "devid", st->devid, 0);
	bx_out_str(out, "status", status_name(st->status), 0);
	bx_out_bool(out, "tight", st->tight, 0);
	bx_out_str(out, "reason", st->status == BX_PLAN_STEP_IMPOSSIBLE ? st->reason : NULL, 0);
	bx_out_u64(out, "moved_chunks", st->moved_chunks, 0);
	bx_out_u64(out, "moved_bytes", st->moved_bytes, 0);
	bx_out_u64(out, "moved_length", st->moved_length, 0);
	bx_out_u64(out, "new_chunks", st->new_chunks, 0);
	bx_out_u64(out, "new_length", st->new_length, 0);
	bx_out_u64(out, "copied_bytes", st->copied_bytes, 0);
	/* What the change copies, at the rate relocations measured here (balance misplaced). */
	if (rate > 0)
		bx_out_double(out, "estimate_seconds",
			      (double)(st->moved_bytes + st->copied_bytes) / rate, 1, 0);
	else
		bx_out_str(out, "estimate_seconds", NULL, 0);
	bx_out_str(out, "command", command, 0);
	bx_out_list_begin(out, "short");
	for (size_t i = 0; i < st->nr_short; i++)
		print_short(out, &st->shorts[i]);
	bx_out_list_end(out);
	bx_out_obj_end(out);
}

static void json_chunks(struct bx_out *out, const char *key, const struct bx_plan_chunk *chunks,
			size_t n)
{
	bx_out_list_begin(out, key);
	for (size_t i = 0; i < n; i++) {
		const struct bx_plan_chunk *c = &chunks[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_u64(out, "change", c->step + 1, 0);
		bx_out_u64(out, "logical", c->logical, 0);
		bx_out_str(out, "type", bx_place_type_name(c->type), 0);
		bx_out_str(out, "profile", bx_profile_name(c->type), 0);
		bx_out_u64(out, "flags", c->type, 0);
		bx_out_u64(out, "length", c->length, 0);
		bx_out_u64(out, "used", c->used, 0);
		bx_out_u64(out, "used_before", c->used_before, 0);
		bx_out_bool(out, "existed", c->existed, 0);
		misplaced_devids_json(out, "devids", c->devids, c->num_stripes);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

/* The misplaced chunks after the plan that were (@newly false) or were not misplaced before. */
static void misplaced_list(struct bx_out *out, const struct bx_plan_result *res, bool newly,
			   const char *key, const char *heading, unsigned int units)
{
	const struct bx_misplaced_report *m = &res->misplaced_after;
	bool any = false;

	for (size_t i = 0; i < m->nr_chunks && !any; i++)
		any = res->newly_misplaced[i] == newly;
	if (any)
		bx_out_textf(out, "%s", heading);
	bx_out_list_begin(out, key);
	for (size_t i = 0; i < m->nr_chunks; i++)
		if (res->newly_misplaced[i] == newly)
			misplaced_print_chunk(out, &m->chunks[i], units);
	bx_out_list_end(out);
}

static void print_misplaced(struct bx_out *out, const struct bx_plan_result *res,
			    unsigned int units)
{
	const struct bx_misplaced_report *m = &res->misplaced_after;
	char used[32];

	if (!res->have_misplaced)
		return;
	bx_pretty_size(m->forbidden.used + m->off_preference.used, units, used, sizeof(used));
	bx_out_textf(out, "%s", "");
	bx_out_textf(out, "Misplaced after the plan: %llu chunk%s, %s used (model: where a new "
		     "chunk goes now)", (unsigned long long)m->nr_chunks,
		     m->nr_chunks == 1 ? "" : "s", used);
	bx_out_obj_begin(out, "misplaced", BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "chunks", m->nr_chunks, 0);
	bx_out_u64(out, "forbidden_chunks", m->forbidden.chunks, 0);
	bx_out_u64(out, "forbidden_used", m->forbidden.used, 0);
	bx_out_u64(out, "off_preference_chunks", m->off_preference.chunks, 0);
	bx_out_u64(out, "off_preference_used", m->off_preference.used, 0);
	bx_out_u64(out, "new_chunks", res->newly_misplaced_chunks, 0);
	bx_out_u64(out, "new_used", res->newly_misplaced_bytes, 0);
	bx_out_obj_end(out);
	misplaced_list(out, res, true, "newly_misplaced", "  becoming misplaced:", units);
	misplaced_list(out, res, false, "still_misplaced", "  misplaced already:", units);
}

/* ---- the command ---- */

static const char *const change_ops[] = {
	"add", "remove", "resize", "hint", "convert", "replace", "relocate", "balance", "resume",
};

static int add_change(struct bx_plan_change **changes, size_t *nr, const char *op,
		      const char *value)
{
	struct bx_plan_change *grown = realloc(*changes, (*nr + 1) * sizeof(*grown));
	int ret;

	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	*changes = grown;
	ret = bx_plan_parse_change(op, value, &grown[*nr]);
	if (ret)
		return bx_bad_value(ret);
	(*nr)++;
	return 0;
}

static int parse_options(struct bx_ctx *ctx, int argc, char **argv, unsigned int *units,
			 struct bx_plan_change **changes, size_t *nr, struct bx_kernel *kernel)
{
	enum { OPT_ADD = 256, OPT_REMOVE, OPT_RESIZE, OPT_HINT, OPT_CONVERT, OPT_REPLACE,
	       OPT_RELOCATE, OPT_BALANCE, OPT_RESUME };
	static const struct option longopts[] = {
		BX_UNITS_LONGOPTS,
		{ "add", required_argument, NULL, OPT_ADD },
		{ "remove", required_argument, NULL, OPT_REMOVE },
		{ "resize", required_argument, NULL, OPT_RESIZE },
		{ "hint", required_argument, NULL, OPT_HINT },
		{ "convert", required_argument, NULL, OPT_CONVERT },
		{ "replace", required_argument, NULL, OPT_REPLACE },
		{ "relocate", no_argument, NULL, OPT_RELOCATE },
		{ "balance", required_argument, NULL, OPT_BALANCE },
		{ "resume", no_argument, NULL, OPT_RESUME },
		BX_KERNEL_LONGOPT,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	const char *kernel_version = ctx->kernel;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, BX_UNITS_SHORTOPTS, longopts)) != -1) {
		if (bx_units_option(opt, units))
			continue;
		if (opt == BX_OPT_KERNEL) {
			kernel_version = optarg;
			continue;
		}
		if (opt < OPT_ADD || opt > OPT_RESUME)
			return bx_opt_result(opt);
		ret = add_change(changes, nr, change_ops[opt - OPT_ADD],
				 opt == OPT_RELOCATE || opt == OPT_RESUME ? NULL : optarg);
		if (ret)
			return ret;
	}
	if (!*nr)
		return bx_usage_error("no change to plan (--add, --remove, --resize, --hint, "
				      "--convert, --replace, --relocate, --balance, --resume)");
	if (bx_check_argc(argc - optind, 1, -1))
		return BX_EXIT_USAGE;
	return bx_kernel_arg(ctx, kernel_version, kernel);
}

static void print_result(struct bx_ctx *ctx, const struct bx_snapshot *before,
			 const struct bx_plan_result *res, unsigned int units)
{
	struct bx_out *out = ctx->out;
	const struct bx_snapshot *in = &res->after_in;
	uint64_t rate_bytes = 0;
	double rate_seconds = 0, rate = 0;

	/* No rate measured (or a damaged record): no estimate, the plan stands. */
	if (bx_copy_rate_load(ctx->state_dir, before->fsid, &rate_bytes, &rate_seconds))
		bx_error_clear();
	else if (rate_bytes && rate_seconds > 0)
		rate = (double)rate_bytes / rate_seconds;

	bx_out_uuid(out, "fsid", in->fsid, BX_F_JSON_ONLY);
	bx_out_bool(out, "mounted", in->mounted, BX_F_JSON_ONLY);
	bx_out_str(out, "mountpoint", in->mounted ? in->path : NULL, BX_F_JSON_ONLY);
	bx_out_bool(out, "possible", res->possible, BX_F_JSON_ONLY);
	if (rate > 0)
		bx_out_double(out, "copy_rate", rate, 0, BX_F_JSON_ONLY);
	else
		bx_out_str(out, "copy_rate", NULL, BX_F_JSON_ONLY);
	bx_out_textf(out, "Plan for %s (%s): %s", in->path, in->mounted ? "mounted" : "unmounted",
		     res->possible ? "possible" : "IMPOSSIBLE: a change would fail");
	bx_out_kernel(out, &in->kernel);
	bx_out_list_begin(out, "changes");
	for (size_t i = 0; i < res->nr_steps; i++)
		print_step(out, before, &res->steps[i], i + 1, units, rate);
	bx_out_list_end(out);
	print_summary(out, res, units);
	print_classes(out, res, units);
	print_devices(out, res, units);
	print_misplaced(out, res, units);
	json_side(out, "before", before, &res->before);
	json_side(out, "after", in, &res->after);
	json_chunks(out, "moved", res->moved, res->nr_moved);
	json_chunks(out, "created", res->created, res->nr_created);
	bx_reclaim_print(out, before, in, "Kernel reclaim after the plan (not in the figures above):",
			 units);
}

int bx_cmd_filesystem_plan(struct bx_ctx *ctx, int argc, char **argv)
{
	struct bx_plan_change *changes = NULL;
	struct bx_plan_result res;
	struct bx_snapshot in;
	struct bx_kernel kernel;
	unsigned int units = 0;
	size_t nr = 0;
	int ret;

	ret = parse_options(ctx, argc, argv, &units, &changes, &nr, &kernel);
	if (ret)
		goto out;
	ret = bx_snapshot_read_extents(argv + optind, argc - optind, ctx->sysfs_root, &in);
	if (ret)
		goto out;
	bx_kernel_use(&kernel, &in);
	ret = bx_plan_compute(&in, changes, nr, &res);
	if (!ret) {
		print_result(ctx, &in, &res, units);
		ret = res.possible ? 0 : BX_EXIT_PLAN_IMPOSSIBLE;
	} else if (ret == -EINVAL) {
		ret = BX_EXIT_USAGE;	/* the message is recorded */
	}
	bx_plan_result_release(&res);
	bx_snapshot_release(&in);
out:
	free(changes);
	return ret;
}
