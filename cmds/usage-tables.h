/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What filesystem usage and device usage print alike: the per-device table
 * (btrfs-progs' filesystem usage -T with a Hint column), the hint class
 * table, a device's JSON object, and the names of chunk types and profiles
 * as btrfs-progs writes them.
 */
#ifndef BTRFSX_USAGE_TABLES_H
#define BTRFSX_USAGE_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bx_out;
struct bx_usage_report;
struct bx_usage_dev_row;

/* "Data", "Metadata", "System", "Data+Metadata"; lowercase for JSON when !@capital. */
const char *bx_usage_type_name(uint64_t flags, bool capital);
/* The profile as btrfs-progs prints it: "RAID1", "DUP", "single". */
void bx_usage_profile_label(uint64_t flags, char *buf, size_t len);
/* The profile as JSON names it: "raid1", "dup", "single". */
const char *bx_usage_profile_key(uint64_t flags);

/* bx_usage_print_device_table() flags */
#define BX_DEVICE_TABLE_ALLOCATABLE (1u << 0)	/* the data/metadata allocatable columns */

/*
 * The per-device table (text only): Id, Path, Hint, one column per chunk
 * type and profile, Unallocated, Total, Slack (and the allocatable
 * columns), then the Total and Used rows. Returns 0 or -ENOMEM.
 */
int bx_usage_print_device_table(struct bx_out *out, const struct bx_usage_report *rep,
				unsigned int units, unsigned int flags);

/* The hint classes (text only): hint, devices, size, unallocated, allocatable. */
int bx_usage_print_class_table(struct bx_out *out, const struct bx_usage_report *rep,
			       unsigned int units);

/* The hint classes as the JSON list "classes" (nothing in text), sizes in bytes. */
void bx_usage_classes_json(struct bx_out *out, const struct bx_usage_report *rep);

/* A device's JSON object (JSON only), in a list. */
void bx_usage_device_json(struct bx_out *out, const struct bx_usage_report *rep,
			  const struct bx_usage_dev_row *row, unsigned int units);

#endif
