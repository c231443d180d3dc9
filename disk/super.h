/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Superblock copies: reading, validating and the reasons a copy is rejected. */
#ifndef BTRFSX_SUPER_H
#define BTRFSX_SUPER_H

#include <stdint.h>

#include "disk/timed-io.h"
#include "format/ctree.h"

/* Why a superblock copy was rejected, or BX_SB_OK. */
enum bx_sb_status {
	BX_SB_OK,
	BX_SB_BEYOND_DEVICE,
	BX_SB_READ_ERROR,
	BX_SB_TIMEOUT,                /* the read did not complete: the device stalls */
	BX_SB_BAD_MAGIC,
	BX_SB_BAD_CSUM_TYPE,
	BX_SB_BAD_CSUM,
	BX_SB_BAD_BYTENR,
};

const char *bx_sb_status_str(enum bx_sb_status status);

/*
 * Reads and validates superblock copy @mirror of an open file descriptor,
 * waiting at most @timeout seconds (disk/timed-io.h).
 */
enum bx_sb_status bx_read_super_copy(int fd, uint64_t dev_size, int mirror,
				     struct btrfs_super_block *sb, unsigned int timeout);

/* Asks the kernel to start reading every superblock copy of an open descriptor (no wait). */
void bx_readahead_super_copies(int fd);

#endif
