/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: the monitor's history and projections (btrfsx/_monitor.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "monitor/sample.h"

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

static PyMethodDef monitor_methods[] = {
	{ "monitor_history", py_monitor_history, METH_VARARGS,
	  "monitor_history(db, filesystem, since, until) -> (list, warnings)" },
	{ "monitor_projections", py_monitor_projections, METH_VARARGS,
	  "monitor_projections(db, filesystems, now, window) -> (list, warnings)" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table monitor_tables[] = {
	{ "MonitorSample", monitor_sample_fields },
	{ "MonitorTrend", monitor_trend_fields },
	{ "MonitorProjection", monitor_projection_fields },
	{ NULL, NULL }
};

const struct py_area py_monitor_area = { monitor_methods, monitor_tables };
