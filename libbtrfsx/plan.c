/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The what-if planner (plan/plan.c), the same computation as `btrfsx filesystem plan`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/misplaced.h"
#include "fsops/snapshot-read.h"
#include "format/ctree.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "model/kernel/kernel.h"
#include "plan/plan.h"

static const enum bx_plan_op ops[] = {
	[BTRFSX_PLAN_ADD] = BX_PLAN_ADD,
	[BTRFSX_PLAN_REMOVE] = BX_PLAN_REMOVE,
	[BTRFSX_PLAN_RESIZE] = BX_PLAN_RESIZE,
	[BTRFSX_PLAN_HINT] = BX_PLAN_HINT,
	[BTRFSX_PLAN_CONVERT] = BX_PLAN_CONVERT,
	[BTRFSX_PLAN_REPLACE] = BX_PLAN_REPLACE,
	[BTRFSX_PLAN_RELOCATE] = BX_PLAN_RELOCATE,
	[BTRFSX_PLAN_BALANCE] = BX_PLAN_BALANCE,
	[BTRFSX_PLAN_RESUME] = BX_PLAN_RESUME,
};
/* Every change kind of the planner has its public one: a new kind stops the build here. */
_Static_assert(sizeof(ops) / sizeof(ops[0]) == BX_PLAN_LAST_OP + 1,
	       "each change kind of the planner needs its BTRFSX_PLAN_ value");

_Static_assert(BTRFSX_PLAN_SIZE_MAX == BX_PLAN_SIZE_MAX, "resize to max: one value");

static enum btrfsx_plan_op public_op(enum bx_plan_op op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i] == op)
			return (enum btrfsx_plan_op)i;
	return BTRFSX_PLAN_RELOCATE;
}

static void public_change(const struct bx_plan_change *in, struct btrfsx_plan_change *out)
{
	*out = (struct btrfsx_plan_change){
		.op = public_op(in->op),
		.flags = in->op == BX_PLAN_CONVERT ? in->type | in->profile :
			 in->op == BX_PLAN_BALANCE ? in->type : 0,
	};
	BX_PLAN_CHANGE_FIELDS(BX_FIELD_COPY)
}

static int core_change(const struct btrfsx_plan_change *in, struct bx_plan_change *out)
{
	if ((size_t)in->op >= sizeof(ops) / sizeof(ops[0]))
		return bx_error(-EINVAL, "change %u: unknown", (unsigned int)in->op);
	*out = (struct bx_plan_change){
		.op = ops[in->op],
		.type = in->flags & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA),
		.profile = in->flags & BTRFS_BLOCK_GROUP_PROFILE_MASK,
	};
	BX_PLAN_CHANGE_FIELDS(BX_FIELD_TAKE)
	if (out->op == BX_PLAN_CONVERT && out->type != BTRFS_BLOCK_GROUP_DATA &&
	    out->type != BTRFS_BLOCK_GROUP_METADATA)
		return bx_error(-EINVAL, "a convert names data or metadata in its flags");
	return 0;
}

PUBLIC enum btrfsx_error btrfsx_plan_change_parse(const char *op, const char *value,
						  struct btrfsx_plan_change *change)
{
	struct bx_plan_change c;
	int ret;

	bx_api_begin();
	if (!op)
		return bx_api_missing("op");
	if (!change)
		return bx_api_missing("change");
	ret = bx_plan_parse_change(op, value, &c);
	if (ret)
		return bx_api_result(ret);
	public_change(&c, change);
	return BTRFSX_OK;
}

static void chunks_free(struct btrfsx_plan_chunk *chunks, size_t n)
{
	for (size_t i = 0; chunks && i < n; i++)
		free(chunks[i].devids);
	free(chunks);
}

PUBLIC void btrfsx_plan_free(struct btrfsx_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; plan->steps && i < plan->nr_steps; i++) {
		for (size_t k = 0; k < plan->steps[i].nr_short; k++)
			free(plan->steps[i].shorts[k].devices);
		free(plan->steps[i].shorts);
	}
	free(plan->steps);
	chunks_free(plan->moved, plan->nr_moved);
	chunks_free(plan->created, plan->nr_created);
	btrfsx_usage_free(plan->before);
	btrfsx_usage_free(plan->after);
	btrfsx_misplaced_free(plan->misplaced_after);
	free(plan->newly_misplaced);
	free(plan->warnings);
	free(plan);
}

static void public_short_device(const struct bx_plan_short_dev *in,
				struct btrfsx_plan_short_device *out)
{
	BX_PLAN_SHORT_DEVICE_FIELDS(BX_FIELD_COPY)
}

static int public_short(const struct bx_plan_short *in, struct btrfsx_plan_short *out)
{
	BX_PLAN_SHORT_FIELDS(BX_FIELD_COPY)
	out->flags = in->type;
	out->nr_devices = in->nr_devs;
	out->devices = calloc(in->nr_devs + 1, sizeof(*out->devices));
	if (!out->devices)
		return -ENOMEM;
	for (size_t d = 0; d < in->nr_devs; d++)
		public_short_device(&in->devs[d], &out->devices[d]);
	return 0;
}

static int fill_shorts(const struct bx_plan_step *st, struct btrfsx_plan_step *out)
{
	out->shorts = calloc(st->nr_short + 1, sizeof(*out->shorts));
	if (!out->shorts)
		return -ENOMEM;
	for (size_t k = 0; k < st->nr_short; k++) {
		out->nr_short = k + 1;
		if (public_short(&st->shorts[k], &out->shorts[k]))
			return -ENOMEM;
	}
	return 0;
}

static void public_step(const struct bx_plan_step *in, struct btrfsx_plan_step *out)
{
	static const enum btrfsx_plan_status status[] = {
		[BX_PLAN_STEP_DONE] = BTRFSX_PLAN_POSSIBLE,
		[BX_PLAN_STEP_IMPOSSIBLE] = BTRFSX_PLAN_IMPOSSIBLE,
		[BX_PLAN_STEP_NOT_REACHED] = BTRFSX_PLAN_NOT_REACHED,
	};

	BX_PLAN_STEP_FIELDS(BX_FIELD_COPY)
	public_change(&in->change, &out->change);
	bx_plan_describe_change(&in->change, out->description, sizeof(out->description));
	out->status = status[in->status];
}

static int fill_steps(const struct bx_plan_result *res, struct btrfsx_plan *plan)
{
	plan->steps = calloc(res->nr_steps + 1, sizeof(*plan->steps));
	if (!plan->steps)
		return -ENOMEM;
	plan->nr_steps = res->nr_steps;
	for (size_t i = 0; i < res->nr_steps; i++) {
		public_step(&res->steps[i], &plan->steps[i]);
		if (fill_shorts(&res->steps[i], &plan->steps[i]))
			return -ENOMEM;
	}
	return 0;
}

static int public_chunk(const struct bx_plan_chunk *in, struct btrfsx_plan_chunk *out)
{
	BX_PLAN_CHUNK_FIELDS(BX_FIELD_COPY)
	out->flags = in->type;
	out->nr_devids = in->num_stripes;
	out->devids = calloc(in->num_stripes + 1, sizeof(*out->devids));
	if (!out->devids)
		return -ENOMEM;
	memcpy(out->devids, in->devids, in->num_stripes * sizeof(*out->devids));
	return 0;
}

static int fill_chunks(const struct bx_plan_chunk *src, size_t n, struct btrfsx_plan_chunk **out)
{
	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (public_chunk(&src[i], &(*out)[i]))
			return -ENOMEM;
	return 0;
}

static int fill_misplaced(const struct bx_plan_result *res, struct btrfsx_plan *plan)
{
	size_t n = res->misplaced_after.nr_chunks;

	if (!res->have_misplaced)
		return 0;
	plan->misplaced_after = bx_api_misplaced_from(&res->misplaced_after);
	plan->newly_misplaced = calloc(n + 1, sizeof(*plan->newly_misplaced));
	if (!plan->misplaced_after || !plan->newly_misplaced)
		return -ENOMEM;
	if (n)
		memcpy(plan->newly_misplaced, res->newly_misplaced,
		       n * sizeof(*plan->newly_misplaced));
	return 0;
}

static struct btrfsx_plan *plan_from(const struct bx_snapshot *in,
				     const struct bx_plan_result *res)
{
	struct btrfsx_plan *plan = calloc(1, sizeof(*plan));

	if (!plan)
		return NULL;
	plan->possible = res->possible;
	bx_api_kernel_fields(&in->kernel, plan->kernel, &plan->kernel_running);
	plan->before = bx_api_usage_from(in, &res->before, 0);
	plan->after = bx_api_usage_from(&res->after_in, &res->after, 0);
	if (plan->after)
		bx_api_usage_reclaim(in, &res->after_in, plan->after);
	plan->nr_moved = res->nr_moved;
	plan->nr_created = res->nr_created;
	plan->warnings = calloc(res->nr_warnings + 1, sizeof(*plan->warnings));
	if (!plan->before || !plan->after || !plan->warnings || fill_steps(res, plan) ||
	    fill_chunks(res->moved, res->nr_moved, &plan->moved) ||
	    fill_chunks(res->created, res->nr_created, &plan->created) ||
	    fill_misplaced(res, plan)) {
		btrfsx_plan_free(plan);
		return NULL;
	}
	if (res->nr_warnings)
		memcpy(plan->warnings, res->warnings, res->nr_warnings * sizeof(*plan->warnings));
	plan->nr_warnings = res->nr_warnings;
	return plan;
}

PUBLIC enum btrfsx_error btrfsx_plan(const char *const *paths, size_t nr_paths,
				     const char *sysfs_root,
				     const struct btrfsx_plan_change *changes, size_t nr_changes,
				     struct btrfsx_plan **out)
{
	return btrfsx_plan_for_kernel(paths, nr_paths, sysfs_root, NULL, changes, nr_changes, out);
}

PUBLIC enum btrfsx_error btrfsx_plan_for_kernel(const char *const *paths, size_t nr_paths,
						const char *sysfs_root, const char *kernel,
						const struct btrfsx_plan_change *changes,
						size_t nr_changes, struct btrfsx_plan **out)
{
	struct bx_plan_change *core;
	struct bx_plan_result res;
	struct bx_snapshot in;
	struct bx_kernel k;
	int ret;

	bx_api_begin();
	if (!paths || !nr_paths)
		return bx_api_missing("a path");
	if (!changes || !nr_changes)
		return bx_api_missing("a change");
	if (!out)
		return bx_api_missing("out");
	ret = bx_api_kernel(kernel, &k);
	if (ret)
		return bx_api_result(ret);
	core = calloc(nr_changes, sizeof(*core));
	if (!core)
		return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	for (size_t i = 0; i < nr_changes && !ret; i++)
		ret = core_change(&changes[i], &core[i]);
	if (!ret)
		ret = bx_snapshot_read_extents((char *const *)paths, (int)nr_paths,
					       bx_api_sysfs_root(sysfs_root), &in);
	if (ret) {
		free(core);
		return bx_api_result(ret);
	}
	bx_api_kernel_use(&k, &in);
	ret = bx_plan_compute(&in, core, nr_changes, &res);
	free(core);
	if (!ret) {
		*out = plan_from(&in, &res);
		if (!*out)
			ret = bx_error(-ENOMEM, "out of memory");
	}
	bx_plan_result_release(&res);
	bx_snapshot_release(&in);
	return bx_api_result(ret);
}
