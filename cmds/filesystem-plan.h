/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx filesystem plan: registered in the filesystem group (cmds/filesystem.c). */
#ifndef BTRFSX_FILESYSTEM_PLAN_H
#define BTRFSX_FILESYSTEM_PLAN_H

#include "cmds/commands.h"

extern const char *const bx_filesystem_plan_usage[];
int bx_cmd_filesystem_plan(struct bx_ctx *ctx, int argc, char **argv);

#endif
