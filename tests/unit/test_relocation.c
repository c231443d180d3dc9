/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the kernel's relocation in one call
 * (model/kernel/relocation.c bx_relocation_predict()), what the maintain
 * engine asks before it moves chunks: the chunks moved, the ones made for
 * them, the ones without room, and the filesystem afterwards.
 */
#include <errno.h>
#include <string.h>

#include "common/error.h"
#include "model/kernel/relocation.h"
#include "tests/unit/unit.h"
#include "tests/unit/snapshot-fixture.h"

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM

static size_t data_chunks(const struct bx_snapshot *in)
{
	size_t n = 0;

	for (size_t i = 0; i < in->nr_chunks; i++)
		n += !!(in->chunks[i].type & DATA);
	return n;
}

/* A half-full data chunk fills the free half of the other: nothing new, one chunk less. */
static void test_into_free_space(void)
{
	struct bx_reloc_prediction out;
	struct bx_snapshot after;
	uint64_t first;
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 512 * MiB);
	first = f.in.chunks[2].logical;
	CHECK(bx_relocation_predict(&f.in, &first, 1, false, &after, &out) == 0);
	CHECK(out.moved == 1 && out.moved_bytes == 512 * MiB && out.created == 0 && !out.failed);
	CHECK(data_chunks(&after) == 1 && after.chunks_used_known);
	CHECK_EQ_U64(after.chunks[after.nr_chunks - 1].used, 1 * GiB);
	bx_snapshot_release(&after);
	bx_snapshot_release(&f.in);
}

/* Full chunks need new ones; both move and the new ones stay. */
static void test_new_chunks(void)
{
	struct bx_reloc_prediction out;
	struct bx_snapshot after;
	uint64_t both[2];
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 1 * GiB);
	both[0] = f.in.chunks[3].logical;
	both[1] = f.in.chunks[2].logical;
	CHECK(bx_relocation_predict(&f.in, both, 2, false, &after, &out) == 0);
	CHECK(out.moved == 2 && out.moved_bytes == 2 * GiB && !out.failed);
	CHECK(out.created >= 2 && out.created_length >= 2 * GiB);
	CHECK(data_chunks(&after) == out.created);
	bx_snapshot_release(&after);
	bx_snapshot_release(&f.in);
}

/* Without room the chunk stays (the kernel's ENOSPC), and the filesystem is as it was. */
static void test_no_room(void)
{
	struct bx_reloc_prediction out;
	struct bx_snapshot after;
	uint64_t first;
	struct fs f;
	uint64_t sizes[2] = { 2313 * MiB, 2313 * MiB };

	/* Two devices the chunks fill to the last byte. */
	fs_init(&f, 2, sizes, NULL);
	raid1(&f, SYS, 8 * MiB, 16384, 1, 2, 1 * MiB);
	raid1(&f, META, 256 * MiB, 64 * MiB, 1, 2, 9 * MiB);
	raid1(&f, DATA, 1 * GiB, 1 * GiB, 1, 2, 265 * MiB);
	raid1(&f, DATA, 1 * GiB, 1 * GiB, 1, 2, 1289 * MiB);
	first = f.in.chunks[2].logical;
	CHECK(bx_relocation_predict(&f.in, &first, 1, false, &after, &out) == 0);
	CHECK(out.moved == 0 && out.failed == 1 && out.created == 0);
	CHECK(data_chunks(&after) == 2);
	bx_snapshot_release(&after);
	bx_snapshot_release(&f.in);
}

static void test_unknown_chunk(void)
{
	struct bx_reloc_prediction out;
	struct bx_snapshot after;
	uint64_t nowhere = 12345;
	struct fs f;

	three_raid1(&f, 4 * GiB, NULL, 1 * GiB);
	CHECK(bx_relocation_predict(&f.in, &nowhere, 1, false, &after, &out) == -ENOENT);
	CHECK(strstr(bx_error_message(-ENOENT), "no chunk at 12345") != NULL);
	bx_error_clear();
	bx_snapshot_release(&after);
	bx_snapshot_release(&f.in);
}

int main(void)
{
	test_into_free_space();
	test_new_chunks();
	test_no_room();
	test_unknown_chunk();
	return unit_summary();
}
