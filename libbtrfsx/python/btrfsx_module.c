/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx: libbtrfsx for CPython. Each function converts its
 * arguments, calls the library with the GIL released, and returns plain
 * dicts, lists and a tuple of warnings; btrfsx/_<area>.py turns those into
 * dataclasses and enums. On failure the exception comes from the factory
 * btrfsx/_common.py registers, so the code-to-class mapping lives in one
 * place. This file holds what the areas share and the module itself; the
 * functions are in the areas' files (btrfsx_module.h).
 */
#include "btrfsx_module.h"

static struct module_state *state_of(PyObject *module)
{
	return PyModule_GetState(module);
}

PyObject *decode_chars(const char *chars, size_t size)
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

int put_fields(PyObject *dict, const void *base, const struct field *fields)
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

PyObject *to_dict(const void *base, const struct field *fields)
{
	PyObject *dict = PyDict_New();

	if (dict && put_fields(dict, base, fields)) {
		Py_CLEAR(dict);
	}
	return dict;
}

/* A list of dicts from an array of @count structures of @size bytes. */
PyObject *to_list(const void *array, size_t count, size_t size,
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
int put_new(PyObject *dict, const char *key, PyObject *value)
{
	int ret;

	if (!value)
		return -1;
	ret = PyDict_SetItemString(dict, key, value);
	Py_DECREF(value);
	return ret;
}

static int take_option(PyObject *value, char *p, const struct field *f, PyObject *owners)
{
	unsigned long long u;
	PyObject *bytes;
	int ret;

	switch (f->kind) {
	case K_BOOL:
		ret = PyObject_IsTrue(value);
		*(bool *)p = ret > 0;
		return ret < 0 ? -1 : 0;
	case K_DOUBLE:
		*(double *)p = PyFloat_AsDouble(value);
		return PyErr_Occurred() ? -1 : 0;
	case K_UNSIGNED:
		u = PyLong_AsUnsignedLongLong(value);
		if (PyErr_Occurred())
			return -1;
		if (f->size < sizeof(u) && u >> (8 * f->size)) {
			PyErr_Format(PyExc_OverflowError, "%s is too large", f->name);
			return -1;
		}
		switch (f->size) {
		case sizeof(uint8_t):
			*(uint8_t *)p = (uint8_t)u;
			return 0;
		case sizeof(uint16_t):
			*(uint16_t *)p = (uint16_t)u;
			return 0;
		case sizeof(uint32_t):
			*(uint32_t *)p = (uint32_t)u;
			return 0;
		default:
			*(uint64_t *)p = u;
			return 0;
		}
	case K_STR_POINTER:
		if (value == Py_None) {
			*(const char **)p = NULL;
			return 0;
		}
		if (!PyUnicode_FSConverter(value, &bytes))
			return -1;
		ret = PyList_Append(owners, bytes);
		Py_DECREF(bytes);	/* @owners holds it */
		*(const char **)p = PyBytes_AS_STRING(bytes);
		return ret;
	default:
		PyErr_Format(PyExc_SystemError, "option %s: no conversion for its type", f->name);
		return -1;
	}
}

int take_options(PyObject *dict, void *base, const struct field *fields, PyObject *owners)
{
	Py_ssize_t taken = 0;

	for (const struct field *f = fields; f->name; f++, taken++) {
		PyObject *value = PyDict_GetItemString(dict, f->name);

		if (!value) {
			PyErr_Format(PyExc_TypeError, "option %s missing", f->name);
			return -1;
		}
		if (take_option(value, (char *)base + f->offset, f, owners))
			return -1;
	}
	if (PyDict_Size(dict) != taken) {
		PyErr_Format(PyExc_TypeError, "unknown options among %R", dict);
		return -1;
	}
	return 0;
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
PyObject *raise_error(PyObject *module, enum btrfsx_error err, PyObject *partial)
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
PyObject *with_warnings(PyObject *value)
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
int optional_path(PyObject *arg, void *out)
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
void release_paths(PyObject *a, PyObject *b, PyObject *c)
{
	Py_XDECREF(a);
	Py_XDECREF(b);
	Py_XDECREF(c);
}

const char *path_or_null(PyObject *bytes)
{
	return bytes ? PyBytes_AS_STRING(bytes) : NULL;
}

void path_list_free(struct path_list *list)
{
	Py_CLEAR(list->owners);
	PyMem_Free(list->paths);
	list->paths = NULL;
}

int path_list_converter(PyObject *arg, void *out)
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

static PyObject *py_strerror(PyObject *module, PyObject *args)
{
	int err;

	if (!PyArg_ParseTuple(args, "i:strerror", &err))
		return NULL;
	return PyUnicode_FromString(btrfsx_strerror((enum btrfsx_error)err));
}

/* ---- long calls with a progress callback and a cancel event ---- */

static void keep_raised(struct progress_context *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
	ctx->raised[0] = PyErr_GetRaisedException();
#else
	PyErr_Fetch(&ctx->raised[0], &ctx->raised[1], &ctx->raised[2]);
#endif
}

void restore_raised(struct progress_context *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
	PyErr_SetRaisedException(ctx->raised[0]);
#else
	PyErr_Restore(ctx->raised[0], ctx->raised[1], ctx->raised[2]);
#endif
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
int progress_tick(struct progress_context *ctx, PyObject *(*to_dict_fn)(const void *p),
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

/* Checks the callback and the cancel event before a call; 0, 1 (already cancelled) or -1. */
int progress_start(struct progress_context *ctx)
{
	int stop = ctx->callback == Py_None || PyCallable_Check(ctx->callback) ?
		   cancel_requested(ctx) : -1;

	if (stop < 0 && !PyErr_Occurred())
		PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
	return stop;
}

/* How often the watcher of a call without progress callback looks at the event. */
#define CANCEL_WATCH_MS 100

static void *watch_cancel(void *arg)
{
	struct cancel_watch *w = arg;
	const struct timespec pause = { 0, CANCEL_WATCH_MS * 1000000L };

	while (!__atomic_load_n(&w->call_done, __ATOMIC_ACQUIRE)) {
		PyGILState_STATE gil;
		int set;

		nanosleep(&pause, NULL);
		gil = PyGILState_Ensure();
		set = cancel_requested(w->ctx);
		if (set < 0)
			keep_raised(w->ctx);
		PyGILState_Release(gil);
		if (set) {
			__atomic_store_n(&w->ctx->stop, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	return NULL;
}

int cancel_watch_start(struct cancel_watch *w, struct progress_context *ctx)
{
	int err;

	w->ctx = ctx;
	w->call_done = 0;
	w->running = false;
	if (ctx->cancel == Py_None)
		return 0;
	if (!PyObject_HasAttrString(ctx->cancel, "is_set")) {
		PyErr_SetString(PyExc_TypeError, "cancel must have is_set(), as threading.Event");
		return -1;
	}
	err = pthread_create(&w->thread, NULL, watch_cancel, w);
	if (err) {
		errno = err;
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	w->running = true;
	return 0;
}

void cancel_watch_end(struct cancel_watch *w)
{
	__atomic_store_n(&w->call_done, 1, __ATOMIC_RELEASE);
	if (w->running)
		pthread_join(w->thread, NULL);
	w->running = false;
}

/* A list of ints from @n unsigned 64-bit values. */
PyObject *u64_list(const uint64_t *values, size_t n)
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

static PyMethodDef methods[] = {
	{ "strerror", py_strerror, METH_VARARGS, "strerror(code) -> str" },
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
	CONSTANT(MAINTAIN_ROOM), CONSTANT(MAINTAIN_EMPTY), CONSTANT(MAINTAIN_MISPLACED),
	CONSTANT(MAINTAIN_NOTHING), CONSTANT(MAINTAIN_PLANNED), CONSTANT(MAINTAIN_MET),
	CONSTANT(MAINTAIN_CANNOT), CONSTANT(MAINTAIN_STOPPED), CONSTANT(MAINTAIN_FAILED),
	{ NULL, 0 }
};

/* Each area's functions and tables, in the order its Python module imports. */
static const struct py_area *const areas[] = {
	&py_hints_area, &py_usage_area, &py_read_policy_area, &py_scrub_area, &py_monitor_area,
	&py_misplaced_area, &py_plan_area, &py_kernel_area, &py_maintain_area,
};

/*
 * Each area's result tables under the name of the Python class they fill,
 * exported as FIELDS, and its option tables under the name of the function
 * that takes them, exported as OPTIONS: btrfsx/_common.py checks at import
 * that every class holds its table's fields and every function takes its
 * options, so a field that reaches a table reaches Python too.
 */
static PyObject *field_names(bool options)
{
	PyObject *dict = PyDict_New();

	for (size_t a = 0; dict && a < sizeof(areas) / sizeof(areas[0]); a++) {
		const struct py_table *t = options ? areas[a]->options : areas[a]->tables;

		for (; dict && t && t->cls; t++) {
			PyObject *names = PyList_New(0);

			for (const struct field *f = t->fields; names && f->name; f++) {
				PyObject *name = PyUnicode_FromString(f->name);

				if (!name || PyList_Append(names, name))
					Py_CLEAR(names);
				Py_XDECREF(name);
			}
			if (put_new(dict, t->cls, names ? PyList_AsTuple(names) : NULL))
				Py_CLEAR(dict);
			Py_XDECREF(names);
		}
	}
	return dict;
}

PyMODINIT_FUNC PyInit__btrfsx(void)
{
	PyObject *module = PyModule_Create(&module_def);

	for (const struct constant *c = constants; module && c->name; c++) {
		if (PyModule_AddIntConstant(module, c->name, c->value))
			Py_CLEAR(module);
	}
	for (size_t a = 0; module && a < sizeof(areas) / sizeof(areas[0]); a++) {
		if (PyModule_AddFunctions(module, areas[a]->methods))
			Py_CLEAR(module);
	}
	for (int options = 0; module && options < 2; options++) {
		PyObject *fields = field_names(options);

		/* PyModule_AddObject() takes the reference only when it succeeds. */
		if (!fields || PyModule_AddObject(module, options ? "OPTIONS" : "FIELDS", fields) < 0) {
			Py_XDECREF(fields);
			Py_CLEAR(module);
		}
	}
	return module;
}
