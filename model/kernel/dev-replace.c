/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A device replace (fs/btrfs/dev-replace.c, scrub.c scrub_enumerate_chunks()):
 * the chunks the kernel allocates while it copies the device, block group
 * by block group. See relocation.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "format/ctree.h"
#include "model/kernel/relocation.h"

/*
 * The system chunk the replace had to make (@made) while the only one with
 * room (@ro) was read-only. On Linux 6.1 the chunk tree went into it (its
 * chunk item rewrote the tree while @ro was read-only) and @ro, copied
 * empty, went at rest: seen in every such replace there (2). On 6.18 @ro
 * mostly kept the chunk tree and the new one, never used, went (6.8 and
 * later delete those, see cleans_new_block_groups): 13 of 14 aged
 * replaces; in one the tree moved as on 6.1, and the plan was 8 MiB off on
 * each device. Which happens is not on the disk (whether the tree's leaf was
 * rewritten earlier in that transaction, most likely); no kernel in between
 * was tried: replace_keeps_chunk_tree draws the line where
 * cleans_new_block_groups does.
 */
static int system_made(struct bx_kstate *s, size_t ro, size_t made)
{
	if (!bx_kernel_has(&s->in->kernel, BX_KT_REPLACE_KEEPS_CHUNK_TREE)) {
		s->chunks[made].used = s->chunks[ro].used;
		s->chunks[ro].used = 0;
		s->chunks[ro].unused_listed = true;
	}
	return bx_ks_pool_add(s, made);
}

/*
 * A replace copies the device block group by block group, each read-only
 * meanwhile (scrub). Without another system block group with room, the
 * kernel allocates one (check_system_chunk). Without another metadata block
 * group with room, whether it allocates a metadata chunk depends on a
 * transaction committing during that copy (seen both ways on the same
 * layout): the plan leaves it out and calls the replace tight.
 */
int bx_ks_replace_copy(struct bx_kstate *s, uint64_t devid, struct bx_reloc_events *ev,
		       size_t *refused)
{
	struct bx_reloc_list ml = { 0 };
	int ret;

	if (!bx_kernel_has(&s->in->kernel, BX_KT_REPLACE_COPIES_READ_ONLY))
		return 0;
	ret = bx_ks_chunks_on_device(s, devid, 0, &ml);

	bx_ks_pools_reset(s);
	for (size_t c = 0; !ret && c < s->nr_chunks; c++)
		ret = bx_ks_pool_add(s, c);
	/* Scrub goes up the device; bx_ks_chunks_on_device() lists them down. */
	for (size_t i = ml.nr; !ret && i-- > 0;) {
		size_t idx = ml.idx[i];
		uint64_t type = bx_ks_alloc_type(s, s->chunks[idx].type & BTRFS_BLOCK_GROUP_TYPE_MASK);
		long n;

		/*
		 * Copied and read-write again, an empty one goes on the cleaner's
		 * list (scrub_enumerate_chunks(): its read-only spell may have
		 * kept the cleaner from it).
		 */
		s->chunks[idx].unused_listed |= !s->chunks[idx].used;
		if (s->chunks[idx].type & BTRFS_BLOCK_GROUP_DATA)
			continue;
		bx_ks_begin_move(s, idx);
		if ((s->chunks[idx].type & BTRFS_BLOCK_GROUP_SYSTEM) &&
		    bx_ks_ro_refused(s, idx, type)) {
			/* A system chunk is never forced (btrfs_chunk_alloc() refuses): ENOSPC. */
			*refused = idx;
			ret = 1;
		} else if ((s->chunks[idx].type & BTRFS_BLOCK_GROUP_METADATA) &&
			   bx_ks_ro_refused(s, idx, type)) {
			/* btrfs_inc_block_group_ro() forces a chunk; without one, it fails. */
			n = bx_ks_alloc_chunk(s, type, NULL);
			if (n >= 0) {
				ret = bx_ks_pool_add(s, (size_t)n);
			} else if (n == -ENOSPC) {
				*refused = idx;
				ret = 1;
			} else {
				ret = (int)n;
			}
		} else if (!bx_ks_pool_free(s, type)) {
			if (s->chunks[idx].type & BTRFS_BLOCK_GROUP_METADATA) {
				ev->tight = true;
			} else {
				n = bx_ks_alloc_chunk(s, type, NULL);
				if (n >= 0)
					ret = system_made(s, idx, (size_t)n);
				else if (n != -ENOSPC)
					ret = (int)n;
			}
		}
		bx_ks_end_move(s, idx);
	}
	bx_ks_pools_reset(s);
	free(ml.idx);
	return ret;
}

/* Bytes a replace copies from @devid: each stripe there holds its share of the used bytes. */
uint64_t bx_ks_replace_copies(const struct bx_kstate *s, uint64_t devid)
{
	uint64_t bytes = 0;

	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct bx_ks_chunk *pc = &s->chunks[c];

		for (uint32_t k = 0; !pc->gone && pc->length && k < pc->num_stripes; k++)
			if (pc->stripes[k].devid == devid)
				bytes += (uint64_t)((double)pc->used * (double)pc->stripe_size /
						    (double)pc->length);
	}
	return bytes;
}

