/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The condition of a mounted filesystem as the refusal policy looks at it
 * (model/policy.h): read-only, a balance running or paused
 * (BTRFS_IOC_BALANCE_PROGRESS), another exclusive operation of the kernel
 * (sysfs exclusive_operation, 5.10 and later), a scrub running
 * (BTRFS_IOC_SCRUB_PROGRESS), missing members. The policy decides; this
 * asks the kernel. Library style: 0 or a negative errno with the message.
 */
#ifndef BTRFSX_CONDITION_H
#define BTRFSX_CONDITION_H

#include "fsops/mounted-fs.h"
#include "model/policy.h"

/*
 * Fills @c for the filesystem open as @mfs (sysfs under @sysfs_root, NULL:
 * "/sys"); kernel_hints is left unknown (-1): the snapshot says it. Needs
 * CAP_SYS_ADMIN for the balance's status: -EPERM with the message without.
 */
int bx_fs_condition_read(const struct bx_mounted_fs *mfs, const char *sysfs_root,
			 struct bx_fs_condition *c);

#endif
