/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Misplaced chunks: the report (fsops/misplaced.c) and the relocation
 * (relocate/relocate.c), the same code as `btrfsx filesystem misplaced` and
 * `btrfsx balance misplaced`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/misplaced.h"
#include "fsops/snapshot-read.h"
#include "relocate/relocate.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "model/kernel/kernel.h"

static uint64_t *copy_u64(const uint64_t *src, size_t n)
{
	uint64_t *dst = calloc(n + 1, sizeof(*dst));

	if (dst && n)
		memcpy(dst, src, n * sizeof(*dst));
	return dst;
}

static enum btrfsx_misplaced_class public_class(enum bx_place_class cls)
{
	return cls == BX_PLACE_FORBIDDEN ? BTRFSX_MISPLACED_FORBIDDEN :
	       BTRFSX_MISPLACED_OFF_PREFERENCE;
}

static void chunk_free(struct btrfsx_misplaced_chunk *c)
{
	free(c->devids);
	free(c->offending);
	free(c->model_devids);
}

static int fill_chunk(const struct bx_misplaced_chunk *in, struct btrfsx_misplaced_chunk *out)
{
	BX_MISPLACED_CHUNK_FIELDS(BX_FIELD_COPY)
	out->flags = in->type;
	out->cls = public_class(in->cls);
	out->nr_devids = in->num_stripes;
	out->nr_offending = in->nr_offending;
	out->have_model = in->have_target;
	out->model_flags = in->target_type;
	out->model_length = in->target_length;
	out->nr_model_devids = in->have_target ? in->target_stripes : 0;
	out->devids = calloc(in->num_stripes + 1, sizeof(*out->devids));
	out->offending = copy_u64(in->offending, in->nr_offending);
	out->model_devids = copy_u64(in->target_devids, out->nr_model_devids);
	if (!out->devids || !out->offending || !out->model_devids)
		return -ENOMEM;
	for (uint32_t s = 0; s < in->num_stripes; s++)
		out->devids[s] = in->stripes[s].devid;
	return 0;
}

/* @n chunks of @src into a new array at *@out (freed with chunk_free each). */
static int fill_chunks(const struct bx_misplaced_chunk *src, size_t n,
		       struct btrfsx_misplaced_chunk **out)
{
	int ret = 0;

	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n && !ret; i++)
		ret = fill_chunk(&src[i], &(*out)[i]);
	return ret;
}

static void public_totals(const struct bx_misplaced_totals *in, struct btrfsx_misplaced_totals *out)
{
	BX_MISPLACED_TOTALS_FIELDS(BX_FIELD_COPY)
}

static void public_report(const struct bx_misplaced_report *in, struct btrfsx_misplaced *out)
{
	BX_MISPLACED_REPORT_FIELDS(BX_FIELD_COPY)
	public_totals(&in->forbidden, &out->forbidden);
	public_totals(&in->off_preference, &out->off_preference);
	out->copy_rate = in->have_rate ? in->rate : 0;
	out->nr_chunks = in->nr_chunks;
	bx_api_kernel_fields(&in->kernel, out->kernel, &out->kernel_running);
}

PUBLIC void btrfsx_misplaced_free(struct btrfsx_misplaced *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->chunks && i < m->nr_chunks; i++)
		chunk_free(&m->chunks[i]);
	free(m->chunks);
	free(m);
}

struct btrfsx_misplaced *bx_api_misplaced_from(const struct bx_misplaced_report *rep)
{
	struct btrfsx_misplaced *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	public_report(rep, m);
	if (fill_chunks(rep->chunks, rep->nr_chunks, &m->chunks)) {
		btrfsx_misplaced_free(m);
		return NULL;
	}
	return m;
}

PUBLIC enum btrfsx_error btrfsx_misplaced_get(const char *const *paths, size_t nr_paths,
					      const char *sysfs_root, const char *state_dir,
					      struct btrfsx_misplaced **out)
{
	return btrfsx_misplaced_get_for_kernel(paths, nr_paths, sysfs_root, state_dir, NULL, out);
}

PUBLIC enum btrfsx_error btrfsx_misplaced_get_for_kernel(const char *const *paths,
							 size_t nr_paths, const char *sysfs_root,
							 const char *state_dir, const char *kernel,
							 struct btrfsx_misplaced **out)
{
	struct bx_misplaced_report rep;
	struct bx_snapshot in;
	struct bx_kernel k;
	int ret;

	bx_api_begin();
	if (!paths || !nr_paths)
		return bx_api_missing("a path");
	if (!out)
		return bx_api_missing("out");
	ret = bx_api_kernel(kernel, &k);
	if (ret)
		return bx_api_result(ret);
	ret = bx_snapshot_read_used((char *const *)paths, (int)nr_paths,
				    bx_api_sysfs_root(sysfs_root), &in);
	if (ret)
		return bx_api_result(ret);
	bx_api_kernel_use(&k, &in);
	ret = bx_misplaced_compute(&in, bx_api_state_dir(state_dir), &rep);
	bx_snapshot_release(&in);
	if (ret)
		return bx_api_result(ret);
	*out = bx_api_misplaced_from(&rep);
	bx_misplaced_report_release(&rep);
	if (!*out)
		return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	return BTRFSX_OK;
}

/* ---- relocation ---- */

/* The caller's callback, relayed with the public progress structure. */
struct relay {
	const struct btrfsx_relocate_options *opts;
};

static void public_progress(const struct bx_relocate_progress *in,
			    struct btrfsx_relocate_progress *out)
{
	BX_RELOCATE_PROGRESS_FIELDS(BX_FIELD_COPY)
}

static int relay_progress(void *arg, const struct bx_relocate_progress *p)
{
	const struct relay *relay = arg;
	struct btrfsx_relocate_progress pub = { 0 };

	public_progress(p, &pub);
	return relay->opts->progress(relay->opts->progress_arg, &pub);
}

/* The listed options as they are; the callback and cancel flag are relayed. */
static void engine_options(const struct btrfsx_relocate_options *in, struct bx_relocate_opts *out)
{
	*out = (struct bx_relocate_opts){ 0 };
	BX_RELOCATE_OPTS_FIELDS(BX_FIELD_TAKE)
}

static void relocated_free(struct btrfsx_relocated *r)
{
	for (size_t i = 0; r->new_chunks && i < r->nr_new; i++)
		free(r->new_chunks[i].devids);
	free(r->new_chunks);
	free(r->devids);
}

PUBLIC void btrfsx_relocate_result_free(struct btrfsx_relocate_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; res->planned && i < res->nr_planned; i++)
		chunk_free(&res->planned[i]);
	free(res->planned);
	for (size_t i = 0; res->relocated && i < res->nr_relocated; i++)
		relocated_free(&res->relocated[i]);
	free(res->relocated);
	free(res);
}

static int fill_new_chunk(const struct bx_relocate_new_chunk *in, struct btrfsx_relocated_new *out)
{
	BX_RELOCATE_NEW_CHUNK_FIELDS(BX_FIELD_COPY)
	out->flags = in->type;
	out->nr_devids = in->num_stripes;
	out->devids = copy_u64(in->devids, in->num_stripes);
	return out->devids ? 0 : -ENOMEM;
}

static int fill_relocated(const struct bx_relocated *in, struct btrfsx_relocated *out)
{
	int ret = 0;

	BX_RELOCATED_FIELDS(BX_FIELD_COPY)
	out->flags = in->type;
	out->cls = public_class(in->cls);
	out->nr_devids = in->num_stripes;
	out->nr_new = in->nr_new;
	out->devids = copy_u64(in->devids, in->num_stripes);
	out->new_chunks = calloc(in->nr_new + 1, sizeof(*out->new_chunks));
	if (!out->devids || !out->new_chunks)
		return -ENOMEM;
	for (size_t i = 0; i < in->nr_new && !ret; i++)
		ret = fill_new_chunk(&in->new_chunks[i], &out->new_chunks[i]);
	return ret;
}

static const enum btrfsx_relocate_status public_status[] = {
	[BX_RELOCATE_DONE] = BTRFSX_RELOCATE_DONE,
	[BX_RELOCATE_LIMIT] = BTRFSX_RELOCATE_LIMIT,
	[BX_RELOCATE_DRY_RUN] = BTRFSX_RELOCATE_DRY_RUN,
	[BX_RELOCATE_CANCELLED] = BTRFSX_RELOCATE_CANCELLED,
	[BX_RELOCATE_NO_ROOM] = BTRFSX_RELOCATE_NO_ROOM,
	[BX_RELOCATE_ENOSPC] = BTRFSX_RELOCATE_ENOSPC,
	[BX_RELOCATE_MISPLACED_AGAIN] = BTRFSX_RELOCATE_MISPLACED_AGAIN,
	[BX_RELOCATE_FAILED] = BTRFSX_RELOCATE_FAILED,
};

static void public_run(const struct bx_relocate_result *in, struct btrfsx_relocate_result *out)
{
	BX_RELOCATE_RESULT_FIELDS(BX_FIELD_COPY)
	out->status = public_status[in->stop];
	memcpy(out->fsid, in->start.fsid, sizeof(out->fsid));
	out->nr_planned = in->nr_planned;
}

static struct btrfsx_relocate_result *result_from(const struct bx_relocate_result *res)
{
	struct btrfsx_relocate_result *out = calloc(1, sizeof(*out));
	int ret;

	if (!out)
		return NULL;
	public_run(res, out);
	ret = fill_chunks(res->start.chunks, res->nr_planned, &out->planned);
	out->relocated = calloc(res->nr_relocated + 1, sizeof(*out->relocated));
	if (!ret && !out->relocated)
		ret = -ENOMEM;
	out->nr_relocated = out->relocated ? res->nr_relocated : 0;
	for (size_t i = 0; !ret && i < res->nr_relocated; i++)
		ret = fill_relocated(&res->relocated[i], &out->relocated[i]);
	if (ret) {
		btrfsx_relocate_result_free(out);
		return NULL;
	}
	return out;
}

PUBLIC enum btrfsx_error btrfsx_relocate_misplaced(const char *path,
						   const struct btrfsx_relocate_options *opts,
						   struct btrfsx_relocate_result **result)
{
	static const struct btrfsx_relocate_options defaults;
	struct bx_relocate_result *res = NULL;
	struct bx_relocate_opts o;
	struct relay relay;
	enum btrfsx_error err;
	int ret;

	bx_api_begin();
	if (!path)
		return bx_api_missing("path");
	if (!result)
		return bx_api_missing("result");
	*result = NULL;
	if (!opts)
		opts = &defaults;
	if (opts->pause < 0 || opts->pause != opts->pause || opts->progress_interval < 0)
		return bx_api_result(bx_error(-EINVAL, "pause and progress_interval must be "
					      "0 or more seconds"));
	relay.opts = opts;
	engine_options(opts, &o);
	o.sysfs_root = bx_api_sysfs_root(o.sysfs_root);
	o.progress = opts->progress ? relay_progress : NULL;
	o.progress_arg = &relay;
	o.cancel = opts->cancel;
	ret = bx_relocate_run(path, &o, &res);
	err = bx_api_result(ret);
	if (res) {
		*result = result_from(res);
		bx_relocate_result_free(res);
		if (!*result)
			return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	}
	return err;
}
