#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <isa-l.h>
#include <liburing.h>

#include "common/error.h"
#include "disk/io.h"
#include "format/raid6.h"

/* ---- reads that give up on a stalled device ---- */

static unsigned int io_timeout = BX_IO_TIMEOUT_DEFAULT;

void bx_io_set_timeout(unsigned int seconds)
{
	__atomic_store_n(&io_timeout, seconds, __ATOMIC_RELAXED);
}

unsigned int bx_io_timeout(void)
{
	return __atomic_load_n(&io_timeout, __ATOMIC_RELAXED);
}

/*
 * Each thread reads through a ring of its own into an aligned bounce buffer
 * (O_DIRECT descriptors need one; the caller's buffer may be freed the
 * moment a read is given up, and the kernel may still fill it).
 */
struct read_ring {
	struct io_uring ring;
	bool ready;
	bool unavailable;             /* io_uring cannot be set up: plain pread, no timeout */
	uint8_t *bounce;
	size_t bounce_len;
};

/*
 * A read given up on: its ring and bounce buffer stay its own until it
 * completes. Until then its device counts as stalled and every read of it
 * fails at once; once it has completed, the device is read again.
 */
struct stalled_read {
	dev_t dev;
	ino_t ino;
	dev_t rdev;
	struct io_uring ring;
	uint8_t *bounce;
	struct stalled_read *next;
};

static __thread struct read_ring thread_ring;
static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t stalled_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stalled_read *stalled;
static unsigned int nr_stalled;       /* atomic: reads skip the lookup while 0 */

static void ring_release(struct read_ring *rr)
{
	if (rr->ready)
		io_uring_queue_exit(&rr->ring);
	free(rr->bounce);
	*rr = (struct read_ring){ 0 };
}

static void ring_thread_exit(void *arg)
{
	ring_release(arg);
}

/* A forked child shares the parent's ring mappings: it sets up its own. */
static void ring_after_fork(void)
{
	if (thread_ring.ready)
		io_uring_queue_exit(&thread_ring.ring);
	thread_ring.ready = false;
}

static void ring_init_once(void)
{
	pthread_key_create(&ring_key, ring_thread_exit);
	pthread_atfork(NULL, NULL, ring_after_fork);
}

static struct read_ring *ring_for(size_t len)
{
	struct read_ring *rr = &thread_ring;

	pthread_once(&ring_once, ring_init_once);
	if (rr->unavailable)
		return NULL;
	if (!rr->ready) {
		if (io_uring_queue_init(2, &rr->ring, 0)) {
			rr->unavailable = true;
			return NULL;
		}
		rr->ready = true;
		pthread_setspecific(ring_key, rr);
	}
	if (rr->bounce_len < len) {
		void *p = NULL;

		if (posix_memalign(&p, 4096, len))
			return NULL;
		free(rr->bounce);
		rr->bounce = p;
		rr->bounce_len = len;
	}
	return rr;
}

static bool same_device(const struct stalled_read *s, const struct stat *st)
{
	if (S_ISBLK(st->st_mode))
		return s->rdev == st->st_rdev;
	return s->dev == st->st_dev && s->ino == st->st_ino;
}

/* True while a read of the device behind @fd has been given up on and not completed. */
static bool device_stalled(int fd)
{
	struct stalled_read **pp, *s;
	struct stat st;
	bool found = false;

	if (!__atomic_load_n(&nr_stalled, __ATOMIC_RELAXED) || fstat(fd, &st) < 0)
		return false;
	pthread_mutex_lock(&stalled_lock);
	for (pp = &stalled; (s = *pp); pp = &s->next) {
		struct io_uring_cqe *cqe;

		if (!same_device(s, &st))
			continue;
		if (io_uring_peek_cqe(&s->ring, &cqe)) {
			found = true;
			break;
		}
		/* It has completed: the device answers again. */
		*pp = s->next;
		io_uring_queue_exit(&s->ring);
		free(s->bounce);
		free(s);
		__atomic_fetch_sub(&nr_stalled, 1, __ATOMIC_RELAXED);
		break;
	}
	pthread_mutex_unlock(&stalled_lock);
	return found;
}

/*
 * A buffered read that is given up on keeps its page cache pages locked
 * until the device answers, and the kernel waits for them when the device is
 * closed for the last time: this process could not exit. A detached process
 * (a grandchild, so no one waits for it) keeps this process's device and
 * image descriptors open and waits for the read in its place, so this
 * process ends at once; it exits as soon as the device answers. Everything
 * else (pipes, terminals) it closes, so no caller waits on it either. Only
 * async-signal-safe calls after the fork.
 */
static void keep_open_until_answered(int fd, uint64_t offset)
{
	long max_fd = sysconf(_SC_OPEN_MAX);
	pid_t pid;

	if ((fcntl(fd, F_GETFL) & O_DIRECT) || max_fd < 0)
		return;         /* direct reads lock no page: nothing to wait for */
	pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			char byte;

			setsid();
			for (int i = 0; i < max_fd && i < 65536; i++) {
				struct stat st;

				if (i != fd && (fstat(i, &st) < 0 ||
						(!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))))
					close(i);
			}
			while (pread(fd, &byte, 1, (off_t)offset) < 0 && errno == EINTR)
				;
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* Hands the thread's ring and buffer over to the read in flight on @fd. */
static void give_up(struct read_ring *rr, int fd, uint64_t offset)
{
	struct stalled_read *s = calloc(1, sizeof(*s));
	struct stat st;

	if (s && fstat(fd, &st) == 0) {
		*s = (struct stalled_read){ st.st_dev, st.st_ino, st.st_rdev, rr->ring, rr->bounce };
		pthread_mutex_lock(&stalled_lock);
		s->next = stalled;
		stalled = s;
		__atomic_fetch_add(&nr_stalled, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&stalled_lock);
	} else {
		free(s);      /* nothing to remember it by: the ring and buffer are left to it */
	}
	*rr = (struct read_ring){ 0 };
	keep_open_until_answered(fd, offset);
}

static void deadline_after(struct timespec *ts, unsigned int seconds)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += seconds;
}

static bool wait_left(const struct timespec *deadline, struct __kernel_timespec *left)
{
	struct timespec now;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ns = (long long)(deadline->tv_sec - now.tv_sec) * 1000000000LL +
	     (deadline->tv_nsec - now.tv_nsec);
	if (ns <= 0)
		return false;
	left->tv_sec = ns / 1000000000LL;
	left->tv_nsec = ns % 1000000000LL;
	return true;
}

/* One read through the ring: bytes read, a negative errno, or -ETIMEDOUT. */
static ssize_t ring_read(struct read_ring *rr, int fd, void *buf, size_t len, uint64_t offset,
			 unsigned int timeout)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rr->ring);
	struct io_uring_cqe *cqe;
	struct timespec deadline;
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, rr->bounce, (unsigned int)len, offset);
	ret = io_uring_submit(&rr->ring);
	if (ret < 0)
		return ret;
	deadline_after(&deadline, timeout);
	for (;;) {
		struct __kernel_timespec left;

		if (!wait_left(&deadline, &left)) {
			give_up(rr, fd, offset);
			return -ETIMEDOUT;
		}
		ret = io_uring_wait_cqe_timeout(&rr->ring, &cqe, &left);
		if (ret == 0)
			break;
		if (ret != -EINTR && ret != -ETIME)
			return ret;
	}
	ret = cqe->res;
	io_uring_cqe_seen(&rr->ring, cqe);
	if (ret > 0)
		memcpy(buf, rr->bounce, (size_t)ret);
	return ret;
}

ssize_t bx_pread_timed(int fd, void *buf, size_t len, uint64_t offset)
{
	unsigned int timeout = bx_io_timeout();
	size_t done = 0;

	if (timeout && device_stalled(fd))
		return -ETIMEDOUT;
	while (done < len) {
		struct read_ring *rr = timeout ? ring_for(len - done) : NULL;
		ssize_t ret;

		if (rr) {
			ret = ring_read(rr, fd, (uint8_t *)buf + done, len - done, offset + done,
					timeout);
		} else {
			ret = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(offset + done));
			if (ret < 0)
				ret = -errno;
		}
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		if (ret == 0)
			break;
		done += (size_t)ret;
	}
	return (ssize_t)done;
}

int bx_read_physical(const struct bx_device *dev, void *buf, size_t len, uint64_t physical)
{
	ssize_t ret = bx_pread_timed(dev->fd, buf, len, physical);

	if (ret == -ETIMEDOUT)
		return bx_error(-ETIMEDOUT, "%s: read of %zu bytes at %llu did not complete within "
				"%u s (the device stalls)", dev->path, len,
				(unsigned long long)physical, bx_io_timeout());
	if (ret < 0) {
		errno = (int)-ret;
		return bx_error((int)ret, "%s: read of %zu bytes at %llu failed: %m",
				dev->path, len, (unsigned long long)physical);
	}
	if ((size_t)ret < len)
		return bx_error(-EIO, "%s: read at %llu is beyond the end (device truncated?)",
				dev->path, (unsigned long long)(physical + (uint64_t)ret));
	return 0;
}

static int read_loc(const struct bx_stripe_loc *loc, void *buf, size_t len)
{
	if (!loc->dev)
		return bx_error(-ENODEV, "devid %llu is missing", (unsigned long long)loc->devid);
	return bx_read_physical(loc->dev, buf, len, loc->physical);
}

/*
 * Rebuilds @len bytes at @in_stripe of data stripe @target from the other
 * data stripes and parity @parity (0 = P by XOR, 1 = Q in GF(2^8)).
 */
static int raid56_rebuild(const struct bx_full_stripe *fstripe, int target, int parity,
			  uint64_t in_stripe, uint8_t *out, size_t len)
{
	uint8_t *tmp = malloc(len);
	struct bx_stripe_loc parity_loc = fstripe->stripes[fstripe->nr_data + parity];
	int ret;

	if (!tmp)
		return bx_error(-ENOMEM, "out of memory");
	parity_loc.physical += in_stripe;
	ret = read_loc(&parity_loc, out, len);
	for (int i = 0; !ret && i < fstripe->nr_data; i++) {
		struct bx_stripe_loc loc = fstripe->stripes[i];
		uint8_t coef = bx_raid6_coef(i);

		if (i == target)
			continue;
		loc.physical += in_stripe;
		ret = read_loc(&loc, tmp, len);
		for (size_t b = 0; !ret && b < len; b++)
			out[b] ^= parity ? gf_mul(coef, tmp[b]) : tmp[b];
	}
	if (!ret && parity) {
		uint8_t inv = gf_inv(bx_raid6_coef(target));

		for (size_t b = 0; b < len; b++)
			out[b] = gf_mul(inv, out[b]);
	}
	free(tmp);
	return ret;
}

static int read_raid56_rebuild(struct bx_fs *fs, uint64_t logical, uint8_t *buf, size_t len,
			       int mirror)
{
	struct bx_full_stripe fstripe;
	uint64_t in_row;
	int ret;

	ret = bx_map_full_stripe(fs, logical, &fstripe);
	if (ret)
		return ret;
	if (mirror - 2 >= fstripe.nr_parity)
		return bx_error(-EINVAL, "logical %llu has no mirror %d",
				(unsigned long long)logical, mirror);
	in_row = logical - fstripe.logical_start;
	return raid56_rebuild(&fstripe, (int)(in_row / fstripe.stripe_len), mirror - 2,
			      in_row % fstripe.stripe_len, buf, len);
}

static int is_raid56(const struct bx_fs *fs, uint64_t logical)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);

	return chunk && (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK);
}

int bx_read_logical(struct bx_fs *fs, uint64_t logical, void *buf, size_t len, int mirror)
{
	uint8_t *out = buf;

	while (len) {
		struct bx_stripe_loc loc;
		uint64_t piece = len;
		int ret;

		ret = bx_map_logical(fs, logical, &piece, mirror > 1 && is_raid56(fs, logical) ?
				     1 : mirror, &loc);
		if (ret)
			return ret;
		if (mirror > 1 && is_raid56(fs, logical))
			ret = read_raid56_rebuild(fs, logical, out, piece, mirror);
		else
			ret = read_loc(&loc, out, piece);
		if (ret)
			return bx_error_wrap(ret, "logical %llu mirror %d",
					     (unsigned long long)logical, mirror);
		logical += piece;
		out += piece;
		len -= piece;
	}
	return 0;
}

void bx_readahead_logical(struct bx_fs *fs, uint64_t logical, uint64_t len, int mirror)
{
	while (len) {
		struct bx_stripe_loc loc;
		uint64_t piece = len;

		if (bx_map_logical(fs, logical, &piece, mirror, &loc))
			return;
		if (loc.dev)
			bx_readahead_physical(loc.dev->fd, loc.physical, piece);
		logical += piece;
		len -= piece;
	}
}

void bx_readahead_physical(int fd, uint64_t offset, uint64_t len)
{
	posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
}

int bx_open_direct(const struct bx_device *dev)
{
	char self[64];
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", dev->fd);
	fd = open(self, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fd = open(self, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bx_error(-errno, "%s: cannot open for reading: %m", dev->path);
	return fd;
}
