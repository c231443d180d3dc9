/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: the what-if planner (btrfsx/_plan.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "plan/plan.h"

#define PLAN_CHANGE(type, name, dims) FIELD(struct btrfsx_plan_change, name),
static const struct field plan_change_fields[] = {
	FIELD(struct btrfsx_plan_change, op),
	BX_PLAN_CHANGE_FIELDS(PLAN_CHANGE)
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

static PyMethodDef plan_methods[] = {
	{ "plan", py_plan, METH_VARARGS,
	  "plan(paths, sysfs_root, changes, kernel=None) -> (dict, warnings); changes: "
	  "[(op, value or None)]" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table plan_tables[] = {
	{ "PlanChange", plan_change_fields },
	{ "PlanShortDevice", plan_short_device_fields },
	{ "PlanShort", plan_short_fields },
	{ "PlanStep", plan_step_fields },
	{ "PlanChunk", plan_chunk_fields },
	{ "Plan", plan_fields },
	{ NULL, NULL }
};

const struct py_area py_plan_area = { plan_methods, plan_tables };
