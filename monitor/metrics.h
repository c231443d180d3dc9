/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The newest sample and the projection of each filesystem as Prometheus
 * metrics: built as families of labelled values (so the command line can
 * also show them as JSON), written in the text exposition format.
 *
 * Names follow the Prometheus conventions: the btrfsx_ prefix, base units
 * in the name (_bytes, _seconds, _bytes_per_second; counters end in
 * _total), HELP and TYPE for every family, and the labels fsid, label and
 * mountpoint on every series. The days left keep the unit people alert on
 * (btrfsx_metadata_days_left < 14), +Inf when nothing is consumed.
 */
#ifndef BTRFSX_MONITOR_METRICS_H
#define BTRFSX_MONITOR_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "monitor/projection.h"
#include "monitor/sample.h"

#define BX_METRIC_MAX_LABELS 6
/* The file node_exporter's textfile collector reads in its directory. */
#define BX_METRICS_TEXTFILE "btrfsx.prom"

struct bx_metric_value {
	size_t nr_labels;
	const char *names[BX_METRIC_MAX_LABELS];
	char *values[BX_METRIC_MAX_LABELS];	/* owned */
	double value;
};

struct bx_metric_family {
	const char *name;
	const char *type;		/* "gauge" or "counter" */
	const char *help;
	size_t nr_values;
	size_t cap;
	struct bx_metric_value *values;
};

struct bx_metrics {
	size_t nr_families;
	struct bx_metric_family *families;
};

/* What one filesystem contributes. */
struct bx_metrics_input {
	const struct bx_mon_sample *latest;
	const struct bx_mon_projection *projection;
};

/* Builds the families for @nr filesystems. Release with bx_metrics_release(). */
int bx_metrics_build(const struct bx_metrics_input *inputs, size_t nr, struct bx_metrics *m);
void bx_metrics_release(struct bx_metrics *m);

/* The text exposition format of @m to @fp; families without values are left out. */
int bx_metrics_write(const struct bx_metrics *m, FILE *fp);

/* Writes @m to <dir>/BX_METRICS_TEXTFILE atomically (temporary file and rename). */
int bx_metrics_write_textfile(const struct bx_metrics *m, const char *dir, char *path,
			      size_t path_len);

#endif
