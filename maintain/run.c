/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A maintain run (maintain.h): refuse what must be refused, read the
 * filesystem, choose, then move the plan's chunks one at a time through the
 * kernel, paced (maintain/pace.h), reading the filesystem again before each
 * chunk and stopping as soon as the target is met. When the plan's chunks
 * are done and the target is still not met (the kernel did other than the
 * model said, or the filesystem changed meanwhile), it chooses again, a
 * few rounds at most.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/btrfs.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/run-lock.h"
#include "common/units.h"
#include "fsops/balance-chunk.h"
#include "fsops/condition.h"
#include "fsops/copy-rate.h"
#include "fsops/mounted-fs.h"
#include "fsops/snapshot-read.h"
#include "maintain/maintain.h"
#include "maintain/pace.h"
#include "model/policy.h"

#define DEFAULT_STATE_DIR "/var/lib/btrfsx"
/* The lock `balance misplaced` takes: the two never move chunks side by side. */
#define LOCK_KIND "relocate"
#define MAX_ROUNDS 3

struct maintain_run {
	const struct bx_maintain_opts *o;
	struct bx_maintain_result *res;
	struct bx_mounted_fs mfs;
	struct bx_fs_condition cond;
	const char *state_dir;
	int lock_fd;
	struct bx_pacer pacer;
	struct bx_maintain_progress prog;
	double start, last_report;
};

static int stop_level(const struct maintain_run *r)
{
	return r->o->stop ? *r->o->stop : 0;
}

#define PROGRESS_INTERVAL 0.5

/* Reports the progress when it is due (or @force: a chunk starts or ends). */
static void report(struct maintain_run *r, bool force)
{
	double t = bx_monotonic_seconds();

	if (!r->o->progress || (!force && t - r->last_report < PROGRESS_INTERVAL))
		return;
	r->last_report = t;
	r->prog.elapsed = t - r->start;
	r->o->progress(r->o->progress_arg, &r->prog);
}

/* The pacer waits: said, as balance misplaced says its pause. */
static void report_waiting(void *arg)
{
	struct maintain_run *r = arg;

	r->prog.pausing = true;
	report(r, false);
}

void bx_maintain_result_free(struct bx_maintain_result *res)
{
	if (!res)
		return;
	bx_maintain_plan_release(&res->plan);
	free(res->moved);
	free(res);
}

/* A refusal: returned for a run, noted in the result for a plan (which goes on). */
static int refuse(struct maintain_run *r, int err)
{
	size_t used = strlen(r->res->refused);

	if (!r->o->plan_only)
		return err;
	snprintf(r->res->refused + used, sizeof(r->res->refused) - used, "%s%s",
		 used ? "; " : "", bx_error_message(err));
	bx_error_clear();	/* a plan only reads: the reason goes into its result */
	return 0;
}

static int open_and_refuse(struct maintain_run *r, const char *path)
{
	char why[1024];
	enum bx_refusal refusal;
	bool held = false;
	int ret = bx_mounted_open(path, &r->mfs);

	if (ret) {
		struct stat st;

		if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
			bx_error_clear();
			return bx_error_as(-ENOTDIR, BX_ERROR_KIND_NOT_MOUNTED, "%s: not a mounted "
					   "btrfs; maintenance needs the filesystem mounted", path);
		}
		return ret;
	}
	snprintf(r->res->path, sizeof(r->res->path), "%s", r->mfs.path);
	memcpy(r->res->fsid, r->mfs.fsid, sizeof(r->res->fsid));
	ret = bx_fs_condition_read(&r->mfs, r->o->sysfs_root, &r->cond);
	if (ret)
		return ret;
	refusal = bx_policy_refusal(&r->cond, BX_OP_BALANCE, BX_CHECK_READ_ONLY |
				    BX_CHECK_DEGRADED | BX_CHECK_EXCLUSIVE, why, sizeof(why));
	if (refusal != BX_REFUSE_NONE) {
		ret = refuse(r, bx_error(bx_refusal_errno(refusal), "%s: %s", r->mfs.path, why));
		if (ret || refusal == BX_REFUSE_READ_ONLY || refusal == BX_REFUSE_DEGRADED)
			return ret;
	}
	if (r->o->plan_only) {
		ret = bx_run_lock_held(r->state_dir, LOCK_KIND, r->mfs.fsid_str, &held);
		if (!ret && held)
			ret = refuse(r, bx_error(-EBUSY, "%s: 'balance misplaced' or 'maintain run' "
						 "runs on this filesystem", r->mfs.path));
		return ret;
	}
	ret = bx_run_lock_take(r->state_dir, LOCK_KIND, r->mfs.fsid_str, &r->lock_fd);
	if (ret == -EBUSY)
		return bx_error(-EBUSY, "%s: 'balance misplaced' or 'maintain run' runs on this "
				"filesystem", r->mfs.path);
	return ret;
}

/* Reads the filesystem (a run commits first: the trees read are what the kernel allocates from). */
static int read_fs(struct maintain_run *r, struct bx_snapshot *in)
{
	char *paths[1] = { r->mfs.path };

	if (!r->o->plan_only && ioctl(r->mfs.fd, BTRFS_IOC_SYNC) < 0)
		return bx_error(-errno, "%s: cannot commit: %m", r->mfs.path);
	return bx_snapshot_read_extents(paths, 1, r->o->sysfs_root, in);
}

static int choose(struct maintain_run *r, const struct bx_snapshot *in,
		  struct bx_maintain_plan *p)
{
	struct bx_maintain_inputs inputs = { .pace = r->o->pace, .copy_rate = r->res->copy_rate };

	return bx_maintain_choose(in, &r->o->policy, &inputs, p);
}

static int state_now(struct maintain_run *r, struct bx_maintain_state *st)
{
	struct bx_maintain_inputs inputs = { .pace = r->o->pace, .copy_rate = r->res->copy_rate };
	struct bx_snapshot in;
	int ret = read_fs(r, &in);

	if (ret)
		return ret;
	ret = bx_maintain_state_of(&in, &r->o->policy, &inputs, st);
	bx_snapshot_release(&in);
	return ret;
}

static void stopped(struct maintain_run *r, const char *why)
{
	r->res->status = BX_MAINTAIN_STOPPED;
	snprintf(r->res->reason, sizeof(r->res->reason), "%s", why);
}

/* Whether @st meets the target of the plan the run started with. */
static bool target_met(const struct maintain_run *r, const struct bx_maintain_state *st)
{
	const struct bx_maintain_plan *p = &r->res->plan;

	if (p->target && st->metadata_room < p->target)
		return false;
	return !p->placement_wanted || !st->misplaced;
}

/* While a chunk moves: a second stop cancels it. */
static bool poll_kernel(void *arg, double seconds)
{
	struct maintain_run *r = arg;

	r->prog.kernel_seconds = r->res->kernel_seconds + seconds;
	report(r, false);
	return stop_level(r) >= 2;
}

static int record_moved(struct maintain_run *r, const struct bx_maintain_action *a,
			double seconds)
{
	struct bx_maintain_result *res = r->res;
	struct bx_maintain_action *grown = realloc(res->moved, (res->nr_moved + 1) * sizeof(*grown));

	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	res->moved = grown;
	res->moved[res->nr_moved++] = (struct bx_maintain_action){
		.reason = a->reason, .logical = a->logical, .length = a->length, .used = a->used,
		.type = a->type, .seconds = seconds,
	};
	res->bytes_moved += a->used;
	res->kernel_seconds += seconds;
	r->prog.chunks_done = res->nr_moved;
	r->prog.bytes_done = res->bytes_moved;
	r->prog.kernel_seconds = res->kernel_seconds;
	r->prog.current = r->prog.current_used = 0;
	report(r, true);
	return 0;
}

static bool chunk_exists(const struct bx_snapshot *in, uint64_t logical, uint64_t *used)
{
	for (size_t i = 0; i < in->nr_chunks; i++)
		if (in->chunks[i].logical == logical) {
			*used = in->chunks[i].used;
			return true;
		}
	return false;
}

/*
 * Moves @a unless the target is met already or the chunk went away. *@done:
 * the target is met (stop). Returns 0 to go on, or an error.
 */
static int one_action(struct maintain_run *r, const struct bx_maintain_action *a, bool *done)
{
	struct bx_maintain_inputs inputs = { .pace = r->o->pace, .copy_rate = r->res->copy_rate };
	struct bx_maintain_action now_a = *a;
	struct bx_maintain_state st;
	struct bx_snapshot in;
	double seconds = 0;
	int ret = read_fs(r, &in);

	if (ret)
		return ret;
	ret = bx_maintain_state_of(&in, &r->o->policy, &inputs, &st);
	if (!ret)
		*done = target_met(r, &st);
	if (!ret && !*done && !chunk_exists(&in, a->logical, &now_a.used))
		now_a.used = UINT64_MAX;	/* gone (the cleaner took it): nothing to move */
	bx_snapshot_release(&in);
	if (ret || *done || now_a.used == UINT64_MAX)
		return ret;
	r->prog.current = a->logical;
	r->prog.current_used = now_a.used;
	report(r, true);
	ret = bx_balance_chunk(r->mfs.fd, r->mfs.path, a->logical, a->type, poll_kernel, r,
			       &seconds);
	r->prog.current = r->prog.current_used = 0;
	if (ret == -EINTR) {
		r->res->kernel_seconds += seconds;
		stopped(r, "stopped while moving a chunk (a second signal or the caller's "
			"cancel); it stays where it was (run again to go on)");
		return 0;
	}
	if (ret == -ENOSPC)
		return bx_error_as(ret, BX_ERROR_KIND_NO_SPACE, "%s: the kernel ran out of space "
				   "moving chunk %llu; it stays where it was, nothing is lost",
				   r->mfs.path, (unsigned long long)a->logical);
	if (ret == -EBUSY || ret == -EINPROGRESS)
		return bx_error(-EBUSY, "%s: another balance or device operation started meanwhile",
				r->mfs.path);
	if (ret)
		return bx_error(ret, "%s: balance of chunk %llu: %s", r->mfs.path,
				(unsigned long long)a->logical, strerror(-ret));
	return record_moved(r, &now_a, seconds);
}

/* Waits before the next chunk as the policy says; false (with the reason) when the run stops. */
static bool may_go_on(struct maintain_run *r)
{
	enum bx_pace_wait w = bx_pacer_wait(&r->pacer, r->res->bytes_moved);

	r->prog.pausing = false;

	switch (w) {
	case BX_PACE_GO:
		return true;
	case BX_PACE_STOPPED:
		stopped(r, "stopped between chunks (a signal, the end of input or the caller's "
			"cancel; run again to go on)");
		break;
	case BX_PACE_WINDOW:
		stopped(r, r->res->nr_moved ? "the time window ended (the next run goes on)" :
			"outside the time window (quiet-hours, --window): nothing moved");
		break;
	case BX_PACE_BUSY:
		stopped(r, "the devices stayed busy (the next run goes on)");
		break;
	}
	return false;
}

static int run_plan(struct maintain_run *r, const struct bx_maintain_plan *p, bool *done)
{
	int ret = 0;

	for (size_t i = 0; !ret && !*done && i < p->nr_actions; i++) {
		if (!may_go_on(r))
			return 0;
		ret = one_action(r, &p->actions[i], done);
		if (r->res->status == BX_MAINTAIN_STOPPED)
			return ret;
	}
	return ret;
}

static int run_rounds(struct maintain_run *r)
{
	bool done = r->res->plan.status == BX_MAINTAIN_NOTHING;
	int ret = run_plan(r, &r->res->plan, &done);

	for (int round = 1; !ret && !done && round < MAX_ROUNDS &&
	     r->res->status != BX_MAINTAIN_STOPPED; round++) {
		struct bx_maintain_plan again;
		struct bx_snapshot in;

		ret = read_fs(r, &in);
		if (ret)
			break;
		ret = choose(r, &in, &again);
		bx_snapshot_release(&in);
		if (ret)
			break;
		done = again.status == BX_MAINTAIN_NOTHING;
		if (again.status == BX_MAINTAIN_CANNOT && !again.nr_actions)
			snprintf(r->res->reason, sizeof(r->res->reason), "%s", again.reason);
		if (!again.nr_actions) {
			bx_maintain_plan_release(&again);
			break;
		}
		r->prog.chunks_total += again.nr_actions;
		r->prog.bytes_total += again.bytes_planned;
		ret = run_plan(r, &again, &done);
		bx_maintain_plan_release(&again);
	}
	return ret;
}

/* The result's status and state after a run. */
static int finish_run(struct maintain_run *r, int ret)
{
	struct bx_maintain_result *res = r->res;
	int ret2;

	if (res->nr_moved) {
		ret2 = bx_copy_rate_add(r->state_dir, r->mfs.fsid, res->bytes_moved,
					res->kernel_seconds);
		if (ret2)
			bx_warn("the copy rate was not recorded: %s", bx_error_message(ret2));
	}
	ret2 = state_now(r, &res->final);
	if (ret2 && !ret)
		return ret2;
	if (ret2)
		bx_warn("the state after the run could not be read: %s", bx_error_message(ret2));
	/* Unread, the state is the plan's prediction: not a target met. */
	res->target_met = !ret2 && target_met(r, &res->final);
	if (ret) {
		res->status = BX_MAINTAIN_FAILED;
		snprintf(res->reason, sizeof(res->reason), "%s", bx_error_message(ret));
	} else if (res->status != BX_MAINTAIN_STOPPED) {
		if (res->target_met)
			res->status = res->nr_moved ? BX_MAINTAIN_MET : BX_MAINTAIN_NOTHING;
		else {
			res->status = BX_MAINTAIN_CANNOT;
			if (!res->reason[0])
				snprintf(res->reason, sizeof(res->reason), "%s",
					 res->plan.reason[0] ? res->plan.reason :
					 "the chunks moved did not meet the target");
		}
	}
	return ret;
}

static int start(struct maintain_run *r)
{
	struct bx_snapshot in;
	uint64_t bytes = 0;
	double secs = 0;
	int ret = bx_copy_rate_load(r->state_dir, r->mfs.fsid, &bytes, &secs);

	if (ret) {
		bx_warn("the copy rate record is unreadable, ignored: %s", bx_error_message(ret));
		bx_error_clear();	/* a plan without a time estimate */
	} else if (bytes && secs > 0) {
		r->res->copy_rate = (double)bytes / secs;
	}
	ret = read_fs(r, &in);
	if (ret)
		return ret;
	ret = choose(r, &in, &r->res->plan);
	bx_snapshot_release(&in);
	if (ret)
		return ret;
	r->res->status = r->res->plan.status;
	r->res->final = r->res->plan.after;
	snprintf(r->res->reason, sizeof(r->res->reason), "%s", r->res->plan.reason);
	r->res->target_met = r->res->plan.status == BX_MAINTAIN_NOTHING;
	return 0;
}

int bx_maintain_policy_of(const char *path, const char *file, bool required,
			  struct bx_maintain_policy *p, bool *found)
{
	struct bx_mounted_fs mfs;
	char real[PATH_MAX];
	bool mounted = bx_mounted_open(path, &mfs) == 0;
	int ret;

	/* Not a mounted btrfs: the run says so; the [default] section still counts. */
	if (!mounted)
		bx_error_clear();
	if (!realpath(mounted ? mfs.path : path, real))
		snprintf(real, sizeof(real), "%s", mounted ? mfs.path : path);
	bx_maintain_policy_defaults(p);
	ret = bx_maintain_policy_load(file, required, real, mounted ? mfs.fsid_str : NULL, p,
				      found);
	if (mounted)
		bx_mounted_close(&mfs);
	return ret;
}

int bx_maintain_run(const char *path, const struct bx_maintain_opts *opts,
		    struct bx_maintain_result **resp)
{
	struct maintain_run r = { .o = opts, .lock_fd = -1, .start = bx_monotonic_seconds() };
	int ret;

	*resp = NULL;
	r.mfs.fd = -1;
	r.state_dir = opts->state_dir ? opts->state_dir : DEFAULT_STATE_DIR;
	r.res = calloc(1, sizeof(*r.res));
	if (!r.res)
		return bx_error(-ENOMEM, "out of memory");
	ret = open_and_refuse(&r, path);
	if (!ret)
		ret = start(&r);
	/* Refused, or nothing could be read: nothing moved, the message says it all. */
	if (ret) {
		bx_maintain_result_free(r.res);
		bx_mounted_close(&r.mfs);
		return ret;
	}
	if (!ret && !opts->plan_only && r.res->plan.status != BX_MAINTAIN_NOTHING) {
		r.res->status = BX_MAINTAIN_FAILED;
		bx_pacer_init(&r.pacer, &opts->policy, &r.mfs, opts->stop, opts->minute_now);
		r.pacer.waiting = report_waiting;
		r.pacer.waiting_arg = &r;
		r.prog.chunks_total = r.res->plan.nr_actions;
		r.prog.bytes_total = r.res->plan.bytes_planned;
		report(&r, true);
		ret = run_rounds(&r);
		r.res->paused_seconds = r.pacer.paused;
		ret = finish_run(&r, ret);
		r.prog.pausing = false;
		report(&r, true);
	}
	r.res->seconds = bx_monotonic_seconds() - r.start;
	if (r.lock_fd >= 0)
		close(r.lock_fd);
	bx_mounted_close(&r.mfs);
	*resp = r.res;
	return ret;
}
