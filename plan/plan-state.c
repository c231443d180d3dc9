/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner's working state (plan-private.h): devices with the allocator
 * model's holes, chunks with stripes and used bytes, the space info, and
 * the pools of free space in chunks that relocated bytes go into first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "plan/plan-private.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

long ps_dev_index(const struct plan_state *s, uint64_t devid)
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
static uint64_t next_devid(const struct plan_state *s)
{
	uint64_t next = 1;

	for (size_t i = 0; i < s->nr_devs; i++)
		if (!s->devs[i].removed && s->devs[i].info.devid >= next)
			next = s->devs[i].info.devid + 1;
	return next;
}

size_t ps_nr_writable(const struct plan_state *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_devs; i++)
		n += s->adevs[i].writable;
	return n;
}

bool ps_is_mixed(const struct plan_state *s)
{
	for (size_t i = 0; i < s->nr_spaces; i++)
		if (!(s->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV) &&
		    bx_type_is_mixed(s->spaces[i].flags))
			return true;
	return false;
}

uint64_t ps_alloc_type(const struct plan_state *s, uint64_t kind)
{
	if (kind != BTRFS_BLOCK_GROUP_SYSTEM && ps_is_mixed(s))
		kind = BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;
	if (s->balance_ended)
		return kind | bx_usage_alloc_profile(s->spaces, s->nr_spaces, kind,
						     ps_nr_writable(s));
	/* A paused or interrupted balance's convert target wins, as in the kernel. */
	return bx_usage_new_chunk_type(s->in, s->spaces, s->nr_spaces, kind, ps_nr_writable(s));
}

uint64_t ps_used_of_kind(const struct plan_state *s, uint64_t kind)
{
	uint64_t used = 0;

	for (size_t i = 0; i < s->nr_spaces; i++)
		if ((s->spaces[i].flags & kind) && !(s->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV))
			used += s->spaces[i].used_bytes;
	return used;
}

uint64_t ps_unallocated(const struct plan_state *s, size_t idx)
{
	return s->adevs[idx].writable ? bx_alloc_device_unallocated(&s->adevs[idx]) : 0;
}

/* ---- the space info ---- */

static struct bx_usage_space *space_of(struct plan_state *s, uint64_t flags)
{
	struct bx_usage_space *grown;

	for (size_t i = 0; i < s->nr_spaces; i++)
		if (s->spaces[i].flags == flags)
			return &s->spaces[i];
	grown = realloc(s->spaces, (s->nr_spaces + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	s->spaces = grown;
	s->spaces[s->nr_spaces] = (struct bx_usage_space){ .flags = flags };
	return &s->spaces[s->nr_spaces++];
}

/* Adds (or with @sign -1 takes away) a chunk in the space info; empty slots go. */
static int account(struct plan_state *s, uint64_t flags, uint64_t length, uint64_t used, int sign)
{
	struct bx_usage_space *sp = space_of(s, flags);

	if (!sp)
		return OOM();
	if (sign > 0) {
		sp->total_bytes += length;
		sp->used_bytes += used;
		return 0;
	}
	sp->total_bytes = sp->total_bytes > length ? sp->total_bytes - length : 0;
	sp->used_bytes = sp->used_bytes > used ? sp->used_bytes - used : 0;
	if (!sp->total_bytes) {
		/* The kernel drops a profile with its last block group. */
		*sp = s->spaces[s->nr_spaces - 1];
		s->nr_spaces--;
	}
	return 0;
}

/* ---- set up and release ---- */

static int copy_devices(struct plan_state *s, const struct bx_usage_input *in)
{
	struct bx_usage_model um;
	int ret;

	ret = bx_usage_model_init(in, s->params.flags, &um);
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

static bool is_data(uint64_t type)
{
	return (type & BTRFS_BLOCK_GROUP_DATA) && !(type & BTRFS_BLOCK_GROUP_METADATA);
}

enum ps_size_class ps_size_class(uint64_t len)
{
	if (len <= 128 * 1024)
		return PS_SC_SMALL;
	if (len <= 8 * 1024 * 1024)
		return PS_SC_MEDIUM;
	return PS_SC_LARGE;
}

static int grow_array(void **arr, size_t *cap, size_t want, size_t size)
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

static int add_hole(struct ps_chunk *pc, uint64_t start, uint64_t len)
{
	int ret = grow_array((void **)&pc->holes, &pc->cap_holes, pc->nr_holes + 1,
			     sizeof(*pc->holes));

	if (!ret && len)
		pc->holes[pc->nr_holes++] = (struct ps_hole){ start, len };
	return ret;
}

/*
 * The kernel's size class of a block group it caches: the smallest of five
 * extents sampled at fifths of it (the first extent from each fifth on);
 * none when it holds no extent.
 */
static enum ps_size_class sampled_class(const struct ps_chunk *pc)
{
	uint64_t smallest = UINT64_MAX;
	size_t e = 0;

	for (int i = 0; i < 5; i++) {
		uint64_t from = pc->logical + (uint64_t)i * (pc->length / 5);

		while (e < pc->nr_exts && pc->exts[e].start < from)
			e++;
		if (e < pc->nr_exts && pc->exts[e].len < smallest)
			smallest = pc->exts[e].len;
	}
	return smallest == UINT64_MAX ? PS_SC_NONE : ps_size_class(smallest);
}

/* A data chunk's extents from the input, and the holes between them. */
static int copy_extents(struct plan_state *s, const struct bx_usage_input *in, const struct bx_usage_chunk *c,
			struct ps_chunk *pc)
{
	uint64_t at = pc->logical;
	int ret = grow_array((void **)&pc->exts, &pc->cap_exts, c->nr_dextents + 1,
			     sizeof(*pc->exts));

	for (size_t k = 0; !ret && k < c->nr_dextents; k++) {
		const struct bx_usage_dextent *x = &in->dextents[c->first_dextent + k];

		pc->exts[pc->nr_exts++] = *x;
		if (x->start > at)
			ret = add_hole(pc, at, x->start - at);
		if (x->start + x->len > at)
			at = x->start + x->len;
	}
	if (!ret && at < pc->logical + pc->length)
		ret = add_hole(pc, at, pc->logical + pc->length - at);
	if (s->size_classes)
		pc->size_class = sampled_class(pc);
	return ret;
}

/* Chunks of @flags (type and profile) not gone, but for chunk @skip. */
static size_t alike_chunks(const struct plan_state *s, uint64_t flags, size_t skip)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_chunks; i++)
		n += i != skip && !s->chunks[i].gone && s->chunks[i].type == flags;
	return n;
}

static int copy_chunks(struct plan_state *s, const struct bx_usage_input *in)
{
	s->chunks = calloc(in->nr_chunks + 1, sizeof(*s->chunks));
	if (!s->chunks)
		return OOM();
	s->cap_chunks = in->nr_chunks + 1;
	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_usage_chunk *c = &in->chunks[i];
		struct ps_chunk *pc = &s->chunks[i];

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
		if (s->exact && is_data(c->type)) {
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
					     alike_chunks(s, s->chunks[i].type, i);
	/* No chunk left at all: mkfs's first address. */
	s->first_logical = 1024 * 1024;
	return 0;
}

int ps_init(struct plan_state *s, const struct bx_usage_input *in)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->in = in;
	s->moving = -1;
	s->params.flags = bx_usage_kernel_flags(in) |
			  (in->hints_effective ? 0 : BX_ALLOC_IGNORE_HINTS);
	s->exact = in->dextents_known;
	s->size_classes = in->kernel_size_classes;
	s->spaces = calloc(in->nr_spaces + 1, sizeof(*s->spaces));
	if (!s->spaces)
		return OOM();
	memcpy(s->spaces, in->spaces, in->nr_spaces * sizeof(*s->spaces));
	s->nr_spaces = in->nr_spaces;
	ret = copy_devices(s, in);
	if (!ret)
		ret = copy_chunks(s, in);
	if (ret)
		ps_release(s);
	return ret;
}

void ps_release(struct plan_state *s)
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
	for (int k = 0; k <= PS_SC_LARGE; k++)
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

long ps_add_device(struct plan_state *s, uint64_t size, uint64_t hint)
{
	struct bx_alloc_device *adevs;
	struct ps_dev *devs;
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
	s->devs[idx].info = (struct bx_usage_dev){
		.devid = devid,
		.total_bytes = size,
		.device_size = size,
		.hint = hint,
		.writable = true,
	};
	s->nr_devs++;
	return (long)idx;
}

void ps_set_hint(struct plan_state *s, size_t idx, uint64_t hint)
{
	s->devs[idx].info.hint = hint;
	s->adevs[idx].hint = hint;
}

int ps_resize_device(struct plan_state *s, size_t idx, uint64_t size)
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
		const struct ps_chunk *pc = &s->chunks[c];

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

/* ---- chunks ---- */

static void pool_drop(struct plan_state *s, size_t idx);

/*
 * The kernel's find_next_chunk(): the end of the highest chunk there is, so
 * the range of a last chunk that went away is used again. Chunks are
 * appended in address order, so the last one not gone is the highest.
 */
static uint64_t next_logical(const struct plan_state *s)
{
	for (size_t i = s->nr_chunks; i-- > 0;)
		if (!s->chunks[i].gone)
			return s->chunks[i].logical + s->chunks[i].length;
	return s->first_logical;
}

static int grow_chunks(struct plan_state *s)
{
	struct ps_chunk *grown;

	if (s->nr_chunks < s->cap_chunks)
		return 0;
	grown = realloc(s->chunks, 2 * s->cap_chunks * sizeof(*grown));
	if (!grown)
		return OOM();
	s->chunks = grown;
	s->cap_chunks *= 2;
	return 0;
}

/* Whether the model's chunk @c places the data of @old better. */
static int improves(const struct plan_state *s, const struct bx_alloc_chunk *c,
		    const struct bx_place_chunk *old)
{
	uint64_t *devids = calloc(c->num_stripes + 1, sizeof(*devids));
	struct bx_place_model pm;
	bool better;

	if (!devids)
		return OOM();
	for (uint32_t k = 0; k < c->num_stripes; k++)
		devids[k] = c->stripes[k].devid;
	ps_place_model(s, &pm);
	better = bx_place_improves(&pm, old, devids, c->num_stripes);
	free(devids);
	return better;
}

long ps_alloc_chunk(struct plan_state *s, uint64_t type, const struct bx_place_chunk *improve)
{
	struct bx_alloc_chunk c;
	struct ps_chunk *pc;
	int ret = grow_chunks(s);

	if (ret)
		return ret;
	ret = bx_alloc_decide(s->adevs, s->nr_devs, type, &s->params, &c);
	if (ret == -EINVAL)
		return bx_error(-EOPNOTSUPP, "the allocator model does not take chunk type 0x%llx",
				(unsigned long long)type);
	if (ret)
		return ret;
	if (improve) {
		ret = improves(s, &c, improve);
		if (ret <= 0) {
			bx_alloc_chunk_release(&c);
			return ret ? ret : -ENOSPC;
		}
	}
	ret = bx_alloc_apply(s->adevs, s->nr_devs, &c);
	pc = &s->chunks[s->nr_chunks];
	memset(pc, 0, sizeof(*pc));
	pc->stripes = calloc(c.num_stripes + 1, sizeof(*pc->stripes));
	if (ret || !pc->stripes) {
		free(pc->stripes);
		bx_alloc_chunk_release(&c);
		return ret ? bx_error(ret, "the allocator model failed: %s", strerror(-ret)) : OOM();
	}
	for (uint32_t k = 0; k < c.num_stripes; k++) {
		pc->stripes[k] = (struct bx_place_stripe){ c.stripes[k].devid, c.stripes[k].physical };
		s->devs[c.stripes[k].dev_index].info.bytes_used += c.stripe_size;
	}
	pc->logical = next_logical(s);
	pc->is_new = true;
	pc->unused_listed = s->in->kernel_cleans_new_block_groups && !bx_type_is_mixed(c.type);
	pc->length = c.length;
	pc->type = c.type;
	pc->num_stripes = c.num_stripes;
	pc->sub_stripes = c.sub_stripes;
	pc->stripe_size = c.stripe_size;
	bx_alloc_chunk_release(&c);
	ret = account(s, pc->type, pc->length, 0, 1);
	/* A new block group is one free extent, without a size class. */
	if (!ret && s->exact && is_data(pc->type))
		ret = add_hole(pc, pc->logical, pc->length);
	if (ret) {
		free(pc->stripes);
		free(pc->holes);
		return ret;
	}
	return (long)s->nr_chunks++;
}

long ps_pool_chunk(struct plan_state *s, uint64_t type, const struct bx_place_chunk *improve)
{
	long n = ps_alloc_chunk(s, type, improve);
	int ret;

	if (n < 0)
		return n;
	ret = ps_pool_add(s, (size_t)n);
	return ret ? ret : n;
}

static int defer_free(struct plan_state *s, size_t dev, uint64_t start, uint64_t len)
{
	if (s->nr_freed == s->cap_freed) {
		size_t cap = s->cap_freed ? 2 * s->cap_freed : 64;
		struct ps_freed *grown = realloc(s->freed, cap * sizeof(*grown));

		if (!grown)
			return OOM();
		s->freed = grown;
		s->cap_freed = cap;
	}
	s->freed[s->nr_freed++] = (struct ps_freed){ dev, start, len };
	return 0;
}

int ps_free_chunk(struct plan_state *s, size_t idx)
{
	struct ps_chunk *pc = &s->chunks[idx];

	for (uint32_t k = 0; k < pc->num_stripes; k++) {
		long d = ps_dev_index(s, pc->stripes[k].devid);
		uint64_t len = pc->stripe_size;
		int ret;

		if (d < 0)
			continue;
		s->devs[d].info.bytes_used -= s->devs[d].info.bytes_used > len ? len :
					      s->devs[d].info.bytes_used;
		if (s->devs[d].removed)
			continue;
		/* The allocator's second sort key sees it at once (device->bytes_used). */
		s->adevs[d].bytes_used -= s->adevs[d].bytes_used > len ? len : s->adevs[d].bytes_used;
		ret = defer_free(s, (size_t)d, pc->stripes[k].physical, len);
		if (ret)
			return ret;
	}
	pool_drop(s, idx);
	pc->gone = true;
	return account(s, pc->type, pc->length, pc->used, -1);
}

int ps_commit(struct plan_state *s)
{
	for (size_t i = 0; i < s->nr_freed; i++) {
		const struct ps_freed *f = &s->freed[i];
		struct bx_alloc_device *d = &s->adevs[f->dev];
		uint64_t used = d->bytes_used;	/* counted out when it was freed */
		int ret;

		if (s->devs[f->dev].removed)
			continue;
		ret = bx_alloc_device_remove_extent(d, f->start, f->len);
		d->bytes_used = used;
		if (ret && ret != -EEXIST)
			return ret == -ENOMEM ? OOM() : bx_error(ret, "devid %llu: an extent at %llu "
								"does not free",
								(unsigned long long)d->devid,
								(unsigned long long)f->start);
	}
	s->nr_freed = 0;
	return 0;
}

/*
 * btrfs_delete_unused_bgs()'s "may be used soon": an empty block group
 * stays while its space info's other chunks could not hold what it has in
 * use and reserves; at rest that is the used bytes, and for metadata the
 * global reserve too.
 */
static bool needed_soon(const struct plan_state *s, const struct ps_chunk *c)
{
	uint64_t kind = c->type & BTRFS_BLOCK_GROUP_TYPE_MASK;
	uint64_t total = 0, used = 0;

	for (size_t i = 0; i < s->nr_spaces; i++) {
		uint64_t f = s->spaces[i].flags;

		if (!(f & BX_SPACE_INFO_GLOBAL_RSV) && (f & BTRFS_BLOCK_GROUP_TYPE_MASK) == kind) {
			total += s->spaces[i].total_bytes;
			used += s->spaces[i].used_bytes;
		}
	}
	if (kind == BTRFS_BLOCK_GROUP_METADATA)
		used += s->in->global_reserve;
	return total - c->length < used;
}

int ps_delete_unused(struct plan_state *s)
{
	int ret = 0;

	for (size_t i = 0; i < s->nr_chunks && !ret; i++) {
		struct ps_chunk *c = &s->chunks[i];

		if (c->gone || !c->unused_listed)
			continue;
		/* Used again, or the last of its profile: off the list for good. */
		if (c->used || !alike_chunks(s, c->type, i)) {
			c->unused_listed = false;
			continue;
		}
		if (needed_soon(s, c))
			continue;
		ret = ps_free_chunk(s, i);
		s->hix.stale = true;
	}
	return ret ? ret : ps_commit(s);
}

/* ---- pools ---- */

static struct ps_pool *pool_of(struct plan_state *s, uint64_t type, bool create)
{
	struct ps_pool *grown;

	for (size_t i = 0; i < s->nr_pools; i++)
		if (s->pools[i].type == type)
			return &s->pools[i];
	if (!create)
		return NULL;
	grown = realloc(s->pools, (s->nr_pools + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	s->pools = grown;
	s->pools[s->nr_pools] = (struct ps_pool){ .type = type };
	return &s->pools[s->nr_pools++];
}

int ps_pool_add(struct plan_state *s, size_t idx)
{
	struct ps_chunk *pc = &s->chunks[idx];
	struct ps_pool *p;

	if (pc->gone || pc->moving || pc->in_pool || pc->used >= pc->length)
		return 0;
	p = pool_of(s, pc->type, true);
	if (!p)
		return OOM();
	if (p->nr == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		size_t *grown = realloc(p->chunks, cap * sizeof(*grown));

		if (!grown)
			return OOM();
		p->chunks = grown;
		p->cap = cap;
	}
	p->chunks[p->nr++] = idx;
	p->free += pc->length - pc->used;
	pc->in_pool = true;
	return 0;
}

/* Chunk @idx leaves its pool: its free space is no longer offered. */
static void pool_drop(struct plan_state *s, size_t idx)
{
	struct ps_chunk *pc = &s->chunks[idx];
	struct ps_pool *p;

	if (!pc->in_pool)
		return;
	pc->in_pool = false;
	p = pool_of(s, pc->type, false);
	if (p)
		p->free -= pc->length > pc->used ? pc->length - pc->used : 0;
}

void ps_begin_move(struct plan_state *s, size_t idx)
{
	s->chunks[idx].moving = true;
	s->moving = (long)idx;
}

void ps_end_move(struct plan_state *s, size_t idx)
{
	s->chunks[idx].moving = false;
	s->moving = -1;
}

static int journal(struct plan_state *s, size_t idx, uint64_t bytes, uint64_t start, bool extent)
{
	if (s->nr_journal == s->cap_journal) {
		size_t cap = s->cap_journal ? 2 * s->cap_journal : 64;
		struct ps_take *grown = realloc(s->journal, cap * sizeof(*grown));

		if (!grown)
			return OOM();
		s->journal = grown;
		s->cap_journal = cap;
	}
	s->journal[s->nr_journal++] = (struct ps_take){ idx, bytes, start, extent };
	return 0;
}

/* Adds @bytes (or takes them back, @sign -1) to chunk @idx and its space info. */
static void add_used(struct plan_state *s, size_t idx, uint64_t bytes, int sign)
{
	struct ps_chunk *pc = &s->chunks[idx];
	struct ps_pool *p = pc->in_pool ? pool_of(s, pc->type, false) : NULL;

	if (p)
		p->free = sign > 0 ? p->free - bytes : p->free + bytes;
	for (size_t i = 0; i < s->nr_spaces; i++) {
		if (s->spaces[i].flags != pc->type)
			continue;
		s->spaces[i].used_bytes = sign > 0 ? s->spaces[i].used_bytes + bytes :
					  s->spaces[i].used_bytes - bytes;
		break;
	}
	pc->used = sign > 0 ? pc->used + bytes : pc->used - bytes;
}

int ps_pool_take(struct plan_state *s, uint64_t type, uint64_t bytes, uint64_t *taken)
{
	struct ps_pool *p = pool_of(s, type, false);

	*taken = 0;
	while (p && p->next < p->nr && *taken < bytes) {
		size_t idx = p->chunks[p->next];
		struct ps_chunk *pc = &s->chunks[idx];
		uint64_t room = pc->gone || pc->moving ? 0 : pc->length - pc->used;
		uint64_t take = room < bytes - *taken ? room : bytes - *taken;

		if (take) {
			if (journal(s, idx, take, 0, false))
				return -ENOMEM;
			add_used(s, idx, take, 1);
			*taken += take;
		}
		if (pc->used >= pc->length || pc->gone || pc->moving) {
			pool_drop(s, idx);
			p->next++;
		}
	}
	return 0;
}

uint64_t ps_pool_free(const struct plan_state *s, uint64_t type)
{
	for (size_t i = 0; i < s->nr_pools; i++) {
		const struct ps_pool *p = &s->pools[i];
		const struct ps_chunk *m = s->moving >= 0 ? &s->chunks[s->moving] : NULL;

		if (p->type != type)
			continue;
		/* The block group being moved is read-only: its room does not count. */
		if (m && m->in_pool && m->type == type)
			return p->free - (m->length - m->used);
		return p->free;
	}
	return 0;
}

void ps_journal_keep(struct plan_state *s, size_t mark)
{
	s->nr_journal = mark;
}

/* Frees [start, start + len) of chunk @pc again: a hole, merged with its neighbours. */
static int restore_hole(struct ps_chunk *pc, uint64_t start, uint64_t len)
{
	size_t at = 0;
	int ret;

	while (at < pc->nr_holes && pc->holes[at].start < start)
		at++;
	if (at && pc->holes[at - 1].start + pc->holes[at - 1].len == start) {
		pc->holes[at - 1].len += len;
		if (at < pc->nr_holes && start + len == pc->holes[at].start) {
			pc->holes[at - 1].len += pc->holes[at].len;
			memmove(&pc->holes[at], &pc->holes[at + 1],
				(pc->nr_holes - at - 1) * sizeof(*pc->holes));
			pc->nr_holes--;
		}
		return 0;
	}
	if (at < pc->nr_holes && start + len == pc->holes[at].start) {
		pc->holes[at].start = start;
		pc->holes[at].len += len;
		return 0;
	}
	ret = add_hole(pc, 0, 0);
	if (ret)
		return ret;
	memmove(&pc->holes[at + 1], &pc->holes[at], (pc->nr_holes - at) * sizeof(*pc->holes));
	pc->holes[at] = (struct ps_hole){ start, len };
	pc->nr_holes++;
	return 0;
}

int ps_put_extent(struct plan_state *s, size_t idx, uint64_t start, uint64_t len)
{
	struct ps_chunk *pc = &s->chunks[idx];
	size_t h = 0;
	int ret;

	while (h < pc->nr_holes && pc->holes[h].start + pc->holes[h].len <= start)
		h++;
	if (h == pc->nr_holes || pc->holes[h].start > start ||
	    pc->holes[h].start + pc->holes[h].len < start + len)
		return bx_error(-EINVAL, "chunk %llu: no free space at %llu",
				(unsigned long long)pc->logical, (unsigned long long)start);
	ret = grow_array((void **)&pc->exts, &pc->cap_exts, pc->nr_exts + 1, sizeof(*pc->exts));
	if (!ret)
		ret = add_hole(pc, 0, 0);	/* room for a split */
	if (!ret)
		ret = journal(s, idx, len, start, true);
	if (ret)
		return ret;
	if (pc->holes[h].start < start) {
		struct ps_hole *x = &pc->holes[h];
		uint64_t end = x->start + x->len;

		x->len = start - x->start;
		if (end > start + len) {
			memmove(&pc->holes[h + 2], &pc->holes[h + 1],
				(pc->nr_holes - h - 1) * sizeof(*pc->holes));
			pc->holes[h + 1] = (struct ps_hole){ start + len, end - start - len };
			pc->nr_holes++;
		}
	} else if (pc->holes[h].len > len) {
		pc->holes[h].start += len;
		pc->holes[h].len -= len;
	} else {
		memmove(&pc->holes[h], &pc->holes[h + 1], (pc->nr_holes - h - 1) * sizeof(*pc->holes));
		pc->nr_holes--;
	}
	pc->exts[pc->nr_exts++] = (struct bx_usage_dextent){ start, len };
	add_used(s, idx, len, 1);
	return 0;
}

void ps_journal_undo(struct plan_state *s, size_t mark)
{
	while (s->nr_journal > mark) {
		const struct ps_take *t = &s->journal[--s->nr_journal];
		struct ps_chunk *pc = &s->chunks[t->idx];

		/*
		 * Extents are undone last first: the chunk's last extent is this
		 * one. Out of memory, its range stays taken: a smaller plan.
		 */
		if (t->extent) {
			pc->nr_exts--;
			restore_hole(pc, t->start, t->bytes);
			s->hix.stale = true;
		}
		add_used(s, t->idx, t->bytes, -1);
		/* Room again: back in its pool, at the end. */
		if (!pc->in_pool)
			ps_pool_add(s, t->idx);
	}
}

void ps_pools_reset(struct plan_state *s)
{
	for (size_t i = 0; i < s->nr_pools; i++) {
		for (size_t k = 0; k < s->pools[i].nr; k++)
			s->chunks[s->pools[i].chunks[k]].in_pool = false;
		free(s->pools[i].chunks);
	}
	free(s->pools);
	s->pools = NULL;
	s->nr_pools = 0;
}

/* ---- the state as an input ---- */

/* Devids up to this find their output slot in a table (real ones are small). */
#define DEVID_TABLE_MAX 65536

/*
 * The output slot of each devid up to @max_devid (-1: removed or none), so
 * that the stripes of a 1 PiB array's chunks find theirs at once.
 */
static long *slots_by_devid(const struct plan_state *s, const long *slot, uint64_t max_devid)
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

static uint64_t largest_devid(const struct plan_state *s)
{
	uint64_t max = 0;

	for (size_t i = 0; i < s->nr_devs; i++)
		if (s->devs[i].info.devid > max)
			max = s->devs[i].info.devid;
	return max;
}

/* The output slot of @devid: from the table (devids up to @max_devid) when there is one. */
static long slot_of(const struct plan_state *s, const long *slot, const long *by_devid,
		    uint64_t max_devid, uint64_t devid)
{
	long d;

	if (by_devid)
		return devid <= max_devid ? by_devid[devid] : -1;
	d = ps_dev_index(s, devid);
	return d >= 0 ? slot[d] : -1;
}

static int materialize_devices(const struct plan_state *s, struct bx_usage_input *out)
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
		const struct ps_chunk *pc = &s->chunks[c];

		for (uint32_t k = 0; !pc->gone && k < pc->num_stripes; k++) {
			long d = slot_of(s, slot, by_devid, max_devid, pc->stripes[k].devid);
			struct bx_usage_dev *od;

			if (d < 0)
				continue;
			od = &out->devs[d];
			od->extents[od->nr_extents++] = (struct bx_usage_extent){
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

static int materialize_chunks(const struct plan_state *s, struct bx_usage_input *out)
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
		const struct ps_chunk *pc = &s->chunks[c];

		if (pc->gone)
			continue;
		out->chunks[out->nr_chunks++] = (struct bx_usage_chunk){
			.logical = pc->logical,
			.length = pc->length,
			.type = pc->type,
			.num_stripes = pc->num_stripes,
			.sub_stripes = pc->sub_stripes,
			.first_stripe = out->nr_stripes,
			.used = pc->used,
		};
		for (uint32_t k = 0; k < pc->num_stripes; k++)
			out->stripes[out->nr_stripes++] = (struct bx_usage_stripe){
				pc->stripes[k].devid, pc->stripes[k].physical };
	}
	out->chunks_used_known = true;
	return 0;
}

int ps_materialize(const struct plan_state *s, struct bx_usage_input *out)
{
	const struct bx_usage_input *in = s->in;
	int ret;

	memset(out, 0, sizeof(*out));
	memcpy(out->fsid, in->fsid, sizeof(out->fsid));
	out->mounted = in->mounted;
	memcpy(out->path, in->path, sizeof(out->path));
	out->nodesize = in->nodesize;
	out->sectorsize = in->sectorsize;
	out->hints_effective = in->hints_effective;
	out->kernel_flags = in->kernel_flags;
	out->kernel_size_classes = in->kernel_size_classes;
	out->kernel_overcommit_keeps_data_chunk = in->kernel_overcommit_keeps_data_chunk;
	out->kernel_flush_overcommits_64th = in->kernel_flush_overcommits_64th;
	out->kernel_cleans_new_block_groups = in->kernel_cleans_new_block_groups;
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
		bx_usage_input_release(out);
	return ret;
}

void ps_place_model(const struct plan_state *s, struct bx_place_model *pm)
{
	memset(pm, 0, sizeof(*pm));
	pm->devs = s->adevs;
	pm->nr_devs = s->nr_devs;
	pm->params = s->params;
	pm->new_type[BX_PLACE_KIND_DATA] = ps_alloc_type(s, BTRFS_BLOCK_GROUP_DATA);
	pm->new_type[BX_PLACE_KIND_METADATA] = ps_alloc_type(s, BTRFS_BLOCK_GROUP_METADATA);
	pm->new_type[BX_PLACE_KIND_SYSTEM] = ps_alloc_type(s, BTRFS_BLOCK_GROUP_SYSTEM);
}
