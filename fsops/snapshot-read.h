/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The readers of a filesystem's snapshot (model/snapshot.h): a mounted
 * filesystem through its ioctls (FS_INFO, DEV_INFO, SPACE_INFO,
 * TREE_SEARCH_V2 on the chunk, device and extent trees, statfs, the
 * balance's progress, the hints in sysfs), an unmounted one through our
 * reader (disk/). The snapshot's kernel is the running one
 * (bx_kernel_running()); a caller that plans for another sets it after.
 *
 * Library style: functions return 0 or a negative errno with a message
 * recorded by bx_error(); nothing prints or exits.
 */
#ifndef BTRFSX_SNAPSHOT_READ_H
#define BTRFSX_SNAPSHOT_READ_H

#include <stddef.h>

#include "model/snapshot.h"

/* The running kernel (uname's release) as the register describes it, into @k. */
void bx_kernel_running(struct bx_kernel *k);

/*
 * Reads a mounted filesystem through the mount point (or any path on it)
 * @path, as last committed. Hints from bx_hint_get() with @sysfs_root
 * (NULL: "/sys"). Deleted subvolumes the kernel has not cleaned up yet are
 * a warning (bx_warn()): what they hold counts as used until it has. Needs
 * CAP_SYS_ADMIN for TREE_SEARCH.
 */
int bx_snapshot_read_mounted(const char *path, const char *sysfs_root, struct bx_snapshot *in);

/*
 * Reads an unmounted filesystem from member devices or image files @paths
 * (other members found by fsid; missing ones allowed). Hints are the stored
 * ones, hints_effective is true (the kernel that mounts it next is assumed
 * to honour them); kernel_hints says whether the running one does, asked
 * through @sysfs_root when a hint is set. Refuses with
 * -EBUSY when the running kernel has the filesystem mounted, so the caller
 * can use the mounted path instead: @mnt (@mnt_len bytes) gets the mount
 * point, or "an unknown mount point" when this namespace does not show it.
 */
int bx_snapshot_read_offline(char *const *paths, int nr_paths, const char *sysfs_root,
			     struct bx_snapshot *in, char *mnt, size_t mnt_len);

/*
 * Fills the data chunks' extents of @in (mounted: TREE_SEARCH_V2 on the
 * extent tree; unmounted: the extent tree read from the devices @in->path
 * names), for the planner's relocation. Needs chunks in address order.
 * Returns 0 or a negative errno with the message recorded.
 */
int bx_snapshot_read_dextents(struct bx_snapshot *in);

/*
 * Reads the filesystem @paths names, mounted or not: a directory (alone) is
 * a mount point, read through the ioctls; otherwise member devices or image
 * files, read offline, or through the mount point when the running kernel
 * has that filesystem mounted and this namespace shows where.
 */
int bx_snapshot_read(char *const *paths, int nr_paths, const char *sysfs_root,
		     struct bx_snapshot *in);

/*
 * bx_snapshot_read() and every chunk's used bytes (from the block group
 * items): what the misplaced report needs. A mounted filesystem's running
 * transaction is committed first, as the kernel's relocations do before
 * they start (what files just deleted hold is free only then); one that
 * changed between the searches (the cleaner deleted a block group) is read
 * again, a few times.
 */
int bx_snapshot_read_used(char *const *paths, int nr_paths, const char *sysfs_root,
			  struct bx_snapshot *in);

/*
 * bx_snapshot_read_used() without the commit: the filesystem as last
 * committed, for readers that must not write (monitor samples, usage).
 */
int bx_snapshot_read_committed_used(char *const *paths, int nr_paths, const char *sysfs_root,
				    struct bx_snapshot *in);

/*
 * What filesystem usage reports: bx_snapshot_read(), and with the kernel's
 * reclaim on, the chunks' used bytes too (which are below its threshold),
 * read as bx_snapshot_read_committed_used() does.
 */
int bx_snapshot_read_usage(char *const *paths, int nr_paths, const char *sysfs_root,
			   struct bx_snapshot *in);

/*
 * bx_snapshot_read_used() and the data chunks' extents
 * (bx_snapshot_read_dextents()): what a model of the kernel's relocation
 * needs (the what-if planner).
 */
int bx_snapshot_read_extents(char *const *paths, int nr_paths, const char *sysfs_root,
			     struct bx_snapshot *in);

#endif
