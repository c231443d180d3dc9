/*
 * btrfsx filesystem usage: registered in the filesystem group (cmds/filesystem.c);
 * its printer is also what the golden tests render (tests/unit/test_usage_tables.c).
 */
#ifndef BTRFSX_FILESYSTEM_USAGE_H
#define BTRFSX_FILESYSTEM_USAGE_H

#include <stdbool.h>

#include "cmds/commands.h"

struct bx_usage_input;
struct bx_usage_report;

extern const char *const bx_filesystem_usage_usage[];
int bx_cmd_filesystem_usage(struct bx_ctx *ctx, int argc, char **argv);

/* The whole report, text and JSON; @table: the -T layout. Returns 0 or -ENOMEM. */
int bx_filesystem_usage_print(struct bx_out *out, const struct bx_usage_input *in,
			      const struct bx_usage_report *rep, unsigned int units, bool table);

#endif
