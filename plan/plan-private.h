/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner's parts (plan.h): the orchestration (plan.c: the changes in
 * order, the reports and the records), the per-change appliers
 * (plan-apply.c), and what it says to people (plan-explain.c: why a
 * change is impossible, the warnings). The kernel's behaviour they apply
 * is model/kernel/ (the state and the relocation); what btrfsx refuses,
 * model/policy.h.
 */
#ifndef BTRFSX_PLAN_PRIVATE_H
#define BTRFSX_PLAN_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/kernel/relocation.h"
#include "model/kernel/state.h"
#include "plan/plan.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

/* One plan being made: the kernel state, the result, the change being applied. */
struct planner {
	struct bx_kstate s;
	struct bx_plan_result *res;
	struct bx_plan_step *step;
	size_t cap_moved, cap_created;
	bool converted[2];		/* data, metadata */
};

/* ---- plan.c ---- */

/* A warning of the plan (its result's list; said at the end with bx_warn()). */
void planner_warn(struct planner *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The kernel's relocation of @ml (bx_ks_relocate()) for the step being
 * applied: the chunks it moves are recorded, what it risks goes into the
 * step (tight) and the warnings.
 */
int planner_relocate(struct planner *p, struct bx_reloc_how *how, struct bx_reloc_list *ml);

/* ---- plan-apply.c ---- */

/* Applies change @c as the kernel makes it (or refuses it) to the state. */
int planner_apply(struct planner *p, const struct bx_plan_change *c);

/* ---- plan-explain.c ---- */

/*
 * The step is impossible for lack of room: why (@what, then per type of
 * chunk how much is short and on which devices), into the step's reason
 * and its shorts. Returns 0 or -ENOMEM.
 */
int planner_short(struct planner *p, const struct bx_reloc_list *ml, const char *what);

/* The step is impossible: @fmt says why. */
void planner_impossible(struct planner *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A replace stops at chunk @idx, which cannot be made read-only. */
void planner_replace_refused(struct planner *p, size_t idx);

/* What a relocation risked (bx_reloc_events): tight, and the warnings that say why. */
void planner_risks(struct planner *p, const struct bx_reloc_events *ev);

/* The warnings about the filesystem after the plan (@in before it). */
void planner_warn_after(struct planner *p, const struct bx_snapshot *in);

#endif
