/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The what-if planner (plan.h): each change applied to the working state
 * (plan-state.c) as the kernel makes it, then the usage report and the
 * misplaced report of the result, and the warnings a sysadmin needs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "fsops/alloc-hint.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "disk/volumes.h"
#include "plan/plan-private.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

struct planner {
	struct plan_state s;
	struct bx_plan_result *res;
	struct bx_plan_step *step;
	size_t cap_moved, cap_created;
	bool converted[2];		/* data, metadata */
};

/* How one change relocates its chunks. */
struct relocation {
	uint64_t target[BX_PLACE_NR_KINDS];	/* convert: the new type per kind; 0: the fs's */
	bool retry;			/* shrink: what failed is tried once more */
	bool reserve_once;		/* balance: the empty data chunk at most once */
	bool improve;			/* relocate: new chunks must place it better */
	bool reserved;
	bool pair_made;			/* convert: pair_chunk() done */
	/* balance: the usage filter, checked as the balance reaches each chunk */
	const struct bx_plan_change *usage;
	bool soft;			/* resume: chunks already in the target stay */
};

/* What a change could not place, per type of the chunks it needed. */
struct shortage {
	uint64_t type;
	uint64_t missing;
	uint64_t used;			/* of the chunks that could not move */
	uint64_t largest;		/* the most one of them still needed */
	uint32_t chunks;
};

struct move_list {
	size_t *idx;			/* chunk indexes, in the order they move */
	size_t nr;
	struct shortage shorts[BX_PLACE_NR_KINDS * 2];
	size_t nr_shorts;
};

static uint64_t kind_bit(int kind)
{
	static const uint64_t bits[] = { BTRFS_BLOCK_GROUP_DATA, BTRFS_BLOCK_GROUP_METADATA,
					 BTRFS_BLOCK_GROUP_SYSTEM };

	return bits[kind];
}

static void add_warning(struct planner *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_warning(struct planner *p, const char *fmt, ...)
{
	struct bx_plan_result *res = p->res;
	char (*grown)[512];
	va_list ap;

	grown = realloc(res->warnings, (res->nr_warnings + 1) * sizeof(*grown));
	if (!grown)
		return;		/* a warning lost to memory is not worth failing the plan */
	res->warnings = grown;
	va_start(ap, fmt);
	vsnprintf(res->warnings[res->nr_warnings], sizeof(res->warnings[0]), fmt, ap);
	va_end(ap);
	res->nr_warnings++;
}

/* ---- records of moved and created chunks ---- */

static int record(struct bx_plan_chunk **arr, size_t *nr, size_t *cap, size_t step,
		  const struct ps_chunk *c)
{
	struct bx_plan_chunk *r;

	if (*nr == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct bx_plan_chunk *grown = realloc(*arr, ncap * sizeof(*grown));

		if (!grown)
			return OOM();
		*arr = grown;
		*cap = ncap;
	}
	r = &(*arr)[*nr];
	*r = (struct bx_plan_chunk){ .step = step, .logical = c->logical, .length = c->length,
				     .used = c->used, .used_before = c->used_before,
				     .existed = !c->is_new, .type = c->type,
				     .num_stripes = c->num_stripes };
	r->devids = calloc(c->num_stripes + 1, sizeof(*r->devids));
	if (!r->devids)
		return OOM();
	for (uint32_t k = 0; k < c->num_stripes; k++)
		r->devids[k] = c->stripes[k].devid;
	(*nr)++;
	return 0;
}

static int record_moved(struct planner *p, size_t idx)
{
	struct bx_plan_result *res = p->res;
	struct ps_chunk c = p->s.chunks[idx];

	/* What it copies: its bytes when the change began (others' may pass through it). */
	c.used = c.start_used;
	p->step->moved_chunks++;
	p->step->moved_bytes += c.used;
	p->step->moved_length += c.length;
	return record(&res->moved, &res->nr_moved, &p->cap_moved, (size_t)(p->step - res->steps),
		      &c);
}

/* Created chunks are recorded when the change ends, with the bytes placed in them. */
static int record_created(struct planner *p, size_t first_new)
{
	struct bx_plan_result *res = p->res;

	for (size_t i = first_new; i < p->s.nr_chunks; i++) {
		int ret;

		if (p->s.chunks[i].gone)
			continue;
		p->step->new_chunks++;
		p->step->new_length += p->s.chunks[i].length;
		ret = record(&res->created, &res->nr_created, &p->cap_created,
			     (size_t)(p->step - res->steps), &p->s.chunks[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- relocation ---- */

static struct shortage *shortage_of(struct move_list *ml, uint64_t type)
{
	for (size_t i = 0; i < ml->nr_shorts; i++)
		if (ml->shorts[i].type == type)
			return &ml->shorts[i];
	if (ml->nr_shorts == sizeof(ml->shorts) / sizeof(ml->shorts[0]))
		return &ml->shorts[ml->nr_shorts - 1];
	ml->shorts[ml->nr_shorts] = (struct shortage){ .type = type };
	return &ml->shorts[ml->nr_shorts++];
}

/* The chunk @idx as placement sees it (stripes point into the state). */
static struct bx_place_chunk place_chunk(const struct plan_state *s, size_t idx)
{
	const struct ps_chunk *c = &s->chunks[idx];

	return (struct bx_place_chunk){ c->logical, c->length, c->used, c->type, c->num_stripes,
					c->stripes };
}


/*
 * Whether new chunk @idx is smaller than a chunk of its type gets when the
 * devices have room: its stripes took what was left.
 */
static bool undersized(const struct plan_state *s, size_t idx)
{
	const struct ps_chunk *c = &s->chunks[idx];
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
 * The kernel makes a metadata or system block group read-only only if it
 * could overcommit its free space elsewhere: on unallocated space, counted
 * once per copy and halved (calc_available_free_space). Below this the
 * reservations while it moves have been seen to fail.
 */
#define TIGHT_HEADROOM (64ULL << 20)

static bool little_headroom(const struct plan_state *s, uint64_t type)
{
	struct bx_raid_attr r;
	uint64_t unallocated = 0;

	if (bx_raid_attr(type, &r))
		return false;
	for (size_t i = 0; i < s->nr_devs; i++)
		unallocated += ps_unallocated(s, i);
	return unallocated / (uint64_t)r.ncopies / 2 < TIGHT_HEADROOM;
}

/*
 * btrfs_inc_block_group_ro() on metadata or system chunk @idx: refused
 * (-ENOSPC) unless its free bytes can be overcommitted: what its type has
 * in use (and, for metadata, the global reserve) plus those bytes must stay
 * below its chunks' size plus half the devices' unallocated bytes per copy
 * of @profile, the type new chunks of its kind get (a converting balance's
 * target: btrfs_get_alloc_profile()) (calc_available_free_space() without
 * flushing; from 6.7 on less the size of a data chunk first). The
 * unallocated bytes are the kernel's free_chunk_space: a chunk's extents
 * count as soon as it went.
 */
static bool ro_refused(const struct plan_state *s, size_t idx, uint64_t profile)
{
	const struct ps_chunk *b = &s->chunks[idx];
	uint64_t kind = b->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM);
	uint64_t total = 0, used = 0, unallocated = 0, rw = 0, avail;
	struct bx_raid_attr r;

	if (!kind || (b->type & BTRFS_BLOCK_GROUP_DATA) || bx_raid_attr(profile, &r) || !r.ncopies)
		return false;
	/* The space info: what its chunks hold, kept up to date as the chunks change. */
	for (size_t i = 0; i < s->nr_spaces; i++) {
		if (!(s->spaces[i].flags & kind) || (s->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV))
			continue;
		total += s->spaces[i].total_bytes;
		used += s->spaces[i].used_bytes;
	}
	for (size_t i = 0; i < s->nr_devs; i++) {
		if (s->devs[i].removed && i < s->in->nr_devs &&
		    s->in->devs[i].bytes_used > s->devs[i].info.bytes_used)
			/* What a remove freed so far counts (seen: its system chunk moves last). */
			unallocated += s->in->devs[i].bytes_used - s->devs[i].info.bytes_used;
		if (!s->adevs[i].writable)
			continue;
		rw += s->adevs[i].total_bytes;
		if (s->adevs[i].total_bytes > s->adevs[i].bytes_used)
			unallocated += s->adevs[i].total_bytes - s->adevs[i].bytes_used;
	}
	avail = bx_usage_overcommit_room(s->in, unallocated, rw, r.ncopies);
	if (kind & BTRFS_BLOCK_GROUP_METADATA)
		used += s->in->global_reserve;
	return used + (b->length - b->used) >= total + avail / 2;
}

/*
 * The commit before metadata chunk @idx's relocation may abort (below):
 * tight, and a warning that says why, once per change.
 */
static void warn_abort(struct planner *p, size_t idx)
{
	if (p->step->tight_abort)
		return;
	p->step->tight = p->step->tight_abort = true;
	add_warning(p, "change %zu: metadata block group %llu moves while no other has room and "
		    "the devices have none for a new one until the relocation commits: the kernel "
		    "may abort the transaction with ENOSPC and force the filesystem read-only "
		    "(seen both ways on the same layout); free some space or add a device first",
		    (size_t)(p->step - p->res->steps) + 1,
		    (unsigned long long)p->s.chunks[idx].logical);
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

static void warn_abort(struct planner *p, size_t idx);

/*
 * Whether a system block group of the single profile has room for the
 * chunk tree's new blocks. Converting metadata on 6.18, the chunk tree's
 * copy-on-write for the first new metadata chunk took a block of a single
 * system block group (btrfs_reserve_extent() into it, asked for the new
 * profile); beside a dup or raid1 one a system chunk of the new profile
 * came instead (traced with mkfs -m single, dup and raid1).
 */
static bool single_system_takes_chunk_tree(const struct plan_state *s)
{
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct ps_chunk *ch = &s->chunks[c];

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
 * chunk, ro_refused(): the convert fails with ENOSPC). 0, or a negative
 * errno.
 */
static int pair_chunk(struct plan_state *s, struct relocation *rel, int kind)
{
	int other = kind == BX_PLACE_KIND_SYSTEM ? BX_PLACE_KIND_METADATA : BX_PLACE_KIND_SYSTEM;
	long n;

	if (rel->pair_made || !rel->target[kind] || !rel->target[other])
		return 0;
	rel->pair_made = true;
	if (other == BX_PLACE_KIND_SYSTEM && single_system_takes_chunk_tree(s))
		return 0;
	n = ps_pool_chunk(s, rel->target[other], NULL);
	return n < 0 && n != -ENOSPC ? (int)n : 0;
}

/*
 * Moves chunk @idx: 0 moved, 1 no room (*@missing: what it still needed;
 * @fatal: the kernel would stop the whole change at once), or a negative
 * errno. *@target_out: the type of the chunks it needed.
 */
static int move_chunk(struct planner *p, struct relocation *rel, size_t idx, uint64_t *missing,
		      uint64_t *target_out, bool *fatal)
{
	struct plan_state *s = &p->s;
	int kind = bx_place_kind(s->chunks[idx].type);
	uint64_t target = rel->target[kind] ? rel->target[kind] : ps_alloc_type(s, kind_bit(kind));
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
	if (kind == BX_PLACE_KIND_DATA && !ps_used_of_kind(s, BTRFS_BLOCK_GROUP_DATA) &&
	    !(rel->reserve_once && rel->reserved)) {
		n = ps_pool_chunk(s, target, NULL);
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
	if (target != s->chunks[idx].type && kind != BX_PLACE_KIND_SYSTEM) {
		n = ps_pool_chunk(s, target, improve);
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
	if (kind != BX_PLACE_KIND_DATA && ro_refused(s, idx, target)) {
		n = kind == BX_PLACE_KIND_SYSTEM ? -ENOSPC : ps_pool_chunk(s, target, improve);
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
	if (kind != BX_PLACE_KIND_DATA && ps_pool_free(s, target) < need &&
	    little_headroom(s, target))
		p->step->tight = true;
	while (kind != BX_PLACE_KIND_DATA && ps_pool_free(s, target) < need) {
		n = ps_pool_chunk(s, target, improve);
		if (n == -ENOSPC)
			break;
		if (n < 0)
			return (int)n;
		if (undersized(s, (size_t)n))
			p->step->tight = true;
		n = target == rel->target[kind] ? pair_chunk(s, rel, kind) : 0;
		if (n)
			return (int)n;
	}
	/* Granted read-only with nothing else to write the commit into, the commit may abort. */
	if (kind == BX_PLACE_KIND_METADATA && ps_pool_free(s, target) < COMMIT_ROOM(s))
		warn_abort(p, idx);
	n = ps_commit(s);
	if (n)
		return (int)n;
	/* Data extents known: each lands where find_free_extent() puts it (plan-data.c). */
	if (kind == BX_PLACE_KIND_DATA && s->exact && !(target & BTRFS_BLOCK_GROUP_METADATA) &&
	    !(s->chunks[idx].type & BTRFS_BLOCK_GROUP_METADATA))
		return ps_move_extents(s, idx, target, improve, missing);
	for (;;) {
		if (ps_pool_take(s, target, need, &taken))
			return OOM();
		need -= taken;
		if (!need)
			break;
		n = ps_pool_chunk(s, target, improve);
		if (n == -ENOSPC)
			break;
		if (n < 0)
			return (int)n;
	}
	*missing = need;
	return need ? 1 : 0;
}

/* @pct percent of @len, as the kernel's balance filters compute it (div_factor_fine). */
static uint64_t percent_of(uint64_t len, unsigned int pct)
{
	return pct == 100 ? len : len * pct / 100;
}

/*
 * The kernel's usage filter (chunk_usage_range_filter; a single value N is
 * the range 0..N, chunk_usage_filter): the chunk is balanced when its used
 * bytes, as the balance reaches it, are at least MIN % and below MAX % of
 * its size; MAX 0 takes the empty ones. Mixed chunks take data's filter.
 */
static bool usage_selects(const struct bx_plan_change *f, const struct ps_chunk *c)
{
	bool data = c->type & BTRFS_BLOCK_GROUP_DATA;
	unsigned int min = data ? f->data_usage_min : f->metadata_usage_min;
	unsigned int max = data ? f->data_usage_max : f->metadata_usage_max;
	uint64_t low = min ? percent_of(c->length, min) : 0;
	uint64_t high = max ? percent_of(c->length, max) : 1;

	return low <= c->used && c->used < high;
}

/* Whether a balance (@rel's filters) takes chunk @idx when it reaches it. */
static bool balance_selects(const struct plan_state *s, const struct relocation *rel, size_t idx)
{
	const struct ps_chunk *c = &s->chunks[idx];
	uint64_t target = rel->target[bx_place_kind(c->type)];

	/* The soft filter: a chunk in the target profile already is left alone. */
	if (rel->soft && target &&
	    (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK) == (target & BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return false;
	return !rel->usage || usage_selects(rel->usage, c);
}

/* Whether chunk @idx still breaks the hints (earlier moves may have changed that). */
static int still_misplaced(const struct plan_state *s, size_t idx)
{
	struct bx_place_chunk c = place_chunk(s, idx);
	struct bx_place_verdict v;
	struct bx_place_model pm;
	int ret;

	ps_place_model(s, &pm);
	ret = bx_place_classify(&pm, &c, &v);
	if (!ret)
		ret = v.cls != BX_PLACE_OK;
	bx_place_verdict_release(&v);
	return ret == -ENOMEM ? OOM() : ret < 0 ? 0 : ret;
}

static int moved(struct planner *p, size_t idx)
{
	int ret = record_moved(p, idx);

	return ret ? ret : ps_free_chunk(&p->s, idx);
}

/*
 * One pass over @ml, in order. A move without room gives back what it took
 * at once (the kernel's relocation of that chunk fails and releases it); its
 * index stays in @ml for a retry, the shortage is counted.
 */
static int relocate_pass(struct planner *p, struct relocation *rel, struct move_list *ml)
{
	struct plan_state *s = &p->s;
	size_t kept = 0;

	ml->nr_shorts = 0;
	for (size_t i = 0; i < ml->nr; i++) {
		size_t idx = ml->idx[i], mark = s->nr_journal;
		uint64_t missing = 0, target;
		struct shortage *sh;
		bool fatal;
		int ret = rel->improve ? still_misplaced(s, idx) : balance_selects(s, rel, idx);

		if (ret <= 0) {
			s->chunks[idx].pending = false;
			if (ret < 0)
				return ret;
			continue;
		}
		ps_begin_move(s, idx);
		ret = move_chunk(p, rel, idx, &missing, &target, &fatal);
		ps_end_move(s, idx);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			ps_journal_keep(s, mark);
			s->chunks[idx].pending = false;
			ret = moved(p, idx);
			if (ret)
				return ret;
			continue;
		}
		ps_journal_undo(s, mark);
		sh = shortage_of(ml, target);
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
		struct shortage *sh = &ml->shorts[i];
		uint64_t room = ps_pool_free(s, sh->type);

		sh->missing = sh->used > room ? sh->used - room : 0;
		if (sh->missing < sh->largest)
			sh->missing = sh->largest;
	}
	return 0;
}

/*
 * A shrink whose chunks all move only because its second try found the room
 * the first one lacked: tight, and a warning that says why. The kernel
 * retries at once, and the space the failed first try preallocated may still
 * be held then (seen on an aged raid1c3: the retry failed with ENOSPC, and
 * the space came back at the next commit), where the model gives it back.
 */
static void warn_second_try(struct planner *p)
{
	p->step->tight_retry = true;
	add_warning(p, "change %zu moves some chunks only on the kernel's second try, after the "
		    "others made room; what the failed first try took may still be held then, and "
		    "the change then fails with ENOSPC (seen on an aged filesystem): free some "
		    "space or add a device first", (size_t)(p->step - p->res->steps) + 1);
}

static int relocate(struct planner *p, struct relocation *rel, struct move_list *ml)
{
	struct plan_state *s = &p->s;
	int ret;

	for (size_t i = 0; i < ml->nr; i++) {
		s->chunks[ml->idx[i]].pending = true;
		s->chunks[ml->idx[i]].start_used = s->chunks[ml->idx[i]].used;
	}
	ps_pools_reset(s);
	for (size_t c = 0; c < s->nr_chunks; c++) {
		ret = ps_pool_add(s, c);
		if (ret)
			return ret;
	}
	ret = relocate_pass(p, rel, ml);
	if (!ret && ml->nr && rel->retry) {
		ret = relocate_pass(p, rel, ml);
		if (!ret && !ml->nr)
			warn_second_try(p);
	}
	if (!ret)
		ret = ps_commit(s);
	for (size_t i = 0; i < ml->nr; i++)
		s->chunks[ml->idx[i]].pending = false;
	ps_pools_reset(s);
	return ret;
}

/* ---- impossible changes: why ---- */

static int tier_cmp(const void *a, const void *b)
{
	const struct bx_plan_short_dev *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	return x->devid < y->devid ? -1 : x->devid > y->devid;
}

/* The devices that may take chunks of @sh->type, with their room now. */
static int fill_short(const struct plan_state *s, const struct shortage *sh,
		      struct bx_plan_short *out)
{
	*out = (struct bx_plan_short){ .type = sh->type, .missing = sh->missing,
				       .chunks = sh->chunks };
	out->devs = calloc(s->nr_devs + 1, sizeof(*out->devs));
	if (!out->devs)
		return OOM();
	for (size_t i = 0; i < s->nr_devs; i++) {
		int tier = bx_alloc_hint_tier(s->adevs[i].hint, sh->type, s->params.flags, NULL);

		if (!s->adevs[i].writable || tier == BX_TIER_NEVER)
			continue;
		out->devs[out->nr_devs++] = (struct bx_plan_short_dev){
			.devid = s->adevs[i].devid, .hint = s->adevs[i].hint, .tier = (uint32_t)tier,
			.unallocated = ps_unallocated(s, i) };
	}
	qsort(out->devs, out->nr_devs, sizeof(*out->devs), tier_cmp);
	return 0;
}

static void short_text(const struct bx_plan_short *sh, char *buf, size_t len)
{
	struct bx_raid_attr attr = { .devs_min = 1 };
	char missing[32], room[32];
	uint64_t total = 0;
	size_t used;

	for (size_t i = 0; i < sh->nr_devs; i++)
		total += sh->devs[i].unallocated;
	bx_raid_attr(sh->type, &attr);
	bx_pretty_size(sh->missing, 0, missing, sizeof(missing));
	bx_pretty_size(total, 0, room, sizeof(room));
	used = (size_t)snprintf(buf, len, "%s %s is short by %s for %u chunk%s: the devices it may "
				"use have %s unallocated (", bx_place_type_name(sh->type),
				bx_profile_name(sh->type), missing, sh->chunks,
				sh->chunks == 1 ? "" : "s", room);
	for (size_t i = 0; i < sh->nr_devs && used < len; i++) {
		char hint[32], free_[32];

		bx_hint_describe(sh->devs[i].hint, hint, sizeof(hint));
		bx_pretty_size(sh->devs[i].unallocated, 0, free_, sizeof(free_));
		used += (size_t)snprintf(buf + used, len - used, "%sdevid %llu %s tier %u: %s",
					 i ? ", " : "", (unsigned long long)sh->devs[i].devid,
					 hint, sh->devs[i].tier, free_);
	}
	if (used < len)
		snprintf(buf + used, len - used, "%s), and each chunk needs %d device%s with room",
			 sh->nr_devs ? "" : "none", attr.devs_min, attr.devs_min == 1 ? "" : "s");
}

static int step_short(struct planner *p, const struct move_list *ml, const char *what)
{
	struct bx_plan_step *st = p->step;
	size_t used;

	st->status = BX_PLAN_STEP_IMPOSSIBLE;
	st->shorts = calloc(ml->nr_shorts + 1, sizeof(*st->shorts));
	if (!st->shorts)
		return OOM();
	used = (size_t)snprintf(st->reason, sizeof(st->reason), "%s (the kernel's ENOSPC): ", what);
	for (size_t i = 0; i < ml->nr_shorts; i++) {
		int ret = fill_short(&p->s, &ml->shorts[i], &st->shorts[i]);

		if (ret)
			return ret;
		st->nr_short++;
		if (used < sizeof(st->reason)) {
			if (i)
				used += (size_t)snprintf(st->reason + used, sizeof(st->reason) - used,
							 "; ");
			if (used < sizeof(st->reason))
				short_text(&st->shorts[i], st->reason + used,
					   sizeof(st->reason) - used);
			used = strlen(st->reason);
		}
	}
	return 0;
}

/* ---- which chunks a change moves ---- */

struct chunk_key {
	size_t idx;
	uint64_t key;
};

static int key_desc(const void *a, const void *b)
{
	const struct chunk_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The chunks with an extent on @devid ending beyond @end, from the highest
 * extent down (btrfs_shrink_device's order); @end 0: every chunk there.
 */
static int chunks_on_device(const struct plan_state *s, uint64_t devid, uint64_t end,
			    struct move_list *ml)
{
	struct chunk_key *keys = calloc(s->nr_chunks + 1, sizeof(*keys));
	size_t nr = 0;

	if (!keys)
		return OOM();
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct ps_chunk *pc = &s->chunks[c];
		bool found = false;
		uint64_t top = 0;

		for (uint32_t k = 0; !pc->gone && k < pc->num_stripes; k++) {
			if (pc->stripes[k].devid != devid ||
			    pc->stripes[k].physical + pc->stripe_size <= end)
				continue;
			found = true;
			if (pc->stripes[k].physical > top)
				top = pc->stripes[k].physical;
		}
		if (found)
			keys[nr++] = (struct chunk_key){ c, top };
	}
	qsort(keys, nr, sizeof(*keys), key_desc);
	ml->idx = calloc(nr + 1, sizeof(*ml->idx));
	if (!ml->idx) {
		free(keys);
		return OOM();
	}
	for (size_t i = 0; i < nr; i++)
		ml->idx[i] = keys[i].idx;
	ml->nr = nr;
	free(keys);
	return 0;
}

/* The chunks with any of @types bits, the last one first (balance's order). */
static int chunks_of_type(const struct plan_state *s, uint64_t types, struct move_list *ml)
{
	ml->idx = calloc(s->nr_chunks + 1, sizeof(*ml->idx));
	if (!ml->idx)
		return OOM();
	for (size_t c = s->nr_chunks; c-- > 0;)
		if (!s->chunks[c].gone && (s->chunks[c].type & types))
			ml->idx[ml->nr++] = c;
	return 0;
}

/* ---- the changes ---- */

static int devid_error(const struct planner *p, const char *op, uint64_t devid)
{
	long d = ps_dev_index(&p->s, devid);

	if (d >= 0 && p->s.devs[d].removed)
		return bx_error(-EINVAL, "--%s: devid %llu is removed by an earlier change", op,
				(unsigned long long)devid);
	return bx_error(-EINVAL, "--%s: devid %llu is not in the filesystem (devids: see "
			"'btrfsx filesystem usage -T')", op, (unsigned long long)devid);
}

/* The index of a device a change may act on, or -EINVAL with the message. */
static long target_device(const struct planner *p, const struct bx_plan_change *c)
{
	long d = ps_dev_index(&p->s, c->devid);

	if (d < 0 || p->s.devs[d].removed)
		return devid_error(p, bx_plan_op_name(c->op), c->devid);
	return d;
}

static int check_size(const char *op, uint64_t size)
{
	char bound[32];

	if (size > BX_PLAN_MAX_DEVICE) {
		bx_pretty_size(BX_PLAN_MAX_DEVICE, 0, bound, sizeof(bound));
		return bx_error(-EINVAL, "--%s: the planner takes devices of at most %s", op,
				bound);
	}
	if (size >= BX_PLAN_MIN_DEVICE)
		return 0;
	bx_pretty_size(BX_PLAN_MIN_DEVICE, 0, bound, sizeof(bound));
	return bx_error(-EINVAL, "--%s: a device must be at least %s (the kernel's smallest "
			"resize)", op, bound);
}

static int apply_add(struct planner *p, const struct bx_plan_change *c)
{
	long d;
	int ret = check_size("add", c->size);

	if (ret)
		return ret;
	d = ps_add_device(&p->s, c->size, c->has_hint ? c->hint : BX_HINT_DATA_PREFERRED);
	if (d < 0)
		return (int)d;
	p->step->devid = p->s.devs[d].info.devid;
	return 0;
}

/* Devices left once @d goes: enough for every profile in use (btrfs_check_raid_min_devices)? */
static int check_remove(const struct planner *p, size_t d)
{
	size_t left = 0;

	for (size_t i = 0; i < p->s.nr_devs; i++)
		left += !p->s.devs[i].removed && i != d;
	for (size_t i = 0; i < p->s.nr_spaces; i++) {
		const struct bx_usage_space *sp = &p->s.spaces[i];
		struct bx_raid_attr attr;

		if ((sp->flags & BX_SPACE_INFO_GLOBAL_RSV) || bx_raid_attr(sp->flags, &attr) ||
		    (size_t)attr.devs_min <= left)
			continue;
		return bx_error(-EINVAL, "--remove: removing devid %llu leaves %zu device%s, but "
				"%s %s needs %d (convert it first: --convert before --remove)",
				(unsigned long long)p->s.devs[d].info.devid, left,
				left == 1 ? "" : "s", bx_place_type_name(sp->flags),
				bx_profile_name(sp->flags), attr.devs_min);
	}
	return 0;
}

static void set_writable(struct plan_state *s, size_t d, bool writable)
{
	s->adevs[d].writable = writable;
	s->devs[d].info.writable = writable;
}

static int apply_remove(struct planner *p, const struct bx_plan_change *c)
{
	struct relocation rel = { .retry = true };
	struct move_list ml = { 0 };
	long d = target_device(p, c);
	bool was_writable;
	char what[96];
	int ret;

	if (d < 0)
		return (int)d;
	ret = check_remove(p, (size_t)d);
	if (ret)
		return ret;
	p->step->devid = c->devid;
	was_writable = p->s.adevs[d].writable;
	set_writable(&p->s, (size_t)d, false);
	p->s.devs[d].removed = true;
	ret = chunks_on_device(&p->s, c->devid, 0, &ml);
	if (!ret)
		ret = relocate(p, &rel, &ml);
	if (!ret && ml.nr) {
		snprintf(what, sizeof(what), "the other devices cannot take the chunks of devid %llu",
			 (unsigned long long)c->devid);
		ret = step_short(p, &ml, what);
		/* The kernel gives up: the device stays, what moved stays moved. */
		p->s.devs[d].removed = false;
		set_writable(&p->s, (size_t)d, was_writable);
	}
	free(ml.idx);
	return ret;
}

/*
 * "DEVID=max": the size of the device (or image file) itself, rounded down
 * to the sector as the kernel's resize does. A device the plan adds has no
 * size but the one --add gave it.
 */
static int resize_max(const struct planner *p, size_t d, uint64_t *size)
{
	const struct ps_dev *dev = &p->s.devs[d];
	uint32_t sector = p->s.in->sectorsize ? p->s.in->sectorsize : 4096;

	if (dev->added)
		return bx_error(-EINVAL, "--resize: devid %llu=max: the plan adds devid %llu, whose "
				"size is the one --add gives; resize it to a size",
				(unsigned long long)dev->info.devid,
				(unsigned long long)dev->info.devid);
	if (!dev->info.device_size)
		return bx_error(-EINVAL, "--resize: devid %llu=max: the size of its device is not "
				"known; give a size", (unsigned long long)dev->info.devid);
	*size = dev->info.device_size - dev->info.device_size % sector;
	return 0;
}

static int apply_resize(struct planner *p, const struct bx_plan_change *c)
{
	struct relocation rel = { .retry = true };
	struct move_list ml = { 0 };
	long d = target_device(p, c);
	uint64_t old, size = c->size;
	int ret;

	if (d < 0)
		return (int)d;
	if (p->s.devs[d].info.missing)
		return bx_error(-EINVAL, "--resize: devid %llu is missing", (unsigned long long)c->devid);
	ret = size == BX_PLAN_SIZE_MAX ? resize_max(p, (size_t)d, &size) : 0;
	if (!ret)
		ret = check_size("resize", size);
	if (ret)
		return ret;
	p->step->devid = c->devid;
	old = p->s.devs[d].info.total_bytes;
	if (size > p->s.devs[d].info.device_size) {
		char now[32];

		bx_pretty_size(p->s.devs[d].info.device_size, 0, now, sizeof(now));
		add_warning(p, "devid %llu is %s: grow the device (or partition) first for '%s'",
			    (unsigned long long)c->devid, now, "btrfs filesystem resize");
	}
	ret = ps_commit(&p->s);
	if (!ret)
		ret = ps_resize_device(&p->s, (size_t)d, size);
	if (ret || size >= old)
		return ret;
	ret = chunks_on_device(&p->s, c->devid, size, &ml);
	if (!ret)
		ret = relocate(p, &rel, &ml);
	if (!ret && ml.nr) {
		char what[96];

		snprintf(what, sizeof(what), "devid %llu cannot shrink: its chunks beyond the new "
			 "end find no room", (unsigned long long)c->devid);
		ret = step_short(p, &ml, what);
		if (!ret)
			ret = ps_resize_device(&p->s, (size_t)d, old);
	}
	free(ml.idx);
	return ret;
}

/*
 * The one guard-rail rule, for a hint and a convert alike: after the
 * change, every block group type the filesystem uses (@types: type and
 * profile bits) must find its profile's minimum device count among the
 * devices whose hint allows it, else the kernel could not allocate such a
 * chunk (a kernel that honours hints fails a convert with ENOSPC; btrfsx
 * device property set refuses such a hint). @set_devid: the device whose
 * hint the change sets to @hint (0: none). Returns false, with the step
 * impossible and the reason, when the rule refuses the change.
 */
static bool guard_rails_pass(struct planner *p, uint64_t set_devid, uint64_t hint,
			     const uint64_t *types, size_t nr_types, const char *what)
{
	uint64_t *hints = calloc(p->s.nr_devs + 1, sizeof(*hints));
	struct bx_hint_shortfall why;
	char text[256];
	size_t nr = 0;
	bool fit;

	if (!hints)
		return true;	/* the caller's next allocation reports the shortage */
	for (size_t i = 0; i < p->s.nr_devs; i++)
		if (!p->s.devs[i].removed)
			hints[nr++] = p->s.devs[i].info.devid == set_devid ? hint :
				      p->s.devs[i].info.hint;
	fit = bx_hint_profiles_fit(types, nr_types, hints, nr, &why);
	free(hints);
	if (fit)
		return true;
	bx_hint_shortfall_text(&why, text, sizeof(text));
	p->step->status = BX_PLAN_STEP_IMPOSSIBLE;
	snprintf(p->step->reason, sizeof(p->step->reason), "the guard rails refuse %s: %s "
		 "(btrfsx device property set refuses a hint that leaves a profile so, and a kernel "
		 "that honours hints fails a convert to it with ENOSPC)", what, text);
	return false;
}

/* The block group types in use, with those of @kinds replaced by @targets (0: none). */
static uint64_t *types_after(const struct plan_state *s, uint64_t kinds, const uint64_t *targets,
			     size_t nr_targets, size_t *nr)
{
	uint64_t *types = calloc(s->nr_spaces + nr_targets + 1, sizeof(*types));

	*nr = 0;
	for (size_t i = 0; types && i < s->nr_spaces; i++)
		if (!(s->spaces[i].flags & kinds))
			types[(*nr)++] = s->spaces[i].flags;
	for (size_t i = 0; types && i < nr_targets; i++)
		types[(*nr)++] = targets[i];
	return types;
}

/* The guard rails of `btrfsx device property set` on the state with @d set to @hint. */
static int apply_hint(struct planner *p, const struct bx_plan_change *c)
{
	long d = target_device(p, c);
	uint64_t *types;
	size_t nr;
	bool fit;

	if (d < 0)
		return (int)d;
	p->step->devid = c->devid;
	types = types_after(&p->s, 0, NULL, 0, &nr);
	if (!types)
		return OOM();
	fit = guard_rails_pass(p, c->devid, c->hint, types, nr, "the hint");
	free(types);
	if (fit)
		ps_set_hint(&p->s, (size_t)d, c->hint);
	return 0;
}

static int check_convert(const struct planner *p, const struct bx_plan_change *c)
{
	struct bx_raid_attr attr;
	size_t writable = ps_nr_writable(&p->s);
	bool data = c->type & BTRFS_BLOCK_GROUP_DATA;

	if (ps_is_mixed(&p->s))
		return bx_error(-EINVAL, "--convert: the filesystem has mixed block groups "
				"(data and metadata together); the planner does not "
				"convert those");
	if (p->converted[!data])
		return bx_error(-EINVAL, "--convert: %s is converted twice in one plan (conflicting "
				"changes)", data ? "data" : "metadata");
	if (bx_raid_attr(c->type | c->profile, &attr))
		return bx_error(-EINVAL, "--convert: not a profile");
	if ((size_t)attr.devs_min > writable)
		return bx_error(-EINVAL, "--convert: %s needs at least %d devices; the filesystem "
				"has %zu writable at that point", bx_profile_name(c->profile),
				attr.devs_min, writable);
	return 0;
}

/* The guard rails on the types a convert leaves (@target by placement kind). */
static int check_convert_guard_rails(struct planner *p, bool data, const uint64_t *target)
{
	uint64_t kinds = data ? BTRFS_BLOCK_GROUP_DATA :
			 BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM;
	uint64_t targets[2] = { target[data ? BX_PLACE_KIND_DATA : BX_PLACE_KIND_METADATA],
				target[BX_PLACE_KIND_SYSTEM] };
	size_t nr;
	uint64_t *types = types_after(&p->s, kinds, targets, data ? 1 : 2, &nr);

	if (!types)
		return OOM();
	guard_rails_pass(p, 0, 0, types, nr, "the convert");
	free(types);
	return 0;
}

static void warn_redundancy(struct planner *p, const struct bx_plan_change *c)
{
	uint64_t old = ps_alloc_type(&p->s, BTRFS_BLOCK_GROUP_METADATA);
	struct bx_raid_attr a, b;

	if (!(c->type & BTRFS_BLOCK_GROUP_METADATA) || bx_raid_attr(old, &a) ||
	    bx_raid_attr(c->type | c->profile, &b))
		return;
	if (b.ncopies + b.nparity < a.ncopies + a.nparity)
		add_warning(p, "converting metadata from %s to %s reduces its redundancy: btrfs "
			    "balance refuses without --force", bx_profile_name(old),
			    bx_profile_name(c->profile));
}

static int apply_convert(struct planner *p, const struct bx_plan_change *c)
{
	struct relocation rel = { .reserve_once = true };
	struct move_list ml = { 0 };
	bool data = c->type & BTRFS_BLOCK_GROUP_DATA;
	int ret = check_convert(p, c);

	if (ret)
		return ret;
	p->converted[!data] = true;
	warn_redundancy(p, c);
	if (data) {
		rel.target[BX_PLACE_KIND_DATA] = BTRFS_BLOCK_GROUP_DATA | c->profile;
	} else {
		rel.target[BX_PLACE_KIND_METADATA] = BTRFS_BLOCK_GROUP_METADATA | c->profile;
		rel.target[BX_PLACE_KIND_SYSTEM] = BTRFS_BLOCK_GROUP_SYSTEM | c->profile;
	}
	ret = check_convert_guard_rails(p, data, rel.target);
	if (ret || p->step->status == BX_PLAN_STEP_IMPOSSIBLE)
		return ret;
	ret = chunks_of_type(&p->s, data ? BTRFS_BLOCK_GROUP_DATA :
			     BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM, &ml);
	if (!ret)
		ret = relocate(p, &rel, &ml);
	if (!ret && ml.nr) {
		char what[96];

		snprintf(what, sizeof(what), "the devices cannot hold %s in %s",
			 data ? "data" : "metadata", bx_profile_name(c->profile));
		ret = step_short(p, &ml, what);
	}
	free(ml.idx);
	return ret;
}

/*
 * A replace copies the device block group by block group, each read-only
 * meanwhile (scrub). Without another system block group with room, the
 * kernel allocates one (check_system_chunk). Without another metadata block
 * group with room, whether it allocates a metadata chunk depends on a
 * transaction committing during that copy (seen both ways on the same
 * layout): the plan leaves it out and calls the replace tight.
 */
/* The replace stops at metadata chunk @idx: it cannot be made read-only (ENOSPC). */
static int replace_refused(struct planner *p, size_t idx)
{
	const struct ps_chunk *c = &p->s.chunks[idx];

	p->step->status = BX_PLAN_STEP_IMPOSSIBLE;
	snprintf(p->step->reason, sizeof(p->step->reason), "the kernel's ENOSPC: the replace "
		 "makes each block group read-only while it copies it, and %s block group %llu "
		 "cannot be (its %llu free bytes are more than its type can spare, and the "
		 "kernel forces no system chunk, nor a metadata chunk the devices have no room "
		 "for)",
		 bx_place_type_name(c->type), (unsigned long long)c->logical,
		 (unsigned long long)(c->length - c->used));
	return 1;
}

/*
 * The system chunk the replace had to make (@made) while the only one with
 * room (@ro) was read-only. On Linux 6.1 the chunk tree went into it (its
 * chunk item rewrote the tree while @ro was read-only) and @ro, copied
 * empty, went at rest: seen in every such replace there (2). On 6.18 @ro
 * mostly kept the chunk tree and the new one, never used, went (6.8 and
 * later delete those, see kernel_cleans_new_block_groups): 13 of 14 aged
 * replaces; in one the tree moved as on 6.1, and the plan was 8 MiB off on
 * each device. Which happens is not on the disk (whether the tree's leaf was
 * rewritten earlier in that transaction, most likely); no kernel in between
 * was tried; the plan draws the line with that trait.
 */
static int system_made(struct plan_state *s, size_t ro, size_t made)
{
	if (!s->in->kernel_cleans_new_block_groups) {
		s->chunks[made].used = s->chunks[ro].used;
		s->chunks[ro].used = 0;
		s->chunks[ro].unused_listed = true;
	}
	return ps_pool_add(s, made);
}

static int replace_read_only_pass(struct planner *p, uint64_t devid)
{
	struct move_list ml = { 0 };
	struct plan_state *s = &p->s;
	int ret = chunks_on_device(s, devid, 0, &ml);

	ps_pools_reset(s);
	for (size_t c = 0; !ret && c < s->nr_chunks; c++)
		ret = ps_pool_add(s, c);
	/* Scrub goes up the device; chunks_on_device lists them down. */
	for (size_t i = ml.nr; !ret && i-- > 0;) {
		size_t idx = ml.idx[i];
		uint64_t type = ps_alloc_type(s, s->chunks[idx].type & BTRFS_BLOCK_GROUP_TYPE_MASK);
		long n;

		/*
		 * Copied and read-write again, an empty one goes on the cleaner's
		 * list (scrub_enumerate_chunks(): its read-only spell may have
		 * kept the cleaner from it).
		 */
		s->chunks[idx].unused_listed |= !s->chunks[idx].used;
		if (s->chunks[idx].type & BTRFS_BLOCK_GROUP_DATA)
			continue;
		ps_begin_move(s, idx);
		if ((s->chunks[idx].type & BTRFS_BLOCK_GROUP_SYSTEM) && ro_refused(s, idx, type)) {
			/* A system chunk is never forced (btrfs_chunk_alloc() refuses): ENOSPC. */
			ret = replace_refused(p, idx);
		} else if ((s->chunks[idx].type & BTRFS_BLOCK_GROUP_METADATA) &&
			   ro_refused(s, idx, type)) {
			/* btrfs_inc_block_group_ro() forces a chunk; without one the replace fails. */
			n = ps_alloc_chunk(s, type, NULL);
			if (n >= 0)
				ret = ps_pool_add(s, (size_t)n);
			else if (n == -ENOSPC)
				ret = replace_refused(p, idx);
			else
				ret = (int)n;
		} else if (!ps_pool_free(s, type)) {
			if (s->chunks[idx].type & BTRFS_BLOCK_GROUP_METADATA) {
				p->step->tight = true;
			} else {
				n = ps_alloc_chunk(s, type, NULL);
				if (n >= 0)
					ret = system_made(s, idx, (size_t)n);
				else if (n != -ENOSPC)
					ret = (int)n;
			}
		}
		ps_end_move(s, idx);
	}
	ps_pools_reset(s);
	free(ml.idx);
	return ret;
}

/* Bytes a replace copies from @devid: each stripe there holds its share of the used bytes. */
static uint64_t replace_copies(const struct plan_state *s, uint64_t devid)
{
	uint64_t bytes = 0;

	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct ps_chunk *pc = &s->chunks[c];

		for (uint32_t k = 0; !pc->gone && pc->length && k < pc->num_stripes; k++)
			if (pc->stripes[k].devid == devid)
				bytes += (uint64_t)((double)pc->used * (double)pc->stripe_size /
						    (double)pc->length);
	}
	return bytes;
}

static int apply_replace(struct planner *p, const struct bx_plan_change *c)
{
	long d = target_device(p, c);
	struct ps_dev *dev;
	char old[32], want[32], hint[32];
	int ret;

	if (d < 0)
		return (int)d;
	dev = &p->s.devs[d];
	bx_pretty_size(dev->info.total_bytes, 0, old, sizeof(old));
	bx_pretty_size(c->size, 0, want, sizeof(want));
	ret = check_size("replace", c->size);
	if (ret)
		return ret;
	if (c->size < dev->info.total_bytes)
		return bx_error(-EINVAL, "--replace: the new device (%s) is smaller than devid %llu "
				"(%s); the kernel's replace needs at least its size", want,
				(unsigned long long)c->devid, old);
	p->step->devid = c->devid;
	p->step->copied_bytes = replace_copies(&p->s, c->devid);
	bx_hint_describe(dev->info.hint, hint, sizeof(hint));
	if (dev->info.hint != BX_HINT_DATA_PREFERRED && !c->has_hint)
		add_warning(p, "devid %llu: a replace does not copy the allocation hint; the new device "
			    "is data_preferred, not %s, until it is set again (the plan models that; "
			    "--replace %llu=SIZE:%s sets it)", (unsigned long long)c->devid, hint,
			    (unsigned long long)c->devid, hint);
	else if (c->has_hint)
		add_warning(p, "devid %llu: a replace does not copy the allocation hint; the plan "
			    "sets it right after the replace (btrfsx device property set <new "
			    "device> allocation_hint ...)", (unsigned long long)c->devid);
	if (c->size > dev->info.total_bytes)
		add_warning(p, "devid %llu: the filesystem uses %s of the new %s device until 'btrfs "
			    "filesystem resize %llu:max'", (unsigned long long)c->devid, old, want,
			    (unsigned long long)c->devid);
	ret = replace_read_only_pass(p, c->devid);
	if (ret)
		return ret > 0 ? 0 : ret;	/* > 0: refused, the step says why */
	dev = &p->s.devs[d];
	dev->replaced = true;
	dev->info.device_size = c->size;
	dev->info.path[0] = '\0';
	dev->info.missing = false;
	set_writable(&p->s, (size_t)d, true);
	ps_set_hint(&p->s, (size_t)d, c->has_hint ? c->hint : BX_HINT_DATA_PREFERRED);
	return 0;
}

/* ---- balance: usage filters, and a paused balance resumed ---- */

/*
 * What btrfs balance refuses of a usage filter (the library's callers can
 * pass any bytes; the command line's parser refuses the same).
 */
static int check_balance(const struct planner *p, const struct bx_plan_change *c)
{
	const uint64_t kinds = BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;

	if (!(c->type & kinds) || (c->type & ~kinds))
		return bx_error(-EINVAL, "--balance: name data (dusage=), metadata (musage=) or "
				"both");
	if (((c->type & BTRFS_BLOCK_GROUP_DATA) &&
	     (c->data_usage_max > 100 || c->data_usage_min > c->data_usage_max)) ||
	    ((c->type & BTRFS_BLOCK_GROUP_METADATA) &&
	     (c->metadata_usage_max > 100 || c->metadata_usage_min > c->metadata_usage_max)))
		return bx_error(-EINVAL, "--balance: a usage range is 0 .. 100 percent, its "
				"minimum at most its maximum");
	/* btrfs_balance(): with mixed block groups both kinds are one and must match. */
	if (ps_is_mixed(&p->s) &&
	    (c->type != kinds || c->data_usage_min != c->metadata_usage_min ||
	     c->data_usage_max != c->metadata_usage_max))
		return bx_error(-EINVAL, "--balance: the filesystem has mixed block groups: data "
				"and metadata need the same filter (btrfs balance refuses others)");
	return 0;
}

/* The chunks of the kinds in @types (metadata takes system along), as the balance walks them. */
static int balance_chunks(const struct plan_state *s, uint64_t types, struct move_list *ml)
{
	if (types & BTRFS_BLOCK_GROUP_METADATA)
		types |= BTRFS_BLOCK_GROUP_SYSTEM;
	return chunks_of_type(s, types, ml);
}

/*
 * The chunks the balance selected and could not move stay where they are;
 * the kernel moves the others and then fails the balance with ENOSPC.
 */
static int balance_short(struct planner *p, const struct move_list *ml)
{
	return step_short(p, ml, "chunks the balance selects find no room; btrfs balance moves "
			  "the others and then fails");
}

static int apply_balance(struct planner *p, const struct bx_plan_change *c)
{
	struct relocation rel = { .reserve_once = true, .usage = c };
	struct move_list ml = { 0 };
	int ret = check_balance(p, c);

	if (!ret)
		ret = balance_chunks(&p->s, c->type, &ml);
	if (!ret)
		ret = relocate(p, &rel, &ml);
	if (!ret && ml.nr)
		ret = balance_short(p, &ml);
	free(ml.idx);
	return ret;
}

/* Whether a chunk of @type that no earlier change removed is there. */
static bool have_chunk_of(const struct plan_state *s, uint64_t type)
{
	for (size_t c = 0; c < s->nr_chunks; c++)
		if (!s->chunks[c].gone && s->chunks[c].type == type)
			return true;
	return false;
}

/*
 * btrfs balance resume (or the mount that resumes an interrupted one): the
 * kernel turns on the soft filter of every kind the balance converts
 * (update_balance_args), so the chunks already converted stay, and walks
 * the chunks again from the last down. The balance is over afterwards,
 * also when a chunk found no room (the kernel then closes it with ENOSPC).
 */
static int apply_resume(struct planner *p)
{
	const struct bx_usage_input *in = p->s.in;
	struct relocation rel = { .reserve_once = true, .soft = true };
	struct move_list ml = { 0 };
	uint64_t types = 0;
	int ret;

	if (p->s.balance_ended || in->balance == BX_USAGE_BALANCE_NONE)
		return bx_error(-EINVAL, "--resume: there is no paused or interrupted balance to "
				"resume");
	if (in->balance == BX_USAGE_BALANCE_RUNNING)
		return bx_error(-EINVAL, "--resume: the balance is running and goes on by "
				"itself ('btrfs balance resume' refuses); pause it first to plan "
				"the rest");
	for (int k = 0; k < BX_PLACE_NR_KINDS; k++) {
		rel.target[k] = in->balance_target[k];
		if (rel.target[k])
			types |= kind_bit(k);
	}
	if (!types)
		return bx_error(-EINVAL, "--resume: the balance converts nothing; the planner "
				"models the rest of a conversion only");
	rel.pair_made = !rel.target[BX_PLACE_KIND_SYSTEM] ||
			have_chunk_of(&p->s, rel.target[BX_PLACE_KIND_SYSTEM]);
	ret = chunks_of_type(&p->s, types, &ml);
	if (!ret)
		ret = relocate(p, &rel, &ml);
	if (!ret && ml.nr)
		ret = balance_short(p, &ml);
	p->s.balance_ended = true;
	free(ml.idx);
	return ret;
}

/* ---- relocate: the misplaced chunks, as `btrfsx balance misplaced` moves them ---- */

/*
 * The index of the chunk at @logical in @alive (indexes of the chunks not
 * gone, by address), or SIZE_MAX.
 */
static size_t find_chunk(const struct plan_state *s, const size_t *alive, size_t nr,
			 uint64_t logical)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->chunks[alive[mid]].logical < logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && s->chunks[alive[lo]].logical == logical ? alive[lo] : SIZE_MAX;
}

/* The misplaced chunks of the state now, in the order the relocation takes them. */
static int misplaced_now(struct planner *p, struct bx_misplaced_report *rep, bool *effective)
{
	struct bx_usage_input in;
	int ret = ps_materialize(&p->s, &in);

	if (ret)
		return ret;
	*effective = in.hints_effective;
	ret = bx_misplaced_compute_quiet(&in, rep);
	bx_usage_input_release(&in);
	return ret;
}

/* bx_place_room's answer for the whole list: the room check the relocation starts with. */
static int room_check(struct planner *p, const struct bx_misplaced_report *rep,
		      struct move_list *ml)
{
	struct bx_place_chunk *moves = calloc(rep->nr_chunks + 1, sizeof(*moves));
	struct bx_place_model pm;
	struct bx_place_room room;
	int ret;

	if (!moves)
		return OOM();
	for (size_t i = 0; i < rep->nr_chunks; i++) {
		const struct bx_misplaced_chunk *c = &rep->chunks[i];

		moves[i] = (struct bx_place_chunk){ c->logical, c->length, c->used, c->type,
						    c->num_stripes, c->stripes };
	}
	ps_place_model(&p->s, &pm);
	ret = bx_place_room(&pm, moves, rep->nr_chunks, rep->pool, &room);
	free(moves);
	if (ret)
		return ret == -ENOMEM ? OOM() : bx_error(-EOPNOTSUPP, "the placement model failed");
	ml->nr_shorts = 0;
	for (int k = 0; k < BX_PLACE_NR_KINDS; k++) {
		struct shortage *sh;

		if (!room.short_moves[k])
			continue;
		sh = shortage_of(ml, pm.new_type[k]);
		sh->missing = room.missing[k];
		sh->chunks = room.short_moves[k];
	}
	return 0;
}

/*
 * The chunks of @rep the relocation takes, as indexes into the state,
 * leaving out those this step made (chunks the relocation itself created
 * are not moved again, as in relocate/). Returns 0 or -ENOMEM.
 */
static int misplaced_list(struct planner *p, const struct bx_misplaced_report *rep,
			  size_t first_new, struct move_list *ml)
{
	size_t *alive = calloc(p->s.nr_chunks + 1, sizeof(*alive)), nr_alive = 0;

	free(ml->idx);
	*ml = (struct move_list){ .idx = calloc(rep->nr_chunks + 1, sizeof(*ml->idx)) };
	if (!alive || !ml->idx) {
		free(alive);
		return OOM();
	}
	/* Not gone, they are in address order. */
	for (size_t c = 0; c < p->s.nr_chunks; c++)
		if (!p->s.chunks[c].gone)
			alive[nr_alive++] = c;
	for (size_t i = 0; i < rep->nr_chunks; i++) {
		size_t idx = find_chunk(&p->s, alive, nr_alive, rep->chunks[i].logical);

		if (idx != SIZE_MAX && idx < first_new)
			ml->idx[ml->nr++] = idx;
	}
	free(alive);
	return 0;
}

/*
 * `btrfsx balance misplaced` reads the filesystem again after every chunk:
 * a chunk can become misplaced once others moved (a preferred device got
 * room). Passes over the misplaced chunks until none is left or a pass
 * moves nothing; the room check is the run's, before the first.
 */
#define RELOCATE_PASSES 8

static int apply_relocate(struct planner *p)
{
	struct relocation rel = { .improve = true };
	struct move_list ml = { 0 };
	size_t first_new = p->s.nr_chunks;
	int ret = 0;

	for (int pass = 0; pass < RELOCATE_PASSES && !ret; pass++) {
		struct bx_misplaced_report rep;
		uint64_t moved = p->step->moved_chunks;
		bool effective;

		ret = misplaced_now(p, &rep, &effective);
		if (ret)
			break;
		if (!pass && !effective && rep.nr_chunks) {
			p->step->status = BX_PLAN_STEP_IMPOSSIBLE;
			snprintf(p->step->reason, sizeof(p->step->reason), "the running kernel "
				 "ignores allocation hints: btrfsx balance misplaced refuses (its "
				 "--force moves the chunks without them)");
		} else if (!pass) {
			ret = room_check(p, &rep, &ml);
			if (!ret && ml.nr_shorts)
				ret = step_short(p, &ml, "the devices the hints prefer have no room "
						 "for every misplaced chunk; btrfsx balance misplaced "
						 "refuses");
		}
		if (!ret && p->step->status != BX_PLAN_STEP_IMPOSSIBLE)
			ret = misplaced_list(p, &rep, first_new, &ml);
		bx_misplaced_report_release(&rep);
		if (ret || p->step->status == BX_PLAN_STEP_IMPOSSIBLE || !ml.nr)
			break;
		ret = relocate(p, &rel, &ml);
		if (!ret && ml.nr) {
			ret = step_short(p, &ml, "a misplaced chunk finds no better place");
			break;
		}
		if (p->step->moved_chunks == moved)
			break;
	}
	free(ml.idx);
	return ret;
}

/*
 * A balance running, paused or interrupted (the next mount resumes it, or
 * holds it paused with skip_balance) holds the kernel's exclusive
 * operation: it refuses every device remove, resize, replace and balance
 * (a convert, a relocation) meanwhile, and a device add too while it runs.
 * Hints are sysfs writes (or offline), no exclusive operation. True when
 * the change is refused, with the reason in the step.
 */
static const char *exclusive_op(enum bx_plan_op op)
{
	switch (op) {
	case BX_PLAN_ADD:
		return "device add";
	case BX_PLAN_REMOVE:
		return "device remove";
	case BX_PLAN_REPLACE:
		return "device replace";
	case BX_PLAN_RESIZE:
		return "resize";
	default:
		return "new balance";
	}
}

static bool refused_by_balance(struct planner *p, const struct bx_plan_change *c)
{
	enum bx_usage_balance balance = p->s.balance_ended ? BX_USAGE_BALANCE_NONE :
					p->s.in->balance;
	const char *state = bx_usage_balance_name(balance);

	if (balance == BX_USAGE_BALANCE_NONE || c->op == BX_PLAN_HINT ||
	    c->op == BX_PLAN_RESUME ||
	    (c->op == BX_PLAN_ADD && balance != BX_USAGE_BALANCE_RUNNING))
		return false;
	p->step->status = BX_PLAN_STEP_IMPOSSIBLE;
	snprintf(p->step->reason, sizeof(p->step->reason), "a%s %s balance holds the kernel's "
		 "exclusive operation, which refuses a %s until the balance %s ('btrfs balance "
		 "resume') or is cancelled ('btrfs balance cancel')",
		 balance == BX_USAGE_BALANCE_INTERRUPTED ? "n" : "", state, exclusive_op(c->op),
		 balance == BX_USAGE_BALANCE_RUNNING ? "ends" : "is resumed to its end");
	return true;
}

static int apply(struct planner *p, const struct bx_plan_change *c)
{
	if (refused_by_balance(p, c))
		return 0;
	switch (c->op) {
	case BX_PLAN_ADD:
		return apply_add(p, c);
	case BX_PLAN_REMOVE:
		return apply_remove(p, c);
	case BX_PLAN_RESIZE:
		return apply_resize(p, c);
	case BX_PLAN_HINT:
		return apply_hint(p, c);
	case BX_PLAN_CONVERT:
		return apply_convert(p, c);
	case BX_PLAN_REPLACE:
		return apply_replace(p, c);
	case BX_PLAN_RELOCATE:
		return apply_relocate(p);
	case BX_PLAN_BALANCE:
		return apply_balance(p, c);
	case BX_PLAN_RESUME:
		return apply_resume(p);
	}
	return bx_error(-EINVAL, "unknown change");
}

/* ---- the reports and the warnings ---- */

static bool any_hint(const struct bx_usage_input *in)
{
	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].hint != BX_HINT_DATA_PREFERRED)
			return true;
	return false;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int misplaced_reports(struct planner *p, const struct bx_usage_input *in)
{
	struct bx_plan_result *res = p->res;
	const struct bx_misplaced_report *a;
	uint64_t *before;
	int ret;

	if (!any_hint(in) && !any_hint(&res->after_in))
		return 0;
	res->have_misplaced = true;
	ret = bx_misplaced_compute_quiet(in, &res->misplaced_before);
	if (!ret)
		ret = bx_misplaced_compute_quiet(&res->after_in, &res->misplaced_after);
	if (ret)
		return ret;
	a = &res->misplaced_after;
	res->newly_misplaced = calloc(a->nr_chunks + 1, sizeof(*res->newly_misplaced));
	before = calloc(res->misplaced_before.nr_chunks + 1, sizeof(*before));
	if (!res->newly_misplaced || !before) {
		free(before);
		return OOM();
	}
	for (size_t k = 0; k < res->misplaced_before.nr_chunks; k++)
		before[k] = res->misplaced_before.chunks[k].logical;
	qsort(before, res->misplaced_before.nr_chunks, sizeof(*before), u64_cmp);
	for (size_t i = 0; i < a->nr_chunks; i++) {
		if (bsearch(&a->chunks[i].logical, before, res->misplaced_before.nr_chunks,
			    sizeof(*before), u64_cmp))
			continue;
		res->newly_misplaced[i] = true;
		res->newly_misplaced_chunks++;
		res->newly_misplaced_bytes += a->chunks[i].used;
	}
	free(before);
	return 0;
}

/*
 * Devices that prefer metadata (its tiers 1 and 2) fewer than the metadata
 * profile needs: the kernel takes the next tier too and sorts them all by
 * free space, so the metadata devices may not even be used.
 */
static void warn_metadata_devices(struct planner *p)
{
	const struct plan_state *s = &p->s;
	uint64_t type = ps_alloc_type(s, BTRFS_BLOCK_GROUP_METADATA);
	struct bx_raid_attr attr;
	size_t preferring = 0;
	char devs[256] = "";

	if (bx_raid_attr(type, &attr) || (s->params.flags & BX_ALLOC_IGNORE_HINTS) ||
	    (type & BTRFS_BLOCK_GROUP_DATA) || attr.devs_min < 2)
		return;
	for (size_t i = 0; i < s->nr_devs; i++) {
		int tier = bx_alloc_hint_tier(s->adevs[i].hint, type, 0, NULL);
		size_t len = strlen(devs);

		if (!s->adevs[i].writable || tier == BX_TIER_NEVER || tier > 2)
			continue;
		preferring++;
		snprintf(devs + len, sizeof(devs) - len, "%s%llu", len ? "," : "",
			 (unsigned long long)s->adevs[i].devid);
	}
	if (preferring && preferring < (size_t)attr.devs_min)
		add_warning(p, "%s metadata needs %d devices but only %zu prefer%s metadata (devid "
			    "%s): the kernel then picks among those and the data devices by free "
			    "space, so metadata chunks may go to data devices; give %d device%s a "
			    "metadata hint", bx_profile_name(type), attr.devs_min, preferring,
			    preferring == 1 ? "s" : "", devs, attr.devs_min,
			    attr.devs_min == 1 ? "" : "s");
}

static void warn_after(struct planner *p, const struct bx_usage_input *in)
{
	const struct bx_plan_result *res = p->res;
	const struct bx_usage_report *a = &res->after;
	char x[32], y[32];

	for (size_t i = 0; i < res->nr_steps; i++) {
		if (res->steps[i].tight)
			add_warning(p, "change %zu is tight: it moves or copies the only metadata or "
				    "system block group with little room; the kernel may allocate another "
				    "meanwhile or fail with ENOSPC (figures uncertain); free some space "
				    "first", i + 1);
		/* Its own warning said why (warn_second_try()). */
		p->res->steps[i].tight |= res->steps[i].tight_retry;
	}
	warn_metadata_devices(p);
	if (a->warnings & BX_USAGE_W_METADATA_LOW) {
		bx_pretty_size(a->metadata_room, 0, x, sizeof(x));
		bx_pretty_size(a->metadata_needed, 0, y, sizeof(y));
		add_warning(p, "after the plan, metadata room %s is less than the %s that 50%% growth "
			    "of the metadata needs", x, y);
	}
	if ((a->warnings & BX_USAGE_W_DATA_ON_META_DEVS) &&
	    !(res->before.warnings & BX_USAGE_W_DATA_ON_META_DEVS)) {
		bx_pretty_size(a->data_on_metadata_devices, 0, x, sizeof(x));
		add_warning(p, "after the plan, data chunks can take %s of the metadata_preferred "
			    "devices once the other devices are full", x);
	}
	if (in->mounted && !in->hints_effective && any_hint(&res->after_in))
		add_warning(p, "the running kernel ignores allocation hints: the plan places chunks "
			    "without them, as this kernel would");
	if (res->newly_misplaced_chunks) {
		bx_pretty_size(res->newly_misplaced_bytes, 0, x, sizeof(x));
		add_warning(p, "%llu chunk%s (%s used) %s the hints after the plan; 'btrfsx "
			    "balance misplaced' moves %s (--relocate plans that)",
			    (unsigned long long)res->newly_misplaced_chunks,
			    res->newly_misplaced_chunks == 1 ? "" : "s", x,
			    res->newly_misplaced_chunks == 1 ? "breaks" : "break",
			    res->newly_misplaced_chunks == 1 ? "it" : "them");
	}
}

static int compute_reports(struct planner *p, const struct bx_usage_input *in)
{
	struct bx_plan_result *res = p->res;
	int ret = ps_materialize(&p->s, &res->after_in);

	if (!ret)
		ret = bx_usage_compute(&res->after_in, BX_USAGE_QUIET, &res->after);
	if (!ret)
		ret = misplaced_reports(p, in);
	if (ret)
		return ret;
	warn_after(p, in);
	for (size_t i = 0; i < res->nr_warnings; i++)
		bx_warn("%s", res->warnings[i]);
	return 0;
}

/*
 * An unmounted filesystem with a member missing (not named, and not found
 * by its fsid among the block devices or beside the image files named)
 * would be planned as degraded: profiles fall back to what the members
 * left allow, copies on the missing one count as lost. Refused, naming it.
 */
static int refuse_degraded(const struct bx_usage_input *in)
{
	char devids[256] = "";
	size_t used = 0, nr = 0;

	if (in->mounted)
		return 0;
	for (size_t i = 0; i < in->nr_devs && used < sizeof(devids); i++)
		if (in->devs[i].missing) {
			used += (size_t)snprintf(devids + used, sizeof(devids) - used, "%s%llu",
						 nr++ ? ", " : "",
						 (unsigned long long)in->devs[i].devid);
		}
	if (!nr)
		return 0;
	return bx_error(-ENODEV, "%s: devid %s %s missing (not named, and not found by the "
			"filesystem's fsid among the block devices or beside the image files "
			"named): a plan needs every member; name %s", in->path, devids,
			nr > 1 ? "are" : "is", nr > 1 ? "them" : "it");
}

int bx_plan_compute(const struct bx_usage_input *in, const struct bx_plan_change *changes,
		    size_t nr, struct bx_plan_result *res)
{
	struct planner p = { .res = res };
	int ret;

	memset(res, 0, sizeof(*res));
	if (!in->chunks_used_known)
		return bx_error(-ENODATA, "the used bytes of the chunks were not read");
	ret = refuse_degraded(in);
	if (ret)
		return ret;
	res->steps = calloc(nr + 1, sizeof(*res->steps));
	if (!res->steps)
		return OOM();
	res->nr_steps = nr;
	ret = bx_usage_compute(in, BX_USAGE_QUIET, &res->before);
	if (!ret)
		ret = ps_init(&p.s, in);
	if (ret)
		return ret;
	res->possible = true;
	for (size_t i = 0; i < nr && !ret; i++) {
		size_t first_new = p.s.nr_chunks;

		p.step = &res->steps[i];
		p.step->change = changes[i];
		p.step->first_moved = res->nr_moved;
		p.step->first_created = res->nr_created;
		if (!res->possible) {
			p.step->status = BX_PLAN_STEP_NOT_REACHED;
			continue;
		}
		ret = apply(&p, &changes[i]);
		/* At rest after it: the cleaner has deleted what it deletes. */
		if (!ret)
			ret = ps_delete_unused(&p.s);
		if (!ret)
			ret = record_created(&p, first_new);
		p.step->nr_moved = res->nr_moved - p.step->first_moved;
		p.step->nr_created = res->nr_created - p.step->first_created;
		if (p.step->status == BX_PLAN_STEP_IMPOSSIBLE)
			res->possible = false;
	}
	if (!ret)
		ret = compute_reports(&p, in);
	ps_release(&p.s);
	return ret;
}

void bx_plan_result_release(struct bx_plan_result *res)
{
	for (size_t i = 0; res->steps && i < res->nr_steps; i++) {
		for (size_t k = 0; k < res->steps[i].nr_short; k++)
			free(res->steps[i].shorts[k].devs);
		free(res->steps[i].shorts);
	}
	for (size_t i = 0; i < res->nr_moved; i++)
		free(res->moved[i].devids);
	for (size_t i = 0; i < res->nr_created; i++)
		free(res->created[i].devids);
	free(res->steps);
	free(res->moved);
	free(res->created);
	free(res->newly_misplaced);
	free(res->warnings);
	bx_usage_input_release(&res->after_in);
	bx_usage_report_release(&res->before);
	bx_usage_report_release(&res->after);
	bx_misplaced_report_release(&res->misplaced_before);
	bx_misplaced_report_release(&res->misplaced_after);
	memset(res, 0, sizeof(*res));
}
