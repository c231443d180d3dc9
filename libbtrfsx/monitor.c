/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The monitor history and its projections: monitor/ does the work. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "monitor/history.h"
#include "monitor/projection.h"

static void to_sample(const struct bx_mon_figures *in, struct btrfsx_monitor_sample *out)
{
	BX_MON_FIGURES_FIELDS(BX_FIELD_COPY)
}

static void to_trend(const struct bx_trend *t, const struct bx_trend_days *d,
		     struct btrfsx_monitor_trend *out)
{
	memset(out, 0, sizeof(*out));
	out->ok = t->status == BX_TREND_OK;
	if (!out->ok)
		return;
	out->growth = t->slope;
	out->growth_low = t->slope_low;
	out->growth_high = t->slope_high;
	out->one_off_changes = t->nr_jumps;
	out->exhausts = d->exhausts;
	out->days_left = d->days;
	out->days_left_low = d->days_low;
	out->days_left_high = d->days_high;
}

static void to_projection(const struct bx_mon_fs *fs, const struct bx_mon_projection *p,
			  struct btrfsx_monitor_projection *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->fsid, fs->fsid, sizeof(out->fsid));
	snprintf(out->label, sizeof(out->label), "%s", fs->label);
	snprintf(out->mountpoint, sizeof(out->mountpoint), "%s", fs->mountpoint);
	out->now = p->now;
	out->window = p->window;
	out->nr_samples = p->nr_samples;
	out->have_latest = p->have_latest;
	if (p->have_latest)
		to_sample(&p->latest, &out->latest);
	out->metadata_left = p->metadata_left;
	to_trend(&p->metadata, &p->metadata_days, &out->metadata);
	to_trend(&p->data, &p->data_days, &out->data);
	bx_mon_projection_reason(p, out->reason, sizeof(out->reason));
	out->min_history = p->min_history;
	out->history_span = p->span;
	out->learning = p->learning;
	out->metadata_growth_seen = p->metadata_seen.growth;
	out->data_growth_seen = p->data_seen.growth;
	out->burst = p->metadata_seen.burst || p->data_seen.burst;
}

_Static_assert(BTRFSX_MONITOR_MIN_HISTORY == BX_MON_DEFAULT_MIN_HISTORY,
	       "the library learns as long as the command line");

static const char *db_path(const char *db)
{
	return db ? db : BTRFSX_MONITOR_DEFAULT_DB;
}

PUBLIC enum btrfsx_error btrfsx_monitor_history(const char *db, const char *filesystem,
						int64_t since, int64_t until,
						struct btrfsx_monitor_sample **samples,
						size_t *nr_samples)
{
	struct bx_mon_figures *figs = NULL;
	struct bx_mon_fs *all = NULL, *fs;
	struct bx_mon_db *h;
	size_t nr_all, n = 0;
	int ret;

	bx_api_begin();
	if (!filesystem)
		return bx_api_missing("a filesystem");
	if (!samples || !nr_samples)
		return bx_api_missing("samples");
	ret = bx_mon_db_open(db_path(db), BX_MON_READ, &h);
	if (ret)
		return bx_api_result(ret);
	ret = bx_mon_db_filesystems(h, &all, &nr_all);
	if (!ret)
		ret = bx_mon_find_fs(all, nr_all, filesystem, db_path(db), &fs);
	if (!ret)
		ret = bx_mon_db_figures(h, fs->id, since, until, &figs, &n);
	bx_mon_db_close(h);
	free(all);
	if (ret)
		return bx_api_result(ret);
	*samples = calloc(n + 1, sizeof(**samples));
	if (!*samples) {
		free(figs);
		return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	}
	for (size_t i = 0; i < n; i++)
		to_sample(&figs[i], &(*samples)[i]);
	free(figs);
	*nr_samples = n;
	return BTRFSX_OK;
}

/* The filesystems asked for (all when none), pointers into @all. */
static int choose(struct bx_mon_fs *all, size_t nr_all, const char *path,
		  const char *const *names, size_t nr_names, struct bx_mon_fs ***chosen,
		  size_t *nr)
{
	*nr = 0;
	*chosen = calloc((nr_names ? nr_names : nr_all) + 1, sizeof(**chosen));
	if (!*chosen)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !nr_names && i < nr_all; i++)
		(*chosen)[(*nr)++] = &all[i];
	for (size_t i = 0; i < nr_names; i++) {
		int ret = bx_mon_find_fs(all, nr_all, names[i], path, &(*chosen)[(*nr)++]);

		if (ret)
			return ret;
	}
	return 0;
}

PUBLIC enum btrfsx_error btrfsx_monitor_projections(const char *db,
						    const char *const *filesystems,
						    size_t nr_filesystems, int64_t now,
						    int64_t window,
						    struct btrfsx_monitor_projection **projections,
						    size_t *nr_projections)
{
	struct bx_mon_fs *all = NULL, **chosen = NULL;
	struct btrfsx_monitor_projection *out = NULL;
	struct bx_mon_db *h;
	size_t nr_all = 0, nr = 0;
	int ret;

	bx_api_begin();
	if (nr_filesystems && !filesystems)
		return bx_api_missing("filesystems");
	if (!projections || !nr_projections)
		return bx_api_missing("projections");
	if (window <= 0)
		return bx_api_result(bx_error(-EINVAL, "window %lld: must be positive",
					      (long long)window));
	ret = bx_mon_db_open(db_path(db), BX_MON_READ, &h);
	if (ret)
		return bx_api_result(ret);
	ret = bx_mon_db_filesystems(h, &all, &nr_all);
	if (!ret)
		ret = choose(all, nr_all, db_path(db), filesystems, nr_filesystems, &chosen, &nr);
	if (!ret && !(out = calloc(nr + 1, sizeof(*out))))
		ret = bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < nr; i++) {
		struct bx_mon_project_opts opts = bx_mon_project_defaults(now);
		struct bx_mon_projection p;

		opts.window = window;
		ret = bx_mon_project(h, chosen[i]->id, &opts, &p);
		if (!ret)
			to_projection(chosen[i], &p, &out[i]);
	}
	bx_mon_db_close(h);
	free(chosen);
	free(all);
	if (ret) {
		free(out);
		return bx_api_result(ret);
	}
	*projections = out;
	*nr_projections = nr;
	return BTRFSX_OK;
}
