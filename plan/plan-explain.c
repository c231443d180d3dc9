/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the planner says to people (plan-private.h): why a change is
 * impossible, and the warnings about what a change risks and about the
 * filesystem after the plan.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "format/profiles.h"
#include "plan/plan-private.h"

/* ---- impossible changes: why ---- */

void planner_impossible(struct planner *p, const char *fmt, ...)
{
	va_list ap;

	p->step->status = BX_PLAN_STEP_IMPOSSIBLE;
	va_start(ap, fmt);
	vsnprintf(p->step->reason, sizeof(p->step->reason), fmt, ap);
	va_end(ap);
}

static int tier_cmp(const void *a, const void *b)
{
	const struct bx_plan_short_dev *x = a, *y = b;

	if (x->tier != y->tier)
		return x->tier < y->tier ? -1 : 1;
	return x->devid < y->devid ? -1 : x->devid > y->devid;
}

/* The devices that may take chunks of @sh->type, with their room now. */
static int fill_short(const struct bx_kstate *s, const struct bx_reloc_short *sh,
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
			.unallocated = bx_ks_unallocated(s, i) };
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

int planner_short(struct planner *p, const struct bx_reloc_list *ml, const char *what)
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

/* The replace stops at chunk @idx: it cannot be made read-only (ENOSPC). */
void planner_replace_refused(struct planner *p, size_t idx)
{
	const struct bx_ks_chunk *c = &p->s.chunks[idx];

	planner_impossible(p, "the kernel's ENOSPC: the replace "
		 "makes each block group read-only while it copies it, and %s block group %llu "
		 "cannot be (its %llu free bytes are more than its type can spare, and the "
		 "kernel forces no system chunk, nor a metadata chunk the devices have no room "
		 "for)",
		 bx_place_type_name(c->type), (unsigned long long)c->logical,
		 (unsigned long long)(c->length - c->used));
}

/* ---- what a change risks ---- */

/*
 * The commit before metadata chunk @logical's relocation may abort
 * (bx_reloc_events.abort_risk): tight, and a warning that says why, once
 * per change.
 */
static void warn_abort(struct planner *p, uint64_t logical)
{
	if (p->step->tight_abort)
		return;
	p->step->tight = p->step->tight_abort = true;
	planner_warn(p, "change %zu: metadata block group %llu moves while no other has room and "
		    "the devices have none for a new one until the relocation commits: the kernel "
		    "may abort the transaction with ENOSPC and force the filesystem read-only "
		    "(seen both ways on the same layout); free some space or add a device first",
		     (size_t)(p->step - p->res->steps) + 1, (unsigned long long)logical);
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
	planner_warn(p, "change %zu moves some chunks only on the kernel's second try, after the "
		    "others made room; what the failed first try took may still be held then, and "
		    "the change then fails with ENOSPC (seen on an aged filesystem): free some "
		    "space or add a device first", (size_t)(p->step - p->res->steps) + 1);
}

void planner_risks(struct planner *p, const struct bx_reloc_events *ev)
{
	p->step->tight |= ev->tight;
	if (ev->abort_risk)
		warn_abort(p, ev->abort_logical);
	if (ev->second_try)
		warn_second_try(p);
}

/* ---- after the plan ---- */

/*
 * Devices that prefer metadata (its tiers 1 and 2) fewer than the metadata
 * profile needs: the kernel takes the next tier too and sorts them all by
 * free space, so the metadata devices may not even be used.
 */
static void warn_metadata_devices(struct planner *p)
{
	const struct bx_kstate *s = &p->s;
	uint64_t type = bx_ks_alloc_type(s, BTRFS_BLOCK_GROUP_METADATA);
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
		planner_warn(p, "%s metadata needs %d devices but only %zu prefer%s metadata (devid "
			    "%s): the kernel then picks among those and the data devices by free "
			    "space, so metadata chunks may go to data devices; give %d device%s a "
			    "metadata hint", bx_profile_name(type), attr.devs_min, preferring,
			    preferring == 1 ? "s" : "", devs, attr.devs_min,
			    attr.devs_min == 1 ? "" : "s");
}

void planner_warn_after(struct planner *p, const struct bx_snapshot *in)
{
	const struct bx_plan_result *res = p->res;
	const struct bx_usage_report *a = &res->after;
	char x[32], y[32];

	for (size_t i = 0; i < res->nr_steps; i++) {
		if (res->steps[i].tight)
			planner_warn(p, "change %zu is tight: it moves or copies the only metadata or "
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
		planner_warn(p, "after the plan, metadata room %s is less than the %s that 50%% growth "
			    "of the metadata needs", x, y);
	}
	if ((a->warnings & BX_USAGE_W_DATA_ON_META_DEVS) &&
	    !(res->before.warnings & BX_USAGE_W_DATA_ON_META_DEVS)) {
		bx_pretty_size(a->data_on_metadata_devices, 0, x, sizeof(x));
		planner_warn(p, "after the plan, data chunks can take %s of the metadata_preferred "
			    "devices once the other devices are full", x);
	}
	if (in->mounted && !in->hints_effective && bx_snap_any_hint(&res->after_in))
		planner_warn(p, "the running kernel ignores allocation hints: the plan places chunks "
			    "without them, as this kernel would");
	if (res->newly_misplaced_chunks) {
		bx_pretty_size(res->newly_misplaced_bytes, 0, x, sizeof(x));
		planner_warn(p, "%llu chunk%s (%s used) %s the hints after the plan; 'btrfsx "
			    "balance misplaced' moves %s (--relocate plans that)",
			    (unsigned long long)res->newly_misplaced_chunks,
			    res->newly_misplaced_chunks == 1 ? "" : "s", x,
			    res->newly_misplaced_chunks == 1 ? "breaks" : "break",
			    res->newly_misplaced_chunks == 1 ? "it" : "them");
	}
}

