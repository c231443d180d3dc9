/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: the maintain engine's plan and run (btrfsx/_maintain.py).
 */
#include "btrfsx_module.h"

/* The engine's field lists (common/fields.h): the tables of the results they describe. */
#include "maintain/maintain.h"

#define MAINTAIN_CHUNK(type, name, dims) FIELD(struct btrfsx_maintain_chunk, name),
static const struct field maintain_chunk_fields[] = {
	BX_MAINTAIN_CHUNK_FIELDS(MAINTAIN_CHUNK)
	FIELD(struct btrfsx_maintain_chunk, reason),
	END_FIELDS
};

#define MAINTAIN_STATE(type, name, dims) FIELD(struct btrfsx_maintain_state, name),
static const struct field maintain_state_fields[] = {
	BX_MAINTAIN_STATE_FIELDS(MAINTAIN_STATE)
	END_FIELDS
};

#define MAINTAIN_RESULT(type, name, dims) FIELD(struct btrfsx_maintain_result, name),
static const struct field maintain_result_fields[] = {
	BX_MAINTAIN_RESULT_FIELDS(MAINTAIN_RESULT)
	BX_MAINTAIN_PLAN_FIELDS(MAINTAIN_RESULT)
	FIELD(struct btrfsx_maintain_result, status),
	END_FIELDS
};

static PyObject *maintain_result_to_dict(const struct btrfsx_maintain_result *r)
{
	PyObject *dict = to_dict(r, maintain_result_fields);

	if (dict && (put_new(dict, "before", to_dict(&r->before, maintain_state_fields)) ||
		     put_new(dict, "after", to_dict(&r->after, maintain_state_fields)) ||
		     put_new(dict, "final", to_dict(&r->final, maintain_state_fields)) ||
		     put_new(dict, "actions", to_list(r->actions, r->nr_actions, sizeof(*r->actions),
						      maintain_chunk_fields)) ||
		     put_new(dict, "moved", to_list(r->moved, r->nr_moved, sizeof(*r->moved),
						    maintain_chunk_fields))))
		Py_CLEAR(dict);
	return dict;
}

static PyObject *py_maintain(PyObject *module, PyObject *args)
{
	struct btrfsx_maintain_options opts = { 0 };
	struct btrfsx_maintain_result *result = NULL;
	struct progress_context ctx = { .callback = Py_None };
	struct cancel_watch watch;
	PyObject *path = NULL, *policy = NULL, *sysfs_root = NULL, *state_dir = NULL, *ret;
	int plan_only = 0, stop;
	enum btrfsx_error err;

	if (!PyArg_ParseTuple(args, "O&pO&dO&O&O:maintain", PyUnicode_FSConverter, &path,
			      &plan_only, optional_path, &policy, &opts.pace, optional_path,
			      &sysfs_root, optional_path, &state_dir, &ctx.cancel)) {
		release_paths(path, policy, sysfs_root);
		release_paths(state_dir, NULL, NULL);
		return NULL;
	}
	stop = progress_start(&ctx);
	if (stop >= 0 && cancel_watch_start(&watch, &ctx))
		stop = -1;
	if (stop < 0) {
		release_paths(path, policy, sysfs_root);
		release_paths(state_dir, NULL, NULL);
		return NULL;
	}
	/* Already set: the run stops before its first chunk. */
	ctx.stop = stop;
	opts.plan_only = plan_only;
	opts.policy_file = path_or_null(policy);
	opts.sysfs_root = path_or_null(sysfs_root);
	opts.state_dir = path_or_null(state_dir);
	opts.cancel = &ctx.stop;
	Py_BEGIN_ALLOW_THREADS
	err = btrfsx_maintain(PyBytes_AS_STRING(path), &opts, &result);
	cancel_watch_end(&watch);
	Py_END_ALLOW_THREADS
	release_paths(path, policy, sysfs_root);
	release_paths(state_dir, NULL, NULL);
	if (ctx.raised[0]) {
		btrfsx_maintain_result_free(result);
		restore_raised(&ctx);
		return NULL;
	}
	if (err)
		ret = raise_error(module, err, result ? maintain_result_to_dict(result) : NULL);
	else
		ret = with_warnings(maintain_result_to_dict(result));
	btrfsx_maintain_result_free(result);
	return ret;
}

static PyMethodDef maintain_methods[] = {
	{ "maintain", py_maintain, METH_VARARGS,
	  "maintain(path, plan_only, policy_file, pace, sysfs_root, state_dir, cancel) -> "
	  "(dict, warnings)" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table maintain_tables[] = {
	{ "MaintainChunk", maintain_chunk_fields },
	{ "MaintainState", maintain_state_fields },
	{ "MaintainResult", maintain_result_fields },
	{ NULL, NULL }
};

const struct py_area py_maintain_area = { maintain_methods, maintain_tables };
