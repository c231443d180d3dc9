/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The maintain engine's choice (maintain.h): pure, a snapshot and a policy
 * in, the actions and the predicted state out.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "format/ctree.h"
#include "format/profiles.h"
#include "fsops/usage.h"
#include "maintain/maintain.h"
#include "model/allocator.h"
#include "model/kernel/relocation.h"
#include "model/misplaced.h"
#include "model/policy.h"

/* The most data chunks one plan tries: a plan is a day's work, not a full balance. */
#define MAX_CANDIDATES 256

const char *bx_maintain_reason_name(enum bx_maintain_reason r)
{
	switch (r) {
	case BX_MAINTAIN_ROOM:
		return "metadata-room";
	case BX_MAINTAIN_EMPTY:
		return "empty";
	case BX_MAINTAIN_MISPLACED:
		return "misplaced";
	}
	return "?";
}

const char *bx_maintain_status_name(enum bx_maintain_status s)
{
	static const char *const names[] = {
		[BX_MAINTAIN_NOTHING] = "nothing-to-do", [BX_MAINTAIN_PLANNED] = "planned",
		[BX_MAINTAIN_MET] = "target-met", [BX_MAINTAIN_CANNOT] = "cannot-meet",
		[BX_MAINTAIN_STOPPED] = "stopped", [BX_MAINTAIN_FAILED] = "failed",
	};

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void bx_maintain_plan_release(struct bx_maintain_plan *p)
{
	free(p->actions);
	p->actions = NULL;
	p->nr_actions = 0;
}

/* The writable devices' size: the kernel's total_rw_bytes, for the chunk size rules. */
static uint64_t writable_size(const struct bx_snapshot *in)
{
	uint64_t total = 0;

	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].writable && !in->devs[i].missing)
			total += in->devs[i].total_bytes;
	return total;
}

static uint64_t unallocated_of(const struct bx_snapshot *in)
{
	uint64_t total = 0;

	for (size_t i = 0; i < in->nr_devs; i++) {
		const struct bx_snap_dev *d = &in->devs[i];

		if (d->writable && !d->missing && d->total_bytes > d->bytes_used)
			total += d->total_bytes - d->bytes_used;
	}
	return total;
}

static int misplaced_of(const struct bx_snapshot *in, uint64_t *count)
{
	struct bx_misplaced_report rep;
	int ret;

	*count = 0;
	if (!bx_snap_any_hint(in))
		return 0;
	ret = bx_misplaced_classify(in, &rep);
	if (ret)
		return ret;
	*count = rep.nr_chunks;
	bx_misplaced_report_release(&rep);
	return 0;
}

/* The state of @in, with the usage report's figures in *@u when @u is not NULL. */
static int state_with_usage(const struct bx_snapshot *in, const struct bx_maintain_inputs *inputs,
			    struct bx_maintain_state *st, struct bx_usage_report *u)
{
	struct bx_usage_report rep;
	int ret = bx_usage_compute(in, BX_USAGE_QUIET, &rep);

	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	st->metadata_room = rep.metadata_room;
	st->metadata_used = rep.metadata_used;
	st->unallocated = unallocated_of(in);
	if (inputs->pace > 0)
		st->days_left = (double)st->metadata_room / inputs->pace;
	else
		st->days_left = inputs->pace == 0 ? INFINITY : -1;
	ret = misplaced_of(in, &st->misplaced);
	if (!ret && u)
		*u = rep;
	else
		bx_usage_report_release(&rep);
	return ret;
}

int bx_maintain_state_of(const struct bx_snapshot *in, const struct bx_maintain_policy *policy,
			 const struct bx_maintain_inputs *inputs, struct bx_maintain_state *st)
{
	(void)policy;
	return state_with_usage(in, inputs, st, NULL);
}

/* The logical size of the next metadata chunk on @in (0 when the profile is unknown). */
static uint64_t metadata_chunk_size(const struct bx_snapshot *in, uint64_t type)
{
	struct bx_alloc_limits lim;

	if (!type || bx_alloc_limits(type, writable_size(in), in->nodesize, &lim))
		return 0;
	return lim.max_chunk_size;
}

/* The room target of @policy on @in, and how it was made. */
static void make_target(const struct bx_snapshot *in, const struct bx_usage_report *u,
			const struct bx_maintain_policy *policy,
			const struct bx_maintain_inputs *inputs, struct bx_maintain_plan *p)
{
	char a[32], b[32];
	uint64_t t;

	p->target = 0;
	snprintf(p->target_why, sizeof(p->target_why), "no metadata room target");
	if (u->mixed) {
		snprintf(p->target_why, sizeof(p->target_why), "mixed block groups: data and "
			 "metadata share their room, no target of its own");
		return;
	}
	if (policy->room_auto) {
		uint64_t chunk = metadata_chunk_size(in, u->metadata_type);

		t = chunk > u->metadata_used / 2 ? chunk : u->metadata_used / 2;
		bx_pretty_size(t, 0, a, sizeof(a));
		snprintf(p->target_why, sizeof(p->target_why), "auto: %s (%s)", a,
			 t == chunk ? "one metadata chunk" : "half the metadata in use");
		p->target = t;
	}
	if (policy->room_bytes > p->target) {
		p->target = policy->room_bytes;
		bx_pretty_size(p->target, 0, a, sizeof(a));
		snprintf(p->target_why, sizeof(p->target_why), "metadata-room: %s", a);
	}
	if (policy->room_days > 0 && inputs->pace > 0 &&
	    policy->room_days * inputs->pace > (double)p->target) {
		p->target = (uint64_t)(policy->room_days * inputs->pace);
		bx_pretty_size(p->target, 0, a, sizeof(a));
		bx_pretty_size((uint64_t)inputs->pace, 0, b, sizeof(b));
		snprintf(p->target_why, sizeof(p->target_why), "metadata-room-days: %g days at "
			 "%s a day: %s", policy->room_days, b, a);
	}
}

/* ---- the list of chunks to move ---- */

struct choice {
	const struct bx_snapshot *in;
	struct bx_maintain_plan *p;
	uint64_t *logicals;		/* the actions' chunks, in order */
	size_t cap;
	uint64_t data_chunk;		/* the kernel's next data chunk, full size */
	uint64_t keep_slack;		/* data free in its chunks a move must leave */
	uint64_t target_device;		/* the target's metadata in device bytes */
	bool slack_kept;		/* a chunk was left for the data side's slack */
};

/* The kernel allocates a metadata chunk when used + 2 MiB reach 80 % of its space. */
#define METADATA_ALLOC_PCT 80
#define METADATA_ALLOC_SLACK (2ULL << 20)

/* The device bytes a chunk of @type and @logical size takes (parity left out). */
static uint64_t device_bytes(uint64_t type, uint64_t logical)
{
	struct bx_raid_attr attr;

	if (bx_raid_attr(type, &attr) || attr.ncopies < 1)
		return logical;
	return logical * (uint64_t)attr.ncopies;
}

/*
 * What a move must leave for the freed space to stay for metadata (see
 * room_stays()): the kernel's next data chunk, at its full size, in
 * device bytes, and half of it as free space in the data chunks (the
 * writes of a day or so, that then need no new data chunk). Nothing when
 * metadata will take the freed space first.
 */
static void set_data_guard(const struct bx_snapshot *in, const struct bx_usage_report *u,
			   struct choice *c)
{
	struct bx_alloc_limits lim;
	uint64_t taken = u->metadata_used + METADATA_ALLOC_SLACK;

	if (u->mixed || !u->data_type ||
	    bx_alloc_limits(u->data_type, writable_size(in), in->nodesize, &lim))
		return;
	/*
	 * Metadata this full gets the next chunk the kernel allocates: it
	 * allocates one for metadata once its used bytes (reservations not
	 * counted) and 2 MiB reach 80 %, before the data side needs one.
	 */
	if (taken * 100 >= u->metadata_size * METADATA_ALLOC_PCT)
		return;
	c->data_chunk = device_bytes(u->data_type, lim.max_chunk_size);
	c->keep_slack = lim.max_chunk_size / 2;
	c->target_device = device_bytes(u->metadata_type, c->p->target);
}

static int add_action(struct choice *c, enum bx_maintain_reason why,
		      const struct bx_snap_chunk *ch)
{
	struct bx_maintain_plan *p = c->p;

	if (p->nr_actions == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct bx_maintain_action *a = realloc(p->actions, cap * sizeof(*a));
		uint64_t *l;

		if (!a)
			return bx_error(-ENOMEM, "out of memory");
		p->actions = a;
		l = realloc(c->logicals, cap * sizeof(*l));
		if (!l)
			return bx_error(-ENOMEM, "out of memory");
		c->logicals = l;
		c->cap = cap;
	}
	p->actions[p->nr_actions] = (struct bx_maintain_action){
		.reason = why, .logical = ch->logical, .length = ch->length, .used = ch->used,
		.type = ch->type, .seconds = -1,
	};
	c->logicals[p->nr_actions++] = ch->logical;
	return 0;
}

static const struct bx_snap_chunk *chunk_at(const struct bx_snapshot *in, uint64_t logical)
{
	for (size_t i = 0; i < in->nr_chunks; i++)
		if (in->chunks[i].logical == logical)
			return &in->chunks[i];
	return NULL;
}

/* The misplaced chunks the policy takes, first. */
static int add_misplaced(struct choice *c, const struct bx_maintain_policy *policy)
{
	struct bx_misplaced_report rep;
	size_t n;
	uint64_t bytes;
	int ret;

	if (policy->placement == BX_MAINTAIN_PLACEMENT_OFF || !bx_snap_any_hint(c->in))
		return 0;
	ret = bx_misplaced_classify(c->in, &rep);
	if (ret)
		return ret;
	/* A kernel that ignores hints would put them back as badly: left alone. */
	n = rep.hints_effective ? bx_policy_select(&rep, policy->placement ==
						   BX_MAINTAIN_PLACEMENT_FORBIDDEN_ONLY, 0, 0,
						   &bytes) : 0;
	/* Only the leading ones the allocator model has room for, as balance misplaced. */
	if (n) {
		struct bx_snap_model um;
		struct bx_place_model pm;
		struct bx_place_room room = { 0 };

		ret = bx_snap_place_model(c->in, &um, &pm);
		if (!ret) {
			if (bx_policy_room(&pm, &rep, rep.chunks, n, &room) == -ENOSPC) {
				bx_warn("%zu of %zu misplaced chunks have no room where the hints "
					"want them; left where they are", n - room.nr_fit, n);
				n = room.nr_fit;
			}
			bx_snap_model_release(&um);
		}
	}
	for (size_t i = 0; !ret && i < n; i++) {
		const struct bx_snap_chunk *ch = chunk_at(c->in, rep.chunks[i].logical);

		if (ch)
			ret = add_action(c, BX_MAINTAIN_MISPLACED, ch);
	}
	c->p->placement_wanted = n > 0;
	bx_misplaced_report_release(&rep);
	return ret;
}

/* A data chunk that may free device space, with its used bytes where the chosen ones moved. */
struct candidate {
	const struct bx_snap_chunk *chunk;	/* in the snapshot read */
	uint64_t used;				/* in the prediction so far */
	bool rejected;				/* it freed nothing */
};

/* By used share of their size (empty first), then by address. */
static int by_used_share(const struct candidate *x, const struct candidate *y)
{
	/* x->used / x->length < y->used / y->length, without division */
	unsigned __int128 l = (unsigned __int128)x->used * y->chunk->length;
	unsigned __int128 r = (unsigned __int128)y->used * x->chunk->length;

	if (l != r)
		return l < r ? -1 : 1;
	return x->chunk->logical < y->chunk->logical ? -1 : x->chunk->logical > y->chunk->logical;
}

static bool taken(const struct choice *c, uint64_t logical)
{
	for (size_t i = 0; i < c->p->nr_actions; i++)
		if (c->logicals[i] == logical)
			return true;
	return false;
}

/* The data chunks of the snapshot read that moving may empty. */
static size_t candidates(const struct choice *c, struct candidate *out)
{
	size_t n = 0;

	for (size_t i = 0; i < c->in->nr_chunks; i++) {
		const struct bx_snap_chunk *ch = &c->in->chunks[i];

		/* A mixed chunk holds metadata too; a seed's cannot move. */
		if (!(ch->type & BTRFS_BLOCK_GROUP_DATA) || (ch->type & BTRFS_BLOCK_GROUP_METADATA) ||
		    bx_snap_chunk_on_seed(c->in, ch) || taken(c, ch->logical))
			continue;
		out[n++] = (struct candidate){ .chunk = ch, .used = ch->used };
	}
	return n;
}

/*
 * The prediction of moving the chunks chosen so far: the state after, what
 * it copies, and (@after not NULL) the filesystem afterwards.
 */
static int predict(struct choice *c, const struct bx_maintain_inputs *inputs,
		   struct bx_maintain_state *st, struct bx_reloc_prediction *pred,
		   struct bx_snapshot *after)
{
	struct bx_snapshot own;
	struct bx_snapshot *a = after ? after : &own;
	int ret = bx_relocation_predict(c->in, c->logicals, c->p->nr_actions, false, a, pred);

	if (ret)
		return ret;
	ret = state_with_usage(a, inputs, st, NULL);
	if (ret || !after)
		bx_snapshot_release(a);
	return ret;
}

/* Free space in the data chunks of @in (mixed ones hold metadata: left out). */
static uint64_t data_slack(const struct bx_snapshot *in)
{
	uint64_t free = 0;

	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_snap_chunk *ch = &in->chunks[i];

		if ((ch->type & BTRFS_BLOCK_GROUP_DATA) && !(ch->type & BTRFS_BLOCK_GROUP_METADATA) &&
		    ch->length > ch->used)
			free += ch->length - ch->used;
	}
	return free;
}

/*
 * Whether the space a move frees stays for metadata. The kernel allocates
 * a data chunk as large as it may (a tenth of the device at most) or, with
 * less unallocated, all that is left: once the data side has no free space
 * in its chunks, its next chunk takes what the move freed. A move that
 * leaves the data side less than @c->keep_slack free in its chunks only
 * helps when the unallocated space after it holds a full data chunk and
 * the target besides.
 */
static bool room_stays(const struct choice *c, const struct bx_snapshot *after,
		       const struct bx_maintain_state *st)
{
	if (!c->data_chunk || data_slack(after) >= c->keep_slack)
		return true;
	return st->unallocated >= c->data_chunk + c->target_device;
}

/* The candidates' used bytes in @after (where the chunks chosen so far put their data). */
static void update_used(struct candidate *cand, size_t n, const struct bx_snapshot *after)
{
	for (size_t i = 0; i < n; i++) {
		const struct bx_snap_chunk *ch = NULL;

		for (size_t k = 0; k < after->nr_chunks && !ch; k++)
			if (after->chunks[k].logical == cand[i].chunk->logical)
				ch = &after->chunks[k];
		/* Gone (the cleaner took an empty one): nothing left to free there. */
		if (!ch)
			cand[i].rejected = true;
		else
			cand[i].used = ch->used;
	}
}

/* The candidate to try next: the smallest used share not yet chosen or rejected. */
static struct candidate *next_candidate(const struct choice *c, struct candidate *cand, size_t n)
{
	struct candidate *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (cand[i].rejected || cand[i].used >= cand[i].chunk->length ||
		    taken(c, cand[i].chunk->logical))
			continue;
		if (!best || by_used_share(&cand[i], best) < 0)
			best = &cand[i];
	}
	return best;
}

/*
 * Data chunks while the predicted room is below the target, the one with
 * the smallest used share in the prediction so far first (what earlier
 * moves put into it is copied again); each kept only when the prediction
 * with it has more unallocated device space than without.
 */
static int add_for_room(struct choice *c, const struct bx_maintain_inputs *inputs,
			struct bx_maintain_state *best, struct bx_reloc_prediction *best_pred)
{
	struct candidate *cand = calloc(c->in->nr_chunks + 1, sizeof(*cand)), *next;
	size_t n, tries = 0;
	int ret = 0;

	if (!cand)
		return bx_error(-ENOMEM, "out of memory");
	n = candidates(c, cand);
	while (!ret && best->metadata_room < c->p->target && tries++ < MAX_CANDIDATES &&
	       (next = next_candidate(c, cand, n))) {
		bool frees, stays;
		struct bx_maintain_state st;
		struct bx_reloc_prediction pred;
		struct bx_snapshot after;
		bool nearly_empty = next->used * 100 < next->chunk->length *
				    BX_MAINTAIN_NEARLY_EMPTY_PCT;

		ret = add_action(c, nearly_empty ? BX_MAINTAIN_EMPTY : BX_MAINTAIN_ROOM, next->chunk);
		if (!ret)
			ret = predict(c, inputs, &st, &pred, &after);
		if (ret)
			break;
		frees = st.unallocated > best->unallocated && pred.failed == 0;
		stays = frees && room_stays(c, &after, &st);

		if (frees && !stays)
			c->slack_kept = true;
		if (stays) {
			/* What the kernel copies for it: its bytes where the others put theirs. */
			c->p->actions[c->p->nr_actions - 1].used = next->used;
			*best = st;
			*best_pred = pred;
			update_used(cand, n, &after);
		} else {
			c->p->nr_actions--;	/* nothing freed for metadata: left where it is */
			next->rejected = true;
		}
		bx_snapshot_release(&after);
	}
	free(cand);
	return ret;
}

/* A device that would meet the target: the missing room in metadata chunks, as device bytes. */
static uint64_t device_for(const struct bx_snapshot *in, const struct bx_usage_report *u,
			   uint64_t missing)
{
	struct bx_raid_attr attr;
	uint64_t chunk = metadata_chunk_size(in, u->metadata_type);
	uint64_t chunks;
	int per_device = 1;

	if (!chunk)
		return missing;
	if (!bx_raid_attr(u->metadata_type, &attr) && attr.dev_stripes > 1)
		per_device = attr.dev_stripes;	/* dup: both copies on the new device */
	chunks = (missing + chunk - 1) / chunk;
	/* Its first MiB is never allocated. */
	return chunks * chunk * (uint64_t)per_device + (1ULL << 20);
}

static void say_cannot(const struct choice *c, const struct bx_usage_report *u,
		       struct bx_maintain_plan *p)
{
	const struct bx_snapshot *in = c->in;
	char room[32], target[32], dev[32], chunk[32], slack[32];

	p->status = BX_MAINTAIN_CANNOT;
	p->device_needed = device_for(in, u, p->target - p->after.metadata_room);
	bx_pretty_size(p->after.metadata_room, 0, room, sizeof(room));
	bx_pretty_size(p->target, 0, target, sizeof(target));
	bx_pretty_size(p->device_needed, 0, dev, sizeof(dev));
	snprintf(p->reason, sizeof(p->reason), "moving data cannot meet the target: metadata "
		 "room %s after moving every chunk that frees device space, target %s (%s); add "
		 "a device of at least %s, or delete data", room, target, p->target_why, dev);
	if (!c->slack_kept)
		return;
	bx_pretty_size(c->data_chunk, 0, chunk, sizeof(chunk));
	bx_pretty_size(c->keep_slack, 0, slack, sizeof(slack));
	snprintf(p->reason + strlen(p->reason), sizeof(p->reason) - strlen(p->reason),
		 "; chunks left where they are: moving them would leave the data chunks less "
		 "than %s free, and the next data chunk (%s) would take the space freed",
		 slack, chunk);
}

int bx_maintain_choose(const struct bx_snapshot *in, const struct bx_maintain_policy *policy,
		       const struct bx_maintain_inputs *inputs, struct bx_maintain_plan *p)
{
	struct choice c = { .in = in, .p = p };
	struct bx_usage_report u;
	struct bx_reloc_prediction pred = { 0 };
	int ret;

	memset(p, 0, sizeof(*p));
	ret = state_with_usage(in, inputs, &p->before, &u);
	if (ret)
		return ret;
	make_target(in, &u, policy, inputs, p);
	set_data_guard(in, &u, &c);
	p->after = p->before;
	p->room_below = p->target && p->before.metadata_room < p->target;
	ret = add_misplaced(&c, policy);
	if (!ret && p->nr_actions)
		ret = predict(&c, inputs, &p->after, &pred, NULL);
	if (!ret && p->target && p->after.metadata_room < p->target)
		ret = add_for_room(&c, inputs, &p->after, &pred);
	if (ret)
		goto out;
	p->chunks_created = pred.created;
	for (size_t i = 0; i < p->nr_actions; i++) {
		p->bytes_planned += p->actions[i].used;
		if (inputs->copy_rate > 0)
			p->actions[i].seconds = (double)p->actions[i].used / inputs->copy_rate;
	}
	/* What the kernel copies: also what lands in chunks moved later, moved again. */
	if (pred.moved_bytes > p->bytes_planned)
		p->bytes_planned = pred.moved_bytes;
	p->seconds_planned = inputs->copy_rate > 0 ? (double)p->bytes_planned / inputs->copy_rate :
			     -1;
	if (p->target && p->after.metadata_room < p->target)
		say_cannot(&c, &u, p);
	else
		p->status = p->nr_actions ? BX_MAINTAIN_PLANNED : BX_MAINTAIN_NOTHING;
out:
	free(c.logicals);
	bx_usage_report_release(&u);
	if (ret)
		bx_maintain_plan_release(p);
	return ret;
}
