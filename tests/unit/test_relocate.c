/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the relocation's decisions without the kernel
 * (relocate/relocate-model.c): whether the allocator model has room for the
 * chunks a run moves, the balance arguments of one chunk
 * (fsops/balance-chunk.c), and the kernel's new chunks against the model.
 * On filesystems built by hand:
 *
 * devid 1 metadata_only, devids 2 and 3 data_preferred; system and metadata
 * single on devid 1, a 1 GiB data chunk on devid 1 (forbidden: the hint
 * excludes data) half used, a full 1 GiB data chunk on devid 2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsops/balance-chunk.h"
#include "fsops/misplaced.h"
#include "relocate/relocate-model.h"
#include "tests/unit/unit.h"
#include "tests/unit/snapshot-fixture.h"

#define DATA BTRFS_BLOCK_GROUP_DATA
#define META BTRFS_BLOCK_GROUP_METADATA
#define SYS BTRFS_BLOCK_GROUP_SYSTEM

/* One stripe of @length at @phys on @devid. */
static void single(struct fs *f, uint64_t type, uint64_t length, uint64_t used, uint64_t devid,
		   uint64_t phys)
{
	add_chunk(f, type, length, length, used, 1, &devid, &phys);
}

/* The layout above, devices 2 and 3 of @data_dev_size; returns the forbidden chunk's address. */
static uint64_t layout(struct fs *f, uint64_t data_dev_size)
{
	uint64_t sizes[3] = { 4 * GiB, data_dev_size, data_dev_size };
	uint64_t hints[3] = { BX_HINT_METADATA_ONLY, BX_HINT_DATA_PREFERRED,
			      BX_HINT_DATA_PREFERRED };
	uint64_t forbidden;

	fs_init(f, 3, sizes, hints);
	single(f, SYS, 8 * MiB, 16384, 1, 1 * MiB);
	single(f, META, 256 * MiB, 32 * MiB, 1, 9 * MiB);
	forbidden = f->next_logical;
	single(f, DATA, 1 * GiB, 512 * MiB, 1, 265 * MiB);
	single(f, DATA, 1 * GiB, 1 * GiB, 2, 1 * MiB);
	return forbidden;
}

static const struct bx_misplaced_chunk *chunk_at(const struct bx_misplaced_report *rep,
						 uint64_t logical)
{
	for (size_t i = 0; i < rep->nr_chunks; i++)
		if (rep->chunks[i].logical == logical)
			return &rep->chunks[i];
	return NULL;
}

static void test_balance_args(void)
{
	struct btrfs_ioctl_balance_args a;

	bx_balance_chunk_args(5 * GiB, DATA | RAID1, &a);
	CHECK_EQ_U64(a.flags, BTRFS_BALANCE_DATA);
	CHECK_EQ_U64(a.data.flags, BTRFS_BALANCE_ARGS_VRANGE);
	CHECK(a.data.vstart == 5 * GiB && a.data.vend == 5 * GiB + 1);
	CHECK_EQ_U64(a.meta.flags | a.sys.flags, 0);
	bx_balance_chunk_args(7 * GiB, SYS, &a);
	CHECK_EQ_U64(a.flags, BTRFS_BALANCE_SYSTEM);
	CHECK(a.sys.vstart == 7 * GiB && a.data.flags == 0);
	/* Mixed block groups: data and metadata with the same arguments. */
	bx_balance_chunk_args(9 * GiB, DATA | META, &a);
	CHECK_EQ_U64(a.flags, BTRFS_BALANCE_DATA | BTRFS_BALANCE_METADATA);
	CHECK(a.meta.vstart == 9 * GiB && a.data.vstart == 9 * GiB);
}

static void test_room(void)
{
	struct bx_misplaced_report rep;
	const struct bx_misplaced_chunk *c;
	char reason[1024] = "";
	struct fs f;
	uint64_t at;

	/* Devices 2 and 3 of 4 GiB: the forbidden chunk's 512 MiB fit there. */
	at = layout(&f, 4 * GiB);
	CHECK_EQ_U64(bx_misplaced_compute(&f.in, NULL, &rep), 0);
	c = chunk_at(&rep, at);
	CHECK(c && c->cls == BX_PLACE_FORBIDDEN);
	CHECK_EQ_U64(bx_relocate_room(&f.in, &rep, c, 1, reason, sizeof(reason)), 0);
	bx_misplaced_report_release(&rep);
	bx_snapshot_release(&f.in);

	/* Devices 2 and 3 just hold a full chunk each: no room, and the reason says where. */
	at = layout(&f, 1 * GiB + 1 * MiB);
	single(&f, DATA, 1 * GiB, 1 * GiB, 3, 1 * MiB);
	CHECK_EQ_U64(bx_misplaced_compute(&f.in, NULL, &rep), 0);
	c = chunk_at(&rep, at);
	CHECK(c != NULL);
	CHECK(c && bx_relocate_room(&f.in, &rep, c, 1, reason, sizeof(reason)) == -ENOSPC);
	CHECK(strstr(reason, "data needs") && strstr(reason, "devid 2 (data_preferred)") &&
	      strstr(reason, "devid 3 (data_preferred)"));
	/* A kernel that ignores hints places by its own rules: nothing to check. */
	rep.hints_effective = false;
	CHECK_EQ_U64(bx_relocate_room(&f.in, &rep, c, 1, reason, sizeof(reason)), 0);
	bx_misplaced_report_release(&rep);
	bx_snapshot_release(&f.in);
}

static void relocated_release(struct bx_relocated *rel)
{
	for (size_t i = 0; i < rel->nr_new; i++)
		free(rel->new_chunks[i].devids);
	free(rel->new_chunks);
}

/*
 * The chunk moved off devid 1 comes back as one new chunk: where the model
 * puts the next data chunk (the largest hole: devid 3 from 1 MiB, 1 GiB,
 * the data chunk size below 50 GiB) is as modelled and better placed; on
 * devid 1 again it is neither.
 */
static void test_new_chunks(void)
{
	const struct bx_place_stripe on_dev1 = { 1, 265 * MiB };
	struct bx_relocated rel = { 0 };
	struct fs before, after;
	struct bx_place_chunk old;

	old = (struct bx_place_chunk){ .logical = layout(&before, 4 * GiB), .length = 1 * GiB,
				       .used = 512 * MiB, .type = DATA, .num_stripes = 1,
				       .stripes = &on_dev1 };
	layout(&after, 4 * GiB);
	single(&after, DATA, 1 * GiB, 512 * MiB, 3, 1 * MiB);
	CHECK_EQ_U64(bx_relocate_new_chunks(&before.in, &after.in, &old, &rel), 0);
	CHECK_EQ_U64(rel.nr_new, 1);
	CHECK(rel.nr_new == 1 && rel.new_chunks[0].devids[0] == 3);
	CHECK(rel.as_modelled && rel.nr_new == 1 && rel.new_chunks[0].as_modelled);
	CHECK(rel.nr_new == 1 && rel.new_chunks[0].improves);
	relocated_release(&rel);
	bx_snapshot_release(&after.in);

	layout(&after, 4 * GiB);
	single(&after, DATA, 1 * GiB, 512 * MiB, 1, 1289 * MiB);
	rel = (struct bx_relocated){ 0 };
	CHECK_EQ_U64(bx_relocate_new_chunks(&before.in, &after.in, &old, &rel), 0);
	CHECK(rel.nr_new == 1 && !rel.as_modelled && !rel.new_chunks[0].improves);
	relocated_release(&rel);
	bx_snapshot_release(&after.in);
	bx_snapshot_release(&before.in);
}

int main(void)
{
	test_balance_args();
	test_room();
	test_new_chunks();
	return unit_summary();
}
