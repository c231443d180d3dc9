/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: misplaced chunks and their relocation with its progress
 * callback and cancel event (btrfsx/_misplaced.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "relocate/relocate.h"

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

PyObject *misplaced_chunks_to_list(const struct btrfsx_misplaced_chunk *chunks, size_t n)
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

PyObject *misplaced_to_dict(const struct btrfsx_misplaced *m)
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

/* The options relocate_misplaced() passes as they are, from the engine's list. */
#define RELOCATE_OPTION(type, name, dims) FIELD(struct btrfsx_relocate_options, name),
static const struct field relocate_option_fields[] = {
	BX_RELOCATE_OPTS_FIELDS(RELOCATE_OPTION)
	END_FIELDS
};

static PyObject *py_relocate_misplaced(PyObject *module, PyObject *args)
{
	struct btrfsx_relocate_options opts = { 0 };
	struct btrfsx_relocate_result *result = NULL;
	struct progress_context ctx = { 0 };
	PyObject *path = NULL, *options, *owners = NULL, *ret;
	enum btrfsx_error err;
	int stop;

	if (!PyArg_ParseTuple(args, "O&O!OO:relocate_misplaced", PyUnicode_FSConverter, &path,
			      &PyDict_Type, &options, &ctx.callback, &ctx.cancel))
		return NULL;
	owners = PyList_New(0);
	stop = owners ? take_options(options, &opts, relocate_option_fields, owners) : -1;
	if (!stop)
		stop = progress_start(&ctx);
	if (stop < 0) {
		release_paths(path, owners, NULL);
		return NULL;
	}
	/* Already cancelled: the library stops before the first chunk. */
	ctx.stop = stop;
	opts.progress = relocate_progress;
	opts.progress_arg = &ctx;
	opts.cancel = &ctx.stop;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_relocate_misplaced(PyBytes_AS_STRING(path), &opts, &result);
	Py_END_ALLOW_THREADS
	release_paths(path, owners, NULL);
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

static PyMethodDef misplaced_methods[] = {
	{ "misplaced_get", py_misplaced_get, METH_VARARGS,
	  "misplaced_get(paths, sysfs_root, state_dir, kernel=None) -> (dict, warnings)" },
	{ "relocate_misplaced", py_relocate_misplaced, METH_VARARGS,
	  "relocate_misplaced(path, options, progress, cancel) -> (dict, warnings); options: "
	  "{name: value} of OPTIONS['relocate_misplaced']" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table misplaced_tables[] = {
	{ "MisplacedChunk", misplaced_chunk_fields },
	{ "MisplacedTotals", misplaced_totals_fields },
	{ "Misplaced", misplaced_fields },
	{ "RelocateProgress", relocate_progress_fields },
	{ "RelocatedNewChunk", relocated_new_fields },
	{ "Relocated", relocated_fields },
	{ "RelocateResult", relocate_result_fields },
	{ NULL, NULL }
};

static const struct py_table misplaced_options[] = {
	{ "relocate_misplaced", relocate_option_fields },
	{ NULL, NULL }
};

const struct py_area py_misplaced_area = {
	.methods = misplaced_methods,
	.tables = misplaced_tables,
	.options = misplaced_options,
};
