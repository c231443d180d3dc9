/*
 * btrfsx scrub: the result through the one formatter (text and JSON from the
 * same calls), and the status file that keeps the last run per filesystem:
 * the same JSON, written atomically, read back with json-c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include <uuid/uuid.h>

#include "cmds/scrub.h"
#include "common/atomic-file.h"
#include "common/error.h"
#include "common/units.h"

static void print_counters(struct bx_out *out, const struct bx_scrub_counters *c,
			   unsigned int flags)
{
	for (size_t i = 0; i < bx_scrub_nr_counters; i++)
		bx_out_u64(out, bx_scrub_counter_table[i].name,
			   *bx_scrub_counter((struct bx_scrub_counters *)c, i), flags);
}

/* "csum=2 super=1" like btrfs scrub status, or "no errors found". */
static void error_summary(const struct bx_scrub_counters *c, char *buf, size_t len)
{
	const struct { const char *name; uint64_t value; } parts[] = {
		{ "read", c->read_errors }, { "super", c->super_errors },
		{ "verify", c->verify_errors }, { "csum", c->csum_errors },
		{ "parity", c->parity_errors },
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

static void print_summary(struct bx_out *out, const struct bx_scrub_counters *c, bool readonly)
{
	char summary[256];

	error_summary(c, summary, sizeof(summary));
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
	bx_out_size(out, "bytes_scrubbed", d->c.data_bytes_scrubbed + d->c.tree_bytes_scrubbed,
		    po->units, 0);
	if (!po->raw)
		print_summary(out, &d->c, res->readonly);
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

void scrub_print(struct bx_out *out, const struct bx_scrub_result *res, const char *status,
		 const struct scrub_print_opts *po)
{
	uint64_t scrubbed = res->total.data_bytes_scrubbed + res->total.tree_bytes_scrubbed;
	char started[64];
	struct tm tm;

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
	if (!po->raw)
		print_summary(out, &res->total, res->readonly);
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

/* ---- the status file ---- */

void scrub_status_path(const char *state_dir, const uint8_t fsid[16], char *buf, size_t len)
{
	char uuid[37];

	uuid_unparse(fsid, uuid);
	snprintf(buf, len, "%s/scrub/%s.json", state_dir, uuid);
}

/*
 * When process @pid started (clock ticks after boot, /proc/<pid>/stat field
 * 22) in this boot (@boot_id): a pid alone may belong to another process by
 * the time 'scrub status' looks. 0 when it cannot be read.
 */
static uint64_t process_started(pid_t pid, char *boot_id, size_t len)
{
	char path[64], buf[1024];
	unsigned long long started = 0;
	const char *p;
	size_t n = 0;
	FILE *fp;

	*boot_id = '\0';
	fp = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (fp) {
		if (fgets(boot_id, (int)len, fp))
			boot_id[strcspn(boot_id, "\n")] = '\0';
		fclose(fp);
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "re");
	if (fp) {
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
	/* After the command name in parentheses: state is field 3, starttime field 22. */
	p = strrchr(buf, ')');
	if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			"%*d %*d %*d %llu", &started) != 1)
		started = 0;
	return started;
}

int scrub_status_save(const char *path, const struct bx_scrub_result *res, const char *status,
		      pid_t pid)
{
	char boot_id[64];
	uint64_t started = process_started(pid, boot_id, sizeof(boot_id));
	struct scrub_print_opts po = { .per_device = true, .raw = true, .units = BX_UNITS_RAW };
	struct bx_atomic_file af;
	char dir[PATH_MAX];
	struct bx_out *out;
	int ret;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	ret = bx_mkdir_parents(dir);
	if (!ret)
		ret = bx_atomic_begin(&af, path, 0644);
	if (ret)
		return ret;
	out = bx_out_new(BX_FORMAT_JSON, af.fp);
	if (!out) {
		bx_atomic_abort(&af);
		return bx_error(-ENOMEM, "out of memory");
	}
	bx_out_s64(out, "pid", pid, 0);
	bx_out_u64(out, "pid_started", started, 0);
	bx_out_str(out, "boot_id", boot_id, 0);
	scrub_print(out, res, status, &po);
	if (bx_out_finish(out)) {
		bx_atomic_abort(&af);
		return bx_error(-E2BIG, "%s: the status does not fit the formatter", path);
	}
	return bx_atomic_commit(&af);
}

struct scrub_status {
	struct json_object *root;     /* owns the strings the result points to */
	struct bx_scrub_result res;
	char state[32];
};

static uint64_t json_u64(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v))
		return 0;
	return (uint64_t)json_object_get_uint64(v);
}

static const char *json_str(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *json_get(struct json_object *obj, const char *key)
{
	struct json_object *v;

	return obj && json_object_object_get_ex(obj, key, &v) ? v : NULL;
}

static void load_counters(struct json_object *obj, struct bx_scrub_counters *c)
{
	for (size_t i = 0; i < bx_scrub_nr_counters; i++)
		*bx_scrub_counter(c, i) = json_u64(obj, bx_scrub_counter_table[i].name);
}

static int enum_of(const char *s, const char *(*str)(int), int nr)
{
	for (int i = 0; s && i < nr; i++)
		if (!strcmp(s, str(i)))
			return i;
	return 0;
}

static const char *what_str(int v) { return bx_scrub_what_str((enum bx_scrub_what)v); }
static const char *fault_str(int v) { return bx_scrub_fault_str((enum bx_scrub_fault)v); }
static const char *fix_str(int v) { return bx_scrub_fix_str((enum bx_scrub_fix)v); }

static int load_lists(struct scrub_status *st, struct json_object *scrub)
{
	struct bx_scrub_result *res = &st->res;
	struct json_object *devs = json_get(scrub, "devices");
	struct json_object *errors = json_get(scrub, "errors");
	struct json_object *files = json_get(scrub, "files");
	size_t nr;

	nr = devs ? json_object_array_length(devs) : 0;
	res->devs = calloc(nr ? nr : 1, sizeof(*res->devs));
	nr = errors ? json_object_array_length(errors) : 0;
	res->errors = calloc(nr ? nr : 1, sizeof(*res->errors));
	nr = files ? json_object_array_length(files) : 0;
	res->files = calloc(nr ? nr : 1, sizeof(*res->files));
	if (!res->devs || !res->errors || !res->files)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; devs && i < json_object_array_length(devs); i++) {
		struct json_object *d = json_object_array_get_idx(devs, i);
		struct bx_scrub_device *dev = &res->devs[res->nr_devs++];
		/* "path" in status files written before JSON version 2 */
		const char *path = json_get(d, "device") ? json_str(d, "device") : json_str(d, "path");

		dev->devid = json_u64(d, "devid");
		dev->path = path ? strdup(path) : NULL;
		dev->missing = json_object_get_boolean(json_get(d, "missing"));
		dev->bytes_to_scrub = json_u64(d, "bytes_to_scrub");
		load_counters(d, &dev->c);
	}
	for (size_t i = 0; errors && i < json_object_array_length(errors); i++) {
		struct json_object *e = json_object_array_get_idx(errors, i);
		struct bx_scrub_error *rec = &res->errors[res->nr_errors++];

		rec->what = (enum bx_scrub_what)enum_of(json_str(e, "what"), what_str, 4);
		rec->fault = (enum bx_scrub_fault)enum_of(json_str(e, "fault"), fault_str, 5);
		rec->fix = (enum bx_scrub_fix)enum_of(json_str(e, "fix"), fix_str, 3);
		rec->logical = json_u64(e, "logical");
		rec->len = (uint32_t)json_u64(e, "len");
		rec->devid = json_u64(e, "devid");
		rec->physical = json_u64(e, "physical");
		rec->mirror = (int)json_u64(e, "mirror");
		rec->owner = json_u64(e, "owner");
		rec->extent_start = json_u64(e, "extent_start");
		rec->extent_len = json_u64(e, "extent_len");
		rec->reason = json_str(e, "reason");
	}
	for (size_t i = 0; files && i < json_object_array_length(files); i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		struct bx_scrub_file *file = &res->files[res->nr_files++];
		const char *path = json_str(f, "path");

		*file = (struct bx_scrub_file){ json_u64(f, "logical"), json_u64(f, "root"),
						json_u64(f, "inode"), json_u64(f, "offset"),
						path ? strdup(path) : NULL };
	}
	res->errors_dropped = json_u64(scrub, "errors_not_listed");
	return 0;
}

/* Whether the process that wrote a "running" status is still that scrub. */
static bool writer_alive(struct json_object *root)
{
	pid_t pid = (pid_t)json_u64(root, "pid");
	const char *boot = json_str(root, "boot_id");
	char boot_now[64];
	uint64_t started;

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH))
		return false;
	started = process_started(pid, boot_now, sizeof(boot_now));
	return started == json_u64(root, "pid_started") && boot && !strcmp(boot, boot_now);
}

int scrub_status_load(const char *path, struct scrub_status **out)
{
	struct scrub_status *st = calloc(1, sizeof(*st));
	struct json_object *scrub, *dur;
	const char *fsid, *state, *mode;
	int ret;

	if (!st)
		return bx_error(-ENOMEM, "out of memory");
	st->root = json_object_from_file(path);
	scrub = json_get(st->root, "scrub");
	if (!scrub) {
		ret = access(path, F_OK) ? bx_error(-ENOENT, "%s: no offline scrub recorded", path)
					 : bx_error(-EINVAL, "%s: not a scrub status file", path);
		scrub_status_free(st);
		return ret;
	}
	fsid = json_str(scrub, "fsid");
	if (!fsid || uuid_parse(fsid, st->res.fsid)) {
		scrub_status_free(st);
		return bx_error(-EINVAL, "%s: not a scrub status file", path);
	}
	state = json_str(scrub, "status");
	snprintf(st->state, sizeof(st->state), "%s", state ? state : "unknown");
	if (!strcmp(st->state, "running") && !writer_alive(st->root))
		snprintf(st->state, sizeof(st->state), "interrupted");
	mode = json_str(scrub, "mode");
	st->res.readonly = mode && !strcmp(mode, "read-only");
	st->res.metadata_only = json_object_get_boolean(json_get(scrub, "metadata_only"));
	st->res.started = (time_t)json_u64(scrub, "started");
	dur = json_get(scrub, "duration");
	st->res.duration = dur ? json_object_get_double(dur) : 0;
	st->res.bytes_to_scrub = json_u64(scrub, "bytes_to_scrub");
	st->res.degraded = json_object_get_boolean(json_get(scrub, "degraded"));
	load_counters(json_get(scrub, "total"), &st->res.total);
	ret = load_lists(st, scrub);
	if (ret) {
		scrub_status_free(st);
		return ret;
	}
	*out = st;
	return 0;
}

const struct bx_scrub_result *scrub_status_result(const struct scrub_status *st)
{
	return &st->res;
}

const char *scrub_status_state(const struct scrub_status *st)
{
	return st->state;
}

void scrub_status_free(struct scrub_status *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->res.nr_devs; i++)
		free(st->res.devs[i].path);
	for (size_t i = 0; i < st->res.nr_files; i++)
		free(st->res.files[i].path);
	free(st->res.devs);
	free(st->res.errors);
	free(st->res.files);
	if (st->root)
		json_object_put(st->root);
	free(st);
}
