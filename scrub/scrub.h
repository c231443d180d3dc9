/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Offline scrub: verify, and unless read-only repair, every copy of every
 * block of an unmounted filesystem.
 *
 * What is checked, per device (each device reads its own copies, devices in
 * parallel, in large sequential batches with io_uring):
 * - every superblock copy that fits on the device (checksum, bytenr, magic,
 *   fsid, generation);
 * - every tree block the extent tree lists, on every mirror (checksum,
 *   bytenr, fsid, chunk tree uuid, generation against the extent item and the
 *   superblock, level, owner, item bounds, key order);
 * - every data sector that has a checksum, on every mirror; data without one
 *   (nodatasum, preallocated) is counted in no_csum;
 * - RAID5/6: each full stripe is read once across its devices, data sectors
 *   are verified, and P (and Q) are recomputed and compared.
 *
 * Repair (unless read-only): a bad copy is overwritten with a good one from
 * another mirror or a RAID5/6 rebuild, through the write path, in batches
 * with one flush per device each (scrub-repair.c). Writing a good copy over
 * a bad one can only make it good, and a batch's copies never overlap, so a
 * crash in the middle loses nothing and the next run finishes the job; a
 * repair counts as corrected once its copy is written, flushed and read back. A RAID5/6 data sector is rebuilt before its
 * parity is touched; parity is rewritten only when every data sector of its
 * column is good.
 *
 * The counters carry the kernel's names and meaning (struct
 * btrfs_scrub_progress), so the numbers equal what `btrfs scrub start -B -R`
 * reports for the same filesystem: bytes and errors are counted per sector
 * (a 16 KiB tree block with a bad checksum is 4 verify_errors with 4 KiB
 * sectors), extents per 64 KiB stripe they overlap, every copy on the device
 * that holds it. Two btrfsx counters have no kernel equivalent: parity_errors
 * (RAID5/6 P/Q sectors that disagreed with their data; the kernel rewrites
 * them without counting) and super_corrected.
 *
 * Memory stays bounded whatever the filesystem size: fixed-size read buffers
 * per device, a small block cache per thread, capped error records.
 *
 * Library style: nothing is printed; progress goes to a callback, a cancel
 * flag stops the run, the result is returned.
 */
#ifndef BTRFSX_SCRUB_H
#define BTRFSX_SCRUB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "common/fields.h"
#include "disk/volumes.h"

/*
 * The kernel's counters (same names, same units), and btrfsx's extras: the
 * one list that struct bx_scrub_counters, the library's struct
 * btrfsx_scrub_counters, Python's ScrubCounters and the status file follow
 * (common/fields.h).
 */
#define BX_SCRUB_COUNTERS_FIELDS(X)		\
	X(uint64_t, data_extents_scrubbed, )	\
	X(uint64_t, tree_extents_scrubbed, )	\
	X(uint64_t, data_bytes_scrubbed, )	\
	X(uint64_t, tree_bytes_scrubbed, )	\
	X(uint64_t, read_errors, )		\
	X(uint64_t, csum_errors, )		\
	X(uint64_t, verify_errors, )		\
	X(uint64_t, no_csum, )			\
	X(uint64_t, csum_discards, )		\
	X(uint64_t, super_errors, )		\
	X(uint64_t, malloc_errors, )		\
	X(uint64_t, uncorrectable_errors, )	\
	X(uint64_t, unverified_errors, )	\
	X(uint64_t, corrected_errors, )		\
	X(uint64_t, last_physical, )		\
	/* btrfsx only */			\
	X(uint64_t, parity_errors, )		\
	X(uint64_t, super_corrected, )

struct bx_scrub_counters {
	BX_SCRUB_COUNTERS_FIELDS(BX_FIELD_MEMBER)
};

/* One counter's name and place, for printing and parsing them all from one table. */
struct bx_scrub_counter_desc {
	const char *name;
	size_t offset;
};

extern const struct bx_scrub_counter_desc bx_scrub_counter_table[];
extern const size_t bx_scrub_nr_counters;

static inline uint64_t *bx_scrub_counter(struct bx_scrub_counters *c, size_t i)
{
	return (uint64_t *)((char *)c + bx_scrub_counter_table[i].offset);
}

/* Adds @src to @dst; last_physical takes the larger. */
void bx_scrub_counters_add(struct bx_scrub_counters *dst, const struct bx_scrub_counters *src);

enum bx_scrub_what {
	BX_SCRUB_DATA,
	BX_SCRUB_TREE,
	BX_SCRUB_SUPER,
	BX_SCRUB_PARITY,
};

enum bx_scrub_fault {
	BX_SCRUB_READ_ERROR,        /* the device failed or ended early */
	BX_SCRUB_CSUM_ERROR,        /* data checksum (or tree block bytenr, as the kernel counts) */
	BX_SCRUB_VERIFY_ERROR,      /* tree block header or content */
	BX_SCRUB_SUPER_ERROR,
	BX_SCRUB_PARITY_ERROR,
};

enum bx_scrub_fix {
	BX_SCRUB_CORRECTED,         /* rewritten from a good copy */
	BX_SCRUB_CORRECTABLE,       /* a good copy exists; read-only run, nothing written */
	BX_SCRUB_UNCORRECTABLE,     /* no good copy, or the rewrite failed */
};

/*
 * One bad copy: which block, where, what was wrong, what became of it. The
 * list is what struct btrfsx_scrub_error and Python's ScrubError take as it
 * is (common/fields.h); the enums become names, the reason a copy.
 */
#define BX_SCRUB_ERROR_FIELDS(X)							\
	X(uint64_t, logical, )	/* first byte of the bad range (super: its offset) */	\
	X(uint32_t, len, )	/* bytes */						\
	X(uint64_t, devid, )								\
	X(uint64_t, physical, )								\
	X(int, mirror, )	/* 1-based copy; 0 for superblocks and parity */

struct bx_scrub_error {
	enum bx_scrub_what what;
	enum bx_scrub_fault fault;
	enum bx_scrub_fix fix;
	BX_SCRUB_ERROR_FIELDS(BX_FIELD_MEMBER)
	const char *reason;         /* static text: "checksum mismatch", ... */
	uint64_t extent_start;      /* data: the extent holding it (to find the files) */
	uint64_t extent_len;
	uint64_t owner;             /* tree blocks: header owner when readable */
};

/*
 * A file that an uncorrectable data error lies in. The list is what struct
 * btrfsx_scrub_file and Python's ScrubFile take as it is; the path is copied.
 */
#define BX_SCRUB_FILE_FIELDS(X)	\
	X(uint64_t, logical, )	\
	X(uint64_t, root, )	\
	X(uint64_t, inode, )	\
	X(uint64_t, offset, )	/* of the bad byte in the file */

struct bx_scrub_file {
	BX_SCRUB_FILE_FIELDS(BX_FIELD_MEMBER)
	char *path;                 /* from the top-level subvolume; NULL if not resolved */
};

/*
 * What struct btrfsx_scrub_device and Python's ScrubDevice take as it is.
 * short_bytes: how much shorter the device is than its device item says (a
 * truncated image, a shrunk partition; the kernel does not mount such a
 * filesystem). What the chunks place beyond its end is not read: one
 * finding, not a read error per sector, and nothing is written there.
 */
#define BX_SCRUB_DEVICE_FIELDS(X)	\
	X(uint64_t, devid, )		\
	X(bool, missing, )		\
	X(uint64_t, bytes_to_scrub, )	/* planned (sum of used bytes of its stripes) */	\
	X(uint64_t, short_bytes, )

struct bx_scrub_device {
	BX_SCRUB_DEVICE_FIELDS(BX_FIELD_MEMBER)
	char *path;                 /* NULL when missing */
	struct bx_scrub_counters c;
};

/* What struct btrfsx_scrub_result and Python's ScrubResult take as it is. */
#define BX_SCRUB_RESULT_FIELDS(X)								\
	X(uint8_t, fsid, [16])									\
	X(bool, readonly, )									\
	X(bool, metadata_only, )	/* data was not read (bx_scrub_opts.metadata_only) */	\
	X(bool, cancelled, )									\
	X(bool, degraded, )		/* a member is missing: its copies were not scrubbed */	\
	X(time_t, started, )									\
	X(double, duration, )		/* seconds */						\
	X(uint64_t, bytes_to_scrub, )								\
	X(uint64_t, errors_dropped, )	/* error records beyond the cap */

struct bx_scrub_result {
	BX_SCRUB_RESULT_FIELDS(BX_FIELD_MEMBER)
	struct bx_scrub_device *devs;
	size_t nr_devs;
	struct bx_scrub_counters total;
	struct bx_scrub_error *errors;   /* the first BX_SCRUB_MAX_ERRORS */
	size_t nr_errors;
	struct bx_scrub_file *files;     /* where uncorrectable data lies */
	size_t nr_files;
};

#define BX_SCRUB_MAX_ERRORS 4096
#define BX_SCRUB_MAX_FILES 256

/* What struct btrfsx_scrub_progress and Python's ScrubProgress take as it is. */
#define BX_SCRUB_PROGRESS_FIELDS(X)								\
	X(uint64_t, bytes_done, )	/* data and tree bytes verified so far, every copy */	\
	X(uint64_t, bytes_total, )	/* the plan; a run may end a little off it */		\
	X(double, elapsed, )		/* seconds */

struct bx_scrub_progress {
	BX_SCRUB_PROGRESS_FIELDS(BX_FIELD_MEMBER)
	struct bx_scrub_counters total; /* so far */
};

struct bx_scrub_opts {
	bool readonly;              /* find, do not write */
	bool readahead;             /* forward readahead on the extent and csum tree walks */
	/*
	 * Tree blocks only: data chunks are skipped (data in mixed chunks
	 * too), so a metadata check of an HDD array takes minutes, not hours.
	 */
	bool metadata_only;
	/*
	 * Called from the calling thread once the readers have started, about
	 * every @progress_interval seconds while the scrub runs, and once at the
	 * end.
	 */
	void (*progress)(void *arg, const struct bx_scrub_progress *p);
	void *progress_arg;
	double progress_interval;   /* 0: 0.5 s */
	const volatile sig_atomic_t *cancel; /* set non-zero to stop early (checked often;
					       read atomically, may be set by a signal handler) */
	uint32_t request_bytes;     /* one read; 0: from @memory_bytes, at most 4 MiB */
	uint32_t requests_per_dev;  /* reads in flight per device; 0: from @memory_bytes */
	/*
	 * Read buffers in all, shared by the devices still reading; 0:
	 * BX_SCRUB_DEFAULT_MEMORY, or BX_SCRUB_DEFAULT_MEMORY_SLOW_CSUM for
	 * sha256 and blake2b. More in flight reads faster where the storage
	 * is deep (virtual disks, arrays) and costs that much memory.
	 */
	uint64_t memory_bytes;
	/*
	 * NULL, or the status file (bx_scrub_status_path()) this run keeps:
	 * "running" while it runs, rewritten every few seconds, then the
	 * result, "finished" or "cancelled". A status that cannot be written
	 * costs the scrub nothing: the final one says why in a warning.
	 */
	const char *status_path;
};

/* Keeps a default run under 64 MiB resident, program and planning included. */
#define BX_SCRUB_DEFAULT_MEMORY (48ull << 20)
/*
 * sha256 and blake2b: a read's buffer also waits for the hashing threads
 * (5-14 ms a read on the benchmark's loop devices, against 10-17 ms at the
 * disk), time in which it is not at the disk. Twice the buffers keep the
 * disks as deep in reads as crc32c's 48 MiB do (sha256: 95 % of the raw
 * read against 85 %); a run stays under 112 MiB resident.
 */
#define BX_SCRUB_DEFAULT_MEMORY_SLOW_CSUM (96ull << 20)
/* The least a run can work with: two 64 KiB reads per device. */
#define BX_SCRUB_MIN_MEMORY (1ull << 20)

/*
 * Scrubs the open filesystem @fs (opened with BX_OPEN_WRITE unless
 * @opts->readonly; BX_OPEN_DEGRADED to scrub what is there when a member is
 * missing). Returns 0 and *@out (free with bx_scrub_result_free) when the
 * scrub ran, whatever it found; a negative errno with a message when it
 * could not run (unsupported feature, out of memory, io_uring unavailable).
 */
int bx_scrub_run(struct bx_fs *fs, const struct bx_scrub_opts *opts,
		 struct bx_scrub_result **out);

void bx_scrub_result_free(struct bx_scrub_result *res);

/* True when something found is left bad, a short member too (the scrub's exit status 3). */
bool bx_scrub_has_uncorrectable(const struct bx_scrub_result *res);

const char *bx_scrub_what_str(enum bx_scrub_what what);
const char *bx_scrub_fault_str(enum bx_scrub_fault fault);
const char *bx_scrub_fix_str(enum bx_scrub_fix fix);

/*
 * The status file of a filesystem's last offline scrub (scrub-status.c):
 * <state_dir>/scrub/<fsid>.json, the JSON document of `scrub start
 * --format json -d -R` with the process that wrote it. What `scrub status`
 * shows and the monitor records, whoever ran the scrub.
 */
#define BX_SCRUB_STATUS_VERSION "2"	/* its __header.version: the command's JSON version */

void bx_scrub_status_path(const char *state_dir, const uint8_t fsid[16], char *buf, size_t len);

/*
 * Writes @res as the run's @status ("running", "finished", "cancelled") to
 * @path, atomically (created with its directory), with the process @pid
 * that runs the scrub and when that process started.
 */
int bx_scrub_status_save(const char *path, const struct bx_scrub_result *res, const char *status,
			 pid_t pid);

/*
 * Reads a status file back (free with bx_scrub_status_free()): the result
 * and its state, "interrupted" for a "running" one whose process is gone
 * (or is another process by now). -ENOENT when there is none, -EINVAL for a
 * file that is not a status file.
 */
struct bx_scrub_status;
int bx_scrub_status_load(const char *path, struct bx_scrub_status **st);
const struct bx_scrub_result *bx_scrub_status_result(const struct bx_scrub_status *st);
const char *bx_scrub_status_state(const struct bx_scrub_status *st);
void bx_scrub_status_free(struct bx_scrub_status *st);

/*
 * The files that reference the data extent at @extent_start holding
 * @logical: EXTENT_DATA_REF and SHARED_DATA_REF backrefs, then each inode's
 * path through its INODE_REF items up to its subvolume root, and the
 * subvolume's own path through ROOT_BACKREF. Appends up to @max entries to
 * *@files (realloc'ed). Returns the number added or a negative errno.
 */
int bx_scrub_resolve_files(struct bx_fs *fs, uint64_t logical, uint64_t extent_start,
			   uint64_t extent_len, struct bx_scrub_file **files, size_t *nr,
			   size_t max);

#endif
