/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx inspect kernel-traits: the register of kernel behaviour the models follow. */
#ifndef BTRFSX_INSPECT_KERNEL_H
#define BTRFSX_INSPECT_KERNEL_H

#include "cmds/commands.h"

extern const char *const bx_inspect_kernel_traits_usage[];
int bx_cmd_inspect_kernel_traits(struct bx_ctx *ctx, int argc, char **argv);

#endif
