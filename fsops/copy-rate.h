/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The copy rate of relocations on a filesystem: used bytes moved and seconds
 * spent in the kernel's balance calls, summed over runs, kept in
 * <state_dir>/relocate/<fsid>.json. relocate/ adds each run's figures; the
 * misplaced report (fsops/misplaced.c) estimates from them how long moving
 * its chunks takes.
 */
#ifndef BTRFSX_FSOPS_COPY_RATE_H
#define BTRFSX_FSOPS_COPY_RATE_H

#include <stdint.h>

/* 0 and *bytes = 0 when nothing was measured yet; -EUCLEAN for a damaged record. */
int bx_copy_rate_load(const char *state_dir, const uint8_t fsid[16], uint64_t *bytes,
		      double *seconds);

/* Adds one run's figures (written to a temporary file, renamed over the old one). */
int bx_copy_rate_add(const char *state_dir, const uint8_t fsid[16], uint64_t bytes,
		     double seconds);

#endif
