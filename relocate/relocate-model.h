/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The relocation's decisions without the kernel (pure: structs in,
 * decisions out; tests/unit/test_relocate.c): which chunks a run moves,
 * whether the allocator model has room for them, the balance arguments that
 * move exactly one chunk, and how the chunks the kernel created compare with
 * the model. relocate.c does the I/O around them.
 */
#ifndef BTRFSX_RELOCATE_MODEL_H
#define BTRFSX_RELOCATE_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/btrfs.h>

#include "relocate/relocate.h"

/*
 * How many of @rep's chunks (forbidden first, then off-preference) the
 * options @o select, in order: forbidden_only, limit, max_bytes. *@bytes:
 * their used bytes.
 */
size_t bx_relocate_select(const struct bx_misplaced_report *rep, const struct bx_relocate_opts *o,
			  uint64_t *bytes);

/* Whether @o selects @c at all (forbidden_only). */
bool bx_relocate_selected(const struct bx_relocate_opts *o, const struct bx_misplaced_chunk *c);

/*
 * Whether the allocator model has room to move the @n chunks at @chunks of
 * @rep (read from @in), one after another: 0 when every one fits (or the
 * kernel ignores hints, and places them by its own rules), -ENOSPC with why
 * in @reason (per kind, how much more on which devices), or the model's
 * error with its message recorded.
 */
int bx_relocate_room(const struct bx_usage_input *in, const struct bx_misplaced_report *rep,
		     const struct bx_misplaced_chunk *chunks, size_t n, char *reason, size_t len);

/* The balance arguments that select exactly the chunk at @logical of @type. */
void bx_relocate_balance_args(uint64_t logical, uint64_t type, struct btrfs_ioctl_balance_args *a);

/*
 * Fills @rel->new_chunks with the chunks of @after that @before lacks, in
 * address order (the order the kernel created them), each compared with the
 * model's next chunk of its type run forward from @before (as_modelled), and
 * with @old, the chunk moved (improves). Returns 0 or a negative errno with
 * its message; @rel's arrays are the caller's to free either way.
 */
int bx_relocate_new_chunks(const struct bx_usage_input *before, const struct bx_usage_input *after,
			   const struct bx_place_chunk *old, struct bx_relocated *rel);

/* "devid 1 (metadata_only), devid 2 (...)": @m's devices whose tier for @type is @tier. */
void bx_relocate_tier_devids(const struct bx_place_model *m, uint64_t type, uint32_t tier,
			     char *buf, size_t len);

#endif
