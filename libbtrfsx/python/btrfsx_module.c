/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: libbtrfsx for CPython. Each function converts its
 * arguments, calls the library with the GIL released, and returns plain
 * dicts, lists and a tuple of warnings; btrfsx/__init__.py turns those into
 * dataclasses and enums. On failure the exception comes from the factory
 * btrfsx/__init__.py registers, so the code-to-class mapping lives in one
 * place.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <string.h>

#include <btrfsx.h>

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "fsops/alloc-hint.h"
#include "fsops/io-stats.h"
#include "fsops/usage.h"
#include "monitor/sample.h"
#include "plan/plan.h"
#include "recommend/recommend.h"
#include "relocate/relocate.h"
#include "scrub/scrub.h"

struct module_state {
	PyObject *error_factory;	/* (code, message, warnings) -> exception */
};

static struct module_state *state_of(PyObject *module)
{
	return PyModule_GetState(module);
}

/* ---- C structures to dicts, one table per structure ---- */

enum field_kind { K_UNSIGNED, K_SIGNED, K_BOOL, K_DOUBLE, K_STR, K_STR_POINTER, K_BYTES };

struct field {
	const char *name;
	enum field_kind kind;
	size_t offset;
	size_t size;
};

/*
 * The kind follows from the member's C type and the width from its size, so
 * a table cannot misread a member. Enums are unsigned int to C compilers.
 */
#define KIND_OF(type, member)                                                    \
	_Generic(((type *)0)->member,                                            \
		 unsigned char: K_UNSIGNED,                                      \
		 unsigned short: K_UNSIGNED, unsigned int: K_UNSIGNED,           \
		 unsigned long: K_UNSIGNED, unsigned long long: K_UNSIGNED,      \
		 short: K_SIGNED, int: K_SIGNED, long: K_SIGNED, long long: K_SIGNED, \
		 _Bool: K_BOOL, double: K_DOUBLE, char *: K_STR, const char *: K_STR_POINTER, \
		 unsigned char *: K_BYTES)
#define FIELD_AS(type, member, name)                                             \
	{ name, KIND_OF(type, member), offsetof(type, member), sizeof(((type *)0)->member) }
#define FIELD(type, member) FIELD_AS(type, member, #member)
#define END_FIELDS { NULL, K_UNSIGNED, 0, 0 }

static PyObject *decode_chars(const char *chars, size_t size)
{
	return PyUnicode_DecodeFSDefaultAndSize(chars, (Py_ssize_t)strnlen(chars, size));
}

static unsigned long long read_unsigned(const void *p, size_t size)
{
	switch (size) {
	case sizeof(uint8_t):
		return *(const uint8_t *)p;
	case sizeof(uint16_t):
		return *(const uint16_t *)p;
	case sizeof(uint32_t):
		return *(const uint32_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static long long read_signed(const void *p, size_t size)
{
	switch (size) {
	case sizeof(int16_t):
		return *(const int16_t *)p;
	case sizeof(int32_t):
		return *(const int32_t *)p;
	default:
		return *(const int64_t *)p;
	}
}

static PyObject *field_value(const char *base, const struct field *f)
{
	const void *p = base + f->offset;

	switch (f->kind) {
	case K_UNSIGNED:
		return PyLong_FromUnsignedLongLong(read_unsigned(p, f->size));
	case K_SIGNED:
		return PyLong_FromLongLong(read_signed(p, f->size));
	case K_BOOL:
		return PyBool_FromLong(*(const bool *)p);
	case K_DOUBLE:
		return PyFloat_FromDouble(*(const double *)p);
	case K_STR:
		return decode_chars(p, f->size);
	case K_STR_POINTER:
		if (!*(const char *const *)p)
			Py_RETURN_NONE;
		return PyUnicode_FromString(*(const char *const *)p);
	case K_BYTES:
		return PyBytes_FromStringAndSize(p, (Py_ssize_t)f->size);
	}
	PyErr_SetString(PyExc_SystemError, "unknown field kind");
	return NULL;
}

static int put_fields(PyObject *dict, const void *base, const struct field *fields)
{
	for (const struct field *f = fields; f->name; f++) {
		PyObject *value = field_value(base, f);
		int ret;

		if (!value)
			return -1;
		ret = PyDict_SetItemString(dict, f->name, value);
		Py_DECREF(value);
		if (ret)
			return -1;
	}
	return 0;
}

static PyObject *to_dict(const void *base, const struct field *fields)
{
	PyObject *dict = PyDict_New();

	if (dict && put_fields(dict, base, fields)) {
		Py_CLEAR(dict);
	}
	return dict;
}

/* A list of dicts from an array of @count structures of @size bytes. */
static PyObject *to_list(const void *array, size_t count, size_t size,
			 const struct field *fields)
{
	PyObject *list = PyList_New((Py_ssize_t)count);

	for (size_t i = 0; list && i < count; i++) {
		PyObject *item = to_dict((const char *)array + i * size, fields);

		if (!item) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	return list;
}

/* Sets dict[key] = value and drops the reference to value; -1 on failure. */
static int put_new(PyObject *dict, const char *key, PyObject *value)
{
	int ret;

	if (!value)
		return -1;
	ret = PyDict_SetItemString(dict, key, value);
	Py_DECREF(value);
	return ret;
}

static const struct field fs_info_fields[] = {
	FIELD(struct btrfsx_fs_info, fsid),
	FIELD(struct btrfsx_fs_info, metadata_uuid),
	FIELD(struct btrfsx_fs_info, label),
	FIELD(struct btrfsx_fs_info, generation),
	FIELD(struct btrfsx_fs_info, num_devices),
	FIELD(struct btrfsx_fs_info, total_bytes),
	FIELD(struct btrfsx_fs_info, bytes_used),
	FIELD(struct btrfsx_fs_info, nodesize),
	FIELD(struct btrfsx_fs_info, sectorsize),
	FIELD(struct btrfsx_fs_info, csum_type),
	FIELD(struct btrfsx_fs_info, csum_name),
	END_FIELDS
};

#define HINT_STATE(type, name, dims) FIELD(struct btrfsx_hint_state, name),
static const struct field hint_state_fields[] = {
	BX_HINT_STATE_FIELDS(HINT_STATE)
	FIELD_AS(struct btrfsx_hint_state, iface, "interface"),
	END_FIELDS
};

#define USAGE(type, name, dims) FIELD(struct btrfsx_usage, name),
static const struct field usage_fields[] = {
	BX_USAGE_OVERALL_FIELDS(USAGE)
	BX_USAGE_MODEL_FIELDS(USAGE)
	FIELD(struct btrfsx_usage, fsid),
	FIELD(struct btrfsx_usage, mounted),
	FIELD(struct btrfsx_usage, path),
	FIELD(struct btrfsx_usage, progs_free_estimated),
	FIELD(struct btrfsx_usage, progs_free_min),
	FIELD(struct btrfsx_usage, data_profile),
	FIELD(struct btrfsx_usage, metadata_profile),
	/* "warnings" in Python is the list of messages every result carries */
	FIELD_AS(struct btrfsx_usage, warnings, "warning_flags"),
	FIELD(struct btrfsx_usage, have_global_reserve),
	FIELD(struct btrfsx_usage, global_reserve),
	FIELD(struct btrfsx_usage, global_reserve_used),
	FIELD(struct btrfsx_usage, strict),
	FIELD(struct btrfsx_usage, kernel),
	FIELD(struct btrfsx_usage, kernel_running),
	END_FIELDS
};

static const struct field usage_space_fields[] = {
	FIELD(struct btrfsx_usage_space, flags),
	FIELD(struct btrfsx_usage_space, total_bytes),
	FIELD(struct btrfsx_usage_space, used_bytes),
	END_FIELDS
};

#define USAGE_CLASS(type, name, dims) FIELD(struct btrfsx_usage_class, name),
static const struct field usage_class_fields[] = {
	BX_USAGE_CLASS_FIELDS(USAGE_CLASS)
	END_FIELDS
};

#define USAGE_DEVICE(type, name, dims) FIELD(struct btrfsx_usage_device, name),
static const struct field usage_device_fields[] = {
	BX_USAGE_DEVICE_FIELDS(USAGE_DEVICE)
	FIELD(struct btrfsx_usage_device, path),
	END_FIELDS
};

static const struct field read_policy_fields[] = {
	FIELD(struct btrfsx_read_policy, fsid),
	FIELD_AS(struct btrfsx_read_policy, iface, "interface"),
	FIELD(struct btrfsx_read_policy, active),
	FIELD(struct btrfsx_read_policy, raw),
	FIELD(struct btrfsx_read_policy, recorded),
	FIELD(struct btrfsx_read_policy, mirrored_known),
	END_FIELDS
};

static const struct field apply_result_fields[] = {
	FIELD(struct btrfsx_apply_result, fsid),
	FIELD(struct btrfsx_apply_result, path),
	FIELD(struct btrfsx_apply_result, policy),
	FIELD(struct btrfsx_apply_result, status),
	FIELD(struct btrfsx_apply_result, error),
	END_FIELDS
};

#define IO_STATS(type, name, dims) FIELD(struct btrfsx_io_stats, name),
static const struct field io_stats_fields[] = {
	BX_DEV_READS_FIELDS(IO_STATS)
	END_FIELDS
};

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

#define MONITOR_SAMPLE(type, name, dims) FIELD(struct btrfsx_monitor_sample, name),
static const struct field monitor_sample_fields[] = {
	BX_MON_FIGURES_FIELDS(MONITOR_SAMPLE)
	END_FIELDS
};

static const struct field monitor_trend_fields[] = {
	FIELD(struct btrfsx_monitor_trend, ok),
	FIELD(struct btrfsx_monitor_trend, growth),
	FIELD(struct btrfsx_monitor_trend, growth_low),
	FIELD(struct btrfsx_monitor_trend, growth_high),
	FIELD(struct btrfsx_monitor_trend, one_off_changes),
	FIELD(struct btrfsx_monitor_trend, exhausts),
	FIELD(struct btrfsx_monitor_trend, days_left),
	FIELD(struct btrfsx_monitor_trend, days_left_low),
	FIELD(struct btrfsx_monitor_trend, days_left_high),
	END_FIELDS
};

static const struct field monitor_projection_fields[] = {
	FIELD(struct btrfsx_monitor_projection, fsid),
	FIELD(struct btrfsx_monitor_projection, label),
	FIELD(struct btrfsx_monitor_projection, mountpoint),
	FIELD(struct btrfsx_monitor_projection, now),
	FIELD(struct btrfsx_monitor_projection, window),
	FIELD(struct btrfsx_monitor_projection, nr_samples),
	FIELD(struct btrfsx_monitor_projection, have_latest),
	FIELD(struct btrfsx_monitor_projection, metadata_left),
	FIELD(struct btrfsx_monitor_projection, reason),
	FIELD(struct btrfsx_monitor_projection, min_history),
	FIELD(struct btrfsx_monitor_projection, history_span),
	FIELD(struct btrfsx_monitor_projection, learning),
	FIELD(struct btrfsx_monitor_projection, metadata_growth_seen),
	FIELD(struct btrfsx_monitor_projection, data_growth_seen),
	FIELD(struct btrfsx_monitor_projection, burst),
	END_FIELDS
};

static PyObject *projection_to_dict(const struct btrfsx_monitor_projection *p)
{
	PyObject *dict = to_dict(p, monitor_projection_fields);

	if (!p->have_latest)
		Py_INCREF(Py_None);
	if (dict &&
	    (put_new(dict, "latest", p->have_latest ? to_dict(&p->latest, monitor_sample_fields)
						    : Py_None) ||
	     put_new(dict, "metadata", to_dict(&p->metadata, monitor_trend_fields)) ||
	     put_new(dict, "data", to_dict(&p->data, monitor_trend_fields))))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *usage_to_dict(const struct btrfsx_usage *usage)
{
	PyObject *dict = to_dict(usage, usage_fields);

	if (dict &&
	    (put_new(dict, "classes", to_list(usage->classes, usage->nr_classes,
					      sizeof(*usage->classes), usage_class_fields)) ||
	     put_new(dict, "devices", to_list(usage->devices, usage->nr_devices,
					      sizeof(*usage->devices), usage_device_fields)) ||
	     put_new(dict, "spaces", to_list(usage->spaces, usage->nr_spaces,
					     sizeof(*usage->spaces), usage_space_fields))))
		Py_CLEAR(dict);
	return dict;
}

/* A list of the first @count of the @max NUL-padded names of @size bytes. */
static PyObject *name_list(const char *names, size_t count, size_t max, size_t size)
{
	PyObject *list;

	if (count > max)
		count = max;
	list = PyList_New((Py_ssize_t)count);
	for (size_t i = 0; list && i < count; i++) {
		PyObject *name = decode_chars(names + i * size, size);

		if (!name) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, name);
	}
	return list;
}

static PyObject *read_policy_to_dict(const struct btrfsx_read_policy *policy)
{
	PyObject *dict = to_dict(policy, read_policy_fields);

	if (dict &&
	    (put_new(dict, "offered", name_list(policy->offered[0], policy->nr_offered,
						BTRFSX_READ_POLICY_MAX_OFFERED,
						sizeof(policy->offered[0]))) ||
	     put_new(dict, "mirrored", name_list(policy->mirrored[0], policy->nr_mirrored,
						 BTRFSX_READ_POLICY_MAX_MIRRORED,
						 sizeof(policy->mirrored[0])))))
		Py_CLEAR(dict);
	return dict;
}

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

/* ---- warnings and errors ---- */

static PyObject *decode_message(const char *message)
{
	return PyUnicode_DecodeFSDefault(message ? message : "");
}

/* The calling thread's warnings from its last library call, as a tuple. */
static PyObject *take_warnings(void)
{
	size_t count = btrfsx_warnings_count();
	PyObject *tuple = PyTuple_New((Py_ssize_t)count);

	for (size_t i = 0; tuple && i < count; i++) {
		PyObject *text = decode_message(btrfsx_warning(i));

		if (!text) {
			Py_CLEAR(tuple);
			break;
		}
		PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, text);
	}
	return tuple;
}

/*
 * Raises the exception the registered factory makes for @err, with @partial
 * (what the library filled despite the error, or NULL) as its "partial"
 * attribute. Steals @partial. Always returns NULL.
 */
static PyObject *raise_error(PyObject *module, enum btrfsx_error err, PyObject *partial)
{
	PyObject *factory = state_of(module)->error_factory;
	PyObject *message = decode_message(btrfsx_last_error_message());
	PyObject *warnings = take_warnings();
	PyObject *exc = NULL;

	if (!message || !warnings)
		goto out;
	if (!factory) {
		PyErr_Format(PyExc_RuntimeError, "libbtrfsx error %d: %U", (int)err, message);
		goto out;
	}
	exc = PyObject_CallFunction(factory, "iOO", (int)err, message, warnings);
	if (exc && partial && PyObject_SetAttrString(exc, "partial", partial))
		Py_CLEAR(exc);
	if (exc)
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
out:
	Py_XDECREF(exc);
	Py_XDECREF(message);
	Py_XDECREF(warnings);
	Py_XDECREF(partial);
	return NULL;
}

/* (value, warnings), stealing @value; NULL if @value is. */
static PyObject *with_warnings(PyObject *value)
{
	PyObject *warnings;

	if (!value)
		return NULL;
	warnings = take_warnings();
	if (!warnings) {
		Py_DECREF(value);
		return NULL;
	}
	return Py_BuildValue("(NN)", value, warnings);
}

/* ---- arguments ---- */

/* "O&" converter: None -> NULL, a str, bytes or path-like -> bytes. */
static int optional_path(PyObject *arg, void *out)
{
	PyObject **bytes = out;

	if (arg == NULL) {	/* cleanup call after a later failure */
		Py_CLEAR(*bytes);
		return 1;
	}
	if (arg == Py_None) {
		*bytes = NULL;
		return 1;
	}
	return PyUnicode_FSConverter(arg, bytes) ? Py_CLEANUP_SUPPORTED : 0;
}

/* Drops the converted path arguments of a call (NULL ones are fine). */
static void release_paths(PyObject *a, PyObject *b, PyObject *c)
{
	Py_XDECREF(a);
	Py_XDECREF(b);
	Py_XDECREF(c);
}

static const char *path_or_null(PyObject *bytes)
{
	return bytes ? PyBytes_AS_STRING(bytes) : NULL;
}

/* A sequence of paths as the array the library takes. */
struct path_list {
	PyObject *owners;	/* the bytes objects the pointers point into */
	const char **paths;
	size_t count;
};

static void path_list_free(struct path_list *list)
{
	Py_CLEAR(list->owners);
	PyMem_Free(list->paths);
	list->paths = NULL;
}

static int path_list_converter(PyObject *arg, void *out)
{
	struct path_list *list = out;
	PyObject *seq;
	Py_ssize_t count;

	if (arg == NULL) {
		path_list_free(list);
		return 1;
	}
	seq = PySequence_Fast(arg, "paths must be a sequence of paths");
	if (!seq)
		return 0;
	count = PySequence_Fast_GET_SIZE(seq);
	list->owners = PyTuple_New(count);
	list->paths = PyMem_Calloc((size_t)count + 1, sizeof(*list->paths));
	list->count = (size_t)count;
	if (!list->owners || !list->paths) {
		Py_DECREF(seq);
		path_list_free(list);
		PyErr_NoMemory();
		return 0;
	}
	for (Py_ssize_t i = 0; i < count; i++) {
		PyObject *bytes;

		if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &bytes)) {
			Py_DECREF(seq);
			path_list_free(list);
			return 0;
		}
		PyTuple_SET_ITEM(list->owners, i, bytes);
		list->paths[i] = PyBytes_AS_STRING(bytes);
	}
	Py_DECREF(seq);
	return Py_CLEANUP_SUPPORTED;
}

/* ---- the functions ---- */

static PyObject *py_strerror(PyObject *module, PyObject *args)
{
	int err;

	if (!PyArg_ParseTuple(args, "i:strerror", &err))
		return NULL;
	return PyUnicode_FromString(btrfsx_strerror((enum btrfsx_error)err));
}

static PyObject *py_hint_name(PyObject *module, PyObject *args)
{
	unsigned long long hint;
	const char *name;

	if (!PyArg_ParseTuple(args, "K:hint_name", &hint))
		return NULL;
	name = btrfsx_hint_name(hint);
	if (!name)
		Py_RETURN_NONE;
	return PyUnicode_FromString(name);
}

static PyObject *py_hint_parse(PyObject *module, PyObject *args)
{
	const char *text;
	int allow_number;
	uint64_t hint;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "sp:hint_parse", &text, &allow_number))
		return NULL;
	err = btrfsx_hint_parse(text, allow_number, &hint);
	if (err)
		return raise_error(module, err, NULL);
	return PyLong_FromUnsignedLongLong(hint);
}

static PyObject *py_fs_info_offline(PyObject *module, PyObject *args)
{
	struct path_list list = { 0 };
	struct btrfsx_fs_info info;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&:fs_info_offline", path_list_converter, &list))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_fs_info_offline(list.paths, list.count, &info);
	Py_END_ALLOW_THREADS
	path_list_free(&list);
	if (err)
		return raise_error(module, err, NULL);
	return with_warnings(to_dict(&info, fs_info_fields));
}

static PyObject *py_hint_get(PyObject *module, PyObject *args)
{
	PyObject *sysfs_root = NULL, *device = NULL, *ret = NULL;
	struct btrfsx_hint_state state;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&:hint_get", optional_path, &sysfs_root,
			      PyUnicode_FSConverter, &device))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_hint_get(path_or_null(sysfs_root), PyBytes_AS_STRING(device), &state);
	Py_END_ALLOW_THREADS
	ret = err ? raise_error(module, err, NULL) : with_warnings(to_dict(&state, hint_state_fields));
	release_paths(sysfs_root, device, NULL);
	return ret;
}

static PyObject *py_hint_set(PyObject *module, PyObject *args)
{
	PyObject *sysfs_root = NULL, *device = NULL, *ret = NULL;
	struct btrfsx_hint_state before, after;
	unsigned long long hint;
	unsigned int flags;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&KI:hint_set", optional_path, &sysfs_root,
			      PyUnicode_FSConverter, &device, &hint, &flags))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_hint_set(path_or_null(sysfs_root), PyBytes_AS_STRING(device), hint, flags,
			      &before, &after);
	Py_END_ALLOW_THREADS
	if (err)
		ret = raise_error(module, err, NULL);
	else
		ret = with_warnings(Py_BuildValue("(NN)", to_dict(&before, hint_state_fields),
						  to_dict(&after, hint_state_fields)));
	release_paths(sysfs_root, device, NULL);
	return ret;
}

static PyObject *py_usage_get(PyObject *module, PyObject *args)
{
	struct path_list list = { 0 };
	PyObject *sysfs_root = NULL, *ret;
	struct btrfsx_usage *usage = NULL;
	const char *kernel = NULL;
	unsigned int flags;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&I|z:usage_get", path_list_converter, &list,
			      optional_path, &sysfs_root, &flags, &kernel))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_usage_get_for_kernel(list.paths, list.count, path_or_null(sysfs_root), flags,
					  kernel, &usage);
	Py_END_ALLOW_THREADS
	path_list_free(&list);
	Py_XDECREF(sysfs_root);
	ret = err ? raise_error(module, err, NULL) : with_warnings(usage_to_dict(usage));
	btrfsx_usage_free(usage);
	return ret;
}

static PyObject *py_read_policy_get(PyObject *module, PyObject *args)
{
	PyObject *path = NULL, *sysfs_root = NULL, *config_dir = NULL, *ret;
	struct btrfsx_read_policy policy;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&O&:read_policy_get", PyUnicode_FSConverter, &path,
			      optional_path, &sysfs_root, optional_path, &config_dir))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_read_policy_get(PyBytes_AS_STRING(path), path_or_null(sysfs_root),
				     path_or_null(config_dir), &policy);
	Py_END_ALLOW_THREADS
	ret = err ? raise_error(module, err, NULL) : with_warnings(read_policy_to_dict(&policy));
	release_paths(path, sysfs_root, config_dir);
	return ret;
}

static PyObject *py_read_policy_set(PyObject *module, PyObject *args)
{
	PyObject *path = NULL, *sysfs_root = NULL, *config_dir = NULL, *ret;
	struct btrfsx_read_policy after;
	const char *policy;
	unsigned int flags;
	bool changed = false;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&sIO&O&:read_policy_set", PyUnicode_FSConverter, &path,
			      &policy, &flags, optional_path, &sysfs_root, optional_path,
			      &config_dir))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_read_policy_set(PyBytes_AS_STRING(path), policy, flags,
				     path_or_null(sysfs_root), path_or_null(config_dir), &after,
				     &changed);
	Py_END_ALLOW_THREADS
	if (err)
		ret = raise_error(module, err, NULL);
	else
		ret = with_warnings(Py_BuildValue("(NN)", read_policy_to_dict(&after),
						  PyBool_FromLong(changed)));
	release_paths(path, sysfs_root, config_dir);
	return ret;
}

static PyObject *py_read_policy_apply(PyObject *module, PyObject *args)
{
	PyObject *path = NULL, *sysfs_root = NULL, *config_dir = NULL, *list;
	struct btrfsx_apply_result *results = NULL;
	size_t nr_results = 0;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&O&:read_policy_apply", optional_path, &path,
			      optional_path, &sysfs_root, optional_path, &config_dir))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_read_policy_apply(path_or_null(path), path_or_null(sysfs_root),
				       path_or_null(config_dir), &results, &nr_results);
	Py_END_ALLOW_THREADS
	release_paths(path, sysfs_root, config_dir);
	list = to_list(results, nr_results, sizeof(*results), apply_result_fields);
	free(results);
	if (err && list)
		return raise_error(module, err, list);
	return with_warnings(list);
}

static PyObject *py_io_stats_sample(PyObject *module, PyObject *args)
{
	PyObject *path = NULL, *sysfs_root = NULL, *ret;
	struct btrfsx_io_stats *stats = NULL;
	size_t nr_stats = 0;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&:io_stats_sample", PyUnicode_FSConverter, &path,
			      optional_path, &sysfs_root))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_io_stats_sample(PyBytes_AS_STRING(path), path_or_null(sysfs_root), &stats,
				     &nr_stats);
	Py_END_ALLOW_THREADS
	release_paths(path, sysfs_root, NULL);
	if (err)
		ret = raise_error(module, err, NULL);
	else
		ret = with_warnings(to_list(stats, nr_stats, sizeof(*stats), io_stats_fields));
	free(stats);
	return ret;
}

/* ---- offline scrub with a progress callback and a cancel event ---- */

struct progress_context {
	PyObject *callback;	/* None or a callable taking the progress dict */
	PyObject *cancel;	/* None or an object with is_set(), e.g. threading.Event */
	volatile sig_atomic_t stop;	/* the library's cancel flag, stored atomically */
	/* what the callback raised (or a signal did): re-raised after the scrub */
	PyObject *raised[3];
};

static void keep_raised(struct progress_context *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
	ctx->raised[0] = PyErr_GetRaisedException();
#else
	PyErr_Fetch(&ctx->raised[0], &ctx->raised[1], &ctx->raised[2]);
#endif
}

static void restore_raised(struct progress_context *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
	PyErr_SetRaisedException(ctx->raised[0]);
#else
	PyErr_Restore(ctx->raised[0], ctx->raised[1], ctx->raised[2]);
#endif
}

static PyObject *progress_to_dict(const void *arg)
{
	const struct btrfsx_scrub_progress *p = arg;
	PyObject *dict = to_dict(p, scrub_progress_fields);

	if (dict && put_new(dict, "total", to_dict(&p->total, scrub_counter_fields)))
		Py_CLEAR(dict);
	return dict;
}

/* 1 when the cancel event is set, 0 when not (or there is none), -1 if it raised. */
static int cancel_requested(struct progress_context *ctx)
{
	PyObject *set;
	int ret;

	if (ctx->cancel == Py_None)
		return 0;
	set = PyObject_CallMethod(ctx->cancel, "is_set", NULL);
	if (!set)
		return -1;
	ret = PyObject_IsTrue(set);
	Py_DECREF(set);
	return ret;
}

/*
 * 1 to stop: the callback said so, the event is set; -1: something raised.
 * @to_dict turns the library's progress structure @p into the callback's dict.
 */
static int call_progress(struct progress_context *ctx, PyObject *(*to_dict_fn)(const void *p),
			 const void *p)
{
	PyObject *dict, *answer;
	int stop;

	if (PyErr_CheckSignals())
		return -1;
	if (ctx->callback == Py_None)
		return cancel_requested(ctx);
	dict = to_dict_fn(p);
	if (!dict)
		return -1;
	answer = PyObject_CallOneArg(ctx->callback, dict);
	Py_DECREF(dict);
	if (!answer)
		return -1;
	stop = PyObject_IsTrue(answer);
	Py_DECREF(answer);
	/* the callback may have set the event (or had another thread set it) */
	return stop ? stop : cancel_requested(ctx);
}

/*
 * The library calls this from the thread that released the GIL; take it back
 * for the Python side. Once something raised, keep asking to stop.
 */
static int progress_tick(struct progress_context *ctx, PyObject *(*to_dict_fn)(const void *p),
			 const void *p)
{
	PyGILState_STATE gil;
	int stop;

	if (!ctx->raised[0]) {
		gil = PyGILState_Ensure();
		stop = call_progress(ctx, to_dict_fn, p);
		if (stop < 0)
			keep_raised(ctx);
		PyGILState_Release(gil);
		if (stop)
			__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&ctx->stop, __ATOMIC_RELAXED);
}

static int scrub_progress(void *arg, const struct btrfsx_scrub_progress *p)
{
	return progress_tick(arg, progress_to_dict, p);
}

/* Checks the callback and the cancel event before a call; 0, 1 (already cancelled) or -1. */
static int progress_start(struct progress_context *ctx)
{
	int stop = ctx->callback == Py_None || PyCallable_Check(ctx->callback) ?
		   cancel_requested(ctx) : -1;

	if (stop < 0 && !PyErr_Occurred())
		PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
	return stop;
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

/* ---- read-policy recommendations ---- */

#define RECOMMEND_CANDIDATE(type, name, dims) FIELD(struct btrfsx_recommend_candidate, name),
static const struct field recommend_candidate_fields[] = {
	BX_REC_CANDIDATE_FIELDS(RECOMMEND_CANDIDATE)
	END_FIELDS
};

#define RECOMMEND_DEVICE(type, name, dims) FIELD(struct btrfsx_recommend_device, name),
static const struct field recommend_device_fields[] = {
	BX_REC_DEVICE_FIELDS(RECOMMEND_DEVICE)
	END_FIELDS
};

static const struct field recommend_workload_fields[] = {
	FIELD(struct btrfsx_recommend_workload, readers),
	FIELD(struct btrfsx_recommend_workload, random),
	FIELD(struct btrfsx_recommend_workload, fastest),
	FIELD(struct btrfsx_recommend_workload, rate),
	END_FIELDS
};

#define RECOMMENDATION(type, name, dims) FIELD(struct btrfsx_recommendation, name),
static const struct field recommendation_fields[] = {
	BX_REC_RESULT_FIELDS(RECOMMENDATION)
	END_FIELDS
};

static PyObject *double_list(const double *values, size_t n)
{
	PyObject *list = PyList_New((Py_ssize_t)n);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *v = PyFloat_FromDouble(values[i]);

		if (!v) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, v);
	}
	return list;
}

static PyObject *recommendation_to_dict(const struct btrfsx_recommendation *r)
{
	PyObject *dict = to_dict(r, recommendation_fields);
	PyObject *candidates = dict ? PyList_New((Py_ssize_t)r->nr_candidates) : NULL;

	for (size_t i = 0; candidates && i < r->nr_candidates; i++) {
		const struct btrfsx_recommend_candidate *c = &r->candidates[i];
		PyObject *item = to_dict(c, recommend_candidate_fields);

		if (!item || put_new(item, "rates", double_list(c->rates, r->nr_workloads))) {
			Py_XDECREF(item);
			Py_CLEAR(candidates);
			break;
		}
		PyList_SET_ITEM(candidates, (Py_ssize_t)i, item);
	}
	if (dict && (put_new(dict, "candidates", candidates) ||
		     put_new(dict, "workloads", to_list(r->workloads, r->nr_workloads,
							sizeof(r->workloads[0]),
							recommend_workload_fields)) ||
		     put_new(dict, "devices", to_list(r->devices, r->nr_devices,
						      sizeof(r->devices[0]),
						      recommend_device_fields))))
		Py_CLEAR(dict);
	return dict;
}

struct recommend_tick {
	size_t done, total;
	double seconds;
};

static PyObject *recommend_tick_to_dict(const void *arg)
{
	const struct recommend_tick *t = arg;

	return Py_BuildValue("{s:n,s:n,s:d}", "done", (Py_ssize_t)t->done, "total",
			     (Py_ssize_t)t->total, "seconds", t->seconds);
}

static int recommend_progress(void *arg, size_t done, size_t total, double seconds)
{
	struct recommend_tick tick = { done, total, seconds };

	return progress_tick(arg, recommend_tick_to_dict, &tick);
}

/* A sequence of reader counts, or None, into @readers; -1 with an exception. */
static int reader_counts(PyObject *seq, unsigned int *readers, size_t *nr)
{
	PyObject *fast;

	*nr = 0;
	if (seq == Py_None)
		return 0;
	fast = PySequence_Fast(seq, "readers must be a sequence of counts or None");
	if (!fast)
		return -1;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
		unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));

		if (PyErr_Occurred() || *nr == BTRFSX_RECOMMEND_MAX_WORKLOADS / 2) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError, "at most 4 reader counts");
			Py_DECREF(fast);
			return -1;
		}
		readers[(*nr)++] = (unsigned int)v;
	}
	Py_DECREF(fast);
	return 0;
}

static PyObject *py_read_policy_recommend(PyObject *module, PyObject *args)
{
	PyObject *path = NULL, *sysfs_root = NULL, *config_dir = NULL, *readers_seq, *ret;
	unsigned int readers[BTRFSX_RECOMMEND_MAX_WORKLOADS / 2];
	struct btrfsx_recommend_options opts = { 0 };
	struct btrfsx_recommendation *result = NULL;
	struct progress_context ctx = { 0 };
	enum btrfsx_error err;
	int apply, stop;

	if (!PyArg_ParseTuple(args, "O&dOIpOOO&O&:read_policy_recommend", PyUnicode_FSConverter,
			      &path, &opts.seconds, &readers_seq, &opts.patterns, &apply,
			      &ctx.callback, &ctx.cancel, optional_path, &sysfs_root,
			      optional_path, &config_dir))
		return NULL;
	stop = reader_counts(readers_seq, readers, &opts.nr_readers);
	if (!stop)
		stop = progress_start(&ctx);
	if (stop < 0) {
		release_paths(path, sysfs_root, config_dir);
		return NULL;
	}
	ctx.stop = stop;
	opts.readers = opts.nr_readers ? readers : NULL;
	opts.apply = apply;
	opts.progress = recommend_progress;
	opts.progress_arg = &ctx;
	opts.cancel = &ctx.stop;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_read_policy_recommend(PyBytes_AS_STRING(path), &opts, path_or_null(sysfs_root),
					   path_or_null(config_dir), &result);
	Py_END_ALLOW_THREADS
	release_paths(path, sysfs_root, config_dir);
	if (ctx.raised[0]) {
		btrfsx_recommendation_free(result);
		restore_raised(&ctx);
		return NULL;
	}
	if (err)
		ret = raise_error(module, err, result ? recommendation_to_dict(result) : NULL);
	else
		ret = with_warnings(recommendation_to_dict(result));
	btrfsx_recommendation_free(result);
	return ret;
}

/* ---- misplaced chunks and their relocation ---- */

static PyObject *u64_list(const uint64_t *values, size_t n)
{
	PyObject *list = PyList_New((Py_ssize_t)n);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(values[i]);

		if (!v) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, v);
	}
	return list;
}

#define MISPLACED_CHUNK(type, name, dims) FIELD(struct btrfsx_misplaced_chunk, name),
static const struct field misplaced_chunk_fields[] = {
	BX_MISPLACED_CHUNK_FIELDS(MISPLACED_CHUNK)
	FIELD(struct btrfsx_misplaced_chunk, flags),
	FIELD(struct btrfsx_misplaced_chunk, cls),
	FIELD(struct btrfsx_misplaced_chunk, have_model),
	FIELD(struct btrfsx_misplaced_chunk, model_flags),
	FIELD(struct btrfsx_misplaced_chunk, model_length),
	END_FIELDS
};

#define MISPLACED_TOTALS(type, name, dims) FIELD(struct btrfsx_misplaced_totals, name),
static const struct field misplaced_totals_fields[] = {
	BX_MISPLACED_TOTALS_FIELDS(MISPLACED_TOTALS)
	END_FIELDS
};

#define MISPLACED(type, name, dims) FIELD(struct btrfsx_misplaced, name),
static const struct field misplaced_fields[] = {
	BX_MISPLACED_REPORT_FIELDS(MISPLACED)
	FIELD(struct btrfsx_misplaced, copy_rate),
	FIELD(struct btrfsx_misplaced, kernel),
	FIELD(struct btrfsx_misplaced, kernel_running),
	END_FIELDS
};

static PyObject *misplaced_chunk_to_dict(const struct btrfsx_misplaced_chunk *c)
{
	PyObject *dict = to_dict(c, misplaced_chunk_fields);

	if (dict && (put_new(dict, "devids", u64_list(c->devids, c->nr_devids)) ||
		     put_new(dict, "offending", u64_list(c->offending, c->nr_offending)) ||
		     put_new(dict, "model_devids", u64_list(c->model_devids, c->nr_model_devids))))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *misplaced_chunks_to_list(const struct btrfsx_misplaced_chunk *chunks, size_t n)
{
	PyObject *list = PyList_New((Py_ssize_t)n);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *item = misplaced_chunk_to_dict(&chunks[i]);

		if (!item) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	return list;
}

static PyObject *misplaced_to_dict(const struct btrfsx_misplaced *m)
{
	PyObject *dict = to_dict(m, misplaced_fields);

	if (dict && (put_new(dict, "forbidden", to_dict(&m->forbidden, misplaced_totals_fields)) ||
		     put_new(dict, "off_preference",
			     to_dict(&m->off_preference, misplaced_totals_fields)) ||
		     put_new(dict, "chunks", misplaced_chunks_to_list(m->chunks, m->nr_chunks))))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *py_misplaced_get(PyObject *module, PyObject *args)
{
	struct path_list list = { 0 };
	struct btrfsx_misplaced *m = NULL;
	PyObject *sysfs_root = NULL, *state_dir = NULL, *ret;
	const char *kernel = NULL;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&O&|z:misplaced_get", path_list_converter, &list,
			      optional_path, &sysfs_root, optional_path, &state_dir, &kernel))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_misplaced_get_for_kernel(list.paths, list.count, path_or_null(sysfs_root),
					      path_or_null(state_dir), kernel, &m);
	Py_END_ALLOW_THREADS
	path_list_free(&list);
	release_paths(sysfs_root, state_dir, NULL);
	ret = err ? raise_error(module, err, NULL) : with_warnings(misplaced_to_dict(m));
	btrfsx_misplaced_free(m);
	return ret;
}

#define RELOCATE_PROGRESS(type, name, dims) FIELD(struct btrfsx_relocate_progress, name),
static const struct field relocate_progress_fields[] = {
	BX_RELOCATE_PROGRESS_FIELDS(RELOCATE_PROGRESS)
	END_FIELDS
};

#define RELOCATED_NEW(type, name, dims) FIELD(struct btrfsx_relocated_new, name),
static const struct field relocated_new_fields[] = {
	BX_RELOCATE_NEW_CHUNK_FIELDS(RELOCATED_NEW)
	FIELD(struct btrfsx_relocated_new, flags),
	END_FIELDS
};

#define RELOCATED(type, name, dims) FIELD(struct btrfsx_relocated, name),
static const struct field relocated_fields[] = {
	BX_RELOCATED_FIELDS(RELOCATED)
	FIELD(struct btrfsx_relocated, flags),
	FIELD(struct btrfsx_relocated, cls),
	END_FIELDS
};

#define RELOCATE_RESULT(type, name, dims) FIELD(struct btrfsx_relocate_result, name),
static const struct field relocate_result_fields[] = {
	BX_RELOCATE_RESULT_FIELDS(RELOCATE_RESULT)
	FIELD(struct btrfsx_relocate_result, status),
	FIELD(struct btrfsx_relocate_result, fsid),
	END_FIELDS
};

static PyObject *relocated_to_dict(const struct btrfsx_relocated *r)
{
	PyObject *dict = to_dict(r, relocated_fields), *list;

	if (!dict || put_new(dict, "devids", u64_list(r->devids, r->nr_devids)))
		goto fail;
	list = PyList_New((Py_ssize_t)r->nr_new);
	for (size_t i = 0; list && i < r->nr_new; i++) {
		PyObject *item = to_dict(&r->new_chunks[i], relocated_new_fields);

		if (!item || put_new(item, "devids", u64_list(r->new_chunks[i].devids,
							      r->new_chunks[i].nr_devids))) {
			Py_XDECREF(item);
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	if (put_new(dict, "new_chunks", list))
		goto fail;
	return dict;
fail:
	Py_XDECREF(dict);
	return NULL;
}

static PyObject *relocate_result_to_dict(const struct btrfsx_relocate_result *res)
{
	PyObject *dict = to_dict(res, relocate_result_fields), *list;

	if (!dict || put_new(dict, "planned", misplaced_chunks_to_list(res->planned,
								       res->nr_planned)))
		goto fail;
	list = PyList_New((Py_ssize_t)res->nr_relocated);
	for (size_t i = 0; list && i < res->nr_relocated; i++) {
		PyObject *item = relocated_to_dict(&res->relocated[i]);

		if (!item) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	if (put_new(dict, "relocated", list))
		goto fail;
	return dict;
fail:
	Py_XDECREF(dict);
	return NULL;
}

static PyObject *relocate_progress_to_dict(const void *p)
{
	return to_dict(p, relocate_progress_fields);
}

static int relocate_progress(void *arg, const struct btrfsx_relocate_progress *p)
{
	return progress_tick(arg, relocate_progress_to_dict, p);
}

static PyObject *py_relocate_misplaced(PyObject *module, PyObject *args)
{
	struct btrfsx_relocate_options opts = { 0 };
	struct btrfsx_relocate_result *result = NULL;
	struct progress_context ctx = { 0 };
	PyObject *path = NULL, *sysfs_root = NULL, *state_dir = NULL, *ret;
	int forbidden_only, dry_run, force, stop;
	unsigned long long limit, max_bytes;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&pppKKdO&O&OOd:relocate_misplaced", PyUnicode_FSConverter,
			      &path, &forbidden_only, &dry_run, &force, &limit, &max_bytes,
			      &opts.pause, optional_path, &sysfs_root, optional_path, &state_dir,
			      &ctx.callback, &ctx.cancel, &opts.progress_interval))
		return NULL;
	stop = progress_start(&ctx);
	if (stop < 0) {
		release_paths(path, sysfs_root, state_dir);
		return NULL;
	}
	/* Already cancelled: the library stops before the first chunk. */
	ctx.stop = stop;
	opts.forbidden_only = forbidden_only;
	opts.dry_run = dry_run;
	opts.force = force;
	opts.limit = limit;
	opts.max_bytes = max_bytes;
	opts.sysfs_root = path_or_null(sysfs_root);
	opts.state_dir = path_or_null(state_dir);
	opts.progress = relocate_progress;
	opts.progress_arg = &ctx;
	opts.cancel = &ctx.stop;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_relocate_misplaced(PyBytes_AS_STRING(path), &opts, &result);
	Py_END_ALLOW_THREADS
	release_paths(path, sysfs_root, state_dir);
	if (ctx.raised[0]) {
		btrfsx_relocate_result_free(result);
		restore_raised(&ctx);
		return NULL;
	}
	if (err)
		ret = raise_error(module, err, result ? relocate_result_to_dict(result) : NULL);
	else
		ret = with_warnings(relocate_result_to_dict(result));
	btrfsx_relocate_result_free(result);
	return ret;
}

/* ---- the what-if planner ---- */

static const struct field plan_change_fields[] = {
	FIELD(struct btrfsx_plan_change, op),
	FIELD(struct btrfsx_plan_change, devid),
	FIELD(struct btrfsx_plan_change, size),
	FIELD(struct btrfsx_plan_change, hint),
	FIELD(struct btrfsx_plan_change, has_hint),
	FIELD(struct btrfsx_plan_change, data_usage_min),
	FIELD(struct btrfsx_plan_change, data_usage_max),
	FIELD(struct btrfsx_plan_change, metadata_usage_min),
	FIELD(struct btrfsx_plan_change, metadata_usage_max),
	FIELD(struct btrfsx_plan_change, flags),
	END_FIELDS
};

#define PLAN_SHORT_DEVICE(type, name, dims) FIELD(struct btrfsx_plan_short_device, name),
static const struct field plan_short_device_fields[] = {
	BX_PLAN_SHORT_DEVICE_FIELDS(PLAN_SHORT_DEVICE)
	END_FIELDS
};

#define PLAN_SHORT(type, name, dims) FIELD(struct btrfsx_plan_short, name),
static const struct field plan_short_fields[] = {
	BX_PLAN_SHORT_FIELDS(PLAN_SHORT)
	FIELD(struct btrfsx_plan_short, flags),
	END_FIELDS
};

#define PLAN_STEP(type, name, dims) FIELD(struct btrfsx_plan_step, name),
static const struct field plan_step_fields[] = {
	BX_PLAN_STEP_FIELDS(PLAN_STEP)
	FIELD(struct btrfsx_plan_step, description),
	FIELD(struct btrfsx_plan_step, status),
	END_FIELDS
};

#define PLAN_CHUNK(type, name, dims) FIELD(struct btrfsx_plan_chunk, name),
static const struct field plan_chunk_fields[] = {
	BX_PLAN_CHUNK_FIELDS(PLAN_CHUNK)
	FIELD(struct btrfsx_plan_chunk, flags),
	END_FIELDS
};

static PyObject *plan_step_to_dict(const struct btrfsx_plan_step *st)
{
	PyObject *dict = to_dict(st, plan_step_fields), *shorts;

	if (!dict || put_new(dict, "change", to_dict(&st->change, plan_change_fields)))
		goto fail;
	shorts = PyList_New((Py_ssize_t)st->nr_short);
	if (!shorts)
		goto fail;
	for (size_t i = 0; i < st->nr_short; i++) {
		const struct btrfsx_plan_short *sh = &st->shorts[i];
		PyObject *item = to_dict(sh, plan_short_fields);

		if (!item || put_new(item, "devices", to_list(sh->devices, sh->nr_devices,
							      sizeof(*sh->devices),
							      plan_short_device_fields))) {
			Py_XDECREF(item);
			Py_DECREF(shorts);
			goto fail;
		}
		PyList_SET_ITEM(shorts, (Py_ssize_t)i, item);
	}
	if (put_new(dict, "short", shorts))
		goto fail;
	return dict;
fail:
	Py_XDECREF(dict);
	return NULL;
}

static PyObject *plan_chunks_to_list(const struct btrfsx_plan_chunk *chunks, size_t n)
{
	PyObject *list = PyList_New((Py_ssize_t)n);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *item = to_dict(&chunks[i], plan_chunk_fields);

		if (!item || put_new(item, "devids", u64_list(chunks[i].devids, chunks[i].nr_devids))) {
			Py_XDECREF(item);
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	return list;
}

/* What Plan takes as it is; the rest is assembled below. */
static const struct field plan_fields[] = {
	FIELD(struct btrfsx_plan, kernel),
	FIELD(struct btrfsx_plan, kernel_running),
	END_FIELDS
};

static PyObject *plan_to_dict(const struct btrfsx_plan *plan)
{
	PyObject *dict = PyDict_New(), *steps = PyList_New((Py_ssize_t)plan->nr_steps);
	PyObject *newly = NULL, *warnings = PyList_New((Py_ssize_t)plan->nr_warnings);
	PyObject *misplaced = Py_None;

	for (size_t i = 0; steps && i < plan->nr_steps; i++) {
		PyObject *item = plan_step_to_dict(&plan->steps[i]);

		if (!item) {
			Py_CLEAR(steps);
			break;
		}
		PyList_SET_ITEM(steps, (Py_ssize_t)i, item);
	}
	for (size_t i = 0; warnings && i < plan->nr_warnings; i++) {
		PyObject *w = decode_chars(plan->warnings[i], sizeof(plan->warnings[i]));

		if (!w) {
			Py_CLEAR(warnings);
			break;
		}
		PyList_SET_ITEM(warnings, (Py_ssize_t)i, w);
	}
	if (plan->misplaced_after) {
		size_t n = plan->misplaced_after->nr_chunks;

		misplaced = misplaced_to_dict(plan->misplaced_after);
		newly = PyList_New((Py_ssize_t)n);
		for (size_t i = 0; newly && i < n; i++)
			PyList_SET_ITEM(newly, (Py_ssize_t)i, PyBool_FromLong(plan->newly_misplaced[i]));
	} else {
		Py_INCREF(Py_None);
		newly = PyList_New(0);
	}
	if (!dict || put_fields(dict, plan, plan_fields) ||
	    put_new(dict, "possible", PyBool_FromLong(plan->possible)) ||
	    put_new(dict, "steps", steps) || put_new(dict, "before", usage_to_dict(plan->before)) ||
	    put_new(dict, "after", usage_to_dict(plan->after)) ||
	    put_new(dict, "moved", plan_chunks_to_list(plan->moved, plan->nr_moved)) ||
	    put_new(dict, "created", plan_chunks_to_list(plan->created, plan->nr_created)) ||
	    put_new(dict, "misplaced_after", misplaced) || put_new(dict, "newly_misplaced", newly) ||
	    put_new(dict, "warnings", warnings)) {
		Py_XDECREF(dict);
		return NULL;
	}
	return dict;
}

/* @changes: a sequence of (op, value or None) into an array; NULL with an exception set. */
static struct btrfsx_plan_change *plan_changes(PyObject *module, PyObject *changes, size_t *nr)
{
	PyObject *seq = PySequence_Fast(changes, "changes must be a sequence of (op, value)");
	struct btrfsx_plan_change *out;
	Py_ssize_t n;

	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	out = PyMem_Calloc((size_t)n + 1, sizeof(*out));
	if (!out) {
		Py_DECREF(seq);
		PyErr_NoMemory();
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		const char *op, *value = NULL;
		enum btrfsx_error err;

		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "s|z:change", &op, &value))
			goto fail;
		err = btrfsx_plan_change_parse(op, value, &out[i]);
		if (err) {
			raise_error(module, err, NULL);
			goto fail;
		}
	}
	Py_DECREF(seq);
	*nr = (size_t)n;
	return out;
fail:
	Py_DECREF(seq);
	PyMem_Free(out);
	return NULL;
}

static PyObject *py_plan(PyObject *module, PyObject *args)
{
	struct path_list list = { 0 };
	struct btrfsx_plan_change *changes;
	struct btrfsx_plan *plan = NULL;
	PyObject *sysfs_root = NULL, *seq, *ret;
	const char *kernel = NULL;
	enum btrfsx_error err;
	size_t nr = 0;

	if (!PyArg_ParseTuple(args, "O&O&O|z:plan", path_list_converter, &list, optional_path,
			      &sysfs_root, &seq, &kernel))
		return NULL;
	changes = plan_changes(module, seq, &nr);
	if (!changes) {
		path_list_free(&list);
		Py_XDECREF(sysfs_root);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_plan_for_kernel(list.paths, list.count, path_or_null(sysfs_root), kernel,
				     changes, nr, &plan);
	Py_END_ALLOW_THREADS
	PyMem_Free(changes);
	path_list_free(&list);
	Py_XDECREF(sysfs_root);
	ret = err ? raise_error(module, err, NULL) : with_warnings(plan_to_dict(plan));
	btrfsx_plan_free(plan);
	return ret;
}

static const struct field kernel_trait_fields[] = {
	FIELD(struct btrfsx_kernel_trait, name),
	FIELD(struct btrfsx_kernel_trait, first),
	FIELD(struct btrfsx_kernel_trait, last),
	FIELD(struct btrfsx_kernel_trait, active),
	FIELD(struct btrfsx_kernel_trait, function),
	FIELD(struct btrfsx_kernel_trait, model),
	FIELD(struct btrfsx_kernel_trait, summary),
	FIELD(struct btrfsx_kernel_trait, evidence),
	FIELD(struct btrfsx_kernel_trait, test),
	FIELD(struct btrfsx_kernel_trait, unversioned),
	END_FIELDS
};

static const struct field kernel_traits_fields[] = {
	FIELD(struct btrfsx_kernel_traits, kernel),
	FIELD(struct btrfsx_kernel_traits, release),
	FIELD(struct btrfsx_kernel_traits, kernel_running),
	END_FIELDS
};

static PyObject *kernel_traits_to_dict(const struct btrfsx_kernel_traits *t)
{
	PyObject *dict = to_dict(t, kernel_traits_fields), *list = PyList_New((Py_ssize_t)t->nr_traits);

	if (!dict) {
		Py_XDECREF(list);
		return NULL;
	}
	for (size_t i = 0; list && i < t->nr_traits; i++) {
		PyObject *item = to_dict(&t->traits[i], kernel_trait_fields);

		if (!item) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, item);
	}
	if (put_new(dict, "traits", list))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *py_kernel_traits_get(PyObject *module, PyObject *args)
{
	struct btrfsx_kernel_traits *t = NULL;
	const char *kernel = NULL;
	enum btrfsx_error err;
	PyObject *ret;

	if (!PyArg_ParseTuple(args, "|z:kernel_traits_get", &kernel))
		return NULL;
	err = btrfsx_kernel_traits_get(kernel, &t);
	ret = err ? raise_error(module, err, NULL) : with_warnings(kernel_traits_to_dict(t));
	btrfsx_kernel_traits_free(t);
	return ret;
}

static PyObject *py_set_error_factory(PyObject *module, PyObject *factory)
{
	struct module_state *state = state_of(module);

	if (!PyCallable_Check(factory)) {
		PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
		return NULL;
	}
	Py_INCREF(factory);
	Py_XSETREF(state->error_factory, factory);
	Py_RETURN_NONE;
}

static PyObject *py_monitor_history(PyObject *module, PyObject *args)
{
	struct btrfsx_monitor_sample *samples = NULL;
	PyObject *db = NULL, *fs = NULL, *ret;
	long long since, until;
	size_t nr = 0;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&LL:monitor_history", optional_path, &db,
			      PyUnicode_FSConverter, &fs, &since, &until))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_monitor_history(path_or_null(db), PyBytes_AS_STRING(fs), since, until,
				     &samples, &nr);
	Py_END_ALLOW_THREADS
	release_paths(db, fs, NULL);
	if (err)
		ret = raise_error(module, err, NULL);
	else
		ret = with_warnings(to_list(samples, nr, sizeof(*samples), monitor_sample_fields));
	free(samples);
	return ret;
}

static PyObject *py_monitor_projections(PyObject *module, PyObject *args)
{
	struct btrfsx_monitor_projection *proj = NULL;
	struct path_list list = { 0 };
	PyObject *db = NULL, *result;
	long long now, window;
	size_t nr = 0;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&O&LL:monitor_projections", optional_path, &db,
			      path_list_converter, &list, &now, &window))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_monitor_projections(path_or_null(db), list.paths, list.count, now, window,
					 &proj, &nr);
	Py_END_ALLOW_THREADS
	path_list_free(&list);
	Py_XDECREF(db);
	if (err) {
		free(proj);
		return raise_error(module, err, NULL);
	}
	result = PyList_New((Py_ssize_t)nr);
	for (size_t i = 0; result && i < nr; i++) {
		PyObject *item = projection_to_dict(&proj[i]);

		if (!item) {
			Py_CLEAR(result);
			break;
		}
		PyList_SET_ITEM(result, (Py_ssize_t)i, item);
	}
	free(proj);
	return with_warnings(result);
}

static PyMethodDef methods[] = {
	{ "strerror", py_strerror, METH_VARARGS, "strerror(code) -> str" },
	{ "hint_name", py_hint_name, METH_VARARGS, "hint_name(hint) -> str or None" },
	{ "hint_parse", py_hint_parse, METH_VARARGS, "hint_parse(text, allow_number) -> int" },
	{ "fs_info_offline", py_fs_info_offline, METH_VARARGS,
	  "fs_info_offline(paths) -> (dict, warnings)" },
	{ "hint_get", py_hint_get, METH_VARARGS,
	  "hint_get(sysfs_root, device) -> (dict, warnings)" },
	{ "hint_set", py_hint_set, METH_VARARGS,
	  "hint_set(sysfs_root, device, hint, flags) -> ((before, after), warnings)" },
	{ "usage_get", py_usage_get, METH_VARARGS,
	  "usage_get(paths, sysfs_root, flags, kernel=None) -> (dict, warnings)" },
	{ "read_policy_get", py_read_policy_get, METH_VARARGS,
	  "read_policy_get(path, sysfs_root, config_dir) -> (dict, warnings)" },
	{ "read_policy_set", py_read_policy_set, METH_VARARGS,
	  "read_policy_set(path, policy, flags, sysfs_root, config_dir) -> "
	  "((dict, changed), warnings)" },
	{ "read_policy_apply", py_read_policy_apply, METH_VARARGS,
	  "read_policy_apply(path, sysfs_root, config_dir) -> (list, warnings)" },
	{ "io_stats_sample", py_io_stats_sample, METH_VARARGS,
	  "io_stats_sample(path, sysfs_root) -> (list, warnings)" },
	{ "read_policy_recommend", py_read_policy_recommend, METH_VARARGS,
	  "read_policy_recommend(path, seconds, readers, patterns, apply, progress, cancel, "
	  "sysfs_root, config_dir) -> (dict, warnings)" },
	{ "scrub_offline", py_scrub_offline, METH_VARARGS,
	  "scrub_offline(paths, readonly, no_readahead, progress, cancel, interval, memory, "
	  "metadata_only, state_dir, io_timeout) -> (dict, warnings)" },
	{ "monitor_history", py_monitor_history, METH_VARARGS,
	  "monitor_history(db, filesystem, since, until) -> (list, warnings)" },
	{ "monitor_projections", py_monitor_projections, METH_VARARGS,
	  "monitor_projections(db, filesystems, now, window) -> (list, warnings)" },
	{ "misplaced_get", py_misplaced_get, METH_VARARGS,
	  "misplaced_get(paths, sysfs_root, state_dir, kernel=None) -> (dict, warnings)" },
	{ "relocate_misplaced", py_relocate_misplaced, METH_VARARGS,
	  "relocate_misplaced(path, forbidden_only, dry_run, force, limit, max_bytes, pause, "
	  "sysfs_root, state_dir, progress, cancel, interval) -> (dict, warnings)" },
	{ "plan", py_plan, METH_VARARGS,
	  "plan(paths, sysfs_root, changes, kernel=None) -> (dict, warnings); changes: "
	  "[(op, value or None)]" },
	{ "kernel_traits_get", py_kernel_traits_get, METH_VARARGS,
	  "kernel_traits_get(kernel=None) -> (dict, warnings)" },
	{ "_set_error_factory", py_set_error_factory, METH_O,
	  "_set_error_factory(callable): how errors become exceptions" },
	{ NULL, NULL, 0, NULL }
};

static int module_traverse(PyObject *module, visitproc visit, void *arg)
{
	Py_VISIT(state_of(module)->error_factory);
	return 0;
}

static int module_clear(PyObject *module)
{
	Py_CLEAR(state_of(module)->error_factory);
	return 0;
}

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "btrfsx._btrfsx",
	.m_doc = "The C part of the btrfsx package; use the btrfsx module instead.",
	.m_size = sizeof(struct module_state),
	.m_methods = methods,
	.m_traverse = module_traverse,
	.m_clear = module_clear,
};

struct constant {
	const char *name;
	long value;
};

#define CONSTANT(name) { #name, (long)(BTRFSX_##name) }

/* The header's enums and flags, so the Python enums mirror them exactly. */
static const struct constant constants[] = {
	CONSTANT(VERSION_MAJOR), CONSTANT(VERSION_MINOR), CONSTANT(VERSION_PATCH),
	CONSTANT(OK), CONSTANT(ERROR_NO_MEMORY), CONSTANT(ERROR_INVALID_ARGUMENT),
	CONSTANT(ERROR_NOT_BTRFS), CONSTANT(ERROR_CORRUPTED), CONSTANT(ERROR_IO),
	CONSTANT(ERROR_MISSING_DEVICE), CONSTANT(ERROR_BUSY), CONSTANT(ERROR_PERMISSION),
	CONSTANT(ERROR_NOT_FOUND), CONSTANT(ERROR_OTHER), CONSTANT(ERROR_NOT_SUPPORTED),
	CONSTANT(ERROR_NOT_MOUNTED), CONSTANT(ERROR_MOUNTED), CONSTANT(ERROR_CANCELLED),
	CONSTANT(ERROR_NO_SPACE),
	CONSTANT(HINT_DATA_PREFERRED), CONSTANT(HINT_METADATA_PREFERRED),
	CONSTANT(HINT_METADATA_ONLY), CONSTANT(HINT_DATA_ONLY), CONSTANT(HINT_NONE),
	CONSTANT(HINT_IFACE_NONE), CONSTANT(HINT_IFACE_NAME), CONSTANT(HINT_IFACE_TYPE),
	CONSTANT(HINT_SET_FORCE),
	CONSTANT(USAGE_W_METADATA_LOW), CONSTANT(USAGE_W_DATA_ON_META_DEVS),
	CONSTANT(USAGE_W_HINTS_IGNORED), CONSTANT(USAGE_IGNORE_HINTS), CONSTANT(USAGE_STRICT),
	CONSTANT(READ_POLICY_IFACE_NONE), CONSTANT(READ_POLICY_IFACE_MAINLINE),
	CONSTANT(READ_POLICY_IFACE_EARLIER), CONSTANT(READ_POLICY_PERSIST),
	CONSTANT(APPLY_APPLIED), CONSTANT(APPLY_UNCHANGED), CONSTANT(APPLY_FAILED),
	CONSTANT(APPLY_NO_RECORD), CONSTANT(APPLY_NOT_MOUNTED),
	CONSTANT(RECOMMEND_SEQUENTIAL), CONSTANT(RECOMMEND_RANDOM),
	CONSTANT(MISPLACED_FORBIDDEN), CONSTANT(MISPLACED_OFF_PREFERENCE),
	CONSTANT(RELOCATE_DONE), CONSTANT(RELOCATE_LIMIT), CONSTANT(RELOCATE_DRY_RUN),
	CONSTANT(RELOCATE_CANCELLED), CONSTANT(RELOCATE_NO_ROOM), CONSTANT(RELOCATE_ENOSPC),
	CONSTANT(RELOCATE_MISPLACED_AGAIN), CONSTANT(RELOCATE_FAILED),
	CONSTANT(PLAN_ADD), CONSTANT(PLAN_REMOVE), CONSTANT(PLAN_RESIZE), CONSTANT(PLAN_HINT),
	CONSTANT(PLAN_CONVERT), CONSTANT(PLAN_REPLACE), CONSTANT(PLAN_RELOCATE),
	CONSTANT(PLAN_BALANCE), CONSTANT(PLAN_RESUME),
	CONSTANT(PLAN_POSSIBLE), CONSTANT(PLAN_IMPOSSIBLE), CONSTANT(PLAN_NOT_REACHED),
	CONSTANT(IO_TIMEOUT_NONE),
	{ NULL, 0 }
};

/*
 * Each table under the name of the Python class it fills, exported as
 * FIELDS: btrfsx/__init__.py checks at import that every class holds its
 * table's fields, so a field that reaches a table reaches the class too.
 */
static const struct {
	const char *cls;
	const struct field *fields;
} tables[] = {
	{ "FsInfo", fs_info_fields },
	{ "HintState", hint_state_fields },
	{ "Usage", usage_fields },
	{ "UsageSpace", usage_space_fields },
	{ "UsageClass", usage_class_fields },
	{ "UsageDevice", usage_device_fields },
	{ "ReadPolicy", read_policy_fields },
	{ "ApplyResult", apply_result_fields },
	{ "IoStats", io_stats_fields },
	{ "RecommendCandidate", recommend_candidate_fields },
	{ "RecommendDevice", recommend_device_fields },
	{ "RecommendWorkload", recommend_workload_fields },
	{ "Recommendation", recommendation_fields },
	{ "ScrubCounters", scrub_counter_fields },
	{ "ScrubDevice", scrub_device_fields },
	{ "ScrubError", scrub_error_fields },
	{ "ScrubFile", scrub_file_fields },
	{ "ScrubResult", scrub_result_fields },
	{ "ScrubProgress", scrub_progress_fields },
	{ "MonitorSample", monitor_sample_fields },
	{ "MonitorTrend", monitor_trend_fields },
	{ "MonitorProjection", monitor_projection_fields },
	{ "MisplacedChunk", misplaced_chunk_fields },
	{ "MisplacedTotals", misplaced_totals_fields },
	{ "Misplaced", misplaced_fields },
	{ "RelocateProgress", relocate_progress_fields },
	{ "RelocatedNewChunk", relocated_new_fields },
	{ "Relocated", relocated_fields },
	{ "RelocateResult", relocate_result_fields },
	{ "PlanChange", plan_change_fields },
	{ "PlanShortDevice", plan_short_device_fields },
	{ "PlanShort", plan_short_fields },
	{ "PlanStep", plan_step_fields },
	{ "PlanChunk", plan_chunk_fields },
	{ "Plan", plan_fields },
	{ "KernelTrait", kernel_trait_fields },
	{ "KernelTraits", kernel_traits_fields },
};

/* {class name: (field, ...)} of the tables above. */
static PyObject *field_names(void)
{
	PyObject *dict = PyDict_New();

	for (size_t i = 0; dict && i < sizeof(tables) / sizeof(tables[0]); i++) {
		PyObject *names = PyList_New(0);

		for (const struct field *f = tables[i].fields; names && f->name; f++) {
			PyObject *name = PyUnicode_FromString(f->name);

			if (!name || PyList_Append(names, name))
				Py_CLEAR(names);
			Py_XDECREF(name);
		}
		if (put_new(dict, tables[i].cls, names ? PyList_AsTuple(names) : NULL))
			Py_CLEAR(dict);
		Py_XDECREF(names);
	}
	return dict;
}

PyMODINIT_FUNC PyInit__btrfsx(void)
{
	PyObject *module = PyModule_Create(&module_def), *fields;

	for (const struct constant *c = constants; module && c->name; c++) {
		if (PyModule_AddIntConstant(module, c->name, c->value))
			Py_CLEAR(module);
	}
	fields = module ? field_names() : NULL;
	/* PyModule_AddObject() takes the reference only when it succeeds. */
	if (module && (!fields || PyModule_AddObject(module, "FIELDS", fields) < 0)) {
		Py_XDECREF(fields);
		Py_CLEAR(module);
	}
	return module;
}
