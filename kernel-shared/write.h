/*
 * The one write path. Every byte btrfsx writes to a member device goes
 * through here, in an order that keeps the filesystem valid if the process
 * or the machine stops between any two writes: each write is flushed
 * (fdatasync) before the next one starts, tree blocks are written one
 * mirror at a time, superblocks after the trees they point into.
 *
 * Fault injection for crash tests: with fs->fault_after_writes = N > 0, the
 * N-th write completes and every later write fails with -EIO, as if the
 * machine had stopped there.
 */
#ifndef BTRFSX_WRITE_H
#define BTRFSX_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "kernel-shared/btree.h"
#include "kernel-shared/volumes.h"

/* Writes and flushes @len bytes at @physical of @dev. */
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

#endif
