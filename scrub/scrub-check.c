/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The checks every scrubbing path shares: a data sector against its
 * checksum, a tree block as the kernel's scrub checks it.
 */
#include <string.h>

#include "format/csum.h"
#include "scrub/scrub-internal.h"

bool scrub_data_ok(const struct scrub_ctx *ctx, const uint8_t *buf, const uint8_t *csum)
{
	uint8_t got[BTRFS_CSUM_SIZE];

	if (btrfsx_csum(ctx->fs->csum_type, buf, ctx->sectorsize, got))
		return false;
	return !memcmp(got, csum, ctx->fs->csum_size);
}

/* Tree ids a tree block may belong to. */
static bool owner_valid(uint64_t owner)
{
	if (owner >= BTRFS_ROOT_TREE_OBJECTID && owner <= BTRFS_RAID_STRIPE_TREE_OBJECTID)
		return true;
	if (owner >= BTRFS_FIRST_FREE_OBJECTID && owner <= BTRFS_LAST_FREE_OBJECTID)
		return true;
	return owner == BTRFS_TREE_LOG_OBJECTID || owner == BTRFS_TREE_RELOC_OBJECTID ||
	       owner == BTRFS_DATA_RELOC_TREE_OBJECTID || owner == BTRFS_TREE_LOG_FIXUP_OBJECTID;
}

const char *scrub_tree_bad(const struct scrub_ctx *ctx, const uint8_t *buf,
			   const struct scrub_sector *head, enum bx_scrub_fault *fault)
{
	const struct btrfs_header *hdr = (const struct btrfs_header *)buf;
	struct bx_block_expect expect = { head->tree.generation, (int)head->tree.level };
	uint64_t logical = head->logical;

	/* The kernel's order, so the same damage lands in the same counter. */
	*fault = BX_SCRUB_CSUM_ERROR;
	if (le64toh(hdr->bytenr) != logical)
		return "bytenr mismatch";
	*fault = BX_SCRUB_VERIFY_ERROR;
	if (!bx_fs_block_fsid_ok(ctx->fs, hdr->fsid))
		return "fsid mismatch";
	if (ctx->have_chunk_tree_uuid &&
	    memcmp(hdr->chunk_tree_uuid, ctx->chunk_tree_uuid, BTRFS_UUID_SIZE))
		return "chunk tree uuid mismatch";
	switch (bx_check_tree_block(ctx->fs, buf, logical, &expect)) {
	case BX_EB_OK:
		break;
	case BX_EB_BAD_CSUM:
		return "checksum mismatch";
	case BX_EB_BAD_GENERATION:
		return "generation differs from the extent item";
	case BX_EB_BAD_LEVEL:
		return "level differs from the extent item";
	case BX_EB_BAD_ITEMS:
		return "item offsets out of bounds";
	case BX_EB_BAD_KEY_ORDER:
		return "keys out of order";
	default:
		return "bad header";
	}
	if (le64toh(hdr->generation) > ctx->sb_generation)
		return "generation newer than the superblock";
	if (!owner_valid(le64toh(hdr->owner)))
		return "invalid owner";
	return NULL;
}
