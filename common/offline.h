/*
 * Opening an unmounted filesystem for writing, safely: every member opened
 * read-write and exclusively, refused when the filesystem is mounted, when
 * an image file is attached to a loop device, or when a member is missing.
 */
#ifndef BTRFSX_OFFLINE_H
#define BTRFSX_OFFLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel-shared/volumes.h"

/*
 * True when the filesystem with @fsid is mounted (the kernel lists it under
 * @sysfs_root/fs/btrfs). Puts a mount point into @mnt when one is found.
 */
bool bx_fs_is_mounted(const char *sysfs_root, const uint8_t fsid[16], char *mnt, size_t len);

/* -EBUSY naming the loop device when the image file @path is attached to one. */
int bx_check_not_loop_backed(const char *path);

/*
 * Opens the filesystem of @paths for offline work: members found by fsid and
 * opened with @flags (BX_OPEN_WRITE, BX_OPEN_DEGRADED ...) plus O_EXCL on
 * block devices; refused when an image file is attached to a loop device or
 * the real kernel has the filesystem mounted (the message then suggests
 * @online_path, e.g. "the online path"). Errors name the object and reason.
 */
int bx_open_offline(struct bx_fs **fs, char *const *paths, int nr_paths, unsigned int flags,
		    const char *online_path);

#endif
