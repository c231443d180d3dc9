/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside the write path: write.c and the crash simulation (fault.c) that
 * test builds hook into it.
 */
#ifndef BTRFSX_WRITE_PRIVATE_H
#define BTRFSX_WRITE_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "disk/volumes.h"

#ifdef BTRFSX_FAULT_INJECTION
/* Before each write: the stop (every write after it fails) and the pause. */
int bx_fault_before_write(struct bx_fs *fs);
/* After each write (fs->nr_writes counts it), before its flush: the stop that loses writes. */
int bx_fault_after_write(struct bx_fs *fs);
/* Keeps what a write of @len bytes at @physical overwrites, when the plan may lose it. */
int bx_fault_remember(struct bx_fs *fs, struct bx_device *dev, size_t len, uint64_t physical);
/* Writes of @dev (NULL: every device) were flushed: they can no longer be lost. */
void bx_fault_forget(struct bx_fs *fs, const struct bx_device *dev);
#else
static inline int bx_fault_before_write(struct bx_fs *fs) { (void)fs; return 0; }
static inline int bx_fault_after_write(struct bx_fs *fs) { (void)fs; return 0; }
static inline int bx_fault_remember(struct bx_fs *fs, struct bx_device *dev, size_t len,
				    uint64_t physical)
{
	(void)fs, (void)dev, (void)len, (void)physical;
	return 0;
}
static inline void bx_fault_forget(struct bx_fs *fs, const struct bx_device *dev)
{
	(void)fs, (void)dev;
}
#endif

#endif
