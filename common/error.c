/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define ERROR_MSG_MAX 1024
#define WARNINGS_MAX 64

static _Thread_local char error_msg[ERROR_MSG_MAX];
static _Thread_local enum bx_error_kind error_kind;
static _Thread_local char *warnings[WARNINGS_MAX];
static _Thread_local size_t nr_warnings;

__attribute__((format(printf, 3, 0)))
static int record(int code, enum bx_error_kind kind, const char *fmt, va_list ap)
{
	vsnprintf(error_msg, sizeof(error_msg), fmt, ap);
	error_kind = kind;
	return code;
}

int bx_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(code, BX_ERROR_KIND_NONE, fmt, ap);
	va_end(ap);
	return code;
}

int bx_error_as(int code, enum bx_error_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(code, kind, fmt, ap);
	va_end(ap);
	return code;
}

enum bx_error_kind bx_error_last_kind(void)
{
	return error_kind;
}

int bx_error_wrap(int code, const char *fmt, ...)
{
	char previous[ERROR_MSG_MAX];
	size_t used;
	va_list ap;

	strcpy(previous, bx_error_message(code));
	va_start(ap, fmt);
	vsnprintf(error_msg, sizeof(error_msg), fmt, ap);
	va_end(ap);
	used = strlen(error_msg);
	if (used + 2 < sizeof(error_msg)) {
		memcpy(error_msg + used, ": ", 3);
		strncat(error_msg, previous, sizeof(error_msg) - used - 3);
	}
	return code;
}

int bx_error_about(int code, const char *object)
{
	size_t len = strlen(object);

	if (!strncmp(error_msg, object, len) && error_msg[len] == ':')
		return code;
	return bx_error_wrap(code, "%s", object);
}

const char *bx_error_message(int code)
{
	if (error_msg[0])
		return error_msg;
	return strerror(code < 0 ? -code : code);
}

void bx_error_clear(void)
{
	error_msg[0] = '\0';
	error_kind = BX_ERROR_KIND_NONE;
}

void bx_warn(const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (nr_warnings == WARNINGS_MAX)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return;
	/* Said once: a per-device query repeats the same warning for every member. */
	for (size_t i = 0; i < nr_warnings; i++) {
		if (!strcmp(warnings[i], msg)) {
			free(msg);
			return;
		}
	}
	warnings[nr_warnings++] = msg;
}

size_t bx_warnings_count(void)
{
	return nr_warnings;
}

const char *bx_warning(size_t i)
{
	return i < nr_warnings ? warnings[i] : NULL;
}

void bx_warnings_clear(void)
{
	while (nr_warnings > 0)
		free(warnings[--nr_warnings]);
}
