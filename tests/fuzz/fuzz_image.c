/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: the full open path and the read-only commands on a
 * real filesystem image with fuzzed changes.
 *
 * The input picks a base image (tests/fuzz/images: every profile x checksum)
 * and lists changes to its tree blocks, superblocks and data; the harness
 * applies them to the in-memory image, recomputes the checksums of what it
 * changed (unless told not to, so the content checks are what is reached),
 * runs the commands and undoes the changes:
 *
 *   byte 0   base image (index modulo the number of images)
 *   byte 1   bits 0-2: what runs besides dump-tree (always: the open path
 *            and a walk of every tree through dump-tree's decoders): 0
 *            nothing, 1 dump-super -a -f, 2 read-file, 3 filesystem usage,
 *            4 device property get, 5 scrub -r (then its status saved and
 *            loaded), 6 the file resolution scrub does for uncorrectable
 *            data, for every data extent, 7 all of these; one at a time
 *            keeps the average input fast (scrub costs the most);
 *            bit 7: JSON output instead of text
 *   byte 2   bits 0-2: the member dump-super, usage -T and property get look
 *            at; bits 3-7: read-file's file (modulo 8) and mirror (1 + /8 % 3)
 *   then changes, each: op (u8), index (u16 LE), offset (u16 LE), length
 *   (u8: 1 + low 5 bits), that many bytes. op bits 0-1: what is changed
 *     0, 3  live tree block number <index> (modulo their number), at
 *           <offset> modulo the node size
 *     1     superblock: member <index> low byte, copy 0 (64 KiB) or 1
 *           (64 MiB) by bit 8, at <offset> modulo 4096
 *     2     data extent <index> at byte <offset> of it (no checksum is fixed)
 *   bit 2: every copy of the block (every mirror, every member's superblock)
 *   bit 3: leave the checksum stale; bit 4: XOR the bytes instead of writing
 *
 * Invariants besides "no crash": every command exits 0, 3 (scrub: errors
 * left) or with an error message; none takes the harness's own command line
 * for a usage error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz-common.h"
#include "tests/fuzz/fuzz-image.h"

#define MAX_CHANGES 64

static const unsigned int command_sets[8] = {
	0, FUZZ_CMD_DUMP_SUPER, FUZZ_CMD_READ_FILE, FUZZ_CMD_USAGE, FUZZ_CMD_PROPERTY,
	FUZZ_CMD_SCRUB, FUZZ_CMD_RESOLVE, FUZZ_CMD_ALL,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_images_init();
	return 0;
}

struct change {
	uint8_t op;
	uint16_t index;
	uint16_t offset;
	size_t len;
	const uint8_t *bytes;
};

enum { TARGET_BLOCK, TARGET_SUPER, TARGET_DATA, TARGET_BLOCK2 };
#define OP_ALL_COPIES 0x04
#define OP_STALE_CSUM 0x08
#define OP_XOR 0x10

/* Writes (or XORs) the change's bytes at @off of member @dev. */
static void put(struct fuzz_image *img, int dev, uint64_t off, const struct change *c)
{
	uint8_t buf[32];

	if (c->op & OP_XOR) {
		fuzz_dev_read(img, dev, off, buf, c->len);
		for (size_t i = 0; i < c->len; i++)
			buf[i] ^= c->bytes[i];
	} else {
		memcpy(buf, c->bytes, c->len);
	}
	fuzz_dev_write(img, dev, off, buf, c->len);
}

static void change_block(struct fuzz_image *img, const struct change *c)
{
	const struct fuzz_block *b = &img->blocks[c->index % img->nr_blocks];
	uint32_t off = c->offset % img->nodesize;
	size_t len = c->len;
	struct change cut = *c;

	if (len > img->nodesize - off)
		cut.len = img->nodesize - off;
	for (int i = 0; i < b->copies.nr; i++) {
		if (i && !(c->op & OP_ALL_COPIES))
			break;
		put(img, b->copies.at[i].dev, b->copies.at[i].physical + off, &cut);
		if (!(c->op & OP_STALE_CSUM))
			fuzz_fix_tree_block_csum(img, b->copies.at[i].dev, b->copies.at[i].physical);
	}
}

static void change_super(struct fuzz_image *img, const struct change *c)
{
	uint64_t where = btrfs_sb_offset((c->index >> 8) & 1);
	uint32_t off = c->offset % BTRFS_SUPER_INFO_SIZE;
	struct change cut = *c;

	if (cut.len > BTRFS_SUPER_INFO_SIZE - off)
		cut.len = BTRFS_SUPER_INFO_SIZE - off;
	for (int d = 0; d < img->nr_devs; d++) {
		int dev = (c->op & OP_ALL_COPIES) ? d : (c->index & 0xff) % img->nr_devs;

		if (where + BTRFS_SUPER_INFO_SIZE > img->devs[dev].size)
			break;
		put(img, dev, where + off, &cut);
		if (!(c->op & OP_STALE_CSUM))
			fuzz_fix_super_csum(img, dev, where);
		if (!(c->op & OP_ALL_COPIES))
			break;
	}
}

static void change_data(struct fuzz_image *img, const struct change *c)
{
	const struct fuzz_extent *e;
	struct fuzz_copies copies;
	uint64_t logical;
	struct change cut = *c;

	if (!img->nr_extents)
		return;
	e = &img->extents[c->index % img->nr_extents];
	logical = e->start + c->offset % e->len;
	/* Stay inside the sector: the next one may be on another device. */
	if (cut.len > img->sectorsize - logical % img->sectorsize)
		cut.len = img->sectorsize - logical % img->sectorsize;
	fuzz_map_copies(img, logical, &copies);
	for (int i = 0; i < copies.nr; i++) {
		if (i && !(c->op & OP_ALL_COPIES))
			break;
		put(img, copies.at[i].dev, copies.at[i].physical, &cut);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_image *img;
	struct fuzz_run run;
	size_t pos = 3;
	int nr = 0;

	if (size < 3)
		return -1;
	img = &fuzz_images[data[0] % fuzz_nr_images];
	run = (struct fuzz_run){
		.cmds = command_sets[data[1] & 7] | FUZZ_CMD_DUMP_TREE,
		.format = (data[1] & 0x80) ? BX_FORMAT_JSON : BX_FORMAT_TEXT,
		.member = data[2] & 7,
		.file = data[2] >> 3,
	};
	while (pos + 6 <= size && nr++ < MAX_CHANGES) {
		struct change c = {
			.op = data[pos],
			.index = (uint16_t)(data[pos + 1] | data[pos + 2] << 8),
			.offset = (uint16_t)(data[pos + 3] | data[pos + 4] << 8),
			.len = 1 + (data[pos + 5] & 31),
		};

		pos += 6;
		if (pos + c.len > size)
			break;
		c.bytes = data + pos;
		pos += c.len;
		switch (c.op & 3) {
		case TARGET_BLOCK:
		case TARGET_BLOCK2:
			change_block(img, &c);
			break;
		case TARGET_SUPER:
			change_super(img, &c);
			break;
		case TARGET_DATA:
			change_data(img, &c);
			break;
		}
	}
	fuzz_run_commands(img, &run);
	fuzz_undo();
	return 0;
}
