/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Field lists: a result the library publishes is described once, in its
 * engine's header, as a list of its fields, and everything that has to
 * follow the fields is made from that list (Documentation/dev/architecture.md,
 * "Public API"):
 *
 *	#define BX_SCRUB_COUNTERS_FIELDS(X) \
 *		X(uint64_t, read_errors, ) \
 *		X(char, label, [256])
 *
 * Each X(type, name, dims) is one field: its C type, its name (the same in
 * the engine, in libbtrfsx/btrfsx.h and in Python) and its array dimensions,
 * empty for a scalar. From the list come
 * - the engine's struct, members declared with BX_FIELD_MEMBER;
 * - libbtrfsx's copy into the documented public struct, with BX_FIELD_COPY,
 *   which fails to compile when the public struct lacks the field or gives
 *   it another type: a field added to the engine's list reaches the public
 *   header, or the build stops;
 * - the Python module's table of the public struct, so it reaches Python too;
 * - any other per-field table (the scrub status file's counters).
 *
 * Options a caller hands in are described the same way, in the other
 * direction: the library takes each listed option from the documented
 * public struct with BX_FIELD_TAKE (which stops the build when the public
 * struct lacks it), and the Python module fills the public struct from a
 * dict of the function's keyword arguments by a table made from the list,
 * which the Python function's signature is checked against at import.
 */
#ifndef BTRFSX_COMMON_FIELDS_H
#define BTRFSX_COMMON_FIELDS_H

#include <string.h>

#define BX_FIELD_MEMBER(type, name, dims) type name dims;

/*
 * Copies field @name from `in` (the engine's struct) to `out` (the public
 * struct): the caller names its two pointers so.
 */
#define BX_FIELD_COPY(type, name, dims)                                               \
	_Static_assert(__builtin_types_compatible_p(__typeof__(out->name), type dims), \
		       "the public struct's " #name " is not a " #type #dims);          \
	memcpy(&out->name, &in->name, sizeof(out->name));

/*
 * Takes option @name from `in` (the public struct) into `out` (the engine's
 * struct): the caller names its two pointers so.
 */
#define BX_FIELD_TAKE(type, name, dims)                                               \
	_Static_assert(__builtin_types_compatible_p(__typeof__(in->name), type dims),  \
		       "the public struct's " #name " is not a " #type #dims);          \
	memcpy(&out->name, &in->name, sizeof(out->name));

#endif
