/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One run of a kind per filesystem at a time: a lock file,
 * <state_dir>/<kind>/<fsid>.lock, held with flock(2) while a run that
 * changes the filesystem goes on (balance misplaced; maintain run).
 *
 * The rule: a run that changes nothing (a dry run, a plan) takes no lock
 * file and creates nothing in the state directory. It only asks whether a
 * real run holds the lock, so that it can say a real run would be refused,
 * and leaves the state directory as it found it.
 */
#ifndef BTRFSX_RUN_LOCK_H
#define BTRFSX_RUN_LOCK_H

#include <stdbool.h>

/*
 * Takes the lock of @kind ("relocate") for the filesystem @fsid (its uuid
 * as text) in @state_dir, creating the directory and the file as needed.
 * Returns 0 with *@fd held until closed, -EBUSY when another run holds it,
 * or another negative errno (with the message) when the file cannot be
 * made or opened.
 */
int bx_run_lock_take(const char *state_dir, const char *kind, const char *fsid, int *fd);

/*
 * Whether a run holds that lock now, without creating anything: no lock
 * file is no run. Returns 0 and *@held, or a negative errno with the
 * message when the file exists but cannot be opened.
 */
int bx_run_lock_held(const char *state_dir, const char *kind, const char *fsid, bool *held);

#endif
