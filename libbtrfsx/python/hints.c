/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: allocation hints and the superblocks of an unmounted
 * filesystem (btrfsx/_hints.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "fsops/alloc-hint.h"

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

static PyMethodDef hints_methods[] = {
	{ "hint_name", py_hint_name, METH_VARARGS, "hint_name(hint) -> str or None" },
	{ "hint_parse", py_hint_parse, METH_VARARGS, "hint_parse(text, allow_number) -> int" },
	{ "fs_info_offline", py_fs_info_offline, METH_VARARGS,
	  "fs_info_offline(paths) -> (dict, warnings)" },
	{ "hint_get", py_hint_get, METH_VARARGS,
	  "hint_get(sysfs_root, device) -> (dict, warnings)" },
	{ "hint_set", py_hint_set, METH_VARARGS,
	  "hint_set(sysfs_root, device, hint, flags) -> ((before, after), warnings)" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table hints_tables[] = {
	{ "FsInfo", fs_info_fields },
	{ "HintState", hint_state_fields },
	{ NULL, NULL }
};

const struct py_area py_hints_area = { hints_methods, hints_tables };
