/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What becomes of a bad copy: its error record, the rewrite from a good
 * copy through the write path, and the counting of the outcome.
 */
#include <stdio.h>

#include "common/error.h"
#include "disk/write.h"
#include "scrub/scrub-internal.h"

void scrub_record(struct scrub_ctx *ctx, const struct bx_scrub_error *e)
{
	pthread_mutex_lock(&ctx->lock);
	if (ctx->nr_errors < BX_SCRUB_MAX_ERRORS)
		ctx->errors[ctx->nr_errors++] = *e;
	else
		ctx->errors_dropped++;
	pthread_mutex_unlock(&ctx->lock);
}

int scrub_write(struct scrub_ctx *ctx, struct bx_device *dev, const void *buf, size_t len,
		uint64_t physical)
{
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ret = bx_write_physical(ctx->fs, dev, buf, len, physical);
	/* The copy stays bad and is counted uncorrectable; the cause is told once, at the end. */
	if (ret && !ctx->failed_repairs++)
		snprintf(ctx->first_repair_error, sizeof(ctx->first_repair_error), "%s",
			 bx_error_message(ret));
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

void scrub_account_fix(struct scrub_ctx *ctx, struct bx_scrub_counters *c,
		       enum bx_scrub_fix fix, uint64_t nr)
{
	if (fix == BX_SCRUB_UNCORRECTABLE)
		c->uncorrectable_errors += nr;
	else
		c->corrected_errors += nr;
}

enum bx_scrub_fix scrub_fix(struct scrub_ctx *ctx, bool good, struct bx_device *dev,
			    const void *buf, size_t len, uint64_t physical)
{
	if (!good)
		return BX_SCRUB_UNCORRECTABLE;
	if (ctx->opts->readonly)
		return BX_SCRUB_CORRECTABLE;
	if (scrub_write(ctx, dev, buf, len, physical)) {
		bx_error_clear();
		return BX_SCRUB_UNCORRECTABLE;
	}
	return BX_SCRUB_CORRECTED;
}
