/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx scrub: the result through the one formatter, text and JSON from the
 * same calls. The status file that keeps the last run holds the same JSON
 * (scrub/scrub-status.c writes it; tests/test_scrub.py compares them).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmds/scrub.h"
#include "common/units.h"

static void print_counters(struct bx_out *out, const struct bx_scrub_counters *c,
			   unsigned int flags)
{
	for (size_t i = 0; i < bx_scrub_nr_counters; i++)
		bx_out_u64(out, bx_scrub_counter_table[i].name,
			   *bx_scrub_counter((struct bx_scrub_counters *)c, i), flags);
}

/*
 * "csum=2 super=1" like btrfs scrub status, "short=1" for devices shorter
 * than their device item, or "no errors found".
 */
static void error_summary(const struct bx_scrub_counters *c, uint64_t shorts, char *buf,
			  size_t len)
{
	const struct { const char *name; uint64_t value; } parts[] = {
		{ "read", c->read_errors }, { "super", c->super_errors },
		{ "verify", c->verify_errors }, { "csum", c->csum_errors },
		{ "parity", c->parity_errors }, { "short", shorts },
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i].value && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s=%llu", used ? " " : "",
						 parts[i].name, (unsigned long long)parts[i].value);
	if (!used)
		snprintf(buf, len, "no errors found");
}

static void print_summary(struct bx_out *out, const struct bx_scrub_counters *c, uint64_t shorts,
			  bool readonly)
{
	char summary[256];

	error_summary(c, shorts, summary, sizeof(summary));
	bx_out_str(out, "error_summary", summary, BX_F_TEXT_ONLY);
	if (!strcmp(summary, "no errors found"))
		return;
	bx_out_u64(out, readonly ? "correctable" : "corrected", c->corrected_errors +
		   c->super_corrected, BX_F_TEXT_ONLY);
	bx_out_u64(out, "uncorrectable", c->uncorrectable_errors, BX_F_TEXT_ONLY);
	bx_out_u64(out, "unverified", c->unverified_errors, BX_F_TEXT_ONLY);
}

static void print_duration(struct bx_out *out, double seconds)
{
	char text[32];
	unsigned long long s = (unsigned long long)seconds;

	snprintf(text, sizeof(text), "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
	bx_out_str(out, "duration", text, BX_F_TEXT_ONLY);
	bx_out_double(out, "duration", seconds, 3, BX_F_JSON_ONLY);
}

static void print_rate(struct bx_out *out, uint64_t bytes, double seconds, unsigned int units)
{
	uint64_t rate = seconds > 0 ? (uint64_t)((double)bytes / seconds) : 0;
	char text[48];

	bx_pretty_size(rate, units, text, sizeof(text) - 2);
	strcat(text, "/s");
	bx_out_str(out, "rate", text, BX_F_TEXT_ONLY);
	bx_out_u64(out, "rate", rate, BX_F_JSON_ONLY);
}

static void print_device(struct bx_out *out, const struct bx_scrub_device *d,
			 const struct bx_scrub_result *res, const struct scrub_print_opts *po)
{
	char heading[PATH_MAX + 64];

	snprintf(heading, sizeof(heading), "devid %llu (%s)%s:", (unsigned long long)d->devid,
		 d->path ? d->path : "missing", d->missing ? ", not scrubbed" : "");
	bx_out_obj_begin(out, NULL, po->per_device ? BX_OBJ_LINES : BX_OBJ_JSON_ONLY, heading);
	bx_out_u64(out, "devid", d->devid, BX_F_JSON_ONLY);
	bx_out_str(out, "device", d->path, BX_F_JSON_ONLY);
	bx_out_bool(out, "missing", d->missing, BX_F_JSON_ONLY);
	bx_out_size(out, "bytes_to_scrub", d->bytes_to_scrub, po->units, BX_F_JSON_ONLY);
	bx_out_size(out, "short_bytes", d->short_bytes, po->units, BX_F_JSON_ONLY);
	bx_out_size(out, "bytes_scrubbed", d->c.data_bytes_scrubbed + d->c.tree_bytes_scrubbed,
		    po->units, 0);
	if (!po->raw)
		print_summary(out, &d->c, d->short_bytes != 0, res->readonly);
	print_counters(out, &d->c, po->raw ? 0 : BX_F_JSON_ONLY);
	bx_out_obj_end(out);
}

static void print_errors(struct bx_out *out, const struct bx_scrub_result *res)
{
	if (res->nr_errors)
		bx_out_textf(out, "errors:");
	bx_out_list_begin(out, "errors");
	for (size_t i = 0; i < res->nr_errors; i++) {
		const struct bx_scrub_error *e = &res->errors[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_str(out, "fix", bx_scrub_fix_str(e->fix), BX_F_NO_NAME);
		bx_out_str(out, "what", bx_scrub_what_str(e->what), BX_F_NO_NAME);
		bx_out_str(out, "fault", bx_scrub_fault_str(e->fault), BX_F_JSON_ONLY);
		bx_out_u64(out, "logical", e->logical, 0);
		bx_out_u64(out, "len", e->len, BX_F_JSON_ONLY);
		bx_out_u64(out, "devid", e->devid, 0);
		bx_out_u64(out, "physical", e->physical, 0);
		if (e->mirror)
			bx_out_u64(out, "mirror", (uint64_t)e->mirror, 0);
		if (e->what == BX_SCRUB_TREE && e->owner)
			bx_out_u64(out, "owner", e->owner, 0);
		if (e->what == BX_SCRUB_DATA) {
			bx_out_u64(out, "extent_start", e->extent_start, BX_F_JSON_ONLY);
			bx_out_u64(out, "extent_len", e->extent_len, BX_F_JSON_ONLY);
		}
		bx_out_str(out, "reason", e->reason ? e->reason : "", BX_F_NO_NAME);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	if (res->errors_dropped)
		bx_out_u64(out, "errors_not_listed", res->errors_dropped, 0);
	if (res->nr_files)
		bx_out_textf(out, "uncorrectable data in:");
	bx_out_list_begin(out, "files");
	for (size_t i = 0; i < res->nr_files; i++) {
		const struct bx_scrub_file *f = &res->files[i];

		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_str(out, "path", f->path ? f->path : "(path unknown)", BX_F_NO_NAME);
		bx_out_u64(out, "logical", f->logical, 0);
		bx_out_u64(out, "root", f->root, 0);
		bx_out_u64(out, "inode", f->inode, 0);
		bx_out_u64(out, "offset", f->offset, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

/*
 * One line per member shorter than its device item, not a read error per
 * sector of its missing end (JSON: each device's short_bytes).
 */
static void print_short(struct bx_out *out, const struct bx_scrub_result *res)
{
	for (size_t i = 0; i < res->nr_devs; i++) {
		const struct bx_scrub_device *d = &res->devs[i];
		char size[32];

		if (!d->short_bytes)
			continue;
		bx_pretty_size(d->short_bytes, 0, size, sizeof(size));
		bx_out_textf(out, "devid %llu is %s shorter than its device item: not scrubbed beyond "
			     "its end, and the kernel does not mount the filesystem until the device "
			     "is as long again", (unsigned long long)d->devid, size);
	}
}

void scrub_print(struct bx_out *out, const struct bx_scrub_result *res, const char *status,
		 const struct scrub_print_opts *po)
{
	uint64_t scrubbed = res->total.data_bytes_scrubbed + res->total.tree_bytes_scrubbed;
	uint64_t shorts = 0;
	char started[64];
	struct tm tm;

	for (size_t i = 0; i < res->nr_devs; i++)
		shorts += res->devs[i].short_bytes != 0;
	localtime_r(&res->started, &tm);
	strftime(started, sizeof(started), "%a %b %e %H:%M:%S %Y", &tm);
	bx_out_obj_begin(out, "scrub", BX_OBJ_LINES, NULL);
	bx_out_uuid(out, "fsid", res->fsid, 0);
	bx_out_str(out, "status", status, 0);
	bx_out_str(out, "mode", res->readonly ? "read-only" : "repair", 0);
	if (res->metadata_only)
		bx_out_str(out, "scope", "metadata only (data not read)", BX_F_TEXT_ONLY);
	bx_out_bool(out, "metadata_only", res->metadata_only, BX_F_JSON_ONLY);
	bx_out_str(out, "started", started, BX_F_TEXT_ONLY);
	bx_out_u64(out, "started", (uint64_t)res->started, BX_F_JSON_ONLY);
	print_duration(out, res->duration);
	bx_out_size(out, "bytes_to_scrub", res->bytes_to_scrub, po->units, 0);
	bx_out_size(out, "bytes_scrubbed", scrubbed, po->units, 0);
	print_rate(out, scrubbed, res->duration, po->units);
	bx_out_bool(out, "degraded", res->degraded, res->degraded ? 0 : BX_F_JSON_ONLY);
	print_short(out, res);
	if (!po->raw)
		print_summary(out, &res->total, shorts, res->readonly);
	bx_out_obj_begin(out, "total", po->raw ? BX_OBJ_LINES : BX_OBJ_JSON_ONLY, "total:");
	print_counters(out, &res->total, 0);
	bx_out_obj_end(out);
	bx_out_bool(out, "has_uncorrectable", bx_scrub_has_uncorrectable(res), BX_F_JSON_ONLY);
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < res->nr_devs; i++)
		print_device(out, &res->devs[i], res, po);
	bx_out_list_end(out);
	print_errors(out, res);
	bx_out_obj_end(out);
}
