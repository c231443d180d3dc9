/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The data checksums of completed reads are computed, when they are slow to
 * compute (sha256, blake2b: scrub.c decides), by a pool of hashing
 * threads, one per online CPU, shared by every device reader: a reader
 * hands a read buffer over and at once goes back to keeping its device
 * busy, and however many devices are still reading (one at the end of a
 * run, four on a small array of a 2-core machine), every core hashes. A
 * reader learns that its buffers are done through an eventfd it waits on
 * in its own io_uring, with its reads.
 *
 * When hashing is the slower side (sha256, blake2b on few cores), the order
 * in which the pool serves the readers decides when each device ends: served
 * first come first served, every device advances at the same pace, the ones
 * holding less end early, and the rest of the run reads from the others
 * alone, too few devices to keep the cores busy. So the pool serves first the
 * device with the most bytes still to read: the devices end together.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "common/error.h"
#include "scrub/scrub-internal.h"

struct scrub_hash_pool {
	struct scrub_ctx *ctx;
	pthread_mutex_t lock;
	pthread_cond_t work;          /* a job was queued, or the pool stops */
	pthread_cond_t idle;          /* a client's last job is done */
	struct scrub_hash_queue queue;
	bool stop;
	pthread_t *threads;
	unsigned int nr_threads;
};

/*
 * A worker takes a slice of a read at a time, so an idle core helps with
 * a read another core has started: the reader gets its buffer
 * back sooner and keeps its device deeper in reads (sha256 and blake2b
 * take milliseconds for a 4 MiB read).
 */
#define HASH_SLICE_BYTES (1u << 20)

static void hash_slice(const struct scrub_ctx *ctx, struct scrub_hash_job *job, uint32_t from,
		       uint32_t to)
{
	for (uint32_t i = from; i < to; i++)
		job->bad[i] = job->sec[i].kind == SEC_DATA_CSUM &&
			      !scrub_data_ok(ctx, job->buf + (size_t)i * ctx->sectorsize,
					     job->csum + (size_t)i * job->csum_stride);
}

/* The oldest queued job of the client with the most still to read, and the job before it. */
static struct scrub_hash_job *most_behind(const struct scrub_hash_queue *q,
					  struct scrub_hash_job **prev_out)
{
	struct scrub_hash_job *best = q->head, *prev = NULL;
	uint64_t most = __atomic_load_n(&best->client->left, __ATOMIC_RELAXED);

	for (struct scrub_hash_job *j = q->head; j->next; j = j->next) {
		uint64_t left = __atomic_load_n(&j->next->client->left, __ATOMIC_RELAXED);

		if (left > most) {
			most = left;
			best = j->next;
			prev = j;
		}
	}
	*prev_out = prev;
	return best;
}

void scrub_hash_queue_add(struct scrub_hash_queue *q, struct scrub_hash_job *job)
{
	job->next = NULL;
	job->claimed = job->hashed = 0;
	if (q->tail)
		q->tail->next = job;
	else
		q->head = job;
	q->tail = job;
}

struct scrub_hash_job *scrub_hash_queue_claim(struct scrub_hash_queue *q, uint32_t slice,
					      uint32_t *from, uint32_t *to)
{
	struct scrub_hash_job *prev, *job;

	if (!q->head)
		return NULL;
	job = most_behind(q, &prev);
	*from = job->claimed;
	*to = job->nr_sectors - *from > slice ? *from + (slice ? slice : 1) : job->nr_sectors;
	job->claimed = *to;
	if (*to == job->nr_sectors) {
		if (prev)
			prev->next = job->next;
		else
			q->head = job->next;
		if (q->tail == job)
			q->tail = prev;
	}
	return job;
}

/* Under the lock: hands a finished job back to its reader. */
static void job_done(struct scrub_hash_pool *pool, struct scrub_hash_job *job)
{
	struct scrub_hash_client *client = job->client;
	uint64_t one = 1;
	ssize_t written;

	job->next = client->done;
	client->done = job;
	/*
	 * Before pending drops: the reader closes the eventfd once nothing is
	 * pending. Only a counter overflow could fail it, and the reader
	 * drains the counter.
	 */
	written = write(client->efd, &one, sizeof(one));
	(void)written;
	if (!--client->pending)
		pthread_cond_broadcast(&pool->idle);
}

static void *hash_main(void *arg)
{
	struct scrub_hash_pool *pool = arg;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct scrub_hash_job *job;
		uint32_t from, to;

		while (!pool->queue.head && !pool->stop)
			pthread_cond_wait(&pool->work, &pool->lock);
		job = scrub_hash_queue_claim(&pool->queue, HASH_SLICE_BYTES / pool->ctx->sectorsize,
					     &from, &to);
		if (!job)
			break;
		pthread_mutex_unlock(&pool->lock);
		hash_slice(pool->ctx, job, from, to);
		pthread_mutex_lock(&pool->lock);
		job->hashed += to - from;
		if (job->hashed == job->nr_sectors)
			job_done(pool, job);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

void scrub_hash_pool_stop(struct scrub_hash_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned int i = 0; i < pool->nr_threads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->idle);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool->threads);
	free(pool);
}

int scrub_hash_pool_start(struct scrub_ctx *ctx, struct scrub_hash_pool **out)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int want = cpus > 0 ? (unsigned int)cpus : 1;
	struct scrub_hash_pool *pool = calloc(1, sizeof(*pool));

	*out = NULL;
	if (!pool)
		return bx_error(-ENOMEM, "out of memory");
	pool->ctx = ctx;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->idle, NULL);
	pool->threads = calloc(want, sizeof(*pool->threads));
	if (!pool->threads) {
		scrub_hash_pool_stop(pool);
		return bx_error(-ENOMEM, "out of memory");
	}
	for (; pool->nr_threads < want; pool->nr_threads++)
		if (pthread_create(&pool->threads[pool->nr_threads], NULL, hash_main, pool))
			break;
	if (!pool->nr_threads) {
		scrub_hash_pool_stop(pool);
		return bx_error(-EAGAIN, "cannot start a hashing thread");
	}
	*out = pool;
	return 0;
}

int scrub_hash_client_init(struct scrub_hash_client *client, uint64_t left)
{
	client->done = NULL;
	client->pending = 0;
	client->left = left;
	client->efd = eventfd(0, EFD_CLOEXEC);
	if (client->efd < 0)
		return bx_error(-errno, "eventfd: %m");
	return 0;
}

void scrub_hash_client_release(struct scrub_hash_pool *pool, struct scrub_hash_client *client)
{
	if (client->efd < 0)
		return;
	if (pool) {
		pthread_mutex_lock(&pool->lock);
		while (client->pending)
			pthread_cond_wait(&pool->idle, &pool->lock);
		pthread_mutex_unlock(&pool->lock);
	}
	close(client->efd);
	client->efd = -1;
}

void scrub_hash_submit(struct scrub_hash_pool *pool, struct scrub_hash_client *client,
		       struct scrub_hash_job *job)
{
	job->client = client;
	pthread_mutex_lock(&pool->lock);
	client->pending++;
	scrub_hash_queue_add(&pool->queue, job);
	/* Every idle worker: each takes a slice. */
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
}

struct scrub_hash_job *scrub_hash_take_done(struct scrub_hash_pool *pool,
					    struct scrub_hash_client *client)
{
	struct scrub_hash_job *done;

	pthread_mutex_lock(&pool->lock);
	done = client->done;
	client->done = NULL;
	pthread_mutex_unlock(&pool->lock);
	return done;
}
