/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel's automatic block group reclaim (fsops/reclaim.h) as filesystem
 * usage and filesystem plan show it: per kind whether it is on, its
 * threshold, the block groups below it, and in text what that will do to
 * the figures, which leave it out.
 */
#include <stdio.h>

#include "cmds/reclaim-print.h"
#include "common/units.h"
#include "fsops/reclaim.h"

static const char *const kind_keys[BX_SNAP_NR_KINDS] = { "data", "metadata", "system" };
static const char *const kind_labels[BX_SNAP_NR_KINDS] = {
	"    Data:", "    Metadata:", "    System:",
};

/* "below 72 % used (dynamic), at the deletion ...", or "off". */
static void rule_text(const struct bx_reclaim_kind_report *k, char *buf, size_t len)
{
	if (!k->on) {
		snprintf(buf, len, "off");
		return;
	}
	snprintf(buf, len, "below %u %% used%s, %s", k->threshold, k->dynamic ? " (dynamic)" : "",
		 k->periodic ? "at the cleaner's sweeps (periodic)" :
		 "at the deletion that takes a block group below it");
}

static void kind_json(struct bx_out *out, unsigned int kind,
		      const struct bx_reclaim_kind_report *k, unsigned int units)
{
	bx_out_obj_begin(out, kind_keys[kind], BX_OBJ_JSON_ONLY, NULL);
	bx_out_bool(out, "on", k->on, 0);
	bx_out_bool(out, "dynamic", k->dynamic, 0);
	bx_out_bool(out, "periodic", k->periodic, 0);
	bx_out_u64(out, "threshold", k->threshold, 0);
	bx_out_obj_begin(out, "below_threshold", BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "block_groups", k->below_block_groups, 0);
	bx_out_size(out, "used", k->below_used, units, 0);
	bx_out_size(out, "size", k->below_size, units, 0);
	bx_out_size(out, "device_bytes", k->below_device_bytes, units, 0);
	bx_out_obj_end(out);
	bx_out_obj_begin(out, "reclaimed", BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "block_groups", k->reclaimed_block_groups, 0);
	bx_out_size(out, "bytes", k->reclaimed_bytes, units, 0);
	bx_out_u64(out, "errors", k->reclaim_errors, 0);
	bx_out_obj_end(out);
	bx_out_obj_end(out);
}

/* The text lines below the rules: the block groups it may take, what that does. */
static void effect_text(struct bx_out *out, const struct bx_reclaim_report *rep,
			unsigned int units)
{
	uint64_t chunk = rep->data_chunk_size;
	char used[48], size[48], label[64], line[160];
	bool dynamic = false, periodic = false;

	for (unsigned int i = 0; i < BX_SNAP_NR_KINDS; i++) {
		const struct bx_reclaim_kind_report *k = &rep->kind[i];

		dynamic |= k->on && k->dynamic;
		periodic |= k->on && k->periodic;
		if (!k->below_block_groups)
			continue;
		bx_pretty_size(k->below_used, units, used, sizeof(used));
		bx_pretty_size(k->below_size, units, size, sizeof(size));
		snprintf(label, sizeof(label), "    Below it (%s):", kind_keys[i]);
		snprintf(line, sizeof(line), "%llu block group%s, %s used of %s",
			 (unsigned long long)k->below_block_groups,
			 k->below_block_groups == 1 ? "" : "s", used, size);
		bx_out_str(out, label, line, BX_F_TEXT_ONLY);
	}
	bx_pretty_size(rep->device_bytes_below_threshold, units, size, sizeof(size));
	bx_out_textf(out, "    Relocating a block group moves its extents into other block groups "
		     "or new");
	bx_out_textf(out, "    chunks: Device unallocated rises by up to its device bytes (%s "
		     "for", size);
	bx_out_textf(out, "    those below it), Metadata room with it; Free (model) barely moves.");
	bx_out_textf(out, "    Writing alone never starts it: a fill gets the figures above.");
	bx_pretty_size(chunk, units, size, sizeof(size));
	if (dynamic) {
		bx_pretty_size(chunk * 10, units, used, sizeof(used));
		bx_out_textf(out, "    Dynamic: the threshold rises as Device unallocated falls under "
			     "%s", used);
		bx_out_textf(out, "    (10 data chunks of %s); 0 while less than a data chunk is "
			     "unused.", size);
	}
	if (periodic) {
		bx_out_textf(out, "    Periodic: once deletions freed %s, each cleaner run relocates",
			     size);
		bx_out_textf(out, "    those below it that saw no allocation since the run before.");
	}
}

void bx_reclaim_print(struct bx_out *out, const struct bx_snapshot *settings,
		      const struct bx_snapshot *in, const char *heading, unsigned int units)
{
	struct bx_reclaim_report rep;
	bool text = bx_reclaim_any(&settings->reclaim);
	char rule[192];

	bx_reclaim_report(settings, in, &rep);
	if (!rep.known) {
		bx_out_str(out, "reclaim", NULL, BX_F_JSON_ONLY);
		return;
	}
	if (text)
		bx_out_textf(out, "%s", "");
	bx_out_obj_begin(out, "reclaim", text ? BX_OBJ_LINES : BX_OBJ_JSON_ONLY, heading);
	bx_out_size(out, "data_chunk_size", rep.data_chunk_size, units, BX_F_JSON_ONLY);
	for (unsigned int i = 0; i < BX_SNAP_NR_KINDS; i++) {
		if (!rep.kind[i].known)
			continue;
		kind_json(out, i, &rep.kind[i], units);
		rule_text(&rep.kind[i], rule, sizeof(rule));
		bx_out_str(out, kind_labels[i], rule, BX_F_TEXT_ONLY);
	}
	bx_out_size(out, "device_bytes_below_threshold", rep.device_bytes_below_threshold, units,
		    BX_F_JSON_ONLY);
	if (text)
		effect_text(out, &rep, units);
	bx_out_obj_end(out);
}
