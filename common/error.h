/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Errors with context. Library code returns a negative errno and records a
 * message saying what failed and why; callers may prepend their own context.
 * Only the command line prints it, once. Warnings collect the same way and
 * are drained by whoever presents them. Both are per thread, like errno.
 *
 * The rules that keep this per-thread state honest (Documentation/dev/
 * architecture.md, "Errors and warnings"):
 *  - the message belongs to the failure being returned: read it with the
 *    code that failure returned (bx_error_message(ret)), right away;
 *  - a caller that handles a failure and goes on clears it there
 *    (bx_error_clear(), with a comment saying why it is not an error);
 *  - a warning is recorded once however often it is said, and nothing
 *    removes warnings but the presenter (no undo);
 *  - worker threads record neither: they report through the results they
 *    hand back, because nobody drains their thread's state.
 */
#ifndef BTRFSX_ERROR_H
#define BTRFSX_ERROR_H

#include <stddef.h>

/* Records "message" for a failure with negative errno @code; returns @code. */
int bx_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Prepends "context: " to the recorded message (or to strerror(-code) if
 * nothing was recorded); returns @code.
 */
int bx_error_wrap(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * What a failure means beyond its errno, for the public library's error
 * codes; the command line keeps the plain errno (and its exit status).
 */
enum bx_error_kind {
	BX_ERROR_KIND_NONE,
	BX_ERROR_KIND_NOT_BTRFS,	/* no btrfs superblock, or not on a mounted btrfs */
	BX_ERROR_KIND_MOUNTED,		/* needs an unmounted filesystem */
	BX_ERROR_KIND_NOT_MOUNTED,	/* needs a mounted filesystem */
	BX_ERROR_KIND_NO_SPACE,		/* the devices lack room (not a guard rail's refusal) */
};

/* bx_error() that also records @kind; bx_error_wrap() keeps the kind, bx_error() resets it. */
int bx_error_as(int code, enum bx_error_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
enum bx_error_kind bx_error_last_kind(void);

/*
 * Prepends "@object: " unless the recorded message already begins with it
 * (the failure was reported about @object further down); returns @code.
 */
int bx_error_about(int code, const char *object);

/* The recorded message, or strerror(-code) if there is none. */
const char *bx_error_message(int code);
void bx_error_clear(void);

/* Records a warning for the caller to present; one already pending is not repeated. */
void bx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Number of pending warnings and the i-th one; valid until bx_warnings_clear(). */
size_t bx_warnings_count(void);
const char *bx_warning(size_t i);
void bx_warnings_clear(void);

#endif
