#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "kernel-shared/csum.h"
#include "kernel-shared/write.h"

static int fault_injected(struct bx_fs *fs)
{
	if (!fs->fault_after_writes || fs->nr_writes < fs->fault_after_writes)
		return 0;
	return bx_error(-EIO, "write stopped by fault injection after %llu writes",
			(unsigned long long)fs->nr_writes);
}

int bx_write_physical(struct bx_fs *fs, struct bx_device *dev, const void *buf, size_t len,
		      uint64_t physical)
{
	size_t done = 0;
	int ret = fault_injected(fs);

	if (ret)
		return ret;
	if (!dev->writable)
		return bx_error(-EROFS, "%s: opened read-only", dev->path);
	if (physical + len > dev->size)
		return bx_error(-ENOSPC, "%s: write at %llu beyond the end of the device", dev->path,
				(unsigned long long)physical);
	while (done < len) {
		ssize_t n = pwrite(dev->fd, (const uint8_t *)buf + done, len - done,
				   (off_t)(physical + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return bx_error(n < 0 ? -errno : -EIO, "%s: write at %llu failed: %m",
					dev->path, (unsigned long long)(physical + done));
		done += (size_t)n;
	}
	if (fdatasync(dev->fd) < 0)
		return bx_error(-errno, "%s: flush failed: %m", dev->path);
	fs->nr_writes++;
	return 0;
}

static int write_logical_mirror(struct bx_fs *fs, uint64_t logical, const uint8_t *buf,
				size_t len, int mirror)
{
	while (len) {
		struct bx_stripe_loc loc;
		uint64_t piece = len;
		int ret = bx_map_logical(fs, logical, &piece, mirror, &loc);

		if (ret)
			return ret;
		if (!loc.dev)
			return bx_error(-ENODEV, "devid %llu is missing", (unsigned long long)loc.devid);
		ret = bx_write_physical(fs, loc.dev, buf, piece, loc.physical);
		if (ret)
			return ret;
		logical += piece;
		buf += piece;
		len -= piece;
	}
	return 0;
}

int bx_write_tree_block(struct bx_fs *fs, uint8_t *block, uint64_t bytenr)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, bytenr);
	int copies = bx_num_copies(fs, bytenr);
	int ret;

	if (!chunk)
		return bx_error(-ENOENT, "tree block %llu is outside every chunk",
				(unsigned long long)bytenr);
	if (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK)
		return bx_error(-EOPNOTSUPP, "tree block %llu is in a %s chunk; in-place updates "
				"there are not supported", (unsigned long long)bytenr,
				bx_profile_name(chunk->type));
	ret = btrfsx_csum(fs->csum_type, block + BTRFS_CSUM_SIZE, fs->nodesize - BTRFS_CSUM_SIZE,
			  block);
	for (int mirror = 1; !ret && mirror <= copies; mirror++)
		ret = write_logical_mirror(fs, bytenr, block, fs->nodesize, mirror);
	return ret;
}

int bx_write_super_copies(struct bx_fs *fs, struct bx_device *dev,
			  void (*edit)(struct btrfs_super_block *sb, void *arg), void *arg)
{
	/* Backup copies first: the primary, which mounts read, changes last. */
	for (int i = BTRFS_SUPER_MIRROR_MAX - 1; i >= 0; i--) {
		struct btrfs_super_block sb;
		enum bx_sb_status status = bx_read_super_copy(dev->fd, dev->size, i, &sb);
		int ret;

		if (status == BX_SB_BEYOND_DEVICE)
			continue;
		if (status != BX_SB_OK) {
			bx_warn("%s: superblock copy %d left alone: %s", dev->path, i,
				bx_sb_status_str(status));
			continue;
		}
		edit(&sb, arg);
		ret = btrfsx_csum(le16toh(sb.csum_type), (uint8_t *)&sb + BTRFS_CSUM_SIZE,
				  BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb.csum);
		if (!ret)
			ret = bx_write_physical(fs, dev, &sb, sizeof(sb), btrfs_sb_offset(i));
		if (ret)
			return bx_error_wrap(ret, "superblock copy %d", i);
		if (i == dev->sb_mirror)
			dev->sb = sb;
	}
	return 0;
}
