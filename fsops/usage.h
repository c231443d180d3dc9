/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Filesystem usage with a preference breakdown: what btrfs-progs' "filesystem
 * usage" shows, and how much data and metadata still fit according to the
 * allocator model (model/allocator.h) run forward on the real
 * per-device free space, hints honoured.
 *
 * Two steps, so that the command line, the public library
 * (libbtrfsx/usage.c) and the benchmark share one computation:
 *  1. a snapshot of the filesystem (model/snapshot.h), read by
 *     bx_snapshot_read() (fsops/snapshot-read.h) or filled by hand;
 *  2. bx_usage_compute(): pure, no I/O, no printing; fills a struct
 *     bx_usage_report and records warnings with bx_warn().
 *
 * Library style: functions return 0 or a negative errno with a message
 * recorded by bx_error(); nothing prints or exits.
 *
 * What the model figures count (all in bytes):
 *  - free_estimated: data bytes still writable = free space inside the data
 *    block groups (length - used) + the logical size of the data chunks the
 *    model allocates, one after the other, until ENOSPC, starting from each
 *    device's real holes. No room is held back for metadata: it is what a
 *    data-only fill gets (metadata_room_after_data says what metadata has
 *    left then). Mixed block groups: minus the unused global reserve, as
 *    btrfs-progs does.
 *  - free_strict: the same with every preference strict (BX_ALLOC_STRICT).
 *  - a seed device (a sprouted filesystem) is read-only: neither its
 *    unallocated space nor the free space in chunks with a stripe on it is
 *    writable, so neither counts in the figures below.
 *  - metadata_room: free space inside the metadata block groups + the logical
 *    size of the metadata chunks the model allocates until ENOSPC. System
 *    chunks and the global reserve are not subtracted.
 *  - metadata_room_after_data: the same, after the data fill above.
 */
#ifndef BTRFSX_USAGE_H
#define BTRFSX_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "model/snapshot.h"

/* btrfs-progs' Overall section, computed the same way. */
/*
 * The list is what struct btrfsx_usage and Python's Usage take as it is
 * (common/fields.h); the estimates are progs_free_estimated and
 * progs_free_min there.
 */
#define BX_USAGE_OVERALL_FIELDS(X)						\
	X(uint64_t, device_size, )						\
	X(uint64_t, device_allocated, )						\
	X(int64_t, device_unallocated, )	/* progs shows it signed */	\
	X(uint64_t, device_missing, )						\
	X(uint64_t, device_slack, )						\
	X(uint64_t, used, )							\
	X(double, data_ratio, )							\
	X(double, metadata_ratio, )						\
	X(char, multiple_profiles, [32])	/* "" or e.g. "data, metadata" */

struct bx_usage_overall {
	BX_USAGE_OVERALL_FIELDS(BX_FIELD_MEMBER)
	uint64_t free_estimated;	/* data free in chunks + unallocated / data ratio */
	uint64_t free_min;		/* ... / the highest ratio in use */
};

/* Devices sharing one hint value: btrfsx_usage_class, UsageClass. */
#define BX_USAGE_CLASS_FIELDS(X)							\
	X(uint64_t, hint, )								\
	X(uint32_t, devices, )								\
	X(uint64_t, size, )	/* sum of total_bytes */				\
	X(uint64_t, unallocated, )	/* sum of holes above the reserved first MiB */	\
	X(uint64_t, data_allocatable, )	/* device bytes of it a data-only fill takes */	\
	X(uint64_t, metadata_allocatable, )	/* ... a metadata-only fill takes */

struct bx_usage_class {
	BX_USAGE_CLASS_FIELDS(BX_FIELD_MEMBER)
};

/*
 * One device: the list is what btrfsx_usage_device and UsageDevice take as
 * it is; the path is copied, the rest is the command's.
 */
#define BX_USAGE_DEVICE_FIELDS(X)							\
	X(uint64_t, devid, )								\
	X(uint64_t, hint, )								\
	X(bool, missing, )								\
	X(uint64_t, size, )								\
	X(uint64_t, slack, )								\
	X(uint64_t, unallocated, )	/* total_bytes - bytes in device extents */	\
	X(uint64_t, data, )	/* device bytes in extents of each chunk type */	\
	X(uint64_t, metadata, )								\
	X(uint64_t, system, )

struct bx_usage_dev_row {
	BX_USAGE_DEVICE_FIELDS(BX_FIELD_MEMBER)
	const char *path;		/* points into the input */
	bool seed;			/* the CLI's: a seed device, read-only */
	/* device bytes in extents of each bx_usage_report.types[k] (nr_types entries) */
	const uint64_t *allocated;
	uint64_t data_allocatable;	/* device bytes of it a data-only fill takes */
	uint64_t metadata_allocatable;	/* device bytes of it a metadata-only fill takes */
};

/* bx_usage_compute() flags */
#define BX_USAGE_STRICT (1U << 0)	/* model every preference as strict */
#define BX_USAGE_IGNORE_HINTS (1U << 1)	/* model the allocator without hints */
#define BX_USAGE_QUIET (1U << 2)	/* warnings as bits only, not said (bx_warn) */

/* bx_usage_report.warnings */
#define BX_USAGE_W_METADATA_LOW (1U << 0)	/* room < 50% of metadata used */
#define BX_USAGE_W_DATA_ON_META_DEVS (1U << 1)	/* data can use metadata_preferred devices */
#define BX_USAGE_W_HINTS_IGNORED (1U << 2)	/* mounted kernel ignores the hints */
#define BX_USAGE_W_BALANCE_TARGET (1U << 3)	/* a balance converts: new chunks get its target */

/*
 * The model's figures: the list is what struct btrfsx_usage and Python's
 * Usage take as it is. data_on_metadata_devices: device bytes of data chunks
 * on metadata_only and metadata_preferred devices now.
 */
#define BX_USAGE_MODEL_FIELDS(X)								\
	X(bool, hints_honoured, )	/* the model ran with hints */				\
	X(bool, mixed, )									\
	X(uint64_t, data_size, )	/* logical, in data block groups */			\
	X(uint64_t, data_used, )								\
	X(uint64_t, metadata_size, )	/* logical, in metadata block groups (not mixed) */	\
	X(uint64_t, metadata_used, )								\
	X(uint64_t, data_free_in_chunks, )							\
	X(uint64_t, data_new_chunks, )	/* logical bytes of the simulated data chunks */	\
	X(uint64_t, free_estimated, )								\
	X(uint64_t, free_strict, )								\
	X(bool, have_statfs, )									\
	X(uint64_t, free_statfs, )								\
	X(uint64_t, metadata_free_in_chunks, )							\
	X(uint64_t, metadata_room, )								\
	X(uint64_t, metadata_room_after_data, )							\
	X(uint64_t, metadata_needed, )	/* 50% of metadata_used: the warning threshold */	\
	X(uint64_t, data_on_metadata_devices, )

struct bx_usage_report {
	struct bx_usage_overall overall;
	BX_USAGE_MODEL_FIELDS(BX_FIELD_MEMBER)
	uint32_t model_flags;		/* BX_ALLOC_* the model ran with */
	uint64_t data_type;		/* type and profile of the next data chunk */
	uint64_t metadata_type;		/* ... of the next metadata chunk */
	uint64_t data_may_take_metadata_room; /* data_allocatable of metadata_preferred */
	uint32_t warnings;		/* BX_USAGE_W_* */
	size_t nr_classes;
	struct bx_usage_class *classes;	/* by hint value */
	size_t nr_dev_rows;
	struct bx_usage_dev_row *dev_rows;	/* by devid */
	/*
	 * The chunk types and profiles in use: the space infos without the
	 * global reserve, in their (btrfs-progs') order; the columns of the
	 * per-device table, each with its logical size and use.
	 */
	size_t nr_types;
	struct bx_snap_space *types;
	uint64_t *allocated;		/* nr_dev_rows x nr_types, the rows' arrays */
};

/*
 * Computes the report for @in; @flags are BX_USAGE_*. Hints are honoured
 * unless BX_USAGE_IGNORE_HINTS or @in->hints_effective is false. Warnings
 * (BX_USAGE_W_*) are also recorded with bx_warn(). Release the report with
 * bx_usage_report_release(). Returns 0, -EINVAL (no device, bad profile
 * bits) or -ENOMEM.
 */
int bx_usage_compute(const struct bx_snapshot *in, unsigned int flags,
		     struct bx_usage_report *rep);
void bx_usage_report_release(struct bx_usage_report *rep);

#endif
