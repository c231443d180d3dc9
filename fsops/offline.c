/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The offline open: an unmounted filesystem's members, claimed for writing. */
#include <errno.h>
#include <stdbool.h>

#include "common/error.h"
#include "fsops/offline.h"
#include "disk/device-claim.h"
#include "disk/timed-io.h"

static int open_offline(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags,
			const char *online_path, unsigned int io_timeout)
{
	char mnt[4096];
	struct bx_fs *fs, *checked;
	int ret;

	/* Said first: the loop device may be mounted, and that message would mislead. */
	for (int i = 0; i < nr_paths; i++) {
		ret = bx_check_not_loop_backed(paths[i]);
		if (ret)
			return ret;
	}
	/* Read-only first: the fsid tells whether the kernel has it mounted. */
	ret = bx_fs_open_timed(&fs, paths, nr_paths, BX_OPEN_SB_ONLY | BX_OPEN_NO_SCAN, io_timeout);
	if (ret)
		return ret;
	if (bx_fs_is_mounted("/sys", fs->fsid, mnt, sizeof(mnt))) {
		ret = bx_error_as(-EBUSY, BX_ERROR_KIND_MOUNTED,
				  "%s: filesystem is mounted at %s; use %s or unmount", paths[0],
				  mnt, online_path);
		bx_fs_close(fs);
		return ret;
	}
	/*
	 * Closed after the second open: a block device's page cache goes with
	 * its last descriptor, and the superblocks are read again (on an HDD a
	 * seek for each copy).
	 */
	checked = fs;
	ret = bx_fs_open_timed(&fs, paths, nr_paths, flags | BX_OPEN_EXCL, io_timeout);
	bx_fs_close(checked);
	if (ret)
		return ret;
	/* Degraded is for members that are gone, not for one another program holds. */
	if (fs->member_busy) {
		ret = bx_error(-EBUSY, "%s", fs->scan_failures);
		bx_fs_close(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

int bx_open_offline(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags,
		    const char *online_path)
{
	int ret = open_offline(out, paths, nr_paths, flags, online_path, BX_IO_TIMEOUT_DEFAULT);

	/* A writer refuses what the readers refuse (the scrub reports it instead). */
	if (ret || !(flags & BX_OPEN_WRITE))
		return ret;
	ret = bx_fs_check_member_sizes(*out);
	if (ret) {
		bx_fs_close(*out);
		*out = NULL;
	}
	return ret;
}

int bx_open_offline_scrub(struct bx_fs **fs, char *const *paths, int nr_paths, bool readonly,
			  unsigned int io_timeout)
{
	return open_offline(fs, paths, nr_paths, BX_OPEN_DEGRADED | (readonly ? 0 : BX_OPEN_WRITE),
			    "the online path (btrfs scrub)", io_timeout);
}
