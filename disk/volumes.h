/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An opened filesystem: its member devices, the chosen superblock and the
 * chunk map (logical -> physical for every profile).
 */
#ifndef BTRFSX_VOLUMES_H
#define BTRFSX_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ctree.h"
#include "disk/chunk.h"
#include "disk/super.h"
#include "disk/write-plan.h"

struct bx_block_cache;
struct bx_unflushed;

struct bx_device {
	uint64_t devid;
	char *path;
	int fd;
	bool writable;
	unsigned int io_timeout;      /* seconds a request waits (disk/timed-io.h); 0: forever */
	/*
	 * A device of a seed filesystem this one was sprouted from (btrfstune
	 * -S 1, then device add): its superblock has the seed's fsid and
	 * generation, its tree blocks the seed's fsid; never written, never
	 * allocated from (the kernel keeps it read-only).
	 */
	bool seed;
	bool listed;                  /* the chunk tree has its device item */
	uint64_t size;                /* bytes the device or file really has */
	struct btrfs_dev_item item;   /* from the chunk tree once it is read */
	struct btrfs_super_block sb;  /* this device's newest valid copy */
	int sb_mirror;                /* which copy that was */
	enum bx_sb_status sb_status[BTRFS_SUPER_MIRROR_MAX];
	uint64_t sb_generation[BTRFS_SUPER_MIRROR_MAX];
};

enum bx_open_flags {
	BX_OPEN_WRITE = 1 << 0,       /* open devices read-write */
	BX_OPEN_NO_SCAN = 1 << 1,     /* use only the named devices */
	BX_OPEN_DEGRADED = 1 << 2,    /* allow missing devices */
	BX_OPEN_SB_ONLY = 1 << 3,     /* stop after the superblocks */
	BX_OPEN_EXCL = 1 << 4,        /* claim every member: O_EXCL, flock (fsops/offline.h) */
};

struct bx_fs {
	uint8_t fsid[BTRFS_FSID_SIZE];
	uint8_t metadata_uuid[BTRFS_FSID_SIZE]; /* what tree blocks carry */
	struct btrfs_super_block sb;  /* the newest across devices */
	uint64_t sb_devid;            /* the device it came from */
	unsigned int csum_type;
	size_t csum_size;
	uint32_t nodesize;
	uint32_t sectorsize;
	struct bx_device **devs;
	size_t nr_devs;
	uint64_t nr_missing;
	struct bx_chunk_map chunks;
	struct bx_block_cache *cache;
	unsigned int io_timeout;      /* every member's: bx_fs_open_timed() */
	bool readahead;               /* forward readahead on tree walks */
	bool bad_mirrors_counted;     /* the caller (scrub) reports bad copies: no warning */
	unsigned int flags;
	size_t nr_seed_fsids;         /* the seed filesystems' fsids, as their tree blocks carry */
	uint8_t (*seed_fsids)[BTRFS_FSID_SIZE];
	char scan_failures[512];      /* members found by fsid that could not be opened */
	bool member_busy;             /* ... one because another program holds it */
	uint64_t nr_writes;           /* writes done through the write path */
	struct bx_write_plan writes;  /* who may write, crash tests; all zero: writes, no faults */
	struct bx_unflushed *unflushed; /* with a plan that drops: what they overwrote */
	size_t nr_unflushed;
	uint64_t first_unflushed_write; /* the write the oldest of them belongs to */
};

struct stat;

/*
 * 0 when @st (from stat) is something a member can be: a block device or an
 * image file; else the error naming @path. Checked before opening, because
 * opening a FIFO blocks.
 */
int bx_check_member_type(const struct stat *st, const char *path);

/*
 * Opens a block device or image file read-only, whatever it holds (for
 * looking at superblock copies that may all be bad): *@fd and its *@size.
 */
int bx_open_raw(const char *path, int *fd, uint64_t *size);

/*
 * Opens the filesystem that the devices or image files at @paths belong to.
 * Other members are found by fsid unless BX_OPEN_NO_SCAN: block devices
 * through libblkid, image files beside the named ones (same directory).
 * A seed device may be named with its sprout (the filesystem is the
 * sprout's), or is found by the seed's fsid the chunk tree's device item
 * gives. Reads superblocks, the system chunk array and the chunk tree, so
 * every logical address can be mapped. Returns 0 and *out, or a negative
 * errno with a message (bx_error_message) naming the device and the reason.
 */
int bx_fs_open(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags);

/*
 * bx_fs_open() whose requests to the devices (reads and writes, members
 * found by scanning included) give up after @io_timeout seconds (0: wait
 * forever); bx_fs_open() waits BX_IO_TIMEOUT_DEFAULT.
 */
int bx_fs_open_timed(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags,
		     unsigned int io_timeout);
void bx_fs_close(struct bx_fs *fs);

struct bx_device *bx_fs_device(struct bx_fs *fs, uint64_t devid);

/*
 * A member shorter than the size its device item claims (a truncated image,
 * a shrunk partition): the kernel refuses to mount such a filesystem. The
 * readers refuse it and so do the writers, with this one message ("devid 2:
 * the device item claims 536870912 bytes, but b.img has 314572800") in
 * @buf; false when @dev is as long as @claimed.
 */
bool bx_device_short(const struct bx_device *dev, uint64_t claimed, char *buf, size_t len);

/* -EUCLEAN with bx_device_short()'s message for the first short member; else 0. */
int bx_fs_check_member_sizes(const struct bx_fs *fs);

/* Whether a tree block whose header carries @fsid belongs here (this filesystem or a seed). */
bool bx_fs_block_fsid_ok(const struct bx_fs *fs, const uint8_t *fsid);
#endif
