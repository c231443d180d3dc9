/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RAID5/6 scrub: full stripes, read once. A batch of consecutive rows that
 * hold extents is one sequential read per member device (a row's stripe on a
 * device is 64 KiB at stripe.physical + row * 64 KiB, data or parity by the
 * row's rotation); two batches are in flight while one is verified.
 *
 * Per row: data sectors and tree blocks are verified on their own device's
 * counters; a bad one is rebuilt from P (XOR), else from Q (GF(2^8), the
 * generator 2 and polynomial 0x11d of Linux RAID6), or from both when two
 * data stripes of the column are unusable, and written back. Then P and Q
 * are recomputed from the (repaired) data for every column that holds an
 * extent sector and compared; a mismatch is a parity error and, when every
 * data sector of the column is good, the computed parity is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <isa-l.h>
#include <liburing.h>

#include "common/error.h"
#include "disk/io.h"
#include "format/raid6.h"
#include "scrub/scrub-internal.h"

#define SEC_PER_STRIPE_MAX SCRUB_MAX_WIN_SECTORS
#define R56_MAX_READ (1024u * 1024)
/* Bad crossing tree blocks whose columns skip the parity check, per chunk. */
#define R56_MAX_SKIPS 64

struct r56_skip {
	uint64_t start, end;      /* logical */
};

/* Per sector of a stripe in a batch. */
enum {
	ST_OK = 0,
	ST_UNREADABLE = 1,        /* read failed or the device is missing */
	ST_BAD = 2,               /* verified bad, not (yet) repaired */
	ST_LOST = 4,              /* bad and could not be repaired */
};

struct r56_batch {
	uint64_t row0;
	uint32_t nrows;
	unsigned int pending;     /* reads not yet completed */
	uint8_t *mem;             /* every stripe's buffer, in one piece */
	uint8_t **buf;            /* per chunk stripe: nrows * 64 KiB, in @mem */
	int *res;
	uint8_t **st;             /* per chunk stripe: per sector state */
	struct scrub_window *win; /* [row][data stripe] */
};

/* One RAID5/6 chunk being scrubbed, full stripe row by row, a batch of rows at a time. */
struct raid56_chunk {
	struct scrub_worker *w;
	struct scrub_ctx *ctx;
	const struct bx_chunk *chunk;
	int nr_stripes;           /* the chunk's: nr_data data stripes, then P (and Q) */
	int nr_data, nr_parity;
	uint32_t sectorsize;
	uint32_t sectors_per_stripe;  /* per 64 KiB stripe */
	uint32_t rows_per_batch;
	uint64_t nrows, next_row;
	int *fds;                 /* per chunk stripe, O_DIRECT; -1 when missing */
	struct io_uring ring;
	bool ring_ok;
	bool stalled;             /* a read was given up on: its batch keeps its buffers */
	struct r56_batch b[2];
	uint8_t *pbuf, *qbuf, *cand, *zero;
	void **vec;
	struct bad_item *items;   /* of the row being scrubbed */
	size_t max_items;
	struct r56_skip skips[R56_MAX_SKIPS];
	size_t nr_skips;
	bool skip_all;
};

/* ---- GF(2^8) ---- */

static void gf_table(uint8_t c, uint8_t t[256])
{
	for (int i = 0; i < 256; i++)
		t[i] = gf_mul(c, (uint8_t)i);
}

/*
 * P and Q of @len bytes of the data stripes in @data (NULL entries count as
 * zeros) into @p and @q (@q may be NULL).
 */
static void compute_pq(struct raid56_chunk *r, uint8_t **data, size_t off, uint32_t len, uint8_t *p,
		       uint8_t *q)
{
	for (int j = 0; j < r->nr_data; j++)
		r->vec[j] = data[j] ? data[j] + off : r->zero;
	if (len % 64 == 0 && r->nr_data >= 2) {
		r->vec[r->nr_data] = p;
		if (!q && !xor_gen(r->nr_data + 1, (int)len, r->vec))
			return;
		r->vec[r->nr_data + 1] = q;
		if (q && !pq_gen(r->nr_data + 2, (int)len, r->vec))
			return;
	}
	/* Horner: Q = (((D[nd-1]) * 2 + D[nd-2]) * 2 + ...) + D[0]. */
	memset(p, 0, len);
	if (q)
		memset(q, 0, len);
	for (int j = r->nr_data - 1; j >= 0; j--) {
		const uint8_t *d = r->vec[j];

		for (uint32_t b = 0; b < len; b++) {
			p[b] ^= d[b];
			if (q)
				q[b] = bx_raid6_times2(q[b]) ^ d[b];
		}
	}
}

/* ---- reading ---- */

/* One member's stripes in a batch. */
static size_t batch_stripe_bytes(const struct raid56_chunk *r)
{
	return (size_t)r->rows_per_batch * SCRUB_WINDOW;
}

static int batch_alloc(struct raid56_chunk *r, struct r56_batch *b)
{
	size_t bytes = batch_stripe_bytes(r);

	b->buf = calloc((size_t)r->nr_stripes, sizeof(*b->buf));
	b->st = calloc((size_t)r->nr_stripes, sizeof(*b->st));
	b->res = calloc((size_t)r->nr_stripes, sizeof(*b->res));
	b->win = calloc((size_t)r->rows_per_batch * (size_t)r->nr_data, sizeof(*b->win));
	if (!b->buf || !b->st || !b->res || !b->win)
		return bx_error(-ENOMEM, "out of memory");
	/* One allocation: large enough for huge pages, so reads go down whole. */
	b->mem = scrub_alloc_read_buffer(bytes * (size_t)r->nr_stripes);
	if (!b->mem)
		return bx_error(-ENOMEM, "out of memory");
	for (int i = 0; i < r->nr_stripes; i++) {
		b->buf[i] = b->mem + bytes * (size_t)i;
		b->st[i] = calloc((size_t)r->rows_per_batch * r->sectors_per_stripe, 1);
		if (!b->st[i])
			return bx_error(-ENOMEM, "out of memory");
	}
	return 0;
}

static void batch_free(struct raid56_chunk *r, struct r56_batch *b)
{
	for (int i = 0; b->st && i < r->nr_stripes; i++)
		free(b->st[i]);
	/* Reads given up on a stalled device may still land in it: it is left to them. */
	if (!b->pending)
		scrub_free_read_buffer(b->mem, batch_stripe_bytes(r) * (size_t)r->nr_stripes);
	free(b->buf);
	free(b->st);
	free(b->res);
	free(b->win);
}

/* Plans the next run of consecutive rows that hold extents. 1, 0 at the end. */
static int plan_batch(struct raid56_chunk *r, struct r56_batch *b)
{
	struct scrub_planner *p = &r->w->planner;
	uint64_t row_bytes = (uint64_t)r->nr_data * SCRUB_WINDOW;

	b->nrows = 0;
	while (r->next_row < r->nrows && b->nrows < r->rows_per_batch) {
		uint64_t row = r->next_row;
		uint64_t logical = r->chunk->logical + row * row_bytes;
		bool used = false;

		if (scrub_cancelled(r->ctx))
			break;
		for (int j = 0; j < r->nr_data; j++) {
			struct scrub_window *w = &b->win[(size_t)b->nrows * r->nr_data + j];
			int ret = scrub_planner_window(p, logical + (uint64_t)j * SCRUB_WINDOW,
						       SCRUB_WINDOW, w);

			if (ret)
				return ret;
			used |= w->first != w->last;
		}
		r->next_row++;
		if (!used) {
			if (b->nrows)
				break;
			continue;
		}
		if (!b->nrows)
			b->row0 = row;
		b->nrows++;
	}
	return b->nrows > 0;
}

static int submit_batch(struct raid56_chunk *r, int bi)
{
	struct r56_batch *b = &r->b[bi];
	uint32_t len = b->nrows * SCRUB_WINDOW;
	int queued = 0;

	b->pending = 0;
	for (int i = 0; i < r->nr_stripes; i++) {
		uint64_t phys = r->chunk->stripes[i].physical + b->row0 * SCRUB_WINDOW;
		struct io_uring_sqe *sqe;

		if (r->fds[i] < 0) {
			b->res[i] = -ENODEV;
			continue;
		}
		if (!r->ring_ok) {
			int ret = scrub_pread(r->ctx, r->fds[i], b->buf[i], len, phys);

			if (scrub_stalled(r->ctx, ret, r->chunk->stripes[i].dev))
				return -ETIMEDOUT;
			b->res[i] = ret ? -EIO : (int)len;
			continue;
		}
		sqe = io_uring_get_sqe(&r->ring);
		if (!sqe)
			return bx_error(-EBUSY, "io_uring submission queue full");
		io_uring_prep_read(sqe, r->fds[i], b->buf[i], len, phys);
		io_uring_sqe_set_data64(sqe, (uint64_t)bi << 16 | (uint64_t)i);
		b->pending++;
		queued++;
	}
	if (queued) {
		int ret = io_uring_submit(&r->ring);

		if (ret < 0)
			return bx_error(ret, "io_uring submit failed: %s", strerror(-ret));
	}
	return 0;
}

static int wait_batch(struct raid56_chunk *r, int bi)
{
	while (r->b[bi].pending) {
		struct io_uring_cqe *cqe;
		uint64_t data;
		int ret = scrub_wait_cqe(r->ctx, &r->ring, &cqe);

		if (ret == -ETIMEDOUT) {
			r->stalled = true;
			return bx_error(ret, "no read of the chunk's devices completed within %u s "
					"(a device stalls); see --io-timeout", r->ctx->fs->io_timeout);
		}
		if (ret < 0)
			return bx_error(ret, "io_uring wait failed: %s", strerror(-ret));
		data = io_uring_cqe_get_data64(cqe);
		r->b[data >> 16].res[data & 0xffff] = cqe->res;
		r->b[data >> 16].pending--;
		io_uring_cqe_seen(&r->ring, cqe);
	}
	return 0;
}

/*
 * Sector states after the reads: failed reads are retried sector by sector.
 * -ETIMEDOUT when a device stalls (the scrub is stopped), else 0.
 */
static int batch_states(struct raid56_chunk *r, struct r56_batch *b)
{
	uint32_t nsec = b->nrows * r->sectors_per_stripe;

	for (int i = 0; i < r->nr_stripes; i++) {
		uint64_t phys = r->chunk->stripes[i].physical + b->row0 * SCRUB_WINDOW;
		uint64_t good = b->res[i] > 0 ? (uint64_t)b->res[i] : 0;

		for (uint32_t s = 0; s < nsec; s++) {
			int ret = -ENODEV;

			b->st[i][s] = ST_OK;
			if ((uint64_t)(s + 1) * r->sectorsize <= good)
				continue;
			if (r->fds[i] >= 0)
				ret = scrub_pread(r->ctx, r->fds[i],
						  b->buf[i] + (size_t)s * r->sectorsize,
						  r->sectorsize, phys + (uint64_t)s * r->sectorsize);
			if (ret)
				b->st[i][s] = ST_UNREADABLE;
			if (scrub_stalled(r->ctx, ret, r->chunk->stripes[i].dev))
				return -ETIMEDOUT;
		}
	}
	return 0;
}

/* ---- one row ---- */

struct bad_item {
	int j;                    /* data stripe */
	const struct scrub_window *win;
	uint32_t s0, s1;          /* sectors */
	enum bx_scrub_fault fault;
	const char *reason;
	uint32_t counted;         /* sectors in the error counters */
};

struct row {
	struct raid56_chunk *r;
	struct r56_batch *b;
	uint32_t rr;              /* row in the batch */
	uint64_t row;
	int idx[BX_MAX_STRIPES];  /* chunk stripe of logical stripe j (data, then P, Q) */
	uint8_t *d[BX_MAX_STRIPES];
	size_t nr_items;          /* bad items found, in r->items */
};

static uint8_t *row_st(struct row *w, int j)
{
	return w->b->st[w->idx[j]] + (size_t)w->rr * w->r->sectors_per_stripe;
}

static struct bx_device *row_dev(struct row *w, int j)
{
	return w->r->chunk->stripes[w->idx[j]].dev;
}

static uint64_t row_phys(struct row *w, int j)
{
	return w->r->chunk->stripes[w->idx[j]].physical + w->row * SCRUB_WINDOW;
}

/* Whether stripe @j of the row is on a device that has it: not missing, not beyond a short one's end. */
static bool present(struct row *w, int j)
{
	return row_dev(w, j) && !scrub_beyond_end(row_dev(w, j), row_phys(w, j), SCRUB_WINDOW);
}

static struct bx_scrub_counters *row_counters(struct row *w, int j)
{
	return &w->r->w->c[scrub_dev_index(w->r->ctx, row_dev(w, j))];
}

static bool usable(struct row *w, int j, uint32_t s0, uint32_t s1)
{
	const uint8_t *st = row_st(w, j);

	for (uint32_t s = s0; s < s1; s++)
		if (st[s])
			return false;
	return true;
}

/*
 * Rebuilds sectors [s0, s1) of data stripe @j into r->cand with parity
 * @which (0 = P, 1 = Q). Every other data stripe must be usable there.
 */
static bool rebuild_one(struct row *w, int j, uint32_t s0, uint32_t s1, int which)
{
	struct raid56_chunk *r = w->r;
	size_t off = (size_t)s0 * r->sectorsize;
	uint32_t len = (s1 - s0) * r->sectorsize;
	const uint8_t *par;
	uint8_t *saved = w->d[j];

	if (which >= r->nr_parity || !usable(w, r->nr_data + which, s0, s1))
		return false;
	for (int k = 0; k < r->nr_data; k++)
		if (k != j && !usable(w, k, s0, s1))
			return false;
	par = w->d[r->nr_data + which] + off;
	w->d[j] = NULL;
	compute_pq(r, w->d, off, len, r->pbuf, which ? r->qbuf : NULL);
	w->d[j] = saved;
	if (!which) {
		for (uint32_t b = 0; b < len; b++)
			r->cand[b] = r->pbuf[b] ^ par[b];
	} else {
		uint8_t t[256];

		gf_table(gf_inv(bx_raid6_coef(j)), t);
		for (uint32_t b = 0; b < len; b++)
			r->cand[b] = t[r->qbuf[b] ^ par[b]];
	}
	return true;
}

/* RAID6 with two unusable data stripes @j and @x in [s0, s1): rebuild @j from P and Q. */
static bool rebuild_two(struct row *w, int j, int x, uint32_t s0, uint32_t s1)
{
	struct raid56_chunk *r = w->r;
	size_t off = (size_t)s0 * r->sectorsize;
	uint32_t len = (s1 - s0) * r->sectorsize;
	uint8_t *sj = w->d[j], *sx = w->d[x];
	uint8_t tx[256], tdiv[256];
	const uint8_t *P, *Q;

	if (r->nr_parity < 2 || !usable(w, r->nr_data, s0, s1) ||
	    !usable(w, r->nr_data + 1, s0, s1))
		return false;
	for (int k = 0; k < r->nr_data; k++)
		if (k != j && k != x && !usable(w, k, s0, s1))
			return false;
	P = w->d[r->nr_data] + off;
	Q = w->d[r->nr_data + 1] + off;
	w->d[j] = w->d[x] = NULL;
	compute_pq(r, w->d, off, len, r->pbuf, r->qbuf);
	w->d[j] = sj;
	w->d[x] = sx;
	/* D_j = (g^x * P' + Q') / (g^x + g^j), with P' and Q' the parities minus the others. */
	gf_table(bx_raid6_coef(x), tx);
	gf_table(gf_inv(bx_raid6_coef(x) ^ bx_raid6_coef(j)), tdiv);
	for (uint32_t b = 0; b < len; b++)
		r->cand[b] = tdiv[tx[P[b] ^ r->pbuf[b]] ^ (Q[b] ^ r->qbuf[b])];
	return true;
}

/* Is the rebuilt content in r->cand good for the item at sector @s of stripe @j? */
static bool candidate_ok(struct row *w, const struct scrub_window *win, uint32_t s)
{
	const struct scrub_sector *sec = &win->sec[s];
	enum bx_scrub_fault fault;

	if (sec->kind == SEC_DATA)
		return true;  /* nothing to check it against, like the kernel */
	if (sec->kind == SEC_DATA_CSUM)
		return scrub_data_ok(w->r->ctx, w->r->cand, win->csum + (size_t)s * BTRFS_CSUM_SIZE);
	return !scrub_tree_bad(w->r->ctx, w->r->cand, sec, &fault);
}

/* Tries every way to rebuild the item [s0, s1) of stripe @j; true with it in r->cand. */
static bool rebuild_item(struct row *w, int j, const struct scrub_window *win, uint32_t s0,
			 uint32_t s1)
{
	int other = -1, nr_other = 0;

	for (int which = 0; which < w->r->nr_parity; which++)
		if (rebuild_one(w, j, s0, s1, which) && candidate_ok(w, win, s0))
			return true;
	for (int k = 0; k < w->r->nr_data; k++) {
		if (k != j && !usable(w, k, s0, s1)) {
			other = k;
			nr_other++;
		}
	}
	return nr_other == 1 && rebuild_two(w, j, other, s0, s1) && candidate_ok(w, win, s0);
}

/* A bad item found in a row: counted and marked at once, repaired once all are known. */
static void note_bad(struct row *w, int j, const struct scrub_window *win, uint32_t s0,
		     uint32_t s1, enum bx_scrub_fault fault, const char *reason, uint32_t counted)
{
	struct bx_scrub_counters *c = row_counters(w, j);
	uint8_t *st = row_st(w, j);
	struct bad_item *it;

	if (fault == BX_SCRUB_READ_ERROR)
		c->read_errors += counted;
	else if (fault == BX_SCRUB_CSUM_ERROR)
		c->csum_errors += counted;
	else
		c->verify_errors += counted;
	for (uint32_t s = s0; s < s1; s++)
		st[s] |= ST_BAD;
	if (w->nr_items == w->r->max_items)
		return;
	it = &w->r->items[w->nr_items++];
	*it = (struct bad_item){ j, win, s0, s1, fault, reason, counted };
}

static void repair_item(struct row *w, const struct bad_item *it)
{
	struct raid56_chunk *r = w->r;
	int j = it->j;
	const struct scrub_sector *sec = &it->win->sec[it->s0];
	uint8_t *st = row_st(w, j);
	uint64_t phys = row_phys(w, j) + (uint64_t)it->s0 * r->sectorsize;
	struct bx_scrub_error e = { .fault = it->fault, .logical = sec->logical,
				    .len = (it->s1 - it->s0) * r->sectorsize,
				    .devid = row_dev(w, j)->devid, .physical = phys, .mirror = 1,
				    .reason = it->reason };
	bool good;

	if (sec->kind == SEC_TREE_HEAD) {
		const uint8_t *head = w->d[j] + (size_t)it->s0 * r->sectorsize;

		e.what = BX_SCRUB_TREE;
		e.owner = le64toh(((const struct btrfs_header *)head)->owner);
	} else {
		e.what = BX_SCRUB_DATA;
		e.extent_start = sec->extent.start;
		e.extent_len = sec->extent.len;
	}
	good = rebuild_item(w, j, it->win, it->s0, it->s1);
	e.fix = scrub_fix(r->w, good, row_dev(w, j), r->cand, e.len, phys);
	if (good) {
		/* The buffer now holds the good copy: parity and later rebuilds use it. */
		memcpy(w->d[j] + (size_t)it->s0 * r->sectorsize, r->cand, e.len);
		for (uint32_t s = it->s0; s < it->s1; s++)
			st[s] = ST_OK;
		if (e.what == BX_SCRUB_TREE)
			e.owner = le64toh(((const struct btrfs_header *)r->cand)->owner);
	} else {
		for (uint32_t s = it->s0; s < it->s1; s++)
			st[s] |= ST_LOST;
	}
	scrub_settle(r->w, row_counters(w, j), it->counted, &e);
}

/* Queues the good copy in r->w->tmp2 over every piece of a crossing tree block. */
static enum bx_scrub_fix rewrite_pieces(struct raid56_chunk *r, uint64_t logical)
{
	struct scrub_ctx *ctx = r->ctx;
	uint32_t done = 0;

	if (ctx->opts->readonly)
		return BX_SCRUB_CORRECTABLE;
	while (done < ctx->nodesize) {
		struct bx_stripe_loc loc;
		uint64_t piece = ctx->nodesize - done;

		if (bx_map_logical(r->w->rfs, logical + done, &piece, 1, &loc) || !loc.dev ||
		    scrub_queue_repair(r->w, loc.dev, r->w->tmp2 + done, piece, loc.physical)) {
			bx_error_clear();
			return BX_SCRUB_UNCORRECTABLE;
		}
		done += (uint32_t)piece;
	}
	return BX_SCRUB_CORRECTED;
}

/*
 * The columns a bad crossing tree block touches keep their parity
 * unchecked for the rest of the chunk: the batch buffers (this row's and
 * the next one's, maybe already read) hold the block as it was, and the
 * parity is the one the rebuild came from.
 */
static void skip_parity(struct raid56_chunk *r, uint64_t logical, uint32_t len)
{
	if (r->nr_skips < R56_MAX_SKIPS)
		r->skips[r->nr_skips++] = (struct r56_skip){ logical, logical + len };
	else
		r->skip_all = true;   /* no room to say which: check no parity at all */
}

static bool parity_skipped(const struct raid56_chunk *r, uint64_t logical)
{
	if (r->skip_all)
		return true;
	for (size_t i = 0; i < r->nr_skips; i++)
		if (logical >= r->skips[i].start && logical < r->skips[i].end)
			return true;
	return false;
}

/*
 * A tree block that crosses its 64 KiB stripe (unaligned, as old converted
 * filesystems have them) lies in two data stripes, maybe two rows: it is
 * read through the read path, and a bad one is rebuilt there too (copy 2
 * from P, copy 3 from Q, piece by piece) and written back piece by piece.
 */
static void odd_tree_block(struct row *w, int j, const struct scrub_window *win, uint32_t s)
{
	struct raid56_chunk *r = w->r;
	struct scrub_ctx *ctx = r->ctx;
	const struct scrub_sector *sec = &win->sec[s];
	uint32_t nsec = ctx->nodesize / r->sectorsize;
	struct bx_scrub_counters *c = row_counters(w, j);
	struct bx_scrub_error e = { .what = BX_SCRUB_TREE, .fault = BX_SCRUB_READ_ERROR,
				    .logical = sec->logical, .len = ctx->nodesize,
				    .devid = row_dev(w, j)->devid,
				    .physical = row_phys(w, j) + (uint64_t)s * r->sectorsize,
				    .mirror = 1,
				    .reason = "read error" };
	int copies = bx_num_copies(r->w->rfs, sec->logical);
	bool good = false;

	if (!bx_read_logical(r->w->rfs, sec->logical, r->w->tmp, ctx->nodesize, 1)) {
		e.reason = scrub_tree_bad(ctx, r->w->tmp, sec, &e.fault);
		e.owner = le64toh(((const struct btrfs_header *)r->w->tmp)->owner);
	}
	bx_error_clear();
	if (!e.reason)
		return;
	if (e.fault == BX_SCRUB_READ_ERROR)
		c->read_errors += nsec;
	else if (e.fault == BX_SCRUB_CSUM_ERROR)
		c->csum_errors += nsec;
	else
		c->verify_errors += nsec;
	for (int m = 2; m <= copies && !good; m++) {
		enum bx_scrub_fault fault;

		good = !bx_read_logical(r->w->rfs, sec->logical, r->w->tmp2, ctx->nodesize, m) &&
		       !scrub_tree_bad(ctx, r->w->tmp2, sec, &fault);
	}
	bx_error_clear();
	e.fix = good ? rewrite_pieces(r, sec->logical) : BX_SCRUB_UNCORRECTABLE;
	if (good)
		e.owner = le64toh(((const struct btrfs_header *)r->w->tmp2)->owner);
	skip_parity(r, sec->logical, ctx->nodesize);
	scrub_settle(r->w, c, nsec, &e);
}

static void verify_data_stripe(struct row *w, int j, const struct scrub_window *win)
{
	struct raid56_chunk *r = w->r;
	uint32_t nsec = r->ctx->nodesize / r->sectorsize;
	const uint8_t *st = row_st(w, j);

	scrub_count_window(r->ctx, row_counters(w, j), win, row_dev(w, j), row_phys(w, j));
	for (uint32_t s = win->first; s < win->last; s++) {
		const struct scrub_sector *sec = &win->sec[s];
		const uint8_t *data = w->d[j] + (size_t)s * r->sectorsize;
		enum bx_scrub_fault fault;
		const char *reason;
		uint32_t unread = 0;

		switch (sec->kind) {
		case SEC_DATA:
		case SEC_DATA_CSUM:
			if (st[s])
				note_bad(w, j, win, s, s + 1, BX_SCRUB_READ_ERROR, "read error", 1);
			else if (sec->kind == SEC_DATA_CSUM &&
				 !scrub_data_ok(r->ctx, data, win->csum + (size_t)s * BTRFS_CSUM_SIZE))
				note_bad(w, j, win, s, s + 1, BX_SCRUB_CSUM_ERROR,
					 "checksum mismatch", 1);
			break;
		case SEC_TREE_HEAD:
			if (s + nsec > win->nr_sectors) {
				odd_tree_block(w, j, win, s);
				break;
			}
			for (uint32_t k = s; k < s + nsec; k++)
				unread += st[k] != ST_OK;
			if (unread) {
				note_bad(w, j, win, s, s + nsec, BX_SCRUB_READ_ERROR, "read error",
					 unread);
				break;
			}
			reason = scrub_tree_bad(r->ctx, data, sec, &fault);
			if (reason)
				note_bad(w, j, win, s, s + nsec, fault, reason, nsec);
			break;
		default:
			break;
		}
	}
}

static void parity_error(struct row *w, int which, uint32_t s, bool unreadable,
			 const uint8_t *want)
{
	struct raid56_chunk *r = w->r;
	int j = r->nr_data + which;
	uint64_t phys = row_phys(w, j) + (uint64_t)s * r->sectorsize;
	struct bx_scrub_error e = { .what = BX_SCRUB_PARITY,
				    .fault = unreadable ? BX_SCRUB_READ_ERROR : BX_SCRUB_PARITY_ERROR,
				    .logical = r->chunk->logical +
					       w->row * (uint64_t)r->nr_data * SCRUB_WINDOW +
					       (uint64_t)s * r->sectorsize,
				    .len = r->sectorsize, .devid = row_dev(w, j)->devid,
				    .physical = phys,
				    .reason = unreadable ? "read error" :
					      which ? "Q differs from the data" :
						      "P differs from the data" };

	row_counters(w, j)->parity_errors++;
	e.fix = scrub_fix(r->w, true, row_dev(w, j), want, r->sectorsize, phys);
	/* Rewritten (or, with -r, rewritable) like any bad copy: in the totals too. */
	scrub_settle(r->w, row_counters(w, j), 1, &e);
}

static bool column_skipped(struct row *w, uint32_t s)
{
	struct raid56_chunk *r = w->r;
	uint64_t row_logical = r->chunk->logical + w->row * (uint64_t)r->nr_data * SCRUB_WINDOW;

	for (int j = 0; r->nr_skips && j < r->nr_data; j++)
		if (parity_skipped(r, row_logical + (uint64_t)j * SCRUB_WINDOW +
				      (uint64_t)s * r->sectorsize))
			return true;
	return false;
}

/* Recomputes P (and Q) for the columns holding extent sectors and compares. */
static void check_parity(struct row *w)
{
	struct raid56_chunk *r = w->r;
	struct scrub_window *wins = &w->b->win[(size_t)w->rr * r->nr_data];
	bool computed = false;

	for (uint32_t s = 0; s < r->sectors_per_stripe; s++) {
		bool used = false, known = true;

		for (int j = 0; j < r->nr_data; j++) {
			used |= s < wins[j].nr_sectors && wins[j].sec[s].kind != SEC_NONE;
			known &= row_st(w, j)[s] == ST_OK;
		}
		if (!used || !known || column_skipped(w, s))
			continue;
		if (!computed) {
			compute_pq(r, w->d, 0, SCRUB_WINDOW, r->pbuf,
				   r->nr_parity > 1 ? r->qbuf : NULL);
			computed = true;
		}
		for (int which = 0; which < r->nr_parity; which++) {
			const uint8_t *want = (which ? r->qbuf : r->pbuf) +
					      (size_t)s * r->sectorsize;
			int j = r->nr_data + which;

			if (!present(w, j))
				continue;
			if (row_st(w, j)[s] != ST_OK)
				parity_error(w, which, s, true, want);
			else if (memcmp(w->d[j] + (size_t)s * r->sectorsize, want, r->sectorsize))
				parity_error(w, which, s, false, want);
		}
	}
}

static void scrub_row(struct raid56_chunk *r, struct r56_batch *b, uint32_t rr)
{
	struct row w = { .r = r, .b = b, .rr = rr, .row = b->row0 + rr };
	struct scrub_window *wins = &b->win[(size_t)rr * r->nr_data];

	/* Parity rotates: row r keeps logical stripe j on chunk stripe (r + j) % n. */
	for (int j = 0; j < r->nr_stripes; j++) {
		w.idx[j] = (int)((w.row + (uint64_t)j) % (uint64_t)r->nr_stripes);
		w.d[j] = b->buf[w.idx[j]] + (size_t)rr * SCRUB_WINDOW;
	}
	/* Find every bad item first: a rebuild must know which stripes it cannot use. */
	for (int j = 0; j < r->nr_data; j++)
		if (present(&w, j) && wins[j].first != wins[j].last)
			verify_data_stripe(&w, j, &wins[j]);
	for (size_t i = 0; i < w.nr_items; i++)
		repair_item(&w, &r->items[i]);
	check_parity(&w);
	for (int j = 0; j < r->nr_data; j++)
		scrub_progress_add(r->ctx, (uint64_t)(wins[j].data_sectors + wins[j].tree_sectors) *
					   r->sectorsize);
}

/* ---- the chunk ---- */

/*
 * Rows per batch: a batch reads that many 64 KiB stripes from each member,
 * two batches are in memory (one read, one verified), so the budget sets it,
 * up to 1 MiB per member and read. Measured on RAID5 over 4 loop devices
 * (3.4 GB of data, cold): 512 KiB, 1 MiB and 4 MiB per read all take the
 * same time (4 s; the kernel's scrub 8 s), so the larger ones only cost
 * memory.
 */
static uint32_t batch_rows(const struct raid56_chunk *r)
{
	uint64_t per_read = r->ctx->opts->request_bytes;

	if (!per_read)
		per_read = r->ctx->raid56_budget / 2 / (uint64_t)r->nr_stripes;
	if (per_read > R56_MAX_READ)
		per_read = R56_MAX_READ;
	return per_read / SCRUB_WINDOW ? (uint32_t)(per_read / SCRUB_WINDOW) : 1;
}

static int r56_setup(struct raid56_chunk *r)
{
	const struct bx_chunk *chunk = r->chunk;

	r->nr_parity = (chunk->type & BTRFS_BLOCK_GROUP_RAID6) ? 2 : 1;
	r->nr_stripes = chunk->num_stripes;
	r->nr_data = r->nr_stripes - r->nr_parity;
	if (r->nr_data < 1)
		return bx_error(-EUCLEAN, "raid5/6 chunk with %d stripes", r->nr_stripes);
	r->sectorsize = r->ctx->sectorsize;
	r->sectors_per_stripe = SCRUB_WINDOW / r->sectorsize;
	r->nrows = chunk->length / ((uint64_t)r->nr_data * SCRUB_WINDOW);
	r->rows_per_batch = batch_rows(r);
	r->fds = calloc((size_t)r->nr_stripes, sizeof(*r->fds));
	r->vec = calloc((size_t)r->nr_stripes + 2, sizeof(*r->vec));
	r->pbuf = scrub_alloc_aligned(SCRUB_WINDOW);
	r->qbuf = scrub_alloc_aligned(SCRUB_WINDOW);
	r->cand = scrub_alloc_aligned(r->ctx->nodesize > SCRUB_WINDOW ? r->ctx->nodesize :
				      SCRUB_WINDOW);
	r->zero = scrub_alloc_aligned(SCRUB_WINDOW);
	r->max_items = (size_t)r->nr_data * r->sectors_per_stripe;
	r->items = calloc(r->max_items, sizeof(*r->items));
	if (!r->fds || !r->vec || !r->pbuf || !r->qbuf || !r->cand || !r->zero || !r->items)
		return bx_error(-ENOMEM, "out of memory");
	memset(r->zero, 0, SCRUB_WINDOW);
	for (int i = 0; i < r->nr_stripes; i++) {
		struct bx_device *dev = chunk->stripes[i].dev;

		r->fds[i] = -1;
		if (!dev)
			continue;
		r->fds[i] = bx_open_direct(dev);
		if (r->fds[i] < 0)
			return r->fds[i];
	}
	for (int i = 0; i < 2; i++) {
		int ret = batch_alloc(r, &r->b[i]);

		if (ret)
			return ret;
	}
	r->ring_ok = io_uring_queue_init((unsigned int)(2 * r->nr_stripes), &r->ring, 0) == 0;
	return 0;
}

static void r56_release(struct raid56_chunk *r)
{
	if (r->ring_ok) {
		for (int i = 0; i < 2 && !r->stalled; i++)
			wait_batch(r, i);
		io_uring_queue_exit(&r->ring);
	}
	for (int i = 0; i < 2; i++)
		batch_free(r, &r->b[i]);
	for (int i = 0; r->fds && i < r->nr_stripes; i++)
		if (r->fds[i] >= 0)
			close(r->fds[i]);
	free(r->fds);
	free(r->vec);
	free(r->pbuf);
	free(r->qbuf);
	free(r->cand);
	free(r->zero);
	free(r->items);
}

int scrub_raid56_chunk(struct scrub_worker *w, const struct bx_chunk *chunk)
{
	struct raid56_chunk r = { .w = w, .ctx = w->ctx, .chunk = chunk };
	int cur = 0, ret, have;

	ret = r56_setup(&r);
	if (!ret)
		ret = scrub_planner_begin(&w->planner, chunk);
	if (ret)
		goto out;
	have = ret = plan_batch(&r, &r.b[cur]);
	if (ret > 0)
		ret = submit_batch(&r, cur);
	while (ret >= 0 && have > 0) {
		int next = !cur, have_next;

		/* The next batch is in flight while this one is verified. */
		have_next = ret = plan_batch(&r, &r.b[next]);
		if (ret > 0)
			ret = submit_batch(&r, next);
		if (ret < 0)
			break;
		ret = r.ring_ok ? wait_batch(&r, cur) : 0;
		if (ret)
			break;
		ret = batch_states(&r, &r.b[cur]);
		if (ret)
			break;
		for (uint32_t rr = 0; rr < r.b[cur].nrows; rr++)
			scrub_row(&r, &r.b[cur], rr);
		cur = next;
		have = have_next;
	}
	if (ret > 0)
		ret = 0;
out:
	scrub_planner_end(&w->planner);
	r56_release(&r);
	return ret;
}
