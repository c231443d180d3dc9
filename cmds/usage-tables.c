/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tables and device objects of filesystem usage and device usage (usage-tables.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cmds/commands.h"
#include "cmds/table.h"
#include "cmds/usage-tables.h"
#include "fsops/usage.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "format/profiles.h"

const char *bx_usage_type_name(uint64_t flags, bool capital)
{
	if ((flags & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA)) ==
	    (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA))
		return capital ? "Data+Metadata" : "data+metadata";
	if (flags & BTRFS_BLOCK_GROUP_DATA)
		return capital ? "Data" : "data";
	if (flags & BTRFS_BLOCK_GROUP_METADATA)
		return capital ? "Metadata" : "metadata";
	if (flags & BTRFS_BLOCK_GROUP_SYSTEM)
		return capital ? "System" : "system";
	return capital ? "Unknown" : "unknown";
}

const char *bx_usage_profile_key(uint64_t flags)
{
	return (flags & BTRFS_BLOCK_GROUP_PROFILE_MASK) ? bx_profile_name(flags) : "single";
}

void bx_usage_profile_label(uint64_t flags, char *buf, size_t len)
{
	const char *name = bx_usage_profile_key(flags);
	bool upper = strcmp(name, "single") != 0;
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = upper ? (char)toupper((unsigned char)name[i]) : name[i];
	buf[i] = '\0';
}

/* Column indexes of the device table. */
struct device_cols {
	size_t types;		/* the first chunk type column */
	size_t unallocated, total, slack;
	size_t data_allocatable, metadata_allocatable;
	size_t nr;
};

static struct device_cols device_cols(const struct bx_usage_report *rep, unsigned int flags)
{
	struct device_cols c = { .types = 3 };

	c.unallocated = c.types + rep->nr_types;
	c.total = c.unallocated + 1;
	c.slack = c.total + 1;
	c.nr = c.slack + 1;
	if (flags & BX_DEVICE_TABLE_ALLOCATABLE) {
		c.data_allocatable = c.nr++;
		c.metadata_allocatable = c.nr++;
	}
	return c;
}

/* Two header rows: the chunk type over its profile, as btrfs-progs has them. */
static void device_header(struct bx_table *t, const struct bx_usage_report *rep,
			  const struct device_cols *c, unsigned int flags)
{
	char profile[16];

	bx_table_row(t);
	for (size_t k = 0; k < rep->nr_types; k++)
		bx_table_cell(t, c->types + k, BX_ALIGN_LEFT,
			      bx_usage_type_name(rep->types[k].flags, true));
	if (flags & BX_DEVICE_TABLE_ALLOCATABLE) {
		bx_table_cell(t, c->data_allocatable, BX_ALIGN_LEFT, "Allocatable");
		bx_table_cell(t, c->metadata_allocatable, BX_ALIGN_LEFT, "Allocatable");
	}
	bx_table_header(t, (const char *const[]){ "Id", "Path", "Hint" }, 3);
	for (size_t k = 0; k < rep->nr_types; k++) {
		bx_usage_profile_label(rep->types[k].flags, profile, sizeof(profile));
		bx_table_cell(t, c->types + k, BX_ALIGN_LEFT, profile);
	}
	bx_table_cell(t, c->unallocated, BX_ALIGN_LEFT, "Unallocated");
	bx_table_cell(t, c->total, BX_ALIGN_LEFT, "Total");
	bx_table_cell(t, c->slack, BX_ALIGN_LEFT, "Slack");
	if (flags & BX_DEVICE_TABLE_ALLOCATABLE) {
		bx_table_cell(t, c->data_allocatable, BX_ALIGN_LEFT, "Data");
		bx_table_cell(t, c->metadata_allocatable, BX_ALIGN_LEFT, "Metadata");
	}
	bx_table_rule(t);
}

static void device_row(struct bx_table *t, const struct bx_usage_report *rep,
		       const struct bx_usage_dev_row *r, const struct device_cols *c,
		       unsigned int units, unsigned int flags)
{
	char hint[32];

	bx_hint_describe(r->hint, hint, sizeof(hint));
	bx_table_row(t);
	bx_table_cellf(t, 0, BX_ALIGN_RIGHT, "%llu", (unsigned long long)r->devid);
	bx_table_cell(t, 1, BX_ALIGN_LEFT, r->missing ? "missing" : r->path);
	bx_table_cell(t, 2, BX_ALIGN_LEFT, hint);
	for (size_t k = 0; k < rep->nr_types; k++)
		bx_table_size(t, c->types + k, r->allocated[k], units, true);
	bx_table_size(t, c->unallocated, r->unallocated, units, false);
	bx_table_size(t, c->total, r->size, units, false);
	bx_table_size(t, c->slack, r->slack, units, true);
	if (flags & BX_DEVICE_TABLE_ALLOCATABLE) {
		bx_table_size(t, c->data_allocatable, r->data_allocatable, units, false);
		bx_table_size(t, c->metadata_allocatable, r->metadata_allocatable, units, false);
	}
}

/* The Total row (logical sizes of the chunk types, sums of the rest) and the Used row. */
static void device_footer(struct bx_table *t, const struct bx_usage_report *rep,
			  const struct device_cols *c, unsigned int units, unsigned int flags)
{
	uint64_t unallocated = 0, total = 0, slack = 0, data = 0, metadata = 0;

	for (size_t i = 0; i < rep->nr_dev_rows; i++) {
		unallocated += rep->dev_rows[i].unallocated;
		total += rep->dev_rows[i].size;
		slack += rep->dev_rows[i].slack;
		data += rep->dev_rows[i].data_allocatable;
		metadata += rep->dev_rows[i].metadata_allocatable;
	}
	bx_table_rule(t);
	bx_table_row(t);
	bx_table_cell(t, 1, BX_ALIGN_LEFT, "Total");
	for (size_t k = 0; k < rep->nr_types; k++)
		bx_table_size(t, c->types + k, rep->types[k].total_bytes, units, false);
	bx_table_size(t, c->unallocated, unallocated, units, false);
	bx_table_size(t, c->total, total, units, false);
	bx_table_size(t, c->slack, slack, units, false);
	if (flags & BX_DEVICE_TABLE_ALLOCATABLE) {
		bx_table_size(t, c->data_allocatable, data, units, false);
		bx_table_size(t, c->metadata_allocatable, metadata, units, false);
	}
	bx_table_row(t);
	bx_table_cell(t, 1, BX_ALIGN_LEFT, "Used");
	for (size_t k = 0; k < rep->nr_types; k++)
		bx_table_size(t, c->types + k, rep->types[k].used_bytes, units, false);
}

int bx_usage_print_device_table(struct bx_out *out, const struct bx_usage_report *rep,
				unsigned int units, unsigned int flags)
{
	struct device_cols c = device_cols(rep, flags);
	struct bx_table *t = bx_table_new(c.nr);

	device_header(t, rep, &c, flags);
	for (size_t i = 0; i < rep->nr_dev_rows; i++)
		device_row(t, rep, &rep->dev_rows[i], &c, units, flags);
	device_footer(t, rep, &c, units, flags);
	return bx_table_print(out, t);
}

int bx_usage_print_class_table(struct bx_out *out, const struct bx_usage_report *rep,
			       unsigned int units)
{
	struct bx_table *t = bx_table_new(6);

	bx_table_header(t, (const char *const[]){ NULL, NULL, NULL, NULL, "Allocatable",
						  "Allocatable" }, 6);
	bx_table_header(t, (const char *const[]){ "Hint", "Devices", "Size", "Unallocated",
						  "Data", "Metadata" }, 6);
	bx_table_rule(t);
	for (size_t i = 0; i < rep->nr_classes; i++) {
		const struct bx_usage_class *cl = &rep->classes[i];
		char hint[32];

		bx_hint_describe(cl->hint, hint, sizeof(hint));
		bx_table_row(t);
		bx_table_cell(t, 0, BX_ALIGN_LEFT, hint);
		bx_table_cellf(t, 1, BX_ALIGN_RIGHT, "%u", cl->devices);
		bx_table_size(t, 2, cl->size, units, false);
		bx_table_size(t, 3, cl->unallocated, units, false);
		bx_table_size(t, 4, cl->data_allocatable, units, false);
		bx_table_size(t, 5, cl->metadata_allocatable, units, false);
	}
	return bx_table_print(out, t);
}

void bx_usage_device_json(struct bx_out *out, const struct bx_usage_report *rep,
			  const struct bx_usage_dev_row *r, unsigned int units)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
	bx_out_u64(out, "devid", r->devid, 0);
	bx_out_str(out, "device", r->missing ? NULL : r->path, 0);
	bx_out_bool(out, "missing", r->missing, 0);
	bx_out_bool(out, "seed", r->seed, 0);
	bx_out_hint(out, "hint", r->hint, 0);
	bx_out_size(out, "size", r->size, units, 0);
	bx_out_size(out, "unallocated", r->unallocated, units, 0);
	bx_out_size(out, "data", r->data, units, 0);
	bx_out_size(out, "metadata", r->metadata, units, 0);
	bx_out_size(out, "system", r->system, units, 0);
	bx_out_size(out, "slack", r->slack, units, 0);
	bx_out_list_begin(out, "allocations");
	for (size_t k = 0; k < rep->nr_types; k++) {
		if (!r->allocated[k])
			continue;
		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_str(out, "type", bx_usage_type_name(rep->types[k].flags, false), 0);
		bx_out_str(out, "profile", bx_usage_profile_key(rep->types[k].flags), 0);
		bx_out_size(out, "size", r->allocated[k], units, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	bx_out_size(out, "data_allocatable", r->data_allocatable, units, 0);
	bx_out_size(out, "metadata_allocatable", r->metadata_allocatable, units, 0);
	bx_out_obj_end(out);
}

void bx_usage_classes_json(struct bx_out *out, const struct bx_usage_report *rep)
{
	bx_out_list_begin(out, "classes");
	for (size_t i = 0; i < rep->nr_classes; i++) {
		const struct bx_usage_class *c = &rep->classes[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
		bx_out_hint(out, "hint", c->hint, 0);
		bx_out_u64(out, "devices", c->devices, 0);
		bx_out_u64(out, "size", c->size, 0);
		bx_out_u64(out, "unallocated", c->unallocated, 0);
		bx_out_u64(out, "data_allocatable", c->data_allocatable, 0);
		bx_out_u64(out, "metadata_allocatable", c->metadata_allocatable, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}
