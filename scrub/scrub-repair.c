/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What becomes of a bad copy: its error record, the rewrite from a good
 * copy through the write path, and the counting of the outcome.
 *
 * A worker's rewrites go in batches, one flush per batch (disk/write.c's
 * batch: adjacent copies merged into one write, every device flushed once,
 * everything read back), not one flushed write per bad copy: a member full
 * of bad sectors repairs at the speed it reads instead of at a flush per
 * 4 KiB. Writing a good copy over a bad one can only make it good, and the
 * copies of a batch never overlap, so any part of a batch that reaches the
 * disk before a crash leaves each bad copy bad or repaired, as one write at
 * a time did. A repair is counted corrected when it is queued; when its
 * batch is written, every repair that did not reach the device (written,
 * flushed and read back) becomes uncorrectable in its record and counters,
 * so the result says what is on the disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"
#include "disk/write.h"
#include "scrub/scrub-internal.h"

/* A batch is written when it holds this many bytes or requests. */
#define REPAIR_BATCH_BYTES (16u << 20)
#define REPAIR_BATCH_REQUESTS 4096u

size_t scrub_record(struct scrub_ctx *ctx, const struct bx_scrub_error *e)
{
	size_t at = SIZE_MAX;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->nr_errors < BX_SCRUB_MAX_ERRORS) {
		at = ctx->nr_errors++;
		ctx->errors[at] = *e;
	} else {
		ctx->errors_dropped++;
	}
	pthread_mutex_unlock(&ctx->lock);
	return at;
}

/* Under ctx->lock: a repair that failed; its cause is told once, at the end. */
static void note_failed(struct scrub_ctx *ctx, const char *why)
{
	if (!ctx->failed_repairs++)
		snprintf(ctx->first_repair_error, sizeof(ctx->first_repair_error), "%s", why);
}

int scrub_write(struct scrub_ctx *ctx, struct bx_device *dev, const void *buf, size_t len,
		uint64_t physical)
{
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ret = bx_write_physical(ctx->fs, dev, buf, len, physical);
	if (ret)
		note_failed(ctx, bx_error_message(ret));
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

static void account(struct bx_scrub_counters *c, enum bx_scrub_fix fix, uint64_t nr)
{
	if (fix == BX_SCRUB_UNCORRECTABLE)
		c->uncorrectable_errors += nr;
	else
		c->corrected_errors += nr;
}

int scrub_queue_repair(struct scrub_worker *w, struct bx_device *dev, const void *buf,
		       size_t len, uint64_t physical)
{
	struct scrub_repairs *rp = &w->repairs;
	size_t i = rp->queued;
	uint8_t *copy;
	int ret;

	ret = bx_array_grow((void **)&rp->copies, &rp->cap, i + 1, sizeof(*rp->copies));
	if (!ret)
		ret = bx_array_grow((void **)&rp->owner, &rp->cap_owner, i + 1, sizeof(*rp->owner));
	if (ret)
		return ret;
	copy = malloc(len);
	if (!copy)
		return bx_error(-ENOMEM, "out of memory");
	memcpy(copy, buf, len);
	ret = bx_batch_add(&rp->batch, dev, copy, len, physical);
	if (ret) {
		free(copy);
		return ret;
	}
	rp->copies[i] = copy;
	rp->owner[i] = SIZE_MAX;
	rp->queued++;
	rp->unsettled++;
	rp->bytes += len;
	return 0;
}

enum bx_scrub_fix scrub_fix(struct scrub_worker *w, bool good, struct bx_device *dev,
			    const void *buf, size_t len, uint64_t physical)
{
	struct scrub_ctx *ctx = w->ctx;
	int ret;

	if (!good)
		return BX_SCRUB_UNCORRECTABLE;
	if (ctx->opts->readonly)
		return BX_SCRUB_CORRECTABLE;
	ret = scrub_queue_repair(w, dev, buf, len, physical);
	if (ret) {
		pthread_mutex_lock(&ctx->lock);
		note_failed(ctx, bx_error_message(ret));
		pthread_mutex_unlock(&ctx->lock);
		bx_error_clear();
		return BX_SCRUB_UNCORRECTABLE;
	}
	return BX_SCRUB_CORRECTED;
}

void scrub_settle(struct scrub_worker *w, struct bx_scrub_counters *c, uint64_t nr,
		  const struct bx_scrub_error *e)
{
	struct scrub_repairs *rp = &w->repairs;
	size_t record;

	account(c, e->fix, nr);
	record = scrub_record(w->ctx, e);
	/* The rewrites queued for this copy are its repair: their outcome is its. */
	if (e->fix == BX_SCRUB_CORRECTED && rp->unsettled &&
	    !bx_array_grow((void **)&rp->fixes, &rp->cap_fixes, rp->nr_fixes + 1, sizeof(*rp->fixes))) {
		rp->fixes[rp->nr_fixes] = (struct scrub_repair_fix){ record, c, nr };
		for (size_t i = rp->queued - rp->unsettled; i < rp->queued; i++)
			rp->owner[i] = rp->nr_fixes;
		rp->nr_fixes++;
	}
	bx_error_clear();
	rp->unsettled = 0;
	if (rp->bytes >= REPAIR_BATCH_BYTES || rp->queued >= REPAIR_BATCH_REQUESTS)
		scrub_flush_repairs(w);
}

/* Under ctx->lock: the repairs of which a request did not reach the device are uncorrectable. */
static void unsettle_lost(struct scrub_ctx *ctx, struct scrub_repairs *rp, const bool *durable,
			  int ret)
{
	for (size_t f = 0; f < rp->nr_fixes; f++) {
		struct scrub_repair_fix *fix = &rp->fixes[f];
		bool lost = false;

		for (size_t i = 0; i < rp->queued && !lost; i++)
			lost = rp->owner[i] == f && !(durable && durable[i]);
		if (!lost)
			continue;
		fix->c->corrected_errors -= fix->nr;
		fix->c->uncorrectable_errors += fix->nr;
		if (fix->record != SIZE_MAX)
			ctx->errors[fix->record].fix = BX_SCRUB_UNCORRECTABLE;
		note_failed(ctx, ret ? bx_error_message(ret) : "out of memory");
	}
}

void scrub_flush_repairs(struct scrub_worker *w)
{
	struct scrub_ctx *ctx = w->ctx;
	struct scrub_repairs *rp = &w->repairs;
	bool *durable;
	int ret = 0;

	if (!rp->queued)
		return;
	durable = calloc(rp->queued, sizeof(*durable));
	pthread_mutex_lock(&ctx->lock);
	if (durable)
		ret = bx_batch_submit_each(ctx->fs, &rp->batch, durable);
	unsettle_lost(ctx, rp, durable, ret);
	pthread_mutex_unlock(&ctx->lock);
	bx_error_clear();
	free(durable);
	scrub_repairs_clear(rp);
}

/* Forgets what was queued (written or not). */
void scrub_repairs_clear(struct scrub_repairs *rp)
{
	for (size_t i = 0; i < rp->queued; i++)
		free(rp->copies[i]);
	rp->batch.nr = 0;
	rp->queued = 0;
	rp->nr_fixes = 0;
	rp->unsettled = 0;
	rp->bytes = 0;
}

void scrub_repairs_free(struct scrub_repairs *rp)
{
	scrub_repairs_clear(rp);
	bx_batch_release(&rp->batch);
	free(rp->copies);
	free(rp->owner);
	free(rp->fixes);
	memset(rp, 0, sizeof(*rp));
}
