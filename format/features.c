/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Superblock feature bits: names and what btrfsx supports (features.h). */
#include <stdio.h>

#include "format/ctree.h"
#include "format/features.h"

#define BIT(n) (1ULL << (n))

/* mkfs.btrfs's names; bit 15 has none (it was never used). */
static const char *const incompat_names[] = {
	[0] = "mixed-backref", [1] = "default-subvol", [2] = "mixed-bg", [3] = "compress-lzo",
	[4] = "compress-zstd", [5] = "big-metadata", [6] = "extref", [7] = "raid56",
	[8] = "skinny-metadata", [9] = "no-holes", [10] = "metadata-uuid", [11] = "raid1c34",
	[12] = "zoned", [13] = "extent-tree-v2", [14] = "raid-stripe-tree", [16] = "squota",
	[17] = "remap-tree",
};

static const char *const compat_ro_names[] = {
	[0] = "free-space-tree", [1] = "free-space-tree-valid", [2] = "verity",
	[3] = "block-group-tree",
};

/*
 * What btrfsx reads. Zoned filesystems are read (the scrub refuses them on
 * its own); the extent tree v2 and the raid stripe tree change where items
 * and data are, the remap tree where logical addresses live.
 */
static const uint64_t incompat_read = BIT(0) | BIT(1) | BIT(2) | BIT(3) | BIT(4) | BIT(5) |
	BIT(6) | BIT(7) | BIT(8) | BIT(9) | BIT(10) | BIT(11) | BIT(12) | BIT(16);
/* What btrfsx may write on: every compat_ro feature it knows. */
static const uint64_t compat_ro_write = BIT(0) | BIT(1) | BIT(2) | BIT(3);

#define NAME_OF(table, bit) \
	((bit) < sizeof(table) / sizeof((table)[0]) ? (table)[bit] : NULL)

const char *bx_incompat_name(unsigned int bit)
{
	return NAME_OF(incompat_names, bit);
}

const char *bx_compat_ro_name(unsigned int bit)
{
	return NAME_OF(compat_ro_names, bit);
}

static void describe(const char *kind, const char *name, unsigned int bit, char *buf, size_t len)
{
	if (name)
		snprintf(buf, len, "%s feature %s (bit %u)", kind, name, bit);
	else
		snprintf(buf, len, "unknown %s feature bit %u", kind, bit);
}

enum bx_features_verdict bx_features_check(uint64_t incompat, uint64_t compat_ro, bool writing,
					   char *buf, size_t len)
{
	for (unsigned int bit = 0; bit < 64; bit++) {
		if (!(incompat & BIT(bit)) || (incompat_read & BIT(bit)))
			continue;
		if (BIT(bit) == BX_MKFS_INCOMPAT_UNFINISHED)
			snprintf(buf, len, "incompat bit 63 (a btrfsx mkfs that did not finish)");
		else
			describe("incompat", bx_incompat_name(bit), bit, buf, len);
		return BX_FEATURES_NO_READ;
	}
	for (unsigned int bit = 0; writing && bit < 64; bit++) {
		if ((compat_ro & BIT(bit)) && !(compat_ro_write & BIT(bit))) {
			describe("compat_ro", bx_compat_ro_name(bit), bit, buf, len);
			return BX_FEATURES_NO_WRITE;
		}
	}
	return BX_FEATURES_OK;
}
