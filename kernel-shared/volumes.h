/*
 * An opened filesystem: its member devices, the chosen superblock and the
 * chunk map (logical -> physical for every profile).
 */
#ifndef BTRFSX_VOLUMES_H
#define BTRFSX_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel-shared/ctree.h"
#include "kernel-shared/profiles.h"
#include "kernel-shared/write-plan.h"

struct bx_block_cache;
struct bx_unflushed;

/* Chunks with more stripes than this are refused (no real array has them). */
#define BX_MAX_STRIPES 256

/* Why a superblock copy was rejected, or BX_SB_OK. */
enum bx_sb_status {
	BX_SB_OK,
	BX_SB_BEYOND_DEVICE,
	BX_SB_READ_ERROR,
	BX_SB_TIMEOUT,                /* the read did not complete: the device stalls */
	BX_SB_BAD_MAGIC,
	BX_SB_BAD_CSUM_TYPE,
	BX_SB_BAD_CSUM,
	BX_SB_BAD_BYTENR,
};

const char *bx_sb_status_str(enum bx_sb_status status);

struct bx_device {
	uint64_t devid;
	char *path;
	int fd;
	bool writable;
	uint64_t size;                /* bytes the device or file really has */
	struct btrfs_dev_item item;   /* from the chunk tree once it is read */
	struct btrfs_super_block sb;  /* this device's newest valid copy */
	int sb_mirror;                /* which copy that was */
	enum bx_sb_status sb_status[BTRFS_SUPER_MIRROR_MAX];
	uint64_t sb_generation[BTRFS_SUPER_MIRROR_MAX];
};

struct bx_chunk_stripe {
	uint64_t devid;
	uint64_t physical;
	struct bx_device *dev;        /* NULL when the device is missing */
};

struct bx_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t type;
	uint64_t stripe_len;
	int num_stripes;
	int sub_stripes;
	struct bx_chunk_stripe stripes[];
};

struct bx_chunk_map {
	struct bx_chunk **chunks;     /* sorted by logical */
	size_t nr;
	size_t alloc;
};

/* One copy of a logical range on one device. */
struct bx_stripe_loc {
	struct bx_device *dev;        /* NULL when the device is missing */
	uint64_t devid;
	uint64_t physical;
};

/*
 * A RAID5/6 full stripe: its data stripes in logical order, then P, then Q
 * (RAID6), each with where it lives for the row holding the address asked for.
 */
struct bx_full_stripe {
	uint64_t logical_start;       /* logical address of data stripe 0's row */
	uint64_t stripe_len;
	int nr_data;
	int nr_parity;
	struct bx_stripe_loc stripes[BX_MAX_STRIPES];
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
	bool readahead;               /* forward readahead on tree walks */
	bool bad_mirrors_counted;     /* the caller (scrub) reports bad copies: no warning */
	unsigned int flags;
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
 * Other members are found by fsid through libblkid unless BX_OPEN_NO_SCAN.
 * Reads superblocks, the system chunk array and the chunk tree, so every
 * logical address can be mapped. Returns 0 and *out, or a negative errno
 * with a message (bx_error_message) naming the device and the reason.
 */
int bx_fs_open(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags);
void bx_fs_close(struct bx_fs *fs);

/* Reads and validates superblock copy @mirror of an open file descriptor. */
enum bx_sb_status bx_read_super_copy(int fd, uint64_t dev_size, int mirror,
				     struct btrfs_super_block *sb);

/* Asks the kernel to start reading every superblock copy of an open descriptor (no wait). */
void bx_readahead_super_copies(int fd);

struct bx_device *bx_fs_device(struct bx_fs *fs, uint64_t devid);
const struct bx_chunk *bx_chunk_lookup(const struct bx_fs *fs, uint64_t logical);

/* Number of copies a logical address has (RAID5/6: 2 or 3, counting rebuilds). */
int bx_num_copies(const struct bx_fs *fs, uint64_t logical);

/*
 * Where copy @mirror (1-based) of @logical lives. *len is cut to what stays
 * contiguous on that device. RAID5/6 map mirror 1 to the data stripe; higher
 * mirrors are rebuilds, see bx_map_full_stripe. Returns 0, -ENOENT when no
 * chunk holds @logical, -EINVAL for a mirror that does not exist.
 */
int bx_map_logical(const struct bx_fs *fs, uint64_t logical, uint64_t *len, int mirror,
		   struct bx_stripe_loc *loc);

/* The RAID5/6 full stripe row holding @logical. */
int bx_map_full_stripe(const struct bx_fs *fs, uint64_t logical, struct bx_full_stripe *fstripe);

/* Type name ("data", "metadata", "system", "data+metadata") of chunk type bits. */
const char *bx_block_group_type_name(uint64_t type);

/* Iterates the items of a system chunk array; for the parser and its fuzzer. */
int bx_parse_sys_chunk_array(const struct btrfs_super_block *sb,
			     int (*fn)(void *arg, const struct btrfs_key *key,
				       const struct btrfs_chunk *chunk, size_t size),
			     void *arg);

/* Validates a chunk item of @size bytes; returns 0 or -EUCLEAN with a message. */
int bx_check_chunk_item(const struct btrfs_chunk *chunk, size_t size, uint32_t sectorsize);

int bx_chunk_map_insert(struct bx_fs *fs, uint64_t logical, const struct btrfs_chunk *chunk);

#endif
