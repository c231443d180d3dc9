/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx device usage: registered in the device group (cmds/device.c). */
#ifndef BTRFSX_DEVICE_USAGE_H
#define BTRFSX_DEVICE_USAGE_H

#include "cmds/commands.h"

extern const char *const bx_device_usage_usage[];
int bx_cmd_device_usage(struct bx_ctx *ctx, int argc, char **argv);

#endif
