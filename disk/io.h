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

#include "disk/volumes.h"

/*
 * No read of a member device waits longer than the I/O timeout: a device
 * that stalls (a dying disk retrying, a hung path) makes the read fail with
 * -ETIMEDOUT instead of blocking the command forever. The read is given up,
 * not cancelled (the kernel cannot cancel it): until it completes, every
 * other read of that device fails at once with -ETIMEDOUT; after that, the
 * device is read again. The timeout holds for the whole process (seconds,
 * 0: wait forever); where io_uring cannot be set up, reads wait forever.
 */
#define BX_IO_TIMEOUT_DEFAULT 60
void bx_io_set_timeout(unsigned int seconds);
unsigned int bx_io_timeout(void);

/*
 * pread of @len bytes at @offset of @fd (O_DIRECT allowed: aligned offset and
 * length) until done or the end: the bytes read (less than @len only at the
 * end of the device), a negative errno, or -ETIMEDOUT.
 */
ssize_t bx_pread_timed(int fd, void *buf, size_t len, uint64_t offset);

/*
 * Reads @len bytes at @physical. -EIO with a message on a short or failed
 * read, -ETIMEDOUT when the device stalls.
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
