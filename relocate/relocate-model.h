/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The relocation's decisions without the kernel (pure: structs in,
 * decisions out; tests/unit/test_relocate.c): whether the allocator model
 * has room for the chunks a run moves (which ones: model/policy.h), said
 * for people, and how the chunks the kernel created compare with the
 * model. relocate.c does the I/O around them.
 */
#ifndef BTRFSX_RELOCATE_MODEL_H
#define BTRFSX_RELOCATE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "relocate/relocate.h"

/*
 * Whether the allocator model has room to move the @n chunks at @chunks of
 * @rep (read from @in), one after another: 0 when every one fits (or the
 * kernel ignores hints, and places them by its own rules), -ENOSPC with why
 * in @reason (per kind, how much more on which devices), or the model's
 * error with its message recorded.
 */
int bx_relocate_room(const struct bx_snapshot *in, const struct bx_misplaced_report *rep,
		     const struct bx_misplaced_chunk *chunks, size_t n, char *reason, size_t len);

/*
 * Fills @rel->new_chunks with the chunks of @after that @before lacks, in
 * address order (the order the kernel created them), each compared with the
 * model's next chunk of its type run forward from @before (as_modelled), and
 * with @old, the chunk moved (improves). Returns 0 or a negative errno with
 * its message; @rel's arrays are the caller's to free either way.
 */
int bx_relocate_new_chunks(const struct bx_snapshot *before, const struct bx_snapshot *after,
			   const struct bx_place_chunk *old, struct bx_relocated *rel);

/* "devid 1 (metadata_only), devid 2 (...)": @m's devices whose tier for @type is @tier. */
void bx_relocate_tier_devids(const struct bx_place_model *m, uint64_t type, uint32_t tier,
			     char *buf, size_t len);

#endif
