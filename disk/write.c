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
 * leaving copies that disagree. A run of @nr adjacent requests is read back
 * in one read and each compared; @durable[k] (k: the request's place in
 * @base; may be NULL) says which matched. Returns the first mismatch or read
 * failure.
 */
static int verify_run(const struct bx_write_req *const *reqs, size_t nr,
		      const struct bx_write_req *base, bool *durable)
{
	struct bx_device *dev = reqs[0]->dev;
	uint64_t at = reqs[0]->physical;
	size_t len = (size_t)(reqs[nr - 1]->physical + reqs[nr - 1]->len - at);
	uint8_t *back = malloc(len ? len : 1);
	int ret;

	if (!back)
		return bx_error(-ENOMEM, "out of memory");
	posix_fadvise(dev->fd, (off_t)at, (off_t)len, POSIX_FADV_DONTNEED);
	ret = bx_read_physical(dev, back, len, at);
	if (ret)
		ret = bx_error_wrap(ret, "reading back what was written");
	for (size_t i = 0; i < nr; i++) {
		const struct bx_write_req *r = reqs[i];
		bool same = !ret && !memcmp(back + (r->physical - at), r->buf, r->len);

		if (durable)
			durable[r - base] = same;
		if (!same && !ret)
			ret = bx_error(-EIO, "%s: the write of %zu bytes at %llu did not reach the "
				       "device (it reads back different bytes)", dev->path, r->len,
				       (unsigned long long)r->physical);
	}
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
	struct bx_write_req req;
	const struct bx_write_req *one = &req;
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
	req = (struct bx_write_req){ dev, physical, buf, len };
	return verify_run(&one, 1, &req, NULL);
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
	const struct bx_write_req *x = *(const struct bx_write_req *const *)a;
	const struct bx_write_req *y = *(const struct bx_write_req *const *)b;

	if (x->dev->devid != y->dev->devid)
		return x->dev->devid < y->dev->devid ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->physical != y->physical)
		return x->physical < y->physical ? -1 : 1;
	return 0;
}

/* Whether @next continues the run of @nr requests that ends with @prev: one pwritev. */
static bool same_run(const struct bx_write_req *prev, const struct bx_write_req *next, size_t nr)
{
	return next->dev == prev->dev && prev->physical + prev->len == next->physical &&
	       nr < IOV_MAX;
}

/* One write of @nr adjacent requests. */
static int write_run(struct bx_fs *fs, const struct bx_write_req *const *reqs, size_t nr)
{
	struct bx_device *dev = reqs[0]->dev;
	struct iovec iov[IOV_MAX];
	uint64_t at = reqs[0]->physical, end = reqs[nr - 1]->physical + reqs[nr - 1]->len;
	int ret = bx_fault_before_write(fs);

	if (!ret)
		ret = check_writable(fs, dev, end - at, at);
	for (size_t i = 0; i < nr && !ret; i++)
		ret = bx_fault_remember(fs, dev, reqs[i]->len, reqs[i]->physical);
	if (ret)
		return ret;
	for (size_t i = 0; i < nr; i++)
		iov[i] = (struct iovec){ (void *)reqs[i]->buf, reqs[i]->len };
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

/* Reads back the runs of the first @nr requests of @order; the first failure. */
static int verify_runs(const struct bx_write_req *const *order, size_t nr,
		       const struct bx_write_req *base, bool *durable)
{
	size_t start = 0;
	int ret = 0;

	for (size_t i = 1; i <= nr; i++) {
		int r;

		if (i < nr && same_run(order[i - 1], order[i], i - start))
			continue;
		r = verify_run(order + start, i - start, base, durable);
		if (!ret)
			ret = r;
		start = i;
	}
	return ret;
}

/*
 * After a failed write: what was written before it is flushed and read
 * back, so that @durable says what reached the device. The failure's
 * message is the one returned.
 */
static void settle_after_failure(struct flush_job *jobs, size_t nr_jobs,
				 const struct bx_write_req *const *order, size_t issued,
				 const struct bx_write_req *base, bool *durable, int ret)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s", bx_error_message(ret));
	if (!flush_devices(jobs, nr_jobs))
		verify_runs(order, issued, base, durable);
	bx_error(ret, "%s", msg);
}

int bx_batch_submit_each(struct bx_fs *fs, struct bx_write_batch *batch, bool *durable)
{
	const struct bx_write_req **order = NULL;
	struct flush_job *jobs = NULL;
	size_t nr_jobs = 0, start = 0, issued = 0;
	int ret = 0;

	if (!batch->nr)
		return 0;
	if (durable)
		memset(durable, 0, batch->nr * sizeof(*durable));
	order = malloc(batch->nr * sizeof(*order));
	jobs = calloc(batch->nr, sizeof(*jobs));
	if (!order || !jobs) {
		ret = bx_error(-ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < batch->nr; i++)
		order[i] = &batch->reqs[i];
	qsort(order, batch->nr, sizeof(*order), req_cmp);
	for (size_t i = 1; i < batch->nr; i++) {
		const struct bx_write_req *a = order[i - 1], *b = order[i];

		if (a->dev == b->dev && a->physical + a->len > b->physical) {
			ret = bx_error(-EINVAL, "%s: overlapping writes at %llu", a->dev->path,
				       (unsigned long long)b->physical);
			goto out;
		}
	}
	for (size_t i = 1; i <= batch->nr && !ret; i++) {
		const struct bx_write_req *prev = order[i - 1];

		if (i < batch->nr && same_run(prev, order[i], i - start))
			continue;
		ret = write_run(fs, order + start, i - start);
		if (!nr_jobs || jobs[nr_jobs - 1].dev != prev->dev)
			jobs[nr_jobs++].dev = prev->dev;
		start = issued = i;
	}
	if (!ret)
		ret = flush_devices(jobs, nr_jobs);
	if (!ret) {
		bx_fault_forget(fs, NULL);
		ret = verify_runs(order, batch->nr, batch->reqs, durable);
	} else if (durable) {
		settle_after_failure(jobs, nr_jobs, order, issued, batch->reqs, durable, ret);
	}
out:
	free(order);
	free(jobs);
	batch->nr = 0;
	return ret;
}

int bx_batch_submit(struct bx_fs *fs, struct bx_write_batch *batch)
{
	return bx_batch_submit_each(fs, batch, NULL);
}
