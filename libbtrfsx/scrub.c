/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Offline scrub: the public face of scrub/scrub.c, opened as the CLI opens it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "disk/timed-io.h"
#include "fsops/offline.h"
#include "scrub/scrub.h"
#include "libbtrfsx/libbtrfsx-private.h"

static void public_counters(const struct bx_scrub_counters *in, struct btrfsx_scrub_counters *out)
{
	BX_SCRUB_COUNTERS_FIELDS(BX_FIELD_COPY)
}

static void public_progress(const struct bx_scrub_progress *in, struct btrfsx_scrub_progress *out)
{
	BX_SCRUB_PROGRESS_FIELDS(BX_FIELD_COPY)
	public_counters(&in->total, &out->total);
}

static void public_device(const struct bx_scrub_device *in, struct btrfsx_scrub_device *out)
{
	BX_SCRUB_DEVICE_FIELDS(BX_FIELD_COPY)
	snprintf(out->path, sizeof(out->path), "%s", in->path ? in->path : "");
	public_counters(&in->c, &out->counters);
}

static void public_error(const struct bx_scrub_error *in, struct btrfsx_scrub_error *out)
{
	BX_SCRUB_ERROR_FIELDS(BX_FIELD_COPY)
	snprintf(out->what, sizeof(out->what), "%s", bx_scrub_what_str(in->what));
	snprintf(out->fault, sizeof(out->fault), "%s", bx_scrub_fault_str(in->fault));
	snprintf(out->fix, sizeof(out->fix), "%s", bx_scrub_fix_str(in->fix));
	snprintf(out->reason, sizeof(out->reason), "%s", in->reason ? in->reason : "");
}

static void public_file(const struct bx_scrub_file *in, struct btrfsx_scrub_file *out)
{
	BX_SCRUB_FILE_FIELDS(BX_FIELD_COPY)
	snprintf(out->path, sizeof(out->path), "%s", in->path ? in->path : "");
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
	struct btrfsx_scrub_progress pub = { 0 };

	public_progress(p, &pub);
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
	for (size_t i = 0; i < res->nr_devs; i++)
		public_device(&res->devs[i], &out->devices[i]);
	out->nr_devices = res->nr_devs;
	return 0;
}

static int fill_errors(const struct bx_scrub_result *res, struct btrfsx_scrub_result *out)
{
	out->errors = calloc(res->nr_errors + 1, sizeof(*out->errors));
	if (!out->errors)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < res->nr_errors; i++)
		public_error(&res->errors[i], &out->errors[i]);
	out->nr_errors = res->nr_errors;
	return 0;
}

static int fill_files(const struct bx_scrub_result *res, struct btrfsx_scrub_result *out)
{
	out->files = calloc(res->nr_files + 1, sizeof(*out->files));
	if (!out->files)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < res->nr_files; i++)
		public_file(&res->files[i], &out->files[i]);
	out->nr_files = res->nr_files;
	return 0;
}

static void public_totals(const struct bx_scrub_result *in, struct btrfsx_scrub_result *out)
{
	BX_SCRUB_RESULT_FIELDS(BX_FIELD_COPY)
	public_counters(&in->total, &out->total);
	out->uncorrectable = bx_scrub_has_uncorrectable(in);
}

static int public_result(const struct bx_scrub_result *res, struct btrfsx_scrub_result **out)
{
	struct btrfsx_scrub_result *pub = calloc(1, sizeof(*pub));
	int ret;

	if (!pub)
		return bx_error(-ENOMEM, "out of memory");
	public_totals(res, pub);
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
	/* A flag set before the call stops the scrub before it reads a block. */
	struct progress_relay relay = { .opts = opts,
					.stop = opts->cancel &&
						__atomic_load_n(opts->cancel, __ATOMIC_RELAXED) };
	char status_path[PATH_MAX];
	struct bx_scrub_opts engine = {
		.readonly = opts->readonly,
		.readahead = !opts->no_readahead,
		.metadata_only = opts->metadata_only,
		.progress_interval = opts->progress_interval,
		.cancel = opts->cancel,
		.memory_bytes = opts->memory_bytes,
		.status_path = status_path,
	};
	struct bx_scrub_result *res;
	int ret;

	bx_scrub_status_path(bx_api_state_dir(opts->state_dir), fs->fsid, status_path,
			     sizeof(status_path));

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

/* The engine's timeout (0: wait) for the public one (0: the default). */
static unsigned int io_timeout(unsigned int public_timeout)
{
	if (public_timeout == BTRFSX_IO_TIMEOUT_NONE)
		return 0;
	return public_timeout ? public_timeout : BX_IO_TIMEOUT_DEFAULT;
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
	ret = bx_open_offline_scrub(&fs, (char *const *)paths, (int)nr_paths, opts->readonly,
				    io_timeout(opts->io_timeout));
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
