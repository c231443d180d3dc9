/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A maintain run as Prometheus metrics (text exposition format) for
 * node_exporter's textfile collector, one file per filesystem. Gauges of
 * the last run, labelled with the filesystem as the monitor's metrics are
 * (fsid, mountpoint); btrfsx_maintain_target_met 0 is the alert.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

#include "common/atomic-file.h"
#include "common/error.h"
#include "maintain/maintain.h"

/* @s with the label value escapes (backslash, quote, newline). */
static void label_value(FILE *fp, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(fp, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", fp);
		else
			fputc(*s, fp);
	}
}

static void gauge(FILE *fp, const char *name, const char *help, const char *labels,
		  const char *extra, double value)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s gauge\n%s{%s%s} ", name, help, name, name, labels,
		extra ? extra : "");
	if (isinf(value))
		fputs(value > 0 ? "+Inf\n" : "-Inf\n", fp);
	else
		fprintf(fp, "%.17g\n", value);
}

static void write_all(FILE *fp, const struct bx_maintain_result *res, const char *uuid)
{
	char labels[4096 + 128], extra[1200];
	FILE *lf = fmemopen(labels, sizeof(labels), "w");

	if (!lf)
		return;
	fprintf(lf, "fsid=\"%s\",mountpoint=\"", uuid);
	label_value(lf, res->path);
	fputs("\"", lf);
	fclose(lf);
	gauge(fp, "btrfsx_maintain_last_run_timestamp_seconds", "When the last maintain run ended.",
	      labels, NULL, (double)time(NULL));
	snprintf(extra, sizeof(extra), ",result=\"%s\"", bx_maintain_status_name(res->status));
	gauge(fp, "btrfsx_maintain_last_result", "The last run's result (the label), always 1.",
	      labels, extra, 1);
	gauge(fp, "btrfsx_maintain_target_met", "1: the target was met after the last run; 0: "
	      "not (see btrfsx_maintain_cannot_meet and the result).", labels, NULL,
	      res->target_met ? 1 : 0);
	lf = fmemopen(extra, sizeof(extra), "w");
	if (lf) {
		fputs(",why=\"", lf);
		label_value(lf, res->reason);
		fputs("\"", lf);
		fclose(lf);
	}
	gauge(fp, "btrfsx_maintain_cannot_meet", "1: moving data cannot meet the target (the "
	      "label says why and what would).", labels, extra,
	      res->status == BX_MAINTAIN_CANNOT ? 1 : 0);
	gauge(fp, "btrfsx_maintain_device_needed_bytes", "A device of this size would meet the "
	      "target (0: none needed).", labels, NULL,
	      res->status == BX_MAINTAIN_CANNOT ? (double)res->plan.device_needed : 0);
	gauge(fp, "btrfsx_maintain_bytes_moved", "Used bytes the last run moved.", labels, NULL,
	      (double)res->bytes_moved);
	gauge(fp, "btrfsx_maintain_actions", "Chunks the last run moved.", labels, NULL,
	      (double)res->nr_moved);
	gauge(fp, "btrfsx_maintain_metadata_room_bytes", "Metadata room after the last run.",
	      labels, NULL, (double)res->final.metadata_room);
	gauge(fp, "btrfsx_maintain_metadata_room_target_bytes", "The policy's metadata room "
	      "target (0: none).", labels, NULL, (double)res->plan.target);
	gauge(fp, "btrfsx_maintain_misplaced_chunks", "Chunks breaking the hints after the last "
	      "run.", labels, NULL, (double)res->final.misplaced);
	gauge(fp, "btrfsx_maintain_duration_seconds", "How long the last run took.", labels, NULL,
	      res->seconds);
}

int bx_maintain_metrics_write(const struct bx_maintain_result *res, const char *dir,
			      char *path, size_t len)
{
	struct bx_atomic_file af;
	char uuid[37];
	int ret;

	uuid_unparse_lower(res->fsid, uuid);
	snprintf(path, len, "%s/btrfsx-maintain-%s.prom", dir, uuid);
	ret = bx_atomic_begin(&af, path, 0644);
	if (ret)
		return ret;
	write_all(af.fp, res, uuid);
	return bx_atomic_commit(&af);
}
