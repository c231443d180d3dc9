/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "common/error.h"
#include "format/csum.h"
#include "disk/io.h"
#include "disk/write.h"
#include "disk/write-private.h"

void bx_write_log_release(struct bx_fs *fs)
{
	bx_fault_forget(fs, NULL);
}

/* ---- writes ---- */

/* The message of a write (@physical) or, for UINT64_MAX, a flush of @dev that failed with @err. */
static int device_failed(const struct bx_device *dev, int err, uint64_t physical)
{
	char what[64] = "flush";

	if (physical != UINT64_MAX)
		snprintf(what, sizeof(what), "write at %llu", (unsigned long long)physical);
	if (err == -ETIMEDOUT)
		return bx_error(err, "%s: %s did not complete within %u s (the device stalls)",
				dev->path, what, dev->io_timeout);
	errno = -err;
	return bx_error(err, "%s: %s failed: %m", dev->path, what);
}

/*
 * A flushed write is read back from the device, past the page cache: a disk
 * or path that acknowledges writes it does not keep (dm-flakey drop_writes
 * in the tests, a lying cache in the field) is caught at the write it lost,
 * and the writer stops there as if the machine had, instead of going on and
 * leaving copies that disagree.
 */
static int verify_written(struct bx_device *dev, const void *buf, size_t len, uint64_t physical)
{
	uint8_t *back = malloc(len ? len : 1);
	int ret;

	if (!back)
		return bx_error(-ENOMEM, "out of memory");
	posix_fadvise(dev->fd, (off_t)physical, (off_t)len, POSIX_FADV_DONTNEED);
	ret = bx_read_physical(dev, back, len, physical);
	if (ret)
		ret = bx_error_wrap(ret, "reading back what was written");
	else if (memcmp(back, buf, len))
		ret = bx_error(-EIO, "%s: the write of %zu bytes at %llu did not reach the device "
			       "(it reads back different bytes)", dev->path, len,
			       (unsigned long long)physical);
	free(back);
	return ret;
}

static int check_writable(const struct bx_fs *fs, struct bx_device *dev, size_t len,
			  uint64_t physical)
{
	if (dev->seed)
		return bx_error(-EROFS, "%s: a seed device, never written (the kernel keeps it "
				"read-only)", dev->path);
	if (!dev->writable)
		return bx_error(-EROFS, "%s: opened read-only", dev->path);
	if (fs->writes.refused)
		return bx_error(-EPERM, "%s: this command does not write (BX_CMD_WRITES)", dev->path);
	if (physical + len > dev->size)
		return bx_error(-ENOSPC, "%s: write at %llu beyond the end of the device", dev->path,
				(unsigned long long)physical);
	return 0;
}

int bx_write_physical(struct bx_fs *fs, struct bx_device *dev, const void *buf, size_t len,
		      uint64_t physical)
{
	int ret = bx_fault_before_write(fs);

	if (!ret)
		ret = check_writable(fs, dev, len, physical);
	if (!ret)
		ret = bx_fault_remember(fs, dev, len, physical);
	if (ret)
		return ret;
	ret = bx_pwrite_timed(dev->fd, buf, len, physical, dev->io_timeout);
	if (ret)
		return device_failed(dev, ret, physical);
	fs->nr_writes++;
	ret = bx_fault_after_write(fs);
	if (ret)
		return ret;
	ret = bx_fdatasync_timed(dev->fd, dev->io_timeout);
	if (ret)
		return device_failed(dev, ret, UINT64_MAX);
	bx_fault_forget(fs, dev);
	return verify_written(dev, buf, len, physical);
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
		enum bx_sb_status status = bx_read_super_copy(dev->fd, dev->size, i, &sb,
							      dev->io_timeout);
		int ret;

		if (status == BX_SB_BEYOND_DEVICE)
			continue;
		if (status == BX_SB_TIMEOUT)
			return bx_error(-ETIMEDOUT, "%s: superblock copy %d: the read did not complete "
					"within %u s (the device stalls)", dev->path, i,
					dev->io_timeout);
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

void bx_batch_init(struct bx_write_batch *batch)
{
	memset(batch, 0, sizeof(*batch));
}

void bx_batch_release(struct bx_write_batch *batch)
{
	free(batch->reqs);
	memset(batch, 0, sizeof(*batch));
}

int bx_batch_add(struct bx_write_batch *batch, struct bx_device *dev, const void *buf, size_t len,
		 uint64_t physical)
{
	if (batch->nr == batch->cap) {
		size_t cap = batch->cap ? batch->cap * 2 : 64;
		struct bx_write_req *reqs = realloc(batch->reqs, cap * sizeof(*reqs));

		if (!reqs)
			return bx_error(-ENOMEM, "out of memory");
		batch->reqs = reqs;
		batch->cap = cap;
	}
	batch->reqs[batch->nr++] = (struct bx_write_req){ dev, physical, buf, len };
	return 0;
}

int bx_batch_add_logical(struct bx_fs *fs, struct bx_write_batch *batch, const void *buf,
			 size_t len, uint64_t logical)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);
	int copies = bx_num_copies(fs, logical);

	if (!chunk)
		return bx_error(-ENOENT, "logical %llu is outside every chunk",
				(unsigned long long)logical);
	if (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK)
		return bx_error(-EOPNOTSUPP, "logical %llu is in a %s chunk; write whole stripes",
				(unsigned long long)logical, bx_profile_name(chunk->type));
	for (int mirror = 1; mirror <= copies; mirror++) {
		const uint8_t *p = buf;
		uint64_t at = logical;
		size_t left = len;

		while (left) {
			struct bx_stripe_loc loc;
			uint64_t piece = left;
			int ret = bx_map_logical(fs, at, &piece, mirror, &loc);

			if (!ret && !loc.dev)
				ret = bx_error(-ENODEV, "devid %llu is missing",
					       (unsigned long long)loc.devid);
			if (!ret)
				ret = bx_batch_add(batch, loc.dev, p, piece, loc.physical);
			if (ret)
				return ret;
			at += piece;
			p += piece;
			left -= piece;
		}
	}
	return 0;
}

static int req_cmp(const void *a, const void *b)
{
	const struct bx_write_req *x = a, *y = b;

	if (x->dev->devid != y->dev->devid)
		return x->dev->devid < y->dev->devid ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->physical != y->physical)
		return x->physical < y->physical ? -1 : 1;
	return 0;
}

/* One write of @nr adjacent requests. */
static int write_run(struct bx_fs *fs, const struct bx_write_req *reqs, size_t nr)
{
	struct bx_device *dev = reqs[0].dev;
	struct iovec iov[IOV_MAX];
	uint64_t at = reqs[0].physical, end = reqs[nr - 1].physical + reqs[nr - 1].len;
	int ret = bx_fault_before_write(fs);

	if (!ret)
		ret = check_writable(fs, dev, end - at, at);
	for (size_t i = 0; i < nr && !ret; i++)
		ret = bx_fault_remember(fs, dev, reqs[i].len, reqs[i].physical);
	if (ret)
		return ret;
	for (size_t i = 0; i < nr; i++)
		iov[i] = (struct iovec){ (void *)reqs[i].buf, reqs[i].len };
	ret = bx_pwritev_timed(dev->fd, iov, (int)nr, at, dev->io_timeout);
	if (ret)
		return device_failed(dev, ret, at);
	fs->nr_writes++;
	return bx_fault_after_write(fs);
}

struct flush_job {
	struct bx_device *dev;
	pthread_t thread;
	int err;			/* 0 or a negative errno */
	bool started;
};

static void *flush_thread(void *arg)
{
	struct flush_job *job = arg;

	job->err = bx_fdatasync_timed(job->dev->fd, job->dev->io_timeout);
	return NULL;
}

/* fdatasync of every device in @jobs at once: the flushes of a loop device wait on its file. */
static int flush_devices(struct flush_job *jobs, size_t nr)
{
	int ret = 0;

	for (size_t i = 0; i < nr; i++) {
		jobs[i].started = nr > 1 &&
				  !pthread_create(&jobs[i].thread, NULL, flush_thread, &jobs[i]);
		if (!jobs[i].started)
			flush_thread(&jobs[i]);
	}
	for (size_t i = 0; i < nr; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
		if (jobs[i].err && !ret)
			ret = device_failed(jobs[i].dev, jobs[i].err, UINT64_MAX);
	}
	return ret;
}

int bx_batch_submit(struct bx_fs *fs, struct bx_write_batch *batch)
{
	struct flush_job *jobs = NULL;
	size_t nr_jobs = 0, start = 0;
	int ret = 0;

	if (!batch->nr)
		return 0;
	qsort(batch->reqs, batch->nr, sizeof(*batch->reqs), req_cmp);
	for (size_t i = 1; i < batch->nr; i++) {
		const struct bx_write_req *a = &batch->reqs[i - 1], *b = &batch->reqs[i];

		if (a->dev == b->dev && a->physical + a->len > b->physical) {
			ret = bx_error(-EINVAL, "%s: overlapping writes at %llu", a->dev->path,
				       (unsigned long long)b->physical);
			goto out;
		}
	}
	jobs = calloc(batch->nr, sizeof(*jobs));
	if (!jobs) {
		ret = bx_error(-ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 1; i <= batch->nr && !ret; i++) {
		const struct bx_write_req *prev = &batch->reqs[i - 1];
		bool merge = i < batch->nr && batch->reqs[i].dev == prev->dev &&
			     prev->physical + prev->len == batch->reqs[i].physical &&
			     i - start < IOV_MAX;

		if (merge)
			continue;
		ret = write_run(fs, batch->reqs + start, i - start);
		if (!nr_jobs || jobs[nr_jobs - 1].dev != prev->dev)
			jobs[nr_jobs++].dev = prev->dev;
		start = i;
	}
	if (!ret)
		ret = flush_devices(jobs, nr_jobs);
	if (!ret)
		bx_fault_forget(fs, NULL);
	for (size_t i = 0; i < batch->nr && !ret; i++)
		ret = verify_written(batch->reqs[i].dev, batch->reqs[i].buf, batch->reqs[i].len,
				     batch->reqs[i].physical);
out:
	free(jobs);
	batch->nr = 0;
	return ret;
}
