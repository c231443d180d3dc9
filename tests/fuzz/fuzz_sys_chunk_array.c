/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: the input is the contents of a superblock's system chunk
 * array, its length the array size (so lengths above 2048 test the size
 * check). No checksum is involved: the superblock is built in memory.
 *
 * Every item the parser hands out goes through bx_check_chunk_item and, when
 * valid, bx_chunk_map_insert into a zeroed struct bx_fs (no devices, so every
 * stripe maps to a missing device). Then a few addresses of every chunk are
 * mapped with every mirror (and invalid ones), and the map is freed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btrfs_super_block *sb;
	struct fuzz_chunk_ctx ctx = { 0 };
	struct bx_fs *fs;
	int ret;

	if (size > 2 * BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return -1;
	sb = calloc(1, sizeof(*sb));
	fs = calloc(1, sizeof(*fs));
	if (!sb || !fs)
		abort();
	memcpy(sb->sys_chunk_array, data,
	       size < BTRFS_SYSTEM_CHUNK_ARRAY_SIZE ? size : BTRFS_SYSTEM_CHUNK_ARRAY_SIZE);
	sb->sys_chunk_array_size = htole32((uint32_t)size);
	sb->sectorsize = htole32(4096);
	sb->nodesize = htole32(16384);
	fs->sectorsize = 4096;
	fs->nodesize = 16384;

	ctx.fs = fs;
	ctx.sectorsize = fs->sectorsize;
	ret = bx_parse_sys_chunk_array(sb, fuzz_sys_chunk_cb, &ctx);
	if (size > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE && (ret == 0 || ctx.nr_chunks))
		abort();   /* an oversized array must be refused before any item */
	if (fs->chunks.nr > (size_t)ctx.nr_inserted)
		abort();
	fuzz_check_map(fs);
	{
		/* Addresses taken from the input too, so the fuzzer can aim at them. */
		uint64_t extra[4] = { 0 };

		for (size_t i = 0; i < 4 && (i + 1) * 8 <= size; i++)
			memcpy(&extra[i], data + size - (i + 1) * 8, 8);
		fuzz_map_chunks(fs, extra, 4);
	}
	fuzz_chunk_map_free(fs);
	free(fs);
	free(sb);
	fuzz_reset_messages();
	return 0;
}
