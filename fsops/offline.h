/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

#include "disk/volumes.h"

/*
 * Opens the filesystem of @paths for offline work: members found by fsid and
 * opened with @flags (BX_OPEN_WRITE, BX_OPEN_DEGRADED ...) plus O_EXCL on
 * block devices; refused when an image file is attached to a loop device, a
 * member is busy (also with BX_OPEN_DEGRADED) or the real kernel has the
 * filesystem mounted (the message then suggests @online_path, e.g. "the
 * online path"). With BX_OPEN_WRITE also refused when a member is shorter
 * than its device item (bx_fs_check_member_sizes(): the readers refuse it
 * too). Errors name the object and reason.
 */
int bx_open_offline(struct bx_fs **fs, char *const *paths, int nr_paths, unsigned int flags,
		    const char *online_path);

/*
 * Opens the filesystem of @paths for an offline scrub: bx_open_offline()
 * read-write unless @readonly, missing members allowed (degraded: their
 * copies are not scrubbed), every read and write of the devices given up
 * after @io_timeout seconds (0: wait forever; bx_open_offline() waits
 * BX_IO_TIMEOUT_DEFAULT).
 */
int bx_open_offline_scrub(struct bx_fs **fs, char *const *paths, int nr_paths, bool readonly,
			  unsigned int io_timeout);

#endif
