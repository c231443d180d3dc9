/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's space reservations (fs/btrfs/space-info.c): what it
 * overcommits metadata on, and when a reservation makes it allocate a
 * metadata chunk. Pure; the snapshot's kernel decides (model/kernel/kernel.h).
 * The relocation model's pools of free space in block groups are here too
 * (space-info.c), declared with the rest of its state in state.h.
 */
#ifndef BTRFSX_MODEL_KERNEL_SPACE_INFO_H
#define BTRFSX_MODEL_KERNEL_SPACE_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include "model/allocator.h"
#include "model/snapshot.h"

/*
 * What the kernel overcommits metadata and system reservations on
 * (calc_available_free_space()): the writable devices' @unallocated bytes
 * per copy of the profile (@ncopies), with overcommit_keeps_data_chunk
 * less the room of one data chunk (10 % of their @rw_bytes, at most 1 GiB).
 * The kernel allows half of it to a reservation that may not flush, an
 * eighth to one that may (a 64th with flush_overcommits_64th).
 */
uint64_t bx_kernel_overcommit_room(const struct bx_snapshot *in, uint64_t unallocated,
				   uint64_t rw_bytes, int ncopies);

/*
 * Whether a file's creation, with the devices' unallocated bytes as @sim
 * has them (@m the devices it runs on), makes the kernel allocate a
 * metadata chunk: its reservation fits neither in the metadata chunks
 * (@metadata_size, of @metadata_type) beside what they hold
 * (@metadata_used) and the global reserve, nor in the eighth (or 64th) of
 * bx_kernel_overcommit_room() a reservation that may flush gets; the
 * flusher then forces a chunk. Never with mixed block groups (@mixed) or
 * without a global reserve read.
 */
bool bx_kernel_metadata_must_grow(const struct bx_snapshot *in, bool mixed,
				  uint64_t metadata_used, uint64_t metadata_size,
				  uint64_t metadata_type, const struct bx_snap_model *m,
				  const struct bx_alloc_sim *sim);

#endif
