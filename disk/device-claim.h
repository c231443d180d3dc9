/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds a device, for device assembly, mkfs and the offline open: the
 * btrfs mounts of this namespace (/proc/self/mountinfo), the filesystems the
 * kernel has mounted (sysfs), exclusive opens, flocks on image files and the
 * loop devices backed by an image file. Library style: no printing;
 * functions return 0 or a negative errno with a message recorded by
 * bx_error().
 */
#ifndef BTRFSX_DEVICE_CLAIM_H
#define BTRFSX_DEVICE_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define BX_FSID_STR_LEN 37   /* 36 characters and the NUL */

/* Formats a 16-byte FSID as the lowercase 36-character UUID string. */
void bx_fsid_unparse(const uint8_t fsid[16], char out[BX_FSID_STR_LEN]);

/* One btrfs mount from /proc/self/mountinfo. */
struct bx_mount_entry {
	int mount_id;
	char mountpoint[4096];
	char source[1024];
};

/*
 * Lists the btrfs mounts of this mount namespace read from @mountinfo
 * ("/proc/self/mountinfo" normally). *@entries is malloc'ed; free() it.
 */
int bx_list_btrfs_mounts(const char *mountinfo, struct bx_mount_entry **entries, size_t *nr);

/* Where /proc/self/mountinfo says block device @rdev is mounted (any filesystem), if anywhere. */
bool bx_block_dev_mounted_at(dev_t rdev, char *mnt, size_t len);

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
 * "May I have this device to myself (and write it)": the one answer for
 * every claiming open (bx_fs_open with BX_OPEN_EXCL, mkfs). @path must be a
 * block device or an image file (@st from stat); an image file must not be
 * attached to a loop device. Opened read-write when @write, O_EXCL for a
 * block device, flocked for an image file; a read-only block device is
 * refused for writing. *@fd is -1 on failure.
 */
int bx_open_claimed(const char *path, const struct stat *st, bool write, int *fd);

#endif
