/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Misplaced chunks: a snapshot's chunks classified against the hints
 * (placement.c), in the order a relocation takes them, with totals. See
 * misplaced.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "model/misplaced.h"

static void chunk_release(struct bx_misplaced_chunk *c)
{
	free(c->stripes);
	free(c->offending);
	free(c->target_devids);
}

void bx_misplaced_report_release(struct bx_misplaced_report *rep)
{
	for (size_t i = 0; i < rep->nr_chunks; i++)
		chunk_release(&rep->chunks[i]);
	free(rep->chunks);
	memset(rep, 0, sizeof(*rep));
}

/* Moves the verdict's lists into @out (taking ownership). */
static int fill_chunk(const struct bx_place_chunk *pc, struct bx_place_verdict *v,
		      struct bx_misplaced_chunk *out)
{
	memset(out, 0, sizeof(*out));
	out->logical = pc->logical;
	out->length = pc->length;
	out->used = pc->used;
	out->type = pc->type;
	out->cls = v->cls;
	out->tiers = v->tiers;
	out->num_stripes = pc->num_stripes;
	out->stripes = malloc(pc->num_stripes * sizeof(*out->stripes));
	if (!out->stripes)
		return -ENOMEM;
	memcpy(out->stripes, pc->stripes, pc->num_stripes * sizeof(*out->stripes));
	out->nr_offending = v->nr_offending;
	out->offending = v->offending;
	v->offending = NULL;
	v->nr_offending = 0;
	if (v->target_ret == 0) {
		out->have_target = true;
		out->target_type = v->target.type;
		out->target_length = v->target.length;
		out->target_stripes = v->target.num_stripes;
		out->target_devids = calloc(v->target.num_stripes, sizeof(*out->target_devids));
		if (!out->target_devids)
			return -ENOMEM;
		for (uint32_t s = 0; s < v->target.num_stripes; s++)
			out->target_devids[s] = v->target.stripes[s].devid;
	}
	return 0;
}

/* Forbidden first, then off-preference; the fewest used bytes first, then by address. */
static int relocation_order(const void *a, const void *b)
{
	const struct bx_misplaced_chunk *x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls == BX_PLACE_FORBIDDEN ? -1 : 1;
	if (x->used != y->used)
		return x->used < y->used ? -1 : 1;
	return x->logical < y->logical ? -1 : x->logical > y->logical;
}

static void add_to_totals(struct bx_misplaced_report *rep, const struct bx_misplaced_chunk *c)
{
	struct bx_misplaced_totals *t = c->cls == BX_PLACE_FORBIDDEN ? &rep->forbidden :
					&rep->off_preference;

	t->chunks++;
	t->allocated += c->length;
	t->used += c->used;
}

static int classify_all(const struct bx_snapshot *in, const struct bx_place_model *pm,
			struct bx_misplaced_report *rep)
{
	struct bx_place_stripe *stripes = NULL;
	struct bx_place_targets targets;
	size_t cap = 0;
	int ret = 0;

	rep->chunks = calloc(in->nr_chunks + 1, sizeof(*rep->chunks));
	if (!rep->chunks)
		return bx_error(-ENOMEM, "out of memory");
	/* The model does not change while the chunks are classified: decide its targets once. */
	ret = bx_place_targets_decide(pm, &targets);
	if (ret)
		return bx_error(ret, "the allocator model does not take the chunk types of %s",
				in->path);
	for (size_t i = 0; i < in->nr_chunks && !ret; i++) {
		const struct bx_snap_chunk *c = &in->chunks[i];
		struct bx_place_verdict v;
		struct bx_place_chunk pc;

		if (c->num_stripes > cap) {
			struct bx_place_stripe *grown = realloc(stripes, c->num_stripes *
								sizeof(*grown));

			if (!grown) {
				ret = -ENOMEM;
				break;
			}
			stripes = grown;
			cap = c->num_stripes;
		}
		bx_snap_place_chunk(in, c, stripes, &pc);
		ret = bx_place_classify_with(pm, &targets, &pc, &v);
		if (!ret && v.cls != BX_PLACE_OK) {
			ret = fill_chunk(&pc, &v, &rep->chunks[rep->nr_chunks]);
			rep->nr_chunks++;	/* released with the report, even half filled */
			if (!ret)
				add_to_totals(rep, &rep->chunks[rep->nr_chunks - 1]);
		} else if (!ret && c->length > c->used) {
			rep->pool[bx_place_kind(c->type)] += c->length - c->used;
		}
		bx_place_verdict_release(&v);
		rep->chunks_checked++;
	}
	free(stripes);
	bx_place_targets_release(&targets);
	if (ret == -ENOMEM)
		return bx_error(ret, "out of memory");
	if (ret)
		return bx_error(ret, "the allocator model does not take the chunk types of %s",
				in->path);
	return 0;
}

int bx_misplaced_classify(const struct bx_snapshot *in, struct bx_misplaced_report *rep)
{
	struct bx_snap_model um;
	struct bx_place_model pm;
	int ret;

	memset(rep, 0, sizeof(*rep));
	if (!in->nr_devs)
		return bx_error(-EINVAL, "no devices");
	if (!in->chunks_used_known)
		return bx_error(-EINVAL, "the used bytes of the chunks were not read");
	memcpy(rep->fsid, in->fsid, sizeof(rep->fsid));
	rep->mounted = in->mounted;
	snprintf(rep->path, sizeof(rep->path), "%s", in->path);
	rep->hints_effective = in->hints_effective;
	rep->kernel_hints = in->kernel_hints;
	rep->kernel = in->kernel;
	ret = bx_snap_place_model(in, &um, &pm);
	if (ret)
		return ret;
	ret = classify_all(in, &pm, rep);
	bx_snap_model_release(&um);
	if (ret) {
		bx_misplaced_report_release(rep);
		return ret;
	}
	qsort(rep->chunks, rep->nr_chunks, sizeof(*rep->chunks), relocation_order);
	rep->forbidden.estimate_seconds = rep->off_preference.estimate_seconds = -1;
	return 0;
}
