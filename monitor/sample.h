/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One sample of a mounted filesystem's space, as `btrfsx monitor record`
 * stores it: the figures of `filesystem usage` (the allocator model's free
 * space and metadata room), per block group type and profile, per device
 * (size, unallocated, allocated per type, hint, the kernel's error
 * counters), the read policy, whether the kernel honours the allocation
 * hints and how many chunks break them, and the last offline scrub's result.
 *
 * Cheap: everything comes from ioctls (FS_INFO, DEV_INFO, SPACE_INFO,
 * TREE_SEARCH on the chunk and device trees and of each block group item,
 * GET_DEV_STATS, GET_FSLABEL) and sysfs; no tree with files in it is walked.
 *
 * Library style: functions return 0 or a negative errno with a message
 * recorded by bx_error(); nothing prints.
 */
#ifndef BTRFSX_MONITOR_SAMPLE_H
#define BTRFSX_MONITOR_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "fsops/mounted-fs.h"

/* One block group type and profile (BTRFS_IOC_SPACE_INFO slot). */
struct bx_mon_space {
	uint64_t flags;			/* BTRFS_BLOCK_GROUP_* type and profile */
	uint64_t total;			/* logical bytes */
	uint64_t used;
};

struct bx_mon_device {
	uint64_t devid;
	char path[1024];		/* "" when missing */
	bool missing;
	uint64_t hint;
	uint64_t size;
	uint64_t unallocated;
	uint64_t data;			/* device bytes allocated to each type */
	uint64_t metadata;
	uint64_t system;
	bool have_errors;		/* the kernel gave its error counters */
	uint64_t errors[BX_DEV_STAT_COUNT];
};

/* The last offline scrub (`btrfsx scrub status --offline`). */
struct bx_mon_scrub {
	bool known;			/* a status file exists */
	char status[32];		/* finished, cancelled, interrupted, running */
	int64_t started;		/* seconds since the epoch */
	double duration;		/* seconds */
	uint64_t bytes_scrubbed;
	uint64_t errors;		/* read, super, verify, csum and parity errors */
	uint64_t corrected;
	uint64_t uncorrectable;
};

/* Chunks that break the allocation hints, as `btrfsx filesystem misplaced` counts them. */
struct bx_mon_misplaced {
	bool known;			/* counted (not for mixed block groups, older samples) */
	uint64_t forbidden_chunks;	/* a stripe where the hint excludes the type */
	uint64_t forbidden_used;	/* logical bytes in use in them */
	uint64_t off_preference_chunks;	/* a worse tier while a better one has room */
	uint64_t off_preference_used;
};

/*
 * The filesystem-wide figures of a sample: what trends and projections use,
 * and what the library's struct btrfsx_monitor_sample and Python's
 * MonitorSample hold (common/fields.h).
 */
#define BX_MON_FIGURES_FIELDS(X)						\
	X(int64_t, time, )	/* seconds since the epoch */			\
	X(uint64_t, device_size, )						\
	X(uint64_t, device_allocated, )						\
	X(uint64_t, used, )	/* bytes in use, as btrfs-progs counts */	\
	X(uint64_t, data_size, )	/* logical, in data block groups */	\
	X(uint64_t, data_used, )						\
	X(uint64_t, metadata_size, )						\
	X(uint64_t, metadata_used, )						\
	X(uint64_t, free_estimated, )						\
	X(uint64_t, free_strict, )						\
	X(bool, have_statfs, )							\
	X(uint64_t, free_statfs, )						\
	X(uint64_t, metadata_room, )						\
	X(uint64_t, metadata_room_after_data, )					\
	X(uint64_t, global_reserve, )						\
	X(uint64_t, global_reserve_used, )

struct bx_mon_figures {
	BX_MON_FIGURES_FIELDS(BX_FIELD_MEMBER)
};

struct bx_mon_sample {
	struct bx_mon_figures fig;
	uint8_t fsid[16];
	char label[256];
	char mountpoint[4096];
	char read_policy[64];		/* the active one; "" when unknown */
	bool have_hints_effective;	/* false in samples of older histories */
	bool hints_effective;		/* the running kernel honours allocation hints */
	struct bx_mon_misplaced misplaced;
	struct bx_mon_scrub scrub;
	size_t nr_spaces;
	struct bx_mon_space *spaces;
	size_t nr_devices;
	struct bx_mon_device *devices;	/* by devid */
};

/*
 * Samples the filesystem mounted at @mountpoint (any path on it) at @time.
 * Sysfs under @sysfs_root (NULL: "/sys"). The scrub part is left unknown:
 * the caller fills it. Needs CAP_SYS_ADMIN (tree search, device
 * statistics). Release with bx_mon_sample_release().
 */
int bx_mon_collect(const char *mountpoint, const char *sysfs_root, int64_t time,
		   struct bx_mon_sample *sample);

/* Frees what @sample owns (not @sample itself). */
void bx_mon_sample_release(struct bx_mon_sample *sample);

#endif
