/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Misplaced chunks on the command line: `filesystem misplaced` (the report)
 * and the printers `balance misplaced` shares with it.
 */
#ifndef BTRFSX_CMDS_MISPLACED_H
#define BTRFSX_CMDS_MISPLACED_H

#include <stddef.h>
#include <stdint.h>

#include "cmds/commands.h"
#include "fsops/misplaced.h"

extern const char *const bx_filesystem_misplaced_usage[];
int bx_cmd_filesystem_misplaced(struct bx_ctx *ctx, int argc, char **argv);

/* "1,3" into @buf. */
void misplaced_devids_text(const uint64_t *devids, size_t n, char *buf, size_t len);
/* A JSON list of devids under @key (nothing in text). */
void misplaced_devids_json(struct bx_out *out, const char *key, const uint64_t *devids, size_t n);
/* "1:02:03" for a duration in seconds, into @buf. */
void misplaced_duration_text(double seconds, char *buf, size_t len);
/* A chunk's class, type, profile, flags, logical address, size and used bytes. */
void misplaced_print_chunk_head(struct bx_out *out, enum bx_place_class cls, uint64_t type,
				uint64_t logical, uint64_t length, uint64_t used, unsigned int units);
/* One misplaced chunk: a text line; a JSON object in a list. */
void misplaced_print_chunk(struct bx_out *out, const struct bx_misplaced_chunk *c,
			   unsigned int units);
/* The report's summary fields (not the chunk list). */
void misplaced_print_summary(struct bx_out *out, const struct bx_misplaced_report *rep,
			     unsigned int units);

#endif
