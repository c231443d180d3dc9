/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx filesystem usage: registered in the filesystem group (cmds/filesystem.c). */
#ifndef BTRFSX_FILESYSTEM_USAGE_H
#define BTRFSX_FILESYSTEM_USAGE_H

#include "cmds/commands.h"

extern const char *const bx_filesystem_usage_usage[];
int bx_cmd_filesystem_usage(struct bx_ctx *ctx, int argc, char **argv);

#endif
