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
 * Opens the filesystem of @paths for offline changes: members found by fsid,
 * opened O_RDWR (and O_EXCL for block devices), the real kernel asked
 * whether it is mounted. Errors name the object and the reason.
 */
int bx_open_offline_writable(struct bx_fs **fs, char *const *paths, int nr_paths);

#endif
