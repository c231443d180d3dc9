/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One sample of a mounted filesystem from its ioctls and sysfs. See sample.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/misplaced.h"
#include "fsops/mounted-fs.h"
#include "fsops/read-policy.h"
#include "fsops/snapshot-read.h"
#include "fsops/usage.h"
#include "monitor/sample.h"

static void take_figures(const struct bx_snapshot *in, const struct bx_usage_report *rep,
			 struct bx_mon_sample *s)
{
	struct bx_mon_figures *f = &s->fig;

	memcpy(s->fsid, in->fsid, sizeof(s->fsid));
	f->device_size = rep->overall.device_size;
	f->device_allocated = rep->overall.device_allocated;
	f->used = rep->overall.used;
	f->data_size = rep->data_size;
	f->data_used = rep->data_used;
	f->metadata_size = rep->metadata_size;
	f->metadata_used = rep->metadata_used;
	f->free_estimated = rep->free_estimated;
	f->free_strict = rep->free_strict;
	f->have_statfs = rep->have_statfs;
	f->free_statfs = rep->free_statfs;
	f->metadata_room = rep->metadata_room;
	f->metadata_room_after_data = rep->metadata_room_after_data;
	f->global_reserve = in->global_reserve;
	f->global_reserve_used = in->global_reserve_used;
}

static int take_spaces(const struct bx_snapshot *in, struct bx_mon_sample *s)
{
	s->spaces = calloc(in->nr_spaces + 1, sizeof(*s->spaces));
	if (!s->spaces)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *sp = &in->spaces[i];

		if (sp->flags & BX_SPACE_INFO_GLOBAL_RSV)
			continue;
		s->spaces[s->nr_spaces++] = (struct bx_mon_space){ sp->flags, sp->total_bytes,
								   sp->used_bytes };
	}
	return 0;
}

/* Devices with their error counters; a device the kernel gives none for keeps have_errors false. */
static int take_devices(const struct bx_usage_report *rep, const struct bx_mounted_fs *fs,
			struct bx_mon_sample *s)
{
	s->devices = calloc(rep->nr_dev_rows + 1, sizeof(*s->devices));
	if (!s->devices)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < rep->nr_dev_rows; i++) {
		const struct bx_usage_dev_row *r = &rep->dev_rows[i];
		struct bx_mon_device *d = &s->devices[s->nr_devices++];

		d->devid = r->devid;
		snprintf(d->path, sizeof(d->path), "%s", r->missing ? "" : r->path);
		d->missing = r->missing;
		d->hint = r->hint;
		d->size = r->size;
		d->unallocated = r->unallocated;
		d->data = r->data;
		d->metadata = r->metadata;
		d->system = r->system;
		d->have_errors = !bx_mounted_dev_stats(fs, d->devid, d->errors);
		if (!d->have_errors)
			bx_error_clear();
	}
	return 0;
}

/*
 * Whether the kernel honours the hints, and the chunks that break them. A
 * sample without the count is worth more than none: only running out of
 * memory fails it.
 */
static int take_misplaced(const struct bx_snapshot *in, struct bx_mon_sample *s)
{
	struct bx_misplaced_report rep;
	int ret;

	s->have_hints_effective = true;
	s->hints_effective = in->hints_effective;
	ret = bx_misplaced_classify(in, &rep);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		/* mixed block groups, a layout the model does not take: not counted */
		bx_error_clear();
		return 0;
	}
	s->misplaced = (struct bx_mon_misplaced){
		true, rep.forbidden.chunks, rep.forbidden.used, rep.off_preference.chunks,
		rep.off_preference.used,
	};
	bx_misplaced_report_release(&rep);
	return 0;
}

/* The active read policy; "" when sysfs does not say. */
static void take_read_policy(const char *sysfs_root, const struct bx_mounted_fs *fs,
			     struct bx_mon_sample *s)
{
	struct bx_rp_state st;

	if (bx_rp_read(sysfs_root, fs->fsid_str, &st)) {
		bx_error_clear();
		return;
	}
	bx_rp_format(&st.active, s->read_policy, sizeof(s->read_policy));
}

int bx_mon_collect(const char *mountpoint, const char *sysfs_root, int64_t time,
		   struct bx_mon_sample *s)
{
	struct bx_usage_report rep;
	struct bx_snapshot in;
	struct bx_mounted_fs fs;
	int ret;

	memset(s, 0, sizeof(*s));
	s->fig.time = time;
	snprintf(s->mountpoint, sizeof(s->mountpoint), "%s", mountpoint);
	sysfs_root = sysfs_root ? sysfs_root : "/sys";
	ret = bx_snapshot_read_committed_used((char *const *)&mountpoint, 1, sysfs_root, &in);
	if (ret)
		return ret;
	/* What usage warns about is for the report to say, not for every sample. */
	ret = bx_usage_compute(&in, BX_USAGE_QUIET, &rep);
	if (ret) {
		bx_snapshot_release(&in);
		return ret;
	}
	ret = bx_mounted_open(mountpoint, &fs);
	if (!ret) {
		take_figures(&in, &rep, s);
		ret = bx_mounted_label(&fs, s->label, sizeof(s->label));
		if (!ret)
			ret = take_spaces(&in, s);
		if (!ret)
			ret = take_devices(&rep, &fs, s);
		if (!ret)
			ret = take_misplaced(&in, s);
		take_read_policy(sysfs_root, &fs, s);
		bx_mounted_close(&fs);
	}
	bx_usage_report_release(&rep);
	bx_snapshot_release(&in);
	if (ret)
		bx_mon_sample_release(s);
	return ret;
}

void bx_mon_sample_release(struct bx_mon_sample *s)
{
	free(s->spaces);
	free(s->devices);
	s->spaces = NULL;
	s->devices = NULL;
	s->nr_spaces = 0;
	s->nr_devices = 0;
}
