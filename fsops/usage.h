/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Filesystem usage with a preference breakdown: what btrfs-progs' "filesystem
 * usage" shows, and how much data and metadata still fit according to the
 * allocator model (model/allocator.h) run forward on the real
 * per-device free space, hints honoured.
 *
 * Two steps, so that the command line, the public library
 * (libbtrfsx/usage.c) and the benchmark share one computation:
 *  1. collect: bx_usage_read_mounted() (ioctls FS_INFO, DEV_INFO, SPACE_INFO,
 *     TREE_SEARCH_V2 on the chunk and device trees, statfs) or
 *     bx_usage_read_offline() (the devices or images, through our reader) fill
 *     a struct bx_usage_input; or a caller fills one by hand;
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
#include "fsops/reclaim.h"
#include "model/allocator.h"

/* The kernel's SPACE_INFO flag of the global block reserve slot. */
#define BX_SPACE_INFO_GLOBAL_RSV (1ULL << 49)

/* A device extent: [start, start + length) on its device, part of a chunk. */
struct bx_usage_extent {
	uint64_t start;
	uint64_t length;
	uint64_t chunk_offset;		/* logical start of its chunk */
};

struct bx_usage_dev {
	uint64_t devid;
	char path[1024];		/* "" when missing */
	uint64_t total_bytes;		/* the filesystem's size of the device */
	uint64_t bytes_used;		/* in device extents, as the kernel or the item says */
	uint64_t device_size;		/* what the device or file really has; 0: missing */
	uint64_t hint;			/* hint field of dev_item.type (or from sysfs) */
	bool missing;
	bool writable;			/* in the kernel's alloc_list */
	bool seed;			/* of a seed filesystem: read-only, so are its chunks */
	size_t nr_extents;
	struct bx_usage_extent *extents;	/* malloc()ed; any order */
};

/* One slot of BTRFS_IOC_SPACE_INFO, or its equivalent summed from block groups. */
struct bx_usage_space {
	uint64_t flags;			/* type | profile, or BX_SPACE_INFO_GLOBAL_RSV */
	uint64_t total_bytes;		/* logical */
	uint64_t used_bytes;		/* logical */
};

struct bx_usage_stripe {
	uint64_t devid;
	uint64_t physical;
};

struct bx_usage_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t type;
	uint32_t num_stripes;
	uint32_t sub_stripes;
	size_t first_stripe;		/* index into bx_usage_input.stripes */
	/*
	 * Logical bytes in use (block group item): known for every chunk when
	 * bx_usage_input.chunks_used_known, and always for a chunk with a
	 * stripe on a seed device (its free space is read-only).
	 */
	uint64_t used;
	size_t first_dextent;		/* data chunks: its extents in bx_usage_input.dextents */
	size_t nr_dextents;
};

/* A data extent (an EXTENT_ITEM): logical bytes [start, start + len). */
struct bx_usage_dextent {
	uint64_t start;
	uint64_t len;
};

/* A balance that changes what profile new chunks get (bx_usage_input.balance). */
enum bx_usage_balance {
	BX_USAGE_BALANCE_NONE,
	BX_USAGE_BALANCE_RUNNING,
	BX_USAGE_BALANCE_PAUSED,
	/* unmounted: its item is on disk; the next mount resumes it (paused with skip_balance) */
	BX_USAGE_BALANCE_INTERRUPTED,
};

/* Indexes of bx_usage_input.balance_target. */
#define BX_USAGE_KIND_DATA 0
#define BX_USAGE_KIND_METADATA 1
#define BX_USAGE_KIND_SYSTEM 2
#define BX_USAGE_NR_KINDS 3

struct bx_usage_input {
	uint8_t fsid[16];
	bool mounted;
	char path[4096];		/* the mount point, or the first device */
	uint32_t nodesize;
	uint32_t sectorsize;
	bool hints_effective;		/* false: a mounted kernel ignores the hints */
	/*
	 * Whether the running kernel honours the stored hints: 1, 0, -1
	 * unknown or no hint set. Mounted, hints_effective; unmounted (where
	 * hints_effective assumes the kernel that mounts it next honours them),
	 * asked of the running kernel (bx_hint_kernel_support).
	 */
	int kernel_hints;
	uint32_t kernel_flags;		/* the running kernel's BX_ALLOC_* (bx_kernel_alloc_flags) */
	size_t nr_devs;
	struct bx_usage_dev *devs;	/* sorted by devid (the kernel's alloc_list order) */
	size_t nr_spaces;
	struct bx_usage_space *spaces;
	size_t nr_chunks;
	struct bx_usage_chunk *chunks;	/* in chunk tree order (by logical) */
	size_t nr_stripes;
	struct bx_usage_stripe *stripes;
	bool chunks_used_known;		/* bx_usage_chunk.used is filled */
	/*
	 * The extents of the data chunks, by address (bx_usage_read_dextents()):
	 * where a relocation's extents land depends on them and on the free
	 * space between them.
	 */
	bool dextents_known;
	size_t nr_dextents;
	struct bx_usage_dextent *dextents;
	/* The running kernel's data allocator keeps size classes (6.3 and later). */
	bool kernel_size_classes;
	/*
	 * The running kernel overcommits metadata only beyond the room of one
	 * data chunk (calc_available_free_space(), 6.7 and later).
	 */
	bool kernel_overcommit_keeps_data_chunk;
	/*
	 * The running kernel lets a reservation that may flush overcommit a
	 * 64th of that room, not an eighth (calc_available_free_space(): 7.2
	 * and 7.3 do, 6.18 does not; 6.19 to 7.1 were not tried). The flusher
	 * then forces a metadata chunk at more unallocated space.
	 */
	bool kernel_flush_overcommits_64th;
	/*
	 * The running kernel's cleaner deletes a new block group that nothing
	 * was allocated in, as it deletes one that became empty (6.8 and
	 * later; before, one never used stays until the next mount).
	 */
	bool kernel_cleans_new_block_groups;
	bool have_global_reserve;	/* mounted only */
	uint64_t global_reserve;
	uint64_t global_reserve_used;
	bool have_statfs;		/* mounted only */
	uint64_t statfs_free;		/* f_bavail * f_bsize */
	/*
	 * A balance running, paused or interrupted: while it exists the kernel
	 * gives every new chunk of a kind it converts the target profile
	 * (get_restripe_target), whatever the profiles in use. Per kind: the
	 * type and profile bits of a new chunk (single: the type bit alone),
	 * 0 when that kind is not converted. Mounted from
	 * BTRFS_IOC_BALANCE_PROGRESS, unmounted from the balance item.
	 */
	enum bx_usage_balance balance;
	uint64_t balance_target[BX_USAGE_NR_KINDS];
	/*
	 * The kernel's automatic reclaim (fsops/reclaim.h), mounted only: the
	 * figures leave it out, the commands say what it will do to them.
	 */
	struct bx_reclaim reclaim;
};

/*
 * What the running kernel's release says of its allocator, as BX_ALLOC_*
 * flags (the readers fill bx_usage_input.kernel_flags with it): before 6.9
 * its sort() orders devices with equal free space differently
 * (BX_ALLOC_SORT_PRE_6_9); from 6.2 on, built with -funsigned-char, the
 * hint patches sort data_only devices last for data (BX_ALLOC_DATA_ONLY_LAST).
 */
uint32_t bx_kernel_alloc_flags(void);

/* True when the running kernel is @major.@minor or later (unknown: true). */
bool bx_kernel_at_least(unsigned int major, unsigned int minor);

/* Frees what the input owns (not @in itself). */
void bx_usage_input_release(struct bx_usage_input *in);

/*
 * Reads a mounted filesystem through the mount point (or any path on it)
 * @path. Hints from bx_hint_get() with @sysfs_root (NULL: "/sys"). Needs
 * CAP_SYS_ADMIN for TREE_SEARCH.
 */
int bx_usage_read_mounted(const char *path, const char *sysfs_root, struct bx_usage_input *in);

/*
 * Reads an unmounted filesystem from member devices or image files @paths
 * (other members found by fsid; missing ones allowed). Hints are the stored
 * ones, hints_effective is true (the kernel that mounts it next is assumed
 * to honour them); kernel_hints says whether the running one does, asked
 * through @sysfs_root when a hint is set. Refuses with
 * -EBUSY when the running kernel has the filesystem mounted, so the caller
 * can use the mounted path instead: @mnt (@mnt_len bytes) gets the mount
 * point, or "an unknown mount point" when this namespace does not show it.
 */
int bx_usage_read_offline(char *const *paths, int nr_paths, const char *sysfs_root,
			  struct bx_usage_input *in, char *mnt, size_t mnt_len);

/*
 * Fills bx_usage_chunk.used of a mounted filesystem's input from the block
 * group items (one TREE_SEARCH_V2 per chunk, in the extent tree or the block
 * group tree); the offline reader fills it already. Needs CAP_SYS_ADMIN.
 */
int bx_usage_read_chunk_used(struct bx_usage_input *in);

/*
 * Fills the data chunks' extents of @in (mounted: TREE_SEARCH_V2 on the
 * extent tree; unmounted: the extent tree read from the devices @in->path
 * names), for the planner's relocation. Needs chunks in address order.
 * Returns 0 or a negative errno with the message recorded.
 */
int bx_usage_read_dextents(struct bx_usage_input *in);

/*
 * Reads the filesystem @paths names, mounted or not: a directory (alone) is
 * a mount point, read through the ioctls; otherwise member devices or image
 * files, read offline, or through the mount point when the running kernel
 * has that filesystem mounted and this namespace shows where.
 */
int bx_usage_read(char *const *paths, int nr_paths, const char *sysfs_root,
		  struct bx_usage_input *in);

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

/* The allocator model's view of the input's devices. */
struct bx_usage_model {
	struct bx_alloc_device *devs;	/* one per input device, same order */
	size_t nr;
	struct bx_alloc_params params;	/* nodesize, and the BX_ALLOC_* flags given */
};

/*
 * Builds the model's devices from @in: each device's free ranges are
 * [1 MiB, total_bytes) minus its device extents; missing devices are not
 * writable. Release with bx_usage_model_release(). Returns 0 or -ENOMEM.
 */
int bx_usage_model_init(const struct bx_usage_input *in, uint32_t model_flags,
			struct bx_usage_model *m);
void bx_usage_model_release(struct bx_usage_model *m);

/*
 * The BX_ALLOC_* flags that model the kernel which allocates next: the
 * running one's sort(), and the hint kernels' second sort when a mounted
 * filesystem's kernel honours hints (hints themselves are not turned off).
 */
uint32_t bx_usage_kernel_flags(const struct bx_usage_input *in);

/*
 * What the running kernel overcommits metadata and system reservations on
 * (calc_available_free_space()): the writable devices' @unallocated bytes
 * per copy of the profile (@ncopies), from 6.7 on less the room of one data
 * chunk (10 % of their @rw_bytes, at most 1 GiB). The kernel allows half of
 * it to a reservation that may not flush, an eighth to one that may (a
 * 64th from 7.2 on: kernel_flush_overcommits_64th).
 */
uint64_t bx_usage_overcommit_room(const struct bx_usage_input *in, uint64_t unallocated,
				  uint64_t rw_bytes, int ncopies);

/* Whether chunk @c of @in has a stripe on a seed device (read-only, like the seed). */
bool bx_usage_chunk_on_seed(const struct bx_usage_input *in, const struct bx_usage_chunk *c);

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
	struct bx_usage_space *types;
	uint64_t *allocated;		/* nr_dev_rows x nr_types, the rows' arrays */
};

/*
 * Computes the report for @in; @flags are BX_USAGE_*. Hints are honoured
 * unless BX_USAGE_IGNORE_HINTS or @in->hints_effective is false. Warnings
 * (BX_USAGE_W_*) are also recorded with bx_warn(). Release the report with
 * bx_usage_report_release(). Returns 0, -EINVAL (no device, bad profile
 * bits) or -ENOMEM.
 */
int bx_usage_compute(const struct bx_usage_input *in, unsigned int flags,
		     struct bx_usage_report *rep);
void bx_usage_report_release(struct bx_usage_report *rep);

/* The profile the kernel gives new chunks of @kind (DATA, METADATA, SYSTEM) given
 * the profiles in @spaces and @nr_writable devices: the most redundant one. */
uint64_t bx_usage_alloc_profile(const struct bx_usage_space *spaces, size_t nr_spaces,
				uint64_t kind, size_t nr_writable);

/*
 * The type and profile of a new chunk of @kind (DATA, METADATA, SYSTEM, or
 * DATA | METADATA for mixed block groups) on @in whose space info is
 * @spaces: the target of a balance that converts that kind (data's for
 * mixed, as the kernel checks data first), else bx_usage_alloc_profile().
 */
uint64_t bx_usage_new_chunk_type(const struct bx_usage_input *in,
				 const struct bx_usage_space *spaces, size_t nr_spaces,
				 uint64_t kind, size_t nr_writable);

/*
 * The type and profile bits a balance's convert arguments give new chunks
 * of @kind (a BTRFS_BLOCK_GROUP_* type bit): 0 when @args_flags lacks
 * BTRFS_DISK_BALANCE_ARGS_CONVERT (the same bit in the ioctl's arguments).
 */
uint64_t bx_usage_balance_target(uint64_t kind, uint64_t args_flags, uint64_t target);

/* "running", "paused", "interrupted" or NULL (none). */
const char *bx_usage_balance_name(enum bx_usage_balance balance);

#endif
