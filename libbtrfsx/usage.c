/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Filesystem usage: fsops/snapshot-read.c reads the snapshot, fsops/usage.c computes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/reclaim.h"
#include "fsops/snapshot-read.h"
#include "fsops/usage.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "model/kernel/kernel.h"

static uint32_t public_warnings(uint32_t warnings)
{
	return ((warnings & BX_USAGE_W_METADATA_LOW) ? BTRFSX_USAGE_W_METADATA_LOW : 0) |
	       ((warnings & BX_USAGE_W_DATA_ON_META_DEVS) ? BTRFSX_USAGE_W_DATA_ON_META_DEVS : 0) |
	       ((warnings & BX_USAGE_W_HINTS_IGNORED) ? BTRFSX_USAGE_W_HINTS_IGNORED : 0);
}

static void public_overall(const struct bx_usage_overall *in, struct btrfsx_usage *out)
{
	BX_USAGE_OVERALL_FIELDS(BX_FIELD_COPY)
	out->progs_free_estimated = in->free_estimated;
	out->progs_free_min = in->free_min;
}

static void fill_overall(const struct bx_snapshot *in, const struct bx_usage_overall *ov,
			 struct btrfsx_usage *u)
{
	memcpy(u->fsid, in->fsid, sizeof(u->fsid));
	u->mounted = in->mounted;
	snprintf(u->path, sizeof(u->path), "%s", in->path);
	public_overall(ov, u);
	u->have_global_reserve = in->have_global_reserve;
	u->global_reserve = in->global_reserve;
	u->global_reserve_used = in->global_reserve_used;
}

static void fill_model(const struct bx_usage_report *in, unsigned int flags,
		       struct btrfsx_usage *out)
{
	BX_USAGE_MODEL_FIELDS(BX_FIELD_COPY)
	out->strict = flags & BX_USAGE_STRICT;
	out->data_profile = in->data_type;
	out->metadata_profile = in->metadata_type;
	out->warnings = public_warnings(in->warnings);
}

static void public_class(const struct bx_usage_class *in, struct btrfsx_usage_class *out)
{
	BX_USAGE_CLASS_FIELDS(BX_FIELD_COPY)
}

static void public_device(const struct bx_usage_dev_row *in, struct btrfsx_usage_device *out)
{
	BX_USAGE_DEVICE_FIELDS(BX_FIELD_COPY)
	snprintf(out->path, sizeof(out->path), "%s", in->missing ? "" : in->path);
}

static void public_reclaim(const struct bx_reclaim_kind_report *in,
			   struct btrfsx_usage_reclaim *out)
{
	BX_RECLAIM_KIND_FIELDS(BX_FIELD_COPY)
}

void bx_api_usage_reclaim(const struct bx_snapshot *settings, const struct bx_snapshot *in,
			  struct btrfsx_usage *u)
{
	struct bx_reclaim_report rep;

	_Static_assert(sizeof(u->reclaim) / sizeof(u->reclaim[0]) == BX_SNAP_NR_KINDS,
		       "one per BX_SNAP_KIND_*");
	bx_reclaim_report(settings, in, &rep);
	if (!rep.known)
		return;
	u->have_reclaim = true;
	u->reclaim_data_chunk_size = rep.data_chunk_size;
	u->reclaim_device_bytes_below_threshold = rep.device_bytes_below_threshold;
	for (unsigned int i = 0; i < BX_SNAP_NR_KINDS; i++)
		public_reclaim(&rep.kind[i], &u->reclaim[i]);
}

static void fill_classes(const struct bx_usage_report *rep, struct btrfsx_usage *u)
{
	for (size_t i = 0; i < rep->nr_classes; i++)
		public_class(&rep->classes[i], &u->classes[i]);
	u->nr_classes = rep->nr_classes;
}

static void fill_devices(const struct bx_usage_report *rep, struct btrfsx_usage *u)
{
	for (size_t i = 0; i < rep->nr_dev_rows; i++)
		public_device(&rep->dev_rows[i], &u->devices[i]);
	u->nr_devices = rep->nr_dev_rows;
}

/* The block group lines; the global reserve has its own fields. */
static void fill_spaces(const struct bx_snapshot *in, struct btrfsx_usage *u)
{
	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *s = &in->spaces[i];

		if (s->flags & BX_SPACE_INFO_GLOBAL_RSV)
			continue;
		u->spaces[u->nr_spaces++] = (struct btrfsx_usage_space){
			.flags = s->flags,
			.total_bytes = s->total_bytes,
			.used_bytes = s->used_bytes,
		};
	}
}

static struct btrfsx_usage *usage_alloc(const struct bx_snapshot *in,
					const struct bx_usage_report *rep)
{
	struct btrfsx_usage *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->classes = calloc(rep->nr_classes + 1, sizeof(*u->classes));
	u->devices = calloc(rep->nr_dev_rows + 1, sizeof(*u->devices));
	u->spaces = calloc(in->nr_spaces + 1, sizeof(*u->spaces));
	if (!u->classes || !u->devices || !u->spaces) {
		btrfsx_usage_free(u);
		return NULL;
	}
	return u;
}

struct btrfsx_usage *bx_api_usage_from(const struct bx_snapshot *in,
				       const struct bx_usage_report *rep, unsigned int model_flags)
{
	struct btrfsx_usage *u = usage_alloc(in, rep);

	if (!u)
		return NULL;
	fill_overall(in, &rep->overall, u);
	fill_model(rep, model_flags, u);
	fill_classes(rep, u);
	fill_devices(rep, u);
	fill_spaces(in, u);
	bx_api_usage_reclaim(in, in, u);
	bx_api_kernel_fields(&in->kernel, u->kernel, &u->kernel_running);
	return u;
}

PUBLIC enum btrfsx_error btrfsx_usage_get(const char *const *paths, size_t nr_paths,
					  const char *sysfs_root, unsigned int flags,
					  struct btrfsx_usage **out)
{
	return btrfsx_usage_get_for_kernel(paths, nr_paths, sysfs_root, flags, NULL, out);
}

PUBLIC enum btrfsx_error btrfsx_usage_get_for_kernel(const char *const *paths, size_t nr_paths,
						     const char *sysfs_root, unsigned int flags,
						     const char *kernel, struct btrfsx_usage **out)
{
	unsigned int model_flags = 0;
	struct bx_usage_report rep;
	struct bx_snapshot in;
	struct bx_kernel k;
	struct btrfsx_usage *u;
	int ret;

	bx_api_begin();
	if (!paths || !nr_paths)
		return bx_api_missing("a path");
	if (!out)
		return bx_api_missing("out");
	if (bx_api_check_flags(flags, BTRFSX_USAGE_IGNORE_HINTS | BTRFSX_USAGE_STRICT))
		return BTRFSX_ERROR_INVALID_ARGUMENT;
	ret = bx_api_kernel(kernel, &k);
	if (ret)
		return bx_api_result(ret);
	if (flags & BTRFSX_USAGE_IGNORE_HINTS)
		model_flags |= BX_USAGE_IGNORE_HINTS;
	if (flags & BTRFSX_USAGE_STRICT)
		model_flags |= BX_USAGE_STRICT;
	ret = bx_snapshot_read_usage((char *const *)paths, (int)nr_paths,
				     bx_api_sysfs_root(sysfs_root), &in);
	if (ret)
		return bx_api_result(ret);
	bx_api_kernel_use(&k, &in);
	ret = bx_usage_compute(&in, model_flags, &rep);
	if (ret) {
		bx_snapshot_release(&in);
		return bx_api_result(ret);
	}
	u = bx_api_usage_from(&in, &rep, model_flags);
	bx_usage_report_release(&rep);
	bx_snapshot_release(&in);
	if (!u)
		return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	*out = u;
	return BTRFSX_OK;
}

PUBLIC void btrfsx_usage_free(struct btrfsx_usage *usage)
{
	if (!usage)
		return;
	free(usage->classes);
	free(usage->devices);
	free(usage->spaces);
	free(usage);
}
