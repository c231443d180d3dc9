/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Chunk placement against the allocation hints (see placement.h).
 *
 * Tier vectors: a chunk's stripes are reduced to the count of stripes on
 * each tier (0 = excluded by the hint, 1 .. BX_TIER_LAST). "Better placed"
 * compares two such vectors by the share of stripes on tier t or worse, for
 * every t: cross-multiplied counts, so no division and no rounding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/ctree.h"
#include "model/placement.h"

#define NR_TIERS (BX_TIER_LAST + 1)

struct tier_counts {
	uint32_t n;			/* stripes counted */
	uint32_t at[NR_TIERS];		/* stripes per tier; at[0]: excluded */
};

int bx_place_kind(uint64_t type)
{
	if (type & BTRFS_BLOCK_GROUP_DATA)
		return BX_PLACE_KIND_DATA;
	if (type & BTRFS_BLOCK_GROUP_METADATA)
		return BX_PLACE_KIND_METADATA;
	return BX_PLACE_KIND_SYSTEM;
}

const char *bx_place_type_name(uint64_t type)
{
	if ((type & BTRFS_BLOCK_GROUP_DATA) && (type & BTRFS_BLOCK_GROUP_METADATA))
		return "data+metadata";
	if (type & BTRFS_BLOCK_GROUP_DATA)
		return "data";
	if (type & BTRFS_BLOCK_GROUP_METADATA)
		return "metadata";
	return "system";
}

static const struct bx_alloc_device *device_of(const struct bx_place_model *m, uint64_t devid)
{
	for (size_t i = 0; i < m->nr_devs; i++)
		if (m->devs[i].devid == devid)
			return &m->devs[i];
	return NULL;
}

/*
 * Tiers as the model ranks them. Without any hint in effect (none set, mixed
 * block groups, hints ignored) every device ranks the same.
 */
static int tier_of(const struct bx_place_model *m, const struct bx_alloc_device *d,
		   uint64_t type)
{
	if (!d)
		return BX_TIER_NEVER;
	return bx_alloc_hint_tier(d->hint, type, m->params.flags, NULL);
}

static void count_devids(const struct bx_place_model *m, uint64_t type, const uint64_t *devids,
			 uint32_t n, struct tier_counts *tc)
{
	memset(tc, 0, sizeof(*tc));
	for (uint32_t i = 0; i < n; i++)
		tc->at[tier_of(m, device_of(m, devids[i]), type)]++;
	tc->n = n;
}

/* Stripes on tier t or worse (excluded counts as worst). */
static uint32_t at_or_worse(const struct tier_counts *tc, int t)
{
	uint32_t sum = tc->at[BX_TIER_NEVER];

	for (int k = t; k <= BX_TIER_LAST; k++)
		sum += tc->at[k];
	return sum;
}

/*
 * The worst tier at which @a has a larger share of its stripes than @b
 * (0: none), provided @b's share is nowhere larger; -1 when it is somewhere
 * (then neither is better).
 */
static int excess_tier(const struct tier_counts *a, const struct tier_counts *b)
{
	int worst = 0;

	if (!a->n || !b->n)
		return -1;
	for (int t = 1; t <= BX_TIER_LAST; t++) {
		uint64_t sa = (uint64_t)at_or_worse(a, t) * b->n;
		uint64_t sb = (uint64_t)at_or_worse(b, t) * a->n;

		if (sa < sb)
			return -1;
		if (sa > sb)
			worst = t;
	}
	return worst;
}

/*
 * Whether tiers rank devices at all for @type: as alloc_hints_in_effect() in
 * the model, except that a missing device's hint still counts (a stripe
 * there breaks the hints as much as anywhere).
 */
static bool hints_matter(const struct bx_place_model *m, uint64_t type)
{
	if ((type & BTRFS_BLOCK_GROUP_DATA) && (type & BTRFS_BLOCK_GROUP_METADATA))
		return false;
	if (m->params.flags & BX_ALLOC_IGNORE_HINTS)
		return false;
	if (m->params.flags & BX_ALLOC_STRICT)
		return true;
	for (size_t i = 0; i < m->nr_devs; i++)
		if (m->devs[i].hint != BX_HINT_DATA_PREFERRED &&
		    m->devs[i].hint <= BX_HINT_MAX_KNOWN)
			return true;
	return false;
}

static uint64_t new_type_for(const struct bx_place_model *m, uint64_t type)
{
	uint64_t t = m->new_type[bx_place_kind(type)];

	return t ? t : type;
}

/* @devid into the offending list, once (the list has room for every stripe). */
static void add_offending(struct bx_place_verdict *v, uint64_t devid)
{
	for (size_t i = 0; i < v->nr_offending; i++)
		if (v->offending[i] == devid)
			return;
	v->offending[v->nr_offending++] = devid;
}

static void target_devids(const struct bx_alloc_chunk *c, uint64_t *devids)
{
	for (uint32_t i = 0; i < c->num_stripes; i++)
		devids[i] = c->stripes[i].devid;
}

int bx_place_targets_decide(const struct bx_place_model *m, struct bx_place_targets *t)
{
	memset(t, 0, sizeof(*t));
	for (int k = 0; k < BX_PLACE_NR_KINDS; k++) {
		int ret;

		t->ret[k] = 1;
		if (!m->new_type[k])
			continue;
		ret = bx_alloc_decide(m->devs, m->nr_devs, m->new_type[k], &m->params, &t->chunk[k]);
		if (ret && ret != -ENOSPC) {
			bx_place_targets_release(t);
			return ret;
		}
		t->ret[k] = ret;
	}
	return 0;
}

void bx_place_targets_release(struct bx_place_targets *t)
{
	for (int k = 0; k < BX_PLACE_NR_KINDS; k++)
		bx_alloc_chunk_release(&t->chunk[k]);
	memset(t, 0, sizeof(*t));
}

/* The model's chunk for @c into @v: decided now, or copied from @t. */
static int target_for(const struct bx_place_model *m, const struct bx_place_targets *t,
		      const struct bx_place_chunk *c, struct bx_place_verdict *v)
{
	int kind = bx_place_kind(c->type);
	const struct bx_alloc_chunk *src;

	if (!t || t->ret[kind] == 1)
		return bx_alloc_decide(m->devs, m->nr_devs, new_type_for(m, c->type), &m->params,
				       &v->target);
	if (t->ret[kind])
		return t->ret[kind];
	src = &t->chunk[kind];
	v->target = *src;
	v->target.stripes = malloc((src->num_stripes + 1) * sizeof(*src->stripes));
	if (!v->target.stripes)
		return -ENOMEM;
	memcpy(v->target.stripes, src->stripes, src->num_stripes * sizeof(*src->stripes));
	return 0;
}

int bx_place_classify(const struct bx_place_model *m, const struct bx_place_chunk *c,
		      struct bx_place_verdict *v)
{
	return bx_place_classify_with(m, NULL, c, v);
}

int bx_place_classify_with(const struct bx_place_model *m, const struct bx_place_targets *targets,
			   const struct bx_place_chunk *c, struct bx_place_verdict *v)
{
	struct tier_counts have, want;
	uint64_t *devids = NULL;
	int worst, ret;

	memset(v, 0, sizeof(*v));
	v->target_ret = -ENOSPC;
	if (!c->num_stripes)
		return -EINVAL;
	v->offending = calloc(c->num_stripes, sizeof(*v->offending));
	devids = calloc(c->num_stripes, sizeof(*devids));
	if (!v->offending || !devids) {
		free(devids);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->num_stripes; i++) {
		const struct bx_alloc_device *d = device_of(m, c->stripes[i].devid);

		devids[i] = c->stripes[i].devid;
		if (!d)
			v->unknown_device = true;
	}
	ret = target_for(m, targets, c, v);
	if (ret && ret != -ENOSPC)
		goto out;
	v->target_ret = ret;
	ret = 0;
	if (v->unknown_device || !hints_matter(m, c->type))
		goto out;

	count_devids(m, c->type, devids, c->num_stripes, &have);
	for (int t = 0; t <= BX_TIER_LAST; t++)
		if (have.at[t])
			v->tiers |= 1U << t;
	if (have.at[BX_TIER_NEVER]) {
		v->cls = BX_PLACE_FORBIDDEN;
		for (uint32_t i = 0; i < c->num_stripes; i++)
			if (tier_of(m, device_of(m, devids[i]), c->type) == BX_TIER_NEVER)
				add_offending(v, devids[i]);
		goto out;
	}
	if (v->target_ret)
		goto out;

	free(devids);
	devids = calloc(v->target.num_stripes + 1, sizeof(*devids));
	if (!devids) {
		ret = -ENOMEM;
		goto out;
	}
	target_devids(&v->target, devids);
	count_devids(m, c->type, devids, v->target.num_stripes, &want);
	worst = excess_tier(&have, &want);
	if (worst <= 0)
		goto out;
	v->cls = BX_PLACE_OFF_PREFERENCE;
	for (uint32_t i = 0; i < c->num_stripes; i++)
		if (tier_of(m, device_of(m, c->stripes[i].devid), c->type) >= worst)
			add_offending(v, c->stripes[i].devid);
out:
	free(devids);
	return ret;
}

void bx_place_verdict_release(struct bx_place_verdict *v)
{
	free(v->offending);
	bx_alloc_chunk_release(&v->target);
	memset(v, 0, sizeof(*v));
}

bool bx_place_improves(const struct bx_place_model *m, const struct bx_place_chunk *old,
		       const uint64_t *devids, uint32_t n)
{
	struct tier_counts before, after;
	uint64_t *old_devids;
	bool better;

	if (!n || !old->num_stripes)
		return false;
	if (!hints_matter(m, old->type))
		return false;
	count_devids(m, old->type, devids, n, &after);
	if (after.at[BX_TIER_NEVER])
		return false;
	old_devids = calloc(old->num_stripes, sizeof(*old_devids));
	if (!old_devids)
		return false;
	for (uint32_t i = 0; i < old->num_stripes; i++)
		old_devids[i] = old->stripes[i].devid;
	count_devids(m, old->type, old_devids, old->num_stripes, &before);
	free(old_devids);
	better = before.at[BX_TIER_NEVER] || excess_tier(&before, &after) > 0;
	return better;
}

uint32_t bx_place_best_tier(const struct bx_place_model *m, uint64_t type)
{
	uint32_t best = BX_TIER_LAST + 1;

	for (size_t i = 0; i < m->nr_devs; i++) {
		int t;

		if (!m->devs[i].writable)
			continue;
		t = tier_of(m, &m->devs[i], type);
		if (t != BX_TIER_NEVER && (uint32_t)t < best)
			best = (uint32_t)t;
	}
	return best;
}

/* ---- room for a list of moves ---- */

static void release_devices(struct bx_alloc_device *devs, size_t n)
{
	for (size_t i = 0; devs && i < n; i++)
		bx_alloc_device_release(&devs[i]);
	free(devs);
}

static int copy_devices(const struct bx_place_model *m, struct bx_alloc_device **out)
{
	struct bx_alloc_device *devs = calloc(m->nr_devs + 1, sizeof(*devs));

	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_devs; i++) {
		const struct bx_alloc_device *src = &m->devs[i];

		devs[i] = *src;
		devs[i].holes = NULL;
		devs[i].holes_cap = 0;
		if (src->nr_holes) {
			devs[i].holes = malloc(src->nr_holes * sizeof(*devs[i].holes));
			if (!devs[i].holes) {
				devs[i].nr_holes = 0;
				release_devices(devs, i + 1);
				return -ENOMEM;
			}
			memcpy(devs[i].holes, src->holes, src->nr_holes * sizeof(*devs[i].holes));
			devs[i].holes_cap = src->nr_holes;
		}
	}
	*out = devs;
	return 0;
}

/* The device extents of @c go back to the holes of @devs. */
static int free_extents(struct bx_alloc_device *devs, size_t nr, const struct bx_place_chunk *c,
			uint64_t stripe_size)
{
	for (uint32_t i = 0; i < c->num_stripes; i++) {
		for (size_t d = 0; d < nr; d++) {
			int ret;

			if (devs[d].devid != c->stripes[i].devid)
				continue;
			ret = bx_alloc_device_remove_extent(&devs[d], c->stripes[i].physical,
							    stripe_size);
			if (ret && ret != -EEXIST)
				return ret;
			break;
		}
	}
	return 0;
}

/*
 * Places @need bytes of @c into new chunks on @devs. Returns 0 with *left
 * the bytes that found no room (0: all did), or a negative errno.
 */
static int place_in_new_chunks(const struct bx_place_model *m, struct bx_alloc_device *devs,
			       const struct bx_place_chunk *c, uint64_t need, uint64_t *pool,
			       struct bx_place_room *room, uint64_t *left)
{
	struct bx_place_model now = *m;
	int kind = bx_place_kind(c->type);

	now.devs = devs;
	while (need) {
		struct bx_alloc_chunk n;
		uint64_t *devids;
		bool better;
		int ret = bx_alloc_decide(devs, m->nr_devs, new_type_for(m, c->type), &m->params, &n);

		if (ret == -ENOSPC)
			break;
		if (ret)
			return ret;
		devids = calloc(n.num_stripes + 1, sizeof(*devids));
		if (!devids) {
			bx_alloc_chunk_release(&n);
			return -ENOMEM;
		}
		target_devids(&n, devids);
		better = bx_place_improves(&now, c, devids, n.num_stripes);
		free(devids);
		if (better)
			ret = bx_alloc_apply(devs, m->nr_devs, &n);
		if (!better || ret) {
			bx_alloc_chunk_release(&n);
			if (ret)
				return ret;
			break;
		}
		room->new_chunks[kind]++;
		room->new_chunk_bytes[kind] += n.length;
		if (n.length >= need) {
			pool[kind] += n.length - need;
			need = 0;
		} else {
			need -= n.length;
		}
		bx_alloc_chunk_release(&n);
	}
	*left = need;
	return 0;
}

int bx_place_room(const struct bx_place_model *m, const struct bx_place_chunk *moves,
		  size_t nr_moves, const uint64_t *pool_in, struct bx_place_room *room)
{
	uint64_t pool[BX_PLACE_NR_KINDS] = { 0 };
	struct bx_alloc_device *devs;
	bool all_fit = true;
	int ret;

	memset(room, 0, sizeof(*room));
	if (pool_in)
		memcpy(pool, pool_in, sizeof(pool));
	ret = copy_devices(m, &devs);
	if (ret)
		return ret;
	for (size_t i = 0; i < nr_moves && !ret; i++) {
		const struct bx_place_chunk *c = &moves[i];
		int kind = bx_place_kind(c->type);
		uint64_t need = c->used, take = pool[kind] < need ? pool[kind] : need, left = 0;

		pool[kind] -= take;
		need -= take;
		ret = place_in_new_chunks(m, devs, c, need, pool, room, &left);
		if (ret)
			break;
		if (left) {
			room->short_moves[kind]++;
			room->missing[kind] += left;
			all_fit = false;
			continue;
		}
		if (all_fit)
			room->nr_fit++;
		ret = free_extents(devs, m->nr_devs, c,
				   bx_profile_stripe_size(c->type, c->length, c->num_stripes));
	}
	release_devices(devs, m->nr_devs);
	return ret;
}
