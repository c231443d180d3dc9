/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests to member devices that give up on a stalled device: no read,
 * write or flush waits longer than its timeout. A device that stalls (a
 * dying disk retrying, a hung path) makes the request fail with -ETIMEDOUT
 * instead of blocking the command forever. The request is given up, not
 * cancelled (the kernel cannot cancel it): until it completes, every other
 * request to that device fails at once with -ETIMEDOUT; after that, the
 * device is used again. The timeout is each call's (seconds, 0: wait
 * forever): an opened filesystem's devices carry the one they were opened
 * with (bx_fs_open_timed()). Where io_uring cannot be set up, requests wait
 * forever.
 */
#ifndef BTRFSX_TIMED_IO_H
#define BTRFSX_TIMED_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* What a command waits for one request unless told otherwise (--io-timeout). */
#define BX_IO_TIMEOUT_DEFAULT 60

/*
 * pread of @len bytes at @offset of @fd (O_DIRECT allowed: aligned offset and
 * length) until done or the end: the bytes read (less than @len only at the
 * end of the device), a negative errno, or -ETIMEDOUT.
 */
ssize_t bx_pread_timed(int fd, void *buf, size_t len, uint64_t offset, unsigned int timeout);

/* Writes all of @iov (@nr vectors, at most IOV_MAX) at @offset: 0, a negative errno, -ETIMEDOUT. */
int bx_pwritev_timed(int fd, const struct iovec *iov, int nr, uint64_t offset,
		     unsigned int timeout);
int bx_pwrite_timed(int fd, const void *buf, size_t len, uint64_t offset, unsigned int timeout);

/* fdatasync: 0, a negative errno, or -ETIMEDOUT. */
int bx_fdatasync_timed(int fd, unsigned int timeout);

#endif
