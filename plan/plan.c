/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The what-if planner (plan.h): each change applied in order to the
 * kernel state (model/kernel/state.h) by its applier (plan-apply.c), the
 * cleaner after it, the chunks it moved and made recorded, then the usage
 * and misplaced reports of the result and the warnings a sysadmin needs
 * (plan-explain.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/usage.h"
#include "model/misplaced.h"
#include "model/policy.h"
#include "plan/plan-private.h"

void planner_warn(struct planner *p, const char *fmt, ...)
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
		  const struct bx_ks_chunk *c)
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

static int record_moved(void *arg, const struct bx_kstate *s, size_t idx)
{
	struct planner *p = arg;
	struct bx_plan_result *res = p->res;
	struct bx_ks_chunk c = s->chunks[idx];

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

int planner_relocate(struct planner *p, struct bx_reloc_how *how, struct bx_reloc_list *ml)
{
	struct bx_reloc_events ev = { .moved = record_moved, .arg = p };
	int ret = bx_ks_relocate(&p->s, how, ml, &ev);

	planner_risks(p, &ev);
	return ret;
}

/* ---- the reports ---- */

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static int misplaced_reports(struct planner *p, const struct bx_snapshot *in)
{
	struct bx_plan_result *res = p->res;
	const struct bx_misplaced_report *a;
	uint64_t *before;
	int ret;

	if (!bx_snap_any_hint(in) && !bx_snap_any_hint(&res->after_in))
		return 0;
	res->have_misplaced = true;
	ret = bx_misplaced_classify(in, &res->misplaced_before);
	if (!ret)
		ret = bx_misplaced_classify(&res->after_in, &res->misplaced_after);
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

static int compute_reports(struct planner *p, const struct bx_snapshot *in)
{
	struct bx_plan_result *res = p->res;
	int ret = bx_ks_materialize(&p->s, &res->after_in);

	if (!ret)
		ret = bx_usage_compute(&res->after_in, BX_USAGE_QUIET, &res->after);
	if (!ret)
		ret = misplaced_reports(p, in);
	if (ret)
		return ret;
	planner_warn_after(p, in);
	for (size_t i = 0; i < res->nr_warnings; i++)
		bx_warn("%s", res->warnings[i]);
	return 0;
}

/*
 * An unmounted filesystem with a member missing (not named, and not found
 * by its fsid among the block devices or beside the image files named)
 * would be planned as degraded: profiles fall back to what the members
 * left allow, copies on the missing one count as lost. Refused, naming it
 * (the policy's degraded refusal).
 */
static int refuse_degraded(const struct bx_snapshot *in)
{
	struct bx_fs_condition cond;
	char why[512];

	if (in->mounted)
		return 0;
	bx_fs_condition_of(in, &cond);
	if (bx_policy_refusal(&cond, BX_OP_BALANCE, BX_CHECK_DEGRADED, why, sizeof(why)) ==
	    BX_REFUSE_NONE)
		return 0;
	return bx_error(-ENODEV, "%s: %s: a plan needs every member; name %s", in->path, why,
			cond.nr_missing > 1 ? "them" : "it");
}

int bx_plan_compute(const struct bx_snapshot *in, const struct bx_plan_change *changes,
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
		ret = bx_ks_init(&p.s, in);
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
		ret = planner_apply(&p, &changes[i]);
		/* At rest after it: the cleaner has deleted what it deletes. */
		if (!ret)
			ret = bx_ks_delete_unused(&p.s);
		if (!ret)
			ret = record_created(&p, first_new);
		p.step->nr_moved = res->nr_moved - p.step->first_moved;
		p.step->nr_created = res->nr_created - p.step->first_created;
		if (p.step->status == BX_PLAN_STEP_IMPOSSIBLE)
			res->possible = false;
	}
	if (!ret)
		ret = compute_reports(&p, in);
	bx_ks_release(&p.s);
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
	bx_snapshot_release(&res->after_in);
	bx_usage_report_release(&res->before);
	bx_usage_report_release(&res->after);
	bx_misplaced_report_release(&res->misplaced_before);
	bx_misplaced_report_release(&res->misplaced_after);
	memset(res, 0, sizeof(*res));
}
