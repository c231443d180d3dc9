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
 * - Data: free_strict, the data bytes that fit without taking the
 *   metadata devices' room, at the pace data_used grows.
 *
 * The remaining amounts are the newest sample's; days are counted from
 * @now (a sample an hour old has an hour less left).
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

struct bx_mon_projection {
	int64_t now;
	int64_t window;			/* seconds before @now */
	size_t nr_samples;		/* in the window */
	bool have_latest;		/* a sample in the window: the rest is filled */
	struct bx_mon_figures first;	/* the oldest sample in the window */
	struct bx_mon_figures latest;	/* the newest */
	uint64_t metadata_left;		/* metadata_room less the global reserve */
	struct bx_trend metadata;	/* metadata_used over time */
	struct bx_trend data;		/* data_used over time */
	struct bx_trend_days metadata_days;	/* metadata_left; valid with metadata OK */
	struct bx_trend_days data_days;	/* free_strict; valid with data OK */
};

/*
 * The projection from @figs (@n samples in time order, those of the window).
 * Returns 0 or -ENOMEM.
 */
int bx_mon_project_figures(const struct bx_mon_figures *figs, size_t n, int64_t now,
			   int64_t window, struct bx_mon_projection *proj);

/* The same from the history of filesystem @fs_id (samples in [now - window, now]). */
int bx_mon_project(struct bx_mon_db *db, int64_t fs_id, int64_t now, int64_t window,
		   struct bx_mon_projection *proj);

/*
 * Why there is no projection ("2 samples in the last 30d; at least 3 are
 * needed"), "" when there is one.
 */
void bx_mon_projection_reason(const struct bx_mon_projection *proj, char *buf, size_t len);

/* True when both fits had enough history. */
bool bx_mon_projection_ok(const struct bx_mon_projection *proj);

#endif
