/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read probe of `read-policy recommend`: the reads a workload would make
 * under a read policy, replayed over the member block devices of a mounted
 * filesystem and timed.
 *
 * A workload is N readers, each with one 64 KiB request in flight, reading
 * sequentially (each its own slice) or at random. The probe reads the copies
 * of RAID1-family chunks the filesystem holds (the used bytes of each chunk
 * from its start: data chunks when there are mirrored ones, else metadata),
 * straight from the block devices at the chunk's physical addresses, with
 * O_DIRECT, read-only. Which copy each read goes to is decided as the
 * kernel's find_live_mirror() decides it (mainline's RAID1 read policies):
 *  - pid: the copy at index (pid % copies) in the chunk's stripe order; the
 *    probe's readers stand for N processes with consecutive pids;
 *  - round-robin:<bytes>: the blocks read since counting began, divided by
 *    <bytes> in sectors, modulo the copies sorted by devid, once per request;
 *  - devid:<devid>: that device's copy, or the chunk's first copy.
 * RAID10 chooses between the two copies of each 64 KiB stripe so.
 *
 * Library style: nothing prints or exits; negative errno with bx_error().
 */
#ifndef BTRFSX_RECOMMEND_PROBE_H
#define BTRFSX_RECOMMEND_PROBE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsops/io-stats.h"
#include "fsops/read-policy.h"
#include "fsops/usage.h"

/* The size of every probe read, the request of the workloads. */
#define BX_PROBE_REQUEST (64u * 1024)
/* The stripe of RAID10 (BTRFS_STRIPE_LEN). */
#define BX_PROBE_STRIPE (64u * 1024)
#define BX_PROBE_MAX_READERS 64

struct bx_probe_workload {
	unsigned int readers;
	bool random;
};

/* A copy of a chunk: the device (index into bx_probe_map.devs) and where. */
struct bx_probe_stripe {
	size_t dev;
	uint64_t devid;
	uint64_t physical;
};

/* A mirrored chunk the probe reads: [start, start + length) of the region. */
struct bx_probe_chunk {
	uint64_t start;
	uint64_t length;        /* its used bytes, whole requests */
	bool raid10;
	uint32_t num_stripes;
	uint32_t sub_stripes;   /* copies of a RAID10 stripe */
	struct bx_probe_stripe *stripes;
};

/* A member device the probe reads. */
struct bx_probe_dev {
	uint64_t devid;
	char path[1024];
	int fd;                 /* O_RDONLY | O_DIRECT while probing; -1 otherwise */
	char stat_path[PATH_MAX + 64];  /* "" when the block device has no stat */
};

/* What the probe reads: the region and the devices holding it. */
struct bx_probe_map {
	uint32_t sectorsize;
	bool metadata;          /* the region is metadata: no mirrored data chunk */
	uint64_t length;        /* of the region */
	size_t nr_mirrored;     /* RAID1-family chunks, also those holding nothing */
	uint32_t max_copies;
	size_t nr_chunks;
	struct bx_probe_chunk *chunks;
	size_t nr_devs;
	struct bx_probe_dev *devs;
};

/*
 * The region of @in (read with chunks' used bytes): its RAID1, RAID1C3,
 * RAID1C4 and RAID10 data chunks, or metadata ones when no data chunk is
 * mirrored (not when the mirrored data chunks hold nothing yet). Returns 0 with nr_chunks 0 when there is none (the policy
 * changes no read). Missing devices' copies are left out. Free with
 * bx_probe_map_free(). Mirrored chunks that hold less than a request (or a
 * missing device's copy) count in nr_mirrored, not in the region.
 */
int bx_probe_map_build(const struct bx_snapshot *in, const char *sysfs_root,
		       struct bx_probe_map *map);
void bx_probe_map_free(struct bx_probe_map *map);

/*
 * Where a read of the region at @offset goes under @policy: the device index
 * and its physical address. @pid stands for the reader's process id;
 * @blocks_read is round-robin's count of sectors read so far. Pure.
 */
void bx_probe_route(const struct bx_probe_map *map, const struct bx_rp_value *policy,
		    uint64_t offset, unsigned int pid, uint64_t blocks_read, size_t *dev,
		    uint64_t *physical);

/* What one timed replay read, per device too (indexes of the map's devs). */
struct bx_probe_result {
	uint64_t bytes;                /* as a job of equal parts per reader would, warm */
	double seconds;
	uint64_t *dev_bytes;           /* map->nr_devs entries: what the probe read */
	uint64_t *other_read_bytes;    /* ... what others read meanwhile (stat) */
	uint64_t *other_write_bytes;   /* ... and wrote */
};

int bx_probe_result_init(struct bx_probe_result *r, size_t nr_devs);
void bx_probe_result_free(struct bx_probe_result *r);

/*
 * The bytes a job of equal parts per reader would have read in the time the
 * readers read @bytes (@readers rows of @nr_devs: what each read from each
 * device). Each reader's part goes to the devices in the proportions its own
 * reads went, so device d carries share_d of the job, and the job ends when
 * the device with the most of it for its pace does. The bytes read until a
 * deadline alone would count what a fast device's readers read while the
 * others' wait: pid sending 3 of 8 readers to an SSD scored as the SSD, while
 * a job of 8 equal parts waits for the 5 on the slower disks. Never more than
 * the bytes read; as many when every reader split its reads alike. Pure.
 */
uint64_t bx_probe_equal_parts(const uint64_t *bytes, unsigned int readers, size_t nr_devs);

/*
 * A reader's row for bx_probe_equal_parts(): what it would have read from
 * each device in @replay_seconds at the pace of its warm reads, those of
 * @warm (its reads but the cold ones, which took @cold_seconds of its
 * @seconds). A sequential reader's first read from each device seeks to its
 * slice: a job of many seconds pays that once, a replay of a fraction of one
 * (30 s for 64 replays) pays it in full, and more for a policy spreading one
 * reader over more devices (on RAID10's 4 disks, 2 cold reads of ~0.1 s
 * each took most of a pid replay of 0.23 s). A reader with no warm read
 * keeps @all, what it read. Pure.
 */
void bx_probe_warm_row(const uint64_t *all, const uint64_t *warm, size_t nr_devs, double seconds,
		       double cold_seconds, double replay_seconds, uint64_t *row);

/*
 * Opens the devices (read-only, O_DIRECT) for bx_probe_replay(); closed by
 * bx_probe_map_free().
 */

int bx_probe_open(struct bx_probe_map *map);

/*
 * Replays @w under @policy for @seconds and adds what it read to @r. @pid_base
 * is the pid of the first reader (the others follow it); @pass makes each
 * replay read other places (sequential readers start further on, random
 * ones draw other offsets), so a disk's cache does not serve what an earlier
 * replay read. Stops early with -EINTR once *@cancel is set (may be NULL).
 */
int bx_probe_replay(struct bx_probe_map *map, const struct bx_probe_workload *w,
		    const struct bx_rp_value *policy, unsigned int pid_base, unsigned int pass,
		    double seconds, const volatile sig_atomic_t *cancel,
		    struct bx_probe_result *r);

#endif
