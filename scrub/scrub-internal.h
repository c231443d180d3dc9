/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Offline scrub internals shared by scrub.c (the run: superblocks, the
 * threads, the result), scrub-plan.c (what each 64 KiB window holds),
 * scrub-dev.c (per-device readers and mirrored repair), scrub-hash.c (the
 * hashing threads), scrub-raid56.c (full stripes and parity) and what those
 * threads call: scrub-check.c (the checks every path shares),
 * scrub-repair.c (error records and the rewrite of a bad copy) and
 * scrub-worker.c (each thread's reader, buffers, cancel, fatal errors,
 * progress, timed reads). Calls go one way: the run calls the threads'
 * files, which call the shared ones; nothing calls back into the run.
 */
#ifndef BTRFSX_SCRUB_INTERNAL_H
#define BTRFSX_SCRUB_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "disk/btree.h"
#include "disk/volumes.h"
#include "disk/write.h"
#include "scrub/scrub.h"

/* The kernel scrubs (and counts extents) in 64 KiB stripes; so do we. */
#define SCRUB_WINDOW BTRFS_STRIPE_LEN
#define SCRUB_MAX_WIN_SECTORS (SCRUB_WINDOW / 4096)

/* What one sector of a window holds. */
enum scrub_sector_kind {
	SEC_NONE,                 /* no extent: not read for itself, not counted */
	SEC_DATA,                 /* data without a checksum (nodatasum, prealloc) */
	SEC_DATA_CSUM,            /* data with its checksum in the window's csum array */
	SEC_TREE_HEAD,            /* first sector of a tree block */
	SEC_TREE,                 /* the following sectors of a tree block */
};

struct scrub_sector {
	uint64_t logical;
	union {
		struct {          /* data: the extent holding it (to find its files) */
			uint64_t start;
			uint64_t len;
		} extent;
		struct {          /* a tree block's first sector: what its header must say */
			uint64_t generation;
			uint64_t level;
		} tree;
	};
	uint8_t kind;
};

/* One 64 KiB stripe of logical space as the extent and csum trees describe it. */
struct scrub_window {
	uint64_t logical;
	uint32_t len;             /* bytes; less than 64 KiB at a chunk's end */
	uint32_t nr_sectors;
	uint32_t first, last;     /* used sectors are in [first, last); first == last: none */
	uint32_t data_extents;    /* extents overlapping the window, as the kernel counts */
	uint32_t tree_extents;
	uint32_t data_sectors;
	uint32_t tree_sectors;
	uint32_t nocsum_sectors;
	struct scrub_sector sec[SCRUB_MAX_WIN_SECTORS];
	uint8_t csum[SCRUB_MAX_WIN_SECTORS * BTRFS_CSUM_SIZE];
};

/* The extent item a cursor is at. */
struct scrub_extent {
	uint64_t start;
	uint64_t len;
	uint64_t flags;
	uint64_t generation;
	int level;                /* tree blocks; -1 when the item does not say */
};

/*
 * Forward cursors over the extent tree and the csum tree for one chunk at a
 * time, fed windows in increasing logical order. Both walk with the path's
 * forward readahead when asked.
 */
struct scrub_planner {
	struct bx_fs *fs;
	struct bx_root extent_root;
	struct bx_root csum_root;
	bool have_csum_root;
	bool reada;
	bool tree_only;           /* data extents are left out (a metadata-only run) */
	uint64_t chunk_start, chunk_end;
	bool data_chunk;
	struct bx_path ext_path;
	bool ext_end;
	struct scrub_extent ext;
	struct bx_path csum_path;
	bool csum_end;
	uint64_t csum_start, csum_stop;  /* the current csum item covers [start, stop) */
	const uint8_t *csum_data;
};

/* State shared by every thread of one run. */
struct scrub_ctx {
	struct bx_fs *fs;
	const struct bx_scrub_opts *opts;
	/* the status file (opts->status_path), kept by the calling thread */
	bool status_saved, status_failed;
	double last_status_save;      /* seconds into the run */
	uint32_t sectorsize;
	uint32_t nodesize;
	uint64_t sb_generation;
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
	bool have_chunk_tree_uuid;
	pthread_mutex_t lock;         /* error records, the write path, fatal */
	struct bx_scrub_error *errors;
	size_t nr_errors;
	uint64_t errors_dropped;
	uint64_t bytes_done;          /* atomic */
	int fatal;                    /* first error that stopped a thread */
	char fatal_msg[512];
	uint64_t failed_repairs;      /* repair writes that failed (under lock) */
	char first_repair_error[512];
	int stop;                     /* set when a thread failed: the others end too (atomic) */
	pthread_cond_t done_cond;     /* signalled when a thread ends */
	unsigned int active_readers;  /* device readers not yet done (atomic) */
	uint64_t io_budget;           /* read buffers the device readers share */
	uint64_t raid56_budget;       /* read buffers of the RAID5/6 pass */
	const struct bx_scrub_result *res; /* the planned bytes of each device */
	int running;                  /* threads not yet ended (under lock) */
	struct scrub_hash_pool *hash; /* the device readers' data checksums; NULL: each its own */
	struct scrub_tail *tails;     /* per device, in fs->devs order */
};

/*
 * A device's last device extent the scrub goes through, and how many of its
 * 64 KiB stripes hold extents (atomic): where the kernel's scrub leaves
 * last_physical depends on that count (scrub_end_last_physical).
 */
struct scrub_tail {
	uint64_t start, end;
	uint64_t stripes;
};

/* A repair waiting in its worker's batch: the record and counters it changes. */
struct scrub_repair_fix {
	size_t record;                /* in ctx->errors; SIZE_MAX when beyond the cap */
	struct bx_scrub_counters *c;
	uint64_t nr;                  /* the sectors it counts */
};

/* A worker's rewrites not yet written (scrub-repair.c). */
struct scrub_repairs {
	struct bx_write_batch batch;
	size_t queued;                /* requests in the batch */
	uint8_t **copies;             /* per request: the good copy it writes (owned) */
	size_t cap;
	size_t *owner;                /* per request: its fix, SIZE_MAX for none */
	size_t cap_owner;
	size_t unsettled;             /* requests queued since the last scrub_settle() */
	size_t bytes;
	struct scrub_repair_fix *fixes;
	size_t nr_fixes, cap_fixes;
};

/* What every scrubbing thread has: its own tree reader, counters and repairs. */
struct scrub_worker {
	struct scrub_ctx *ctx;
	struct bx_fs *rfs;            /* a private reader of ctx->fs (own block cache) */
	struct bx_scrub_counters *c;  /* one per device, in fs->devs order */
	uint8_t *tmp;                 /* nodesize bytes, aligned, for repair reads */
	uint8_t *tmp2;
	struct scrub_planner planner;
	struct scrub_repairs repairs;
};

int scrub_worker_init(struct scrub_worker *w, struct scrub_ctx *ctx);
void scrub_worker_release(struct scrub_worker *w);

bool scrub_cancelled(const struct scrub_ctx *ctx);
/*
 * Which pass of this run scrubs @chunk: the device readers, the RAID5/6
 * pass, or none (a metadata-only run skips data chunks).
 */
enum scrub_pass { SCRUB_PASS_NONE, SCRUB_PASS_DEVICES, SCRUB_PASS_RAID56 };
enum scrub_pass scrub_chunk_pass(const struct scrub_ctx *ctx, const struct bx_chunk *chunk);
void scrub_set_fatal(struct scrub_ctx *ctx, int ret);
size_t scrub_dev_index(const struct scrub_ctx *ctx, const struct bx_device *dev);

/*
 * Whether @len bytes at @physical of @dev lie (partly) beyond the device's
 * real end, where a member shorter than its device item has nothing: not
 * read, not counted, never written (bx_scrub_device.short_bytes).
 */
bool scrub_beyond_end(const struct bx_device *dev, uint64_t physical, uint64_t len);

int scrub_planner_begin(struct scrub_planner *p, const struct bx_chunk *chunk);
int scrub_planner_window(struct scrub_planner *p, uint64_t logical, uint32_t len,
			 struct scrub_window *w);
void scrub_planner_end(struct scrub_planner *p);

/*
 * Adds a window's extents and bytes to @c; the window lies at @phys on @dev,
 * its end moves last_physical.
 */
void scrub_count_window(struct scrub_ctx *ctx, struct bx_scrub_counters *c,
			const struct scrub_window *w, const struct bx_device *dev, uint64_t phys);

/* True when @buf holds the data sector whose checksum is @csum. */
bool scrub_data_ok(const struct scrub_ctx *ctx, const uint8_t *buf, const uint8_t *csum);

/*
 * Checks a tree block copy, whose first sector is @head (its address and
 * what the extent item says of it), as the kernel's scrub does, then the
 * rest of bx_check_tree_block and owner sanity. Returns NULL when good, else
 * the reason, with *fault CSUM (bytenr mismatch, as the kernel counts it) or
 * VERIFY.
 */
const char *scrub_tree_bad(const struct scrub_ctx *ctx, const uint8_t *buf,
			   const struct scrub_sector *head, enum bx_scrub_fault *fault);

/* Keeps @e in the run's error records: its index, SIZE_MAX beyond the cap. */
size_t scrub_record(struct scrub_ctx *ctx, const struct bx_scrub_error *e);

/* Writes a good copy over a bad one through the write path, flushed (serialized). */
int scrub_write(struct scrub_ctx *ctx, struct bx_device *dev, const void *buf, size_t len,
		uint64_t physical);

/*
 * What becomes of a bad copy at @physical of @dev when a good copy (@good,
 * @len bytes in @buf) was or was not found: unless read-only, the good copy
 * is queued in the worker's batch to be written over it (CORRECTED).
 */
enum bx_scrub_fix scrub_fix(struct scrub_worker *w, bool good, struct bx_device *dev,
			    const void *buf, size_t len, uint64_t physical);

/* Queues one more piece of the repair being made (a tree block in pieces). */
int scrub_queue_repair(struct scrub_worker *w, struct bx_device *dev, const void *buf,
		       size_t len, uint64_t physical);

/*
 * The bad copy handled: its outcome counted for @nr sectors in @c and @e
 * recorded; what was queued for it since the last call is its repair, whose
 * record and count turn uncorrectable if it does not reach the device. A
 * full batch is written here.
 */
void scrub_settle(struct scrub_worker *w, struct bx_scrub_counters *c, uint64_t nr,
		  const struct bx_scrub_error *e);

/* Writes the worker's batch (one flush per device) and settles each repair's outcome. */
void scrub_flush_repairs(struct scrub_worker *w);
/* Forgets what was queued, written or not; _free also releases the memory. */
void scrub_repairs_clear(struct scrub_repairs *rp);
void scrub_repairs_free(struct scrub_repairs *rp);

/* pread of @len bytes until done; 0, -EIO (short or failed) or -ETIMEDOUT (stalled). */
int scrub_pread(const struct scrub_ctx *ctx, int fd, void *buf, size_t len, uint64_t physical);

/*
 * When @ret is -ETIMEDOUT (a read of @dev did not complete within the I/O
 * timeout), stops the scrub with that error and returns true: a stalled
 * device ends the run instead of hanging it.
 */
bool scrub_stalled(struct scrub_ctx *ctx, int ret, const struct bx_device *dev);

/* io_uring_wait_cqe bounded by the I/O timeout: 0, -ETIMEDOUT or a negative errno. */
struct io_uring;
struct io_uring_cqe;
int scrub_wait_cqe(const struct scrub_ctx *ctx, struct io_uring *ring, struct io_uring_cqe **cqe);

void scrub_progress_add(struct scrub_ctx *ctx, uint64_t bytes);

/* Every non-RAID5/6 copy on @dev, in physical order, reads with io_uring. */
int scrub_device(struct scrub_worker *w, struct bx_device *dev);

/* RAID5/6: scrubs every full stripe of @chunk that holds extents. */
int scrub_raid56_chunk(struct scrub_worker *w, const struct bx_chunk *chunk);

/*
 * The hashing threads (one per online CPU) that check the data sectors of
 * completed reads for every device reader.
 */
struct scrub_hash_pool;

/* A reader's side: its jobs done, and the eventfd that says so. */
struct scrub_hash_client {
	int efd;                      /* counts jobs done; the reader waits on it in its ring */
	struct scrub_hash_job *done;  /* under the pool's lock */
	unsigned int pending;         /* submitted, not yet done (under the pool's lock) */
	uint64_t left;                /* bytes its device has still to read (atomic) */
};

/* One read buffer to check: bad[i] set for each SEC_DATA_CSUM sector that does not match. */
struct scrub_hash_job {
	struct scrub_hash_job *next;
	struct scrub_hash_client *client;
	const uint8_t *buf;
	const struct scrub_sector *sec;
	const uint8_t *csum;          /* csum_stride bytes per sector */
	size_t csum_stride;
	uint32_t nr_sectors;
	uint8_t *bad;
	uint32_t claimed;             /* sectors handed to workers (under the pool's lock) */
	uint32_t hashed;              /* sectors done (under the pool's lock) */
};

/*
 * The pool's queue (under its lock). The next slice comes from the oldest
 * job of the client whose device has the most still to read: when hashing
 * is the slower side, that makes the devices end together.
 */
struct scrub_hash_queue {
	struct scrub_hash_job *head, *tail;
};

void scrub_hash_queue_add(struct scrub_hash_queue *q, struct scrub_hash_job *job);
/*
 * Claims sectors [*from, *to) of the next job, at most @slice of them; a
 * job leaves the queue with its last slice. NULL when the queue is empty.
 */
struct scrub_hash_job *scrub_hash_queue_claim(struct scrub_hash_queue *q, uint32_t slice,
					      uint32_t *from, uint32_t *to);

int scrub_hash_pool_start(struct scrub_ctx *ctx, struct scrub_hash_pool **pool);
/* Ends the threads; every client must be released first. */
void scrub_hash_pool_stop(struct scrub_hash_pool *pool);

/* @left: the bytes the client's device has to read; the reader counts it down. */
int scrub_hash_client_init(struct scrub_hash_client *client, uint64_t left);
/* Waits for the client's jobs still being hashed (their buffers stay in use until then). */
void scrub_hash_client_release(struct scrub_hash_pool *pool, struct scrub_hash_client *client);

void scrub_hash_submit(struct scrub_hash_pool *pool, struct scrub_hash_client *client,
		       struct scrub_hash_job *job);
/* The client's jobs done since the last call, as a list. */
struct scrub_hash_job *scrub_hash_take_done(struct scrub_hash_pool *pool,
					    struct scrub_hash_client *client);

/* Aligned buffers for O_DIRECT. */
void *scrub_alloc_aligned(size_t len);

/* Read buffers: huge pages from 2 MiB on (scrub.c says why); freed with their length. */
void *scrub_alloc_read_buffer(size_t len);
void scrub_free_read_buffer(void *buf, size_t len);

#endif
