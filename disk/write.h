/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one write path. Every byte btrfsx writes to a member device goes
 * through here, in an order that keeps the filesystem valid if the process
 * or the machine stops between any two writes: each write is flushed
 * (fdatasync) before the next one starts, tree blocks are written one
 * mirror at a time, superblocks after the trees they point into. Once
 * flushed, every write is read back from the device (past the page cache):
 * a device that acknowledges a write it did not keep fails the write with
 * -EIO there, as a failed write would.
 *
 * Crash tests: fs->writes (disk/write-plan.h) stops the machine after a
 * chosen write, optionally losing the writes not yet flushed at that point,
 * or pauses before one.
 */
#ifndef BTRFSX_WRITE_H
#define BTRFSX_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk/btree.h"
#include "disk/volumes.h"

/* Frees what the crash simulation kept of writes not yet flushed (bx_fs_close). */
void bx_write_log_release(struct bx_fs *fs);

/* Writes, flushes and reads back @len bytes at @physical of @dev. */
int bx_write_physical(struct bx_fs *fs, struct bx_device *dev, const void *buf, size_t len,
		      uint64_t physical);

/*
 * Writes a modified tree block: recomputes its checksum, then writes it to
 * every mirror in turn, each flushed before the next. Refuses blocks in
 * raid5/6 chunks (an in-place write there would need a parity update).
 */
int bx_write_tree_block(struct bx_fs *fs, uint8_t *block, uint64_t bytenr);

/*
 * Rewrites every valid superblock copy of @dev after @edit changed it:
 * reads each copy, applies @edit, recomputes the checksum, writes, flushes.
 * Copies that fail verification are left alone (and reported as warnings).
 */
int bx_write_super_copies(struct bx_fs *fs, struct bx_device *dev,
			  void (*edit)(struct btrfs_super_block *sb, void *arg), void *arg);

/*
 * A write batch: many writes, then one flush per device. For writers that
 * lay down a whole set of blocks whose order among themselves does not
 * matter (a new filesystem's trees), followed by a flush, before the next
 * step (its superblocks) is allowed to start. Requests are sorted by device
 * and offset and adjacent ones merged into one pwritev; each pwritev counts
 * as one write for fault injection. Buffers must stay valid until
 * bx_batch_submit() returns.
 */
struct bx_write_req {
	struct bx_device *dev;
	uint64_t physical;
	const void *buf;
	size_t len;
};

struct bx_write_batch {
	struct bx_write_req *reqs;
	size_t nr;
	size_t cap;
};

void bx_batch_init(struct bx_write_batch *batch);
void bx_batch_release(struct bx_write_batch *batch);
/* Queues @len bytes at @physical of @dev. 0 or -ENOMEM. */
int bx_batch_add(struct bx_write_batch *batch, struct bx_device *dev, const void *buf, size_t len,
		 uint64_t physical);
/* Queues @len bytes at @logical on every mirror (not for raid5/6 chunks). */
int bx_batch_add_logical(struct bx_fs *fs, struct bx_write_batch *batch, const void *buf,
			 size_t len, uint64_t logical);
/*
 * Writes everything queued, then flushes every device written to (in
 * parallel), then reads every request back. Overlapping requests are refused (-EINVAL) before anything is
 * written. The batch is emptied whatever the result.
 */
int bx_batch_submit(struct bx_fs *fs, struct bx_write_batch *batch);

/*
 * bx_batch_submit() for a writer that must say which requests reached the
 * device (the scrub's repairs, each reported corrected or not): @durable[i]
 * for the i-th request queued is true when it was written, flushed and read
 * back. When a write fails, what was written before it is still flushed
 * and read back, so @durable is exact also then (a simulated crash that
 * lost unflushed writes reads back the old bytes); the error returned is
 * the first failure's.
 */
int bx_batch_submit_each(struct bx_fs *fs, struct bx_write_batch *batch, bool *durable);

#endif
