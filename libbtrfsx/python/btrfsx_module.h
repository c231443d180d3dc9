/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx._btrfsx, split as util-linux splits pylibmount: btrfsx_module.c
 * holds what every area shares (C structures to dicts, warnings and errors,
 * path arguments, progress callbacks with a cancel event) and the module
 * itself; each area's file (hints.c, usage.c, read-policy.c, scrub.c,
 * monitor.c, misplaced.c, plan.c, kernel.c) holds its tables, converters
 * and functions and hands them over as a struct py_area. Each area's
 * Python side is btrfsx/_<area>.py.
 */
#ifndef BTRFSX_PYTHON_MODULE_H
#define BTRFSX_PYTHON_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <btrfsx.h>

struct module_state {
	PyObject *error_factory;	/* (code, message, warnings) -> exception */
};

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

PyObject *decode_chars(const char *chars, size_t size);
int put_fields(PyObject *dict, const void *base, const struct field *fields);
PyObject *to_dict(const void *base, const struct field *fields);
/* A list of dicts from an array of @count structures of @size bytes. */
PyObject *to_list(const void *array, size_t count, size_t size, const struct field *fields);
/* Sets dict[key] = value and drops the reference to value; -1 on failure. */
int put_new(PyObject *dict, const char *key, PyObject *value);
PyObject *u64_list(const uint64_t *values, size_t n);

/*
 * Fills the options struct @base from @dict by @fields: @dict holds each
 * field, by name, and nothing else; a path (a const char * field, None for
 * NULL) keeps its bytes in the list @owners, which the caller drops after
 * the call. 0, or -1 with an exception set.
 */
int take_options(PyObject *dict, void *base, const struct field *fields, PyObject *owners);

/* ---- warnings and errors ---- */

/*
 * Raises the exception the registered factory makes for @err, with @partial
 * (what the library filled despite the error, or NULL) as its "partial"
 * attribute. Steals @partial. Always returns NULL.
 */
PyObject *raise_error(PyObject *module, enum btrfsx_error err, PyObject *partial);
/* (value, warnings), stealing @value; NULL if @value is. */
PyObject *with_warnings(PyObject *value);

/* ---- arguments ---- */

/* "O&" converter: None -> NULL, a str, bytes or path-like -> bytes. */
int optional_path(PyObject *arg, void *out);
/* Drops the converted path arguments of a call (NULL ones are fine). */
void release_paths(PyObject *a, PyObject *b, PyObject *c);
const char *path_or_null(PyObject *bytes);

/* A sequence of paths as the array the library takes. */
struct path_list {
	PyObject *owners;	/* the bytes objects the pointers point into */
	const char **paths;
	size_t count;
};

void path_list_free(struct path_list *list);
/* "O&" converter of a sequence of paths into a struct path_list. */
int path_list_converter(PyObject *arg, void *out);

/* ---- long calls with a progress callback and a cancel event ---- */

struct progress_context {
	PyObject *callback;	/* None or a callable taking the progress dict */
	PyObject *cancel;	/* None or an object with is_set(), e.g. threading.Event */
	volatile sig_atomic_t stop;	/* the library's cancel flag, stored atomically */
	/* what the callback raised (or a signal did): re-raised after the call */
	PyObject *raised[3];
};

/* Checks the callback and the cancel event before a call; 0, 1 (already cancelled) or -1. */
int progress_start(struct progress_context *ctx);
/*
 * The library's progress callback body, called from the thread that
 * released the GIL: @to_dict_fn turns the library's progress structure @p
 * into the callback's dict. Returns the library's stop flag.
 */
int progress_tick(struct progress_context *ctx, PyObject *(*to_dict_fn)(const void *p),
		  const void *p);
/* Raises again what the callback raised during the call. */
void restore_raised(struct progress_context *ctx);

/*
 * For a call without a progress callback: a thread beside it that takes
 * the GIL every CANCEL_WATCH_MS and sets @ctx->stop once the cancel event
 * is set. Start it holding the GIL (0, or -1 with an exception set); end
 * it after the call, before the GIL is taken back.
 */
struct cancel_watch {
	struct progress_context *ctx;
	volatile int call_done;
	pthread_t thread;
	bool running;
};

int cancel_watch_start(struct cancel_watch *w, struct progress_context *ctx);
void cancel_watch_end(struct cancel_watch *w);

/* ---- the areas ---- */

/* A table under the name of the Python class it fills or the function it serves. */
struct py_table {
	const char *cls;
	const struct field *fields;
};

/*
 * An area's functions, the tables of its results (exported as FIELDS) and
 * of the options its functions take (OPTIONS, or NULL for none), each list
 * ending with an empty entry.
 */
struct py_area {
	PyMethodDef *methods;
	const struct py_table *tables;
	const struct py_table *options;
};

/* The results that more than one area returns. */
PyObject *usage_to_dict(const struct btrfsx_usage *usage);
PyObject *misplaced_to_dict(const struct btrfsx_misplaced *m);
PyObject *misplaced_chunks_to_list(const struct btrfsx_misplaced_chunk *chunks, size_t n);

extern const struct py_area py_hints_area, py_usage_area, py_read_policy_area, py_scrub_area,
	py_monitor_area, py_misplaced_area, py_plan_area, py_kernel_area, py_maintain_area;

#endif
