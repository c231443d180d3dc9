/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Prometheus metrics from samples and projections. See metrics.h. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/atomic-file.h"
#include "common/error.h"
#include "disk/device-claim.h"
#include "format/hints.h"
#include "disk/volumes.h"
#include "monitor/metrics.h"

/* Every family, in output order. */
enum family_id {
	F_TIMESTAMP,
	F_FS_SIZE,
	F_FS_ALLOCATED,
	F_FS_USED,
	F_SPACE_SIZE,
	F_SPACE_USED,
	F_FREE_ESTIMATED,
	F_FREE_STRICT,
	F_FREE_STATFS,
	F_METADATA_ROOM,
	F_METADATA_ROOM_AFTER_DATA,
	F_GLOBAL_RESERVE,
	F_GLOBAL_RESERVE_USED,
	F_DEVICE_INFO,
	F_DEVICE_SIZE,
	F_DEVICE_UNALLOCATED,
	F_DEVICE_ALLOCATED,
	F_DEVICE_ERRORS,
	F_READ_POLICY,
	F_HINTS_EFFECTIVE,
	F_MISPLACED_CHUNKS,
	F_MISPLACED_USED,
	F_SCRUB_START,
	F_SCRUB_DURATION,
	F_SCRUB_ERRORS,
	F_TREND_SAMPLES,
	F_TREND_SPAN,
	F_TREND_LEARNING,
	F_METADATA_GROWTH,
	F_DATA_GROWTH,
	F_METADATA_DAYS,
	F_METADATA_DAYS_LOWER,
	F_METADATA_DAYS_UPPER,
	F_DATA_DAYS,
	F_DATA_DAYS_LOWER,
	F_DATA_DAYS_UPPER,
	NR_FAMILIES
};

static const struct {
	const char *name;
	const char *type;
	const char *help;
} families[NR_FAMILIES] = {
	[F_TIMESTAMP] = { "btrfsx_sample_timestamp_seconds", "gauge",
			  "When the newest sample was taken, seconds since the epoch." },
	[F_FS_SIZE] = { "btrfsx_filesystem_size_bytes", "gauge",
			"Size of all member devices, as btrfs-progs' Device size." },
	[F_FS_ALLOCATED] = { "btrfsx_filesystem_allocated_bytes", "gauge",
			     "Device bytes allocated to chunks." },
	[F_FS_USED] = { "btrfsx_filesystem_used_bytes", "gauge",
			"Device bytes in use, as btrfs-progs' Used." },
	[F_SPACE_SIZE] = { "btrfsx_space_size_bytes", "gauge",
			   "Logical bytes in the block groups of a type and profile." },
	[F_SPACE_USED] = { "btrfsx_space_used_bytes", "gauge",
			   "Logical bytes used in the block groups of a type and profile." },
	[F_FREE_ESTIMATED] = { "btrfsx_free_estimated_bytes", "gauge",
			       "Data bytes still writable, by the allocator model run to ENOSPC." },
	[F_FREE_STRICT] = { "btrfsx_free_strict_bytes", "gauge",
			    "Data bytes still writable with every allocation preference strict." },
	[F_FREE_STATFS] = { "btrfsx_free_statfs_bytes", "gauge",
			    "What df shows (statfs f_bavail)." },
	[F_METADATA_ROOM] = { "btrfsx_metadata_room_bytes", "gauge",
			      "Metadata bytes still allocatable before metadata ENOSPC." },
	[F_METADATA_ROOM_AFTER_DATA] = {
		"btrfsx_metadata_room_after_data_bytes", "gauge",
		"Metadata room left once data took all the space it can." },
	[F_GLOBAL_RESERVE] = { "btrfsx_global_reserve_bytes", "gauge",
			       "Size of the global metadata reserve." },
	[F_GLOBAL_RESERVE_USED] = { "btrfsx_global_reserve_used_bytes", "gauge",
				    "Bytes of the global metadata reserve in use." },
	[F_DEVICE_INFO] = { "btrfsx_device_info", "gauge",
			    "A member device: its path and allocation hint (value 1)." },
	[F_DEVICE_SIZE] = { "btrfsx_device_size_bytes", "gauge",
			    "Size of a member device in the filesystem." },
	[F_DEVICE_UNALLOCATED] = { "btrfsx_device_unallocated_bytes", "gauge",
				   "Bytes of a member device not allocated to chunks." },
	[F_DEVICE_ALLOCATED] = { "btrfsx_device_allocated_bytes", "gauge",
				 "Bytes of a member device allocated to chunks of a type." },
	[F_DEVICE_ERRORS] = { "btrfsx_device_errors_total", "counter",
			      "Errors the kernel counted on a member device (btrfs device stats)." },
	[F_READ_POLICY] = { "btrfsx_read_policy_info", "gauge",
			    "The active RAID1-family read policy (value 1)." },
	[F_HINTS_EFFECTIVE] = { "btrfsx_hints_effective", "gauge",
				"1 when the running kernel honours allocation hints (it has their "
				"sysfs file), 0 when it ignores the stored hints." },
	[F_MISPLACED_CHUNKS] = { "btrfsx_misplaced_chunks", "gauge",
				 "Chunks that break the allocation hints: forbidden (on a device "
				 "the hint excludes) or off_preference (a worse tier while a "
				 "better one has room)." },
	[F_MISPLACED_USED] = { "btrfsx_misplaced_used_bytes", "gauge",
			       "Logical bytes in use in the misplaced chunks: what "
			       "'btrfsx balance misplaced' would copy." },
	[F_SCRUB_START] = { "btrfsx_scrub_last_start_timestamp_seconds", "gauge",
			    "When the last offline scrub started, seconds since the epoch." },
	[F_SCRUB_DURATION] = { "btrfsx_scrub_last_duration_seconds", "gauge",
			       "How long the last offline scrub ran." },
	[F_SCRUB_ERRORS] = { "btrfsx_scrub_last_errors", "gauge",
			     "Errors the last offline scrub found, corrected and could not correct." },
	[F_TREND_SAMPLES] = { "btrfsx_trend_samples", "gauge",
			      "Samples in the window the trends are fitted over." },
	[F_TREND_SPAN] = { "btrfsx_trend_span_seconds", "gauge",
			   "Time between the oldest and the newest sample in the window." },
	[F_TREND_LEARNING] = { "btrfsx_trend_learning", "gauge",
			       "1 while the samples span less than the learning span (--min-history, "
			       "default 1 day): growth and days series are left out then." },
	[F_METADATA_GROWTH] = { "btrfsx_metadata_growth_bytes_per_second", "gauge",
				"Pace at which metadata use grows (robust fit over the window)." },
	[F_DATA_GROWTH] = { "btrfsx_data_growth_bytes_per_second", "gauge",
			    "Pace at which data use grows (robust fit over the window)." },
	[F_METADATA_DAYS] = { "btrfsx_metadata_days_left", "gauge",
			      "Days until the metadata room falls to the global reserve (ENOSPC); "
			      "+Inf when metadata does not grow." },
	[F_METADATA_DAYS_LOWER] = { "btrfsx_metadata_days_left_lower", "gauge",
				    "Soonest end of the 95% range of btrfsx_metadata_days_left." },
	[F_METADATA_DAYS_UPPER] = { "btrfsx_metadata_days_left_upper", "gauge",
				    "Latest end of the 95% range of btrfsx_metadata_days_left." },
	[F_DATA_DAYS] = { "btrfsx_data_days_left", "gauge",
			  "Days until the strict free space for data is gone; "
			  "+Inf when data does not grow." },
	[F_DATA_DAYS_LOWER] = { "btrfsx_data_days_left_lower", "gauge",
				"Soonest end of the 95% range of btrfsx_data_days_left." },
	[F_DATA_DAYS_UPPER] = { "btrfsx_data_days_left_upper", "gauge",
				"Latest end of the 95% range of btrfsx_data_days_left." },
};

/* The labels every series of one filesystem carries, and up to three of its own. */
struct labels {
	size_t nr;
	const char *names[BX_METRIC_MAX_LABELS];
	const char *values[BX_METRIC_MAX_LABELS];
};

static struct labels fs_labels(const struct bx_mon_sample *s, const char *fsid)
{
	return (struct labels){ 3, { "fsid", "label", "mountpoint" },
				{ fsid, s->label, s->mountpoint } };
}

static struct labels with(struct labels l, const char *name, const char *value)
{
	l.names[l.nr] = name;
	l.values[l.nr++] = value;
	return l;
}

static int add(struct bx_metrics *m, enum family_id id, const struct labels *l, double value)
{
	struct bx_metric_family *f = &m->families[id];
	struct bx_metric_value *v;

	if (f->nr_values == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4;
		struct bx_metric_value *grown = realloc(f->values, cap * sizeof(*grown));

		if (!grown)
			return bx_error(-ENOMEM, "out of memory");
		f->values = grown;
		f->cap = cap;
	}
	v = &f->values[f->nr_values];
	memset(v, 0, sizeof(*v));
	v->value = value;
	for (size_t i = 0; i < l->nr; i++) {
		v->names[i] = l->names[i];
		v->values[i] = strdup(l->values[i]);
		v->nr_labels = i + 1;
		if (!v->values[i]) {
			f->nr_values++;		/* so that release frees what it holds */
			return bx_error(-ENOMEM, "out of memory");
		}
	}
	f->nr_values++;
	return 0;
}

static int add_figures(struct bx_metrics *m, const struct labels *l, const struct bx_mon_sample *s)
{
	const struct bx_mon_figures *f = &s->fig;
	const struct { enum family_id id; double value; } figures[] = {
		{ F_TIMESTAMP, (double)f->time },
		{ F_FS_SIZE, (double)f->device_size },
		{ F_FS_ALLOCATED, (double)f->device_allocated },
		{ F_FS_USED, (double)f->used },
		{ F_FREE_ESTIMATED, (double)f->free_estimated },
		{ F_FREE_STRICT, (double)f->free_strict },
		{ F_METADATA_ROOM, (double)f->metadata_room },
		{ F_METADATA_ROOM_AFTER_DATA, (double)f->metadata_room_after_data },
		{ F_GLOBAL_RESERVE, (double)f->global_reserve },
		{ F_GLOBAL_RESERVE_USED, (double)f->global_reserve_used },
	};
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(figures) / sizeof(figures[0]); i++)
		ret = add(m, figures[i].id, l, figures[i].value);
	if (!ret && f->have_statfs)
		ret = add(m, F_FREE_STATFS, l, (double)f->free_statfs);
	for (size_t i = 0; !ret && i < s->nr_spaces; i++) {
		const struct bx_mon_space *sp = &s->spaces[i];
		struct labels tl = with(with(*l, "type", bx_block_group_type_name(sp->flags)),
					"profile", bx_profile_name(sp->flags));

		ret = add(m, F_SPACE_SIZE, &tl, (double)sp->total);
		if (!ret)
			ret = add(m, F_SPACE_USED, &tl, (double)sp->used);
	}
	if (!ret && s->read_policy[0]) {
		struct labels pl = with(*l, "policy", s->read_policy);

		ret = add(m, F_READ_POLICY, &pl, 1);
	}
	return ret;
}

static int add_placement(struct bx_metrics *m, const struct labels *l,
			 const struct bx_mon_sample *s)
{
	const struct bx_mon_misplaced *mp = &s->misplaced;
	const struct { const char *cls; uint64_t chunks, used; } classes[] = {
		{ "forbidden", mp->forbidden_chunks, mp->forbidden_used },
		{ "off_preference", mp->off_preference_chunks, mp->off_preference_used },
	};
	int ret = 0;

	if (s->have_hints_effective)
		ret = add(m, F_HINTS_EFFECTIVE, l, s->hints_effective);
	for (size_t i = 0; !ret && mp->known && i < sizeof(classes) / sizeof(classes[0]); i++) {
		struct labels cl = with(*l, "class", classes[i].cls);

		ret = add(m, F_MISPLACED_CHUNKS, &cl, (double)classes[i].chunks);
		if (!ret)
			ret = add(m, F_MISPLACED_USED, &cl, (double)classes[i].used);
	}
	return ret;
}

static int add_device(struct bx_metrics *m, const struct labels *l, const struct bx_mon_device *d)
{
	const struct { const char *type; uint64_t bytes; } types[] = {
		{ "data", d->data }, { "metadata", d->metadata }, { "system", d->system },
	};
	char devid[24], hint[32];
	struct labels dl, hl, il;
	int ret;

	snprintf(devid, sizeof(devid), "%llu", (unsigned long long)d->devid);
	bx_hint_describe(d->hint, hint, sizeof(hint));
	dl = with(*l, "devid", devid);
	hl = with(dl, "hint", hint);
	il = with(hl, "device", d->missing ? "missing" : d->path);
	ret = add(m, F_DEVICE_INFO, &il, 1);
	if (!ret)
		ret = add(m, F_DEVICE_SIZE, &hl, (double)d->size);
	if (!ret)
		ret = add(m, F_DEVICE_UNALLOCATED, &hl, (double)d->unallocated);
	for (size_t i = 0; !ret && i < sizeof(types) / sizeof(types[0]); i++) {
		struct labels tl = with(hl, "type", types[i].type);

		ret = add(m, F_DEVICE_ALLOCATED, &tl, (double)types[i].bytes);
	}
	for (int k = 0; !ret && d->have_errors && k < BX_DEV_STAT_COUNT; k++) {
		struct labels el = with(dl, "counter", bx_dev_stat_names[k]);

		ret = add(m, F_DEVICE_ERRORS, &el, (double)d->errors[k]);
	}
	return ret;
}

static int add_scrub(struct bx_metrics *m, const struct labels *l, const struct bx_mon_scrub *sc)
{
	const struct { const char *result; uint64_t count; } results[] = {
		{ "found", sc->errors }, { "corrected", sc->corrected },
		{ "uncorrectable", sc->uncorrectable },
	};
	int ret;

	if (!sc->known)
		return 0;
	ret = add(m, F_SCRUB_START, l, (double)sc->started);
	if (!ret)
		ret = add(m, F_SCRUB_DURATION, l, sc->duration);
	for (size_t i = 0; !ret && i < sizeof(results) / sizeof(results[0]); i++) {
		struct labels rl = with(*l, "result", results[i].result);

		ret = add(m, F_SCRUB_ERRORS, &rl, (double)results[i].count);
	}
	return ret;
}

static int add_days(struct bx_metrics *m, const struct labels *l, enum family_id first,
		    const struct bx_trend_days *d)
{
	int ret = add(m, first, l, d->days);

	if (!ret)
		ret = add(m, first + 1, l, d->days_low);
	if (!ret)
		ret = add(m, first + 2, l, d->days_high);
	return ret;
}

static int add_projection(struct bx_metrics *m, const struct labels *l,
			  const struct bx_mon_projection *p)
{
	int ret = add(m, F_TREND_SAMPLES, l, (double)p->nr_samples);

	if (!ret)
		ret = add(m, F_TREND_SPAN, l, (double)p->span);
	if (!ret)
		ret = add(m, F_TREND_LEARNING, l, p->learning);
	if (!ret && p->metadata.status == BX_TREND_OK) {
		ret = add(m, F_METADATA_GROWTH, l, p->metadata.slope);
		if (!ret)
			ret = add_days(m, l, F_METADATA_DAYS, &p->metadata_days);
	}
	if (!ret && p->data.status == BX_TREND_OK) {
		ret = add(m, F_DATA_GROWTH, l, p->data.slope);
		if (!ret)
			ret = add_days(m, l, F_DATA_DAYS, &p->data_days);
	}
	return ret;
}

static int add_filesystem(struct bx_metrics *m, const struct bx_metrics_input *in)
{
	const struct bx_mon_sample *s = in->latest;
	char fsid[BX_FSID_STR_LEN];
	struct labels l;
	int ret;

	bx_fsid_unparse(s->fsid, fsid);
	l = fs_labels(s, fsid);
	ret = add_figures(m, &l, s);
	for (size_t i = 0; !ret && i < s->nr_devices; i++)
		ret = add_device(m, &l, &s->devices[i]);
	if (!ret)
		ret = add_placement(m, &l, s);
	if (!ret)
		ret = add_scrub(m, &l, &s->scrub);
	if (!ret)
		ret = add_projection(m, &l, in->projection);
	return ret;
}

int bx_metrics_build(const struct bx_metrics_input *inputs, size_t nr, struct bx_metrics *m)
{
	int ret = 0;

	m->families = calloc(NR_FAMILIES, sizeof(*m->families));
	if (!m->families)
		return bx_error(-ENOMEM, "out of memory");
	m->nr_families = NR_FAMILIES;
	for (size_t i = 0; i < NR_FAMILIES; i++) {
		m->families[i].name = families[i].name;
		m->families[i].type = families[i].type;
		m->families[i].help = families[i].help;
	}
	for (size_t i = 0; !ret && i < nr; i++)
		ret = add_filesystem(m, &inputs[i]);
	if (ret)
		bx_metrics_release(m);
	return ret;
}

void bx_metrics_release(struct bx_metrics *m)
{
	for (size_t i = 0; i < m->nr_families; i++) {
		struct bx_metric_family *f = &m->families[i];

		for (size_t j = 0; j < f->nr_values; j++)
			for (size_t k = 0; k < f->values[j].nr_labels; k++)
				free(f->values[j].values[k]);
		free(f->values);
	}
	free(m->families);
	m->families = NULL;
	m->nr_families = 0;
}

/* ---- the text exposition format ---- */

/* @s with backslash, newline and (in label values, @quote) double quote escaped. */
static void put_escaped(FILE *fp, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", fp);
		else if (*s == '\n')
			fputs("\\n", fp);
		else if (*s == '"' && quote)
			fputs("\\\"", fp);
		else
			fputc(*s, fp);
	}
}

static void put_value(FILE *fp, double v)
{
	if (isnan(v))
		fputs("NaN", fp);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", fp);
	else
		fprintf(fp, "%.17g", v);
}

static void put_family(FILE *fp, const struct bx_metric_family *f)
{
	fprintf(fp, "# HELP %s ", f->name);
	put_escaped(fp, f->help, false);
	fprintf(fp, "\n# TYPE %s %s\n", f->name, f->type);
	for (size_t i = 0; i < f->nr_values; i++) {
		const struct bx_metric_value *v = &f->values[i];

		fputs(f->name, fp);
		for (size_t k = 0; k < v->nr_labels; k++) {
			fprintf(fp, "%s%s=\"", k ? "," : "{", v->names[k]);
			put_escaped(fp, v->values[k], true);
			fputc('"', fp);
		}
		fputs(v->nr_labels ? "} " : " ", fp);
		put_value(fp, v->value);
		fputc('\n', fp);
	}
}

int bx_metrics_write(const struct bx_metrics *m, FILE *fp)
{
	for (size_t i = 0; i < m->nr_families; i++)
		if (m->families[i].nr_values)
			put_family(fp, &m->families[i]);
	if (fflush(fp) || ferror(fp))
		return bx_error(-errno, "cannot write the metrics: %m");
	return 0;
}

int bx_metrics_write_textfile(const struct bx_metrics *m, const char *dir, char *path,
			      size_t path_len)
{
	struct bx_atomic_file af;
	struct stat st;
	int ret;

	if (stat(dir, &st) < 0)
		return bx_error(-errno, "%s: %m", dir);
	if (!S_ISDIR(st.st_mode))
		return bx_error(-ENOTDIR, "%s: not a directory", dir);
	snprintf(path, path_len, "%s/%s", dir, BX_METRICS_TEXTFILE);
	ret = bx_atomic_begin(&af, path, 0644);
	if (ret)
		return ret;
	for (size_t i = 0; i < m->nr_families; i++)
		if (m->families[i].nr_values)
			put_family(af.fp, &m->families[i]);
	return bx_atomic_commit(&af);
}
