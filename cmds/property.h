/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Properties of btrfsx objects, btrfs-progs grammar:
 *   btrfsx property get|set|list [-t filesystem|device] <object> [<name> [<value>]]
 * Each property is one entry of the table in cmds/property.c: its name, the
 * object types it applies to, a get and a set handler and, optionally, a
 * details handler. Handlers work on one object and return 0 or a negative
 * errno with a bx_error message (or BX_EXIT_USAGE through bx_bad_value for a
 * value that does not parse). get fills the value and prints nothing
 * (property.c prints it); set prints the line saying what changed and may
 * add JSON fields (previous); details adds the JSON fields that describe the
 * value, after get and after set. Warnings go through bx_warn.
 */
#ifndef BTRFSX_PROPERTY_H
#define BTRFSX_PROPERTY_H

#include <stddef.h>

#include "cmds/commands.h"

/* Object types, a bit each. */
#define BX_PROP_FILESYSTEM (1u << 0)   /* a mount point (or a path on the filesystem) */
#define BX_PROP_DEVICE (1u << 1)       /* a block device or an image file */

struct bx_property {
	const char *name;
	unsigned int objects;          /* BX_PROP_* it applies to */
	const char *description;       /* one line, for 'property list' */
	/* Puts the value as text into @value. */
	int (*get)(struct bx_ctx *ctx, const char *object, char *value, size_t len);
	/* Sets @value; puts the value now in effect into @now. */
	int (*set)(struct bx_ctx *ctx, const char *object, const char *value, char *now,
		   size_t len);
	/* Optional: JSON fields beside the value (after get and set). */
	int (*details)(struct bx_ctx *ctx, const char *object);
};

/*
 * The property commands with the object type fixed (@objects: BX_PROP_*) or
 * chosen by -t / guessed from the object (@objects 0), for groups that offer
 * their own 'property' subcommand (btrfsx device property ...).
 */
int bx_property_get(struct bx_ctx *ctx, int argc, char **argv, unsigned int objects);
int bx_property_set(struct bx_ctx *ctx, int argc, char **argv, unsigned int objects);
int bx_property_list(struct bx_ctx *ctx, int argc, char **argv, unsigned int objects);

/* read_policy (cmds/read-policy.c). */
int bx_read_policy_prop_get(struct bx_ctx *ctx, const char *object, char *value, size_t len);
int bx_read_policy_prop_set(struct bx_ctx *ctx, const char *object, const char *value,
			    char *now, size_t len);

/* allocation_hint (cmds/alloc-hint.c). */
int bx_alloc_hint_prop_get(struct bx_ctx *ctx, const char *object, char *value, size_t len);
int bx_alloc_hint_prop_set(struct bx_ctx *ctx, const char *object, const char *value,
			   char *now, size_t len);
int bx_alloc_hint_prop_details(struct bx_ctx *ctx, const char *object);

#endif
