/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's relocation of block groups (relocation.h), on the kernel
 * state: one chunk at a time, in the order the operation gives, as
 * fs/btrfs/relocation.c btrfs_relocate_block_group() moves it; a shrink's
 * second try (btrfs_shrink_device()); the filters of a balance; and a
 * prediction of a set of relocations in one call.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/profiles.h"
#include "model/kernel/relocation.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

/* Most data chunks' extents in one cluster of the relocation (relocate_file_extent_cluster). */
#define MAX_CLUSTER 128

static bool has(const struct bx_kstate *s, enum bx_kernel_trait trait)
{
	return bx_kernel_has(&s->in->kernel, trait);
}

static uint64_t kind_bit(int kind)
{
	static const uint64_t bits[] = { BTRFS_BLOCK_GROUP_DATA, BTRFS_BLOCK_GROUP_METADATA,
					 BTRFS_BLOCK_GROUP_SYSTEM };

	return bits[kind];
}

struct bx_reloc_short *bx_reloc_short_of(struct bx_reloc_list *ml, uint64_t type)
{
	for (size_t i = 0; i < ml->nr_shorts; i++)
		if (ml->shorts[i].type == type)
			return &ml->shorts[i];
	if (ml->nr_shorts == sizeof(ml->shorts) / sizeof(ml->shorts[0]))
		return &ml->shorts[ml->nr_shorts - 1];
	ml->shorts[ml->nr_shorts] = (struct bx_reloc_short){ .type = type };
	return &ml->shorts[ml->nr_shorts++];
}

/* The chunk @idx as placement sees it (stripes point into the state). */
static struct bx_place_chunk place_chunk(const struct bx_kstate *s, size_t idx)
{
	const struct bx_ks_chunk *c = &s->chunks[idx];

	return (struct bx_place_chunk){ c->logical, c->length, c->used, c->type, c->num_stripes,
					c->stripes };
}

/*
 * Whether new chunk @idx is smaller than a chunk of its type gets when the
 * devices have room: its stripes took what was left.
 */
static bool undersized(const struct bx_kstate *s, size_t idx)
{
	const struct bx_ks_chunk *c = &s->chunks[idx];
	struct bx_alloc_limits lim;
	struct bx_raid_attr *r = &lim.raid;
	uint64_t total = 0, cap;
	uint32_t data_stripes;

	for (size_t i = 0; i < s->nr_devs; i++)
		if (s->adevs[i].writable)
			total += s->adevs[i].total_bytes;
	if (bx_alloc_limits(c->type, total, s->params.nodesize, &lim) ||
	    c->num_stripes < (uint32_t)r->nparity)
		return false;
	data_stripes = (c->num_stripes - (uint32_t)r->nparity) / (uint32_t)r->ncopies;
	cap = lim.max_stripe_size;
	if (data_stripes && lim.max_chunk_size / data_stripes < cap)
		cap = lim.max_chunk_size / data_stripes & ~((16ULL << 20) - 1);
	return c->stripe_size < cap;
}


/*
 * The metadata the transaction commit before a block group's relocation
 * writes (prepare_to_relocate()): a few dozen tree blocks. With the block
 * group read-only and no other metadata block group holding this much, the
 * commit needs a new metadata chunk from the devices' space as the last
 * commit left it; without one the kernel aborts the transaction with
 * ENOSPC and forces the filesystem read-only (seen on 6.18 removing a
 * device whose only metadata block group had to move last, and as often not:
 * whether the commit needs a new tree block is not in the on-disk state).
 */
#define COMMIT_ROOM(s) (64ULL * ((s)->params.nodesize ? (s)->params.nodesize : 16384))


/*
 * Whether a system block group of the single profile has room for the
 * chunk tree's new blocks. Converting metadata on 6.18, the chunk tree's
 * copy-on-write for the first new metadata chunk took a block of a single
 * system block group (btrfs_reserve_extent() into it, asked for the new
 * profile); beside a dup or raid1 one a system chunk of the new profile
 * came instead (traced with mkfs -m single, dup and raid1).
 */
static bool single_system_takes_chunk_tree(const struct bx_kstate *s)
{
	if (!bx_kernel_has(&s->in->kernel, BX_KT_CHUNK_TREE_IN_SINGLE_SYSTEM))
		return false;
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct bx_ks_chunk *ch = &s->chunks[c];

		if (!ch->gone && !ch->moving && (ch->type & BTRFS_BLOCK_GROUP_SYSTEM) &&
		    !(ch->type & BTRFS_BLOCK_GROUP_PROFILE_MASK) && ch->used < ch->length)
			return true;
	}
	return false;
}

/*
 * Converting metadata, the first chunk of the new profile of one kind
 * (metadata or system) brings one of the other kind with it. Seen on 6.1:
 * a system chunk with the first metadata chunk (reserve_chunk_space()
 * while it is made), and a metadata chunk with the system chunk
 * check_system_chunk() made when the system block group moved first (the
 * metadata block group then still forced one of its own; what makes the
 * first was not found). No system chunk while a single system block group
 * takes the chunk tree's blocks: the system chunk comes when that one
 * moves, if it may go read-only (6.12, 6.18 and 7.3 refuse it when the
 * devices' unallocated space per copy of the new profile is within a data
 * chunk, bx_ks_ro_refused(): the convert fails with ENOSPC). 0, or a
 * negative errno.
 */
static int pair_chunk(struct bx_kstate *s, struct bx_reloc_how *rel, int kind)
{
	int other = kind == BX_PLACE_KIND_SYSTEM ? BX_PLACE_KIND_METADATA : BX_PLACE_KIND_SYSTEM;
	long n;

	if (rel->pair_made || !rel->target[kind] || !rel->target[other] ||
	    !bx_kernel_has(&s->in->kernel, BX_KT_CONVERT_PAIRS_SYSTEM_CHUNK))
		return 0;
	rel->pair_made = true;
	if (other == BX_PLACE_KIND_SYSTEM && single_system_takes_chunk_tree(s))
		return 0;
	n = bx_ks_pool_chunk(s, rel->target[other], NULL);
	return n < 0 && n != -ENOSPC ? (int)n : 0;
}


/* ---- data, extent by extent ---- */

static int ext_cmp(const void *a, const void *b)
{
	const struct bx_snap_dextent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Moves the extents of data chunk @idx (being moved) into chunks of
 * @target, one by one, where the kernel's relocation puts them: in address
 * order, in clusters of adjacent extents (at most 128); before each cluster
 * the kernel reserves its bytes, allocating data chunks while the free
 * space of the writable data block groups is short
 * (btrfs_alloc_data_chunk_ondemand); each extent needs one free range of
 * its whole size (the relocation preallocates it with min_size = its size),
 * found as find_free_extent() finds it (extent-tree.c). New chunks where
 * the model places them (only where they place @improve better, when
 * given). Returns 0 (all moved), 1 when an extent finds no room (*@missing:
 * the bytes still to move), or a negative errno.
 */
static int move_extents(struct bx_kstate *s, size_t idx, uint64_t target,
			const struct bx_place_chunk *improve, uint64_t *missing)
{
	struct bx_ks_chunk *c = &s->chunks[idx];
	size_t e = 0;

	*missing = 0;
	for (size_t k = 1; k < c->nr_exts; k++)
		if (c->exts[k].start < c->exts[k - 1].start) {
			qsort(c->exts, c->nr_exts, sizeof(*c->exts), ext_cmp);
			break;
		}
	if (bx_ks_extent_index(s, target))
		return -ENOMEM;		/* the message is recorded */
	bx_ks_extent_index_set(s, idx);	/* being moved: read-only */
	while (e < c->nr_exts) {
		size_t end = e + 1;
		uint64_t bytes = c->exts[e].len, hint = 0;
		int ret;

		while (end < c->nr_exts && end - e < MAX_CLUSTER &&
		       c->exts[end].start == c->exts[end - 1].start + c->exts[end - 1].len)
			bytes += c->exts[end++].len;
		ret = bx_ks_reserve_data(s, target, bytes, improve);
		/* New chunks may have moved the chunk array: @c again, after each. */
		c = &s->chunks[idx];
		while (ret > 0 && e < end) {
			ret = bx_ks_place_extent(s, target, c->exts[e].len, improve, &hint);
			c = &s->chunks[idx];
			e += ret > 0;
		}
		if (ret < 0)
			return ret;
		if (!ret) {
			for (; e < c->nr_exts; e++)
				*missing += c->exts[e].len;
			return 1;
		}
	}
	return 0;
}

/* ---- one chunk ---- */

/*
 * Moves chunk @idx: 0 moved, 1 no room (*@missing: what it still needed;
 * @fatal: the kernel would stop the whole change at once), or a negative
 * errno. *@target_out: the type of the chunks it needed.
 */
static int move_chunk(struct bx_kstate *s, struct bx_reloc_how *rel, size_t idx,
		      struct bx_reloc_events *ev, uint64_t *missing, uint64_t *target_out,
		      bool *fatal)
{
	int kind = bx_place_kind(s->chunks[idx].type);
	uint64_t target = rel->target[kind] ? rel->target[kind] :
			  bx_ks_alloc_type(s, kind_bit(kind));
	struct bx_place_chunk old = place_chunk(s, idx);
	const struct bx_place_chunk *improve = rel->improve ? &old : NULL;
	uint64_t need = s->chunks[idx].used, taken;
	long n;

	*target_out = target;
	*fatal = false;
	/*
	 * Until the relocation's first commit (prepare_to_relocate), what the
	 * previous chunk freed cannot be allocated again.
	 * btrfs_may_alloc_data_chunk: no data in use, so the profile is kept by an empty chunk.
	 */
	if (kind == BX_PLACE_KIND_DATA && !bx_ks_used_of_kind(s, BTRFS_BLOCK_GROUP_DATA) &&
	    !(rel->reserve_once && rel->reserved) && has(s, BX_KT_MAY_ALLOC_DATA_CHUNK)) {
		n = bx_ks_pool_chunk(s, target, NULL);
		if (n == -ENOSPC) {
			*missing = need;
			*fatal = true;
			return 1;
		}
		if (n < 0)
			return (int)n;
		rel->reserved = true;
	}
	/*
	 * btrfs_inc_block_group_ro: a chunk of the new profile first (ENOSPC is
	 * fine); never a system chunk, which btrfs_chunk_alloc() refuses.
	 */
	if (target != s->chunks[idx].type && kind != BX_PLACE_KIND_SYSTEM &&
	    has(s, BX_KT_RO_NEW_PROFILE_CHUNK)) {
		n = bx_ks_pool_chunk(s, target, improve);
		if (n < 0 && n != -ENOSPC)
			return (int)n;
		n = n >= 0 ? pair_chunk(s, rel, kind) : 0;
		if (n)
			return (int)n;
	}
	/*
	 * Refused read-only, the kernel forces a metadata chunk and tries
	 * again, never a system chunk: without one, ENOSPC.
	 */
	if (kind != BX_PLACE_KIND_DATA && bx_ks_ro_refused(s, idx, target)) {
		n = kind == BX_PLACE_KIND_SYSTEM ? -ENOSPC : bx_ks_pool_chunk(s, target, improve);
		if (n == -ENOSPC) {
			*missing = need;
			return 1;
		}
		if (n < 0)
			return (int)n;
	}
	/*
	 * Metadata that the other block groups cannot take: the block group
	 * cannot go read-only without room, so the kernel allocates there too.
	 */
	if (kind != BX_PLACE_KIND_DATA && bx_ks_pool_free(s, target) < need &&
	    bx_ks_little_headroom(s, target))
		ev->tight = true;
	while (kind != BX_PLACE_KIND_DATA && bx_ks_pool_free(s, target) < need) {
		n = bx_ks_pool_chunk(s, target, improve);
		if (n == -ENOSPC)
			break;
		if (n < 0)
			return (int)n;
		if (undersized(s, (size_t)n))
			ev->tight = true;
		n = target == rel->target[kind] ? pair_chunk(s, rel, kind) : 0;
		if (n)
			return (int)n;
	}
	/* Granted read-only with nothing else to write the commit into, the commit may abort. */
	if (kind == BX_PLACE_KIND_METADATA && bx_ks_pool_free(s, target) < COMMIT_ROOM(s) &&
	    !ev->abort_risk && has(s, BX_KT_COMMIT_MAY_ABORT)) {
		ev->tight = ev->abort_risk = true;
		ev->abort_logical = s->chunks[idx].logical;
	}
	n = bx_ks_commit(s);
	if (n)
		return (int)n;
	/* Data extents known: each lands where find_free_extent() puts it (move_extents()). */
	if (kind == BX_PLACE_KIND_DATA && s->exact && !(target & BTRFS_BLOCK_GROUP_METADATA) &&
	    !(s->chunks[idx].type & BTRFS_BLOCK_GROUP_METADATA) &&
	    has(s, BX_KT_RELOCATES_EXTENT_BY_EXTENT))
		return move_extents(s, idx, target, improve, missing);
	for (;;) {
		if (bx_ks_pool_take(s, target, need, &taken))
			return OOM();
		need -= taken;
		if (!need)
			break;
		n = bx_ks_pool_chunk(s, target, improve);
		if (n == -ENOSPC)
			break;
		if (n < 0)
			return (int)n;
	}
	*missing = need;
	return need ? 1 : 0;
}


/* Whether a balance (@rel's filters) takes chunk @idx when it reaches it. */
static bool balance_selects(const struct bx_kstate *s, const struct bx_reloc_how *rel, size_t idx)
{
	const struct bx_ks_chunk *c = &s->chunks[idx];
	uint64_t target = rel->target[bx_place_kind(c->type)];

	/* The soft filter: a chunk in the target profile already is left alone. */
	if (rel->soft && target &&
	    (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK) == (target & BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return false;
	/* The usage as the balance reaches it, after what moved before; else as it began. */
	return !rel->usage ||
	       bx_usage_filter_selects(rel->usage, c->type, c->length,
				       has(s, BX_KT_BALANCE_USAGE_ON_ARRIVAL) ? c->used :
				       c->start_used);
}

/* Whether chunk @idx still breaks the hints (earlier moves may have changed that). */
static int still_misplaced(const struct bx_kstate *s, size_t idx)
{
	struct bx_place_chunk c = place_chunk(s, idx);
	struct bx_place_verdict v;
	struct bx_place_model pm;
	int ret;

	bx_ks_place_model(s, &pm);
	ret = bx_place_classify(&pm, &c, &v);
	if (!ret)
		ret = v.cls != BX_PLACE_OK;
	bx_place_verdict_release(&v);
	return ret == -ENOMEM ? OOM() : ret < 0 ? 0 : ret;
}


/*
 * One pass over @ml, in order. A move without room gives back what it took
 * at once (the kernel's relocation of that chunk fails and releases it); its
 * index stays in @ml for a retry, the shortage is counted.
 */
static int relocate_pass(struct bx_kstate *s, struct bx_reloc_how *rel, struct bx_reloc_list *ml,
			 struct bx_reloc_events *ev)
{
	size_t kept = 0;

	ml->nr_shorts = 0;
	for (size_t i = 0; i < ml->nr; i++) {
		size_t idx = ml->idx[i], mark = s->nr_journal;
		uint64_t missing = 0, target;
		struct bx_reloc_short *sh;
		bool fatal;
		int ret = rel->improve ? still_misplaced(s, idx) : balance_selects(s, rel, idx);

		if (ret <= 0) {
			s->chunks[idx].pending = false;
			if (ret < 0)
				return ret;
			continue;
		}
		bx_ks_begin_move(s, idx);
		ret = move_chunk(s, rel, idx, ev, &missing, &target, &fatal);
		bx_ks_end_move(s, idx);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			bx_ks_journal_keep(s, mark);
			s->chunks[idx].pending = false;
			ret = ev->moved ? ev->moved(ev->arg, s, idx) : 0;
			if (!ret)
				ret = bx_ks_free_chunk(s, idx);
			if (ret)
				return ret;
			continue;
		}
		bx_ks_journal_undo(s, mark);
		sh = bx_reloc_short_of(ml, target);
		sh->used += s->chunks[idx].used;
		sh->chunks++;
		if (missing > sh->largest)
			sh->largest = missing;
		ml->idx[kept++] = idx;
		if (fatal) {
			while (++i < ml->nr)
				ml->idx[kept++] = ml->idx[i];
			break;
		}
	}
	ml->nr = kept;
	/* Short by: what could not move, less the room its type still has in chunks. */
	for (size_t i = 0; i < ml->nr_shorts; i++) {
		struct bx_reloc_short *sh = &ml->shorts[i];
		uint64_t room = bx_ks_pool_free(s, sh->type);

		sh->missing = sh->used > room ? sh->used - room : 0;
		if (sh->missing < sh->largest)
			sh->missing = sh->largest;
	}
	return 0;
}


int bx_ks_relocate(struct bx_kstate *s, struct bx_reloc_how *rel, struct bx_reloc_list *ml,
		   struct bx_reloc_events *ev)
{
	int ret;

	for (size_t i = 0; i < ml->nr; i++) {
		s->chunks[ml->idx[i]].pending = true;
		s->chunks[ml->idx[i]].start_used = s->chunks[ml->idx[i]].used;
	}
	bx_ks_pools_reset(s);
	for (size_t c = 0; c < s->nr_chunks; c++) {
		ret = bx_ks_pool_add(s, c);
		if (ret)
			return ret;
	}
	ret = relocate_pass(s, rel, ml, ev);
	if (!ret && ml->nr && rel->retry && has(s, BX_KT_SHRINK_SECOND_TRY)) {
		ret = relocate_pass(s, rel, ml, ev);
		/* The kernel retries at once; what the first try took may still be held. */
		if (!ret && !ml->nr)
			ev->second_try = true;
	}
	if (!ret)
		ret = bx_ks_commit(s);
	for (size_t i = 0; i < ml->nr; i++)
		s->chunks[ml->idx[i]].pending = false;
	bx_ks_pools_reset(s);
	return ret;
}


/* ---- a prediction in one call ---- */

/* The index of the chunk at @logical of @s (not gone), or -1. */
static long chunk_at_logical(const struct bx_kstate *s, uint64_t logical)
{
	for (size_t i = 0; i < s->nr_chunks; i++)
		if (!s->chunks[i].gone && s->chunks[i].logical == logical)
			return (long)i;
	return -1;
}

static int count_moved(void *arg, const struct bx_kstate *s, size_t idx)
{
	struct bx_reloc_prediction *out = arg;

	out->moved++;
	out->moved_bytes += s->chunks[idx].start_used;
	return 0;
}

int bx_relocation_predict(const struct bx_snapshot *snap, const uint64_t *logicals, size_t n,
			  bool improve, struct bx_snapshot *after, struct bx_reloc_prediction *out)
{
	struct bx_reloc_how how = { .improve = improve };
	struct bx_reloc_list ml = { 0 };
	struct bx_kstate s;
	size_t first_new;
	int ret;

	memset(out, 0, sizeof(*out));
	memset(after, 0, sizeof(*after));
	ret = bx_ks_init(&s, snap);
	if (ret)
		return ret;
	first_new = s.nr_chunks;
	ml.idx = calloc(n + 1, sizeof(*ml.idx));
	if (!ml.idx)
		ret = OOM();
	for (size_t i = 0; !ret && i < n; i++) {
		long idx = chunk_at_logical(&s, logicals[i]);

		if (idx < 0)
			ret = bx_error(-ENOENT, "%s: no chunk at %llu", snap->path,
				       (unsigned long long)logicals[i]);
		else
			ml.idx[ml.nr++] = (size_t)idx;
	}
	out->events.moved = count_moved;
	out->events.arg = out;
	if (!ret)
		ret = bx_ks_relocate(&s, &how, &ml, &out->events);
	out->events.moved = NULL;
	out->events.arg = NULL;
	out->failed = ml.nr;
	/* At rest: the cleaner has deleted what it deletes. */
	if (!ret)
		ret = bx_ks_delete_unused(&s);
	for (size_t i = first_new; !ret && i < s.nr_chunks; i++) {
		if (s.chunks[i].gone)
			continue;
		out->created++;
		out->created_length += s.chunks[i].length;
	}
	if (!ret)
		ret = bx_ks_materialize(&s, after);
	free(ml.idx);
	bx_ks_release(&s);
	return ret;
}
