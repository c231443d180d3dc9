/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: read policies, their recommendation and the block devices'
 * read counters (btrfsx/_read_policy.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "fsops/io-stats.h"
#include "recommend/recommend.h"

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

static PyMethodDef read_policy_methods[] = {
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
	{ NULL, NULL, 0, NULL }
};

static const struct py_table read_policy_tables[] = {
	{ "ReadPolicy", read_policy_fields },
	{ "ApplyResult", apply_result_fields },
	{ "IoStats", io_stats_fields },
	{ "RecommendCandidate", recommend_candidate_fields },
	{ "RecommendDevice", recommend_device_fields },
	{ "RecommendWorkload", recommend_workload_fields },
	{ "Recommendation", recommendation_fields },
	{ NULL, NULL }
};

const struct py_area py_read_policy_area = { read_policy_methods, read_policy_tables };
