/*
 * Opening an unmounted filesystem for writing, safely: every member opened
 * read-write and claimed exclusively, refused when the filesystem is
 * mounted, when an image file is attached to a loop device, when another
 * btrfsx holds a member, or when a member is missing.
 */
#ifndef BTRFSX_OFFLINE_H
#define BTRFSX_OFFLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "kernel-shared/volumes.h"

/*
 * True when the filesystem with @fsid is mounted (the kernel lists it under
 * @sysfs_root/fs/btrfs). Puts a mount point into @mnt when one is found.
 */
bool bx_fs_is_mounted(const char *sysfs_root, const uint8_t fsid[16], char *mnt, size_t len);

/*
 * Who holds a member for writing: offline writers and the offline scrub
 * claim every member they open. A block device is claimed by opening it
 * O_EXCL, which also keeps the kernel from mounting it meanwhile (and fails
 * when it is mounted); an image file by an exclusive flock, which only other
 * btrfsx claims respect. Readers (inspect, property get, usage) claim
 * nothing and are never refused.
 *
 * bx_claim_image_file: the flock on an opened image file (nothing for other
 * file types); -EBUSY naming the holder when another process has it.
 * bx_busy_error: the -EBUSY for a member another holder has (@st from stat),
 * naming the mount, the filesystem it is a member of, or the process.
 */
int bx_claim_image_file(int fd, const char *path);
int bx_busy_error(const char *path, const struct stat *st);

/* -EBUSY naming the loop device when the image file @path is attached to one. */
int bx_check_not_loop_backed(const char *path);

/*
 * Opens the filesystem of @paths for offline work: members found by fsid and
 * opened with @flags (BX_OPEN_WRITE, BX_OPEN_DEGRADED ...) plus O_EXCL on
 * block devices; refused when an image file is attached to a loop device, a
 * member is busy (also with BX_OPEN_DEGRADED) or the real kernel has the
 * filesystem mounted (the message then suggests @online_path, e.g. "the
 * online path"). Errors name the object and reason.
 */
int bx_open_offline(struct bx_fs **fs, char *const *paths, int nr_paths, unsigned int flags,
		    const char *online_path);

/*
 * Opens the filesystem of @paths for an offline scrub: bx_open_offline()
 * read-write unless @readonly, missing members allowed (degraded: their
 * copies are not scrubbed).
 */
int bx_open_offline_scrub(struct bx_fs **fs, char *const *paths, int nr_paths, bool readonly);

#endif
