/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The relocation's decisions without the kernel: see relocate-model.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "format/hints.h"
#include "model/allocator.h"
#include "model/policy.h"
#include "relocate/relocate-model.h"

/* ---- room in the model ---- */

void bx_relocate_tier_devids(const struct bx_place_model *m, uint64_t type, uint32_t tier,
			     char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < m->nr_devs && used < len; i++) {
		char hint[32];

		if (!m->devs[i].writable ||
		    (uint32_t)bx_alloc_hint_tier(m->devs[i].hint, type, m->params.flags, NULL) != tier)
			continue;
		bx_hint_describe(m->devs[i].hint, hint, sizeof(hint));
		used += (size_t)snprintf(buf + used, len - used, "%sdevid %llu (%s)", used ? ", " : "",
					 (unsigned long long)m->devs[i].devid, hint);
	}
}

/* The reason there is no room, into @buf: per kind, how much and where. */
static void describe_shortfall(const struct bx_place_model *m, const struct bx_place_room *room,
			       size_t nr_moves, char *buf, size_t len)
{
	size_t used = 0;

	used += (size_t)snprintf(buf, len, "the allocator model has no room for every chunk to move:");
	for (int k = 0; k < BX_PLACE_NR_KINDS && used < len; k++) {
		uint64_t type = m->new_type[k];
		char missing[32], devs[512];

		if (!room->short_moves[k])
			continue;
		bx_pretty_size(room->missing[k], 0, missing, sizeof(missing));
		bx_relocate_tier_devids(m, type, bx_place_best_tier(m, type), devs, sizeof(devs));
		used += (size_t)snprintf(buf + used, len - used, " %s needs %s more on its "
					 "preferred devices (%s) for %u chunk%s;",
					 bx_place_type_name(type), missing, *devs ? devs : "none",
					 room->short_moves[k], room->short_moves[k] == 1 ? "" : "s");
	}
	if (used < len && room->nr_fit)
		snprintf(buf + used, len - used, " the first %zu of the %zu planned chunks fit "
			 "(--limit %zu moves those)", room->nr_fit, nr_moves, room->nr_fit);
	else if (used < len)
		snprintf(buf + used, len - used, " free space on those devices (or other hints) "
			 "must come first");
}

int bx_relocate_room(const struct bx_snapshot *in, const struct bx_misplaced_report *rep,
		     const struct bx_misplaced_chunk *chunks, size_t n, char *reason, size_t len)
{
	struct bx_snap_model um;
	struct bx_place_model pm;
	struct bx_place_room room;
	int ret;

	if (!rep->hints_effective || !n)
		return 0;	/* forced: the kernel places by its own rules */
	ret = bx_snap_place_model(in, &um, &pm);
	if (ret)
		return ret;
	ret = bx_policy_room(&pm, rep, chunks, n, &room);
	if (ret)
		ret = bx_error(ret, "the allocator model failed: %s", strerror(-ret));
	else if (room.nr_fit < n) {
		describe_shortfall(&pm, &room, n, reason, len);
		ret = -ENOSPC;
	}
	bx_snap_model_release(&um);
	return ret;
}

/* ---- what the kernel did, against the model ---- */

static const struct bx_snap_chunk *find_chunk(const struct bx_snapshot *in, uint64_t logical)
{
	for (size_t i = 0; i < in->nr_chunks; i++)
		if (in->chunks[i].logical == logical)
			return &in->chunks[i];
	return NULL;
}

int bx_relocate_new_chunks(const struct bx_snapshot *before, const struct bx_snapshot *after,
			   const struct bx_place_chunk *old, struct bx_relocated *rel)
{
	struct bx_snap_model um;
	struct bx_place_model pm;
	struct bx_alloc_sim *sim = NULL;
	int ret;

	rel->as_modelled = true;
	rel->new_chunks = calloc(after->nr_chunks + 1, sizeof(*rel->new_chunks));
	if (!rel->new_chunks)
		return bx_error(-ENOMEM, "out of memory");
	/*
	 * The model with the stored hints, as the plan predicted: a kernel that
	 * ignores them (a forced run) is compared with the same prediction.
	 */
	ret = bx_snap_place_model(before, &um, &pm);
	if (ret)
		return ret;
	ret = bx_alloc_sim_new(um.devs, um.nr, &um.params, &sim);
	for (size_t i = 0; !ret && i < after->nr_chunks; i++) {
		const struct bx_snap_chunk *c = &after->chunks[i];
		struct bx_relocate_new_chunk *n;
		struct bx_alloc_chunk model;
		int step;

		if (find_chunk(before, c->logical))
			continue;
		n = &rel->new_chunks[rel->nr_new++];
		n->logical = c->logical;
		n->type = c->type;
		n->length = c->length;
		n->num_stripes = c->num_stripes;
		n->devids = calloc(c->num_stripes + 1, sizeof(*n->devids));
		if (!n->devids) {
			ret = bx_error(-ENOMEM, "out of memory");
			break;
		}
		for (uint32_t s = 0; s < c->num_stripes; s++)
			n->devids[s] = after->stripes[c->first_stripe + s].devid;
		step = bx_alloc_sim_step(sim, c->type, &model);
		n->as_modelled = step == 0 && model.num_stripes == c->num_stripes &&
				 model.length == c->length;
		for (uint32_t s = 0; n->as_modelled && s < c->num_stripes; s++)
			n->as_modelled = model.stripes[s].devid == n->devids[s] &&
					 model.stripes[s].physical ==
					 after->stripes[c->first_stripe + s].physical;
		if (!n->as_modelled)
			rel->as_modelled = false;
		n->improves = bx_place_kind(c->type) != bx_place_kind(old->type) ||
			      bx_place_improves(&pm, old, n->devids, n->num_stripes);
	}
	bx_alloc_sim_free(sim);
	bx_snap_model_release(&um);
	return ret;
}
