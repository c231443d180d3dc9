/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The relocation engine (see relocate.h).
 *
 * Each chunk: read the filesystem (after a transaction commit, so the
 * device tree the kernel allocates from is the one read), pick the next
 * misplaced chunk, check the model's room for it, balance it alone in a
 * worker thread while the calling thread reports progress and watches the
 * cancel flag, commit, read again, and compare the chunks that appeared
 * with what the model allocates from the state read before.
 */
#include <errno.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/run-lock.h"
#include "common/units.h"
#include "fsops/balance-chunk.h"
#include "fsops/condition.h"
#include "fsops/copy-rate.h"
#include "fsops/mounted-fs.h"
#include "fsops/snapshot-read.h"
#include "model/policy.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "disk/volumes.h"
#include "relocate/relocate-model.h"

#define DEFAULT_STATE_DIR "/var/lib/btrfsx"
#define POLL_SECONDS 0.1

/* One relocation run: what it was asked, what it holds, how far it got. */
struct relocation {
	const char *path;
	const struct bx_relocate_opts *o;
	struct bx_relocate_result *res;
	struct bx_mounted_fs mfs;
	int lock_fd;
	const char *state_dir;
	double start;
	double last_progress;
	bool cancelled;			/* the progress callback asked to stop */
	struct bx_fs_condition cond;	/* read when it opened the filesystem */
	bool kernel_called;		/* a balance call was made: what is left must be read again */
	struct bx_relocate_progress prog;
	uint64_t *created;		/* logical addresses of chunks this run created */
	size_t nr_created;
};

static bool cancel_requested(const struct relocation *r)
{
	return r->cancelled || (r->o->cancel && *r->o->cancel);
}

/* Calls the progress callback when it is due (or @force); true when it asks to cancel. */
static bool report_progress(struct relocation *r, bool force)
{
	double t = bx_monotonic_seconds();
	double interval = r->o->progress_interval > 0 ? r->o->progress_interval : 0.5;

	if (!r->o->progress || (!force && t - r->last_progress < interval))
		return false;
	r->last_progress = t;
	r->prog.elapsed = t - r->start;
	if (r->prog.chunks_done > r->prog.chunks_total)
		r->prog.chunks_total = r->prog.chunks_done;
	if (r->prog.bytes_done > r->prog.bytes_total)
		r->prog.bytes_total = r->prog.bytes_done;
	if (r->o->progress(r->o->progress_arg, &r->prog))
		r->cancelled = true;
	return r->cancelled;
}

/* ---- refusals before anything is read ---- */

/*
 * A refusal of a real run, @err with its message recorded: returned as it
 * is, except in a dry run, which only reads and goes on, noting what a real
 * run would be refused for.
 */
static int refuse(struct relocation *r, int err)
{
	char *refused = r->res->refused;
	size_t used = strlen(refused);

	if (!r->o->dry_run)
		return err;
	snprintf(refused + used, sizeof(r->res->refused) - used, "%s%s", used ? "; " : "",
		 bx_error_message(err));
	/* A dry run is not refused: the reason goes into the result instead. */
	bx_error_clear();
	return 0;
}

/*
 * A device or image file that stands for no mounted filesystem: say whether
 * it holds one that is not mounted, or what else is wrong with it.
 */
static int refuse_unmounted(const char *path, const char *sysfs_root)
{
	struct bx_snapshot in;
	char mnt[PATH_MAX] = "";
	char *paths[1] = { (char *)path };
	int ret = bx_snapshot_read_offline(paths, 1, sysfs_root, &in, mnt, sizeof(mnt));

	if (ret)
		return ret;
	bx_snapshot_release(&in);
	return bx_error_as(-ENOTDIR, BX_ERROR_KIND_NOT_MOUNTED, "%s: the filesystem is not "
			   "mounted; relocating chunks needs it mounted", path);
}

/*
 * A refusal of the policy (model/policy.h) by @checks, for a real run or
 * into a dry run's result.
 */
static int check_policy(struct relocation *r, unsigned int checks)
{
	char why[1024];
	enum bx_refusal refusal = bx_policy_refusal(&r->cond, BX_OP_BALANCE, checks, why,
						    sizeof(why));

	if (refusal == BX_REFUSE_NONE)
		return 0;
	return refuse(r, bx_error(bx_refusal_errno(refusal), "%s: %s", r->path, why));
}

/* The mounted filesystem at @r->path (a member device stands for its mount point). */
static int open_filesystem(struct relocation *r)
{
	struct stat st;
	int ret;

	if (stat(r->path, &st) < 0)
		return bx_error(-errno, "%s: %m", r->path);
	ret = bx_mounted_open(r->path, &r->mfs);
	if (ret && !S_ISDIR(st.st_mode)) {
		bx_error_clear();
		return refuse_unmounted(r->path, r->o->sysfs_root);
	}
	if (ret)
		return ret;
	r->path = r->mfs.path;
	ret = bx_fs_condition_read(&r->mfs, r->o->sysfs_root, &r->cond);
	return ret ? ret : check_policy(r, BX_CHECK_READ_ONLY);
}

/*
 * One relocation per filesystem at a time (common/run-lock.h). A dry run
 * changes nothing: it takes no lock file, it only sees one held.
 */
static int take_lock(struct relocation *r)
{
	char uuid[37];
	bool held = false;
	int ret;

	uuid_unparse_lower(r->mfs.fsid, uuid);
	if (r->o->dry_run)
		ret = bx_run_lock_held(r->state_dir, "relocate", uuid, &held);
	else
		ret = bx_run_lock_take(r->state_dir, "relocate", uuid, &r->lock_fd);
	if (ret == -EBUSY || held)
		return refuse(r, bx_error(-EBUSY, "%s: another 'balance misplaced' runs on "
					  "this filesystem", r->path));
	if (ret) {
		/* The kernel still refuses a second balance while one runs. */
		bx_warn("%s; another relocation of this filesystem is not kept out between "
			"chunks", bx_error_message(ret));
		bx_error_clear();
	}
	return 0;
}

/* ---- reading the filesystem ---- */

/* Commits the running transaction: afterwards the trees read are what the kernel allocates from. */
static int commit(struct relocation *r)
{
	/* Read-only (a dry run): nothing changes, and there is nothing to commit. */
	if (r->cond.read_only)
		return 0;
	if (ioctl(r->mfs.fd, BTRFS_IOC_SYNC) < 0)
		return bx_error(-errno, "%s: cannot commit: %m", r->path);
	return 0;
}

/*
 * Reads the filesystem and its report (the report's warnings, said at every
 * read, are recorded once).
 */
static int read_state(struct relocation *r, struct bx_snapshot *in,
		      struct bx_misplaced_report *rep)
{
	char *paths[1] = { (char *)r->path };
	int ret = commit(r);

	if (!ret)
		ret = bx_snapshot_read_used(paths, 1, r->o->sysfs_root, in);
	if (!ret) {
		ret = bx_misplaced_compute(in, r->state_dir, rep);
		if (ret)
			bx_snapshot_release(in);
	}
	return ret;
}

/* ---- planning ---- */

/*
 * The room check of moving @n chunks of @rep, starting at @chunks: 0 when
 * all fit, else -ENOSPC with the reason recorded and copied into the result.
 */
static int check_room(struct relocation *r, const struct bx_snapshot *in,
		      const struct bx_misplaced_report *rep,
		      const struct bx_misplaced_chunk *chunks, size_t n)
{
	int ret = bx_relocate_room(in, rep, chunks, n, r->res->reason, sizeof(r->res->reason));

	if (ret == -ENOSPC)
		ret = bx_error_as(ret, BX_ERROR_KIND_NO_SPACE, "%s: %s", r->path, r->res->reason);
	return ret;
}

static bool created_here(const struct relocation *r, uint64_t logical)
{
	for (size_t i = 0; i < r->nr_created; i++)
		if (r->created[i] == logical)
			return true;
	return false;
}

/* ---- what the kernel did ---- */

static int remember_created(struct relocation *r, uint64_t logical)
{
	uint64_t *grown = realloc(r->created, (r->nr_created + 1) * sizeof(*grown));

	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	r->created = grown;
	r->created[r->nr_created++] = logical;
	return 0;
}

static void describe_devids(const uint64_t *devids, uint32_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? "," : "",
					 (unsigned long long)devids[i]);
}

/*
 * "which the hints forbid (devid 3 data_only, ...)" or "no better placed"
 * for the new chunk @n, into @buf.
 */
static int describe_verdict(const struct bx_place_model *pm, const struct bx_relocate_new_chunk *n,
			    char *buf, size_t len)
{
	struct bx_place_stripe *stripes = calloc(n->num_stripes + 1, sizeof(*stripes));
	struct bx_place_chunk pc = { n->logical, n->length, 0, n->type, n->num_stripes, NULL };
	struct bx_place_verdict v;
	size_t used;
	int ret;

	if (!stripes)
		return bx_error(-ENOMEM, "out of memory");
	for (uint32_t s = 0; s < n->num_stripes; s++)
		stripes[s].devid = n->devids[s];
	pc.stripes = stripes;
	ret = bx_place_classify(pm, &pc, &v);
	free(stripes);
	if (ret) {
		bx_place_verdict_release(&v);
		return bx_error(ret, "the allocator model failed: %s", strerror(-ret));
	}
	used = (size_t)snprintf(buf, len, v.cls == BX_PLACE_FORBIDDEN ? "which the hints forbid (" :
				"no better placed");
	for (size_t i = 0; v.cls == BX_PLACE_FORBIDDEN && i < v.nr_offending && used < len; i++) {
		char hint[32] = "?";

		for (size_t d = 0; d < pm->nr_devs; d++)
			if (pm->devs[d].devid == v.offending[i])
				bx_hint_describe(pm->devs[d].hint, hint, sizeof(hint));
		used += (size_t)snprintf(buf + used, len - used, "%sdevid %llu %s", i ? ", " : "",
					 (unsigned long long)v.offending[i], hint);
	}
	if (v.cls == BX_PLACE_FORBIDDEN && used < len)
		snprintf(buf + used, len - used, ")");
	bx_place_verdict_release(&v);
	return 0;
}

/*
 * A forced run on a kernel that ignores hints: the kernel put the chunk
 * back where the hints forbid, or no better. Why, into the result.
 */
static int explain_ignored(struct relocation *r, const struct bx_place_model *pm,
			   const struct bx_relocated *rel, const struct bx_relocate_new_chunk *n)
{
	char devs[128], old_devs[128], verdict[512];
	int ret = describe_verdict(pm, n, verdict, sizeof(verdict));

	if (ret)
		return ret;
	describe_devids(n->devids, n->num_stripes, devs, sizeof(devs));
	describe_devids(rel->devids, rel->num_stripes, old_devs, sizeof(old_devs));
	snprintf(r->res->reason, sizeof(r->res->reason),
		 "the running kernel ignores allocation hints (--force): the %s of chunk %llu "
		 "(devids %s) went to the new chunk %llu on devids %s, %s; moving more chunks "
		 "would not place them by the hints either", bx_place_type_name(rel->type),
		 (unsigned long long)rel->logical, old_devs, (unsigned long long)n->logical, devs,
		 verdict);
	return bx_error(-EOPNOTSUPP, "%s: %s", r->path, r->res->reason);
}

/* A new chunk of the moved kind that is no better placed: why, into the result. */
static int explain_misplaced_again(struct relocation *r, const struct bx_snapshot *before,
				   const struct bx_relocated *rel,
				   const struct bx_relocate_new_chunk *n)
{
	struct bx_snap_model um;
	struct bx_place_model pm;
	char devs[128], old_devs[128], pref[512], unalloc[32];
	uint64_t free_bytes = 0;
	uint32_t tier;
	int ret = bx_snap_place_model(before, &um, &pm);

	if (ret)
		return ret;
	if (!before->hints_effective) {
		ret = explain_ignored(r, &pm, rel, n);
		bx_snap_model_release(&um);
		return ret;
	}
	tier = bx_place_best_tier(&pm, n->type);
	for (size_t i = 0; i < pm.nr_devs; i++)
		if (pm.devs[i].writable &&
		    (uint32_t)bx_alloc_hint_tier(pm.devs[i].hint, n->type, pm.params.flags, NULL) == tier)
			free_bytes += bx_alloc_device_unallocated(&pm.devs[i]);
	bx_relocate_tier_devids(&pm, n->type, tier, pref, sizeof(pref));
	bx_snap_model_release(&um);
	describe_devids(n->devids, n->num_stripes, devs, sizeof(devs));
	describe_devids(rel->devids, rel->num_stripes, old_devs, sizeof(old_devs));
	bx_pretty_size(free_bytes, 0, unalloc, sizeof(unalloc));
	snprintf(r->res->reason, sizeof(r->res->reason),
		 "the %s of chunk %llu (devids %s) went to the new chunk %llu on devids %s, no "
		 "better placed: the preferred devices (%s) have %s unallocated, too little for a "
		 "%s %s chunk", bx_place_type_name(rel->type), (unsigned long long)rel->logical,
		 old_devs, (unsigned long long)n->logical, devs, *pref ? pref : "none", unalloc,
		 bx_place_type_name(n->type), bx_profile_name(n->type));
	return bx_error_as(-ENOSPC, BX_ERROR_KIND_NO_SPACE, "%s: %s", r->path, r->res->reason);
}

static void relocated_release(struct bx_relocated *rel)
{
	for (size_t i = 0; i < rel->nr_new; i++)
		free(rel->new_chunks[i].devids);
	free(rel->new_chunks);
	free(rel->devids);
}

void bx_relocate_result_free(struct bx_relocate_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->nr_relocated; i++)
		relocated_release(&res->relocated[i]);
	free(res->relocated);
	bx_misplaced_report_release(&res->start);
	free(res);
}

/* A new slot in the result's list, zeroed, with the old placement of @c. */
static struct bx_relocated *new_record(struct relocation *r, const struct bx_misplaced_chunk *c)
{
	struct bx_relocate_result *res = r->res;
	struct bx_relocated *grown = realloc(res->relocated,
					     (res->nr_relocated + 1) * sizeof(*grown));
	struct bx_relocated *rel;

	if (!grown)
		return NULL;
	res->relocated = grown;
	rel = &res->relocated[res->nr_relocated];
	memset(rel, 0, sizeof(*rel));
	rel->devids = calloc(c->num_stripes + 1, sizeof(*rel->devids));
	if (!rel->devids)
		return NULL;
	res->nr_relocated++;
	rel->logical = c->logical;
	rel->type = c->type;
	rel->length = c->length;
	rel->used = c->used;
	rel->cls = c->cls;
	rel->num_stripes = c->num_stripes;
	for (uint32_t s = 0; s < c->num_stripes; s++)
		rel->devids[s] = c->stripes[s].devid;
	return rel;
}

/* ---- the run ---- */

/* The next chunk to move from @rep, or NULL; sets LIMIT when a limit stops it. */
static const struct bx_misplaced_chunk *next_chunk(struct relocation *r,
						   const struct bx_misplaced_report *rep)
{
	if (r->o->limit && r->prog.chunks_done >= r->o->limit) {
		r->res->stop = BX_RELOCATE_LIMIT;
		return NULL;
	}
	for (size_t i = 0; i < rep->nr_chunks; i++) {
		const struct bx_misplaced_chunk *c = &rep->chunks[i];

		if (!bx_policy_takes(c, r->o->forbidden_only) || created_here(r, c->logical))
			continue;
		if (r->o->max_bytes && r->prog.bytes_done + c->used > r->o->max_bytes) {
			r->res->stop = BX_RELOCATE_LIMIT;
			return NULL;
		}
		return c;
	}
	r->res->stop = BX_RELOCATE_DONE;
	return NULL;
}

/* Sleeps @seconds between chunks, reporting progress; false when cancelled. */
static bool pause_between(struct relocation *r)
{
	double until = bx_monotonic_seconds() + r->o->pause;

	r->prog.pausing = true;
	while (bx_monotonic_seconds() < until) {
		struct timespec ts = { 0, (long)(POLL_SECONDS * 1e9) };

		if (cancel_requested(r) || report_progress(r, false))
			break;
		nanosleep(&ts, NULL);
	}
	r->prog.pausing = false;
	return !cancel_requested(r);
}

static int stop_for_kernel_error(struct relocation *r, const struct bx_misplaced_chunk *c, int err)
{
	char used[32];

	bx_pretty_size(c->used, 0, used, sizeof(used));
	if (err == -ENOSPC) {
		r->res->stop = BX_RELOCATE_ENOSPC;
		snprintf(r->res->reason, sizeof(r->res->reason), "the kernel ran out of space moving "
			 "chunk %llu (%s %s, %s used): %s; what was not moved stays where it was, "
			 "nothing is lost", (unsigned long long)c->logical,
			 bx_place_type_name(c->type), bx_profile_name(c->type), used,
			 r->res->hints_effective ? "a tier filled up" :
			 "no room for a new chunk of its kind");
		return bx_error_as(-ENOSPC, BX_ERROR_KIND_NO_SPACE, "%s: %s", r->path,
				   r->res->reason);
	}
	r->res->stop = BX_RELOCATE_FAILED;
	if (err == -EINPROGRESS || err == -EBUSY)
		err = bx_error(-EBUSY, "%s: another balance or device operation started meanwhile",
			       r->path);
	else if (err != -ECANCELED)
		err = bx_error(err, "%s: balance of chunk %llu: %s", r->path,
			       (unsigned long long)c->logical, strerror(-err));
	snprintf(r->res->reason, sizeof(r->res->reason), "%s", bx_error_message(err));
	return err;
}

/* While a chunk moves: the progress, and whether to cancel (bx_balance_chunk_poll). */
static bool poll_kernel(void *arg, double seconds)
{
	struct relocation *r = arg;

	r->prog.kernel_seconds = r->res->kernel_seconds + seconds;
	return report_progress(r, false) || cancel_requested(r);
}

/* Moves @c; fills its record. Returns 0 to go on, or why to stop. */
static int move_one(struct relocation *r, const struct bx_snapshot *before,
		    const struct bx_misplaced_report *rep, const struct bx_misplaced_chunk *c)
{
	struct bx_snapshot after;
	struct bx_misplaced_report after_rep;
	struct bx_place_chunk old = { c->logical, c->length, c->used, c->type, c->num_stripes,
				      c->stripes };
	struct bx_relocated *rel;
	double seconds = 0;
	int ret;

	r->prog.current = c->logical;
	r->prog.current_used = c->used;
	if (report_progress(r, true) || cancel_requested(r)) {
		r->res->stop = BX_RELOCATE_CANCELLED;
		snprintf(r->res->reason, sizeof(r->res->reason), "cancelled before moving chunk "
			 "%llu (run again to go on)", (unsigned long long)c->logical);
		return bx_error(-EINTR, "%s: %s", r->path, r->res->reason);
	}
	r->kernel_called = true;
	ret = bx_balance_chunk(r->mfs.fd, r->path, c->logical, c->type, poll_kernel, r, &seconds);
	r->res->kernel_seconds += seconds;
	r->prog.kernel_seconds = r->res->kernel_seconds;
	r->prog.current = 0;
	if (ret == -EINTR) {
		r->res->stop = BX_RELOCATE_CANCELLED;
		snprintf(r->res->reason, sizeof(r->res->reason), "cancelled while moving chunk %llu; "
			 "it stays where it was (run again to go on)", (unsigned long long)c->logical);
		return bx_error(-EINTR, "%s: %s", r->path, r->res->reason);
	}
	if (ret)
		return stop_for_kernel_error(r, c, ret);
	rel = new_record(r, c);
	if (!rel)
		return bx_error(-ENOMEM, "out of memory");
	rel->seconds = seconds;
	r->prog.chunks_done++;
	r->prog.bytes_done += c->used;
	r->res->bytes_moved += c->used;
	ret = read_state(r, &after, &after_rep);
	if (ret)
		return ret;
	ret = bx_relocate_new_chunks(before, &after, &old, rel);
	for (size_t i = 0; !ret && i < rel->nr_new; i++)
		ret = remember_created(r, rel->new_chunks[i].logical);
	/* Forced on a kernel that ignores hints too: a chunk put back no better ends the run. */
	for (size_t i = 0; !ret && i < rel->nr_new; i++) {
		if (rel->new_chunks[i].improves)
			continue;
		r->res->stop = BX_RELOCATE_MISPLACED_AGAIN;
		ret = explain_misplaced_again(r, before, rel, &rel->new_chunks[i]);
	}
	if (!ret && !rel->as_modelled)
		bx_warn("chunk %llu: the kernel placed a new chunk other than the allocator model "
			"said%s", (unsigned long long)c->logical,
			rep->hints_effective ? "" : " (it ignores allocation hints)");
	bx_misplaced_report_release(&after_rep);
	bx_snapshot_release(&after);
	report_progress(r, true);
	return ret;
}

static int one_step(struct relocation *r, bool *go_on)
{
	struct bx_snapshot in;
	struct bx_misplaced_report rep;
	const struct bx_misplaced_chunk *c;
	int ret;

	*go_on = false;
	ret = read_state(r, &in, &rep);
	if (ret)
		return ret;
	c = next_chunk(r, &rep);
	if (c) {
		/* The room for this chunk alone: something else may have filled a tier. */
		ret = check_room(r, &in, &rep, c, 1);
		if (ret == -ENOSPC)
			r->res->stop = BX_RELOCATE_NO_ROOM;
		if (!ret)
			ret = move_one(r, &in, &rep, c);
		*go_on = ret == 0;
	}
	bx_misplaced_report_release(&rep);
	bx_snapshot_release(&in);
	return ret;
}

/* Everything misplaced in @rep, whatever the options select (as filesystem misplaced counts). */
static void set_remaining(struct relocation *r, const struct bx_misplaced_report *rep)
{
	r->res->remaining_chunks = rep->nr_chunks;
	r->res->remaining_bytes = rep->forbidden.used + rep->off_preference.used;
}

static int remaining(struct relocation *r)
{
	struct bx_snapshot in;
	struct bx_misplaced_report rep;
	int ret = read_state(r, &in, &rep);

	if (ret)
		return ret;
	set_remaining(r, &rep);
	bx_misplaced_report_release(&rep);
	bx_snapshot_release(&in);
	return 0;
}

/* The start: report, refusals that need it, the plan and its room. */
static int start(struct relocation *r, struct bx_snapshot *in)
{
	struct bx_relocate_result *res = r->res;
	int ret = read_state(r, in, &res->start);

	if (ret)
		return ret;
	/* Until a chunk moves, what is left is what was misplaced at the start. */
	set_remaining(r, &res->start);
	res->hints_effective = res->start.hints_effective;
	if (res->start.nr_chunks && !res->hints_effective) {
		r->cond.kernel_hints = 0;
		if (!r->o->force)
			ret = check_policy(r, BX_CHECK_HINTS);
		if (ret)
			return ret;
		res->forced = r->o->force;
	}
	res->nr_planned = bx_policy_select(&res->start, r->o->forbidden_only, r->o->limit,
					   r->o->max_bytes, &res->planned_bytes);
	r->prog.chunks_total = res->nr_planned;
	r->prog.bytes_total = res->planned_bytes;
	if (res->start.nr_chunks && !res->nr_planned &&
	    bx_policy_takes(&res->start.chunks[0], r->o->forbidden_only)) {
		char used[32];

		bx_pretty_size(res->start.chunks[0].used, 0, used, sizeof(used));
		bx_warn("the first chunk to move holds %s, more than --max-bytes", used);
	}
	ret = check_room(r, in, &res->start, res->start.chunks, res->nr_planned);
	if (ret == -ENOSPC)
		res->stop = BX_RELOCATE_NO_ROOM;
	return ret;
}

static int run_all(struct relocation *r)
{
	struct bx_snapshot in;
	bool go_on = true;
	int ret;

	memset(&in, 0, sizeof(in));
	ret = start(r, &in);
	bx_snapshot_release(&in);
	if (ret)
		return ret;
	if (r->o->dry_run) {
		r->res->stop = BX_RELOCATE_DRY_RUN;
		return 0;
	}
	while (go_on) {
		if (cancel_requested(r)) {
			r->res->stop = BX_RELOCATE_CANCELLED;
			snprintf(r->res->reason, sizeof(r->res->reason), "cancelled between chunks "
				 "(run again to go on)");
			return bx_error(-EINTR, "%s: %s", r->path, r->res->reason);
		}
		ret = one_step(r, &go_on);
		if (ret || !go_on)
			break;
		if (r->o->pause > 0 && !pause_between(r)) {
			r->res->stop = BX_RELOCATE_CANCELLED;
			snprintf(r->res->reason, sizeof(r->res->reason), "cancelled between chunks "
				 "(run again to go on)");
			return bx_error(-EINTR, "%s: %s", r->path, r->res->reason);
		}
	}
	return ret;
}

int bx_relocate_run(const char *path, const struct bx_relocate_opts *opts,
		    struct bx_relocate_result **resp)
{
	struct relocation r = { .path = path, .o = opts, .lock_fd = -1 };
	int ret, ret2;

	*resp = NULL;
	r.mfs.fd = -1;
	r.state_dir = opts->state_dir ? opts->state_dir : DEFAULT_STATE_DIR;
	r.start = bx_monotonic_seconds();
	r.res = calloc(1, sizeof(*r.res));
	if (!r.res)
		return bx_error(-ENOMEM, "out of memory");
	r.res->stop = BX_RELOCATE_FAILED;
	ret = open_filesystem(&r);
	if (!ret)
		ret = check_policy(&r, BX_CHECK_EXCLUSIVE);
	if (!ret)
		ret = take_lock(&r);
	if (!ret)
		ret = run_all(&r);
	if (r.res->stop == BX_RELOCATE_FAILED && !r.res->reason[0] && ret)
		snprintf(r.res->reason, sizeof(r.res->reason), "%s", bx_error_message(ret));
	r.res->seconds = bx_monotonic_seconds() - r.start;
	if (r.kernel_called) {
		/*
		 * What is left (a call that failed may have changed chunks too),
		 * and the copy rate; neither may hide why the run stopped.
		 */
		char reason[sizeof(r.res->reason)];
		enum bx_error_kind kind = bx_error_last_kind();

		snprintf(reason, sizeof(reason), "%s", ret ? bx_error_message(ret) : "");
		ret2 = r.res->nr_relocated ? bx_copy_rate_add(r.state_dir, r.mfs.fsid,
							      r.res->bytes_moved,
							      r.res->kernel_seconds) : 0;
		if (ret2)
			bx_warn("the copy rate was not recorded: %s", bx_error_message(ret2));
		ret2 = remaining(&r);
		if (ret2)
			bx_warn("what is left could not be read: %s", bx_error_message(ret2));
		if (ret)
			bx_error_as(ret, kind, "%s", reason);
		else
			bx_error_clear();
	}
	report_progress(&r, true);
	if (r.lock_fd >= 0)
		close(r.lock_fd);
	free(r.created);
	bx_mounted_close(&r.mfs);
	if (r.res->stop == BX_RELOCATE_FAILED && !r.res->start.nr_chunks && !r.res->nr_relocated &&
	    ret && !r.res->start.chunks_checked) {
		/* Refused before anything was read: nothing to give back. */
		bx_relocate_result_free(r.res);
		return ret;
	}
	*resp = r.res;
	return ret;
}
