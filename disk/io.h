/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one read path: every byte btrfsx reads from a member device goes
 * through here, addressed physically (superblocks) or logically (through the
 * chunk map, any mirror, RAID5/6 rebuilds included).
 */
#ifndef BTRFSX_IO_H
#define BTRFSX_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "disk/timed-io.h"
#include "disk/volumes.h"

/*
 * Reads @len bytes at @physical, waiting at most the device's io_timeout.
 * -EIO with a message on a short or failed read, -ETIMEDOUT when the device
 * stalls.
 */
int bx_read_physical(const struct bx_device *dev, void *buf, size_t len, uint64_t physical);

/*
 * A second descriptor on the very file @dev was opened (and claimed) as,
 * O_DIRECT where the file allows it, for large unbuffered reads: opened
 * through /proc/self/fd, never by the path again, which may name another
 * file by now. Returns the descriptor or a negative errno with a message.
 */
int bx_open_direct(const struct bx_device *dev);

/*
 * Reads copy @mirror (1-based, see bx_num_copies) of a logical range, which
 * may cross stripes but not chunks. RAID5/6: mirror 2 rebuilds from P,
 * mirror 3 from Q. No checksums are checked here.
 */
int bx_read_logical(struct bx_fs *fs, uint64_t logical, void *buf, size_t len, int mirror);

/* Asks the kernel to start reading copy @mirror of a logical range (no wait). */
void bx_readahead_logical(struct bx_fs *fs, uint64_t logical, uint64_t len, int mirror);

/* Asks the kernel to start reading a range of an open (buffered) file or device (no wait). */
void bx_readahead_physical(int fd, uint64_t offset, uint64_t len);

#endif
