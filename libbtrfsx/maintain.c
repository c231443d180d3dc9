/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btrfsx_maintain(): the maintain engine (maintain/maintain.h) for
 * programs, its result copied into the public structures by the engine's
 * field lists.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "libbtrfsx/btrfsx.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "maintain/maintain.h"

static const enum btrfsx_maintain_status public_status[] = {
	[BX_MAINTAIN_NOTHING] = BTRFSX_MAINTAIN_NOTHING,
	[BX_MAINTAIN_PLANNED] = BTRFSX_MAINTAIN_PLANNED,
	[BX_MAINTAIN_MET] = BTRFSX_MAINTAIN_MET,
	[BX_MAINTAIN_CANNOT] = BTRFSX_MAINTAIN_CANNOT,
	[BX_MAINTAIN_STOPPED] = BTRFSX_MAINTAIN_STOPPED,
	[BX_MAINTAIN_FAILED] = BTRFSX_MAINTAIN_FAILED,
};

static const enum btrfsx_maintain_reason public_reason[] = {
	[BX_MAINTAIN_ROOM] = BTRFSX_MAINTAIN_ROOM,
	[BX_MAINTAIN_EMPTY] = BTRFSX_MAINTAIN_EMPTY,
	[BX_MAINTAIN_MISPLACED] = BTRFSX_MAINTAIN_MISPLACED,
};

static void public_state(const struct bx_maintain_state *in, struct btrfsx_maintain_state *out)
{
	BX_MAINTAIN_STATE_FIELDS(BX_FIELD_COPY)
}

static void public_chunk(const struct bx_maintain_action *in, struct btrfsx_maintain_chunk *out)
{
	BX_MAINTAIN_CHUNK_FIELDS(BX_FIELD_COPY)
	out->reason = public_reason[in->reason];
}

static struct btrfsx_maintain_chunk *public_chunks(const struct bx_maintain_action *in, size_t n)
{
	struct btrfsx_maintain_chunk *out = calloc(n + 1, sizeof(*out));

	for (size_t i = 0; out && i < n; i++)
		public_chunk(&in[i], &out[i]);
	return out;
}

static void public_plan(const struct bx_maintain_plan *in, struct btrfsx_maintain_result *out)
{
	BX_MAINTAIN_PLAN_FIELDS(BX_FIELD_COPY)
	public_state(&in->before, &out->before);
	public_state(&in->after, &out->after);
}

static void public_result(const struct bx_maintain_result *in, struct btrfsx_maintain_result *out)
{
	BX_MAINTAIN_RESULT_FIELDS(BX_FIELD_COPY)
	out->status = public_status[in->status];
	public_state(&in->final, &out->final);
}

PUBLIC void btrfsx_maintain_result_free(struct btrfsx_maintain_result *res)
{
	if (!res)
		return;
	free(res->actions);
	free(res->moved);
	free(res);
}

static struct btrfsx_maintain_result *result_from(const struct bx_maintain_result *res)
{
	struct btrfsx_maintain_result *out = calloc(1, sizeof(*out));

	if (!out)
		return NULL;
	public_result(res, out);
	public_plan(&res->plan, out);
	out->actions = public_chunks(res->plan.actions, res->plan.nr_actions);
	out->nr_actions = res->plan.nr_actions;
	out->moved = public_chunks(res->moved, res->nr_moved);
	out->nr_moved = res->nr_moved;
	if (!out->actions || !out->moved) {
		btrfsx_maintain_result_free(out);
		return NULL;
	}
	return out;
}

PUBLIC enum btrfsx_error btrfsx_maintain(const char *path, const struct btrfsx_maintain_options *opts,
					 struct btrfsx_maintain_result **result)
{
	static const struct btrfsx_maintain_options defaults = { .pace = -1 };
	struct bx_maintain_result *res = NULL;
	struct bx_maintain_opts o = { 0 };
	char file[PATH_MAX];
	bool found;
	int ret;

	bx_api_begin();
	if (!path)
		return bx_api_missing("path");
	if (!result)
		return bx_api_missing("result");
	*result = NULL;
	if (!opts)
		opts = &defaults;
	if (opts->policy_file)
		snprintf(file, sizeof(file), "%s", opts->policy_file);
	else
		snprintf(file, sizeof(file), "%s/%s", bx_api_config_dir(NULL), BX_MAINTAIN_CONF);
	ret = bx_maintain_policy_of(path, file, opts->policy_file != NULL, &o.policy, &found);
	if (ret)
		return bx_api_result(ret);
	o.plan_only = opts->plan_only;
	o.pace = opts->pace;
	o.sysfs_root = bx_api_sysfs_root(opts->sysfs_root);
	o.state_dir = opts->state_dir;
	o.stop = opts->cancel;
	ret = bx_maintain_run(path, &o, &res);
	if (res) {
		*result = result_from(res);
		bx_maintain_result_free(res);
		if (!*result)
			return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	}
	return bx_api_result(ret);
}
