/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The misplaced report as `filesystem misplaced`, the relocation engine and
 * the library show it: the model's (model/misplaced.h) with the time a
 * relocation would take at the measured copy rate (fsops/copy-rate.h).
 * Library style: no printing, functions return 0 or a negative errno with a
 * message recorded.
 */
#ifndef BTRFSX_MISPLACED_H
#define BTRFSX_MISPLACED_H

#include "model/misplaced.h"

/*
 * bx_misplaced_classify() with the estimates from the copy rate recorded
 * in @state_dir (NULL: no rate, no estimate), and a warning when the kernel
 * ignores the hints. Release with bx_misplaced_report_release(). Returns
 * 0, -EINVAL or -ENOMEM.
 */
int bx_misplaced_compute(const struct bx_snapshot *in, const char *state_dir,
			 struct bx_misplaced_report *rep);

#endif
