/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: the offline scrub with its progress callback and cancel
 * event (btrfsx/_scrub.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "scrub/scrub.h"

#define SCRUB_COUNTER(type, name, dims) FIELD(struct btrfsx_scrub_counters, name),
static const struct field scrub_counter_fields[] = {
	BX_SCRUB_COUNTERS_FIELDS(SCRUB_COUNTER)
	END_FIELDS
};

/* Each with what the library converts by hand: names of enums, strings, counters. */
#define SCRUB_DEVICE(type, name, dims) FIELD(struct btrfsx_scrub_device, name),
static const struct field scrub_device_fields[] = {
	BX_SCRUB_DEVICE_FIELDS(SCRUB_DEVICE)
	FIELD(struct btrfsx_scrub_device, path),
	END_FIELDS
};

#define SCRUB_ERROR(type, name, dims) FIELD(struct btrfsx_scrub_error, name),
static const struct field scrub_error_fields[] = {
	BX_SCRUB_ERROR_FIELDS(SCRUB_ERROR)
	FIELD(struct btrfsx_scrub_error, what),
	FIELD(struct btrfsx_scrub_error, fault),
	FIELD(struct btrfsx_scrub_error, fix),
	FIELD(struct btrfsx_scrub_error, reason),
	END_FIELDS
};

#define SCRUB_FILE(type, name, dims) FIELD(struct btrfsx_scrub_file, name),
static const struct field scrub_file_fields[] = {
	BX_SCRUB_FILE_FIELDS(SCRUB_FILE)
	FIELD(struct btrfsx_scrub_file, path),
	END_FIELDS
};

#define SCRUB_RESULT(type, name, dims) FIELD(struct btrfsx_scrub_result, name),
static const struct field scrub_result_fields[] = {
	BX_SCRUB_RESULT_FIELDS(SCRUB_RESULT)
	FIELD(struct btrfsx_scrub_result, uncorrectable),
	END_FIELDS
};

#define SCRUB_PROGRESS(type, name, dims) FIELD(struct btrfsx_scrub_progress, name),
static const struct field scrub_progress_fields[] = {
	BX_SCRUB_PROGRESS_FIELDS(SCRUB_PROGRESS)
	END_FIELDS
};

/* A dict of @fields of @base with its "counters" entry. */
static PyObject *with_counters(const void *base, const struct field *fields, const char *key,
			       const struct btrfsx_scrub_counters *counters)
{
	PyObject *dict = to_dict(base, fields);

	if (dict && put_new(dict, key, to_dict(counters, scrub_counter_fields)))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *scrub_result_to_dict(const struct btrfsx_scrub_result *result)
{
	PyObject *dict = with_counters(result, scrub_result_fields, "total", &result->total);
	PyObject *devices;

	if (!dict)
		return NULL;
	devices = PyList_New((Py_ssize_t)result->nr_devices);
	for (size_t i = 0; devices && i < result->nr_devices; i++) {
		const struct btrfsx_scrub_device *dev = &result->devices[i];
		PyObject *item = with_counters(dev, scrub_device_fields, "counters", &dev->counters);

		if (!item) {
			Py_CLEAR(devices);
			break;
		}
		PyList_SET_ITEM(devices, (Py_ssize_t)i, item);
	}
	if (put_new(dict, "devices", devices) ||
	    put_new(dict, "errors", to_list(result->errors, result->nr_errors,
					    sizeof(*result->errors), scrub_error_fields)) ||
	    put_new(dict, "files", to_list(result->files, result->nr_files,
					   sizeof(*result->files), scrub_file_fields)))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *progress_to_dict(const void *arg)
{
	const struct btrfsx_scrub_progress *p = arg;
	PyObject *dict = to_dict(p, scrub_progress_fields);

	if (dict && put_new(dict, "total", to_dict(&p->total, scrub_counter_fields)))
		Py_CLEAR(dict);
	return dict;
}

static int scrub_progress(void *arg, const struct btrfsx_scrub_progress *p)
{
	return progress_tick(arg, progress_to_dict, p);
}

static PyObject *py_scrub_offline(PyObject *module, PyObject *args)
{
	struct path_list list = { 0 };
	struct progress_context ctx = { 0 };
	struct btrfsx_scrub_options opts = { 0 };
	struct btrfsx_scrub_result *result = NULL;
	int readonly, no_readahead, metadata_only, stop;
	PyObject *ret, *state_dir = NULL;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&ppOOdKpO&I:scrub_offline", path_list_converter, &list,
			      &readonly, &no_readahead, &ctx.callback, &ctx.cancel,
			      &opts.progress_interval, &opts.memory_bytes, &metadata_only,
			      optional_path, &state_dir, &opts.io_timeout))
		return NULL;
	stop = progress_start(&ctx);
	if (stop < 0) {
		path_list_free(&list);
		Py_XDECREF(state_dir);
		return NULL;
	}
	/* Already cancelled: the library stops before the first block. */
	ctx.stop = stop;
	opts.readonly = readonly;
	opts.no_readahead = no_readahead;
	opts.metadata_only = metadata_only;
	opts.progress = scrub_progress;
	opts.progress_arg = &ctx;
	opts.cancel = &ctx.stop;
	opts.state_dir = path_or_null(state_dir);
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_scrub_offline(list.paths, list.count, &opts, &result);
	Py_END_ALLOW_THREADS
	path_list_free(&list);
	Py_XDECREF(state_dir);
	if (ctx.raised[0]) {
		btrfsx_scrub_result_free(result);
		restore_raised(&ctx);
		return NULL;
	}
	if (err)
		ret = raise_error(module, err, result ? scrub_result_to_dict(result) : NULL);
	else
		ret = with_warnings(scrub_result_to_dict(result));
	btrfsx_scrub_result_free(result);
	return ret;
}

static PyMethodDef scrub_methods[] = {
	{ "scrub_offline", py_scrub_offline, METH_VARARGS,
	  "scrub_offline(paths, readonly, no_readahead, progress, cancel, interval, memory, "
	  "metadata_only, state_dir, io_timeout) -> (dict, warnings)" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table scrub_tables[] = {
	{ "ScrubCounters", scrub_counter_fields },
	{ "ScrubDevice", scrub_device_fields },
	{ "ScrubError", scrub_error_fields },
	{ "ScrubFile", scrub_file_fields },
	{ "ScrubResult", scrub_result_fields },
	{ "ScrubProgress", scrub_progress_fields },
	{ NULL, NULL }
};

const struct py_area py_scrub_area = { scrub_methods, scrub_tables };
