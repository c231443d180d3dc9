/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's space reservations (space-info.h), and the pools of free
 * space in block groups that the relocation model fills (state.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/profiles.h"
#include "model/kernel/space-info.h"
#include "model/kernel/state-private.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

/* ---- reservations ---- */

/*
 * The metadata a file's creation reserves (btrfs_create(): inode item, dir
 * item, dir index, parent inode and a security label), in items of
 * BTRFS_MAX_LEVEL * 2 tree blocks; and as much again for the delayed refs
 * it makes (start_transaction() while that reserve is short), twice as much
 * with delayed_refs_reserved_twice and the free space tree (every
 * filesystem made since btrfs-progs 5.15). Seen on 6.18: 3.75 MiB per file.
 */
#define CREATE_ITEMS 5
#define ITEM_BLOCKS (8 * 2)

static uint64_t create_reservation(const struct bx_snapshot *in)
{
	uint64_t items = (uint64_t)(in->nodesize ? in->nodesize : 16384) * ITEM_BLOCKS * CREATE_ITEMS;

	return items * (bx_kernel_has(&in->kernel, BX_KT_DELAYED_REFS_RESERVED_TWICE) ? 3 : 2);
}

uint64_t bx_kernel_overcommit_room(const struct bx_snapshot *in, uint64_t unallocated,
				   uint64_t rw_bytes, int ncopies)
{
	uint64_t avail = unallocated / (uint64_t)(ncopies > 0 ? ncopies : 1);
	uint64_t data_chunk = rw_bytes / 10 < (1ULL << 30) ? rw_bytes / 10 : 1ULL << 30;

	if (!bx_kernel_has(&in->kernel, BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK))
		return avail;
	return avail > data_chunk ? avail - data_chunk : 0;
}

/*
 * Seen on 6.18: raid0s whose only 8 MiB of metadata left 1.1 MiB beside
 * the reserve got a 48 and a 204 MiB metadata chunk while data filled them.
 * On 7.3 the same raid0 (aged seed 2 of the stock series) got its chunk
 * earlier, 128 MiB where 6.18 made 92: flush_overcommits_64th.
 */
bool bx_kernel_metadata_must_grow(const struct bx_snapshot *in, bool mixed,
				  uint64_t metadata_used, uint64_t metadata_size,
				  uint64_t metadata_type, const struct bx_snap_model *m,
				  const struct bx_alloc_sim *sim)
{
	uint64_t need = create_reservation(in);
	uint64_t held = metadata_used + in->global_reserve - in->global_reserve_used;
	uint64_t unallocated = 0, rw = 0;
	struct bx_raid_attr r;

	if (!bx_kernel_has(&in->kernel, BX_KT_METADATA_FILL_GROWS) || !in->have_global_reserve ||
	    mixed || held + need <= metadata_size ||
	    bx_raid_attr(metadata_type, &r) || !r.ncopies)
		return false;
	for (size_t i = 0; i < m->nr; i++) {
		if (!m->devs[i].writable)
			continue;
		unallocated += bx_alloc_sim_unallocated(sim, i);
		rw += m->devs[i].total_bytes;
	}
	return held + need >= metadata_size +
			      bx_kernel_overcommit_room(in, unallocated, rw, r.ncopies) /
			      (bx_kernel_has(&in->kernel, BX_KT_FLUSH_OVERCOMMITS_64TH) ? 64 : 8);
}

/* ---- the space info of the kernel state ---- */

static struct bx_snap_space *space_of(struct bx_kstate *s, uint64_t flags)
{
	struct bx_snap_space *grown;

	for (size_t i = 0; i < s->nr_spaces; i++)
		if (s->spaces[i].flags == flags)
			return &s->spaces[i];
	grown = realloc(s->spaces, (s->nr_spaces + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	s->spaces = grown;
	s->spaces[s->nr_spaces] = (struct bx_snap_space){ .flags = flags };
	return &s->spaces[s->nr_spaces++];
}

/* Adds (or with @sign -1 takes away) a chunk in the space info; empty slots go. */
int bx_ks_account(struct bx_kstate *s, uint64_t flags, uint64_t length, uint64_t used, int sign)
{
	struct bx_snap_space *sp = space_of(s, flags);

	if (!sp)
		return OOM();
	if (sign > 0) {
		sp->total_bytes += length;
		sp->used_bytes += used;
		return 0;
	}
	sp->total_bytes = sp->total_bytes > length ? sp->total_bytes - length : 0;
	sp->used_bytes = sp->used_bytes > used ? sp->used_bytes - used : 0;
	if (!sp->total_bytes) {
		/* The kernel drops a profile with its last block group. */
		*sp = s->spaces[s->nr_spaces - 1];
		s->nr_spaces--;
	}
	return 0;
}

/* ---- pools ---- */

static struct bx_ks_pool *pool_of(struct bx_kstate *s, uint64_t type, bool create)
{
	struct bx_ks_pool *grown;

	for (size_t i = 0; i < s->nr_pools; i++)
		if (s->pools[i].type == type)
			return &s->pools[i];
	if (!create)
		return NULL;
	grown = realloc(s->pools, (s->nr_pools + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	s->pools = grown;
	s->pools[s->nr_pools] = (struct bx_ks_pool){ .type = type };
	return &s->pools[s->nr_pools++];
}

int bx_ks_pool_add(struct bx_kstate *s, size_t idx)
{
	struct bx_ks_chunk *pc = &s->chunks[idx];
	struct bx_ks_pool *p;

	if (pc->gone || pc->moving || pc->in_pool || pc->used >= pc->length)
		return 0;
	p = pool_of(s, pc->type, true);
	if (!p)
		return OOM();
	if (p->nr == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		size_t *grown = realloc(p->chunks, cap * sizeof(*grown));

		if (!grown)
			return OOM();
		p->chunks = grown;
		p->cap = cap;
	}
	p->chunks[p->nr++] = idx;
	p->free += pc->length - pc->used;
	pc->in_pool = true;
	return 0;
}

/* Chunk @idx leaves its pool: its free space is no longer offered. */
void bx_ks_pool_drop(struct bx_kstate *s, size_t idx)
{
	struct bx_ks_chunk *pc = &s->chunks[idx];
	struct bx_ks_pool *p;

	if (!pc->in_pool)
		return;
	pc->in_pool = false;
	p = pool_of(s, pc->type, false);
	if (p)
		p->free -= pc->length > pc->used ? pc->length - pc->used : 0;
}

void bx_ks_begin_move(struct bx_kstate *s, size_t idx)
{
	s->chunks[idx].moving = true;
	s->moving = (long)idx;
}

void bx_ks_end_move(struct bx_kstate *s, size_t idx)
{
	s->chunks[idx].moving = false;
	s->moving = -1;
}

int bx_ks_journal(struct bx_kstate *s, size_t idx, uint64_t bytes, uint64_t start, bool extent)
{
	if (s->nr_journal == s->cap_journal) {
		size_t cap = s->cap_journal ? 2 * s->cap_journal : 64;
		struct bx_ks_take *grown = realloc(s->journal, cap * sizeof(*grown));

		if (!grown)
			return OOM();
		s->journal = grown;
		s->cap_journal = cap;
	}
	s->journal[s->nr_journal++] = (struct bx_ks_take){ idx, bytes, start, extent };
	return 0;
}

/* Adds @bytes (or takes them back, @sign -1) to chunk @idx and its space info. */
void bx_ks_add_used(struct bx_kstate *s, size_t idx, uint64_t bytes, int sign)
{
	struct bx_ks_chunk *pc = &s->chunks[idx];
	struct bx_ks_pool *p = pc->in_pool ? pool_of(s, pc->type, false) : NULL;

	if (p)
		p->free = sign > 0 ? p->free - bytes : p->free + bytes;
	for (size_t i = 0; i < s->nr_spaces; i++) {
		if (s->spaces[i].flags != pc->type)
			continue;
		s->spaces[i].used_bytes = sign > 0 ? s->spaces[i].used_bytes + bytes :
					  s->spaces[i].used_bytes - bytes;
		break;
	}
	pc->used = sign > 0 ? pc->used + bytes : pc->used - bytes;
}

int bx_ks_pool_take(struct bx_kstate *s, uint64_t type, uint64_t bytes, uint64_t *taken)
{
	struct bx_ks_pool *p = pool_of(s, type, false);

	*taken = 0;
	while (p && p->next < p->nr && *taken < bytes) {
		size_t idx = p->chunks[p->next];
		struct bx_ks_chunk *pc = &s->chunks[idx];
		uint64_t room = pc->gone || pc->moving ? 0 : pc->length - pc->used;
		uint64_t take = room < bytes - *taken ? room : bytes - *taken;

		if (take) {
			if (bx_ks_journal(s, idx, take, 0, false))
				return -ENOMEM;
			bx_ks_add_used(s, idx, take, 1);
			*taken += take;
		}
		if (pc->used >= pc->length || pc->gone || pc->moving) {
			bx_ks_pool_drop(s, idx);
			p->next++;
		}
	}
	return 0;
}

uint64_t bx_ks_pool_free(const struct bx_kstate *s, uint64_t type)
{
	for (size_t i = 0; i < s->nr_pools; i++) {
		const struct bx_ks_pool *p = &s->pools[i];
		const struct bx_ks_chunk *m = s->moving >= 0 ? &s->chunks[s->moving] : NULL;

		if (p->type != type)
			continue;
		/* The block group being moved is read-only: its room does not count. */
		if (m && m->in_pool && m->type == type)
			return p->free - (m->length - m->used);
		return p->free;
	}
	return 0;
}

void bx_ks_journal_keep(struct bx_kstate *s, size_t mark)
{
	s->nr_journal = mark;
}

void bx_ks_journal_undo(struct bx_kstate *s, size_t mark)
{
	while (s->nr_journal > mark) {
		const struct bx_ks_take *t = &s->journal[--s->nr_journal];
		struct bx_ks_chunk *pc = &s->chunks[t->idx];

		/*
		 * Extents are undone last first: the chunk's last extent is this
		 * one. Out of memory, its range stays taken: a smaller plan.
		 */
		if (t->extent) {
			pc->nr_exts--;
			bx_ks_restore_hole(pc, t->start, t->bytes);
			s->hix.stale = true;
		}
		bx_ks_add_used(s, t->idx, t->bytes, -1);
		/* Room again: back in its pool, at the end. */
		if (!pc->in_pool)
			bx_ks_pool_add(s, t->idx);
	}
}

void bx_ks_pools_reset(struct bx_kstate *s)
{
	for (size_t i = 0; i < s->nr_pools; i++) {
		for (size_t k = 0; k < s->pools[i].nr; k++)
			s->chunks[s->pools[i].chunks[k]].in_pool = false;
		free(s->pools[i].chunks);
	}
	free(s->pools);
	s->pools = NULL;
	s->nr_pools = 0;
}

/* ---- reservations in the kernel state ---- */

/*
 * The kernel makes a metadata or system block group read-only only if it
 * could overcommit its free space elsewhere: on unallocated space, counted
 * once per copy and halved (calc_available_free_space). Below this the
 * reservations while it moves have been seen to fail.
 */
#define TIGHT_HEADROOM (64ULL << 20)

bool bx_ks_little_headroom(const struct bx_kstate *s, uint64_t type)
{
	struct bx_raid_attr r;
	uint64_t unallocated = 0;

	if (!bx_kernel_has(&s->in->kernel, BX_KT_TIGHT_HEADROOM) || bx_raid_attr(type, &r))
		return false;
	for (size_t i = 0; i < s->nr_devs; i++)
		unallocated += bx_ks_unallocated(s, i);
	return unallocated / (uint64_t)r.ncopies / 2 < TIGHT_HEADROOM;
}

/* The free bytes a reservation for @type's extents sees (the data space info's). */
static uint64_t reservable(const struct bx_kstate *s, uint64_t type)
{
	uint64_t free = 0;

	if (!bx_ks_takes_any_data(s, type))
		return bx_ks_pool_free(s, type);
	for (size_t i = 0; i < s->nr_pools; i++)
		if ((s->pools[i].type & BTRFS_BLOCK_GROUP_TYPE_MASK) == BTRFS_BLOCK_GROUP_DATA)
			free += bx_ks_pool_free(s, s->pools[i].type);
	return free;
}

/* The reservation of a cluster's bytes: data chunks while the free space is short. */
int bx_ks_reserve_data(struct bx_kstate *s, uint64_t type, uint64_t bytes,
		       const struct bx_place_chunk *improve)
{
	while (reservable(s, type) < bytes) {
		long n = bx_ks_pool_chunk(s, type, improve);

		if (n == -ENOSPC)
			return 0;
		if (n < 0)
			return (int)n;
	}
	return 1;
}
