/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel state (state.h): set up from a snapshot, its devices, and the
 * snapshot it describes again (bx_ks_materialize()). The block groups are
 * in block-group.c, the space infos and their pools in space-info.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "model/kernel/state-private.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

long bx_ks_dev_index(const struct bx_kstate *s, uint64_t devid)
{
	long removed = -1;

	/* A removed devid may be taken again by a device added later. */
	for (size_t i = 0; i < s->nr_devs; i++) {
		if (s->devs[i].info.devid != devid)
			continue;
		if (!s->devs[i].removed)
			return (long)i;
		removed = (long)i;
	}
	return removed;
}

/* The kernel's find_next_devid(): one above the highest devid in the filesystem. */
static uint64_t next_devid(const struct bx_kstate *s)
{
	uint64_t next = 1;

	for (size_t i = 0; i < s->nr_devs; i++)
		if (!s->devs[i].removed && s->devs[i].info.devid >= next)
			next = s->devs[i].info.devid + 1;
	return next;
}

size_t bx_ks_nr_writable(const struct bx_kstate *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_devs; i++)
		n += s->adevs[i].writable;
	return n;
}

bool bx_ks_is_mixed(const struct bx_kstate *s)
{
	for (size_t i = 0; i < s->nr_spaces; i++)
		if (!(s->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV) &&
		    bx_type_is_mixed(s->spaces[i].flags))
			return true;
	return false;
}

uint64_t bx_ks_alloc_type(const struct bx_kstate *s, uint64_t kind)
{
	if (kind != BTRFS_BLOCK_GROUP_SYSTEM && bx_ks_is_mixed(s))
		kind = BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;
	if (s->balance_ended)
		return kind | bx_snap_alloc_profile(s->spaces, s->nr_spaces, kind,
						     bx_ks_nr_writable(s));
	/* A paused or interrupted balance's convert target wins, as in the kernel. */
	return bx_snap_new_chunk_type(s->in, s->spaces, s->nr_spaces, kind, bx_ks_nr_writable(s));
}

uint64_t bx_ks_used_of_kind(const struct bx_kstate *s, uint64_t kind)
{
	uint64_t used = 0;

	for (size_t i = 0; i < s->nr_spaces; i++)
		if ((s->spaces[i].flags & kind) && !(s->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV))
			used += s->spaces[i].used_bytes;
	return used;
}

uint64_t bx_ks_unallocated(const struct bx_kstate *s, size_t idx)
{
	return s->adevs[idx].writable ? bx_alloc_device_unallocated(&s->adevs[idx]) : 0;
}

/* ---- set up and release ---- */

static int copy_devices(struct bx_kstate *s, const struct bx_snapshot *in)
{
	struct bx_snap_model um;
	int ret;

	ret = bx_snap_model_init(in, s->params.flags, &um);
	if (ret)
		return ret;
	s->adevs = um.devs;
	s->params = um.params;
	s->nr_devs = in->nr_devs;
	s->devs = calloc(in->nr_devs + 1, sizeof(*s->devs));
	if (!s->devs)
		return OOM();
	for (size_t i = 0; i < in->nr_devs; i++) {
		s->devs[i].info = in->devs[i];
		s->devs[i].info.nr_extents = 0;
		s->devs[i].info.extents = NULL;
	}
	return 0;
}

int bx_ks_grow_array(void **arr, size_t *cap, size_t want, size_t size)
{
	void *grown;
	size_t ncap;

	if (want <= *cap)
		return 0;
	ncap = *cap ? *cap : 4;
	while (ncap < want)
		ncap *= 2;
	grown = realloc(*arr, ncap * size);
	if (!grown)
		return OOM();
	*arr = grown;
	*cap = ncap;
	return 0;
}

int bx_ks_add_hole(struct bx_ks_chunk *pc, uint64_t start, uint64_t len)
{
	int ret = bx_ks_grow_array((void **)&pc->holes, &pc->cap_holes, pc->nr_holes + 1,
			     sizeof(*pc->holes));

	if (!ret && len)
		pc->holes[pc->nr_holes++] = (struct bx_ks_hole){ start, len };
	return ret;
}

/* A data chunk's extents from the input, and the holes between them. */
static int copy_extents(struct bx_kstate *s, const struct bx_snapshot *in, const struct bx_snap_chunk *c,
			struct bx_ks_chunk *pc)
{
	uint64_t at = pc->logical;
	int ret = bx_ks_grow_array((void **)&pc->exts, &pc->cap_exts, c->nr_dextents + 1,
			     sizeof(*pc->exts));

	for (size_t k = 0; !ret && k < c->nr_dextents; k++) {
		const struct bx_snap_dextent *x = &in->dextents[c->first_dextent + k];

		pc->exts[pc->nr_exts++] = *x;
		if (x->start > at)
			ret = bx_ks_add_hole(pc, at, x->start - at);
		if (x->start + x->len > at)
			at = x->start + x->len;
	}
	if (!ret && at < pc->logical + pc->length)
		ret = bx_ks_add_hole(pc, at, pc->logical + pc->length - at);
	if (s->size_classes)
		pc->size_class = bx_ks_sampled_class(pc);
	return ret;
}

static int copy_chunks(struct bx_kstate *s, const struct bx_snapshot *in)
{
	s->chunks = calloc(in->nr_chunks + 1, sizeof(*s->chunks));
	if (!s->chunks)
		return OOM();
	s->cap_chunks = in->nr_chunks + 1;
	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_snap_chunk *c = &in->chunks[i];
		struct bx_ks_chunk *pc = &s->chunks[i];

		if (c->first_stripe + c->num_stripes > in->nr_stripes)
			return bx_error(-EUCLEAN, "chunk %llu: stripes beyond the stripe list",
					(unsigned long long)c->logical);
		pc->stripes = calloc(c->num_stripes + 1, sizeof(*pc->stripes));
		if (!pc->stripes)
			return OOM();
		s->nr_chunks = i + 1;
		for (uint32_t k = 0; k < c->num_stripes; k++)
			pc->stripes[k] = (struct bx_place_stripe){
				in->stripes[c->first_stripe + k].devid,
				in->stripes[c->first_stripe + k].physical };
		pc->logical = c->logical;
		pc->length = c->length;
		pc->used = pc->used_before = c->used;
		pc->type = c->type;
		pc->num_stripes = c->num_stripes;
		pc->sub_stripes = c->sub_stripes;
		pc->stripe_size = bx_profile_stripe_size(c->type, c->length, c->num_stripes);
		if (s->exact && bx_ks_is_data(c->type)) {
			int ret = copy_extents(s, in, c, pc);

			if (ret)
				return ret;
		}
	}
	/*
	 * Empty ones are on the cleaner's list (an unmounted filesystem's from
	 * the next mount on) but the last of their profile, which it dropped.
	 */
	for (size_t i = 0; i < s->nr_chunks; i++)
		s->chunks[i].unused_listed = !s->chunks[i].used &&
					     !bx_type_is_mixed(s->chunks[i].type) &&
					     bx_ks_alike_chunks(s, s->chunks[i].type, i);
	/* No chunk left at all: mkfs's first address. */
	s->first_logical = 1024 * 1024;
	return 0;
}

int bx_ks_init(struct bx_kstate *s, const struct bx_snapshot *in)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->in = in;
	s->moving = -1;
	s->params.flags = bx_snap_alloc_flags(in) |
			  (in->hints_effective ? 0 : BX_ALLOC_IGNORE_HINTS);
	s->exact = in->dextents_known;
	s->size_classes = bx_kernel_has(&in->kernel, BX_KT_SIZE_CLASSES);
	s->spaces = calloc(in->nr_spaces + 1, sizeof(*s->spaces));
	if (!s->spaces)
		return OOM();
	memcpy(s->spaces, in->spaces, in->nr_spaces * sizeof(*s->spaces));
	s->nr_spaces = in->nr_spaces;
	ret = copy_devices(s, in);
	if (!ret)
		ret = copy_chunks(s, in);
	if (ret)
		bx_ks_release(s);
	return ret;
}

void bx_ks_release(struct bx_kstate *s)
{
	for (size_t i = 0; s->adevs && i < s->nr_devs; i++)
		bx_alloc_device_release(&s->adevs[i]);
	for (size_t i = 0; s->chunks && i < s->nr_chunks; i++) {
		free(s->chunks[i].stripes);
		free(s->chunks[i].exts);
		free(s->chunks[i].holes);
	}
	for (size_t i = 0; i < s->nr_pools; i++)
		free(s->pools[i].chunks);
	for (int k = 0; k <= BX_KS_SC_LARGE; k++)
		free(s->hix.tree[k]);
	free(s->adevs);
	free(s->devs);
	free(s->chunks);
	free(s->spaces);
	free(s->pools);
	free(s->journal);
	free(s->freed);
	memset(s, 0, sizeof(*s));
}

/* ---- devices ---- */

long bx_ks_add_device(struct bx_kstate *s, uint64_t size, uint64_t hint)
{
	struct bx_alloc_device *adevs;
	struct bx_ks_dev *devs;
	size_t idx = s->nr_devs;
	uint64_t devid = next_devid(s);
	int ret;

	adevs = realloc(s->adevs, (idx + 1) * sizeof(*adevs));
	if (!adevs)
		return OOM();
	s->adevs = adevs;
	devs = realloc(s->devs, (idx + 1) * sizeof(*devs));
	if (!devs)
		return OOM();
	s->devs = devs;
	memset(&s->adevs[idx], 0, sizeof(s->adevs[idx]));
	ret = bx_alloc_device_init(&s->adevs[idx], devid, size, hint);
	if (ret)
		return OOM();
	s->adevs[idx].writable = true;
	memset(&s->devs[idx], 0, sizeof(s->devs[idx]));
	s->devs[idx].added = true;
	s->devs[idx].info = (struct bx_snap_dev){
		.devid = devid,
		.total_bytes = size,
		.device_size = size,
		.hint = hint,
		.writable = true,
	};
	s->nr_devs++;
	return (long)idx;
}

void bx_ks_set_hint(struct bx_kstate *s, size_t idx, uint64_t hint)
{
	s->devs[idx].info.hint = hint;
	s->adevs[idx].hint = hint;
}

int bx_ks_resize_device(struct bx_kstate *s, size_t idx, uint64_t size)
{
	struct bx_alloc_device *d = &s->adevs[idx];
	struct bx_alloc_hole *ext = NULL;
	size_t nr = 0, cap = 16;
	uint64_t used = 0;
	int ret = -ENOMEM;

	ext = malloc(cap * sizeof(*ext));
	if (!ext)
		return OOM();
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct bx_ks_chunk *pc = &s->chunks[c];

		for (uint32_t k = 0; !pc->gone && k < pc->num_stripes; k++) {
			if (pc->stripes[k].devid != d->devid)
				continue;
			if (nr == cap) {
				struct bx_alloc_hole *grown = realloc(ext, 2 * cap * sizeof(*ext));

				if (!grown)
					goto out;
				ext = grown;
				cap *= 2;
			}
			ext[nr++] = (struct bx_alloc_hole){ pc->stripes[k].physical, pc->stripe_size };
			used += pc->stripe_size;
		}
	}
	d->total_bytes = size;
	ret = bx_alloc_device_set_extents(d, ext, nr);
	/* Extents beyond the new end still count until they are moved, as in the kernel. */
	d->bytes_used = used;
	s->devs[idx].info.total_bytes = size;
	s->devs[idx].info.bytes_used = used;
	if (size > s->devs[idx].info.device_size)
		s->devs[idx].info.device_size = size;
out:
	free(ext);
	return ret == -ENOMEM ? OOM() : ret;
}

/* ---- the state as an input ---- */

/* Devids up to this find their output slot in a table (real ones are small). */
#define DEVID_TABLE_MAX 65536

/*
 * The output slot of each devid up to @max_devid (-1: removed or none), so
 * that the stripes of a 1 PiB array's chunks find theirs at once.
 */
static long *slots_by_devid(const struct bx_kstate *s, const long *slot, uint64_t max_devid)
{
	long *by_devid = malloc((max_devid + 1) * sizeof(*by_devid));

	if (!by_devid)
		return NULL;
	for (uint64_t d = 0; d <= max_devid; d++)
		by_devid[d] = -1;
	/* A removed devid may be taken again by a device added later: that one wins. */
	for (size_t i = 0; i < s->nr_devs; i++)
		if (slot[i] >= 0)
			by_devid[s->devs[i].info.devid] = slot[i];
	return by_devid;
}

static uint64_t largest_devid(const struct bx_kstate *s)
{
	uint64_t max = 0;

	for (size_t i = 0; i < s->nr_devs; i++)
		if (s->devs[i].info.devid > max)
			max = s->devs[i].info.devid;
	return max;
}

/* The output slot of @devid: from the table (devids up to @max_devid) when there is one. */
static long slot_of(const struct bx_kstate *s, const long *slot, const long *by_devid,
		    uint64_t max_devid, uint64_t devid)
{
	long d;

	if (by_devid)
		return devid <= max_devid ? by_devid[devid] : -1;
	d = bx_ks_dev_index(s, devid);
	return d >= 0 ? slot[d] : -1;
}

static int materialize_devices(const struct bx_kstate *s, struct bx_snapshot *out)
{
	size_t *count = calloc(s->nr_devs + 1, sizeof(*count));
	long *slot = calloc(s->nr_devs + 1, sizeof(*slot));
	uint64_t max_devid = largest_devid(s);
	long *by_devid = NULL;
	int ret = 0;

	out->devs = calloc(s->nr_devs + 1, sizeof(*out->devs));
	if (!count || !slot || !out->devs) {
		ret = OOM();
		goto out;
	}
	for (size_t i = 0; i < s->nr_devs; i++) {
		slot[i] = -1;
		if (s->devs[i].removed)
			continue;
		slot[i] = (long)out->nr_devs;
		out->devs[out->nr_devs] = s->devs[i].info;
		out->devs[out->nr_devs].bytes_used = 0;
		out->nr_devs++;
	}
	if (max_devid <= DEVID_TABLE_MAX) {
		by_devid = slots_by_devid(s, slot, max_devid);
		if (!by_devid) {
			ret = OOM();
			goto out;
		}
	}
	for (size_t c = 0; c < s->nr_chunks; c++)
		for (uint32_t k = 0; !s->chunks[c].gone && k < s->chunks[c].num_stripes; k++) {
			long d = slot_of(s, slot, by_devid, max_devid, s->chunks[c].stripes[k].devid);

			if (d >= 0)
				count[d]++;
		}
	for (size_t i = 0; i < out->nr_devs; i++) {
		out->devs[i].extents = calloc(count[i] + 1, sizeof(*out->devs[i].extents));
		if (!out->devs[i].extents) {
			ret = OOM();
			goto out;
		}
	}
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct bx_ks_chunk *pc = &s->chunks[c];

		for (uint32_t k = 0; !pc->gone && k < pc->num_stripes; k++) {
			long d = slot_of(s, slot, by_devid, max_devid, pc->stripes[k].devid);
			struct bx_snap_dev *od;

			if (d < 0)
				continue;
			od = &out->devs[d];
			od->extents[od->nr_extents++] = (struct bx_snap_extent){
				pc->stripes[k].physical, pc->stripe_size, pc->logical };
			od->bytes_used += pc->stripe_size;
		}
	}
out:
	free(by_devid);
	free(count);
	free(slot);
	return ret;
}

static int materialize_chunks(const struct bx_kstate *s, struct bx_snapshot *out)
{
	size_t nr = 0, nr_stripes = 0;

	for (size_t c = 0; c < s->nr_chunks; c++)
		if (!s->chunks[c].gone) {
			nr++;
			nr_stripes += s->chunks[c].num_stripes;
		}
	out->chunks = calloc(nr + 1, sizeof(*out->chunks));
	out->stripes = calloc(nr_stripes + 1, sizeof(*out->stripes));
	if (!out->chunks || !out->stripes)
		return OOM();
	for (size_t c = 0; c < s->nr_chunks; c++) {
		const struct bx_ks_chunk *pc = &s->chunks[c];

		if (pc->gone)
			continue;
		out->chunks[out->nr_chunks++] = (struct bx_snap_chunk){
			.logical = pc->logical,
			.length = pc->length,
			.type = pc->type,
			.num_stripes = pc->num_stripes,
			.sub_stripes = pc->sub_stripes,
			.first_stripe = out->nr_stripes,
			.used = pc->used,
		};
		for (uint32_t k = 0; k < pc->num_stripes; k++)
			out->stripes[out->nr_stripes++] = (struct bx_snap_stripe){
				pc->stripes[k].devid, pc->stripes[k].physical };
	}
	out->chunks_used_known = true;
	return 0;
}

int bx_ks_materialize(const struct bx_kstate *s, struct bx_snapshot *out)
{
	const struct bx_snapshot *in = s->in;
	int ret;

	memset(out, 0, sizeof(*out));
	memcpy(out->fsid, in->fsid, sizeof(out->fsid));
	out->mounted = in->mounted;
	memcpy(out->path, in->path, sizeof(out->path));
	out->nodesize = in->nodesize;
	out->sectorsize = in->sectorsize;
	out->hints_effective = in->hints_effective;
	out->kernel = in->kernel;
	out->have_global_reserve = in->have_global_reserve;
	out->global_reserve = in->global_reserve;
	out->global_reserve_used = in->global_reserve_used;
	/*
	 * A paused or interrupted balance stays through the changes (its
	 * targets still win) unless one resumed it to its end.
	 */
	if (!s->balance_ended) {
		out->balance = in->balance;
		memcpy(out->balance_target, in->balance_target, sizeof(out->balance_target));
	}
	out->spaces = calloc(s->nr_spaces + 1, sizeof(*out->spaces));
	if (!out->spaces)
		return OOM();
	memcpy(out->spaces, s->spaces, s->nr_spaces * sizeof(*out->spaces));
	out->nr_spaces = s->nr_spaces;
	ret = materialize_devices(s, out);
	if (!ret)
		ret = materialize_chunks(s, out);
	if (ret)
		bx_snapshot_release(out);
	return ret;
}

void bx_ks_place_model(const struct bx_kstate *s, struct bx_place_model *pm)
{
	memset(pm, 0, sizeof(*pm));
	pm->devs = s->adevs;
	pm->nr_devs = s->nr_devs;
	pm->params = s->params;
	pm->new_type[BX_PLACE_KIND_DATA] = bx_ks_alloc_type(s, BTRFS_BLOCK_GROUP_DATA);
	pm->new_type[BX_PLACE_KIND_METADATA] = bx_ks_alloc_type(s, BTRFS_BLOCK_GROUP_METADATA);
	pm->new_type[BX_PLACE_KIND_SYSTEM] = bx_ks_alloc_type(s, BTRFS_BLOCK_GROUP_SYSTEM);
}

