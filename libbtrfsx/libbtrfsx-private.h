/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the public entry points share: symbol visibility, the start of every
 * call and the mapping of the core's negative errno values to enum
 * btrfsx_error. Not installed.
 */
#ifndef BTRFSX_LIBBTRFSX_PRIVATE_H
#define BTRFSX_LIBBTRFSX_PRIVATE_H

#include "libbtrfsx/btrfsx.h"

/* Only what the version script lists leaves the library; this marks it in the code. */
#define PUBLIC __attribute__((visibility("default")))

/* Starts a call: the calling thread's error message and warnings are cleared. */
void bx_api_begin(void);

/*
 * BTRFSX_OK for 0; for a negative errno the code that says what went wrong,
 * the recorded error kind first (not btrfs, mounted, not mounted). A message
 * stays recorded for btrfsx_last_error_message().
 */
enum btrfsx_error bx_api_result(int ret);

/* BTRFSX_ERROR_INVALID_ARGUMENT with "@what is required" recorded. */
enum btrfsx_error bx_api_missing(const char *what);

/* BTRFSX_OK, or BTRFSX_ERROR_INVALID_ARGUMENT when @flags has bits beyond @known. */
enum btrfsx_error bx_api_check_flags(unsigned int flags, unsigned int known);

/* @sysfs_root, or "/sys" for NULL. */
const char *bx_api_sysfs_root(const char *sysfs_root);

/* @config_dir, or SYSCONFDIR "/btrfsx" for NULL. */
const char *bx_api_config_dir(const char *config_dir);

/* @state_dir, or /var/lib/btrfsx (the command's default) for NULL. */
const char *bx_api_state_dir(const char *state_dir);

/*
 * The kernel a call asks for (@kernel "MAJOR.MINOR", NULL: the running
 * one, left unchosen in @k): 0, or -EINVAL with the message. Into a
 * snapshot read after it with bx_api_kernel_use(); the result's fields
 * (version text, "" unknown; whether it is the running kernel) with
 * bx_api_kernel_fields().
 */
struct bx_kernel;
struct bx_snapshot;
int bx_api_kernel(const char *kernel, struct bx_kernel *k);
void bx_api_kernel_use(const struct bx_kernel *k, struct bx_snapshot *in);
void bx_api_kernel_fields(const struct bx_kernel *k, char version[16], bool *running);

/*
 * The public forms of the usage report (computed with @model_flags,
 * BX_USAGE_*) and of the misplaced report; NULL when out of memory. Free
 * with btrfsx_usage_free() / btrfsx_misplaced_free().
 */
struct bx_usage_report;
struct bx_misplaced_report;
struct btrfsx_usage *bx_api_usage_from(const struct bx_snapshot *in,
				       const struct bx_usage_report *rep, unsigned int model_flags);
/*
 * The kernel's reclaim into @u: the settings @settings was read with, for
 * the state @in describes (the same, or a plan's after-state).
 */
void bx_api_usage_reclaim(const struct bx_snapshot *settings, const struct bx_snapshot *in,
			  struct btrfsx_usage *u);
struct btrfsx_misplaced *bx_api_misplaced_from(const struct bx_misplaced_report *rep);

#endif
