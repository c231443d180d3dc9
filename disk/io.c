/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one read path: see io.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <isa-l.h>

#include "common/error.h"
#include "disk/io.h"
#include "format/raid6.h"

int bx_read_physical(const struct bx_device *dev, void *buf, size_t len, uint64_t physical)
{
	ssize_t ret = bx_pread_timed(dev->fd, buf, len, physical, dev->io_timeout);

	if (ret == -ETIMEDOUT)
		return bx_error(-ETIMEDOUT, "%s: read of %zu bytes at %llu did not complete within "
				"%u s (the device stalls)", dev->path, len,
				(unsigned long long)physical, dev->io_timeout);
	if (ret < 0) {
		errno = (int)-ret;
		return bx_error((int)ret, "%s: read of %zu bytes at %llu failed: %m",
				dev->path, len, (unsigned long long)physical);
	}
	if ((size_t)ret < len)
		return bx_error(-EIO, "%s: read at %llu is beyond the end (device truncated?)",
				dev->path, (unsigned long long)(physical + (uint64_t)ret));
	return 0;
}

static int read_loc(const struct bx_stripe_loc *loc, void *buf, size_t len)
{
	if (!loc->dev)
		return bx_error(-ENODEV, "devid %llu is missing", (unsigned long long)loc->devid);
	return bx_read_physical(loc->dev, buf, len, loc->physical);
}

/*
 * Rebuilds @len bytes at @in_stripe of data stripe @target from the other
 * data stripes and parity @parity (0 = P by XOR, 1 = Q in GF(2^8)).
 */
static int raid56_rebuild(const struct bx_full_stripe *fstripe, int target, int parity,
			  uint64_t in_stripe, uint8_t *out, size_t len)
{
	uint8_t *tmp = malloc(len);
	struct bx_stripe_loc parity_loc = fstripe->stripes[fstripe->nr_data + parity];
	int ret;

	if (!tmp)
		return bx_error(-ENOMEM, "out of memory");
	parity_loc.physical += in_stripe;
	ret = read_loc(&parity_loc, out, len);
	for (int i = 0; !ret && i < fstripe->nr_data; i++) {
		struct bx_stripe_loc loc = fstripe->stripes[i];
		uint8_t coef = bx_raid6_coef(i);

		if (i == target)
			continue;
		loc.physical += in_stripe;
		ret = read_loc(&loc, tmp, len);
		for (size_t b = 0; !ret && b < len; b++)
			out[b] ^= parity ? gf_mul(coef, tmp[b]) : tmp[b];
	}
	if (!ret && parity) {
		uint8_t inv = gf_inv(bx_raid6_coef(target));

		for (size_t b = 0; b < len; b++)
			out[b] = gf_mul(inv, out[b]);
	}
	free(tmp);
	return ret;
}

static int read_raid56_rebuild(struct bx_fs *fs, uint64_t logical, uint8_t *buf, size_t len,
			       int mirror)
{
	struct bx_full_stripe fstripe;
	uint64_t in_row;
	int ret;

	ret = bx_map_full_stripe(fs, logical, &fstripe);
	if (ret)
		return ret;
	if (mirror - 2 >= fstripe.nr_parity)
		return bx_error(-EINVAL, "logical %llu has no mirror %d",
				(unsigned long long)logical, mirror);
	in_row = logical - fstripe.logical_start;
	return raid56_rebuild(&fstripe, (int)(in_row / fstripe.stripe_len), mirror - 2,
			      in_row % fstripe.stripe_len, buf, len);
}

static int is_raid56(const struct bx_fs *fs, uint64_t logical)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);

	return chunk && (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK);
}

int bx_read_logical(struct bx_fs *fs, uint64_t logical, void *buf, size_t len, int mirror)
{
	uint8_t *out = buf;

	while (len) {
		struct bx_stripe_loc loc;
		uint64_t piece = len;
		int ret;

		ret = bx_map_logical(fs, logical, &piece, mirror > 1 && is_raid56(fs, logical) ?
				     1 : mirror, &loc);
		if (ret)
			return ret;
		if (mirror > 1 && is_raid56(fs, logical))
			ret = read_raid56_rebuild(fs, logical, out, piece, mirror);
		else
			ret = read_loc(&loc, out, piece);
		if (ret)
			return bx_error_wrap(ret, "logical %llu mirror %d",
					     (unsigned long long)logical, mirror);
		logical += piece;
		out += piece;
		len -= piece;
	}
	return 0;
}

void bx_readahead_logical(struct bx_fs *fs, uint64_t logical, uint64_t len, int mirror)
{
	while (len) {
		struct bx_stripe_loc loc;
		uint64_t piece = len;

		if (bx_map_logical(fs, logical, &piece, mirror, &loc))
			return;
		if (loc.dev)
			bx_readahead_physical(loc.dev->fd, loc.physical, piece);
		logical += piece;
		len -= piece;
	}
}

void bx_readahead_physical(int fd, uint64_t offset, uint64_t len)
{
	posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

int bx_open_direct(const struct bx_device *dev)
{
	char self[64];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", dev->fd);
	fd = open(self, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fd = open(self, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bx_error(-errno, "%s: cannot open for reading: %m", dev->path);
	return fd;
}
