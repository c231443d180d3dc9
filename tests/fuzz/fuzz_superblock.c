/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: the input is a 4096-byte superblock copy.
 *
 * The bytes are written into a memfd at the offset of the copy they claim to
 * be (the primary at 64 KiB unless bytenr names copy 1 or 2) and read back
 * with bx_read_super_copy, the validation every open goes through. Most
 * mutated inputs fail the checksum, so a copy with the checksum recomputed
 * (for the csum_type the input names) is validated too: that reaches the
 * bytenr check and, when the copy is accepted, the system chunk array parser,
 * bx_check_chunk_item on every chunk, the chunk map and the logical mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/csum.h"
#include "tests/fuzz/fuzz-common.h"

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("fuzz-superblock", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		abort();
	}
	return 0;
}

static void parse_chunks(const struct btrfs_super_block *sb)
{
	struct bx_fs *fs = calloc(1, sizeof(*fs));
	struct fuzz_chunk_ctx ctx = { 0 };

	if (!fs)
		abort();
	fs->sectorsize = le32toh(sb->sectorsize);
	fs->nodesize = le32toh(sb->nodesize);
	ctx.fs = fs;
	ctx.sectorsize = fs->sectorsize;
	bx_parse_sys_chunk_array(sb, fuzz_sys_chunk_cb, &ctx);
	if (ctx.nr_inserted > ctx.nr_valid || ctx.nr_valid > ctx.nr_chunks ||
	    fs->chunks.nr > (size_t)ctx.nr_inserted)
		abort();
	fuzz_check_map(fs);
	{
		/* Where the superblock says the trees are. */
		const uint64_t extra[] = { le64toh(sb->root), le64toh(sb->chunk_root),
					   le64toh(sb->log_root), le64toh(sb->block_group_root) };

		fuzz_map_chunks(fs, extra, sizeof(extra) / sizeof(extra[0]));
	}
	fuzz_chunk_map_free(fs);
	free(fs);
}

/* Writes @sb where copy @mirror lives and validates it as bx_fs_open would. */
static enum bx_sb_status validate(const struct btrfs_super_block *sb, int mirror)
{
	uint64_t offset = btrfs_sb_offset(mirror);
	uint64_t dev_size = offset + BTRFS_SUPER_INFO_SIZE;
	struct btrfs_super_block *copy = malloc(sizeof(*copy));
	enum bx_sb_status status;

	if (!copy)
		abort();
	/* A sparse file of the size of a device just large enough for the copy. */
	if (ftruncate(memfd, (off_t)dev_size) ||
	    pwrite(memfd, sb, sizeof(*sb), (off_t)offset) != (ssize_t)sizeof(*sb))
		abort();
	status = bx_read_super_copy(memfd, dev_size, mirror, copy, BX_IO_TIMEOUT_DEFAULT);
	if (status == BX_SB_OK) {
		if (memcmp(copy, sb, sizeof(*sb)))
			abort();
		parse_chunks(copy);
	}
	/* A device one byte too short has no room for this copy. */
	if (bx_read_super_copy(memfd, dev_size - 1, mirror, copy, BX_IO_TIMEOUT_DEFAULT) !=
	    BX_SB_BEYOND_DEVICE)
		abort();
	free(copy);
	return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btrfs_super_block *sb;
	enum bx_sb_status status;
	int mirror = 0;
	size_t csum_size;

	if (size > 2 * BTRFS_SUPER_INFO_SIZE)
		return -1;   /* not worth keeping in the corpus */
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		abort();
	memcpy(sb, data, size < sizeof(*sb) ? size : sizeof(*sb));
	for (int i = 1; i < BTRFS_SUPER_MIRROR_MAX; i++)
		if (le64toh(sb->bytenr) == btrfs_sb_offset(i))
			mirror = i;

	status = validate(sb, mirror);
	if (status == BX_SB_BAD_CSUM) {
		/* Make the checksum right so the checks after it are reached. */
		csum_size = btrfsx_csum_size(le16toh(sb->csum_type));
		if (!csum_size ||
		    btrfsx_csum(le16toh(sb->csum_type), (uint8_t *)sb + BTRFS_CSUM_SIZE,
				BTRFS_SUPER_INFO_SIZE - BTRFS_CSUM_SIZE, sb->csum))
			abort();   /* BAD_CSUM means the type was known */
		status = validate(sb, mirror);
		if (status == BX_SB_BAD_CSUM || status == BX_SB_BAD_CSUM_TYPE ||
		    status == BX_SB_BAD_MAGIC)
			abort();   /* a recomputed checksum must verify */
	}
	free(sb);
	fuzz_reset_messages();
	return 0;
}
