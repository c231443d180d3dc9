/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every scrubbing thread works with: its private reader, the read
 * buffers, the run's shared state (cancel, a fatal error, progress, the
 * counting of windows) and reads bounded by the I/O timeout.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <liburing.h>

#include "common/error.h"
#include "disk/io.h"
#include "scrub/scrub-internal.h"

/* Each thread's own block cache: a path and the readahead window fit easily. */
#define READER_CACHE_SLOTS 16

void *scrub_alloc_aligned(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 4096))
		return NULL;
	return p;
}

/*
 * Read buffers of 2 MiB and more are mapped on their own, aligned to 2 MiB,
 * and ask for huge pages: O_DIRECT requests are cut at the device's segment
 * limits, and a buffer of scattered 4 KiB pages needs a segment per page (a
 * loop device's 128 segments: 512 KiB requests, which the disk below no
 * longer merges). With huge pages the same reads go down in half as many
 * requests. A fresh mapping has no page touched before the advice (an
 * allocator may write its own bytes into what it hands out), and without
 * transparent huge pages the advice is ignored and nothing else changes.
 */
#define HUGE_BUFFER (2u * 1024 * 1024)

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

void *scrub_alloc_read_buffer(size_t len)
{
	size_t map_len, head, tail;
	uint8_t *map, *buf;

	if (len < HUGE_BUFFER)
		return scrub_alloc_aligned(len);
	len = page_round(len);
	map_len = len + HUGE_BUFFER;
	map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	head = (HUGE_BUFFER - (uintptr_t)map % HUGE_BUFFER) % HUGE_BUFFER;
	buf = map + head;
	tail = map_len - head - len;
	if (head)
		munmap(map, head);
	if (tail)
		munmap(buf + len, tail);
	madvise(buf, len, MADV_HUGEPAGE);
	return buf;
}

void scrub_free_read_buffer(void *buf, size_t len)
{
	if (len < HUGE_BUFFER)
		free(buf);
	else if (buf)
		munmap(buf, page_round(len));
}

bool scrub_cancelled(const struct scrub_ctx *ctx)
{
	return __atomic_load_n(&ctx->stop, __ATOMIC_RELAXED) ||
	       (ctx->opts->cancel && __atomic_load_n(ctx->opts->cancel, __ATOMIC_RELAXED));
}

enum scrub_pass scrub_chunk_pass(const struct scrub_ctx *ctx, const struct bx_chunk *chunk)
{
	if (ctx->opts->metadata_only &&
	    !(chunk->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM)))
		return SCRUB_PASS_NONE;
	return chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK ? SCRUB_PASS_RAID56 : SCRUB_PASS_DEVICES;
}

void scrub_set_fatal(struct scrub_ctx *ctx, int ret)
{
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->fatal) {
		ctx->fatal = ret;
		snprintf(ctx->fatal_msg, sizeof(ctx->fatal_msg), "%s", bx_error_message(ret));
	}
	__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ctx->lock);
}

size_t scrub_dev_index(const struct scrub_ctx *ctx, const struct bx_device *dev)
{
	for (size_t i = 0; i < ctx->fs->nr_devs; i++)
		if (ctx->fs->devs[i] == dev)
			return i;
	return 0;
}

bool scrub_beyond_end(const struct bx_device *dev, uint64_t physical, uint64_t len)
{
	return physical + len > dev->size;
}

void scrub_progress_add(struct scrub_ctx *ctx, uint64_t bytes)
{
	__atomic_fetch_add(&ctx->bytes_done, bytes, __ATOMIC_RELAXED);
}

int scrub_pread(const struct scrub_ctx *ctx, int fd, void *buf, size_t len, uint64_t physical)
{
	ssize_t n = bx_pread_timed(fd, buf, len, physical, ctx->fs->io_timeout);

	if (n == -ETIMEDOUT)
		return -ETIMEDOUT;
	return n == (ssize_t)len ? 0 : -EIO;
}

bool scrub_stalled(struct scrub_ctx *ctx, int ret, const struct bx_device *dev)
{
	if (ret != -ETIMEDOUT)
		return false;
	scrub_set_fatal(ctx, bx_error(-ETIMEDOUT, "%s: a read did not complete within %u s (the "
				      "device stalls); see --io-timeout", dev->path,
				      dev->io_timeout));
	return true;
}

int scrub_wait_cqe(const struct scrub_ctx *ctx, struct io_uring *ring, struct io_uring_cqe **cqe)
{
	unsigned int timeout = ctx->fs->io_timeout;
	struct __kernel_timespec ts = { .tv_sec = timeout };
	int ret;

	do
		ret = timeout ? io_uring_wait_cqe_timeout(ring, cqe, &ts) : io_uring_wait_cqe(ring, cqe);
	while (ret == -EINTR);
	return ret == -ETIME ? -ETIMEDOUT : ret;
}

/* A private reader: the same devices and chunk map, its own block cache. */
int scrub_worker_init(struct scrub_worker *w, struct scrub_ctx *ctx)
{
	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
	w->rfs = malloc(sizeof(*w->rfs));
	w->c = calloc(ctx->fs->nr_devs ? ctx->fs->nr_devs : 1, sizeof(*w->c));
	w->tmp = scrub_alloc_aligned(ctx->nodesize > SCRUB_WINDOW ? ctx->nodesize : SCRUB_WINDOW);
	w->tmp2 = scrub_alloc_aligned(ctx->nodesize > SCRUB_WINDOW ? ctx->nodesize : SCRUB_WINDOW);
	if (!w->rfs || !w->c || !w->tmp || !w->tmp2)
		goto nomem;
	*w->rfs = *ctx->fs;
	w->rfs->cache = bx_block_cache_new(READER_CACHE_SLOTS);
	if (!w->rfs->cache)
		goto nomem;
	w->planner.fs = w->rfs;
	w->planner.reada = ctx->opts->readahead;
	w->planner.tree_only = ctx->opts->metadata_only;
	if (bx_find_root(w->rfs, BTRFS_EXTENT_TREE_OBJECTID, &w->planner.extent_root)) {
		int ret = bx_error_wrap(-EUCLEAN, "the extent tree is needed to scrub");

		scrub_worker_release(w);
		return ret;
	}
	w->planner.have_csum_root =
		!bx_find_root(w->rfs, BTRFS_CSUM_TREE_OBJECTID, &w->planner.csum_root);
	bx_error_clear();
	return 0;
nomem:
	scrub_worker_release(w);
	return bx_error(-ENOMEM, "out of memory");
}

void scrub_worker_release(struct scrub_worker *w)
{
	scrub_repairs_free(&w->repairs);
	if (w->rfs)
		bx_block_cache_free(w->rfs->cache);
	free(w->rfs);
	free(w->c);
	free(w->tmp);
	free(w->tmp2);
	w->rfs = NULL;
	w->c = NULL;
	w->tmp = w->tmp2 = NULL;
}

void scrub_count_window(struct scrub_ctx *ctx, struct bx_scrub_counters *c,
			const struct scrub_window *w, const struct bx_device *dev, uint64_t phys)
{
	struct scrub_tail *tail = &ctx->tails[scrub_dev_index(ctx, dev)];

	c->data_extents_scrubbed += w->data_extents;
	c->tree_extents_scrubbed += w->tree_extents;
	c->data_bytes_scrubbed += (uint64_t)w->data_sectors * ctx->sectorsize;
	c->tree_bytes_scrubbed += (uint64_t)w->tree_sectors * ctx->sectorsize;
	c->no_csum += w->nocsum_sectors;
	if (phys + w->len > c->last_physical)
		c->last_physical = phys + w->len;
	if (phys >= tail->start && phys < tail->end)
		__atomic_add_fetch(&tail->stripes, 1, __ATOMIC_RELAXED);
}
