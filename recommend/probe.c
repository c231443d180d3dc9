/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The read probe: the region, the kernel's choice of copy, timed replays. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"
#include "format/ctree.h"
#include "format/profiles.h"
#include "recommend/probe.h"

/* ---- the region ---- */

/* The index of @devid in @map's devices, added (with its stat file) when new. */
static int map_dev(struct bx_probe_map *map, const struct bx_snap_dev *d, const char *sysfs_root,
		   size_t *index)
{
	struct bx_probe_dev *grown;

	for (size_t i = 0; i < map->nr_devs; i++) {
		if (map->devs[i].devid == d->devid) {
			*index = i;
			return 0;
		}
	}
	grown = realloc(map->devs, (map->nr_devs + 1) * sizeof(*grown));
	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	map->devs = grown;
	grown = &map->devs[map->nr_devs];
	memset(grown, 0, sizeof(*grown));
	grown->devid = d->devid;
	grown->fd = -1;
	snprintf(grown->path, sizeof(grown->path), "%s", d->path);
	if (!bx_blk_stat_path(sysfs_root, d->path, grown->stat_path, sizeof(grown->stat_path)))
		grown->stat_path[0] = '\0';
	*index = map->nr_devs++;
	return 0;
}

static const struct bx_snap_dev *find_dev(const struct bx_snapshot *in, uint64_t devid)
{
	for (size_t i = 0; i < in->nr_devs; i++)
		if (in->devs[i].devid == devid)
			return &in->devs[i];
	return NULL;
}

/* Adds chunk @c of @in to the region; chunks with a missing copy are left out. */
static int add_chunk(struct bx_probe_map *map, const struct bx_snapshot *in,
		     const struct bx_snap_chunk *c, const char *sysfs_root)
{
	uint64_t length = (c->used < c->length ? c->used : c->length) / BX_PROBE_REQUEST *
			  BX_PROBE_REQUEST;
	struct bx_probe_chunk *pc, *grown;
	int ret;

	for (uint32_t s = 0; s < c->num_stripes; s++) {
		const struct bx_snap_dev *d = find_dev(in, in->stripes[c->first_stripe + s].devid);

		if (!d || d->missing)
			return 0;
	}
	if ((c->type & BTRFS_BLOCK_GROUP_RAID10) ?
	    c->sub_stripes != 2 || c->num_stripes % 2 : c->num_stripes > BTRFS_MAX_MIRRORS)
		return 0;       /* not a layout the kernel reads so */
	if (c->type & BTRFS_BLOCK_GROUP_RAID10)
		length = length / (BX_PROBE_STRIPE * (c->num_stripes / c->sub_stripes)) *
			 BX_PROBE_STRIPE * (c->num_stripes / c->sub_stripes);
	if (!length)
		return 0;
	grown = realloc(map->chunks, (map->nr_chunks + 1) * sizeof(*grown));
	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	map->chunks = grown;
	pc = &map->chunks[map->nr_chunks];
	memset(pc, 0, sizeof(*pc));
	pc->stripes = calloc(c->num_stripes, sizeof(*pc->stripes));
	if (!pc->stripes)
		return bx_error(-ENOMEM, "out of memory");
	map->nr_chunks++;
	pc->start = map->length;
	pc->length = length;
	pc->raid10 = (c->type & BTRFS_BLOCK_GROUP_RAID10) != 0;
	pc->num_stripes = c->num_stripes;
	pc->sub_stripes = pc->raid10 ? c->sub_stripes : c->num_stripes;
	for (uint32_t s = 0; s < c->num_stripes; s++) {
		const struct bx_snap_stripe *st = &in->stripes[c->first_stripe + s];

		ret = map_dev(map, find_dev(in, st->devid), sysfs_root, &pc->stripes[s].dev);
		if (ret)
			return ret;
		pc->stripes[s].devid = st->devid;
		pc->stripes[s].physical = st->physical;
	}
	if (pc->sub_stripes > map->max_copies)
		map->max_copies = pc->sub_stripes;
	map->length += length;
	return 0;
}

static int add_chunks(struct bx_probe_map *map, const struct bx_snapshot *in, uint64_t kind,
		      const char *sysfs_root)
{
	for (size_t i = 0; i < in->nr_chunks; i++) {
		const struct bx_snap_chunk *c = &in->chunks[i];
		int ret;

		/* Mixed block groups hold data too: they count as data. */
		if (!(c->type & kind) || !bx_profile_is_mirrored(c->type) || c->num_stripes < 2 ||
		    (kind != BTRFS_BLOCK_GROUP_DATA && (c->type & BTRFS_BLOCK_GROUP_DATA)))
			continue;
		map->nr_mirrored++;
		ret = add_chunk(map, in, c, sysfs_root);
		if (ret)
			return ret;
	}
	return 0;
}

static int cmp_devid(const void *a, const void *b)
{
	const struct bx_probe_dev *x = a, *y = b;

	return x->devid < y->devid ? -1 : x->devid > y->devid;
}

/* The devices in devid order, and the stripes pointing at them again. */
static void sort_devs(struct bx_probe_map *map)
{
	if (map->nr_devs)
		qsort(map->devs, map->nr_devs, sizeof(*map->devs), cmp_devid);
	for (size_t i = 0; i < map->nr_chunks; i++)
		for (uint32_t s = 0; s < map->chunks[i].num_stripes; s++)
			for (size_t d = 0; d < map->nr_devs; d++)
				if (map->devs[d].devid == map->chunks[i].stripes[s].devid)
					map->chunks[i].stripes[s].dev = d;
}

int bx_probe_map_build(const struct bx_snapshot *in, const char *sysfs_root,
		       struct bx_probe_map *map)
{
	int ret;

	memset(map, 0, sizeof(*map));
	map->sectorsize = in->sectorsize ? in->sectorsize : 4096;
	ret = add_chunks(map, in, BTRFS_BLOCK_GROUP_DATA, sysfs_root);
	if (!ret && !map->nr_mirrored) {
		map->metadata = true;
		ret = add_chunks(map, in, BTRFS_BLOCK_GROUP_METADATA, sysfs_root);
	}
	sort_devs(map);
	if (ret)
		bx_probe_map_free(map);
	return ret;
}

void bx_probe_map_free(struct bx_probe_map *map)
{
	for (size_t i = 0; i < map->nr_chunks; i++)
		free(map->chunks[i].stripes);
	for (size_t i = 0; i < map->nr_devs; i++)
		if (map->devs[i].fd >= 0)
			close(map->devs[i].fd);
	free(map->chunks);
	free(map->devs);
	memset(map, 0, sizeof(*map));
}

/* ---- the kernel's choice of copy ---- */

static const struct bx_probe_chunk *chunk_at(const struct bx_probe_map *map, uint64_t offset)
{
	size_t lo = 0, hi = map->nr_chunks;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (map->chunks[mid].start <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return &map->chunks[lo];
}

/* Round-robin: the copies sorted by devid, one after @min_contig bytes of reading. */
static uint32_t round_robin_copy(const struct bx_probe_stripe *copies, uint32_t nr,
				 uint64_t min_contig, uint32_t sectorsize, uint64_t blocks_read)
{
	uint64_t per_dev = min_contig / sectorsize;
	uint32_t order[BTRFS_MAX_MIRRORS], rank;

	for (uint32_t i = 0; i < nr; i++) {
		uint32_t j = i;

		for (; j > 0 && copies[order[j - 1]].devid > copies[i].devid; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	rank = per_dev ? (uint32_t)((blocks_read / per_dev) % nr) : 0;
	return order[rank];
}

static uint32_t pick_copy(const struct bx_probe_stripe *copies, uint32_t nr,
			  const struct bx_rp_value *policy, unsigned int pid, uint32_t sectorsize,
			  uint64_t blocks_read)
{
	switch (policy->kind) {
	case BX_RP_ROUND_ROBIN:
		return round_robin_copy(copies, nr, policy->has_arg ? policy->arg : 256 * 1024,
					sectorsize, blocks_read);
	case BX_RP_DEVID:
		for (uint32_t i = 0; i < nr; i++)
			if (copies[i].devid == policy->arg)
				return i;
		return 0;
	default:
		return pid % nr;
	}
}

void bx_probe_route(const struct bx_probe_map *map, const struct bx_rp_value *policy,
		    uint64_t offset, unsigned int pid, uint64_t blocks_read, size_t *dev,
		    uint64_t *physical)
{
	const struct bx_probe_chunk *c = chunk_at(map, offset);
	uint64_t in_chunk = offset - c->start, in_dev = in_chunk;
	const struct bx_probe_stripe *copies = c->stripes;
	uint32_t pick;

	if (c->raid10) {
		uint64_t factor = c->num_stripes / c->sub_stripes;
		uint64_t stripe_nr = in_chunk / BX_PROBE_STRIPE;

		copies += (stripe_nr % factor) * c->sub_stripes;
		in_dev = stripe_nr / factor * BX_PROBE_STRIPE + in_chunk % BX_PROBE_STRIPE;
	}
	pick = pick_copy(copies, c->sub_stripes, policy, pid, map->sectorsize, blocks_read);
	*dev = copies[pick].dev;
	*physical = copies[pick].physical + in_dev;
}

/* ---- replays ---- */

int bx_probe_result_init(struct bx_probe_result *r, size_t nr_devs)
{
	memset(r, 0, sizeof(*r));
	r->dev_bytes = calloc(nr_devs + 1, sizeof(uint64_t));
	r->other_read_bytes = calloc(nr_devs + 1, sizeof(uint64_t));
	r->other_write_bytes = calloc(nr_devs + 1, sizeof(uint64_t));
	if (!r->dev_bytes || !r->other_read_bytes || !r->other_write_bytes) {
		bx_probe_result_free(r);
		return bx_error(-ENOMEM, "out of memory");
	}
	return 0;
}

void bx_probe_result_free(struct bx_probe_result *r)
{
	free(r->dev_bytes);
	free(r->other_read_bytes);
	free(r->other_write_bytes);
	memset(r, 0, sizeof(*r));
}

int bx_probe_open(struct bx_probe_map *map)
{
	for (size_t i = 0; i < map->nr_devs; i++) {
		struct bx_probe_dev *d = &map->devs[i];

		if (d->fd >= 0)
			continue;
		d->fd = open(d->path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NONBLOCK);
		if (d->fd < 0)
			return bx_error(-errno, "%s: cannot open device %llu for reading: %m",
					d->path, (unsigned long long)d->devid);
	}
	return 0;
}

/* A replay's bytes per reader and device: every read, the warm ones, as scored. */
#define BYTES_KINDS 3

/* What the readers of one replay share. */
struct replay {
	const struct bx_probe_map *map;
	const struct bx_probe_workload *w;
	const struct bx_rp_value *policy;
	unsigned int pid_base, pass;
	double start, deadline;
	const volatile sig_atomic_t *cancel;
	atomic_uint_fast64_t blocks_read;    /* round-robin's counter */
	atomic_int failed;
	pthread_mutex_t lock;                /* the first error, the sums */
	int error;
	size_t error_dev;                    /* SIZE_MAX: not a read */
	uint64_t error_physical;
	uint64_t *dev_bytes;
	double last_end;
};

struct reader {
	struct replay *rp;
	unsigned int index;
	pthread_t thread;
	uint64_t *dev_bytes;            /* every read, per device */
	uint64_t *warm_bytes;           /* ... but the cold ones (sequential readers) */
	double cold_seconds;            /* the cold reads took */
	double seconds;                 /* from the replay's start to its last read's end */
};

static uint64_t next_random(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 2685821657736338717ULL;
}

/* Where reader @index's @n-th read of this replay is. */
static uint64_t read_offset(const struct replay *rp, unsigned int index, uint64_t n,
			    uint64_t *state)
{
	uint64_t requests = rp->map->length / BX_PROBE_REQUEST;
	uint64_t slice = requests / rp->w->readers;

	if (rp->w->random)
		return next_random(state) % requests * BX_PROBE_REQUEST;
	if (!slice)
		slice = 1;
	/* Each pass starts a seventh of the slice further on. */
	return (index * slice + (n + (uint64_t)rp->pass * (slice / 7 + 1)) % slice) % requests *
	       BX_PROBE_REQUEST;
}

/* The first failure, for the main thread's message (readers record none). */
static void reader_failed(struct replay *rp, int err, size_t dev, uint64_t physical)
{
	pthread_mutex_lock(&rp->lock);
	if (!rp->error) {
		rp->error = err;
		rp->error_dev = dev;
		rp->error_physical = physical;
	}
	rp->failed = 1;
	pthread_mutex_unlock(&rp->lock);
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct replay *rp = rd->rp;
	uint64_t state = ((uint64_t)rp->pass * 131 + rd->index + 1) * 0x9e3779b97f4a7c15ULL;
	void *buf = NULL;
	double begun, end;

	if (posix_memalign(&buf, 4096, BX_PROBE_REQUEST)) {
		reader_failed(rp, -ENOMEM, SIZE_MAX, 0);
		return NULL;
	}
	for (uint64_t n = 0; !rp->failed && !(rp->cancel && *rp->cancel) &&
			     (begun = bx_monotonic_seconds()) < rp->deadline; n++) {
		uint64_t offset = read_offset(rp, rd->index, n, &state), physical;
		uint64_t blocks = atomic_fetch_add(&rp->blocks_read,
						   BX_PROBE_REQUEST / rp->map->sectorsize);
		size_t dev;
		ssize_t got;

		bx_probe_route(rp->map, rp->policy, offset, rp->pid_base + rd->index, blocks, &dev,
			       &physical);
		got = pread(rp->map->devs[dev].fd, buf, BX_PROBE_REQUEST, (off_t)physical);
		if (got != (ssize_t)BX_PROBE_REQUEST) {
			reader_failed(rp, got < 0 ? -errno : -EIO, dev, physical);
			break;
		}
		/*
		 * A sequential reader's first read from a device seeks to its slice: a
		 * long job pays that once, a replay of a fraction of a second pays it
		 * in full. Random reads seek every time; none of theirs is colder.
		 */
		if (!rp->w->random && !rd->dev_bytes[dev])
			rd->cold_seconds += bx_monotonic_seconds() - begun;
		else
			rd->warm_bytes[dev] += BX_PROBE_REQUEST;
		rd->dev_bytes[dev] += BX_PROBE_REQUEST;
	}
	end = bx_monotonic_seconds();
	rd->seconds = end - rp->start;
	pthread_mutex_lock(&rp->lock);
	if (end > rp->last_end)
		rp->last_end = end;
	for (size_t i = 0; i < rp->map->nr_devs; i++)
		rp->dev_bytes[i] += rd->dev_bytes[i];
	pthread_mutex_unlock(&rp->lock);
	free(buf);
	return NULL;
}

/* The devices' counters now, for what others did meanwhile (zeros without a stat file). */
static void sample_counters(const struct bx_probe_map *map, struct bx_blk_counters *c)
{
	for (size_t i = 0; i < map->nr_devs; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		if (map->devs[i].stat_path[0] && bx_blk_stat_read(map->devs[i].stat_path, &c[i]))
			bx_error_clear();       /* a device that vanished fails its reads */
	}
}

static void add_others(const struct bx_probe_map *map, const struct bx_blk_counters *before,
		       const struct bx_blk_counters *after, const uint64_t *ours,
		       struct bx_probe_result *r)
{
	for (size_t i = 0; i < map->nr_devs; i++) {
		uint64_t read = after[i].read_bytes - before[i].read_bytes;

		r->other_read_bytes[i] += read > ours[i] ? read - ours[i] : 0;
		r->other_write_bytes[i] += after[i].write_bytes - before[i].write_bytes;
	}
}

static int replay_error(const struct replay *rp)
{
	const struct bx_probe_dev *d;

	if (rp->error_dev == SIZE_MAX)
		return bx_error(rp->error, "the probe's readers: %s", strerror(-rp->error));
	d = &rp->map->devs[rp->error_dev];
	return bx_error(rp->error, "%s: device %llu: a probe read of 64KiB at %llu failed: %s",
			d->path, (unsigned long long)d->devid,
			(unsigned long long)rp->error_physical,
			rp->error == -EIO ? "input/output error or short read" : strerror(-rp->error));
}

uint64_t bx_probe_equal_parts(const uint64_t *bytes, unsigned int readers, size_t nr_devs)
{
	double least = -1;

	for (size_t d = 0; d < nr_devs; d++) {
		double share = 0, dev_bytes = 0;

		for (unsigned int i = 0; i < readers; i++) {
			const uint64_t *row = bytes + (size_t)i * nr_devs;
			uint64_t total = 0;

			for (size_t k = 0; k < nr_devs; k++)
				total += row[k];
			if (total)
				share += (double)row[d] / (double)total / readers;
			dev_bytes += (double)row[d];
		}
		if (share > 0 && (least < 0 || dev_bytes / share < least))
			least = dev_bytes / share;
	}
	return least < 0 ? 0 : (uint64_t)least;
}

void bx_probe_warm_row(const uint64_t *all, const uint64_t *warm, size_t nr_devs, double seconds,
		       double cold_seconds, double replay_seconds, uint64_t *row)
{
	double warm_seconds = seconds - cold_seconds;
	uint64_t warm_total = 0;

	for (size_t d = 0; d < nr_devs; d++)
		warm_total += warm[d];
	for (size_t d = 0; d < nr_devs; d++)
		row[d] = warm_total && warm_seconds > 0 ?
			 (uint64_t)((double)warm[d] * replay_seconds / warm_seconds) : all[d];
}

/* Every reader's row at its warm pace, into @rows, as a job of equal parts of them. */
static uint64_t scored_bytes(const struct reader *readers, unsigned int nr, size_t nr_devs,
			     double replay_seconds, uint64_t *rows)
{
	for (unsigned int i = 0; i < nr; i++)
		bx_probe_warm_row(readers[i].dev_bytes, readers[i].warm_bytes, nr_devs,
				  readers[i].seconds, readers[i].cold_seconds, replay_seconds,
				  rows + (size_t)i * nr_devs);
	return bx_probe_equal_parts(rows, nr, nr_devs);
}

int bx_probe_replay(struct bx_probe_map *map, const struct bx_probe_workload *w,
		    const struct bx_rp_value *policy, unsigned int pid_base, unsigned int pass,
		    double seconds, const volatile sig_atomic_t *cancel, struct bx_probe_result *r)
{
	struct bx_blk_counters *before = calloc(map->nr_devs + 1, sizeof(*before));
	struct bx_blk_counters *after = calloc(map->nr_devs + 1, sizeof(*after));
	struct reader readers[BX_PROBE_MAX_READERS];
	/* each reader's row of every read, of the warm ones, and scored: BYTES_KINDS blocks */
	size_t cells = (size_t)w->readers * map->nr_devs;
	uint64_t *reader_bytes = calloc(BYTES_KINDS * cells + 1, sizeof(uint64_t));
	struct replay rp = {
		.map = map, .w = w, .policy = policy, .pid_base = pid_base, .pass = pass,
		.cancel = cancel, .lock = PTHREAD_MUTEX_INITIALIZER,
	};
	unsigned int started = 0;
	double start;
	int ret = 0;

	if (w->readers == 0 || w->readers > BX_PROBE_MAX_READERS || !map->length)
		ret = bx_error(-EINVAL, "no reads to replay");
	rp.dev_bytes = calloc(map->nr_devs + 1, sizeof(uint64_t));
	if (!ret && (!before || !after || !rp.dev_bytes || !reader_bytes))
		ret = bx_error(-ENOMEM, "out of memory");
	if (ret)
		goto out;
	sample_counters(map, before);
	start = rp.start = bx_monotonic_seconds();
	rp.deadline = start + seconds;
	rp.last_end = start;
	for (; started < w->readers; started++) {
		struct reader *rd = &readers[started];

		*rd = (struct reader){ .rp = &rp, .index = started,
				       .dev_bytes = reader_bytes + (size_t)started * map->nr_devs,
				       .warm_bytes = reader_bytes + cells +
						     (size_t)started * map->nr_devs };
		if (pthread_create(&rd->thread, NULL, reader_main, rd)) {
			reader_failed(&rp, -ENOMEM, SIZE_MAX, 0);
			break;
		}
	}
	for (unsigned int i = 0; i < started; i++)
		pthread_join(readers[i].thread, NULL);
	sample_counters(map, after);
	if (rp.error) {
		ret = replay_error(&rp);
		goto out;
	}
	if (cancel && *cancel) {
		ret = bx_error(-EINTR, "the probe was interrupted");
		goto out;
	}
	r->seconds += rp.last_end - start;
	r->bytes += scored_bytes(readers, started, map->nr_devs, rp.last_end - start,
				 reader_bytes + 2 * cells);
	for (size_t i = 0; i < map->nr_devs; i++)
		r->dev_bytes[i] += rp.dev_bytes[i];
	add_others(map, before, after, rp.dev_bytes, r);
out:
	free(reader_bytes);
	free(rp.dev_bytes);
	free(before);
	free(after);
	return ret;
}
