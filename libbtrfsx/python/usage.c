/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: filesystem usage with the hint breakdown (btrfsx/_usage.py).
 */
#include "btrfsx_module.h"

/* The engines' field lists (common/fields.h): the tables of the results they describe. */
#include "fsops/reclaim.h"
#include "fsops/usage.h"

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
	FIELD(struct btrfsx_usage, have_reclaim),
	FIELD(struct btrfsx_usage, reclaim_data_chunk_size),
	FIELD(struct btrfsx_usage, reclaim_device_bytes_below_threshold),
	END_FIELDS
};

#define USAGE_RECLAIM(type, name, dims) FIELD(struct btrfsx_usage_reclaim, name),
static const struct field usage_reclaim_fields[] = {
	BX_RECLAIM_KIND_FIELDS(USAGE_RECLAIM)
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

PyObject *usage_to_dict(const struct btrfsx_usage *usage)
{
	PyObject *dict = to_dict(usage, usage_fields);

	if (dict &&
	    (put_new(dict, "classes", to_list(usage->classes, usage->nr_classes,
					      sizeof(*usage->classes), usage_class_fields)) ||
	     put_new(dict, "devices", to_list(usage->devices, usage->nr_devices,
					      sizeof(*usage->devices), usage_device_fields)) ||
	     put_new(dict, "spaces", to_list(usage->spaces, usage->nr_spaces,
					     sizeof(*usage->spaces), usage_space_fields)) ||
	     put_new(dict, "reclaim", to_list(usage->reclaim, BX_SNAP_NR_KINDS,
					      sizeof(*usage->reclaim), usage_reclaim_fields))))
		Py_CLEAR(dict);
	return dict;
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

static PyMethodDef usage_methods[] = {
	{ "usage_get", py_usage_get, METH_VARARGS,
	  "usage_get(paths, sysfs_root, flags, kernel=None) -> (dict, warnings)" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table usage_tables[] = {
	{ "Usage", usage_fields },
	{ "UsageSpace", usage_space_fields },
	{ "UsageClass", usage_class_fields },
	{ "UsageDevice", usage_device_fields },
	{ "UsageReclaim", usage_reclaim_fields },
	{ NULL, NULL }
};

const struct py_area py_usage_area = { usage_methods, usage_tables };
