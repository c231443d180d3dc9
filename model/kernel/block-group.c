/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Block groups in the kernel state (fs/btrfs/block-group.c): a chunk
 * allocated, freed, its device extents free again at the commit, the
 * cleaner's deletion of unused ones, the read-only switch a relocation
 * needs, size classes, and data extents put into a block group's free
 * space. See state.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "format/ctree.h"
#include "format/profiles.h"
#include "model/kernel/space-info.h"
#include "model/kernel/state-private.h"

#define OOM() bx_error(-ENOMEM, "out of memory")

enum bx_ks_size_class bx_ks_size_class(uint64_t len)
{
	if (len <= 128 * 1024)
		return BX_KS_SC_SMALL;
	if (len <= 8 * 1024 * 1024)
		return BX_KS_SC_MEDIUM;
	return BX_KS_SC_LARGE;
}

/*
 * The kernel's size class of a block group it caches: the smallest of five
 * extents sampled at fifths of it (the first extent from each fifth on);
 * none when it holds no extent.
 */
enum bx_ks_size_class bx_ks_sampled_class(const struct bx_ks_chunk *pc)
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
	return smallest == UINT64_MAX ? BX_KS_SC_NONE : bx_ks_size_class(smallest);
}

/* Chunks of @flags (type and profile) not gone, but for chunk @skip. */
size_t bx_ks_alike_chunks(const struct bx_kstate *s, uint64_t flags, size_t skip)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_chunks; i++)
		n += i != skip && !s->chunks[i].gone && s->chunks[i].type == flags;
	return n;
}

/* ---- chunks ---- */

/*
 * The kernel's find_next_chunk(): the end of the highest chunk there is, so
 * the range of a last chunk that went away is used again. Chunks are
 * appended in address order, so the last one not gone is the highest.
 */
static uint64_t next_logical(const struct bx_kstate *s)
{
	for (size_t i = s->nr_chunks; i-- > 0;)
		if (!s->chunks[i].gone)
			return s->chunks[i].logical + s->chunks[i].length;
	return s->first_logical;
}

static int grow_chunks(struct bx_kstate *s)
{
	struct bx_ks_chunk *grown;

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
static int improves(const struct bx_kstate *s, const struct bx_alloc_chunk *c,
		    const struct bx_place_chunk *old)
{
	uint64_t *devids = calloc(c->num_stripes + 1, sizeof(*devids));
	struct bx_place_model pm;
	bool better;

	if (!devids)
		return OOM();
	for (uint32_t k = 0; k < c->num_stripes; k++)
		devids[k] = c->stripes[k].devid;
	bx_ks_place_model(s, &pm);
	better = bx_place_improves(&pm, old, devids, c->num_stripes);
	free(devids);
	return better;
}

long bx_ks_alloc_chunk(struct bx_kstate *s, uint64_t type, const struct bx_place_chunk *improve)
{
	struct bx_alloc_chunk c;
	struct bx_ks_chunk *pc;
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
	pc->unused_listed = bx_kernel_has(&s->in->kernel, BX_KT_CLEANS_NEW_BLOCK_GROUPS) &&
			    !bx_type_is_mixed(c.type);
	pc->length = c.length;
	pc->type = c.type;
	pc->num_stripes = c.num_stripes;
	pc->sub_stripes = c.sub_stripes;
	pc->stripe_size = c.stripe_size;
	bx_alloc_chunk_release(&c);
	ret = bx_ks_account(s, pc->type, pc->length, 0, 1);
	/* A new block group is one free extent, without a size class. */
	if (!ret && s->exact && bx_ks_is_data(pc->type))
		ret = bx_ks_add_hole(pc, pc->logical, pc->length);
	if (ret) {
		free(pc->stripes);
		free(pc->holes);
		return ret;
	}
	return (long)s->nr_chunks++;
}

long bx_ks_pool_chunk(struct bx_kstate *s, uint64_t type, const struct bx_place_chunk *improve)
{
	long n = bx_ks_alloc_chunk(s, type, improve);
	int ret;

	if (n < 0)
		return n;
	ret = bx_ks_pool_add(s, (size_t)n);
	return ret ? ret : n;
}

static int defer_free(struct bx_kstate *s, size_t dev, uint64_t start, uint64_t len)
{
	if (s->nr_freed == s->cap_freed) {
		size_t cap = s->cap_freed ? 2 * s->cap_freed : 64;
		struct bx_ks_freed *grown = realloc(s->freed, cap * sizeof(*grown));

		if (!grown)
			return OOM();
		s->freed = grown;
		s->cap_freed = cap;
	}
	s->freed[s->nr_freed++] = (struct bx_ks_freed){ dev, start, len };
	return 0;
}

int bx_ks_free_chunk(struct bx_kstate *s, size_t idx)
{
	struct bx_ks_chunk *pc = &s->chunks[idx];
	int ret;

	for (uint32_t k = 0; k < pc->num_stripes; k++) {
		long d = bx_ks_dev_index(s, pc->stripes[k].devid);
		uint64_t len = pc->stripe_size;

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
	bx_ks_pool_drop(s, idx);
	pc->gone = true;
	ret = bx_ks_account(s, pc->type, pc->length, pc->used, -1);
	/* Without the commit root's delay, the extents are holes at once. */
	if (!ret && !bx_kernel_has(&s->in->kernel, BX_KT_DEV_EXTENTS_FREE_AT_COMMIT))
		ret = bx_ks_commit(s);
	return ret;
}

int bx_ks_commit(struct bx_kstate *s)
{
	for (size_t i = 0; i < s->nr_freed; i++) {
		const struct bx_ks_freed *f = &s->freed[i];
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
static bool needed_soon(const struct bx_kstate *s, const struct bx_ks_chunk *c)
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

int bx_ks_delete_unused(struct bx_kstate *s)
{
	bool keeps = bx_kernel_has(&s->in->kernel, BX_KT_CLEANER_KEEPS_NEEDED);
	int ret = 0;

	for (size_t i = 0; i < s->nr_chunks && !ret; i++) {
		struct bx_ks_chunk *c = &s->chunks[i];

		if (c->gone || !c->unused_listed)
			continue;
		/* Used again, or the last of its profile: off the list for good. */
		if (c->used || (keeps && !bx_ks_alike_chunks(s, c->type, i))) {
			c->unused_listed = false;
			continue;
		}
		if (keeps && needed_soon(s, c))
			continue;
		ret = bx_ks_free_chunk(s, i);
		s->hix.stale = true;
	}
	return ret ? ret : bx_ks_commit(s);
}

/* Frees [start, start + len) of chunk @pc again: a hole, merged with its neighbours. */
int bx_ks_restore_hole(struct bx_ks_chunk *pc, uint64_t start, uint64_t len)
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
	ret = bx_ks_add_hole(pc, 0, 0);
	if (ret)
		return ret;
	memmove(&pc->holes[at + 1], &pc->holes[at], (pc->nr_holes - at) * sizeof(*pc->holes));
	pc->holes[at] = (struct bx_ks_hole){ start, len };
	pc->nr_holes++;
	return 0;
}

int bx_ks_put_extent(struct bx_kstate *s, size_t idx, uint64_t start, uint64_t len)
{
	struct bx_ks_chunk *pc = &s->chunks[idx];
	size_t h = 0;
	int ret;

	while (h < pc->nr_holes && pc->holes[h].start + pc->holes[h].len <= start)
		h++;
	if (h == pc->nr_holes || pc->holes[h].start > start ||
	    pc->holes[h].start + pc->holes[h].len < start + len)
		return bx_error(-EINVAL, "chunk %llu: no free space at %llu",
				(unsigned long long)pc->logical, (unsigned long long)start);
	ret = bx_ks_grow_array((void **)&pc->exts, &pc->cap_exts, pc->nr_exts + 1, sizeof(*pc->exts));
	if (!ret)
		ret = bx_ks_add_hole(pc, 0, 0);	/* room for a split */
	if (!ret)
		ret = bx_ks_journal(s, idx, len, start, true);
	if (ret)
		return ret;
	if (pc->holes[h].start < start) {
		struct bx_ks_hole *x = &pc->holes[h];
		uint64_t end = x->start + x->len;

		x->len = start - x->start;
		if (end > start + len) {
			memmove(&pc->holes[h + 2], &pc->holes[h + 1],
				(pc->nr_holes - h - 1) * sizeof(*pc->holes));
			pc->holes[h + 1] = (struct bx_ks_hole){ start + len, end - start - len };
			pc->nr_holes++;
		}
	} else if (pc->holes[h].len > len) {
		pc->holes[h].start += len;
		pc->holes[h].len -= len;
	} else {
		memmove(&pc->holes[h], &pc->holes[h + 1], (pc->nr_holes - h - 1) * sizeof(*pc->holes));
		pc->nr_holes--;
	}
	pc->exts[pc->nr_exts++] = (struct bx_snap_dextent){ start, len };
	bx_ks_add_used(s, idx, len, 1);
	return 0;
}

/* ---- the read-only switch of a relocation ---- */

/*
 * btrfs_inc_block_group_ro() on metadata or system chunk @idx: refused
 * (-ENOSPC) unless its free bytes can be overcommitted: what its type has
 * in use (and, for metadata, the global reserve) plus those bytes must stay
 * below its chunks' size plus half the devices' unallocated bytes per copy
 * of @profile, the type new chunks of its kind get (a converting balance's
 * target: btrfs_get_alloc_profile()) (calc_available_free_space() without
 * flushing; with overcommit_keeps_data_chunk less the size of a data chunk
 * first). The unallocated bytes are the kernel's free_chunk_space: a
 * chunk's extents count as soon as it went.
 */
bool bx_ks_ro_refused(const struct bx_kstate *s, size_t idx, uint64_t profile)
{
	const struct bx_ks_chunk *b = &s->chunks[idx];
	uint64_t kind = b->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM);
	uint64_t total = 0, used = 0, unallocated = 0, rw = 0, avail;
	struct bx_raid_attr r;

	if (!kind || (b->type & BTRFS_BLOCK_GROUP_DATA) ||
	    !bx_kernel_has(&s->in->kernel, BX_KT_RO_NEEDS_OVERCOMMIT) ||
	    bx_raid_attr(profile, &r) || !r.ncopies)
		return false;
	/* The space info: what its chunks hold, kept up to date as the chunks change. */
	for (size_t i = 0; i < s->nr_spaces; i++) {
		if (!(s->spaces[i].flags & kind) || (s->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV))
			continue;
		total += s->spaces[i].total_bytes;
		used += s->spaces[i].used_bytes;
	}
	for (size_t i = 0; i < s->nr_devs; i++) {
		if (s->devs[i].removed && i < s->in->nr_devs &&
		    s->in->devs[i].bytes_used > s->devs[i].info.bytes_used)
			/* What a remove freed so far counts (seen: its system chunk moves last). */
			unallocated += s->in->devs[i].bytes_used - s->devs[i].info.bytes_used;
		if (!s->adevs[i].writable)
			continue;
		rw += s->adevs[i].total_bytes;
		if (s->adevs[i].total_bytes > s->adevs[i].bytes_used)
			unallocated += s->adevs[i].total_bytes - s->adevs[i].bytes_used;
	}
	avail = bx_kernel_overcommit_room(s->in, unallocated, rw, r.ncopies);
	if (kind & BTRFS_BLOCK_GROUP_METADATA)
		used += s->in->global_reserve;
	return used + (b->length - b->used) >= total + avail / 2;
}
