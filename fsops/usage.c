/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Filesystem usage: btrfs-progs' overall figures and the allocator model's
 * free space. Pure computation on a struct bx_snapshot; see usage.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "fsops/usage.h"
#include "model/allocator.h"
#include "model/kernel/space-info.h"
#include "format/ctree.h"
#include "format/hints.h"

#define SZ_16M (16ULL << 20)

void bx_usage_report_release(struct bx_usage_report *rep)
{
	free(rep->classes);
	free(rep->dev_rows);
	free(rep->types);
	free(rep->allocated);
	memset(rep, 0, sizeof(*rep));
}

/* Copies of the data each profile keeps (btrfs_raid_array's ncopies). */
static int profile_ncopies(uint64_t flags)
{
	if (flags & BTRFS_BLOCK_GROUP_RAID1C4)
		return 4;
	if (flags & BTRFS_BLOCK_GROUP_RAID1C3)
		return 3;
	if (flags & (BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID10))
		return 2;
	return 1;
}

static int profile_nparity(uint64_t flags)
{
	if (flags & BTRFS_BLOCK_GROUP_RAID6)
		return 2;
	return (flags & BTRFS_BLOCK_GROUP_RAID5) ? 1 : 0;
}

/*
 * The order btrfs-progs sorts space infos and chunk groups in: by type
 * (data, metadata, system last), then by profile bits within one type.
 */
static int type_order(uint64_t a, uint64_t b)
{
	uint64_t mask;

	if ((a & BTRFS_BLOCK_GROUP_TYPE_MASK) == (b & BTRFS_BLOCK_GROUP_TYPE_MASK))
		mask = BTRFS_BLOCK_GROUP_PROFILE_MASK;
	else if (b & BTRFS_BLOCK_GROUP_SYSTEM)
		return -1;
	else if (a & BTRFS_BLOCK_GROUP_SYSTEM)
		return 1;
	else
		mask = BTRFS_BLOCK_GROUP_TYPE_MASK;
	if ((a & mask) != (b & mask))
		return (a & mask) > (b & mask) ? 1 : -1;
	return 0;
}

/*
 * RAID5/6 chunks grouped the way btrfs-progs groups them: one entry per
 * (type, device, number of stripes), holding the chunk lengths of every
 * stripe on that device. Its raw sizes come from these entries.
 */
struct r56_group {
	uint64_t type;
	uint64_t devid;
	uint32_t num_stripes;
	uint64_t size;
	size_t seq;		/* creation order, for a stable sort */
};

static int r56_group_cmp(const void *a, const void *b)
{
	const struct r56_group *x = a, *y = b;
	int c = type_order(x->type, y->type);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * A double as uint64_t, saturating: the sums below follow progs' double
 * arithmetic, and with a corrupt block group (used beyond its size) they
 * leave the range, where a plain conversion is undefined.
 */
static uint64_t double_to_u64(double v)
{
	if (!(v > 0))
		return 0;
	if (v >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)v;
}

struct raw_sums {
	uint64_t data_chunks, data_used;
	uint64_t metadata_chunks, metadata_used;
	uint64_t system_chunks, system_used;
	double max_ratio;
};

/* Used / size per type over the spaces of profile @profile (progs' logical ratio). */
static void r56_fill_ratio(const struct bx_snapshot *in, uint64_t profile, double ratio[3])
{
	uint64_t used[3] = { 0 }, size[3] = { 0 };

	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *s = &in->spaces[i];
		int k;

		if (!(s->flags & profile))
			continue;
		if (s->flags & BTRFS_BLOCK_GROUP_DATA)
			k = 0;
		else if (s->flags & BTRFS_BLOCK_GROUP_METADATA)
			k = 1;
		else if (s->flags & BTRFS_BLOCK_GROUP_SYSTEM)
			k = 2;
		else
			continue;
		used[k] += s->used_bytes;
		size[k] += s->total_bytes;
	}
	for (int k = 0; k < 3; k++)
		ratio[k] = size[k] ? (double)used[k] / (double)size[k] : 0.0;
}

static int r56_sums(const struct bx_snapshot *in, struct raw_sums *raw)
{
	struct r56_group *groups = NULL;
	size_t nr = 0, cap = 0;
	double r5[3], r6[3];

	for (size_t c = 0; c < in->nr_chunks; c++) {
		const struct bx_snap_chunk *ch = &in->chunks[c];

		if (!(ch->type & BTRFS_BLOCK_GROUP_RAID56_MASK))
			continue;
		for (uint32_t s = 0; s < ch->num_stripes; s++) {
			uint64_t devid = in->stripes[ch->first_stripe + s].devid;
			size_t g;

			for (g = 0; g < nr; g++)
				if (groups[g].type == ch->type && groups[g].devid == devid &&
				    groups[g].num_stripes == ch->num_stripes)
					break;
			if (g == nr) {
				if (nr == cap) {
					struct r56_group *grown;

					cap = cap ? 2 * cap : 16;
					grown = realloc(groups, cap * sizeof(*grown));
					if (!grown) {
						free(groups);
						return bx_error(-ENOMEM, "out of memory");
					}
					groups = grown;
				}
				groups[nr] = (struct r56_group){ ch->type, devid, ch->num_stripes, 0, nr };
				nr++;
			}
			groups[g].size += ch->length;
		}
	}
	if (!nr)
		return 0;
	qsort(groups, nr, sizeof(*groups), r56_group_cmp);
	r56_fill_ratio(in, BTRFS_BLOCK_GROUP_RAID5, r5);
	r56_fill_ratio(in, BTRFS_BLOCK_GROUP_RAID6, r6);
	for (size_t g = 0; g < nr; g++) {
		const struct r56_group *gr = &groups[g];
		uint32_t ndata = gr->num_stripes - (uint32_t)profile_nparity(gr->type);
		const double *ratio = (gr->type & BTRFS_BLOCK_GROUP_RAID5) ? r5 : r6;
		double rt;
		uint64_t size;

		if (!ndata || ndata > gr->num_stripes)
			continue;
		rt = (double)gr->num_stripes / ndata;
		if (rt > raw->max_ratio)
			raw->max_ratio = rt;
		size = gr->size / ndata;
		/* The sums are kept in doubles the way progs adds them, rounding included. */
		if (gr->type & BTRFS_BLOCK_GROUP_DATA) {
			raw->data_chunks += size;
			raw->data_used = double_to_u64((double)raw->data_used + (double)size * ratio[0]);
		} else if (gr->type & BTRFS_BLOCK_GROUP_METADATA) {
			raw->metadata_chunks += size;
			raw->metadata_used = double_to_u64((double)raw->metadata_used +
							   (double)size * ratio[1]);
		} else if (gr->type & BTRFS_BLOCK_GROUP_SYSTEM) {
			raw->system_chunks += size;
			raw->system_used = double_to_u64((double)raw->system_used +
							 (double)size * ratio[2]);
		}
	}
	free(groups);
	return 0;
}

static void multiple_profiles(const struct bx_snapshot *in, char *buf, size_t len)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} kinds[] = {
		{ BTRFS_BLOCK_GROUP_DATA, "data" },
		{ BTRFS_BLOCK_GROUP_METADATA, "metadata" },
		{ BTRFS_BLOCK_GROUP_SYSTEM, "system" },
	};

	buf[0] = '\0';
	for (size_t k = 0; k < 3; k++) {
		uint64_t first = 0;
		bool have = false, several = false;

		for (size_t i = 0; i < in->nr_spaces; i++) {
			uint64_t f = in->spaces[i].flags;

			if (!(f & kinds[k].bit) || (f & BX_SPACE_INFO_GLOBAL_RSV))
				continue;
			if (have && (f & BTRFS_BLOCK_GROUP_PROFILE_MASK) != first)
				several = true;
			first = f & BTRFS_BLOCK_GROUP_PROFILE_MASK;
			have = true;
		}
		if (several)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", *buf ? ", " : "",
				 kinds[k].name);
	}
}

/* btrfs-progs' Overall section: same inputs, same arithmetic (doubles included). */
static int compute_overall(const struct bx_snapshot *in, struct bx_usage_overall *ov)
{
	struct raw_sums raw = { .max_ratio = 1.0 };
	uint64_t l_data = 0, l_metadata = 0, total_chunks, total_used, unused;
	bool mixed = false;
	int ret;

	memset(ov, 0, sizeof(*ov));
	for (size_t i = 0; i < in->nr_devs; i++) {
		const struct bx_snap_dev *d = &in->devs[i];

		ov->device_size += d->total_bytes;
		if (d->missing || !d->device_size)
			ov->device_missing += d->total_bytes;
		else if (d->device_size > d->total_bytes)
			ov->device_slack += d->device_size - d->total_bytes;
	}
	ret = r56_sums(in, &raw);
	if (ret)
		return ret;
	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *s = &in->spaces[i];
		uint64_t ratio = (uint64_t)profile_ncopies(s->flags);

		/* RAID5/6 raw sizes depend on the stripe count: taken from the chunks above. */
		if (s->flags & BTRFS_BLOCK_GROUP_RAID56_MASK)
			ratio = 0;
		if ((double)ratio > raw.max_ratio)
			raw.max_ratio = (double)ratio;
		if (s->flags & BX_SPACE_INFO_GLOBAL_RSV)
			continue;
		if (bx_type_is_mixed(s->flags))
			mixed = true;
		if (s->flags & BTRFS_BLOCK_GROUP_DATA) {
			raw.data_used += s->used_bytes * ratio;
			raw.data_chunks += s->total_bytes * ratio;
			l_data += s->total_bytes;
		}
		if (s->flags & BTRFS_BLOCK_GROUP_METADATA) {
			raw.metadata_used += s->used_bytes * ratio;
			raw.metadata_chunks += s->total_bytes * ratio;
			l_metadata += s->total_bytes;
		}
		if (s->flags & BTRFS_BLOCK_GROUP_SYSTEM) {
			raw.system_used += s->used_bytes * ratio;
			raw.system_chunks += s->total_bytes * ratio;
		}
	}
	total_chunks = raw.data_chunks + raw.system_chunks;
	total_used = raw.data_used + raw.system_used;
	if (!mixed) {
		total_chunks += raw.metadata_chunks;
		total_used += raw.metadata_used;
	}
	unused = ov->device_size - total_chunks;
	ov->device_allocated = total_chunks;
	ov->device_unallocated = (int64_t)unused;
	ov->used = total_used;
	ov->data_ratio = l_data ? (double)raw.data_chunks / (double)l_data : 0.0;
	ov->metadata_ratio = mixed ? ov->data_ratio :
			     l_metadata ? (double)raw.metadata_chunks / (double)l_metadata : 0.0;
	if (ov->data_ratio > 0)
		ov->free_estimated = double_to_u64((double)(raw.data_chunks - raw.data_used) /
						   ov->data_ratio);
	if (mixed && in->have_global_reserve)
		ov->free_estimated -= in->global_reserve - in->global_reserve_used;
	ov->free_min = ov->free_estimated;
	/* progs compares unsigned: a negative "unallocated" counts as large. */
	if (unused >= SZ_16M && ov->data_ratio > 0) {
		ov->free_estimated = double_to_u64((double)ov->free_estimated +
						   (double)unused / ov->data_ratio);
		ov->free_min = double_to_u64((double)ov->free_min + (double)unused / raw.max_ratio);
	}
	multiple_profiles(in, ov->multiple_profiles, sizeof(ov->multiple_profiles));
	return 0;
}

/*
 * Runs chunks of @type until ENOSPC on @sim; adds their logical size to *@logical.
 * -EINVAL (a profile the model does not take) counts as nothing allocatable.
 */
static int fill(struct bx_alloc_sim *sim, uint64_t type, uint64_t *logical)
{
	struct bx_alloc_chunk chunk;
	int ret;

	for (;;) {
		ret = bx_alloc_sim_step(sim, type, &chunk);
		if (ret == -ENOSPC)
			return 0;
		if (ret)
			return ret;
		*logical += chunk.length;
	}
}

/* Unallocated bytes of every device in @sim, into @out. */
static void sim_snapshot(const struct bx_alloc_sim *sim, size_t nr, uint64_t *out)
{
	for (size_t i = 0; i < nr; i++)
		out[i] = bx_alloc_sim_unallocated(sim, i);
}

/*
 * Data chunks until ENOSPC (logical bytes into *@data), and the metadata
 * chunk the kernel makes on the way when bx_kernel_metadata_must_grow()
 * (without room for one, the data stops there): its logical bytes into
 * *@grown, the bytes it took of each device into @grown_devs (one per
 * device; zero without it).
 */
static int fill_data(const struct bx_snapshot *in, const struct bx_usage_report *rep,
		     const struct bx_snap_model *m, struct bx_alloc_sim *sim, uint64_t *data,
		     uint64_t *grown, uint64_t *grown_devs)
{
	struct bx_alloc_chunk chunk;
	int ret;

	*grown = 0;
	memset(grown_devs, 0, m->nr * sizeof(*grown_devs));
	for (;;) {
		if (!*grown && bx_kernel_metadata_must_grow(in, rep->mixed, rep->metadata_used,
							    rep->metadata_size, rep->metadata_type,
							    m, sim)) {
			sim_snapshot(sim, m->nr, grown_devs);
			ret = bx_alloc_sim_step(sim, rep->metadata_type, &chunk);
			if (ret) {
				/* No room for it: the writers' reservations fail, ENOSPC. */
				memset(grown_devs, 0, m->nr * sizeof(*grown_devs));
				return ret == -ENOSPC ? 0 : ret;
			}
			for (size_t i = 0; i < m->nr; i++)
				grown_devs[i] -= bx_alloc_sim_unallocated(sim, i);
			*grown = chunk.length;
		}
		ret = bx_alloc_sim_step(sim, rep->data_type, &chunk);
		if (ret == -ENOSPC)
			return 0;
		if (ret)
			return ret;
		*data += chunk.length;
	}
}

static struct bx_usage_class *class_of(struct bx_usage_report *rep, uint64_t hint)
{
	for (size_t i = 0; i < rep->nr_classes; i++)
		if (rep->classes[i].hint == hint)
			return &rep->classes[i];
	return NULL;
}

static int class_cmp(const void *a, const void *b)
{
	const struct bx_usage_class *x = a, *y = b;

	return x->hint < y->hint ? -1 : x->hint > y->hint;
}

/* The table's columns: the space infos but the global reserve, in their order. */
static int fill_types(const struct bx_snapshot *in, struct bx_usage_report *rep)
{
	rep->types = calloc(in->nr_spaces ? in->nr_spaces : 1, sizeof(*rep->types));
	if (!rep->types)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < in->nr_spaces; i++)
		if (!(in->spaces[i].flags & BX_SPACE_INFO_GLOBAL_RSV))
			rep->types[rep->nr_types++] = in->spaces[i];
	rep->allocated = calloc(in->nr_devs * rep->nr_types + 1, sizeof(*rep->allocated));
	return rep->allocated ? 0 : bx_error(-ENOMEM, "out of memory");
}

/*
 * The type and profile of the chunk at @logical; 0 when there is none.
 * @logicals: the chunks' addresses alone, in order (a search over them stays
 * in the cache, one over the chunks would not: a 1 PiB array has 266,000).
 */
static uint64_t chunk_type_at(const struct bx_snapshot *in, const uint64_t *logicals,
			      uint64_t logical)
{
	size_t lo = 0, hi = in->nr_chunks;

	/* chunks are sorted by logical */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (logicals[mid] < logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < in->nr_chunks && logicals[lo] == logical)
		return in->chunks[lo].type;
	return 0;
}

/* Adds an extent of a chunk of @type to row @i. */
static void row_add_extent(struct bx_usage_report *rep, size_t i, uint64_t type, uint64_t length)
{
	struct bx_usage_dev_row *row = &rep->dev_rows[i];
	uint64_t *allocated = rep->allocated + i * rep->nr_types;

	for (size_t k = 0; k < rep->nr_types; k++)
		if (rep->types[k].flags == type)
			allocated[k] += length;
	if (type & BTRFS_BLOCK_GROUP_DATA)
		row->data += length;
	if ((type & BTRFS_BLOCK_GROUP_DATA) &&
	    (row->hint == BX_HINT_METADATA_ONLY || row->hint == BX_HINT_METADATA_PREFERRED))
		rep->data_on_metadata_devices += length;
	else if (type & BTRFS_BLOCK_GROUP_METADATA)
		row->metadata += length;
	else if (type & BTRFS_BLOCK_GROUP_SYSTEM)
		row->system += length;
}

/* Classes and per-device rows: sizes, holes, and device bytes per chunk type. */
static int fill_tables(const struct bx_snapshot *in, const struct bx_snap_model *m,
		       struct bx_usage_report *rep)
{
	uint64_t *logicals;
	int ret = fill_types(in, rep);

	if (ret)
		return ret;
	rep->classes = calloc(in->nr_devs ? in->nr_devs : 1, sizeof(*rep->classes));
	rep->dev_rows = calloc(in->nr_devs ? in->nr_devs : 1, sizeof(*rep->dev_rows));
	logicals = calloc(in->nr_chunks + 1, sizeof(*logicals));
	if (!rep->classes || !rep->dev_rows || !logicals) {
		free(logicals);
		return bx_error(-ENOMEM, "out of memory");
	}
	for (size_t c = 0; c < in->nr_chunks; c++)
		logicals[c] = in->chunks[c].logical;
	rep->nr_dev_rows = in->nr_devs;
	for (size_t i = 0; i < in->nr_devs; i++) {
		const struct bx_snap_dev *d = &in->devs[i];
		struct bx_usage_dev_row *row = &rep->dev_rows[i];
		struct bx_usage_class *cl = class_of(rep, d->hint);
		uint64_t in_extents = 0;

		row->devid = d->devid;
		row->path = d->path;
		row->hint = d->hint;
		row->missing = d->missing;
		row->seed = d->seed;
		row->size = d->total_bytes;
		row->allocated = rep->allocated + i * rep->nr_types;
		if (!d->missing && d->device_size > d->total_bytes)
			row->slack = d->device_size - d->total_bytes;
		for (size_t e = 0; e < d->nr_extents; e++) {
			const struct bx_snap_extent *x = &d->extents[e];

			in_extents += x->length;
			row_add_extent(rep, i, chunk_type_at(in, logicals, x->chunk_offset), x->length);
		}
		row->unallocated = d->total_bytes > in_extents ? d->total_bytes - in_extents : 0;
		if (!cl) {
			cl = &rep->classes[rep->nr_classes++];
			cl->hint = d->hint;
		}
		cl->devices++;
		cl->size += d->total_bytes;
		if (m->devs[i].writable)
			cl->unallocated += bx_alloc_device_unallocated(&m->devs[i]);
	}
	free(logicals);
	return 0;
}

/* Per device and per class: device bytes that went from @before to @after. */
static void record_taken(const struct bx_snapshot *in, struct bx_usage_report *rep,
			 const uint64_t *before, const uint64_t *after, bool data)
{
	for (size_t i = 0; i < in->nr_devs; i++) {
		struct bx_usage_class *cl = class_of(rep, in->devs[i].hint);
		struct bx_usage_dev_row *row = &rep->dev_rows[i];
		uint64_t taken = before[i] > after[i] ? before[i] - after[i] : 0;

		if (data) {
			cl->data_allocatable += taken;
			row->data_allocatable = taken;
		} else {
			cl->metadata_allocatable += taken;
			row->metadata_allocatable = taken;
		}
	}
}

static bool has_seed(const struct bx_snapshot *in)
{
	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].seed)
			return true;
	return false;
}

/* Takes the free space of the read-only chunks on seed devices off what is free in chunks. */
static void drop_seed_chunks(const struct bx_snapshot *in, struct bx_usage_report *rep)
{
	if (!has_seed(in))
		return;		/* most filesystems: no chunk to look at */
	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_snap_chunk *c = &in->chunks[i];
		uint64_t locked = c->length > c->used ? c->length - c->used : 0;
		uint64_t *free_bytes = (c->type & BTRFS_BLOCK_GROUP_DATA) ?
				       &rep->data_free_in_chunks :
				       (c->type & BTRFS_BLOCK_GROUP_METADATA) ?
				       &rep->metadata_free_in_chunks : NULL;

		if (!free_bytes || !bx_snap_chunk_on_seed(in, c))
			continue;
		*free_bytes = *free_bytes > locked ? *free_bytes - locked : 0;
	}
}

static void space_sums(const struct bx_snapshot *in, struct bx_usage_report *rep)
{
	for (size_t i = 0; i < in->nr_spaces; i++) {
		const struct bx_snap_space *s = &in->spaces[i];

		if (s->flags & BX_SPACE_INFO_GLOBAL_RSV)
			continue;
		if (bx_type_is_mixed(s->flags))
			rep->mixed = true;
		if (s->flags & BTRFS_BLOCK_GROUP_DATA) {
			rep->data_size += s->total_bytes;
			rep->data_used += s->used_bytes;
		} else if (s->flags & BTRFS_BLOCK_GROUP_METADATA) {
			rep->metadata_size += s->total_bytes;
			rep->metadata_used += s->used_bytes;
		}
	}
}

/* "data to single, metadata to dup" into @buf: what the balance of @in converts. */
static void describe_targets(const struct bx_snapshot *in, char *buf, size_t len)
{
	static const char *const kinds[BX_SNAP_NR_KINDS] = { "data", "metadata", "system" };
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < BX_SNAP_NR_KINDS && used < len; k++)
		if (in->balance_target[k])
			used += (size_t)snprintf(buf + used, len - used, "%s%s to %s",
						 used ? ", " : "", kinds[k],
						 bx_profile_name(in->balance_target[k]));
}

static void warn_about(const struct bx_snapshot *in, struct bx_usage_report *rep)
{
	char room[32], need[32], used[32], taken[32];

	bx_pretty_size(rep->metadata_room, 0, room, sizeof(room));
	bx_pretty_size(rep->metadata_needed, 0, need, sizeof(need));
	bx_pretty_size(rep->mixed ? rep->data_used : rep->metadata_used, 0, used, sizeof(used));
	bx_pretty_size(rep->data_may_take_metadata_room, 0, taken, sizeof(taken));
	if (rep->warnings & BX_USAGE_W_HINTS_IGNORED)
		bx_warn("the running kernel ignores allocation hints: the model runs without them%s",
			(rep->model_flags & BX_ALLOC_STRICT) ?
			", so --strict changes nothing; Free (strict) is what strict hints would give" :
			"");
	if (rep->warnings & BX_USAGE_W_BALANCE_TARGET) {
		char targets[128];

		describe_targets(in, targets, sizeof(targets));
		bx_warn("a%s balance converts %s: the kernel gives new chunks those profiles until "
			"it finishes or is cancelled, and the model does too",
			in->balance == BX_SNAP_BALANCE_INTERRUPTED ? "n interrupted" :
			in->balance == BX_SNAP_BALANCE_PAUSED ? " paused" : " running", targets);
	}
	if (rep->warnings & BX_USAGE_W_METADATA_LOW)
		bx_warn("metadata room %s is less than the %s that 50%% growth of the metadata "
			"(%s used) needs", room, need, used);
	if (rep->warnings & BX_USAGE_W_DATA_ON_META_DEVS)
		bx_warn("data chunks can take %s of the metadata_preferred devices' unallocated "
			"space once the other devices are full; metadata_only keeps it for metadata",
			taken);
	/* Said, not a warning bit: it is about this reading, not the filesystem. */
	if (rep->mixed && !in->have_global_reserve)
		bx_warn("not mounted, the global reserve is not known: Free (estimated) and Free "
			"(model) do not subtract it, as btrfs-progs and a mounted filesystem do "
			"with mixed block groups");
}

int bx_usage_compute(const struct bx_snapshot *in, unsigned int flags,
		     struct bx_usage_report *rep)
{
	struct bx_alloc_sim *sim = NULL;
	uint64_t *before = NULL, *after = NULL, *grown_devs = NULL, metadata_grown;
	uint32_t alloc_flags = 0;
	size_t nr_writable = 0;
	struct bx_snap_model m = { 0 };
	uint64_t strict_new = 0;
	bool any_hint = false;
	int ret;

	memset(rep, 0, sizeof(*rep));
	if (!in->nr_devs)
		return bx_error(-EINVAL, "no devices");
	ret = compute_overall(in, &rep->overall);
	if (ret)
		return ret;
	space_sums(in, rep);

	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].hint != BX_HINT_DATA_PREFERRED)
			any_hint = true;
	/* Without any hint set, honouring and ignoring them is the same allocator. */
	rep->hints_honoured = (in->hints_effective || !any_hint) &&
			      !(flags & BX_USAGE_IGNORE_HINTS);
	if (!rep->hints_honoured)
		alloc_flags |= BX_ALLOC_IGNORE_HINTS;
	if (flags & BX_USAGE_STRICT)
		alloc_flags |= BX_ALLOC_STRICT;
	/* The hint kernel's own order only where the hints are modelled at all. */
	alloc_flags |= rep->hints_honoured ? bx_snap_alloc_flags(in) :
			bx_kernel_alloc_flags(&in->kernel) & ~BX_ALLOC_DATA_ONLY_LAST;
	rep->model_flags = alloc_flags;
	if (!in->hints_effective && any_hint && !(flags & BX_USAGE_IGNORE_HINTS))
		rep->warnings |= BX_USAGE_W_HINTS_IGNORED;


	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].writable && !in->devs[i].missing)
			nr_writable++;
	if (rep->mixed) {
		uint64_t kind = BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA;

		rep->data_type = bx_snap_new_chunk_type(in, in->spaces, in->nr_spaces, kind,
							 nr_writable);
		rep->metadata_type = rep->data_type;
	} else {
		rep->data_type = bx_snap_new_chunk_type(in, in->spaces, in->nr_spaces,
							 BTRFS_BLOCK_GROUP_DATA, nr_writable);
		rep->metadata_type = bx_snap_new_chunk_type(in, in->spaces, in->nr_spaces,
							     BTRFS_BLOCK_GROUP_METADATA,
							     nr_writable);
	}
	for (int k = 0; k < BX_SNAP_NR_KINDS; k++)
		if (in->balance && in->balance_target[k])
			rep->warnings |= BX_USAGE_W_BALANCE_TARGET;
	rep->data_free_in_chunks = rep->data_size > rep->data_used ?
				   rep->data_size - rep->data_used : 0;
	rep->metadata_free_in_chunks = rep->metadata_size > rep->metadata_used ?
				       rep->metadata_size - rep->metadata_used : 0;
	drop_seed_chunks(in, rep);
	if (rep->mixed)
		rep->metadata_free_in_chunks = rep->data_free_in_chunks;

	ret = bx_snap_model_init(in, alloc_flags, &m);
	if (ret)
		return ret;
	ret = fill_tables(in, &m, rep);
	before = calloc(m.nr, sizeof(*before));
	after = calloc(m.nr, sizeof(*after));
	grown_devs = calloc(m.nr, sizeof(*grown_devs));
	if (!ret && (!before || !after || !grown_devs))
		ret = bx_error(-ENOMEM, "out of memory");
	if (ret)
		goto out;

	/* Data first until ENOSPC, then metadata on what is left. */
	ret = bx_alloc_sim_new(m.devs, m.nr, &m.params, &sim);
	if (ret)
		goto model_error;
	sim_snapshot(sim, m.nr, before);
	ret = fill_data(in, rep, &m, sim, &rep->data_new_chunks, &metadata_grown, grown_devs);
	sim_snapshot(sim, m.nr, after);
	for (size_t i = 0; i < m.nr; i++)
		after[i] += grown_devs[i];	/* not data's */
	record_taken(in, rep, before, after, true);
	rep->metadata_room_after_data = metadata_grown;
	if (!ret)
		ret = fill(sim, rep->metadata_type, &rep->metadata_room_after_data);
	bx_alloc_sim_free(sim);
	sim = NULL;
	if (ret)
		goto model_error;

	/* Metadata alone. */
	ret = bx_alloc_sim_new(m.devs, m.nr, &m.params, &sim);
	if (ret)
		goto model_error;
	ret = fill(sim, rep->metadata_type, &rep->metadata_room);
	sim_snapshot(sim, m.nr, after);
	record_taken(in, rep, before, after, false);
	bx_alloc_sim_free(sim);
	sim = NULL;
	if (ret)
		goto model_error;

	/* Data with every preference strict. */
	m.params.flags = (alloc_flags & ~BX_ALLOC_IGNORE_HINTS) | BX_ALLOC_STRICT;
	ret = bx_alloc_sim_new(m.devs, m.nr, &m.params, &sim);
	if (!ret)
		ret = fill_data(in, rep, &m, sim, &strict_new, &metadata_grown, grown_devs);
	bx_alloc_sim_free(sim);
	sim = NULL;
	if (ret)
		goto model_error;

	rep->free_estimated = rep->data_free_in_chunks + rep->data_new_chunks;
	rep->free_strict = rep->data_free_in_chunks + strict_new;
	if (rep->mixed && in->have_global_reserve) {
		uint64_t rsv = in->global_reserve - in->global_reserve_used;

		rep->free_estimated = rep->free_estimated > rsv ? rep->free_estimated - rsv : 0;
		rep->free_strict = rep->free_strict > rsv ? rep->free_strict - rsv : 0;
	}
	rep->have_statfs = in->have_statfs;
	rep->free_statfs = in->statfs_free;
	if (rep->mixed) {
		rep->metadata_room = rep->free_estimated;
		rep->metadata_room_after_data = 0;
	} else {
		rep->metadata_room += rep->metadata_free_in_chunks;
		rep->metadata_room_after_data += rep->metadata_free_in_chunks;
	}

	rep->metadata_needed = (rep->mixed ? rep->data_used : rep->metadata_used) / 2;
	if (rep->metadata_room < rep->metadata_needed)
		rep->warnings |= BX_USAGE_W_METADATA_LOW;
	if (rep->hints_honoured && !(flags & BX_USAGE_STRICT)) {
		struct bx_usage_class *cl = class_of(rep, BX_HINT_METADATA_PREFERRED);

		if (cl && cl->data_allocatable) {
			rep->data_may_take_metadata_room = cl->data_allocatable;
			rep->warnings |= BX_USAGE_W_DATA_ON_META_DEVS;
		}
	}
	qsort(rep->classes, rep->nr_classes, sizeof(*rep->classes), class_cmp);
	if (!(flags & BX_USAGE_QUIET))
		warn_about(in, rep);
	goto out;

model_error:
	if (ret == -EINVAL)
		ret = bx_error(ret, "the allocator model does not take chunk type 0x%llx or 0x%llx",
			       (unsigned long long)rep->data_type,
			       (unsigned long long)rep->metadata_type);
out:
	free(before);
	free(after);
	free(grown_devs);
	bx_snap_model_release(&m);
	if (ret) {
		bx_usage_report_release(rep);
		return ret;
	}
	return 0;
}
