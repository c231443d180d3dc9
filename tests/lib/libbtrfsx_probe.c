/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libbtrfsx_probe: calls one libbtrfsx function with the arguments given and
 * prints what it returned as one JSON object, for tests/test_libbtrfsx.py to
 * compare with the command line's JSON output:
 *
 *   {"error": N, "error_name": "...", "message": "...", "warnings": [...],
 *    "result": {...}}
 *
 * "-" stands for a NULL string argument. Only the public header is used.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btrfsx.h"

/* ---- a tiny JSON writer: one comma state per nesting level ---- */

static bool need_comma[32];
static int depth;

static void separator(const char *key)
{
	if (need_comma[depth])
		putchar(',');
	need_comma[depth] = true;
	if (key)
		printf("\"%s\":", key);
}

static void open_block(const char *key, char bracket)
{
	separator(key);
	putchar(bracket);
	need_comma[++depth] = false;
}

static void close_block(char bracket)
{
	depth--;
	putchar(bracket);
}

static void j_str(const char *key, const char *s)
{
	separator(key);
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void j_u64(const char *key, uint64_t v)
{
	separator(key);
	printf("%" PRIu64, v);
}

static void j_s64(const char *key, int64_t v)
{
	separator(key);
	printf("%" PRId64, v);
}

static void j_double(const char *key, double v)
{
	separator(key);
	printf("%.6f", v);
}

static void j_bool(const char *key, bool v)
{
	separator(key);
	fputs(v ? "true" : "false", stdout);
}

static void j_uuid(const char *key, const uint8_t u[16])
{
	char s[37];

	snprintf(s, sizeof(s), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
		 u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	j_str(key, s);
}

static const char *arg_or_null(const char *s)
{
	return strcmp(s, "-") ? s : NULL;
}

/* Opens the top object with the call's outcome; "result" follows. */
static void begin_report(enum btrfsx_error err)
{
	open_block(NULL, '{');
	j_s64("error", err);
	j_str("error_name", btrfsx_strerror(err));
	j_str("message", err ? btrfsx_last_error_message() : NULL);
	open_block("warnings", '[');
	for (size_t i = 0; i < btrfsx_warnings_count(); i++)
		j_str(NULL, btrfsx_warning(i));
	close_block(']');
}

static int end_report(enum btrfsx_error err)
{
	close_block('}');
	putchar('\n');
	return err ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: libbtrfsx_probe <function> <args>...\n");
	return 2;
}

/* ---- hints ---- */

static const char *const hint_ifaces[] = { "none", "allocation_hint", "type" };

static void print_hint_state(const char *key, const struct btrfsx_hint_state *st)
{
	open_block(key, '{');
	j_u64("devid", st->devid);
	j_str("path", st->path);
	j_u64("type", st->type);
	j_u64("hint", st->hint);
	j_str("name", btrfsx_hint_name(st->hint));
	j_bool("mounted", st->mounted);
	j_str("iface", hint_ifaces[st->iface]);
	j_bool("effective", st->effective);
	close_block('}');
}

static int probe_hint_name(int argc, char **argv)
{
	if (argc != 1)
		return usage();
	begin_report(BTRFSX_OK);
	j_str("result", btrfsx_hint_name(strtoull(argv[0], NULL, 0)));
	return end_report(BTRFSX_OK);
}

static int probe_hint_parse(int argc, char **argv)
{
	uint64_t hint = 0;
	enum btrfsx_error err;

	if (argc != 2)
		return usage();
	err = btrfsx_hint_parse(arg_or_null(argv[0]), atoi(argv[1]), &hint);
	begin_report(err);
	j_u64("result", hint);
	return end_report(err);
}

static int probe_hint_get(int argc, char **argv)
{
	struct btrfsx_hint_state st;
	enum btrfsx_error err;

	if (argc != 2)
		return usage();
	err = btrfsx_hint_get(arg_or_null(argv[0]), arg_or_null(argv[1]), &st);
	begin_report(err);
	if (!err)
		print_hint_state("result", &st);
	return end_report(err);
}

static int probe_hint_set(int argc, char **argv)
{
	struct btrfsx_hint_state before, after;
	enum btrfsx_error err;

	if (argc != 4)
		return usage();
	err = btrfsx_hint_set(arg_or_null(argv[0]), arg_or_null(argv[1]),
			      strtoull(argv[2], NULL, 0), (unsigned int)strtoul(argv[3], NULL, 0),
			      &before, &after);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		print_hint_state("before", &before);
		print_hint_state("after", &after);
		close_block('}');
	}
	return end_report(err);
}

/* ---- usage ---- */

static void print_usage_overall(const struct btrfsx_usage *u)
{
	j_uuid("fsid", u->fsid);
	j_bool("mounted", u->mounted);
	j_str("path", u->path);
	j_u64("device_size", u->device_size);
	j_u64("device_allocated", u->device_allocated);
	j_s64("device_unallocated", u->device_unallocated);
	j_u64("device_missing", u->device_missing);
	j_u64("device_slack", u->device_slack);
	j_u64("used", u->used);
	j_u64("progs_free_estimated", u->progs_free_estimated);
	j_u64("progs_free_min", u->progs_free_min);
	j_double("data_ratio", u->data_ratio);
	j_double("metadata_ratio", u->metadata_ratio);
	j_bool("have_global_reserve", u->have_global_reserve);
	j_u64("global_reserve", u->global_reserve);
	j_u64("global_reserve_used", u->global_reserve_used);
	j_str("multiple_profiles", u->multiple_profiles);
}

static void print_usage_model(const struct btrfsx_usage *u)
{
	j_str("kernel", u->kernel);
	j_bool("kernel_running", u->kernel_running);
	j_bool("hints_honoured", u->hints_honoured);
	j_bool("strict", u->strict);
	j_bool("mixed", u->mixed);
	j_u64("data_profile", u->data_profile);
	j_u64("metadata_profile", u->metadata_profile);
	j_u64("data_size", u->data_size);
	j_u64("data_used", u->data_used);
	j_u64("metadata_size", u->metadata_size);
	j_u64("metadata_used", u->metadata_used);
	j_u64("data_free_in_chunks", u->data_free_in_chunks);
	j_u64("data_new_chunks", u->data_new_chunks);
	j_u64("free_estimated", u->free_estimated);
	j_u64("free_strict", u->free_strict);
	j_bool("have_statfs", u->have_statfs);
	j_u64("free_statfs", u->free_statfs);
	j_u64("metadata_free_in_chunks", u->metadata_free_in_chunks);
	j_u64("metadata_room", u->metadata_room);
	j_u64("metadata_room_after_data", u->metadata_room_after_data);
	j_u64("metadata_needed", u->metadata_needed);
	j_u64("data_on_metadata_devices", u->data_on_metadata_devices);
	j_u64("warnings_mask", u->warnings);
}

static void print_usage_lists(const struct btrfsx_usage *u)
{
	open_block("spaces", '[');
	for (size_t i = 0; i < u->nr_spaces; i++) {
		open_block(NULL, '{');
		j_u64("flags", u->spaces[i].flags);
		j_u64("size", u->spaces[i].total_bytes);
		j_u64("used", u->spaces[i].used_bytes);
		close_block('}');
	}
	close_block(']');
	open_block("classes", '[');
	for (size_t i = 0; i < u->nr_classes; i++) {
		const struct btrfsx_usage_class *c = &u->classes[i];

		open_block(NULL, '{');
		j_u64("hint_value", c->hint);
		j_u64("devices", c->devices);
		j_u64("size", c->size);
		j_u64("unallocated", c->unallocated);
		j_u64("data_allocatable", c->data_allocatable);
		j_u64("metadata_allocatable", c->metadata_allocatable);
		close_block('}');
	}
	close_block(']');
	open_block("devices", '[');
	for (size_t i = 0; i < u->nr_devices; i++) {
		const struct btrfsx_usage_device *d = &u->devices[i];

		open_block(NULL, '{');
		j_u64("devid", d->devid);
		j_str("path", d->missing ? NULL : d->path);
		j_u64("hint", d->hint);
		j_bool("missing", d->missing);
		j_u64("size", d->size);
		j_u64("slack", d->slack);
		j_u64("unallocated", d->unallocated);
		j_u64("data", d->data);
		j_u64("metadata", d->metadata);
		j_u64("system", d->system);
		close_block('}');
	}
	close_block(']');
}

/* The kernel's reclaim, in the shape of the command line's "reclaim" (null unmounted). */
static void print_usage_reclaim(const struct btrfsx_usage *u)
{
	static const char *const kinds[] = { "data", "metadata", "system" };

	if (!u->have_reclaim) {
		j_str("reclaim", NULL);
		return;
	}
	open_block("reclaim", '{');
	j_u64("data_chunk_size", u->reclaim_data_chunk_size);
	for (size_t i = 0; i < 3; i++) {
		const struct btrfsx_usage_reclaim *k = &u->reclaim[i];

		if (!k->known)
			continue;
		open_block(kinds[i], '{');
		j_bool("on", k->on);
		j_bool("dynamic", k->dynamic);
		j_bool("periodic", k->periodic);
		j_u64("threshold", k->threshold);
		open_block("below_threshold", '{');
		j_u64("block_groups", k->below_block_groups);
		j_u64("used", k->below_used);
		j_u64("size", k->below_size);
		j_u64("device_bytes", k->below_device_bytes);
		close_block('}');
		open_block("reclaimed", '{');
		j_u64("block_groups", k->reclaimed_block_groups);
		j_u64("bytes", k->reclaimed_bytes);
		j_u64("errors", k->reclaim_errors);
		close_block('}');
		close_block('}');
	}
	j_u64("device_bytes_below_threshold", u->reclaim_device_bytes_below_threshold);
	close_block('}');
}

/*
 * usage <sysfs_root> <flags> <path>...
 * usage-kernel <kernel> <sysfs_root> <flags> <path>...: btrfsx_usage_get_for_kernel()
 */
static int report_usage(const char *kernel, int argc, char **argv)
{
	struct btrfsx_usage *u = NULL;
	const char *const *paths = (const char *const *)argv + 2;
	const char *sysfs_root = arg_or_null(argv[0]);
	unsigned int flags = (unsigned int)strtoul(argv[1], NULL, 0);
	enum btrfsx_error err;

	if (kernel)
		err = btrfsx_usage_get_for_kernel(paths, (size_t)argc - 2, sysfs_root, flags,
						  arg_or_null(kernel), &u);
	else
		err = btrfsx_usage_get(paths, (size_t)argc - 2, sysfs_root, flags, &u);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		print_usage_overall(u);
		print_usage_model(u);
		print_usage_lists(u);
		print_usage_reclaim(u);
		close_block('}');
	}
	btrfsx_usage_free(u);
	return end_report(err);
}

static int probe_usage(int argc, char **argv)
{
	return argc < 2 ? usage() : report_usage(NULL, argc, argv);
}

static int probe_usage_kernel(int argc, char **argv)
{
	return argc < 3 ? usage() : report_usage(argv[0], argc - 1, argv + 1);
}

/* ---- read policies ---- */

static const char *const rp_ifaces[] = { "none", "read_policy", "read_policies" };
static const char *const apply_statuses[] = {
	"applied", "unchanged", "failed", "no-record", "not-mounted",
};

static void print_read_policy(const char *key, const struct btrfsx_read_policy *p)
{
	open_block(key, '{');
	j_str("fsid", p->fsid);
	j_str("interface", rp_ifaces[p->iface]);
	j_str("policy", p->active);
	open_block("available", '[');
	for (size_t i = 0; i < p->nr_offered; i++)
		j_str(NULL, p->offered[i]);
	close_block(']');
	j_str("kernel_shows", p->raw);
	j_str("persistent", p->recorded[0] ? p->recorded : NULL);
	j_bool("mirrored_known", p->mirrored_known);
	open_block("mirrored", '[');
	for (size_t i = 0; i < p->nr_mirrored; i++)
		j_str(NULL, p->mirrored[i]);
	close_block(']');
	close_block('}');
}

/* rp-get <path> <sysfs_root> <config_dir> */
static int probe_rp_get(int argc, char **argv)
{
	struct btrfsx_read_policy p;
	enum btrfsx_error err;

	if (argc != 3)
		return usage();
	err = btrfsx_read_policy_get(arg_or_null(argv[0]), arg_or_null(argv[1]),
				     arg_or_null(argv[2]), &p);
	begin_report(err);
	if (!err)
		print_read_policy("result", &p);
	return end_report(err);
}

/* rp-set <path> <policy> <flags> <sysfs_root> <config_dir> */
static int probe_rp_set(int argc, char **argv)
{
	struct btrfsx_read_policy after;
	bool changed = false;
	enum btrfsx_error err;

	if (argc != 5)
		return usage();
	err = btrfsx_read_policy_set(arg_or_null(argv[0]), arg_or_null(argv[1]),
				     (unsigned int)strtoul(argv[2], NULL, 0), arg_or_null(argv[3]),
				     arg_or_null(argv[4]), &after, &changed);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		print_read_policy("after", &after);
		j_bool("changed", changed);
		close_block('}');
	}
	return end_report(err);
}

/* rp-apply <path> <sysfs_root> <config_dir> */
static int probe_rp_apply(int argc, char **argv)
{
	struct btrfsx_apply_result *results = NULL;
	size_t nr = 0;
	enum btrfsx_error err;

	if (argc != 3)
		return usage();
	err = btrfsx_read_policy_apply(arg_or_null(argv[0]), arg_or_null(argv[1]),
				       arg_or_null(argv[2]), &results, &nr);
	begin_report(err);
	open_block("result", '[');
	for (size_t i = 0; i < nr; i++) {
		const struct btrfsx_apply_result *r = &results[i];

		open_block(NULL, '{');
		j_str("fsid", r->fsid[0] ? r->fsid : NULL);
		j_str("mountpoint", r->path[0] ? r->path : NULL);  /* the CLI's key */
		j_str("policy", r->policy[0] ? r->policy : NULL);
		j_str("status", apply_statuses[r->status]);
		if (r->error[0])
			j_str("error", r->error);
		close_block('}');
	}
	close_block(']');
	free(results);
	return end_report(err);
}

/* ---- read-policy recommend ---- */

static int cancel_at_first(void *arg, size_t done, size_t total, double seconds)
{
	(void)arg;
	(void)done;
	(void)total;
	(void)seconds;
	return 1;
}

static void print_recommendation(const struct btrfsx_recommendation *r)
{
	open_block("result", '{');
	j_str("fsid", r->fsid);
	j_str("mountpoint", r->mountpoint);
	j_bool("affects_reads", r->affects_reads);
	j_str("recommended", r->recommended[0] ? r->recommended : NULL);
	j_str("reason", r->reason);
	j_str("current", r->current);
	j_bool("offered", r->offered);
	j_str("not_offered", r->not_offered[0] ? r->not_offered : NULL);
	j_bool("applied", r->applied);
	j_str("persistent", r->persistent[0] ? r->persistent : NULL);
	j_bool("disturbed", r->disturbed);
	j_str("region", r->metadata_region ? "metadata" : "data");
	j_u64("region_bytes", r->region_bytes);
	open_block("workloads", '[');
	for (size_t w = 0; w < r->nr_workloads; w++) {
		open_block(NULL, '{');
		j_u64("readers", r->workloads[w].readers);
		j_str("pattern", r->workloads[w].random ? "random" : "sequential");
		j_str("fastest", r->workloads[w].fastest);
		close_block('}');
	}
	close_block(']');
	open_block("candidates", '[');
	for (size_t c = 0; c < r->nr_candidates; c++) {
		open_block(NULL, '{');
		j_str("policy", r->candidates[c].policy);
		open_block("rates", '[');
		for (size_t w = 0; w < r->nr_workloads; w++)
			j_double(NULL, r->candidates[c].rates[w]);
		close_block(']');
		close_block('}');
	}
	close_block(']');
	open_block("devices", '[');
	for (size_t d = 0; d < r->nr_devices; d++) {
		open_block(NULL, '{');
		j_u64("devid", r->devices[d].devid);
		j_str("device", r->devices[d].device);
		j_u64("probe_bytes", r->devices[d].probe_bytes);
		close_block('}');
	}
	close_block(']');
	close_block('}');
}

/*
 * rp-recommend <path> <seconds> <readers,...|-> <patterns> <apply 0|1|cancel>
 * <sysfs_root> <config_dir>: "cancel" cancels from the first progress call.
 */
static int probe_rp_recommend(int argc, char **argv)
{
	struct btrfsx_recommendation *r = NULL;
	struct btrfsx_recommend_options opts = { 0 };
	unsigned int readers[4];
	enum btrfsx_error err;
	char *save = NULL;

	if (argc != 7)
		return usage();
	opts.seconds = strtod(argv[1], NULL);
	for (char *tok = strtok_r(argv[2], ",", &save); tok && strcmp(tok, "-") &&
	     opts.nr_readers < 4; tok = strtok_r(NULL, ",", &save))
		readers[opts.nr_readers++] = (unsigned int)strtoul(tok, NULL, 0);
	opts.readers = opts.nr_readers ? readers : NULL;
	opts.patterns = (unsigned int)strtoul(argv[3], NULL, 0);
	opts.apply = !strcmp(argv[4], "1");
	if (!strcmp(argv[4], "cancel"))
		opts.progress = cancel_at_first;
	err = btrfsx_read_policy_recommend(arg_or_null(argv[0]), &opts, arg_or_null(argv[5]),
					   arg_or_null(argv[6]), &r);
	begin_report(err);
	if (r)
		print_recommendation(r);
	btrfsx_recommendation_free(r);
	return end_report(err);
}

/* ---- io-stats ---- */

/* io-stats <path> <sysfs_root> */
static int probe_io_stats(int argc, char **argv)
{
	struct btrfsx_io_stats *stats = NULL;
	enum btrfsx_error err;
	size_t nr = 0;

	if (argc != 2)
		return usage();
	err = btrfsx_io_stats_sample(arg_or_null(argv[0]), arg_or_null(argv[1]), &stats, &nr);
	begin_report(err);
	open_block("result", '[');
	for (size_t i = 0; i < nr; i++) {
		open_block(NULL, '{');
		j_u64("devid", stats[i].devid);
		j_str("path", stats[i].path);
		j_bool("present", stats[i].present);
		j_u64("reads", stats[i].reads);
		j_u64("read_bytes", stats[i].read_bytes);
		close_block('}');
	}
	close_block(']');
	free(stats);
	return end_report(err);
}

/* ---- offline scrub ---- */

static void print_counters(const char *key, const struct btrfsx_scrub_counters *c)
{
	open_block(key, '{');
	j_u64("data_extents_scrubbed", c->data_extents_scrubbed);
	j_u64("tree_extents_scrubbed", c->tree_extents_scrubbed);
	j_u64("data_bytes_scrubbed", c->data_bytes_scrubbed);
	j_u64("tree_bytes_scrubbed", c->tree_bytes_scrubbed);
	j_u64("read_errors", c->read_errors);
	j_u64("csum_errors", c->csum_errors);
	j_u64("verify_errors", c->verify_errors);
	j_u64("no_csum", c->no_csum);
	j_u64("csum_discards", c->csum_discards);
	j_u64("super_errors", c->super_errors);
	j_u64("malloc_errors", c->malloc_errors);
	j_u64("uncorrectable_errors", c->uncorrectable_errors);
	j_u64("unverified_errors", c->unverified_errors);
	j_u64("corrected_errors", c->corrected_errors);
	j_u64("last_physical", c->last_physical);
	j_u64("parity_errors", c->parity_errors);
	j_u64("super_corrected", c->super_corrected);
	close_block('}');
}

static void print_scrub_result(const struct btrfsx_scrub_result *r)
{
	j_uuid("fsid", r->fsid);
	j_bool("readonly", r->readonly);
	j_bool("cancelled", r->cancelled);
	j_bool("degraded", r->degraded);
	j_bool("started_set", r->started > 0);
	j_bool("duration_set", r->duration >= 0);
	j_u64("bytes_to_scrub", r->bytes_to_scrub);
	print_counters("total", &r->total);
	open_block("devices", '[');
	for (size_t i = 0; i < r->nr_devices; i++) {
		const struct btrfsx_scrub_device *d = &r->devices[i];

		open_block(NULL, '{');
		j_u64("devid", d->devid);
		j_str("path", d->missing ? NULL : d->path);
		j_bool("missing", d->missing);
		j_u64("bytes_to_scrub", d->bytes_to_scrub);
		print_counters("counters", &d->counters);
		close_block('}');
	}
	close_block(']');
	open_block("errors", '[');
	for (size_t i = 0; i < r->nr_errors; i++) {
		const struct btrfsx_scrub_error *e = &r->errors[i];

		open_block(NULL, '{');
		j_str("what", e->what);
		j_str("fault", e->fault);
		j_str("fix", e->fix);
		j_u64("logical", e->logical);
		j_u64("len", e->len);
		j_u64("devid", e->devid);
		j_u64("physical", e->physical);
		j_s64("mirror", e->mirror);
		j_str("reason", e->reason);
		close_block('}');
	}
	close_block(']');
	j_u64("errors_dropped", r->errors_dropped);
	open_block("files", '[');
	for (size_t i = 0; i < r->nr_files; i++) {
		const struct btrfsx_scrub_file *f = &r->files[i];

		open_block(NULL, '{');
		j_str("path", f->path[0] ? f->path : NULL);
		j_u64("logical", f->logical);
		j_u64("root", f->root);
		j_u64("inode", f->inode);
		j_u64("offset", f->offset);
		close_block('}');
	}
	close_block(']');
	j_bool("uncorrectable", r->uncorrectable);
}

struct progress_log {
	unsigned int calls;
	unsigned int cancel_at;		/* return non-zero at this call; 0: never */
	uint64_t first_total, last_done, last_total;
	bool monotonic;
};

static int on_progress(void *arg, const struct btrfsx_scrub_progress *p)
{
	struct progress_log *log = arg;

	log->calls++;
	if (log->calls == 1)
		log->first_total = p->bytes_total;
	else if (p->bytes_done < log->last_done)
		log->monotonic = false;
	log->last_done = p->bytes_done;
	log->last_total = p->bytes_total;
	return log->cancel_at && log->calls == log->cancel_at;
}

/*
 * scrub [ro] [no-readahead] [progress] [cancel-at=N] [cancel-flag] [interval=S]
 *       [no-opts] -- <device>...
 */
static int probe_scrub(int argc, char **argv)
{
	struct progress_log log = { .monotonic = true };
	struct btrfsx_scrub_options opts = { 0 };
	struct btrfsx_scrub_result *result = NULL;
	volatile sig_atomic_t cancel = 0;
	bool use_opts = true;
	enum btrfsx_error err;
	int i;

	for (i = 0; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "ro"))
			opts.readonly = true;
		else if (!strcmp(argv[i], "no-readahead"))
			opts.no_readahead = true;
		else if (!strcmp(argv[i], "progress"))
			opts.progress = on_progress;
		else if (!strncmp(argv[i], "cancel-at=", 10))
			log.cancel_at = (unsigned int)atoi(argv[i] + 10);
		else if (!strcmp(argv[i], "cancel-flag"))
			cancel = 1;
		else if (!strncmp(argv[i], "interval=", 9))
			opts.progress_interval = atof(argv[i] + 9);
		else if (!strcmp(argv[i], "no-opts"))
			use_opts = false;
		else
			return usage();
	}
	if (i == argc)
		return usage();
	opts.progress_arg = &log;
	opts.cancel = &cancel;
	/* The tests' state directory: a scrub records its run there, never in /var/lib/btrfsx. */
	opts.state_dir = getenv("PROBE_STATE_DIR");
	err = btrfsx_scrub_offline((const char *const *)argv + i + 1, (size_t)(argc - i - 1),
				   use_opts ? &opts : NULL, &result);
	begin_report(err);
	if (result) {
		open_block("result", '{');
		print_scrub_result(result);
		open_block("progress", '{');
		j_u64("calls", log.calls);
		j_u64("first_total", log.first_total);
		j_u64("last_done", log.last_done);
		j_u64("last_total", log.last_total);
		j_bool("monotonic", log.monotonic);
		close_block('}');
		close_block('}');
	}
	btrfsx_scrub_result_free(result);
	return end_report(err);
}

/* ---- misplaced chunks ---- */

static void j_u64_list(const char *key, const uint64_t *v, size_t n)
{
	open_block(key, '[');
	for (size_t i = 0; i < n; i++)
		j_u64(NULL, v[i]);
	close_block(']');
}

static void print_misplaced_chunk(const struct btrfsx_misplaced_chunk *c)
{
	open_block(NULL, '{');
	j_u64("logical", c->logical);
	j_u64("length", c->length);
	j_u64("used", c->used);
	j_u64("flags", c->flags);
	j_str("class", c->cls == BTRFSX_MISPLACED_FORBIDDEN ? "forbidden" : "off-preference");
	j_u64_list("devids", c->devids, c->nr_devids);
	j_u64_list("offending", c->offending, c->nr_offending);
	j_bool("have_model", c->have_model);
	j_u64_list("model_devids", c->model_devids, c->nr_model_devids);
	close_block('}');
}

static void print_totals(const char *key, const struct btrfsx_misplaced_totals *t)
{
	open_block(key, '{');
	j_u64("chunks", t->chunks);
	j_u64("allocated", t->allocated);
	j_u64("used", t->used);
	j_double("estimate_seconds", t->estimate_seconds);
	close_block('}');
}

/* misplaced <state-dir|-> <path>...; misplaced-kernel <kernel> <state-dir|-> <path>... */
static int report_misplaced(const char *kernel, int argc, char **argv)
{
	struct btrfsx_misplaced *m = NULL;
	enum btrfsx_error err;

	if (kernel)
		err = btrfsx_misplaced_get_for_kernel((const char *const *)argv + 1,
						      (size_t)(argc - 1), NULL, arg_or_null(argv[0]),
						      arg_or_null(kernel), &m);
	else
		err = btrfsx_misplaced_get((const char *const *)argv + 1, (size_t)(argc - 1), NULL,
					   arg_or_null(argv[0]), &m);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		j_str("kernel", m->kernel);
		j_bool("kernel_running", m->kernel_running);
		j_uuid("fsid", m->fsid);
		j_bool("mounted", m->mounted);
		j_bool("hints_effective", m->hints_effective);
		j_u64("chunks_checked", m->chunks_checked);
		j_double("copy_rate", m->copy_rate);
		print_totals("forbidden", &m->forbidden);
		print_totals("off_preference", &m->off_preference);
		open_block("chunks", '[');
		for (size_t i = 0; i < m->nr_chunks; i++)
			print_misplaced_chunk(&m->chunks[i]);
		close_block(']');
		close_block('}');
	}
	btrfsx_misplaced_free(m);
	return end_report(err);
}

static int probe_misplaced(int argc, char **argv)
{
	return argc < 1 ? usage() : report_misplaced(NULL, argc, argv);
}

static int probe_misplaced_kernel(int argc, char **argv)
{
	return argc < 2 ? usage() : report_misplaced(argv[0], argc - 1, argv + 1);
}

struct relocate_log {
	unsigned int calls;
	bool cancel_while_moving;
	uint64_t last_done;
	bool monotonic;
};

static int on_relocate_progress(void *arg, const struct btrfsx_relocate_progress *p)
{
	struct relocate_log *log = arg;

	log->calls++;
	if (p->bytes_done < log->last_done)
		log->monotonic = false;
	log->last_done = p->bytes_done;
	return log->cancel_while_moving && p->current != 0;
}

/*
 * relocate [force] [dry-run] [forbidden-only] [limit=N] [cancel-moving]
 *          [cancel-flag] [no-opts] <state-dir> <mountpoint>
 */
static int probe_relocate(int argc, char **argv)
{
	struct relocate_log log = { .monotonic = true };
	struct btrfsx_relocate_options opts = { .progress = on_relocate_progress,
						.progress_arg = &log, .progress_interval = 0.01 };
	struct btrfsx_relocate_result *r = NULL;
	volatile int cancel = 0;
	bool use_opts = true;
	enum btrfsx_error err;
	int i;

	for (i = 0; i + 2 < argc; i++) {
		if (!strcmp(argv[i], "force"))
			opts.force = true;
		else if (!strcmp(argv[i], "dry-run"))
			opts.dry_run = true;
		else if (!strcmp(argv[i], "forbidden-only"))
			opts.forbidden_only = true;
		else if (!strncmp(argv[i], "limit=", 6))
			opts.limit = strtoull(argv[i] + 6, NULL, 0);
		else if (!strcmp(argv[i], "cancel-moving"))
			log.cancel_while_moving = true;
		else if (!strcmp(argv[i], "cancel-flag"))
			cancel = 1;
		else if (!strcmp(argv[i], "no-opts"))
			use_opts = false;
		else
			return usage();
	}
	if (argc - i != 2)
		return usage();
	opts.state_dir = arg_or_null(argv[i]);
	opts.cancel = &cancel;
	err = btrfsx_relocate_misplaced(arg_or_null(argv[i + 1]), use_opts ? &opts : NULL, &r);
	begin_report(err);
	if (r) {
		open_block("result", '{');
		j_u64("status", r->status);
		j_str("reason", r->reason);
		j_bool("forced", r->forced);
		j_u64("bytes_moved", r->bytes_moved);
		j_u64("remaining_chunks", r->remaining_chunks);
		open_block("planned", '[');
		for (size_t k = 0; k < r->nr_planned; k++)
			print_misplaced_chunk(&r->planned[k]);
		close_block(']');
		open_block("relocated", '[');
		for (size_t k = 0; k < r->nr_relocated; k++) {
			const struct btrfsx_relocated *m = &r->relocated[k];

			open_block(NULL, '{');
			j_u64("logical", m->logical);
			j_u64("used", m->used);
			j_bool("as_modelled", m->as_modelled);
			j_u64_list("devids", m->devids, m->nr_devids);
			open_block("new_chunks", '[');
			for (size_t n = 0; n < m->nr_new; n++) {
				open_block(NULL, '{');
				j_u64("logical", m->new_chunks[n].logical);
				j_u64_list("devids", m->new_chunks[n].devids,
					   m->new_chunks[n].nr_devids);
				j_bool("as_modelled", m->new_chunks[n].as_modelled);
				close_block('}');
			}
			close_block(']');
			close_block('}');
		}
		close_block(']');
		open_block("progress", '{');
		j_u64("calls", log.calls);
		j_bool("monotonic", log.monotonic);
		close_block('}');
		close_block('}');
	}
	btrfsx_relocate_result_free(r);
	return end_report(err);
}

/* ---- conventions ---- */

/* fs-info <device>... */
static int probe_fs_info(int argc, char **argv)
{
	struct btrfsx_fs_info info;
	enum btrfsx_error err;

	err = btrfsx_fs_info_offline((const char *const *)argv, (size_t)argc, &info);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		j_uuid("fsid", info.fsid);
		j_str("label", info.label);
		j_u64("num_devices", info.num_devices);
		j_u64("total_bytes", info.total_bytes);
		j_u64("nodesize", info.nodesize);
		j_u64("sectorsize", info.sectorsize);
		j_str("csum", info.csum_name);
		close_block('}');
	}
	return end_report(err);
}

/* strerror: every code's string, and one past the last. */
static int probe_strerror(int argc, char **argv)
{
	(void)argv;
	if (argc)
		return usage();
	begin_report(BTRFSX_OK);
	open_block("result", '[');
	for (int e = BTRFSX_OK; e <= BTRFSX_ERROR_NO_SPACE + 1; e++)
		j_str(NULL, btrfsx_strerror((enum btrfsx_error)e));
	close_block(']');
	return end_report(BTRFSX_OK);
}

/*
 * One thread's work for probe_threads: usage of its own filesystem, and a
 * failure whose message must stay its own whatever the other thread does.
 */
struct thread_work {
	const char *path;
	char bad_name[32];
	uint64_t free_estimated;
	unsigned int mismatches;
};

#define THREAD_ROUNDS 20

static void *thread_main(void *arg)
{
	struct thread_work *w = arg;
	const char *paths[] = { w->path };

	for (int i = 0; i < THREAD_ROUNDS; i++) {
		struct btrfsx_usage *u;
		uint64_t hint;

		if (btrfsx_usage_get(paths, 1, NULL, 0, &u) != BTRFSX_OK) {
			w->mismatches++;
			continue;
		}
		if (i == 0)
			w->free_estimated = u->free_estimated;
		else if (u->free_estimated != w->free_estimated)
			w->mismatches++;
		btrfsx_usage_free(u);
		if (btrfsx_hint_parse(w->bad_name, false, &hint) != BTRFSX_ERROR_INVALID_ARGUMENT ||
		    !strstr(btrfsx_last_error_message(), w->bad_name))
			w->mismatches++;
	}
	return NULL;
}

/* threads <path1> <path2>: two threads, two filesystems, at the same time. */
static int probe_threads(int argc, char **argv)
{
	struct thread_work work[2];
	pthread_t tids[2];

	if (argc != 2)
		return usage();
	for (int i = 0; i < 2; i++) {
		work[i] = (struct thread_work){ .path = argv[i] };
		snprintf(work[i].bad_name, sizeof(work[i].bad_name), "no-such-hint-%d", i);
		if (pthread_create(&tids[i], NULL, thread_main, &work[i]))
			return 1;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(tids[i], NULL);
	begin_report(BTRFSX_OK);
	open_block("result", '[');
	for (int i = 0; i < 2; i++) {
		open_block(NULL, '{');
		j_u64("free_estimated", work[i].free_estimated);
		j_u64("mismatches", work[i].mismatches);
		close_block('}');
	}
	close_block(']');
	return end_report(BTRFSX_OK);
}

/* ---- the what-if planner ---- */

static const char *const plan_statuses[] = { "possible", "impossible", "not-reached" };

/*
 * plan <sysfs_root|-> <path>... -- <op> <value|-> ...
 * plan-kernel <kernel>, then as plan: btrfsx_plan_for_kernel()
 */
static int report_plan(const char *kernel, int argc, char **argv)
{
	struct btrfsx_plan_change changes[16];
	struct btrfsx_plan *plan = NULL;
	size_t nr = 0;
	int sep = 1;
	enum btrfsx_error err = BTRFSX_OK;

	while (sep < argc && strcmp(argv[sep], "--"))
		sep++;
	if (sep >= argc || sep < 2)
		return usage();
	for (int i = sep + 1; i + 1 < argc && nr < 16 && !err; i += 2)
		err = btrfsx_plan_change_parse(argv[i], arg_or_null(argv[i + 1]), &changes[nr++]);
	if (!err && kernel)
		err = btrfsx_plan_for_kernel((const char *const *)argv + 1, (size_t)sep - 1,
					     arg_or_null(argv[0]), arg_or_null(kernel), changes, nr,
					     &plan);
	else if (!err)
		err = btrfsx_plan((const char *const *)argv + 1, (size_t)sep - 1,
				  arg_or_null(argv[0]), changes, nr, &plan);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		j_str("kernel", plan->kernel);
		j_bool("kernel_running", plan->kernel_running);
		j_bool("possible", plan->possible);
		j_u64("before_free_estimated", plan->before->free_estimated);
		j_u64("after_free_estimated", plan->after->free_estimated);
		j_u64("after_metadata_room", plan->after->metadata_room);
		j_u64("after_devices", plan->after->nr_devices);
		open_block("steps", '[');
		for (size_t i = 0; i < plan->nr_steps; i++) {
			const struct btrfsx_plan_step *st = &plan->steps[i];

			open_block(NULL, '{');
			j_str("description", st->description);
			j_str("status", plan_statuses[st->status]);
			j_u64("devid", st->devid);
			j_u64("moved_chunks", st->moved_chunks);
			j_u64("moved_bytes", st->moved_bytes);
			j_u64("shorts", st->nr_short);
			close_block('}');
		}
		close_block(']');
		j_u64("moved", plan->nr_moved);
		j_bool("have_misplaced", plan->misplaced_after != NULL);
		j_u64("warnings", plan->nr_warnings);
		close_block('}');
	}
	btrfsx_plan_free(plan);
	return end_report(err);
}

static int probe_plan(int argc, char **argv)
{
	return report_plan(NULL, argc, argv);
}

static int probe_plan_kernel(int argc, char **argv)
{
	return argc < 1 ? usage() : report_plan(argv[0], argc - 1, argv + 1);
}

/* kernel-traits <kernel|-> */
static int probe_kernel_traits(int argc, char **argv)
{
	struct btrfsx_kernel_traits *t = NULL;
	enum btrfsx_error err;

	if (argc != 1)
		return usage();
	err = btrfsx_kernel_traits_get(arg_or_null(argv[0]), &t);
	begin_report(err);
	if (!err) {
		open_block("result", '{');
		j_str("kernel", t->kernel);
		j_str("release", t->release);
		j_bool("kernel_running", t->kernel_running);
		open_block("traits", '[');
		for (size_t i = 0; i < t->nr_traits; i++) {
			const struct btrfsx_kernel_trait *k = &t->traits[i];

			open_block(NULL, '{');
			j_str("name", k->name);
			j_str("first", k->first);
			j_str("last", k->last);
			j_bool("active", k->active);
			j_str("function", k->function);
			j_str("test", k->test);
			j_str("unversioned", k->unversioned ? k->unversioned : "");
			close_block('}');
		}
		close_block(']');
		close_block('}');
	}
	btrfsx_kernel_traits_free(t);
	return end_report(err);
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} probes[] = {
	{ "hint-name", probe_hint_name },
	{ "hint-parse", probe_hint_parse },
	{ "hint-get", probe_hint_get },
	{ "hint-set", probe_hint_set },
	{ "usage", probe_usage },
	{ "rp-get", probe_rp_get },
	{ "rp-set", probe_rp_set },
	{ "rp-apply", probe_rp_apply },
	{ "io-stats", probe_io_stats },
	{ "rp-recommend", probe_rp_recommend },
	{ "scrub", probe_scrub },
	{ "misplaced", probe_misplaced },
	{ "relocate", probe_relocate },
	{ "fs-info", probe_fs_info },
	{ "strerror", probe_strerror },
	{ "threads", probe_threads },
	{ "plan", probe_plan },
	{ "usage-kernel", probe_usage_kernel },
	{ "misplaced-kernel", probe_misplaced_kernel },
	{ "plan-kernel", probe_plan_kernel },
	{ "kernel-traits", probe_kernel_traits },
};

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		if (!strcmp(argv[1], probes[i].name))
			return probes[i].fn(argc - 2, argv + 2);
	return usage();
}
