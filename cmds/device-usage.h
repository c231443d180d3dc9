/*
 * btrfsx device usage: registered in the device group (cmds/device.c); its
 * printer is also what the golden tests render (tests/unit/test_usage_tables.c).
 */
#ifndef BTRFSX_DEVICE_USAGE_H
#define BTRFSX_DEVICE_USAGE_H

#include <stdbool.h>

#include "cmds/commands.h"

struct bx_usage_input;
struct bx_usage_report;

extern const char *const bx_device_usage_usage[];
int bx_cmd_device_usage(struct bx_ctx *ctx, int argc, char **argv);

/*
 * One filesystem's devices, an item of the "filesystems" list: per device a
 * block of lines, or with @table one table. Returns 0 or -ENOMEM.
 */
int bx_device_usage_print(struct bx_out *out, const struct bx_usage_input *in,
			  const struct bx_usage_report *rep, unsigned int units, bool table);

#endif
