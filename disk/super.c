/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "format/csum.h"
#include "disk/io.h"
#include "disk/super.h"
#include "disk/volumes.h"

const char *bx_sb_status_str(enum bx_sb_status status)
{
	switch (status) {
	case BX_SB_OK:
		return "ok";
	case BX_SB_BEYOND_DEVICE:
		return "beyond the end of the device";
	case BX_SB_READ_ERROR:
		return "read error";
	case BX_SB_TIMEOUT:
		return "read did not complete (the device stalls)";
	case BX_SB_BAD_MAGIC:
		return "no btrfs magic";
	case BX_SB_BAD_CSUM_TYPE:
		return "unknown checksum type";
	case BX_SB_BAD_CSUM:
		return "checksum mismatch";
	case BX_SB_BAD_BYTENR:
		return "wrong bytenr";
	}
	return "unknown";
}

void bx_readahead_super_copies(int fd)
{
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++)
		bx_readahead_physical(fd, btrfs_sb_offset(i), BTRFS_SUPER_INFO_SIZE);
}

enum bx_sb_status bx_read_super_copy(int fd, uint64_t dev_size, int mirror,
				     struct btrfs_super_block *sb, unsigned int timeout)
{
	uint64_t offset = btrfs_sb_offset(mirror);
	uint8_t csum[BTRFS_CSUM_SIZE];
	size_t csum_size;
	ssize_t got;

	if (offset + BTRFS_SUPER_INFO_SIZE > dev_size)
		return BX_SB_BEYOND_DEVICE;
	got = bx_pread_timed(fd, sb, sizeof(*sb), offset, timeout);
	if (got == -ETIMEDOUT)
		return BX_SB_TIMEOUT;
	if (got != (ssize_t)sizeof(*sb))
		return BX_SB_READ_ERROR;
	if (le64toh(sb->magic) != BTRFS_MAGIC)
		return BX_SB_BAD_MAGIC;
	csum_size = btrfsx_csum_size(le16toh(sb->csum_type));
	if (!csum_size)
		return BX_SB_BAD_CSUM_TYPE;
	if (btrfsx_csum(le16toh(sb->csum_type), (uint8_t *)sb + BTRFS_CSUM_SIZE,
			BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, csum) ||
	    memcmp(csum, sb->csum, csum_size))
		return BX_SB_BAD_CSUM;
	if (le64toh(sb->bytenr) != offset)
		return BX_SB_BAD_BYTENR;
	return BX_SB_OK;
}
