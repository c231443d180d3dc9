/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: the register of kernel behaviour the models follow
 * (btrfsx/_kernel.py).
 */
#include "btrfsx_module.h"

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

static PyMethodDef kernel_methods[] = {
	{ "kernel_traits_get", py_kernel_traits_get, METH_VARARGS,
	  "kernel_traits_get(kernel=None) -> (dict, warnings)" },
	{ NULL, NULL, 0, NULL }
};

static const struct py_table kernel_tables[] = {
	{ "KernelTrait", kernel_trait_fields },
	{ "KernelTraits", kernel_traits_fields },
	{ NULL, NULL }
};

const struct py_area py_kernel_area = { kernel_methods, kernel_tables };
