/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Misplaced chunks: the usage reader's chunk list classified against the
 * hints (model/placement.c), with totals and a time estimate. See
 * misplaced.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/copy-rate.h"
#include "fsops/misplaced.h"
#include "format/ctree.h"

/*
 * A mounted filesystem can change between the searches that read it: a
 * block group the cleaner deletes after its chunk was listed has no block
 * group item any more (seen once in 60 aged plans on 6.18). What is read
 * then does not hold together (-EUCLEAN): read it again, a few times.
 */
#define MOUNTED_READ_TRIES 3

static int read_whole(char *const *paths, int nr_paths, const char *sysfs_root,
		      struct bx_usage_input *in, bool dextents)
{
	for (int tries = 1;; tries++) {
		int ret = bx_usage_read(paths, nr_paths, sysfs_root, in);
		bool again;

		if (ret)
			return ret;
		ret = bx_usage_read_chunk_used(in);
		if (!ret && dextents)
			ret = bx_usage_read_dextents(in);
		if (!ret)
			return 0;
		again = ret == -EUCLEAN && in->mounted && tries < MOUNTED_READ_TRIES;
		bx_usage_input_release(in);
		if (!again)
			return ret;
		/* Not an error: the kernel changed it meanwhile; the next read says. */
		bx_error_clear();
	}
}

int bx_misplaced_read(char *const *paths, int nr_paths, const char *sysfs_root,
		      struct bx_usage_input *in)
{
	return read_whole(paths, nr_paths, sysfs_root, in, false);
}

int bx_relocation_read(char *const *paths, int nr_paths, const char *sysfs_root,
		       struct bx_usage_input *in)
{
	return read_whole(paths, nr_paths, sysfs_root, in, true);
}

static bool input_is_mixed(const struct bx_usage_input *in)
{
	for (size_t i = 0; i < in->nr_spaces; i++) {
		if (bx_type_is_mixed(in->spaces[i].flags))
			return true;
	}
	return false;
}

int bx_misplaced_model(const struct bx_usage_input *in, struct bx_usage_model *um,
		       struct bx_place_model *pm)
{
	uint64_t data_kind = BTRFS_BLOCK_GROUP_DATA;
	size_t nr_writable = 0;
	int ret;

	memset(pm, 0, sizeof(*pm));
	ret = bx_usage_model_init(in, bx_usage_kernel_flags(in), um);
	if (ret)
		return ret;
	for (size_t i = 0; i < um->nr; i++)
		if (um->devs[i].writable)
			nr_writable++;
	if (input_is_mixed(in))
		data_kind |= BTRFS_BLOCK_GROUP_METADATA;
	pm->devs = um->devs;
	pm->nr_devs = um->nr;
	pm->params = um->params;
	pm->new_type[BX_PLACE_KIND_DATA] =
		bx_usage_new_chunk_type(in, in->spaces, in->nr_spaces, data_kind, nr_writable);
	pm->new_type[BX_PLACE_KIND_METADATA] =
		bx_usage_new_chunk_type(in, in->spaces, in->nr_spaces, BTRFS_BLOCK_GROUP_METADATA,
					nr_writable);
	pm->new_type[BX_PLACE_KIND_SYSTEM] =
		bx_usage_new_chunk_type(in, in->spaces, in->nr_spaces, BTRFS_BLOCK_GROUP_SYSTEM,
					nr_writable);
	return 0;
}

void bx_misplaced_place_chunk(const struct bx_usage_input *in, const struct bx_usage_chunk *c,
			      struct bx_place_stripe *stripes, struct bx_place_chunk *out)
{
	for (uint32_t s = 0; s < c->num_stripes; s++)
		stripes[s] = (struct bx_place_stripe){ in->stripes[c->first_stripe + s].devid,
						       in->stripes[c->first_stripe + s].physical };
	*out = (struct bx_place_chunk){
		.logical = c->logical,
		.length = c->length,
		.used = c->used,
		.type = c->type,
		.num_stripes = c->num_stripes,
		.stripes = stripes,
	};
}

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

static void estimate(struct bx_misplaced_report *rep, const char *state_dir)
{
	uint64_t bytes = 0;
	double seconds = 0;
	int ret;

	rep->forbidden.estimate_seconds = rep->off_preference.estimate_seconds = -1;
	if (!state_dir)
		return;
	ret = bx_copy_rate_load(state_dir, rep->fsid, &bytes, &seconds);
	if (ret) {
		/* An unreadable record costs the estimate, not the report. */
		bx_warn("no time estimate: %s", bx_error_message(ret));
		bx_error_clear();
		return;
	}
	if (!bytes || seconds <= 0)
		return;
	rep->have_rate = true;
	rep->rate = (double)bytes / seconds;
	rep->forbidden.estimate_seconds = (double)rep->forbidden.used / rep->rate;
	rep->off_preference.estimate_seconds = (double)rep->off_preference.used / rep->rate;
}

static int classify_all(const struct bx_usage_input *in, const struct bx_place_model *pm,
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
		const struct bx_usage_chunk *c = &in->chunks[i];
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
		bx_misplaced_place_chunk(in, c, stripes, &pc);
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

static int compute(const struct bx_usage_input *in, const char *state_dir,
		   struct bx_misplaced_report *rep)
{
	struct bx_usage_model um;
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
	ret = bx_misplaced_model(in, &um, &pm);
	if (ret)
		return ret;
	ret = classify_all(in, &pm, rep);
	bx_usage_model_release(&um);
	if (ret) {
		bx_misplaced_report_release(rep);
		return ret;
	}
	qsort(rep->chunks, rep->nr_chunks, sizeof(*rep->chunks), relocation_order);
	estimate(rep, state_dir);
	return 0;
}

int bx_misplaced_compute(const struct bx_usage_input *in, const char *state_dir,
			 struct bx_misplaced_report *rep)
{
	int ret = compute(in, state_dir, rep);

	if (!ret && !rep->hints_effective && rep->nr_chunks)
		bx_warn("the running kernel ignores allocation hints: these chunks break the "
			"stored hints, but new chunks will not follow them either");
	return ret;
}

int bx_misplaced_compute_quiet(const struct bx_usage_input *in, struct bx_misplaced_report *rep)
{
	return compute(in, NULL, rep);
}
