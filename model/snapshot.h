/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The snapshot of a filesystem: what every model of btrfsx starts from. Its
 * devices with their device extents, its chunks with their stripes (and
 * used bytes, and the data extents when a relocation is modelled), the
 * space infos, the global reserve, a balance that is running, paused or
 * interrupted, whether the hints are honoured, and the kernel whose
 * behaviour the models follow (model/kernel/kernel.h).
 *
 * The readers fill it (fsops/snapshot-read.h: a mounted filesystem through
 * its ioctls, an unmounted one through our reader), a test or a benchmark
 * by hand, the kernel's relocation model from its state
 * (bx_ks_materialize()). The models take it as it is: usage
 * (fsops/usage.h), placement and the misplaced report (model/misplaced.h),
 * the relocation model (model/kernel/state.h), the planner.
 *
 * Pure: structs and the functions that answer from them; no I/O.
 */
#ifndef BTRFSX_MODEL_SNAPSHOT_H
#define BTRFSX_MODEL_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/allocator.h"
#include "model/kernel/kernel.h"
#include "model/placement.h"
#include "model/reclaim.h"

/* The kernel's SPACE_INFO flag of the global block reserve slot. */
#define BX_SPACE_INFO_GLOBAL_RSV (1ULL << 49)

/* A device extent: [start, start + length) on its device, part of a chunk. */
struct bx_snap_extent {
	uint64_t start;
	uint64_t length;
	uint64_t chunk_offset;		/* logical start of its chunk */
};

struct bx_snap_dev {
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
	struct bx_snap_extent *extents;	/* malloc()ed; any order */
};

/* One slot of BTRFS_IOC_SPACE_INFO, or its equivalent summed from block groups. */
struct bx_snap_space {
	uint64_t flags;			/* type | profile, or BX_SPACE_INFO_GLOBAL_RSV */
	uint64_t total_bytes;		/* logical */
	uint64_t used_bytes;		/* logical */
};

struct bx_snap_stripe {
	uint64_t devid;
	uint64_t physical;
};

struct bx_snap_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t type;
	uint32_t num_stripes;
	uint32_t sub_stripes;
	size_t first_stripe;		/* index into bx_snapshot.stripes */
	/*
	 * Logical bytes in use (block group item): known for every chunk when
	 * bx_snapshot.chunks_used_known, and always for a chunk with a
	 * stripe on a seed device (its free space is read-only).
	 */
	uint64_t used;
	size_t first_dextent;		/* data chunks: its extents in bx_snapshot.dextents */
	size_t nr_dextents;
};

/* A data extent (an EXTENT_ITEM): logical bytes [start, start + len). */
struct bx_snap_dextent {
	uint64_t start;
	uint64_t len;
};

/* A balance that changes what profile new chunks get (bx_snapshot.balance). */
enum bx_snap_balance {
	BX_SNAP_BALANCE_NONE,
	BX_SNAP_BALANCE_RUNNING,
	BX_SNAP_BALANCE_PAUSED,
	/* unmounted: its item is on disk; the next mount resumes it (paused with skip_balance) */
	BX_SNAP_BALANCE_INTERRUPTED,
};

/* Indexes of bx_snapshot.balance_target. */
#define BX_SNAP_KIND_DATA 0
#define BX_SNAP_KIND_METADATA 1
#define BX_SNAP_KIND_SYSTEM 2
#define BX_SNAP_NR_KINDS 3

struct bx_snapshot {
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
	size_t nr_devs;
	struct bx_snap_dev *devs;	/* sorted by devid (the kernel's alloc_list order) */
	size_t nr_spaces;
	struct bx_snap_space *spaces;
	size_t nr_chunks;
	struct bx_snap_chunk *chunks;	/* in chunk tree order (by logical) */
	size_t nr_stripes;
	struct bx_snap_stripe *stripes;
	bool chunks_used_known;		/* bx_snap_chunk.used is filled */
	/*
	 * The extents of the data chunks, by address (bx_snapshot_read_dextents()):
	 * where a relocation's extents land depends on them and on the free
	 * space between them.
	 */
	bool dextents_known;
	size_t nr_dextents;
	struct bx_snap_dextent *dextents;
	/*
	 * The kernel whose behaviour the models follow: the running one (the
	 * readers), or one asked for (--kernel). Carried whole: a model that
	 * takes the snapshot asks it (bx_kernel_has()), and a copy of the
	 * snapshot copies it.
	 */
	struct bx_kernel kernel;
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
	enum bx_snap_balance balance;
	uint64_t balance_target[BX_SNAP_NR_KINDS];
	/*
	 * The kernel's automatic reclaim (fsops/reclaim.h), mounted only: the
	 * figures leave it out, the commands say what it will do to them.
	 */
	struct bx_reclaim reclaim;
};

/* Frees what the snapshot owns (not @in itself). */
void bx_snapshot_release(struct bx_snapshot *in);

/* Whether a device of @in has a hint other than data_preferred (the default). */
bool bx_snap_any_hint(const struct bx_snapshot *in);

/* Whether chunk @c of @in has a stripe on a seed device (read-only, like the seed). */
bool bx_snap_chunk_on_seed(const struct bx_snapshot *in, const struct bx_snap_chunk *c);

/* The profile the kernel gives new chunks of @kind (DATA, METADATA, SYSTEM) given
 * the profiles in @spaces and @nr_writable devices: the most redundant one. */
uint64_t bx_snap_alloc_profile(const struct bx_snap_space *spaces, size_t nr_spaces,
			       uint64_t kind, size_t nr_writable);

/*
 * The type and profile of a new chunk of @kind (DATA, METADATA, SYSTEM, or
 * DATA | METADATA for mixed block groups) on @in whose space info is
 * @spaces: the target of a balance that converts that kind (data's for
 * mixed, as the kernel checks data first), else bx_snap_alloc_profile().
 */
uint64_t bx_snap_new_chunk_type(const struct bx_snapshot *in,
				const struct bx_snap_space *spaces, size_t nr_spaces,
				uint64_t kind, size_t nr_writable);

/*
 * The type and profile bits a balance's convert arguments give new chunks
 * of @kind (a BTRFS_BLOCK_GROUP_* type bit): 0 when @args_flags lacks
 * BTRFS_DISK_BALANCE_ARGS_CONVERT (the same bit in the ioctl's arguments).
 */
uint64_t bx_snap_balance_target(uint64_t kind, uint64_t args_flags, uint64_t target);

/* "running", "paused", "interrupted" or NULL (none). */
const char *bx_snap_balance_name(enum bx_snap_balance balance);

/* The allocator model's view of the snapshot's devices. */
struct bx_snap_model {
	struct bx_alloc_device *devs;	/* one per snapshot device, same order */
	size_t nr;
	struct bx_alloc_params params;	/* nodesize, and the BX_ALLOC_* flags given */
};

/*
 * Builds the model's devices from @in: each device's free ranges are
 * [1 MiB, total_bytes) minus its device extents; missing devices are not
 * writable. Release with bx_snap_model_release(). Returns 0 or -ENOMEM.
 */
int bx_snap_model_init(const struct bx_snapshot *in, uint32_t model_flags,
		       struct bx_snap_model *m);
void bx_snap_model_release(struct bx_snap_model *m);

/*
 * The BX_ALLOC_* flags that model the kernel which allocates next: the
 * snapshot's kernel's sort(), and the hint kernels' second sort when a
 * mounted filesystem's kernel honours hints (hints themselves are not
 * turned off).
 */
uint32_t bx_snap_alloc_flags(const struct bx_snapshot *in);

/*
 * The placement model of @in now: the devices, the kernel's allocator
 * flags, the type of a new chunk of each kind. @um owns the devices; @pm
 * points into it. Release @um with bx_snap_model_release().
 */
int bx_snap_place_model(const struct bx_snapshot *in, struct bx_snap_model *um,
			struct bx_place_model *pm);

/* The chunk @c of @in as placement sees it (stripes into @stripes, num_stripes long). */
void bx_snap_place_chunk(const struct bx_snapshot *in, const struct bx_snap_chunk *c,
			 struct bx_place_stripe *stripes, struct bx_place_chunk *out);

#endif
