/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The chunk allocator model: which devices, where on them and how large the
 * next chunk of a given type would be, as the kernel decides it, with and
 * without allocation hints.
 *
 * Pure functions: structures in, decisions out. No I/O, no printing, no exit,
 * no global state. Errors are negative errno values.
 *
 * Modelled kernel: Linux 6.18 (fs/btrfs/volumes.c btrfs_create_chunk(),
 * gather_device_info(), find_free_dev_extent(), decide_stripe_size_regular(),
 * create_chunk(); fs/btrfs/space-info.c calc_chunk_size(); lib/sort.c). The
 * same rules hold from 6.0 on; kernels before 6.9 order devices that tie on
 * both sort keys differently, see BX_ALLOC_SORT_PRE_6_9. Regular (non-zoned)
 * allocation only.
 *
 * Devices are given in the order of the kernel's alloc_list: ascending devid
 * after a mount (the device list is sorted by devid before the devices are
 * opened); a device added since the mount is at the front. The order only
 * matters for devices that tie exactly on largest hole and unallocated bytes.
 */
#ifndef BTRFSX_ALLOCATOR_H
#define BTRFSX_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ctree.h"
#include "format/hints.h"
#include "format/profiles.h"

/* The first MiB of every device is never allocated (BTRFS_DEVICE_RANGE_RESERVED). */
#define BX_ALLOC_RESERVED (1024 * 1024ULL)

/* Tiers: 1 is used first; BX_TIER_NEVER means the hint excludes the device. */
#define BX_TIER_NEVER 0
#define BX_TIER_LAST 4

/* bx_alloc_params.flags */
#define BX_ALLOC_IGNORE_HINTS (1U << 0)	/* plain mainline, whatever the hints */
#define BX_ALLOC_STRICT (1U << 1)	/* *_preferred treated as *_only */
#define BX_ALLOC_SORT_PRE_6_9 (1U << 2)	/* lib/sort.c heapsort of 5.2 .. 6.8 */
/*
 * The kernel runs the hint allocator (V12 or kakra's series): it sorts the
 * devices a second time, by free space alone, even with no hint set and for
 * mixed block groups. Devices with equal free space then end up in another
 * order than on mainline.
 */
#define BX_ALLOC_HINT_KERNEL (1U << 3)
/*
 * The hint patches keep each hint's priority in a char map where data_only
 * is -1, negated for data chunks. Linux 6.2 and later build with
 * -funsigned-char: -1 is 255 there, and data_only devices come last for data
 * (after data_preferred, metadata_preferred, none) instead of first. The
 * V12 series and the ports of both series to 6.12 behave so; the flag models
 * it (metadata's order and every exclusion stay as they are).
 */
#define BX_ALLOC_DATA_ONLY_LAST (1U << 4)

/* bx_alloc_chunk.flags */
#define BX_ALLOC_F_HINTS (1U << 0)	  /* hints decided the device set */
#define BX_ALLOC_F_UNKNOWN_HINT (1U << 1) /* a device has a hint value > 4 */
/*
 * A device of a worse tier than the best one among the writable devices
 * (full or not) was used: the preferred devices are full or too few.
 */
#define BX_ALLOC_F_FALLBACK (1U << 2)

struct bx_alloc_hole {
	uint64_t start;
	uint64_t len;
};

/*
 * One device as the allocator sees it.
 *
 * holes: the unallocated ranges, sorted by start and not overlapping. Parts
 * below BX_ALLOC_RESERVED or beyond total_bytes are ignored. The array is
 * owned by the device: it is malloc()ed, grown by bx_alloc_device_add_extent()
 * and bx_alloc_apply(), and freed by bx_alloc_device_release(). Fill it with
 * the bx_alloc_device_*() helpers (or malloc() it yourself and set holes_cap).
 *
 * bytes_used: bytes in device extents, as in btrfs_dev_item.bytes_used; the
 * kernel's "total_avail" (its second sort key) is total_bytes - bytes_used.
 */
struct bx_alloc_device {
	uint64_t devid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint64_t hint;		/* BX_HINT_*; hint field of dev_item.type */
	bool writable;		/* false: not in the kernel's alloc_list */
	size_t nr_holes;
	size_t holes_cap;
	struct bx_alloc_hole *holes;
};

struct bx_alloc_params {
	/*
	 * Writable filesystem size (the kernel's total_rw_bytes) for the 10%
	 * chunk limit and the 50 GiB metadata chunk threshold; 0: the sum of
	 * total_bytes over the writable devices.
	 */
	uint64_t fs_total_bytes;
	uint32_t nodesize;	/* for the device limit of a chunk; 0: 16384 */
	uint32_t flags;		/* BX_ALLOC_* */
};

struct bx_alloc_stripe {
	uint64_t devid;
	uint64_t physical;	/* start of the device extent */
	uint32_t dev_index;	/* index into the device array */
};

/* A chunk: decided by bx_alloc_decide() or one step of a simulation. */
struct bx_alloc_chunk {
	uint64_t type;		/* BTRFS_BLOCK_GROUP_* type and profile bits */
	uint64_t length;	/* logical size (what the chunk stores) */
	uint64_t stripe_size;	/* size of each device extent */
	uint32_t num_stripes;
	uint32_t ndevs;		/* devices used; num_stripes / ndevs stripes each */
	uint32_t sub_stripes;
	uint32_t flags;		/* BX_ALLOC_F_* */
	uint32_t tiers;		/* bit t set: a device of tier t is used (hints only) */
	struct bx_alloc_stripe *stripes;	/* num_stripes, in the kernel's stripe order */
};

/* What a chunk of one type may be on a given filesystem (alloc_chunk_ctl). */
struct bx_alloc_limits {
	struct bx_raid_attr raid;
	uint64_t max_stripe_size;
	uint64_t max_chunk_size;	/* after the 10% rule */
	uint64_t dev_extent_min;	/* 64 KiB per stripe on the device */
	uint64_t dev_extent_want;	/* max_stripe_size * dev_stripes */
	int devs_max;			/* the effective limit */
};


/*
 * Limits for a chunk of @type on a filesystem of @fs_total_bytes writable
 * bytes with @nodesize (0: 16384). Returns: 0 or -EINVAL (bad profile bits,
 * or no type bit).
 */
int bx_alloc_limits(uint64_t type, uint64_t fs_total_bytes, uint32_t nodesize,
		    struct bx_alloc_limits *limits);

/*
 * Tier of a device with hint value @hint for a chunk of @type, honouring
 * BX_ALLOC_STRICT in @flags: 1..4, or BX_TIER_NEVER. Mixed block groups and
 * unknown values get the data_preferred tier (*unknown set for the latter;
 * @unknown may be NULL).
 */
int bx_alloc_hint_tier(uint64_t hint, uint64_t type, uint32_t flags, bool *unknown);

/* Device helpers. init: one hole [1 MiB, total_bytes); returns 0 or -ENOMEM. */
int bx_alloc_device_init(struct bx_alloc_device *dev, uint64_t devid,
			 uint64_t total_bytes, uint64_t hint);
/*
 * Replaces the holes with a copy of @holes (any order; overlapping and
 * adjacent ones are merged, clipped to [1 MiB, total_bytes)) and sets
 * bytes_used to total_bytes - 1 MiB - the free bytes, i.e. assumes nothing is
 * allocated in the first MiB. Returns 0, -EINVAL or -ENOMEM.
 */
int bx_alloc_device_set_holes(struct bx_alloc_device *dev,
			      const struct bx_alloc_hole *holes, size_t nr);
/*
 * Sets the holes to [1 MiB, total_bytes) minus the device extents @extents
 * (sorted here, in place), as bx_alloc_device_set_holes does with holes.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int bx_alloc_device_set_extents(struct bx_alloc_device *dev, struct bx_alloc_hole *extents,
				size_t nr);
/*
 * Marks [start, start + len) allocated (a device extent): removes it from the
 * holes and adds len to bytes_used. Returns 0, -EINVAL (len 0 or overflow),
 * -EEXIST (overlaps no hole completely: part of it is not free above 1 MiB)
 * or -ENOMEM. Extents below 1 MiB are accepted and only counted.
 */
int bx_alloc_device_add_extent(struct bx_alloc_device *dev, uint64_t start, uint64_t len);
/*
 * Frees [start, start + len) again (a device extent that went away): the
 * range becomes a hole, merged with its neighbours, and len leaves
 * bytes_used. Returns 0, -EINVAL (len 0 or overflow), -EEXIST (part of it is
 * free already) or -ENOMEM. Parts below 1 MiB or beyond total_bytes are only
 * counted.
 */
int bx_alloc_device_remove_extent(struct bx_alloc_device *dev, uint64_t start, uint64_t len);
/* Sum of the holes (the device's unallocated bytes above 1 MiB). */
uint64_t bx_alloc_device_unallocated(const struct bx_alloc_device *dev);
void bx_alloc_device_release(struct bx_alloc_device *dev);

/*
 * Decides the next chunk of @type on @devs (nothing is changed). On success
 * @chunk->stripes is malloc()ed; free it with bx_alloc_chunk_release().
 * Returns: 0; -ENOSPC when no chunk fits (too few devices with at least the
 * minimum device extent free, hints included); -EINVAL for a bad type;
 * -ENOMEM.
 */
int bx_alloc_decide(const struct bx_alloc_device *devs, size_t nr_devs, uint64_t type,
		    const struct bx_alloc_params *params, struct bx_alloc_chunk *chunk);
void bx_alloc_chunk_release(struct bx_alloc_chunk *chunk);

/*
 * Applies @chunk to @devs: every stripe becomes a device extent
 * (bx_alloc_device_add_extent() on stripe.dev_index). Returns 0 or the first
 * error (the devices before it are already changed).
 */
int bx_alloc_apply(struct bx_alloc_device *devs, size_t nr_devs,
		   const struct bx_alloc_chunk *chunk);

/*
 * Running the model forward. A simulation copies the devices and then
 * allocates chunks one after the other, each exactly as bx_alloc_decide() +
 * bx_alloc_apply() would. A decided chunk costs about O(ndevs) (plus a
 * heapsort when devices tie in a new pattern, plus O(log holes) per device
 * used); once a run of chunks is proven to repeat (round-robins, a device
 * levelling down to the next one), the repetitions cost O(devices used)
 * each. Filling 1 PiB over 24 devices takes a few hundredths of a second.
 */
struct bx_alloc_sim;

int bx_alloc_sim_new(const struct bx_alloc_device *devs, size_t nr_devs,
		     const struct bx_alloc_params *params, struct bx_alloc_sim **simp);
/*
 * Allocates one chunk of @type. @chunk may be NULL; otherwise it is filled and
 * its stripes point into the simulation, valid until the next step or free.
 * Returns 0, -ENOSPC (nothing changed), -EINVAL.
 */
int bx_alloc_sim_step(struct bx_alloc_sim *sim, uint64_t type, struct bx_alloc_chunk *chunk);
/* Unallocated bytes (above 1 MiB) left on device @index of the simulation. */
uint64_t bx_alloc_sim_unallocated(const struct bx_alloc_sim *sim, size_t index);
void bx_alloc_sim_free(struct bx_alloc_sim *sim);

struct bx_alloc_sim_result {
	uint64_t logical_bytes;		/* sum of chunk lengths: what @type can store */
	uint64_t physical_bytes;	/* sum of device extents allocated */
	uint64_t nr_chunks;
	uint32_t flags;			/* BX_ALLOC_F_* of all chunks or'ed */
	/* only when asked for: the chunks in order, stripes in one pool */
	struct bx_alloc_chunk *chunks;
	struct bx_alloc_stripe *stripe_pool;
};

/*
 * Allocates chunks of @type until ENOSPC, starting from @devs (not changed).
 * With @record the chunk list is returned too. Free with
 * bx_alloc_sim_result_release(). Returns 0 (also when not even one chunk
 * fits), -EINVAL or -ENOMEM.
 */
int bx_alloc_simulate(const struct bx_alloc_device *devs, size_t nr_devs, uint64_t type,
		      const struct bx_alloc_params *params, bool record,
		      struct bx_alloc_sim_result *result);
void bx_alloc_sim_result_release(struct bx_alloc_sim_result *result);

#endif
