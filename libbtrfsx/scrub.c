/* Offline scrub: the public face of scrub/scrub.c, opened as the CLI opens it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/offline.h"
#include "scrub/scrub.h"
#include "libbtrfsx/libbtrfsx-private.h"

static void public_counters(const struct bx_scrub_counters *in, struct btrfsx_scrub_counters *out)
{
	BX_SCRUB_COUNTERS_FIELDS(BX_FIELD_COPY)
}

/*
 * The engine takes a void callback and one cancel flag; the caller's
 * callback may cancel by its return value, so with a callback the engine
 * watches this relay's flag, set from the caller's flag at each report.
 */
struct progress_relay {
	const struct btrfsx_scrub_options *opts;
	volatile sig_atomic_t stop;
};

static void relay_progress(void *arg, const struct bx_scrub_progress *p)
{
	struct progress_relay *relay = arg;
	struct btrfsx_scrub_progress pub = {
		.bytes_done = p->bytes_done,
		.bytes_total = p->bytes_total,
		.elapsed = p->elapsed,
	};

	public_counters(&p->total, &pub.total);
	/* The callback is called whatever the flag says: it sees the last progress too. */
	if (relay->opts->progress(relay->opts->progress_arg, &pub) ||
	    (relay->opts->cancel && __atomic_load_n(relay->opts->cancel, __ATOMIC_RELAXED)))
		__atomic_store_n(&relay->stop, 1, __ATOMIC_RELAXED);
}

static int fill_devices(const struct bx_scrub_result *res, struct btrfsx_scrub_result *out)
{
	out->devices = calloc(res->nr_devs + 1, sizeof(*out->devices));
	if (!out->devices)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < res->nr_devs; i++) {
		const struct bx_scrub_device *d = &res->devs[i];
		struct btrfsx_scrub_device *pub = &out->devices[i];

		pub->devid = d->devid;
		snprintf(pub->path, sizeof(pub->path), "%s", d->path ? d->path : "");
		pub->missing = d->missing;
		pub->bytes_to_scrub = d->bytes_to_scrub;
		public_counters(&d->c, &pub->counters);
	}
	out->nr_devices = res->nr_devs;
	return 0;
}

static int fill_errors(const struct bx_scrub_result *res, struct btrfsx_scrub_result *out)
{
	out->errors = calloc(res->nr_errors + 1, sizeof(*out->errors));
	if (!out->errors)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < res->nr_errors; i++) {
		const struct bx_scrub_error *e = &res->errors[i];
		struct btrfsx_scrub_error *pub = &out->errors[i];

		snprintf(pub->what, sizeof(pub->what), "%s", bx_scrub_what_str(e->what));
		snprintf(pub->fault, sizeof(pub->fault), "%s", bx_scrub_fault_str(e->fault));
		snprintf(pub->fix, sizeof(pub->fix), "%s", bx_scrub_fix_str(e->fix));
		pub->logical = e->logical;
		pub->len = e->len;
		pub->devid = e->devid;
		pub->physical = e->physical;
		pub->mirror = e->mirror;
		snprintf(pub->reason, sizeof(pub->reason), "%s", e->reason ? e->reason : "");
	}
	out->nr_errors = res->nr_errors;
	out->errors_dropped = res->errors_dropped;
	return 0;
}

static int fill_files(const struct bx_scrub_result *res, struct btrfsx_scrub_result *out)
{
	out->files = calloc(res->nr_files + 1, sizeof(*out->files));
	if (!out->files)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < res->nr_files; i++) {
		const struct bx_scrub_file *f = &res->files[i];
		struct btrfsx_scrub_file *pub = &out->files[i];

		pub->logical = f->logical;
		pub->root = f->root;
		pub->inode = f->inode;
		pub->offset = f->offset;
		snprintf(pub->path, sizeof(pub->path), "%s", f->path ? f->path : "");
	}
	out->nr_files = res->nr_files;
	return 0;
}

static int public_result(const struct bx_scrub_result *res, struct btrfsx_scrub_result **out)
{
	struct btrfsx_scrub_result *pub = calloc(1, sizeof(*pub));
	int ret;

	if (!pub)
		return bx_error(-ENOMEM, "out of memory");
	memcpy(pub->fsid, res->fsid, sizeof(pub->fsid));
	pub->readonly = res->readonly;
	pub->metadata_only = res->metadata_only;
	pub->cancelled = res->cancelled;
	pub->degraded = res->degraded;
	pub->started = res->started;
	pub->duration = res->duration;
	pub->bytes_to_scrub = res->bytes_to_scrub;
	public_counters(&res->total, &pub->total);
	pub->uncorrectable = bx_scrub_has_uncorrectable(res);
	ret = fill_devices(res, pub);
	if (!ret)
		ret = fill_errors(res, pub);
	if (!ret)
		ret = fill_files(res, pub);
	if (ret) {
		btrfsx_scrub_result_free(pub);
		return ret;
	}
	*out = pub;
	return 0;
}

static int scrub(struct bx_fs *fs, const struct btrfsx_scrub_options *opts,
		 struct btrfsx_scrub_result **out)
{
	struct progress_relay relay = { .opts = opts };
	struct bx_scrub_opts engine = {
		.readonly = opts->readonly,
		.readahead = !opts->no_readahead,
		.metadata_only = opts->metadata_only,
		.progress_interval = opts->progress_interval,
		.cancel = opts->cancel,
		.memory_bytes = opts->memory_bytes,
	};
	struct bx_scrub_result *res;
	int ret;

	if (opts->progress) {
		engine.progress = relay_progress;
		engine.progress_arg = &relay;
		engine.cancel = &relay.stop;
	}
	ret = bx_scrub_run(fs, &engine, &res);
	if (ret)
		return ret;
	ret = public_result(res, out);
	if (!ret && res->cancelled)
		ret = bx_error(-EINTR, "scrub cancelled");
	bx_scrub_result_free(res);
	return ret;
}

PUBLIC enum btrfsx_error btrfsx_scrub_offline(const char *const *paths, size_t nr_paths,
					      const struct btrfsx_scrub_options *opts,
					      struct btrfsx_scrub_result **result)
{
	static const struct btrfsx_scrub_options defaults;
	struct bx_fs *fs;
	int ret;

	bx_api_begin();
	if (!paths || !nr_paths)
		return bx_api_missing("a device");
	if (!result)
		return bx_api_missing("result");
	*result = NULL;
	if (!opts)
		opts = &defaults;
	if (opts->progress_interval < 0)
		return bx_api_result(bx_error(-EINVAL, "progress interval %g is negative",
					      opts->progress_interval));
	ret = bx_open_offline_scrub(&fs, (char *const *)paths, (int)nr_paths, opts->readonly);
	if (ret)
		return bx_api_result(ret);
	ret = scrub(fs, opts, result);
	bx_fs_close(fs);
	return bx_api_result(ret);
}

PUBLIC void btrfsx_scrub_result_free(struct btrfsx_scrub_result *result)
{
	if (!result)
		return;
	free(result->devices);
	free(result->errors);
	free(result->files);
	free(result);
}
