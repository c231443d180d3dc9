/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One device's scrub (every profile but RAID5/6): its copies of each chunk
 * in physical order, planned window by window and merged into large reads
 * that skip unallocated stretches. A planner thread runs ahead (it reads the
 * extent and csum trees, which may wait behind the device's queue) and
 * hands read descriptors to the reader, which keeps a fixed number of reads
 * in flight through io_uring on an O_DIRECT descriptor. A completed read's
 * data checksums are checked where it is cheapest (scrub.c decides per
 * checksum type): crc32c and xxhash64 by the reader itself, sha256 and
 * blake2b by the hashing threads (scrub-hash.c) while the reader goes on
 * reading. Then the reader checks the read's tree blocks and handles what
 * was bad: a bad sector or tree block is read from the other mirrors and,
 * unless read-only, the good copy is written back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <liburing.h>

#include "common/error.h"
#include "disk/io.h"
#include "scrub/scrub-internal.h"

/* Unallocated bytes read through rather than splitting a request. */
#define GAP_MAX (64 * 1024)

/*
 * Reads are 4 MiB when the budget allows: through loop devices and virtio
 * disks, large requests stream far better than many small ones (about 1.7x
 * at the same bytes in flight, measured when every buffer was scattered
 * pages), and buffers of 2 MiB and more get huge pages, which halve the
 * requests the device sees (scrub_alloc_read_buffer). The read buffers of
 * the devices still reading share the budget (ctx->io_budget): each gets
 * between 2 and 16 reads in flight, and when a device is done (devices
 * rarely hold the same amount), its share goes to the others. On a shared
 * virtual disk the bytes in flight, not the request count, set the pace
 * (measured: 4 x 1 MiB is slower than 1 x 4 MiB, 3 x 8 MiB as fast as
 * 6 x 4 MiB).
 */
#define MAX_REQUEST (4u * 1024 * 1024)
#define MIN_DEPTH 2u
#define MAX_DEPTH 16u
/* Planned reads per read buffer: how far the planner may run ahead. */
#define PLAN_AHEAD 4u
/* The ring's tag of the read of the hashing eventfd (read buffers are tagged by index). */
#define HASHED_TAG UINT64_MAX

/* One copy of a chunk on the device. */
struct dev_job {
	const struct bx_chunk *chunk;
	int index;                    /* stripe index in the chunk */
	int mirror;                   /* which copy it is, 1-based */
	uint64_t physical;
};

/* A planned read: where, and what each of its sectors holds. */
struct req_desc {
	const struct dev_job *job;
	uint64_t physical;
	uint32_t len;
	uint32_t nr_sectors;
	uint64_t bytes;               /* data and tree bytes it verifies */
	struct bx_scrub_counters counts; /* its windows' extents and bytes, added once read */
	struct scrub_sector *sec;
	uint8_t *csum;
};

struct slot {
	bool busy;
	bool fixed;                   /* its buffer is registered with the ring */
	bool hashing;                 /* with the hashing threads */
	bool hashed;                  /* csum_bad holds their verdict */
	struct req_desc *d;
	int res;
	uint8_t *buf;
	uint8_t *rerr;                /* per sector: unreadable */
	uint8_t *csum_bad;            /* per sector: the data checksum did not match */
	struct scrub_hash_job job;
};

struct dev_reader {
	struct scrub_worker *w;
	struct scrub_ctx *ctx;
	struct bx_device *dev;
	struct bx_scrub_counters *c;  /* the reader's (errors) */
	uint32_t ss;
	size_t cs;                    /* checksum size: the stride of req_desc.csum */
	int fd;
	struct io_uring ring;
	bool ring_ok;
	bool sparse_bufs;             /* buffers can be registered one by one */
	struct slot *slots;
	unsigned int nr_slots;        /* allocated; buffers come when first used */
	bool fixed_depth;             /* the caller chose the depth */
	uint32_t req_bytes;
	unsigned int inflight;        /* reads in the ring */
	struct scrub_hash_client hash;
	bool hash_ok;                 /* completed reads go to the hashing threads */
	unsigned int hashing;         /* slots with them */
	bool hashed_armed;            /* the eventfd read is in the ring */
	uint64_t hashed_count;        /* where it lands */
	/* The planner's state, used by its own thread only. */
	struct dev_job *jobs;
	size_t nr_jobs;
	size_t job;
	uint64_t win;
	bool job_open;
	struct scrub_window pending;
	bool have_pending;
	uint64_t pending_phys;
	/* Descriptors between the two threads, under @lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct req_desc *descs;
	unsigned int nr_descs;
	unsigned int *free_list, nr_free;
	unsigned int *ready, ready_head, nr_ready;
	bool plan_done;
	bool plan_stop;
	int plan_ret;
	pthread_t planner;
	bool planner_started;
};

static int own_mirror(const struct bx_chunk *chunk, int index)
{
	if (chunk->type & BTRFS_BLOCK_GROUP_RAID10)
		return index % chunk->sub_stripes + 1;
	if (chunk->type & BTRFS_BLOCK_GROUP_RAID0)
		return 1;
	return index + 1;
}

/* Window @k of a copy on its device: the logical range it holds. */
static bool job_window(const struct dev_job *job, uint64_t k, uint64_t *logical, uint32_t *len)
{
	const struct bx_chunk *chunk = job->chunk;
	uint64_t groups = 1, group = 0, off;

	if (chunk->type & BTRFS_BLOCK_GROUP_RAID0) {
		groups = (uint64_t)chunk->num_stripes;
		group = (uint64_t)job->index;
	} else if (chunk->type & BTRFS_BLOCK_GROUP_RAID10) {
		groups = (uint64_t)(chunk->num_stripes / chunk->sub_stripes);
		group = (uint64_t)(job->index / chunk->sub_stripes);
	}
	off = (k * groups + group) * SCRUB_WINDOW;
	if (off >= chunk->length)
		return false;
	*logical = chunk->logical + off;
	*len = chunk->length - off < SCRUB_WINDOW ? (uint32_t)(chunk->length - off) : SCRUB_WINDOW;
	return true;
}

static int cmp_jobs(const void *a, const void *b)
{
	const struct dev_job *x = a, *y = b;

	return x->physical < y->physical ? -1 : x->physical > y->physical;
}

static int collect_jobs(struct dev_reader *r)
{
	struct bx_fs *fs = r->ctx->fs;
	size_t nr = 0;

	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];

		if (scrub_chunk_pass(r->ctx, chunk) != SCRUB_PASS_DEVICES)
			continue;
		for (int s = 0; s < chunk->num_stripes; s++)
			nr += chunk->stripes[s].dev == r->dev;
	}
	if (!nr)
		return 0;
	r->jobs = calloc(nr, sizeof(*r->jobs));
	if (!r->jobs)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];

		if (scrub_chunk_pass(r->ctx, chunk) != SCRUB_PASS_DEVICES)
			continue;
		for (int s = 0; s < chunk->num_stripes; s++)
			if (chunk->stripes[s].dev == r->dev)
				r->jobs[r->nr_jobs++] = (struct dev_job){
					chunk, s, own_mirror(chunk, s), chunk->stripes[s].physical };
	}
	qsort(r->jobs, r->nr_jobs, sizeof(*r->jobs), cmp_jobs);
	return 0;
}

/* The next window with extents into r->pending; 1, 0 at the end, <0 error. */
static int next_window(struct dev_reader *r)
{
	struct scrub_planner *p = &r->w->planner;

	while (r->job < r->nr_jobs) {
		const struct dev_job *job = &r->jobs[r->job];
		uint64_t logical, phys;
		uint32_t len;
		int ret;

		if (!r->job_open) {
			ret = scrub_planner_begin(p, job->chunk);
			if (ret) {
				scrub_planner_end(p);
				return ret;
			}
			r->job_open = true;
			r->win = 0;
		}
		if (!job_window(job, r->win, &logical, &len)) {
			scrub_planner_end(p);
			r->job_open = false;
			r->job++;
			continue;
		}
		phys = job->physical + r->win * SCRUB_WINDOW;
		r->win++;
		/* A short member: what lies beyond its end is a finding of its own, not read. */
		if (scrub_beyond_end(r->dev, phys, len))
			continue;
		ret = scrub_planner_window(p, logical, len, &r->pending);
		if (ret)
			return ret;
		if (r->pending.first == r->pending.last)
			continue;
		r->pending_phys = phys;
		return 1;
	}
	return 0;
}

/* Plans the next read into @d: windows merged while contiguous enough. 1, 0 at the end. */
static int fill_desc(struct dev_reader *r, struct req_desc *d)
{
	uint32_t ss = r->ss;

	d->len = 0;
	d->bytes = 0;
	memset(&d->counts, 0, sizeof(d->counts));
	for (;;) {
		struct scrub_window *pw = &r->pending;
		uint64_t first, last;
		uint32_t at;

		if (!r->have_pending) {
			int ret = scrub_cancelled(r->ctx) ? 0 : next_window(r);

			if (ret < 0)
				return ret;
			if (ret == 0)
				break;
			r->have_pending = true;
		}
		first = r->pending_phys + (uint64_t)pw->first * ss;
		last = r->pending_phys + (uint64_t)pw->last * ss;
		if (d->len) {
			uint64_t end = d->physical + d->len;

			if (d->job != &r->jobs[r->job] || first < end || first - end > GAP_MAX ||
			    last - d->physical > r->req_bytes)
				break;
		} else {
			d->job = &r->jobs[r->job];
			d->physical = first;
		}
		for (at = d->len / ss; at < (first - d->physical) / ss; at++)
			d->sec[at].kind = SEC_NONE;
		for (uint32_t i = pw->first; i < pw->last; i++, at++) {
			d->sec[at] = pw->sec[i];
			if (pw->sec[i].kind == SEC_DATA_CSUM)
				memcpy(d->csum + (size_t)at * r->cs,
				       pw->csum + (size_t)i * BTRFS_CSUM_SIZE, r->cs);
		}
		d->len = (uint32_t)(last - d->physical);
		d->nr_sectors = d->len / ss;
		d->bytes += (uint64_t)(pw->data_sectors + pw->tree_sectors) * ss;
		scrub_count_window(r->ctx, &d->counts, pw, r->dev, r->pending_phys);
		r->have_pending = false;
	}
	return d->len > 0;
}

static void *planner_main(void *arg)
{
	struct dev_reader *r = arg;
	int ret = 0;

	for (;;) {
		struct req_desc *d;
		unsigned int idx;

		pthread_mutex_lock(&r->lock);
		while (!r->nr_free && !r->plan_stop)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->plan_stop) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		idx = r->free_list[--r->nr_free];
		pthread_mutex_unlock(&r->lock);
		d = &r->descs[idx];
		ret = fill_desc(r, d);
		pthread_mutex_lock(&r->lock);
		if (ret <= 0) {
			r->free_list[r->nr_free++] = idx;
			pthread_mutex_unlock(&r->lock);
			break;
		}
		r->ready[(r->ready_head + r->nr_ready++) % r->nr_descs] = idx;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
	if (ret < 0)
		scrub_set_fatal(r->ctx, bx_error_wrap(ret, "scrubbing %s", r->dev->path));
	if (r->job_open)
		scrub_planner_end(&r->w->planner);
	r->job_open = false;
	bx_warnings_clear();
	pthread_mutex_lock(&r->lock);
	r->plan_done = true;
	r->plan_ret = ret < 0 ? ret : 0;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Which sectors could not be read: after a failed or short read, each is retried alone. */
static void check_read(struct dev_reader *r, struct slot *s)
{
	uint32_t ss = r->ss;
	uint64_t good = s->res > 0 ? (uint64_t)s->res / ss * ss : 0;

	if (s->res == (int)s->d->len) {
		memset(s->rerr, 0, s->d->nr_sectors);
		return;
	}
	for (uint32_t i = 0; i < s->d->nr_sectors; i++) {
		int ret;

		s->rerr[i] = 0;
		if (s->d->sec[i].kind == SEC_NONE || (uint64_t)(i + 1) * ss <= good)
			continue;
		ret = scrub_pread(r->ctx, r->fd, s->buf + (size_t)i * ss, ss,
				  s->d->physical + (uint64_t)i * ss);
		s->rerr[i] = ret != 0;
		if (scrub_stalled(r->ctx, ret, r->dev))
			return;
	}
}

/* A good copy of a data sector from another mirror into @out. */
static bool fetch_data(struct dev_reader *r, uint64_t logical, int own, const uint8_t *csum,
		       uint8_t *out)
{
	struct bx_fs *rfs = r->w->rfs;
	int copies = bx_num_copies(rfs, logical);

	for (int m = 1; m <= copies; m++) {
		int ret = m == own ? -EAGAIN : bx_read_logical(rfs, logical, out, r->ss, m);

		if (ret == -ETIMEDOUT) {
			scrub_set_fatal(r->ctx, ret);
			break;
		}
		if (ret)
			continue;
		if (!csum || scrub_data_ok(r->ctx, out, csum))
			return true;
	}
	bx_error_clear();
	return false;
}

static bool fetch_tree(struct dev_reader *r, const struct scrub_sector *sec, int own,
		       uint8_t *out)
{
	struct bx_fs *rfs = r->w->rfs;
	int copies = bx_num_copies(rfs, sec->logical);
	enum bx_scrub_fault fault;

	for (int m = 1; m <= copies; m++) {
		int ret = m == own ? -EAGAIN :
			  bx_read_logical(rfs, sec->logical, out, r->ctx->nodesize, m);

		if (ret == -ETIMEDOUT) {
			scrub_set_fatal(r->ctx, ret);
			break;
		}
		if (ret)
			continue;
		if (!scrub_tree_bad(r->ctx, out, sec, &fault))
			return true;
	}
	bx_error_clear();
	return false;
}

static void bad_data(struct dev_reader *r, struct slot *s, uint32_t i, enum bx_scrub_fault fault,
		     const char *reason)
{
	const struct scrub_sector *sec = &s->d->sec[i];
	uint64_t phys = s->d->physical + (uint64_t)i * r->ss;
	struct bx_scrub_error e = { .what = BX_SCRUB_DATA, .fault = fault, .logical = sec->logical,
				    .len = r->ss, .devid = r->dev->devid, .physical = phys,
				    .mirror = s->d->job->mirror, .reason = reason,
				    .extent_start = sec->extent.start,
				    .extent_len = sec->extent.len };
	bool good;

	if (fault == BX_SCRUB_READ_ERROR)
		r->c->read_errors++;
	else
		r->c->csum_errors++;
	good = fetch_data(r, sec->logical, s->d->job->mirror,
			  sec->kind == SEC_DATA_CSUM ? s->d->csum + (size_t)i * r->cs : NULL,
			  r->w->tmp2);
	e.fix = scrub_fix(r->w, good, r->dev, r->w->tmp2, r->ss, phys);
	scrub_settle(r->w, r->c, 1, &e);
}

static void verify_tree(struct dev_reader *r, struct slot *s, uint32_t i)
{
	struct scrub_ctx *ctx = r->ctx;
	const struct scrub_sector *sec = &s->d->sec[i];
	uint32_t nsec = ctx->nodesize / r->ss, bad_reads = 0, affected;
	uint64_t phys = s->d->physical + (uint64_t)i * r->ss;
	struct bx_scrub_error e = { .what = BX_SCRUB_TREE, .logical = sec->logical,
				    .len = ctx->nodesize, .devid = r->dev->devid, .physical = phys,
				    .mirror = s->d->job->mirror };
	const uint8_t *block;
	bool good;

	if (i + nsec <= s->d->nr_sectors) {
		block = s->buf + (size_t)i * r->ss;
		for (uint32_t k = i; k < i + nsec; k++)
			bad_reads += s->rerr[k];
	} else {
		/* The block runs past this read: read it whole. */
		int ret = scrub_pread(r->ctx, r->fd, r->w->tmp, ctx->nodesize, phys);

		block = r->w->tmp;
		if (scrub_stalled(ctx, ret, r->dev))
			return;
		if (ret)
			bad_reads = nsec;
	}
	if (bad_reads) {
		e.fault = BX_SCRUB_READ_ERROR;
		e.reason = "read error";
		r->c->read_errors += bad_reads;
		affected = bad_reads;
	} else {
		e.reason = scrub_tree_bad(ctx, block, sec, &e.fault);
		if (!e.reason)
			return;
		affected = nsec;
		if (e.fault == BX_SCRUB_CSUM_ERROR)
			r->c->csum_errors += nsec;
		else
			r->c->verify_errors += nsec;
		e.owner = le64toh(((const struct btrfs_header *)block)->owner);
	}
	good = fetch_tree(r, sec, s->d->job->mirror, r->w->tmp2);
	if (good)
		e.owner = le64toh(((const struct btrfs_header *)r->w->tmp2)->owner);
	e.fix = scrub_fix(r->w, good, r->dev, r->w->tmp2, ctx->nodesize, phys);
	scrub_settle(r->w, r->c, affected, &e);
}

/* Verifies a read whose failed sectors check_read has found. */
static void verify_slot(struct dev_reader *r, struct slot *s)
{
	for (uint32_t i = 0; i < s->d->nr_sectors; i++) {
		const struct scrub_sector *sec = &s->d->sec[i];
		const uint8_t *data = s->buf + (size_t)i * r->ss;

		switch (sec->kind) {
		case SEC_DATA:
			if (s->rerr[i])
				bad_data(r, s, i, BX_SCRUB_READ_ERROR, "read error");
			break;
		case SEC_DATA_CSUM:
			if (s->rerr[i])
				bad_data(r, s, i, BX_SCRUB_READ_ERROR, "read error");
			else if (s->hashed ? s->csum_bad[i] :
				 !scrub_data_ok(r->ctx, data, s->d->csum + (size_t)i * r->cs))
				bad_data(r, s, i, BX_SCRUB_CSUM_ERROR, "checksum mismatch");
			break;
		case SEC_TREE_HEAD:
			verify_tree(r, s, i);
			break;
		default:
			break;
		}
	}
	bx_scrub_counters_add(r->c, &s->d->counts);
	scrub_progress_add(r->ctx, s->d->bytes);
}

static void release_desc(struct dev_reader *r, struct slot *s)
{
	pthread_mutex_lock(&r->lock);
	r->free_list[r->nr_free++] = (unsigned int)(s->d - r->descs);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	s->d = NULL;
	s->busy = false;
	s->hashed = false;
}

/* Asks the ring to complete when the hashing threads have finished a job. */
static int arm_hashed(struct dev_reader *r)
{
	struct io_uring_sqe *sqe;
	int ret;

	if (r->hashed_armed)
		return 0;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return bx_error(-EBUSY, "io_uring submission queue full");
	io_uring_prep_read(sqe, r->hash.efd, &r->hashed_count, sizeof(r->hashed_count), 0);
	io_uring_sqe_set_data64(sqe, HASHED_TAG);
	ret = io_uring_submit(&r->ring);
	if (ret < 0)
		return bx_error(ret, "%s: io_uring submit failed: %s", r->dev->path, strerror(-ret));
	r->hashed_armed = true;
	return 0;
}

/*
 * Hands a completed read's data checksums to the hashing threads. False
 * when it has none to check (or there are no hashing threads): the reader
 * verifies it itself.
 */
static bool hand_off(struct dev_reader *r, struct slot *s)
{
	bool any = false;

	if (!r->hash_ok)
		return false;
	for (uint32_t i = 0; i < s->d->nr_sectors && !any; i++)
		any = s->d->sec[i].kind == SEC_DATA_CSUM;
	if (!any)
		return false;
	if (arm_hashed(r)) {
		/* No room in the ring (cannot happen: it has one entry more than reads): hash here. */
		bx_error_clear();
		return false;
	}
	s->job = (struct scrub_hash_job){ .buf = s->buf, .sec = s->d->sec, .csum = s->d->csum,
					  .csum_stride = r->cs, .nr_sectors = s->d->nr_sectors,
					  .bad = s->csum_bad };
	s->hashing = true;
	r->hashing++;
	scrub_hash_submit(r->ctx->hash, &r->hash, &s->job);
	return true;
}

/* What the hashing threads serve by: the bytes this device has still to read. */
static void count_read(struct dev_reader *r, const struct req_desc *d)
{
	uint64_t left = __atomic_load_n(&r->hash.left, __ATOMIC_RELAXED);

	__atomic_store_n(&r->hash.left, left > d->bytes ? left - d->bytes : 0, __ATOMIC_RELAXED);
}

static void read_done(struct dev_reader *r, struct slot *s)
{
	count_read(r, s->d);
	check_read(r, s);
	if (hand_off(r, s))
		return;
	verify_slot(r, s);
	release_desc(r, s);
}

/* The slots the hashing threads are done with: verified and read again. */
static int hashed_done(struct dev_reader *r)
{
	struct scrub_hash_job *job = scrub_hash_take_done(r->ctx->hash, &r->hash);

	r->hashed_armed = false;
	while (job) {
		struct slot *s = (struct slot *)((char *)job - offsetof(struct slot, job));

		job = job->next;
		s->hashing = false;
		s->hashed = true;
		r->hashing--;
		verify_slot(r, s);
		release_desc(r, s);
	}
	return r->hashing ? arm_hashed(r) : 0;
}

static unsigned int depth_for(uint64_t budget, unsigned int readers, uint32_t req_bytes)
{
	uint64_t depth = budget / (readers ? readers : 1) / req_bytes;

	return depth < MIN_DEPTH ? MIN_DEPTH : depth > MAX_DEPTH ? MAX_DEPTH : (unsigned int)depth;
}

/* Reads this device may have in flight now: its share of the budget. */
static unsigned int allowed_depth(struct dev_reader *r)
{
	unsigned int depth;

	if (r->fixed_depth)
		return r->nr_slots;
	depth = depth_for(r->ctx->io_budget, __atomic_load_n(&r->ctx->active_readers, __ATOMIC_RELAXED),
			  r->req_bytes);
	return depth < r->nr_slots ? depth : r->nr_slots;
}

static int slot_buffer(struct dev_reader *r, unsigned int i)
{
	struct slot *s = &r->slots[i];

	s->buf = scrub_alloc_read_buffer(r->req_bytes);
	if (!s->buf)
		return bx_error(-ENOMEM, "out of memory");
	if (r->sparse_bufs) {
		struct iovec iov = { s->buf, r->req_bytes };
		__u64 tag = 0;

		s->fixed = io_uring_register_buffers_update_tag(&r->ring, i, &iov, &tag, 1) == 1;
	}
	return 0;
}

static int submit_slot(struct dev_reader *r, unsigned int idx)
{
	struct slot *s = &r->slots[idx];
	struct req_desc *d = s->d;
	struct io_uring_sqe *sqe;

	s->busy = true;
	if (!r->ring_ok) {
		/* No io_uring here: read synchronously and verify at once. */
		int ret = scrub_pread(r->ctx, r->fd, s->buf, d->len, d->physical);

		s->res = ret ? -EIO : (int)d->len;
		if (!scrub_stalled(r->ctx, ret, r->dev)) {
			check_read(r, s);
			verify_slot(r, s);
		}
		release_desc(r, s);
		return 0;
	}
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return bx_error(-EBUSY, "io_uring submission queue full");
	if (s->fixed)
		io_uring_prep_read_fixed(sqe, r->fd, s->buf, d->len, d->physical, (int)idx);
	else
		io_uring_prep_read(sqe, r->fd, s->buf, d->len, d->physical);
	io_uring_sqe_set_data64(sqe, idx);
	r->inflight++;
	return 0;
}

/*
 * Gives every free read buffer a planned read and submits them. Returns 1
 * when there is nothing left to read (planning done, nothing ready), 0, or
 * a negative errno.
 */
static int refill(struct dev_reader *r)
{
	unsigned int depth = allowed_depth(r);
	int queued = 0;

	/* Cancelled: what is in flight lands and is verified, nothing more is read. */
	if (scrub_cancelled(r->ctx))
		return r->inflight || r->hashing ? 0 : 1;

	for (unsigned int i = 0; i < depth; i++) {
		int ret;

		if (r->slots[i].busy)
			continue;
		if (!r->slots[i].buf) {
			ret = slot_buffer(r, i);
			if (ret)
				return ret;
		}
		pthread_mutex_lock(&r->lock);
		/* With nothing in flight, wait for the planner rather than spin. */
		while (!r->nr_ready && !r->plan_done && !r->inflight && !r->hashing && !queued)
			pthread_cond_wait(&r->cond, &r->lock);
		if (!r->nr_ready) {
			bool done = r->plan_done && !r->inflight && !r->hashing && !queued;

			pthread_mutex_unlock(&r->lock);
			if (done)
				return 1;
			break;
		}
		r->slots[i].d = &r->descs[r->ready[r->ready_head]];
		r->ready_head = (r->ready_head + 1) % r->nr_descs;
		r->nr_ready--;
		pthread_mutex_unlock(&r->lock);
		ret = submit_slot(r, i);
		if (ret)
			return ret;
		queued += r->ring_ok;
	}
	if (queued) {
		int ret = io_uring_submit(&r->ring);

		if (ret < 0)
			return bx_error(ret, "%s: io_uring submit failed: %s", r->dev->path,
					strerror(-ret));
	}
	return 0;
}

/* The largest read that still gives every device MIN_DEPTH of them at the start. */
static uint32_t default_request(const struct scrub_ctx *ctx)
{
	uint64_t req = ctx->io_budget / (ctx->active_readers ? ctx->active_readers : 1) / MIN_DEPTH;

	return req >= MAX_REQUEST ? MAX_REQUEST : (uint32_t)req;
}

static int reader_setup(struct dev_reader *r)
{
	const struct bx_scrub_opts *opts = r->ctx->opts;
	uint32_t max_sectors;
	unsigned int first_depth;

	r->req_bytes = opts->request_bytes ? opts->request_bytes : default_request(r->ctx);
	if (r->req_bytes < SCRUB_WINDOW)
		r->req_bytes = SCRUB_WINDOW;
	r->req_bytes -= r->req_bytes % SCRUB_WINDOW;
	if (opts->requests_per_dev) {
		r->fixed_depth = true;
		r->nr_slots = first_depth = opts->requests_per_dev;
	} else {
		/* As deep as this device may get once it reads alone. */
		r->nr_slots = depth_for(r->ctx->io_budget, 1, r->req_bytes);
		first_depth = depth_for(r->ctx->io_budget, r->ctx->active_readers, r->req_bytes);
	}
	r->nr_descs = first_depth * PLAN_AHEAD > r->nr_slots + 2 ? first_depth * PLAN_AHEAD :
								   r->nr_slots + 2;
	max_sectors = r->req_bytes / r->ss;
	r->fd = bx_open_direct(r->dev);
	if (r->fd < 0)
		return r->fd;
	r->slots = calloc(r->nr_slots, sizeof(*r->slots));
	r->descs = calloc(r->nr_descs, sizeof(*r->descs));
	r->free_list = calloc(r->nr_descs, sizeof(*r->free_list));
	r->ready = calloc(r->nr_descs, sizeof(*r->ready));
	if (!r->slots || !r->descs || !r->free_list || !r->ready)
		return bx_error(-ENOMEM, "out of memory");
	for (unsigned int i = 0; i < r->nr_descs; i++) {
		struct req_desc *d = &r->descs[i];

		d->sec = calloc(max_sectors, sizeof(*d->sec));
		d->csum = malloc((size_t)max_sectors * r->cs);
		if (!d->sec || !d->csum)
			return bx_error(-ENOMEM, "out of memory");
		r->free_list[r->nr_free++] = i;
	}
	for (unsigned int i = 0; i < r->nr_slots; i++) {
		r->slots[i].rerr = calloc(max_sectors, 1);
		r->slots[i].csum_bad = calloc(max_sectors, 1);
		if (!r->slots[i].rerr || !r->slots[i].csum_bad)
			return bx_error(-ENOMEM, "out of memory");
	}
	/* One entry more: the read of the hashing eventfd. */
	r->ring_ok = io_uring_queue_init(r->nr_slots + 1, &r->ring, 0) == 0;
	if (r->ring_ok)
		r->sparse_bufs = io_uring_register_buffers_sparse(&r->ring, r->nr_slots) == 0;
	/* Without an eventfd the reader hashes its own reads, as without a ring. */
	if (r->ring_ok && r->ctx->hash)
		r->hash_ok = scrub_hash_client_init(
			&r->hash, r->ctx->res->devs[scrub_dev_index(r->ctx, r->dev)].bytes_to_scrub) == 0;
	bx_error_clear();
	return 0;
}

/* Read buffers go back at once: the devices still reading may take the share. */
static void free_buffers(struct dev_reader *r)
{
	scrub_hash_client_release(r->ctx->hash, &r->hash);
	if (r->ring_ok) {
		io_uring_queue_exit(&r->ring);
		r->ring_ok = false;
	}
	for (unsigned int i = 0; r->slots && i < r->nr_slots; i++) {
		scrub_free_read_buffer(r->slots[i].buf, r->req_bytes);
		r->slots[i].buf = NULL;
	}
}

static void reader_release(struct dev_reader *r)
{
	if (r->planner_started) {
		pthread_mutex_lock(&r->lock);
		r->plan_stop = true;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		pthread_join(r->planner, NULL);
	}
	free_buffers(r);
	for (unsigned int i = 0; r->slots && i < r->nr_slots; i++) {
		free(r->slots[i].rerr);
		free(r->slots[i].csum_bad);
	}
	for (unsigned int i = 0; r->descs && i < r->nr_descs; i++) {
		free(r->descs[i].sec);
		free(r->descs[i].csum);
	}
	free(r->slots);
	free(r->descs);
	free(r->free_list);
	free(r->ready);
	free(r->jobs);
	if (r->fd >= 0)
		close(r->fd);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
}

int scrub_device(struct scrub_worker *w, struct bx_device *dev)
{
	struct dev_reader r = { .w = w, .ctx = w->ctx, .dev = dev, .fd = -1,
				.ss = w->ctx->sectorsize, .cs = w->ctx->fs->csum_size,
				.hash.efd = -1 };
	int ret;

	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	r.c = &w->c[scrub_dev_index(w->ctx, dev)];
	ret = collect_jobs(&r);
	if (ret || !r.nr_jobs) {
		reader_release(&r);
		return ret;
	}
	ret = reader_setup(&r);
	if (ret)
		goto out;
	if (pthread_create(&r.planner, NULL, planner_main, &r)) {
		ret = bx_error(-EAGAIN, "cannot start a planning thread");
		goto out;
	}
	r.planner_started = true;
	for (;;) {
		struct io_uring_cqe *cqe;
		struct slot *s;

		ret = refill(&r);
		if (ret)
			break;
		if (!r.inflight && !r.hashing)
			continue;
		ret = scrub_wait_cqe(r.ctx, &r.ring, &cqe);
		if (ret == -ETIMEDOUT) {
			ret = bx_error(ret, "%s: no read completed within %u s (the device stalls); "
				       "see --io-timeout", dev->path, dev->io_timeout);
			break;
		}
		if (ret < 0) {
			ret = bx_error(ret, "%s: io_uring wait failed: %s", dev->path, strerror(-ret));
			break;
		}
		if (io_uring_cqe_get_data64(cqe) == HASHED_TAG) {
			io_uring_cqe_seen(&r.ring, cqe);
			ret = hashed_done(&r);
			if (ret)
				break;
			continue;
		}
		s = &r.slots[io_uring_cqe_get_data64(cqe)];
		s->res = cqe->res;
		io_uring_cqe_seen(&r.ring, cqe);
		r.inflight--;
		read_done(&r, s);
	}
	if (ret > 0)
		ret = 0;
	/* After an error: let what is in flight land before the buffers go (not after a stall). */
	while (r.ring_ok && r.inflight && ret != -ETIMEDOUT) {
		struct io_uring_cqe *cqe;

		if (scrub_wait_cqe(r.ctx, &r.ring, &cqe) < 0)
			break;
		r.inflight -= io_uring_cqe_get_data64(cqe) != HASHED_TAG;
		io_uring_cqe_seen(&r.ring, cqe);
	}
out:
	/* The hashing threads finish with this device's buffers first. */
	scrub_hash_client_release(w->ctx->hash, &r.hash);
	/* Reads still in flight (the ring failed, the device stalls): their buffers are left to them. */
	for (unsigned int i = 0; r.ring_ok && r.inflight && i < r.nr_slots; i++)
		if (r.slots[i].busy && !r.slots[i].hashing)
			r.slots[i].buf = NULL;
	free_buffers(&r);
	__atomic_fetch_sub(&w->ctx->active_readers, 1, __ATOMIC_RELAXED);
	reader_release(&r);
	if (ret)
		return bx_error_wrap(ret, "scrubbing %s", dev->path);
	return 0;
}
