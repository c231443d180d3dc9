#include <errno.h>
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
#include "kernel-shared/csum.h"
#include "kernel-shared/io.h"
#include "kernel-shared/write.h"

/* ---- crash simulation (kernel-shared/fault.h) ---- */

/* A write not yet flushed, and what it overwrote, so a simulated crash can lose it. */
struct bx_unflushed {
	struct bx_device *dev;
	uint64_t physical;
	size_t len;
	uint8_t *old;
};

static int parse_count(const char *name, const char *value, uint64_t *out)
{
	char *end;

	*out = 0;
	if (!value || !*value)
		return 0;
	errno = 0;
	*out = strtoull(value, &end, 10);
	if (errno || *end || *value == '-')
		return bx_error(-EINVAL, "%s=%s: not a number of writes (0: off)", name, value);
	return 0;
}

static int parse_drop_list(const char *value, struct bx_fault_plan *plan)
{
	const char *p = value;

	if (!strcmp(value, "all")) {
		plan->drop_all = true;
		return 0;
	}
	while (*p) {
		char *end;
		unsigned long k;

		errno = 0;
		k = strtoul(p, &end, 10);
		if (errno || end == p || k < 1 || k > BX_FAULT_MAX_LISTED || (*end && *end != ','))
			return bx_error(-EINVAL, "BTRFSX_FAULT_DROP_UNFLUSHED=%s: 'all' or a list of "
					"numbers from 1 to %d", value, BX_FAULT_MAX_LISTED);
		plan->drop_mask |= 1ULL << (k - 1);
		p = *end ? end + 1 : end;
	}
	return 0;
}

int bx_fault_plan_parse(struct bx_fault_plan *plan, const char *after_writes,
			const char *drop_unflushed, const char *pause_before_write)
{
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = parse_count("BTRFSX_FAULT_AFTER_WRITES", after_writes, &plan->after_writes);
	if (!ret)
		ret = parse_count("BTRFSX_FAULT_PAUSE_BEFORE_WRITE", pause_before_write,
				  &plan->pause_before_write);
	if (ret || !drop_unflushed || !*drop_unflushed)
		return ret;
	if (!plan->after_writes)
		return bx_error(-EINVAL, "BTRFSX_FAULT_DROP_UNFLUSHED needs "
				"BTRFSX_FAULT_AFTER_WRITES (the crash point)");
	return parse_drop_list(drop_unflushed, plan);
}

static int write_fully(int fd, const uint8_t *buf, size_t len, uint64_t physical)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, (off_t)(physical + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* With a plan that drops unflushed writes: keeps what @len bytes at @physical hold now. */
static int remember_unflushed(struct bx_fs *fs, struct bx_device *dev, size_t len,
			      uint64_t physical)
{
	struct bx_unflushed *log, *rec;
	int ret;

	if (!bx_fault_drops(&fs->fault))
		return 0;
	log = realloc(fs->unflushed, (fs->nr_unflushed + 1) * sizeof(*log));
	if (!log)
		return bx_error(-ENOMEM, "out of memory");
	fs->unflushed = log;
	rec = &log[fs->nr_unflushed];
	*rec = (struct bx_unflushed){ dev, physical, len, malloc(len ? len : 1) };
	if (!rec->old)
		return bx_error(-ENOMEM, "out of memory");
	ret = bx_read_physical(dev, rec->old, len, physical);
	if (ret) {
		free(rec->old);
		return bx_error_wrap(ret, "keeping what the write at %llu overwrites",
				     (unsigned long long)physical);
	}
	if (!fs->nr_unflushed++)
		fs->first_unflushed_write = fs->nr_writes + 1;
	return 0;
}

/* Flushed writes of @dev (NULL: every device) can no longer be lost. */
static void forget_unflushed(struct bx_fs *fs, const struct bx_device *dev)
{
	size_t kept = 0;

	for (size_t i = 0; i < fs->nr_unflushed; i++) {
		if (!dev || fs->unflushed[i].dev == dev)
			free(fs->unflushed[i].old);
		else
			fs->unflushed[kept++] = fs->unflushed[i];
	}
	fs->nr_unflushed = kept;
	if (!kept) {
		free(fs->unflushed);
		fs->unflushed = NULL;
	}
}

void bx_write_log_release(struct bx_fs *fs)
{
	forget_unflushed(fs, NULL);
}

static bool dropped(const struct bx_fault_plan *plan, size_t index)
{
	return plan->drop_all || (index < BX_FAULT_MAX_LISTED && (plan->drop_mask >> index) & 1);
}

/*
 * The machine stops now: the chosen unflushed writes never reached the disk.
 * They were issued into disjoint ranges (a batch refuses overlaps), so putting
 * back what they overwrote, newest first, is the same as never writing them.
 */
static int simulate_crash(struct bx_fs *fs)
{
	size_t nr = fs->nr_unflushed, nr_dropped = 0;
	int ret = 0;

	for (size_t i = nr; i-- > 0 && !ret;) {
		const struct bx_unflushed *rec = &fs->unflushed[i];

		if (!dropped(&fs->fault, i))
			continue;
		ret = write_fully(rec->dev->fd, rec->old, rec->len, rec->physical);
		if (!ret && fdatasync(rec->dev->fd) < 0)
			ret = -errno;
		nr_dropped++;
	}
	forget_unflushed(fs, NULL);
	if (ret) {
		errno = -ret;
		return bx_error(ret, "fault injection: losing an unflushed write failed: %m");
	}
	return bx_error(-EIO, "write stopped by fault injection after %llu writes (writes "
			"%llu-%llu unflushed: %zu requests, %zu dropped)",
			(unsigned long long)fs->nr_writes,
			(unsigned long long)fs->first_unflushed_write,
			(unsigned long long)fs->nr_writes, nr, nr_dropped);
}

/* Before each write: the stop (once reached, every write fails) and the pause. */
static int fault_before_write(struct bx_fs *fs)
{
	const struct bx_fault_plan *plan = &fs->fault;

	if (plan->after_writes && fs->nr_writes >= plan->after_writes)
		return bx_error(-EIO, "write stopped by fault injection after %llu writes",
				(unsigned long long)fs->nr_writes);
	if (plan->pause_before_write == fs->nr_writes + 1)
		raise(SIGSTOP);
	return 0;
}

/* After each write, before its flush: the stop, when unflushed writes are to be lost. */
static int fault_after_write(struct bx_fs *fs)
{
	fs->nr_writes++;
	if (bx_fault_drops(&fs->fault) && fs->nr_writes == fs->fault.after_writes)
		return simulate_crash(fs);
	return 0;
}

/* ---- writes ---- */

static int check_writable(struct bx_device *dev, size_t len, uint64_t physical)
{
	if (!dev->writable)
		return bx_error(-EROFS, "%s: opened read-only", dev->path);
	if (physical + len > dev->size)
		return bx_error(-ENOSPC, "%s: write at %llu beyond the end of the device", dev->path,
				(unsigned long long)physical);
	return 0;
}

int bx_write_physical(struct bx_fs *fs, struct bx_device *dev, const void *buf, size_t len,
		      uint64_t physical)
{
	int ret = fault_before_write(fs);

	if (!ret)
		ret = check_writable(dev, len, physical);
	if (!ret)
		ret = remember_unflushed(fs, dev, len, physical);
	if (ret)
		return ret;
	ret = write_fully(dev->fd, buf, len, physical);
	if (ret) {
		errno = -ret;
		return bx_error(ret, "%s: write at %llu failed: %m", dev->path,
				(unsigned long long)physical);
	}
	ret = fault_after_write(fs);
	if (ret)
		return ret;
	if (fdatasync(dev->fd) < 0)
		return bx_error(-errno, "%s: flush failed: %m", dev->path);
	forget_unflushed(fs, dev);
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

/* One pwritev of @nr adjacent requests, finished on short writes. */
static int write_run(struct bx_fs *fs, const struct bx_write_req *reqs, size_t nr)
{
	struct bx_device *dev = reqs[0].dev;
	struct iovec iov[IOV_MAX];
	uint64_t at = reqs[0].physical, end = reqs[nr - 1].physical + reqs[nr - 1].len;
	size_t first = 0;
	int ret = fault_before_write(fs);

	if (!ret)
		ret = check_writable(dev, end - at, at);
	for (size_t i = 0; i < nr && !ret; i++)
		ret = remember_unflushed(fs, dev, reqs[i].len, reqs[i].physical);
	if (ret)
		return ret;
	for (size_t i = 0; i < nr; i++)
		iov[i] = (struct iovec){ (void *)reqs[i].buf, reqs[i].len };
	while (at < end) {
		ssize_t n = pwritev(dev->fd, iov + first, (int)(nr - first), (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return bx_error(n < 0 ? -errno : -EIO, "%s: write at %llu failed: %m",
					dev->path, (unsigned long long)at);
		at += (uint64_t)n;
		/* Skip what was written, trimming a partly written vector. */
		while (n > 0 && first < nr) {
			if ((size_t)n >= iov[first].iov_len) {
				n -= (ssize_t)iov[first].iov_len;
				first++;
			} else {
				iov[first].iov_base = (uint8_t *)iov[first].iov_base + n;
				iov[first].iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return fault_after_write(fs);
}

struct flush_job {
	struct bx_device *dev;
	pthread_t thread;
	int err;
	bool started;
};

static void *flush_thread(void *arg)
{
	struct flush_job *job = arg;

	job->err = fdatasync(job->dev->fd) < 0 ? errno : 0;
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
		if (jobs[i].err && !ret) {
			errno = jobs[i].err;
			ret = bx_error(-jobs[i].err, "%s: flush failed: %m", jobs[i].dev->path);
		}
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
		forget_unflushed(fs, NULL);
out:
	free(jobs);
	batch->nr = 0;
	return ret;
}
