/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The allocator model run forward: repeated decisions until ENOSPC, fast
 * enough for petabyte arrays (see the notes below and allocator.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/allocator.h"
#include "model/allocator-private.h"

/* ---- simulation ---- */

/*
 * Holes of a simulated device, with a max-tree over their lengths so that
 * "first hole at least this large" and "first largest hole" are O(log n).
 * Allocations are always taken from the front of a hole, so holes only shrink
 * and never split.
 */
struct sim_dev {
	uint64_t devid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint32_t nholes;
	uint32_t leaves;	/* power of two >= nholes */
	uint64_t *hstart;
	uint64_t *tree;		/* [leaves + i]: length of hole i; [k]: max of children */
	/* the last tree_find() answer, valid while the holes do not change */
	uint64_t cache_want;	/* 0: none */
	uint64_t cache_off;
	uint64_t cache_len;
	uint32_t cache_hole;
	bool cache_fit;
};

/* One chunk of a detection window: the devices are in win_devs. */
struct win_step {
	uint64_t stripe_size;
	uint64_t length;
	uint32_t ndevs;
	uint32_t num_stripes;
	uint32_t flags;
	uint32_t tiers;
};

struct bx_alloc_sim {
	struct bx_alloc_params params;
	uint64_t fs_total;
	size_t ndevs;
	struct sim_dev *devs;
	uint64_t *hints;
	uint64_t *devids;
	bool *writable;
	uint8_t *tiers;
	struct cand *cand;
	uint32_t *ord;
	struct bx_alloc_stripe *stripes;
	struct sorter sorter;
	/* period detection and replay, see sim_note() */
	size_t win_cap;		/* steps a window holds */
	size_t win_stride;	/* device slots per step */
	struct win_step *win;
	uint32_t *win_devs;	/* win_cap * win_stride device indices */
	size_t win_len;
	bool win_ok;
	uint64_t win_used;	/* bytes per device and chunk in this window */
	uint64_t *taken;	/* per device: bytes since the window started */
	uint64_t *bvals;	/* scratch for sim_window_repeats() */
	uint32_t *touched;	/* devices with taken > 0 */
	size_t ntouched;
	uint64_t max_taken;
	size_t at_max;		/* touched devices with taken == max_taken */
	uint64_t replay_left;	/* chunks still to replay */
	size_t replay_pos;
	size_t replay_len;
	/* per-type state, recomputed when the type changes */
	bool have_type;
	uint64_t type;
	struct bx_alloc_limits lim;
	bool tiered;
	bool unknown;
	uint32_t best_tier;
};

static void tree_set(struct sim_dev *d, uint32_t hole, uint64_t len)
{
	size_t k = d->leaves + hole;

	d->cache_want = 0;
	d->tree[k] = len;
	for (k >>= 1; k; k >>= 1) {
		uint64_t l = d->tree[2 * k], r = d->tree[2 * k + 1];

		d->tree[k] = l > r ? l : r;
	}
}

/* find_free_dev_extent() on the tree; *len is 0 when there is no hole. */
static bool tree_find(const struct sim_dev *d, uint64_t want, uint32_t *hole,
		      uint64_t *start, uint64_t *len)
{
	size_t k = 1;
	bool fit;

	if (!d->nholes || d->tree[1] == 0) {
		*hole = 0;
		*start = BX_ALLOC_RESERVED;
		*len = 0;
		return false;
	}
	fit = d->tree[1] >= want;
	while (k < d->leaves) {
		if (fit)
			k = d->tree[2 * k] >= want ? 2 * k : 2 * k + 1;
		else
			k = d->tree[2 * k] >= d->tree[2 * k + 1] ? 2 * k : 2 * k + 1;
	}
	*hole = (uint32_t)(k - d->leaves);
	*start = d->hstart[*hole];
	*len = d->tree[k];
	return fit;
}

/* tree_find(), remembered until the device's holes change. */
static bool dev_find(struct sim_dev *d, uint64_t want, uint32_t *hole, uint64_t *start,
		     uint64_t *len)
{
	if (d->cache_want != want) {
		d->cache_fit = tree_find(d, want, &d->cache_hole, &d->cache_off, &d->cache_len);
		d->cache_want = want;
	}
	*hole = d->cache_hole;
	*start = d->cache_off;
	*len = d->cache_len;
	return d->cache_fit;
}

void bx_alloc_sim_free(struct bx_alloc_sim *sim)
{
	size_t i;

	if (!sim)
		return;
	for (i = 0; sim->devs && i < sim->ndevs; i++) {
		free(sim->devs[i].hstart);
		free(sim->devs[i].tree);
	}
	free(sim->devs);
	free(sim->hints);
	free(sim->devids);
	free(sim->writable);
	free(sim->tiers);
	free(sim->cand);
	free(sim->ord);
	free(sim->stripes);
	free(sim->win);
	free(sim->win_devs);
	free(sim->taken);
	free(sim->bvals);
	free(sim->touched);
	alloc_sorter_free(&sim->sorter);
	free(sim);
}

static int sim_dev_init(struct sim_dev *sd, const struct bx_alloc_device *d)
{
	struct bx_alloc_hole *h = NULL;
	size_t n = d->nr_holes, i;

	sd->devid = d->devid;
	sd->total_bytes = d->total_bytes;
	sd->bytes_used = d->bytes_used;
	if (n) {
		h = malloc(n * sizeof(*h));
		if (!h)
			return -ENOMEM;
		memcpy(h, d->holes, n * sizeof(*h));
		for (i = 0; i < n; i++)
			if (h[i].start + h[i].len < h[i].start)
				h[i].len = UINT64_MAX - h[i].start;
		n = alloc_normalize_holes(h, n, d->total_bytes);
	}
	if (n > UINT32_MAX / 4) {
		free(h);
		return -EINVAL;
	}
	sd->nholes = (uint32_t)n;
	sd->leaves = 1;
	while (sd->leaves < n)
		sd->leaves *= 2;
	sd->hstart = malloc((n ? n : 1) * sizeof(*sd->hstart));
	sd->tree = calloc(2 * (size_t)sd->leaves, sizeof(*sd->tree));
	if (!sd->hstart || !sd->tree) {
		free(h);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		sd->hstart[i] = h[i].start;
		sd->tree[sd->leaves + i] = h[i].len;
	}
	for (i = sd->leaves - 1; i >= 1; i--) {
		uint64_t l = sd->tree[2 * i], r = sd->tree[2 * i + 1];

		sd->tree[i] = l > r ? l : r;
	}
	free(h);
	return 0;
}

int bx_alloc_sim_new(const struct bx_alloc_device *devs, size_t nr_devs,
		     const struct bx_alloc_params *params, struct bx_alloc_sim **simp)
{
	struct bx_alloc_sim *sim;
	size_t i, n1 = nr_devs + 1;
	int ret;

	*simp = NULL;
	if (nr_devs > UINT32_MAX / 4)
		return -EINVAL;
	sim = calloc(1, sizeof(*sim));
	if (!sim)
		return -ENOMEM;
	if (params)
		sim->params = *params;
	sim->fs_total = sim->params.fs_total_bytes ? sim->params.fs_total_bytes :
			alloc_writable_total(devs, nr_devs);
	sim->ndevs = nr_devs;
	sim->devs = calloc(n1, sizeof(*sim->devs));
	sim->hints = calloc(n1, sizeof(*sim->hints));
	sim->devids = calloc(n1, sizeof(*sim->devids));
	sim->writable = calloc(n1, sizeof(*sim->writable));
	sim->tiers = calloc(n1, sizeof(*sim->tiers));
	sim->cand = calloc(n1, sizeof(*sim->cand));
	sim->ord = calloc(n1, sizeof(*sim->ord));
	sim->stripes = calloc(2 * n1, sizeof(*sim->stripes));
	sim->win_stride = n1;
	sim->win_cap = n1 + 2;
	if (sim->win_cap * sim->win_stride > (1U << 20))
		sim->win_cap = (1U << 20) / sim->win_stride + 1;
	sim->win = calloc(sim->win_cap, sizeof(*sim->win));
	sim->win_devs = calloc(sim->win_cap * sim->win_stride, sizeof(*sim->win_devs));
	sim->taken = calloc(n1, sizeof(*sim->taken));
	sim->bvals = calloc(n1, sizeof(*sim->bvals));
	sim->touched = calloc(n1, sizeof(*sim->touched));
	if (!sim->devs || !sim->hints || !sim->devids || !sim->writable || !sim->tiers ||
	    !sim->cand || !sim->ord || !sim->stripes || !sim->win || !sim->win_devs ||
	    !sim->taken || !sim->bvals || !sim->touched ||
	    alloc_sorter_init(&sim->sorter, nr_devs, sim->params.flags & BX_ALLOC_SORT_PRE_6_9)) {
		bx_alloc_sim_free(sim);
		return -ENOMEM;
	}
	for (i = 0; i < nr_devs; i++) {
		ret = sim_dev_init(&sim->devs[i], &devs[i]);
		if (ret) {
			bx_alloc_sim_free(sim);
			return ret;
		}
		sim->hints[i] = devs[i].hint;
		sim->devids[i] = devs[i].devid;
		sim->writable[i] = devs[i].writable;
	}
	*simp = sim;
	return 0;
}

/*
 * Period detection. The decision for a chunk depends only on the candidate
 * set, which candidates fit the wanted extent, the tiers, and the comparison
 * outcomes of the (tier, largest hole, total_avail) keys. Suppose that over a
 * window of T chunks every chosen device fit, every device that was used lost
 * the same D bytes and the others nothing, and no used device crossed or met
 * an unused one that also fits (comparison signs equal at both ends, so,
 * values being monotonic, in between too). Then the state at
 * the end compares exactly like the state at the start, the next T decisions
 * are the same T decisions, and so on for m more windows as long as the used
 * devices keep fitting to the end (their current first-fitting hole is
 * checked) and keep their comparison signs. Those chunks are replayed without sorting;
 * only the physical offsets are worked out, from the holes as they are.
 */
static void sim_window_reset(struct bx_alloc_sim *sim)
{
	size_t i;

	for (i = 0; i < sim->ntouched; i++)
		sim->taken[sim->touched[i]] = 0;
	sim->ntouched = 0;
	sim->max_taken = 0;
	sim->at_max = 0;
	sim->win_len = 0;
	sim->win_ok = true;
}

/*
 * How many allocations of @used bytes device @a can take, from the front of
 * its first fitting hole and then of the next ones, and still have a hole of
 * @want bytes left; stops counting beyond @enough.
 */
static uint64_t fitting_allocations(const struct sim_dev *a, uint64_t want, uint64_t used,
				    uint64_t enough)
{
	uint64_t off, len, cnt = 0;
	uint32_t hole, i;

	if (!tree_find(a, want, &hole, &off, &len))
		return 0;
	for (i = hole; i < a->nholes && cnt <= enough; i++) {
		len = a->tree[a->leaves + i];
		if (len >= want)
			cnt += (len - want) / used + 1;
	}
	/* After all of them no hole fits any more: one fewer keeps it fitting. */
	return cnt - 1;
}

/* How many more times the window can be replayed (0: not a period). */
static uint64_t sim_window_repeats(struct bx_alloc_sim *sim)
{
	const uint64_t want = sim->lim.dev_extent_want, min = sim->lim.dev_extent_min;
	const uint64_t d_bytes = sim->max_taken, used = sim->win_used;
	const uint64_t per_window = d_bytes / used;	/* allocations per device */
	const struct win_step *last = &sim->win[sim->win_len - 1];
	const uint32_t *last_devs = &sim->win_devs[(sim->win_len - 1) * sim->win_stride];
	uint64_t m = UINT64_MAX, *bv = sim->bvals;
	size_t i, j, nb = 0;

	/* The unused devices that fit (the others cannot compare differently). */
	for (j = 0; j < sim->ndevs; j++) {
		const struct sim_dev *b = &sim->devs[j];

		if (sim->taken[j] || !sim->writable[j] ||
		    (sim->tiered && sim->tiers[j] == BX_TIER_NEVER) ||
		    b->bytes_used >= b->total_bytes || !b->nholes || b->tree[1] < want ||
		    b->total_bytes - b->bytes_used < min)
			continue;
		bv[nb++] = b->total_bytes - b->bytes_used;
	}

	/*
	 * Every pair of a used and an unused device: the same comparison at both
	 * ends of the window (the value went from av + D to av; it crossed or
	 * met bv iff av <= bv <= av + D), and above bv through the whole
	 * replay if above it now. Devices of different tiers count too: a
	 * non-raid1 profile compares the taken tiers by space. The devices of
	 * the last chunk go first: in a round-robin that is not complete yet,
	 * they are the ones that just crossed.
	 */
	for (i = 0; i < last->ndevs + sim->ntouched; i++) {
		uint32_t ai = i < last->ndevs ? last_devs[i] : sim->touched[i - last->ndevs];
		const struct sim_dev *a = &sim->devs[ai];
		uint64_t av;

		if (a->bytes_used >= a->total_bytes)
			return 0;
		av = a->total_bytes - a->bytes_used;
		for (j = 0; j < nb; j++) {
			if (av <= bv[j] && bv[j] - av <= d_bytes)
				return 0;
			if (av > bv[j] && (av - bv[j] - 1) / d_bytes < m)
				m = (av - bv[j] - 1) / d_bytes;
		}
	}

	/*
	 * Every used device must still fit at the end of the replay, not only
	 * before its own allocations: an unfit device would compare differently
	 * in the chunks after its last one. And bytes_used may say less is free
	 * than the holes do.
	 */
	for (i = 0; i < sim->ntouched && m; i++) {
		const struct sim_dev *a = &sim->devs[sim->touched[i]];
		uint64_t enough = m == UINT64_MAX ? UINT64_MAX : m * per_window;
		uint64_t fits, avail = a->total_bytes - a->bytes_used;

		if (avail < min + d_bytes)
			return 0;
		if ((avail - min) / d_bytes < m)
			m = (avail - min) / d_bytes;
		fits = fitting_allocations(a, want, used, enough);
		if (fits / per_window < m)
			m = fits / per_window;
	}
	return m == UINT64_MAX ? 0 : m;
}

/* Records a decided chunk in the window; may start a replay. */
static void sim_note(struct bx_alloc_sim *sim, const struct choice *ch,
		     const struct cand *c, const uint32_t *ord, uint64_t used)
{
	struct win_step *w;
	size_t i;

	if (sim->win_len == 0)
		sim->win_used = used;
	if (used != sim->win_used || sim->win_len >= sim->win_cap) {
		sim_window_reset(sim);
		sim->win_used = used;
	}
	w = &sim->win[sim->win_len];
	w->stripe_size = ch->stripe_size;
	w->length = ch->length;
	w->ndevs = (uint32_t)ch->ndevs;
	w->num_stripes = ch->num_stripes;
	w->flags = ch->flags;
	w->tiers = ch->tiers;
	for (i = 0; i < ch->ndevs; i++) {
		const struct cand *d = &c[ord[i]];

		if (d->max_avail != sim->lim.dev_extent_want)
			sim->win_ok = false;
		sim->win_devs[sim->win_len * sim->win_stride + i] = d->dev;
		if (!sim->taken[d->dev])
			sim->touched[sim->ntouched++] = d->dev;
		sim->taken[d->dev] += used;
		if (sim->taken[d->dev] > sim->max_taken) {
			sim->max_taken = sim->taken[d->dev];
			sim->at_max = 1;
		} else if (sim->taken[d->dev] == sim->max_taken) {
			sim->at_max++;
		}
	}
	sim->win_len++;
	if (!sim->win_ok) {
		sim_window_reset(sim);
		return;
	}
	/*
	 * Not a period yet (e.g. one device of a round-robin used so far): keep
	 * going. A period of T chunks uses at least T devices, so a window that
	 * is longer than the devices it used (plus slack) started at a bad point
	 * or spans a change: start again.
	 */
	if (sim->at_max == sim->ntouched) {
		uint64_t m = sim_window_repeats(sim);
		size_t len = sim->win_len;

		if (m && m <= UINT64_MAX / len) {
			sim_window_reset(sim);
			sim->replay_left = m * len;
			sim->replay_len = len;
			sim->replay_pos = 0;
			return;
		}
	}
	if (sim->win_len > sim->ntouched + 2)
		sim_window_reset(sim);
}

/*
 * Replays one chunk of the detected period. Returns 1 (and stops replaying)
 * if a device unexpectedly does not fit, so that the chunk is decided anew.
 */
static int sim_replay(struct bx_alloc_sim *sim, struct bx_alloc_chunk *chunk)
{
	const struct win_step *w = &sim->win[sim->replay_pos];
	const uint32_t *devs = &sim->win_devs[sim->replay_pos * sim->win_stride];
	const int dev_stripes = sim->lim.raid.dev_stripes;
	const uint64_t used = w->stripe_size * (uint64_t)dev_stripes;
	struct cand *c = sim->cand;
	size_t i, s = 0;
	int j;

	for (i = 0; i < w->ndevs; i++) {
		uint64_t len;

		if (!dev_find(&sim->devs[devs[i]], sim->lim.dev_extent_want, &c[i].hole,
			       &c[i].dev_offset, &len)) {
			sim->replay_left = 0;
			return 1;
		}
	}
	for (i = 0; i < w->ndevs; i++) {
		struct sim_dev *sd = &sim->devs[devs[i]];

		sd->hstart[c[i].hole] += used;
		tree_set(sd, c[i].hole, sd->tree[sd->leaves + c[i].hole] - used);
		sd->bytes_used += used;
		if (chunk) {
			for (j = 0; j < dev_stripes; j++, s++) {
				sim->stripes[s].devid = sim->devids[devs[i]];
				sim->stripes[s].physical = c[i].dev_offset + (uint64_t)j * w->stripe_size;
				sim->stripes[s].dev_index = devs[i];
			}
		}
	}
	if (chunk) {
		chunk->type = sim->type;
		chunk->length = w->length;
		chunk->stripe_size = w->stripe_size;
		chunk->num_stripes = w->num_stripes;
		chunk->ndevs = w->ndevs;
		chunk->sub_stripes = (uint32_t)sim->lim.raid.sub_stripes;
		chunk->flags = w->flags | (sim->unknown ? BX_ALLOC_F_UNKNOWN_HINT : 0);
		chunk->tiers = w->tiers;
		chunk->stripes = sim->stripes;
	}
	if (++sim->replay_pos == sim->replay_len)
		sim->replay_pos = 0;
	sim->replay_left--;
	return 0;
}

static int sim_set_type(struct bx_alloc_sim *sim, uint64_t type)
{
	size_t i;
	int ret;

	if (sim->have_type && sim->type == type)
		return 0;
	sim->replay_left = 0;
	sim_window_reset(sim);
	ret = bx_alloc_limits(type, sim->fs_total, sim->params.nodesize, &sim->lim);
	if (ret)
		return ret;
	sim->tiered = alloc_hints_in_effect(sim->hints, sim->writable, sim->ndevs, type,
				      sim->params.flags, &sim->unknown);
	for (i = 0; i < sim->ndevs; i++)
		sim->tiers[i] = sim->tiered ?
			(uint8_t)bx_alloc_hint_tier(sim->hints[i], type, sim->params.flags, NULL) : 0;
	sim->best_tier = sim->tiered ? alloc_best_tier_of(sim->hints, sim->writable, sim->ndevs, type,
						    sim->params.flags) : 0;
	sim->type = type;
	sim->have_type = true;
	return 0;
}

int bx_alloc_sim_step(struct bx_alloc_sim *sim, uint64_t type, struct bx_alloc_chunk *chunk)
{
	const struct bx_alloc_limits *lim;
	struct cand *c = sim->cand;
	struct choice ch;
	size_t i, nc = 0;
	uint64_t used;
	int ret;

	if (chunk)
		memset(chunk, 0, sizeof(*chunk));
	ret = sim_set_type(sim, type);
	if (ret)
		return ret;
	lim = &sim->lim;
	if (sim->replay_left && sim_replay(sim, chunk) == 0)
		return 0;

	for (i = 0; i < sim->ndevs; i++) {
		struct sim_dev *d = &sim->devs[i];
		uint64_t total_avail, off, avail;
		uint32_t hole;

		sim->sorter.cand_of_dev[i] = -1;
		if (!sim->writable[i])
			continue;
		if (sim->tiered && sim->tiers[i] == BX_TIER_NEVER)
			continue;
		total_avail = d->total_bytes > d->bytes_used ? d->total_bytes - d->bytes_used : 0;
		if (total_avail < lim->dev_extent_min)
			continue;
		if (dev_find(d, lim->dev_extent_want, &hole, &off, &avail))
			avail = lim->dev_extent_want;
		if (avail < lim->dev_extent_min)
			continue;
		c[nc].max_avail = avail;
		c[nc].total_avail = total_avail;
		c[nc].dev_offset = off;
		c[nc].tier = sim->tiers[i];
		c[nc].real_tier = sim->tiers[i];
		c[nc].dev = (uint32_t)i;
		c[nc].hole = hole;
		sim->sorter.cand_of_dev[i] = (int32_t)nc;
		nc++;
	}

	ret = alloc_choose(lim, type, sim->tiered, sim->params.flags, sim->best_tier, &sim->sorter, c, sim->ord, nc, &ch);
	if (ret)
		return ret;

	used = ch.stripe_size * (uint64_t)lim->raid.dev_stripes;
	for (i = 0; i < ch.ndevs; i++) {
		const struct cand *d = &c[sim->ord[i]];
		struct sim_dev *sd = &sim->devs[d->dev];

		sd->hstart[d->hole] += used;
		tree_set(sd, d->hole, sd->tree[sd->leaves + d->hole] - used);
		sd->bytes_used += used;
	}
	if (chunk) {
		alloc_fill_stripes(lim, &ch, c, sim->ord, sim->devids, sim->stripes);
		alloc_fill_chunk(chunk, type, lim, &ch, sim->unknown, sim->stripes);
	}
	sim_note(sim, &ch, c, sim->ord, used);
	return 0;
}

uint64_t bx_alloc_sim_unallocated(const struct bx_alloc_sim *sim, size_t index)
{
	const struct sim_dev *d;
	uint64_t sum = 0;
	uint32_t i;

	if (index >= sim->ndevs)
		return 0;
	d = &sim->devs[index];
	for (i = 0; i < d->nholes; i++)
		sum += d->tree[d->leaves + i];
	return sum;
}

void bx_alloc_sim_result_release(struct bx_alloc_sim_result *res)
{
	free(res->chunks);
	free(res->stripe_pool);
	memset(res, 0, sizeof(*res));
}

int bx_alloc_simulate(const struct bx_alloc_device *devs, size_t nr_devs, uint64_t type,
		      const struct bx_alloc_params *params, bool record,
		      struct bx_alloc_sim_result *res)
{
	struct bx_alloc_sim *sim;
	struct bx_alloc_chunk ch;
	size_t chunks_cap = 0, pool_len = 0, pool_cap = 0;
	uint64_t i;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = bx_alloc_sim_new(devs, nr_devs, params, &sim);
	if (ret)
		return ret;
	for (;;) {
		ret = bx_alloc_sim_step(sim, type, &ch);
		if (ret == -ENOSPC) {
			ret = 0;
			break;
		}
		if (ret)
			goto fail;
		res->logical_bytes += ch.length;
		res->physical_bytes += ch.stripe_size * ch.num_stripes;
		res->flags |= ch.flags;
		if (record) {
			if (res->nr_chunks == chunks_cap) {
				size_t cap = chunks_cap ? 2 * chunks_cap : 64;
				struct bx_alloc_chunk *n = realloc(res->chunks, cap * sizeof(*n));

				if (!n) {
					ret = -ENOMEM;
					goto fail;
				}
				res->chunks = n;
				chunks_cap = cap;
			}
			if (pool_len + ch.num_stripes > pool_cap) {
				size_t cap = pool_cap ? 2 * pool_cap : 256;
				struct bx_alloc_stripe *n;

				while (cap < pool_len + ch.num_stripes)
					cap *= 2;
				n = realloc(res->stripe_pool, cap * sizeof(*n));
				if (!n) {
					ret = -ENOMEM;
					goto fail;
				}
				res->stripe_pool = n;
				pool_cap = cap;
			}
			memcpy(&res->stripe_pool[pool_len], ch.stripes,
			       ch.num_stripes * sizeof(*ch.stripes));
			pool_len += ch.num_stripes;
			res->chunks[res->nr_chunks] = ch;
			res->chunks[res->nr_chunks].stripes = NULL;
		}
		res->nr_chunks++;
	}
	if (record) {
		pool_len = 0;
		for (i = 0; i < res->nr_chunks; i++) {
			res->chunks[i].stripes = &res->stripe_pool[pool_len];
			pool_len += res->chunks[i].num_stripes;
		}
	}
	bx_alloc_sim_free(sim);
	return 0;
fail:
	bx_alloc_sim_free(sim);
	bx_alloc_sim_result_release(res);
	return ret;
}
