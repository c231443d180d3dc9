/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a filesystem is heading: the pace at which metadata and data use
 * grow over a window of its history (monitor/trend.h), and how many days
 * the metadata room and the strict free space for data last at that pace.
 *
 * - Metadata: the room the allocator model leaves for metadata
 *   (metadata_room), less the global reserve: when the room falls to the
 *   reserve, the kernel refuses ordinary writes with ENOSPC. Metadata use
 *   consumes it at its pace; growing data takes its part too where the two
 *   share devices (metadata_room - metadata_room_after_data): once the free
 *   space in the data chunks is used, evenly until data's free space
 *   (free_estimated) is gone. The classic metadata ENOSPC on a filesystem
 *   df shows half empty is that: data chunks took the room.
 * - Data: free_estimated, the data bytes the kernel can still write
 *   (the allocator model run forward, hints honoured), at the pace
 *   data_used grows. Not free_strict: on an array whose devices are all
 *   metadata_preferred the strict figure is 0 for good, and a page on it
 *   would never stop; data taking the metadata devices' room is what the
 *   metadata projection above counts.
 *
 * The remaining amounts are the newest sample's; days are counted from
 * @now (a sample an hour old has an hour less left).
 *
 * No projection without evidence: until the samples of the window span
 * min_history (24 hours by default) and number BX_TREND_MIN_SAMPLES, the
 * filesystem is learning. What the samples show then is told (the growth
 * seen, called a burst when at its pace the room would last less than
 * burst_days), never projected: the first minutes after the timer is
 * enabled often hold a large copy, a restore, a package upgrade, and a
 * pace fitted to them says "0.0 days left" of a filesystem that has years.
 */
#ifndef BTRFSX_MONITOR_PROJECTION_H
#define BTRFSX_MONITOR_PROJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor/history.h"
#include "monitor/sample.h"
#include "monitor/trend.h"

#define BX_MON_DEFAULT_WINDOW (30 * 86400)
#define BX_MON_DEFAULT_MIN_HISTORY 86400
#define BX_MON_DEFAULT_BURST_DAYS 30.0

/* What a projection is made of: see bx_mon_project_defaults(). */
struct bx_mon_project_opts {
	int64_t now;			/* the end of the window; days count from it */
	int64_t window;			/* the samples in [now - window, now] */
	int64_t min_history;		/* learning until the samples span this long */
	double burst_days;		/* growth seen while learning that would use the room
					   in fewer days is a burst */
};

/* The defaults at @now: BX_MON_DEFAULT_WINDOW, _MIN_HISTORY, _BURST_DAYS. */
struct bx_mon_project_opts bx_mon_project_defaults(int64_t now);

/* What the samples of a learning window show: told, not projected. */
struct bx_mon_seen {
	double growth;			/* bytes: the newest sample's use less the oldest's */
	bool burst;			/* at that pace the room would last < burst_days */
};

struct bx_mon_projection {
	int64_t now;
	int64_t window;			/* seconds before @now */
	int64_t min_history;
	size_t nr_samples;		/* in the window */
	bool have_latest;		/* a sample in the window: the rest is filled */
	int64_t span;			/* the newest sample's time less the oldest's */
	bool learning;			/* span < min_history or too few samples: no fit */
	struct bx_mon_seen metadata_seen;	/* while learning */
	struct bx_mon_seen data_seen;
	struct bx_mon_figures first;	/* the oldest sample in the window */
	struct bx_mon_figures latest;	/* the newest */
	uint64_t metadata_left;		/* metadata_room less the global reserve */
	uint64_t data_left;		/* free_estimated: what data can still take */
	struct bx_trend metadata;	/* metadata_used over time; not fitted while learning */
	struct bx_trend data;		/* data_used over time */
	struct bx_trend_days metadata_days;	/* metadata_left; valid with metadata OK */
	struct bx_trend_days data_days;	/* data_left; valid with data OK */
};

/*
 * The projection from @figs (@n samples in time order, those of the window).
 * Returns 0 or -ENOMEM.
 */
int bx_mon_project_figures(const struct bx_mon_figures *figs, size_t n,
			   const struct bx_mon_project_opts *opts, struct bx_mon_projection *proj);

/* The same from the history of filesystem @fs_id. */
int bx_mon_project(struct bx_mon_db *db, int64_t fs_id, const struct bx_mon_project_opts *opts,
		   struct bx_mon_projection *proj);

/*
 * Why there is no projection ("learning: 4 samples over 15s of the 1d
 * needed; metadata +400MiB in 15s, a burst, not projected"; "no sample in
 * the last 30d"), "" when there is one.
 */
void bx_mon_projection_reason(const struct bx_mon_projection *proj, char *buf, size_t len);

/* What the metadata projection counts down in a sample: metadata_room less the global reserve. */
uint64_t bx_mon_metadata_left(const struct bx_mon_figures *f);

/* True when the history was long enough and both fits succeeded. */
bool bx_mon_projection_ok(const struct bx_mon_projection *proj);

#endif
