/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the files of the kernel state (state.c, block-group.c,
 * space-info.c, extent-tree.c) share among themselves and nobody else.
 */
#ifndef BTRFSX_MODEL_KERNEL_STATE_PRIVATE_H
#define BTRFSX_MODEL_KERNEL_STATE_PRIVATE_H

#include "format/ctree.h"
#include "model/kernel/state.h"

/* Data alone (not mixed): the chunks whose extents the model can know. */
static inline bool bx_ks_is_data(uint64_t type)
{
	return (type & BTRFS_BLOCK_GROUP_DATA) && !(type & BTRFS_BLOCK_GROUP_METADATA);
}

/* Grows *@arr (of @size bytes each, *@cap of them) to hold @want; 0 or -ENOMEM. */
int bx_ks_grow_array(void **arr, size_t *cap, size_t want, size_t size);
/* A free range [start, start + len) at the end of @pc's holes (len 0: only room for one). */
int bx_ks_add_hole(struct bx_ks_chunk *pc, uint64_t start, uint64_t len);
/* Frees [start, start + len) of chunk @pc again: a hole, merged with its neighbours. */
int bx_ks_restore_hole(struct bx_ks_chunk *pc, uint64_t start, uint64_t len);
/* The size class of a block group read in (btrfs_calc_block_group_size_class()). */
enum bx_ks_size_class bx_ks_sampled_class(const struct bx_ks_chunk *pc);
/* Chunks of @flags (type and profile) not gone, but for chunk @skip. */
size_t bx_ks_alike_chunks(const struct bx_kstate *s, uint64_t flags, size_t skip);
/* Adds (or with @sign -1 takes away) a chunk in the space info; empty slots go. */
int bx_ks_account(struct bx_kstate *s, uint64_t flags, uint64_t length, uint64_t used, int sign);
/* Chunk @idx leaves its pool: its free space is no longer offered. */
void bx_ks_pool_drop(struct bx_kstate *s, size_t idx);
/* Journals a take of @bytes from chunk @idx (an extent at @start when @extent). */
int bx_ks_journal(struct bx_kstate *s, size_t idx, uint64_t bytes, uint64_t start, bool extent);
/* Adds @bytes (or takes them back, @sign -1) to chunk @idx, its pool and its space info. */
void bx_ks_add_used(struct bx_kstate *s, size_t idx, uint64_t bytes, int sign);

#endif
