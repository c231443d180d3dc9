/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner's changes (plan.h), each applied to the kernel state as the
 * kernel makes it: what it checks first (an unknown devid, a size, a
 * profile the devices cannot hold, the guard rails), which chunks it
 * relocates and how (model/kernel/relocation.h), and what it leaves.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "format/profiles.h"
#include "fsops/alloc-hint.h"
#include "model/misplaced.h"
#include "model/policy.h"
#include "plan/plan-private.h"

/* ---- devices ---- */

static int devid_error(const struct planner *p, const char *op, uint64_t devid)
{
	long d = bx_ks_dev_index(&p->s, devid);

	if (d >= 0 && p->s.devs[d].removed)
		return bx_error(-EINVAL, "--%s: devid %llu is removed by an earlier change", op,
				(unsigned long long)devid);
	return bx_error(-EINVAL, "--%s: devid %llu is not in the filesystem (devids: see "
			"'btrfsx filesystem usage -T')", op, (unsigned long long)devid);
}

/* The index of a device a change may act on, or -EINVAL with the message. */
static long target_device(const struct planner *p, const struct bx_plan_change *c)
{
	long d = bx_ks_dev_index(&p->s, c->devid);

	if (d < 0 || p->s.devs[d].removed)
		return devid_error(p, bx_plan_op_name(c->op), c->devid);
	return d;
}

static int check_size(const char *op, uint64_t size)
{
	char bound[32];

	if (size > BX_PLAN_MAX_DEVICE) {
		bx_pretty_size(BX_PLAN_MAX_DEVICE, 0, bound, sizeof(bound));
		return bx_error(-EINVAL, "--%s: the planner takes devices of at most %s", op,
				bound);
	}
	if (size >= BX_PLAN_MIN_DEVICE)
		return 0;
	bx_pretty_size(BX_PLAN_MIN_DEVICE, 0, bound, sizeof(bound));
	return bx_error(-EINVAL, "--%s: a device must be at least %s (the kernel's smallest "
			"resize)", op, bound);
}

static int apply_add(struct planner *p, const struct bx_plan_change *c)
{
	long d;
	int ret = check_size("add", c->size);

	if (ret)
		return ret;
	d = bx_ks_add_device(&p->s, c->size, c->has_hint ? c->hint : BX_HINT_DATA_PREFERRED);
	if (d < 0)
		return (int)d;
	p->step->devid = p->s.devs[d].info.devid;
	return 0;
}

/* Devices left once @d goes: enough for every profile in use (btrfs_check_raid_min_devices)? */
static int check_remove(const struct planner *p, size_t d)
{
	size_t left = 0;

	for (size_t i = 0; i < p->s.nr_devs; i++)
		left += !p->s.devs[i].removed && i != d;
	for (size_t i = 0; i < p->s.nr_spaces; i++) {
		const struct bx_snap_space *sp = &p->s.spaces[i];
		struct bx_raid_attr attr;

		if ((sp->flags & BX_SPACE_INFO_GLOBAL_RSV) || bx_raid_attr(sp->flags, &attr) ||
		    (size_t)attr.devs_min <= left)
			continue;
		return bx_error(-EINVAL, "--remove: removing devid %llu leaves %zu device%s, but "
				"%s %s needs %d (convert it first: --convert before --remove)",
				(unsigned long long)p->s.devs[d].info.devid, left,
				left == 1 ? "" : "s", bx_place_type_name(sp->flags),
				bx_profile_name(sp->flags), attr.devs_min);
	}
	return 0;
}

static void set_writable(struct bx_kstate *s, size_t d, bool writable)
{
	s->adevs[d].writable = writable;
	s->devs[d].info.writable = writable;
}

static int apply_remove(struct planner *p, const struct bx_plan_change *c)
{
	struct bx_reloc_how rel = { .retry = true };
	struct bx_reloc_list ml = { 0 };
	long d = target_device(p, c);
	bool was_writable;
	char what[96];
	int ret;

	if (d < 0)
		return (int)d;
	ret = check_remove(p, (size_t)d);
	if (ret)
		return ret;
	p->step->devid = c->devid;
	was_writable = p->s.adevs[d].writable;
	set_writable(&p->s, (size_t)d, false);
	p->s.devs[d].removed = true;
	ret = bx_ks_chunks_on_device(&p->s, c->devid, 0, &ml);
	if (!ret)
		ret = planner_relocate(p, &rel, &ml);
	if (!ret && ml.nr) {
		snprintf(what, sizeof(what), "the other devices cannot take the chunks of devid %llu",
			 (unsigned long long)c->devid);
		ret = planner_short(p, &ml, what);
		/* The kernel gives up: the device stays, what moved stays moved. */
		p->s.devs[d].removed = false;
		set_writable(&p->s, (size_t)d, was_writable);
	}
	free(ml.idx);
	return ret;
}

/*
 * "DEVID=max": the size of the device (or image file) itself, rounded down
 * to the sector as the kernel's resize does. A device the plan adds has no
 * size but the one --add gave it.
 */
static int resize_max(const struct planner *p, size_t d, uint64_t *size)
{
	const struct bx_ks_dev *dev = &p->s.devs[d];
	uint32_t sector = p->s.in->sectorsize ? p->s.in->sectorsize : 4096;

	if (dev->added)
		return bx_error(-EINVAL, "--resize: devid %llu=max: the plan adds devid %llu, whose "
				"size is the one --add gives; resize it to a size",
				(unsigned long long)dev->info.devid,
				(unsigned long long)dev->info.devid);
	if (!dev->info.device_size)
		return bx_error(-EINVAL, "--resize: devid %llu=max: the size of its device is not "
				"known; give a size", (unsigned long long)dev->info.devid);
	*size = dev->info.device_size - dev->info.device_size % sector;
	return 0;
}

static int apply_resize(struct planner *p, const struct bx_plan_change *c)
{
	struct bx_reloc_how rel = { .retry = true };
	struct bx_reloc_list ml = { 0 };
	long d = target_device(p, c);
	uint64_t old, size = c->size;
	int ret;

	if (d < 0)
		return (int)d;
	if (p->s.devs[d].info.missing)
		return bx_error(-EINVAL, "--resize: devid %llu is missing", (unsigned long long)c->devid);
	ret = size == BX_PLAN_SIZE_MAX ? resize_max(p, (size_t)d, &size) : 0;
	if (!ret)
		ret = check_size("resize", size);
	if (ret)
		return ret;
	p->step->devid = c->devid;
	old = p->s.devs[d].info.total_bytes;
	if (size > p->s.devs[d].info.device_size) {
		char now[32];

		bx_pretty_size(p->s.devs[d].info.device_size, 0, now, sizeof(now));
		planner_warn(p, "devid %llu is %s: grow the device (or partition) first for '%s'",
			    (unsigned long long)c->devid, now, "btrfs filesystem resize");
	}
	ret = bx_ks_commit(&p->s);
	if (!ret)
		ret = bx_ks_resize_device(&p->s, (size_t)d, size);
	if (ret || size >= old)
		return ret;
	ret = bx_ks_chunks_on_device(&p->s, c->devid, size, &ml);
	if (!ret)
		ret = planner_relocate(p, &rel, &ml);
	if (!ret && ml.nr) {
		char what[96];

		snprintf(what, sizeof(what), "devid %llu cannot shrink: its chunks beyond the new "
			 "end find no room", (unsigned long long)c->devid);
		ret = planner_short(p, &ml, what);
		if (!ret)
			ret = bx_ks_resize_device(&p->s, (size_t)d, old);
	}
	free(ml.idx);
	return ret;
}

/*
 * The one guard-rail rule, for a hint and a convert alike: after the
 * change, every block group type the filesystem uses (@types: type and
 * profile bits) must find its profile's minimum device count among the
 * devices whose hint allows it, else the kernel could not allocate such a
 * chunk (a kernel that honours hints fails a convert with ENOSPC; btrfsx
 * device property set refuses such a hint). @set_devid: the device whose
 * hint the change sets to @hint (0: none). Returns false, with the step
 * impossible and the reason, when the rule refuses the change.
 *
 * A convert on a kernel that ignores the hints (the plan places its chunks
 * without them, as that kernel does) is no refusal: the kernel makes it,
 * so the verdict is possible, and the hints it breaks are a warning.
 */
static bool guard_rails_pass(struct planner *p, uint64_t set_devid, uint64_t hint,
			     const uint64_t *types, size_t nr_types, const char *what)
{
	uint64_t *hints = calloc(p->s.nr_devs + 1, sizeof(*hints));
	struct bx_hint_shortfall why;
	char text[256];
	size_t nr = 0;
	bool fit;

	if (!hints)
		return true;	/* the caller's next allocation reports the shortage */
	for (size_t i = 0; i < p->s.nr_devs; i++)
		if (!p->s.devs[i].removed)
			hints[nr++] = p->s.devs[i].info.devid == set_devid ? hint :
				      p->s.devs[i].info.hint;
	fit = bx_hint_profiles_fit(types, nr_types, hints, nr, &why);
	free(hints);
	if (fit)
		return true;
	bx_hint_shortfall_text(&why, text, sizeof(text));
	if (!set_devid && !p->s.in->hints_effective) {
		planner_warn(p, "%s breaks the allocation hints: %s; this kernel ignores the hints "
			     "and makes it, but a kernel that honours them would fail it with ENOSPC "
			     "(set the hints so that the profile fits before mounting the filesystem "
			     "on such a kernel)", what, text);
		return true;
	}
	planner_impossible(p, "the guard rails refuse %s: %s "
		 "(btrfsx device property set refuses a hint that leaves a profile so, and a kernel "
		 "that honours hints fails a convert to it with ENOSPC)", what, text);
	return false;
}

/* The block group types in use, with those of @kinds replaced by @targets (0: none). */
static uint64_t *types_after(const struct bx_kstate *s, uint64_t kinds, const uint64_t *targets,
			     size_t nr_targets, size_t *nr)
{
	uint64_t *types = calloc(s->nr_spaces + nr_targets + 1, sizeof(*types));

	*nr = 0;
	for (size_t i = 0; types && i < s->nr_spaces; i++)
		if (!(s->spaces[i].flags & kinds))
			types[(*nr)++] = s->spaces[i].flags;
	for (size_t i = 0; types && i < nr_targets; i++)
		types[(*nr)++] = targets[i];
	return types;
}

/* The guard rails of `btrfsx device property set` on the state with @d set to @hint. */
static int apply_hint(struct planner *p, const struct bx_plan_change *c)
{
	long d = target_device(p, c);
	uint64_t *types;
	size_t nr;
	bool fit;

	if (d < 0)
		return (int)d;
	p->step->devid = c->devid;
	types = types_after(&p->s, 0, NULL, 0, &nr);
	if (!types)
		return OOM();
	fit = guard_rails_pass(p, c->devid, c->hint, types, nr, "the hint");
	free(types);
	if (fit)
		bx_ks_set_hint(&p->s, (size_t)d, c->hint);
	return 0;
}

static int check_convert(const struct planner *p, const struct bx_plan_change *c)
{
	struct bx_raid_attr attr;
	size_t writable = bx_ks_nr_writable(&p->s);
	bool data = c->type & BTRFS_BLOCK_GROUP_DATA;

	if (bx_ks_is_mixed(&p->s))
		return bx_error(-EINVAL, "--convert: the filesystem has mixed block groups "
				"(data and metadata together); the planner does not "
				"convert those");
	if (p->converted[!data])
		return bx_error(-EINVAL, "--convert: %s is converted twice in one plan (conflicting "
				"changes)", data ? "data" : "metadata");
	if (bx_raid_attr(c->type | c->profile, &attr))
		return bx_error(-EINVAL, "--convert: not a profile");
	if ((size_t)attr.devs_min > writable)
		return bx_error(-EINVAL, "--convert: %s needs at least %d devices; the filesystem "
				"has %zu writable at that point", bx_profile_name(c->profile),
				attr.devs_min, writable);
	return 0;
}

/* The guard rails on the types a convert leaves (@target by placement kind). */
static int check_convert_guard_rails(struct planner *p, bool data, const uint64_t *target)
{
	uint64_t kinds = data ? BTRFS_BLOCK_GROUP_DATA :
			 BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM;
	uint64_t targets[2] = { target[data ? BX_PLACE_KIND_DATA : BX_PLACE_KIND_METADATA],
				target[BX_PLACE_KIND_SYSTEM] };
	size_t nr;
	uint64_t *types = types_after(&p->s, kinds, targets, data ? 1 : 2, &nr);

	if (!types)
		return OOM();
	guard_rails_pass(p, 0, 0, types, nr, "the convert");
	free(types);
	return 0;
}

static void warn_redundancy(struct planner *p, const struct bx_plan_change *c)
{
	uint64_t old = bx_ks_alloc_type(&p->s, BTRFS_BLOCK_GROUP_METADATA);
	struct bx_raid_attr a, b;

	if (!(c->type & BTRFS_BLOCK_GROUP_METADATA) || bx_raid_attr(old, &a) ||
	    bx_raid_attr(c->type | c->profile, &b))
		return;
	if (b.ncopies + b.nparity < a.ncopies + a.nparity)
		planner_warn(p, "converting metadata from %s to %s reduces its redundancy: btrfs "
			    "balance refuses without --force", bx_profile_name(old),
			    bx_profile_name(c->profile));
}

static int apply_convert(struct planner *p, const struct bx_plan_change *c)
{
	struct bx_reloc_how rel = { .reserve_once = true };
	struct bx_reloc_list ml = { 0 };
	bool data = c->type & BTRFS_BLOCK_GROUP_DATA;
	int ret = check_convert(p, c);

	if (ret)
		return ret;
	p->converted[!data] = true;
	warn_redundancy(p, c);
	if (data) {
		rel.target[BX_PLACE_KIND_DATA] = BTRFS_BLOCK_GROUP_DATA | c->profile;
	} else {
		rel.target[BX_PLACE_KIND_METADATA] = BTRFS_BLOCK_GROUP_METADATA | c->profile;
		rel.target[BX_PLACE_KIND_SYSTEM] = BTRFS_BLOCK_GROUP_SYSTEM | c->profile;
	}
	ret = check_convert_guard_rails(p, data, rel.target);
	if (ret || p->step->status == BX_PLAN_STEP_IMPOSSIBLE)
		return ret;
	ret = bx_ks_chunks_of_type(&p->s, data ? BTRFS_BLOCK_GROUP_DATA :
			     BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM, &ml);
	if (!ret)
		ret = planner_relocate(p, &rel, &ml);
	if (!ret && ml.nr) {
		char what[96];

		snprintf(what, sizeof(what), "the devices cannot hold %s in %s",
			 data ? "data" : "metadata", bx_profile_name(c->profile));
		ret = planner_short(p, &ml, what);
	}
	free(ml.idx);
	return ret;
}

/*
 * The replace's copy of the device (bx_ks_replace_copy()): 0, 1 refused
 * (the step says why), or a negative errno.
 */
static int replace_copy(struct planner *p, uint64_t devid)
{
	struct bx_reloc_events ev = { 0 };
	size_t refused;
	int ret = bx_ks_replace_copy(&p->s, devid, &ev, &refused);

	planner_risks(p, &ev);
	if (ret > 0)
		planner_replace_refused(p, refused);
	return ret;
}

static int apply_replace(struct planner *p, const struct bx_plan_change *c)
{
	long d = target_device(p, c);
	struct bx_ks_dev *dev;
	char old[32], want[32], hint[32];
	int ret;

	if (d < 0)
		return (int)d;
	dev = &p->s.devs[d];
	bx_pretty_size(dev->info.total_bytes, 0, old, sizeof(old));
	bx_pretty_size(c->size, 0, want, sizeof(want));
	ret = check_size("replace", c->size);
	if (ret)
		return ret;
	if (c->size < dev->info.total_bytes)
		return bx_error(-EINVAL, "--replace: the new device (%s) is smaller than devid %llu "
				"(%s); the kernel's replace needs at least its size", want,
				(unsigned long long)c->devid, old);
	p->step->devid = c->devid;
	p->step->copied_bytes = bx_ks_replace_copies(&p->s, c->devid);
	bx_hint_describe(dev->info.hint, hint, sizeof(hint));
	if (dev->info.hint != BX_HINT_DATA_PREFERRED && !c->has_hint)
		planner_warn(p, "devid %llu: a replace does not copy the allocation hint; the new device "
			    "is data_preferred, not %s, until it is set again (the plan models that; "
			    "--replace %llu=SIZE:%s sets it)", (unsigned long long)c->devid, hint,
			    (unsigned long long)c->devid, hint);
	else if (c->has_hint)
		planner_warn(p, "devid %llu: a replace does not copy the allocation hint; the plan "
			    "sets it right after the replace (btrfsx device property set <new "
			    "device> allocation_hint ...)", (unsigned long long)c->devid);
	if (c->size > dev->info.total_bytes)
		planner_warn(p, "devid %llu: the filesystem uses %s of the new %s device until 'btrfs "
			    "filesystem resize %llu:max'", (unsigned long long)c->devid, old, want,
			    (unsigned long long)c->devid);
	ret = replace_copy(p, c->devid);
	if (ret)
		return ret > 0 ? 0 : ret;	/* > 0: refused, the step says why */
	dev = &p->s.devs[d];
	dev->replaced = true;
	dev->info.device_size = c->size;
	dev->info.path[0] = '\0';
	dev->info.missing = false;
	set_writable(&p->s, (size_t)d, true);
	bx_ks_set_hint(&p->s, (size_t)d, c->has_hint ? c->hint : BX_HINT_DATA_PREFERRED);
	return 0;
}

/* ---- balance: usage filters, and a paused balance resumed ---- */

/*
 * What btrfs balance refuses of a usage filter (the library's callers can
 * pass any bytes; the command line's parser refuses the same).
 */
static int check_balance(const struct planner *p, const struct bx_plan_change *c)
{
	const uint64_t kinds = BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;

	if (!(c->type & kinds) || (c->type & ~kinds))
		return bx_error(-EINVAL, "--balance: name data (dusage=), metadata (musage=) or "
				"both");
	if (((c->type & BTRFS_BLOCK_GROUP_DATA) &&
	     (c->data_usage_max > 100 || c->data_usage_min > c->data_usage_max)) ||
	    ((c->type & BTRFS_BLOCK_GROUP_METADATA) &&
	     (c->metadata_usage_max > 100 || c->metadata_usage_min > c->metadata_usage_max)))
		return bx_error(-EINVAL, "--balance: a usage range is 0 .. 100 percent, its "
				"minimum at most its maximum");
	/* btrfs_balance(): with mixed block groups both kinds are one and must match. */
	if (bx_ks_is_mixed(&p->s) &&
	    (c->type != kinds || c->data_usage_min != c->metadata_usage_min ||
	     c->data_usage_max != c->metadata_usage_max))
		return bx_error(-EINVAL, "--balance: the filesystem has mixed block groups: data "
				"and metadata need the same filter (btrfs balance refuses others)");
	return 0;
}

/*
 * The chunks the balance selected and could not move stay where they are;
 * the kernel moves the others and then fails the balance with ENOSPC.
 */
static int balance_short(struct planner *p, const struct bx_reloc_list *ml)
{
	return planner_short(p, ml, "chunks the balance selects find no room; btrfs balance moves "
			  "the others and then fails");
}

static int apply_balance(struct planner *p, const struct bx_plan_change *c)
{
	struct bx_usage_filter usage = { c->data_usage_min, c->data_usage_max,
					 c->metadata_usage_min, c->metadata_usage_max };
	struct bx_reloc_how rel = { .reserve_once = true, .usage = &usage };
	struct bx_reloc_list ml = { 0 };
	int ret = check_balance(p, c);

	if (!ret)
		ret = bx_ks_balance_chunks(&p->s, c->type, &ml);
	if (!ret)
		ret = planner_relocate(p, &rel, &ml);
	if (!ret && ml.nr)
		ret = balance_short(p, &ml);
	free(ml.idx);
	return ret;
}

/* Whether a chunk of @type that no earlier change removed is there. */
static bool have_chunk_of(const struct bx_kstate *s, uint64_t type)
{
	for (size_t c = 0; c < s->nr_chunks; c++)
		if (!s->chunks[c].gone && s->chunks[c].type == type)
			return true;
	return false;
}

/*
 * btrfs balance resume (or the mount that resumes an interrupted one): the
 * kernel turns on the soft filter of every kind the balance converts
 * (update_balance_args), so the chunks already converted stay, and walks
 * the chunks again from the last down. The balance is over afterwards,
 * also when a chunk found no room (the kernel then closes it with ENOSPC).
 */
static int apply_resume(struct planner *p)
{
	static const uint64_t kind_bits[] = { BTRFS_BLOCK_GROUP_DATA, BTRFS_BLOCK_GROUP_METADATA,
					      BTRFS_BLOCK_GROUP_SYSTEM };
	const struct bx_snapshot *in = p->s.in;
	struct bx_reloc_how rel = { .reserve_once = true,
				    .soft = bx_kernel_has(&in->kernel, BX_KT_RESUME_SOFT_FILTER) };
	struct bx_reloc_list ml = { 0 };
	uint64_t types = 0;
	int ret;

	if (p->s.balance_ended || in->balance == BX_SNAP_BALANCE_NONE)
		return bx_error(-EINVAL, "--resume: there is no paused or interrupted balance to "
				"resume");
	if (in->balance == BX_SNAP_BALANCE_RUNNING)
		return bx_error(-EINVAL, "--resume: the balance is running and goes on by "
				"itself ('btrfs balance resume' refuses); pause it first to plan "
				"the rest");
	for (int k = 0; k < BX_PLACE_NR_KINDS; k++) {
		rel.target[k] = in->balance_target[k];
		if (rel.target[k])
			types |= kind_bits[k];
	}
	if (!types)
		return bx_error(-EINVAL, "--resume: the balance converts nothing; the planner "
				"models the rest of a conversion only");
	rel.pair_made = !rel.target[BX_PLACE_KIND_SYSTEM] ||
			have_chunk_of(&p->s, rel.target[BX_PLACE_KIND_SYSTEM]);
	ret = bx_ks_chunks_of_type(&p->s, types, &ml);
	if (!ret)
		ret = planner_relocate(p, &rel, &ml);
	if (!ret && ml.nr)
		ret = balance_short(p, &ml);
	p->s.balance_ended = true;
	free(ml.idx);
	return ret;
}

/* ---- refusals ---- */

/* The policy's op of a change. */
static enum bx_op op_of(enum bx_plan_op op)
{
	switch (op) {
	case BX_PLAN_ADD:
		return BX_OP_DEVICE_ADD;
	case BX_PLAN_REMOVE:
		return BX_OP_DEVICE_REMOVE;
	case BX_PLAN_REPLACE:
		return BX_OP_DEVICE_REPLACE;
	case BX_PLAN_RESIZE:
		return BX_OP_RESIZE;
	case BX_PLAN_HINT:
		return BX_OP_HINT;
	case BX_PLAN_RESUME:
		return BX_OP_BALANCE_RESUME;
	default:
		return BX_OP_BALANCE;
	}
}

/*
 * Whether the policy refuses @op by @checks on the filesystem as the plan
 * has it now (a balance the plan resumed to its end is over; @hints: new
 * chunks follow the hints); the step says why.
 */
static bool refused(struct planner *p, enum bx_op op, unsigned int checks, bool hints)
{
	struct bx_fs_condition cond;

	bx_fs_condition_of(p->s.in, &cond);
	if (p->s.balance_ended)
		cond.balance = BX_SNAP_BALANCE_NONE;
	cond.kernel_hints = hints;
	if (bx_policy_refusal(&cond, op, checks, p->step->reason, sizeof(p->step->reason)) ==
	    BX_REFUSE_NONE)
		return false;
	p->step->status = BX_PLAN_STEP_IMPOSSIBLE;
	return true;
}

/* ---- relocate: the misplaced chunks, as `btrfsx balance misplaced` moves them ---- */

/*
 * The index of the chunk at @logical in @alive (indexes of the chunks not
 * gone, by address), or SIZE_MAX.
 */
static size_t find_chunk(const struct bx_kstate *s, const size_t *alive, size_t nr,
			 uint64_t logical)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->chunks[alive[mid]].logical < logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && s->chunks[alive[lo]].logical == logical ? alive[lo] : SIZE_MAX;
}

/* The misplaced chunks of the state now, in the order the relocation takes them. */
static int misplaced_now(struct planner *p, struct bx_misplaced_report *rep, bool *effective)
{
	struct bx_snapshot in;
	int ret = bx_ks_materialize(&p->s, &in);

	if (ret)
		return ret;
	*effective = in.hints_effective;
	ret = bx_misplaced_classify(&in, rep);
	bx_snapshot_release(&in);
	return ret;
}

/*
 * The policy's room check for the chunks a relocation takes (all of them):
 * what `btrfsx balance misplaced` checks before it starts.
 */
static int room_check(struct planner *p, const struct bx_misplaced_report *rep,
		      struct bx_reloc_list *ml)
{
	struct bx_place_model pm;
	struct bx_place_room room;
	uint64_t bytes;
	size_t n = bx_policy_select(rep, false, 0, 0, &bytes);
	int ret;

	bx_ks_place_model(&p->s, &pm);
	ret = bx_policy_room(&pm, rep, rep->chunks, n, &room);
	if (ret)
		return ret == -ENOMEM ? OOM() : bx_error(-EOPNOTSUPP, "the placement model failed");
	ml->nr_shorts = 0;
	for (int k = 0; k < BX_PLACE_NR_KINDS; k++) {
		struct bx_reloc_short *sh;

		if (!room.short_moves[k])
			continue;
		sh = bx_reloc_short_of(ml, pm.new_type[k]);
		sh->missing = room.missing[k];
		sh->chunks = room.short_moves[k];
	}
	return 0;
}

/*
 * The chunks of @rep the relocation takes, as indexes into the state,
 * leaving out those this step made (chunks the relocation itself created
 * are not moved again, as in relocate/). Returns 0 or -ENOMEM.
 */
static int misplaced_list(struct planner *p, const struct bx_misplaced_report *rep,
			  size_t first_new, struct bx_reloc_list *ml)
{
	size_t *alive = calloc(p->s.nr_chunks + 1, sizeof(*alive)), nr_alive = 0;

	free(ml->idx);
	*ml = (struct bx_reloc_list){ .idx = calloc(rep->nr_chunks + 1, sizeof(*ml->idx)) };
	if (!alive || !ml->idx) {
		free(alive);
		return OOM();
	}
	/* Not gone, they are in address order. */
	for (size_t c = 0; c < p->s.nr_chunks; c++)
		if (!p->s.chunks[c].gone)
			alive[nr_alive++] = c;
	for (size_t i = 0; i < rep->nr_chunks; i++) {
		size_t idx = find_chunk(&p->s, alive, nr_alive, rep->chunks[i].logical);

		if (idx != SIZE_MAX && idx < first_new)
			ml->idx[ml->nr++] = idx;
	}
	free(alive);
	return 0;
}

/*
 * `btrfsx balance misplaced` reads the filesystem again after every chunk:
 * a chunk can become misplaced once others moved (a preferred device got
 * room). Passes over the misplaced chunks until none is left or a pass
 * moves nothing; the room check is the run's, before the first.
 */
#define RELOCATE_PASSES 8

static int apply_relocate(struct planner *p)
{
	struct bx_reloc_how rel = { .improve = true };
	struct bx_reloc_list ml = { 0 };
	size_t first_new = p->s.nr_chunks;
	int ret = 0;

	for (int pass = 0; pass < RELOCATE_PASSES && !ret; pass++) {
		struct bx_misplaced_report rep;
		uint64_t moved = p->step->moved_chunks;
		bool effective;

		ret = misplaced_now(p, &rep, &effective);
		if (ret)
			break;
		if (!pass && rep.nr_chunks && refused(p, BX_OP_BALANCE, BX_CHECK_HINTS, effective)) {
			/* the step says why */
		} else if (!pass) {
			ret = room_check(p, &rep, &ml);
			if (!ret && ml.nr_shorts)
				ret = planner_short(p, &ml, "the devices the hints prefer have no room "
						 "for every misplaced chunk; btrfsx balance misplaced "
						 "refuses");
		}
		if (!ret && p->step->status != BX_PLAN_STEP_IMPOSSIBLE)
			ret = misplaced_list(p, &rep, first_new, &ml);
		bx_misplaced_report_release(&rep);
		if (ret || p->step->status == BX_PLAN_STEP_IMPOSSIBLE || !ml.nr)
			break;
		ret = planner_relocate(p, &rel, &ml);
		if (!ret && ml.nr) {
			ret = planner_short(p, &ml, "a misplaced chunk finds no better place");
			break;
		}
		if (p->step->moved_chunks == moved)
			break;
	}
	free(ml.idx);
	return ret;
}

int planner_apply(struct planner *p, const struct bx_plan_change *c)
{
	/* The kernel's exclusive operation: a balance the filesystem is in the middle of. */
	if (refused(p, op_of(c->op), BX_CHECK_EXCLUSIVE, true))
		return 0;
	switch (c->op) {
	case BX_PLAN_ADD:
		return apply_add(p, c);
	case BX_PLAN_REMOVE:
		return apply_remove(p, c);
	case BX_PLAN_RESIZE:
		return apply_resize(p, c);
	case BX_PLAN_HINT:
		return apply_hint(p, c);
	case BX_PLAN_CONVERT:
		return apply_convert(p, c);
	case BX_PLAN_REPLACE:
		return apply_replace(p, c);
	case BX_PLAN_RELOCATE:
		return apply_relocate(p);
	case BX_PLAN_BALANCE:
		return apply_balance(p, c);
	case BX_PLAN_RESUME:
		return apply_resume(p);
	}
	return bx_error(-EINVAL, "unknown change");
}

