/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The status file of a filesystem's last offline scrub: what `scrub status`
 * shows and the monitor records, written by whoever runs the scrub (the
 * command, the library, the Python module). It holds the JSON document of
 * `scrub start --format json -d -R` (tests/test_scrub.py compares the two),
 * plus the process that writes it, so a "running" status whose process is
 * gone reads as interrupted.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/atomic-file.h"
#include "common/error.h"
#include "scrub/scrub.h"

void bx_scrub_status_path(const char *state_dir, const uint8_t fsid[16], char *buf, size_t len)
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

/* ---- writing: the JSON of `scrub start`, built with json-c ---- */

/* Adds @value under @key to @obj; false when either is missing (out of memory). */
static bool add(struct json_object *obj, const char *key, struct json_object *value)
{
	if (!obj || !value || json_object_object_add(obj, key, value)) {
		json_object_put(value);
		return false;
	}
	return true;
}

static struct json_object *u64(uint64_t value)
{
	return json_object_new_uint64(value);
}

/* A string, or null for NULL. */
static bool add_text(struct json_object *obj, const char *key, const char *value)
{
	if (!value)
		return obj && !json_object_object_add(obj, key, NULL);
	return add(obj, key, json_object_new_string(value));
}

/* A double as the command prints it: @decimals after the point. */
static struct json_object *fixed(double value, int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, value);
	return json_object_new_double_s(value, buf);
}

static bool add_counters(struct json_object *obj, const struct bx_scrub_counters *c)
{
	bool ok = true;

	for (size_t i = 0; i < bx_scrub_nr_counters && ok; i++)
		ok = add(obj, bx_scrub_counter_table[i].name,
			 u64(*bx_scrub_counter((struct bx_scrub_counters *)c, i)));
	return ok;
}

static struct json_object *counters_json(const struct bx_scrub_counters *c)
{
	struct json_object *obj = json_object_new_object();

	if (!add_counters(obj, c)) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

static struct json_object *device_json(const struct bx_scrub_device *d)
{
	struct json_object *obj = json_object_new_object();
	bool ok = add(obj, "devid", u64(d->devid)) && add_text(obj, "device", d->path) &&
		  add(obj, "missing", json_object_new_boolean(d->missing)) &&
		  add(obj, "bytes_to_scrub", u64(d->bytes_to_scrub)) &&
		  add(obj, "short_bytes", u64(d->short_bytes)) &&
		  add(obj, "bytes_scrubbed",
		      u64(d->c.data_bytes_scrubbed + d->c.tree_bytes_scrubbed)) &&
		  add_counters(obj, &d->c);

	if (!ok)
		json_object_put(obj);
	return ok ? obj : NULL;
}

static struct json_object *error_json(const struct bx_scrub_error *e)
{
	struct json_object *obj = json_object_new_object();
	bool ok = add_text(obj, "fix", bx_scrub_fix_str(e->fix)) &&
		  add_text(obj, "what", bx_scrub_what_str(e->what)) &&
		  add_text(obj, "fault", bx_scrub_fault_str(e->fault)) &&
		  add(obj, "logical", u64(e->logical)) && add(obj, "len", u64(e->len)) &&
		  add(obj, "devid", u64(e->devid)) && add(obj, "physical", u64(e->physical));

	if (ok && e->mirror)
		ok = add(obj, "mirror", u64((uint64_t)e->mirror));
	if (ok && e->what == BX_SCRUB_TREE && e->owner)
		ok = add(obj, "owner", u64(e->owner));
	if (ok && e->what == BX_SCRUB_DATA)
		ok = add(obj, "extent_start", u64(e->extent_start)) &&
		     add(obj, "extent_len", u64(e->extent_len));
	if (ok)
		ok = add_text(obj, "reason", e->reason ? e->reason : "");
	if (!ok)
		json_object_put(obj);
	return ok ? obj : NULL;
}

static struct json_object *file_json(const struct bx_scrub_file *f)
{
	struct json_object *obj = json_object_new_object();
	bool ok = add_text(obj, "path", f->path ? f->path : "(path unknown)") &&
		  add(obj, "logical", u64(f->logical)) && add(obj, "root", u64(f->root)) &&
		  add(obj, "inode", u64(f->inode)) && add(obj, "offset", u64(f->offset));

	if (!ok)
		json_object_put(obj);
	return ok ? obj : NULL;
}

static bool add_list(struct json_object *obj, const char *key, const void *items, size_t n,
		     size_t size, struct json_object *(*item_json)(const void *item))
{
	struct json_object *list = json_object_new_array();
	bool ok = add(obj, key, list);

	for (size_t i = 0; ok && i < n; i++) {
		struct json_object *item = item_json((const char *)items + i * size);

		ok = item && !json_object_array_add(list, item);
		if (!ok)
			json_object_put(item);
	}
	return ok;
}

static struct json_object *any_device(const void *d) { return device_json(d); }
static struct json_object *any_error(const void *e) { return error_json(e); }
static struct json_object *any_file(const void *f) { return file_json(f); }

static struct json_object *scrub_json(const struct bx_scrub_result *res, const char *status)
{
	uint64_t scrubbed = res->total.data_bytes_scrubbed + res->total.tree_bytes_scrubbed;
	uint64_t rate = res->duration > 0 ? (uint64_t)((double)scrubbed / res->duration) : 0;
	struct json_object *obj = json_object_new_object();
	char fsid[37];
	bool ok;

	uuid_unparse(res->fsid, fsid);
	ok = add_text(obj, "fsid", fsid) && add_text(obj, "status", status) &&
	     add_text(obj, "mode", res->readonly ? "read-only" : "repair") &&
	     add(obj, "metadata_only", json_object_new_boolean(res->metadata_only)) &&
	     add(obj, "started", u64((uint64_t)res->started)) &&
	     add(obj, "duration", fixed(res->duration, 3)) &&
	     add(obj, "bytes_to_scrub", u64(res->bytes_to_scrub)) &&
	     add(obj, "bytes_scrubbed", u64(scrubbed)) && add(obj, "rate", u64(rate)) &&
	     add(obj, "degraded", json_object_new_boolean(res->degraded)) &&
	     add(obj, "total", counters_json(&res->total)) &&
	     add(obj, "has_uncorrectable", json_object_new_boolean(bx_scrub_has_uncorrectable(res))) &&
	     add_list(obj, "devices", res->devs, res->nr_devs, sizeof(*res->devs), any_device) &&
	     add_list(obj, "errors", res->errors, res->nr_errors, sizeof(*res->errors), any_error);
	if (ok && res->errors_dropped)
		ok = add(obj, "errors_not_listed", u64(res->errors_dropped));
	if (ok)
		ok = add_list(obj, "files", res->files, res->nr_files, sizeof(*res->files), any_file);
	if (!ok)
		json_object_put(obj);
	return ok ? obj : NULL;
}

static struct json_object *status_json(const struct bx_scrub_result *res, const char *status,
				       pid_t pid)
{
	struct json_object *root = json_object_new_object(), *header = json_object_new_object();
	char boot_id[64];
	uint64_t started = process_started(pid, boot_id, sizeof(boot_id));
	bool ok = add(root, "__header", header) &&
		  add_text(header, "version", BX_SCRUB_STATUS_VERSION) &&
		  add(root, "pid", json_object_new_int64(pid)) && add(root, "pid_started", u64(started)) &&
		  add_text(root, "boot_id", boot_id) && add(root, "scrub", scrub_json(res, status));

	if (!ok)
		json_object_put(root);
	return ok ? root : NULL;
}

int bx_scrub_status_save(const char *path, const struct bx_scrub_result *res, const char *status,
			 pid_t pid)
{
	struct json_object *root = status_json(res, status, pid);
	struct bx_atomic_file af;
	char dir[PATH_MAX];
	int ret;

	if (!root)
		return bx_error(-ENOMEM, "out of memory");
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	ret = bx_mkdir_parents(dir);
	if (!ret)
		ret = bx_atomic_begin(&af, path, 0644);
	if (!ret) {
		fprintf(af.fp, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
		ret = bx_atomic_commit(&af);
	}
	json_object_put(root);
	return ret;
}

/* ---- reading it back ---- */

struct bx_scrub_status {
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

static void load_device(struct json_object *d, struct bx_scrub_device *dev)
{
	/* "path" in status files written before JSON version 2 */
	const char *path = json_get(d, "device") ? json_str(d, "device") : json_str(d, "path");

	dev->devid = json_u64(d, "devid");
	dev->path = path ? strdup(path) : NULL;
	dev->missing = json_object_get_boolean(json_get(d, "missing"));
	dev->bytes_to_scrub = json_u64(d, "bytes_to_scrub");
	dev->short_bytes = json_u64(d, "short_bytes");	/* 0 in files written before it */
	load_counters(d, &dev->c);
}

static void load_error(struct json_object *e, struct bx_scrub_error *rec)
{
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

static void load_file(struct json_object *f, struct bx_scrub_file *file)
{
	const char *path = json_str(f, "path");

	*file = (struct bx_scrub_file){ json_u64(f, "logical"), json_u64(f, "root"),
					json_u64(f, "inode"), json_u64(f, "offset"),
					path ? strdup(path) : NULL };
}

static size_t length(struct json_object *list)
{
	return list ? json_object_array_length(list) : 0;
}

static int load_lists(struct bx_scrub_status *st, struct json_object *scrub)
{
	struct bx_scrub_result *res = &st->res;
	struct json_object *devs = json_get(scrub, "devices");
	struct json_object *errors = json_get(scrub, "errors");
	struct json_object *files = json_get(scrub, "files");

	res->devs = calloc(length(devs) + 1, sizeof(*res->devs));
	res->errors = calloc(length(errors) + 1, sizeof(*res->errors));
	res->files = calloc(length(files) + 1, sizeof(*res->files));
	if (!res->devs || !res->errors || !res->files)
		return bx_error(-ENOMEM, "out of memory");
	for (; res->nr_devs < length(devs); res->nr_devs++)
		load_device(json_object_array_get_idx(devs, res->nr_devs), &res->devs[res->nr_devs]);
	for (; res->nr_errors < length(errors); res->nr_errors++)
		load_error(json_object_array_get_idx(errors, res->nr_errors),
			   &res->errors[res->nr_errors]);
	for (; res->nr_files < length(files); res->nr_files++)
		load_file(json_object_array_get_idx(files, res->nr_files), &res->files[res->nr_files]);
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

static void load_run(struct bx_scrub_status *st, struct json_object *scrub)
{
	const char *state = json_str(scrub, "status"), *mode = json_str(scrub, "mode");
	struct json_object *dur = json_get(scrub, "duration");

	snprintf(st->state, sizeof(st->state), "%s", state ? state : "unknown");
	if (!strcmp(st->state, "running") && !writer_alive(st->root))
		snprintf(st->state, sizeof(st->state), "interrupted");
	st->res.readonly = mode && !strcmp(mode, "read-only");
	st->res.metadata_only = json_object_get_boolean(json_get(scrub, "metadata_only"));
	st->res.started = (time_t)json_u64(scrub, "started");
	st->res.duration = dur ? json_object_get_double(dur) : 0;
	st->res.bytes_to_scrub = json_u64(scrub, "bytes_to_scrub");
	st->res.degraded = json_object_get_boolean(json_get(scrub, "degraded"));
	load_counters(json_get(scrub, "total"), &st->res.total);
}

int bx_scrub_status_load(const char *path, struct bx_scrub_status **out)
{
	struct bx_scrub_status *st = calloc(1, sizeof(*st));
	struct json_object *scrub;
	const char *fsid;
	int ret;

	if (!st)
		return bx_error(-ENOMEM, "out of memory");
	st->root = json_object_from_file(path);
	scrub = json_get(st->root, "scrub");
	fsid = json_str(scrub, "fsid");
	if (!scrub || !fsid || uuid_parse(fsid, st->res.fsid)) {
		ret = !scrub && access(path, F_OK) ?
		      bx_error(-ENOENT, "%s: no offline scrub recorded", path) :
		      bx_error(-EINVAL, "%s: not a scrub status file", path);
		bx_scrub_status_free(st);
		return ret;
	}
	load_run(st, scrub);
	ret = load_lists(st, scrub);
	if (ret) {
		bx_scrub_status_free(st);
		return ret;
	}
	*out = st;
	return 0;
}

const struct bx_scrub_result *bx_scrub_status_result(const struct bx_scrub_status *st)
{
	return &st->res;
}

const char *bx_scrub_status_state(const struct bx_scrub_status *st)
{
	return st->state;
}

void bx_scrub_status_free(struct bx_scrub_status *st)
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
