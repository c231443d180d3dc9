/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Offline scrub: the run. It checks the superblocks, plans how much there
 * is to read, starts the threads (a reader per device, scrub-dev.c; the
 * RAID5/6 pass, scrub-raid56.c), reports progress and assembles the
 * result. What the threads call is below it, never the run itself: the
 * checks (scrub-check.c), the repair of a bad copy (scrub-repair.c), the
 * workers' shared state and reads (scrub-worker.c), the planning
 * (scrub-plan.c), the hashing threads (scrub-hash.c); and beside them the
 * result's vocabulary (scrub-result.c), file paths (scrub-files.c) and the
 * status file (scrub-status.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"
#include "format/csum.h"
#include "format/profiles.h"
#include "disk/io.h"
#include "scrub/scrub-internal.h"

/* How often a running scrub with a status file rewrites it, in seconds. */
#define STATUS_SAVE_INTERVAL 2.0

/* ---- superblocks ---- */

static void scrub_super_copy(struct scrub_ctx *ctx, struct bx_device *dev, int i,
			     struct bx_scrub_counters *c)
{
	struct bx_fs *fs = ctx->fs;
	uint64_t offset = btrfs_sb_offset(i);
	struct btrfs_super_block sb;
	enum bx_sb_status status = bx_read_super_copy(dev->fd, dev->size, i, &sb,
						      dev->io_timeout);
	struct bx_scrub_error e = { .what = BX_SCRUB_SUPER, .fault = BX_SCRUB_SUPER_ERROR,
				    .logical = offset, .len = BTRFS_SUPER_INFO_SIZE,
				    .devid = dev->devid, .physical = offset };
	/* A seed's copies are its own filesystem's: its fsid, its (older) generation. */
	const uint8_t *fsid = dev->seed ? dev->sb.fsid : fs->fsid;
	uint64_t generation = dev->seed ? le64toh(dev->sb.generation) : ctx->sb_generation;
	bool source_ok;

	if (status == BX_SB_TIMEOUT) {
		scrub_stalled(ctx, -ETIMEDOUT, dev);
		return;
	}
	if (status == BX_SB_READ_ERROR || status == BX_SB_BEYOND_DEVICE) {
		e.fault = BX_SCRUB_READ_ERROR;
		e.reason = status == BX_SB_READ_ERROR ? "read error" : "beyond the end of the device";
	} else if (status != BX_SB_OK) {
		e.reason = bx_sb_status_str(status);
	} else if (memcmp(sb.fsid, fsid, BTRFS_FSID_SIZE)) {
		e.reason = "fsid mismatch";
	} else if (le64toh(sb.generation) != generation) {
		e.reason = "generation mismatch";
	} else {
		return;
	}
	c->super_errors++;
	/* The source: this device's newest copy, if it is the filesystem's generation. */
	source_ok = dev->sb_mirror >= 0 && le64toh(dev->sb.generation) == generation &&
		    !memcmp(dev->sb.fsid, fsid, BTRFS_FSID_SIZE);
	if (!source_ok) {
		e.fix = BX_SCRUB_UNCORRECTABLE;
	} else if (ctx->opts->readonly) {
		e.fix = BX_SCRUB_CORRECTABLE;
	} else {
		sb = dev->sb;
		sb.bytenr = htole64(offset);
		e.fix = BX_SCRUB_UNCORRECTABLE;
		if (!btrfsx_csum(fs->csum_type, (uint8_t *)&sb + BTRFS_CSUM_SIZE,
				 BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb.csum) &&
		    !scrub_write(ctx, dev, &sb, sizeof(sb), offset))
			e.fix = BX_SCRUB_CORRECTED;
	}
	if (e.fix != BX_SCRUB_UNCORRECTABLE)
		c->super_corrected++;
	scrub_record(ctx, &e);
}

/* Every copy the kernel would check: those that fit in the device item's size. */
static void scrub_supers(struct scrub_ctx *ctx, struct bx_device *dev, struct bx_scrub_counters *c)
{
	uint64_t limit = le64toh(dev->item.total_bytes);

	if (!limit)
		limit = dev->size;
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		if (btrfs_sb_offset(i) + BTRFS_SUPER_INFO_SIZE > limit)
			break;
		scrub_super_copy(ctx, dev, i, c);
	}
	bx_error_clear();
}

/* ---- the plan: how much there is to read ---- */

static bool is_raid56(const struct bx_chunk *chunk)
{
	return chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK;
}

static uint64_t chunk_used(struct bx_fs *fs, const struct bx_root *bg_root,
			   const struct bx_chunk *chunk)
{
	struct btrfs_key key = { chunk->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, chunk->length };
	struct bx_path path;
	uint64_t used = chunk->length;

	bx_path_init(&path, false);
	if (bx_search(fs, bg_root, &key, &path) == 0 &&
	    bx_item_size(bx_path_leaf(&path), path.slots[0]) >=
	    sizeof(struct btrfs_block_group_item)) {
		const struct btrfs_block_group_item *bg = bx_item_ptr(bx_path_leaf(&path),
								      path.slots[0]);

		used = le64toh(bg->used);
	}
	bx_path_release(&path);
	bx_error_clear();
	return used;
}

/* Bytes each copy of @chunk holds, as the counters will count them, per stripe. */
static uint64_t stripe_share(const struct bx_chunk *chunk, uint64_t used)
{
	if (chunk->type & BTRFS_BLOCK_GROUP_RAID0)
		return used / chunk->num_stripes;
	if (chunk->type & BTRFS_BLOCK_GROUP_RAID10)
		return used * chunk->sub_stripes / chunk->num_stripes;
	if (is_raid56(chunk))
		return used / chunk->num_stripes;
	return used;
}

static void plan_totals(struct scrub_ctx *ctx, struct bx_scrub_result *res)
{
	struct bx_fs *fs = ctx->fs;
	struct bx_root bg_root;
	bool bg_tree = le64toh(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;

	if (bx_find_root(fs, bg_tree ? BTRFS_BLOCK_GROUP_TREE_OBJECTID :
			 BTRFS_EXTENT_TREE_OBJECTID, &bg_root)) {
		bx_error_clear();
		return;
	}
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];
		uint64_t share;

		if (scrub_chunk_pass(ctx, chunk) == SCRUB_PASS_NONE)
			continue;
		share = stripe_share(chunk, chunk_used(fs, &bg_root, chunk));
		for (int s = 0; s < chunk->num_stripes; s++) {
			struct bx_device *dev = chunk->stripes[s].dev;

			if (!dev)
				continue;
			res->devs[scrub_dev_index(ctx, dev)].bytes_to_scrub += share;
			res->bytes_to_scrub += share;
		}
	}
}

/* ---- threads ---- */

struct scrub_thread {
	pthread_t tid;
	bool started;
	struct scrub_worker w;
	struct bx_device *dev;        /* a device reader, or NULL: the RAID5/6 pass */
	int ret;
};

static int scrub_raid56_all(struct scrub_worker *w)
{
	struct bx_fs *fs = w->ctx->fs;

	for (size_t i = 0; i < fs->chunks.nr && !scrub_cancelled(w->ctx); i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];
		int ret;

		if (scrub_chunk_pass(w->ctx, chunk) != SCRUB_PASS_RAID56)
			continue;
		ret = scrub_raid56_chunk(w, chunk);
		if (ret)
			return bx_error_wrap(ret, "chunk %llu", (unsigned long long)chunk->logical);
	}
	return 0;
}

static void *thread_main(void *arg)
{
	struct scrub_thread *t = arg;
	struct scrub_ctx *ctx = t->w.ctx;

	t->ret = t->dev ? scrub_device(&t->w, t->dev) : scrub_raid56_all(&t->w);
	if (t->ret < 0)
		scrub_set_fatal(ctx, t->ret);
	/* The good copies found are written even when the run stops early. */
	scrub_flush_repairs(&t->w);
	bx_warnings_clear();
	pthread_mutex_lock(&ctx->lock);
	ctx->running--;
	pthread_cond_signal(&ctx->done_cond);
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

/*
 * The running status every STATUS_SAVE_INTERVAL seconds: what @p says so
 * far. One that cannot be written is not tried again; the final save says why.
 */
static void save_running(struct scrub_ctx *ctx, const struct bx_scrub_result *res,
			 const struct bx_scrub_progress *p)
{
	struct bx_scrub_result partial = { .readonly = res->readonly,
					   .metadata_only = res->metadata_only,
					   .started = res->started, .duration = p->elapsed,
					   .bytes_to_scrub = p->bytes_total, .total = p->total };

	if (ctx->status_failed || (ctx->status_saved && p->elapsed - ctx->last_status_save <
						       STATUS_SAVE_INTERVAL))
		return;
	memcpy(partial.fsid, res->fsid, sizeof(partial.fsid));
	ctx->status_saved = true;
	ctx->last_status_save = p->elapsed;
	if (bx_scrub_status_save(ctx->opts->status_path, &partial, "running", getpid())) {
		bx_error_clear();
		ctx->status_failed = true;
	}
}

static void report_progress(struct scrub_ctx *ctx, struct scrub_thread *threads, size_t nr,
			    const struct bx_scrub_result *res, double start)
{
	struct bx_scrub_progress p = { 0 };

	if (!ctx->opts->progress && !ctx->opts->status_path)
		return;
	p.bytes_done = __atomic_load_n(&ctx->bytes_done, __ATOMIC_RELAXED);
	p.bytes_total = res->bytes_to_scrub;
	p.elapsed = bx_monotonic_seconds() - start;
	/* Counters of running threads are read without a lock: a display, not a result. */
	for (size_t i = 0; i < nr; i++)
		for (size_t d = 0; threads[i].w.c && d < ctx->fs->nr_devs; d++)
			bx_scrub_counters_add(&p.total, &threads[i].w.c[d]);
	for (size_t d = 0; d < res->nr_devs; d++)
		bx_scrub_counters_add(&p.total, &res->devs[d].c);
	/* The caller first: its answer may cancel, and the file waits for its flush. */
	if (ctx->opts->progress)
		ctx->opts->progress(ctx->opts->progress_arg, &p);
	if (ctx->opts->status_path)
		save_running(ctx, res, &p);
}

/* The run's result, for `scrub status` and the monitor; a failure is a warning. */
static void save_result(const struct bx_scrub_opts *opts, const struct bx_scrub_result *res)
{
	int ret;

	if (!opts->status_path)
		return;
	ret = bx_scrub_status_save(opts->status_path, res, res->cancelled ? "cancelled" : "finished",
				   getpid());
	if (ret) {
		bx_warn("the result was not saved for 'scrub status': %s", bx_error_message(ret));
		bx_error_clear();	/* a warning: the scrub's own result stands */
	}
}

/*
 * crc32c and xxhash check a 4 MiB read in 0.1-0.4 ms on one core, less than
 * handing it to a hashing thread and back takes (0.8-1.7 ms on the
 * benchmark's loop devices, while the buffer is not at the disk): each
 * device reader checks its own reads. sha256 and blake2b take 2.5-4 ms a
 * read: the hashing threads check them on every core while the readers read.
 */
static bool hashed_by_readers(unsigned int csum_type)
{
	return csum_type == BTRFS_CSUM_TYPE_CRC32 || csum_type == BTRFS_CSUM_TYPE_XXHASH;
}

/*
 * The read buffer budget: the RAID5/6 pass reads every member at once, the
 * device readers one device each; when both run, the RAID5/6 pass (usually
 * the data) gets three quarters.
 */
static void split_budget(struct scrub_ctx *ctx, bool any_raid56)
{
	uint64_t budget = ctx->opts->memory_bytes;

	if (!budget)
		budget = hashed_by_readers(ctx->fs->csum_type) ? BX_SCRUB_DEFAULT_MEMORY :
								  BX_SCRUB_DEFAULT_MEMORY_SLOW_CSUM;
	if (budget < BX_SCRUB_MIN_MEMORY)
		budget = BX_SCRUB_MIN_MEMORY;
	ctx->io_budget = budget;
	ctx->raid56_budget = 0;
	if (any_raid56) {
		ctx->raid56_budget = ctx->active_readers ? budget / 4 * 3 : budget;
		ctx->io_budget = budget - ctx->raid56_budget;
	}
}

static int run_threads(struct scrub_ctx *ctx, struct bx_scrub_result *res, double start)
{
	struct bx_fs *fs = ctx->fs;
	size_t nr = fs->nr_devs + 1;
	struct scrub_thread *threads = calloc(nr, sizeof(*threads));
	double interval = ctx->opts->progress_interval > 0 ? ctx->opts->progress_interval : 0.5;
	bool any_raid56 = false;
	int ret = 0;

	if (!threads)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < fs->chunks.nr; i++)
		any_raid56 |= scrub_chunk_pass(ctx, fs->chunks.chunks[i]) == SCRUB_PASS_RAID56;
	/* The devices that will read: they share the read buffer budget. */
	for (size_t d = 0; d < fs->nr_devs; d++) {
		bool reads = false;

		for (size_t i = 0; i < fs->chunks.nr && !reads; i++) {
			const struct bx_chunk *chunk = fs->chunks.chunks[i];

			if (scrub_chunk_pass(ctx, chunk) != SCRUB_PASS_DEVICES)
				continue;
			for (int s = 0; s < chunk->num_stripes; s++)
				reads |= chunk->stripes[s].dev == fs->devs[d];
		}
		ctx->active_readers += reads;
	}
	split_budget(ctx, any_raid56);
	/*
	 * A slow checksum whose hashing threads cannot start is hashed by the
	 * device readers too: slower, not wrong.
	 */
	if (ctx->active_readers && !hashed_by_readers(fs->csum_type) &&
	    scrub_hash_pool_start(ctx, &ctx->hash))
		bx_error_clear();
	for (size_t i = 0; i < nr && !ret; i++) {
		struct scrub_thread *t = &threads[i];

		if (i == fs->nr_devs && !any_raid56)
			break;
		t->dev = i < fs->nr_devs ? fs->devs[i] : NULL;
		ret = scrub_worker_init(&t->w, ctx);
		if (ret)
			break;
		pthread_mutex_lock(&ctx->lock);
		ctx->running++;
		pthread_mutex_unlock(&ctx->lock);
		if (pthread_create(&t->tid, NULL, thread_main, t)) {
			pthread_mutex_lock(&ctx->lock);
			ctx->running--;
			pthread_mutex_unlock(&ctx->lock);
			ret = bx_error(-EAGAIN, "cannot start a scrub thread");
			break;
		}
		t->started = true;
	}
	if (ret)
		__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELAXED);
	else
		report_progress(ctx, threads, nr, res, start);
	pthread_mutex_lock(&ctx->lock);
	while (ctx->running > 0) {
		struct timespec until;
		double t = interval;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)t;
		until.tv_nsec += (long)((t - (double)(time_t)t) * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&ctx->done_cond, &ctx->lock, &until) == ETIMEDOUT) {
			pthread_mutex_unlock(&ctx->lock);
			report_progress(ctx, threads, nr, res, start);
			pthread_mutex_lock(&ctx->lock);
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	for (size_t i = 0; i < nr; i++) {
		struct scrub_thread *t = &threads[i];

		if (t->started)
			pthread_join(t->tid, NULL);
		for (size_t d = 0; t->w.c && d < fs->nr_devs; d++)
			bx_scrub_counters_add(&res->devs[d].c, &t->w.c[d]);
		if (t->w.rfs)
			scrub_worker_release(&t->w);
	}
	scrub_hash_pool_stop(ctx->hash);
	ctx->hash = NULL;
	free(threads);
	return ret;
}

/* ---- the run ---- */

/*
 * Every stripe of a present device must end within the size its device item
 * records (the kernel refuses to mount otherwise). A truncated device (its
 * file shorter than that) is scrubbed, its missing end read as errors; but a
 * chunk claiming exabytes would have the scrub walk them window by window.
 */
static int check_stripes(const struct bx_chunk *chunk)
{
	uint64_t size = bx_profile_stripe_size(chunk->type, chunk->length,
					       (uint32_t)chunk->num_stripes);

	for (int s = 0; s < chunk->num_stripes; s++) {
		const struct bx_device *dev = chunk->stripes[s].dev;
		uint64_t total = dev ? le64toh(dev->item.total_bytes) : 0;
		uint64_t physical = chunk->stripes[s].physical;

		if (dev && (physical > total || size > total - physical))
			return bx_error(-EUCLEAN, "chunk %llu: its stripe on devid %llu ends at %llu, "
					"beyond the device's %llu bytes",
					(unsigned long long)chunk->logical,
					(unsigned long long)dev->devid,
					(unsigned long long)(physical + size),
					(unsigned long long)total);
	}
	return 0;
}

static int check_supported(const struct bx_fs *fs)
{
	uint64_t incompat = le64toh(fs->sb.incompat_flags);
	int ret;

	/* The other incompat features it does not read were refused by the open (features.h). */
	if (incompat & BTRFS_FEATURE_INCOMPAT_ZONED)
		return bx_error(-EOPNOTSUPP, "zoned filesystems are not supported");
	if (!fs->csum_size)
		return bx_error(-EOPNOTSUPP, "unknown checksum type %u", fs->csum_type);
	if (fs->sectorsize > SCRUB_WINDOW)
		return bx_error(-EOPNOTSUPP, "sector size %u is larger than a stripe",
				fs->sectorsize);
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];

		if ((chunk->type & (BTRFS_BLOCK_GROUP_RAID0 | BTRFS_BLOCK_GROUP_RAID10 |
				    BTRFS_BLOCK_GROUP_RAID56_MASK)) &&
		    chunk->stripe_len != SCRUB_WINDOW)
			return bx_error(-EOPNOTSUPP, "chunk %llu has stripe length %llu; only 64KiB "
					"is supported", (unsigned long long)chunk->logical,
					(unsigned long long)chunk->stripe_len);
		ret = check_stripes(chunk);
		if (ret)
			return ret;
	}
	return 0;
}

static void read_chunk_tree_uuid(struct scrub_ctx *ctx)
{
	struct bx_root root;
	struct bx_eb *eb;
	struct bx_block_expect expect;

	if (bx_find_root(ctx->fs, BTRFS_CHUNK_TREE_OBJECTID, &root))
		goto out;
	expect = (struct bx_block_expect){ root.generation, root.level };
	if (bx_read_tree_block(ctx->fs, root.bytenr, &expect, &eb))
		goto out;
	memcpy(ctx->chunk_tree_uuid, bx_eb_header(eb)->chunk_tree_uuid, BTRFS_UUID_SIZE);
	ctx->have_chunk_tree_uuid = true;
	bx_eb_put(eb);
out:
	bx_error_clear();
}

static int result_devices(struct bx_fs *fs, struct bx_scrub_result *res)
{
	size_t alloc = fs->nr_devs + 8;

	res->devs = calloc(alloc, sizeof(*res->devs));
	if (!res->devs)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < fs->nr_devs; i++) {
		const struct bx_device *dev = fs->devs[i];
		uint64_t claimed = le64toh(dev->item.total_bytes);

		res->devs[i].devid = dev->devid;
		res->devs[i].path = strdup(dev->path);
		if (!res->devs[i].path)
			return bx_error(-ENOMEM, "out of memory");
		res->devs[i].short_bytes = dev->listed && claimed > dev->size ? claimed - dev->size : 0;
	}
	res->nr_devs = fs->nr_devs;
	/* Missing members: the devids the chunk map names without a device. */
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];

		for (int s = 0; s < chunk->num_stripes; s++) {
			uint64_t devid = chunk->stripes[s].devid;
			bool known = false;

			if (chunk->stripes[s].dev)
				continue;
			for (size_t d = 0; d < res->nr_devs; d++)
				known |= res->devs[d].devid == devid;
			if (known)
				continue;
			if (res->nr_devs == alloc) {
				struct bx_scrub_device *devs;

				alloc *= 2;
				devs = realloc(res->devs, alloc * sizeof(*devs));
				if (!devs)
					return bx_error(-ENOMEM, "out of memory");
				res->devs = devs;
			}
			res->devs[res->nr_devs++] = (struct bx_scrub_device){ .devid = devid,
									      .missing = true };
			res->degraded = true;
		}
	}
	res->degraded |= fs->nr_missing > 0;
	return 0;
}

/* Uncorrectable data: which files it belongs to, once per extent. */
static void resolve_files(struct bx_fs *fs, struct bx_scrub_result *res)
{
	for (size_t i = 0; i < res->nr_errors; i++) {
		const struct bx_scrub_error *e = &res->errors[i];
		bool seen = false;

		if (e->what != BX_SCRUB_DATA || e->fix != BX_SCRUB_UNCORRECTABLE || !e->extent_len)
			continue;
		for (size_t f = 0; f < res->nr_files && !seen; f++)
			seen = res->files[f].logical == e->logical;
		if (seen || res->nr_files >= BX_SCRUB_MAX_FILES)
			continue;
		bx_scrub_resolve_files(fs, e->logical, e->extent_start, e->extent_len, &res->files,
				       &res->nr_files, BX_SCRUB_MAX_FILES);
	}
	bx_error_clear();
}

static int cmp_errors(const void *a, const void *b)
{
	const struct bx_scrub_error *x = a, *y = b;

	if (x->devid != y->devid)
		return x->devid < y->devid ? -1 : 1;
	if (x->physical != y->physical)
		return x->physical < y->physical ? -1 : 1;
	return 0;
}

/* Each device's last device extent that is scrubbed (scrub_tail). */
static int find_tails(struct scrub_ctx *ctx)
{
	const struct bx_fs *fs = ctx->fs;

	ctx->tails = calloc(fs->nr_devs ? fs->nr_devs : 1, sizeof(*ctx->tails));
	if (!ctx->tails)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < fs->chunks.nr; i++) {
		const struct bx_chunk *chunk = fs->chunks.chunks[i];
		uint64_t size = bx_profile_stripe_size(chunk->type, chunk->length,
						       (uint32_t)chunk->num_stripes);

		if (scrub_chunk_pass(ctx, chunk) == SCRUB_PASS_NONE)
			continue;
		for (int s = 0; s < chunk->num_stripes; s++) {
			const struct bx_chunk_stripe *st = &chunk->stripes[s];
			struct scrub_tail *tail;

			if (!st->dev)
				continue;
			tail = &ctx->tails[scrub_dev_index(ctx, st->dev)];
			if (!tail->end || st->physical > tail->start)
				*tail = (struct scrub_tail){ st->physical, st->physical + size, 0 };
		}
	}
	return 0;
}

/*
 * The kernel's scrub reads a device extent's stripes that hold extents in
 * batches of 128 (SCRUB_TOTAL_STRIPES), and sets last_physical to the end
 * of each batch's last stripe once it is read; when it finds no further
 * extent it sets the end of the device extent, and the batch read last
 * sets it back unless it was already read (a full batch). So a finished
 * scrub ends at the device extent's end when its stripes with extents are
 * a multiple of 128 (none at all: the last chunks are empty), else at the
 * end of the last such stripe, which the windows gave.
 */
#define KERNEL_SCRUB_BATCH 128

static void scrub_end_last_physical(const struct scrub_ctx *ctx, struct bx_scrub_result *res)
{
	for (size_t d = 0; d < ctx->fs->nr_devs; d++) {
		const struct scrub_tail *tail = &ctx->tails[d];
		struct bx_scrub_counters *c = &res->devs[d].c;

		if (tail->end && tail->stripes % KERNEL_SCRUB_BATCH == 0 &&
		    c->last_physical < tail->end)
			c->last_physical = tail->end;
	}
}

int bx_scrub_run(struct bx_fs *fs, const struct bx_scrub_opts *opts,
		 struct bx_scrub_result **out)
{
	struct scrub_ctx ctx = { .fs = fs, .opts = opts };
	struct bx_scrub_result *res;
	double start;
	int ret;

	ret = check_supported(fs);
	if (ret)
		return ret;
	/* Tree reads that fall back to another mirror: the result lists the bad copy. */
	fs->bad_mirrors_counted = true;
	res = calloc(1, sizeof(*res));
	ctx.errors = calloc(BX_SCRUB_MAX_ERRORS, sizeof(*ctx.errors));
	if (!res || !ctx.errors) {
		free(res);
		free(ctx.errors);
		return bx_error(-ENOMEM, "out of memory");
	}
	ctx.sectorsize = fs->sectorsize;
	ctx.nodesize = fs->nodesize;
	ctx.sb_generation = le64toh(fs->sb.generation);
	pthread_mutex_init(&ctx.lock, NULL);
	pthread_cond_init(&ctx.done_cond, NULL);
	memcpy(res->fsid, fs->fsid, sizeof(res->fsid));
	ctx.res = res;
	res->readonly = opts->readonly;
	res->metadata_only = opts->metadata_only;
	res->started = time(NULL);
	start = bx_monotonic_seconds();
	ret = result_devices(fs, res);
	if (!ret)
		ret = find_tails(&ctx);
	if (ret)
		goto out;
	read_chunk_tree_uuid(&ctx);
	plan_totals(&ctx, res);
	for (size_t i = 0; i < fs->nr_devs; i++)
		scrub_supers(&ctx, fs->devs[i], &res->devs[i].c);
	ret = run_threads(&ctx, res, start);
	if (!ret && ctx.fatal) {
		ret = ctx.fatal;
		bx_error(ret, "%s", ctx.fatal_msg);
	}
	if (ret)
		goto out;
	res->cancelled = opts->cancel && __atomic_load_n(opts->cancel, __ATOMIC_RELAXED);
	if (!res->cancelled)
		scrub_end_last_physical(&ctx, res);
	res->duration = bx_monotonic_seconds() - start;
	for (size_t i = 0; i < res->nr_devs; i++)
		bx_scrub_counters_add(&res->total, &res->devs[i].c);
	qsort(ctx.errors, ctx.nr_errors, sizeof(*ctx.errors), cmp_errors);
	res->errors = ctx.errors;
	res->nr_errors = ctx.nr_errors;
	res->errors_dropped = ctx.errors_dropped;
	ctx.errors = NULL;
	resolve_files(fs, res);
	if (opts->progress) {
		struct bx_scrub_progress p = { ctx.bytes_done, res->bytes_to_scrub, res->duration,
					       res->total };

		opts->progress(opts->progress_arg, &p);
	}
	save_result(opts, res);
	*out = res;
	res = NULL;
out:
	for (size_t i = 0; !ret && i < (*out)->nr_devs; i++)
		if ((*out)->devs[i].missing)
			bx_warn("devid %llu is missing: its copies were not scrubbed",
				(unsigned long long)(*out)->devs[i].devid);
	if (ctx.failed_repairs)
		bx_warn("%llu repair write%s failed, the first: %s",
			(unsigned long long)ctx.failed_repairs, ctx.failed_repairs > 1 ? "s" : "",
			ctx.first_repair_error);
	pthread_cond_destroy(&ctx.done_cond);
	pthread_mutex_destroy(&ctx.lock);
	free(ctx.errors);
	free(ctx.tails);
	bx_scrub_result_free(res);
	return ret;
}
