/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests to member devices that give up on a stalled device; see
 * timed-io.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <liburing.h>

#include "disk/timed-io.h"

/*
 * Each thread reads and writes through a ring of its own and an aligned
 * bounce buffer (O_DIRECT descriptors need one; the caller's buffer may be
 * freed the moment a request is given up, and the kernel may still fill it,
 * or still be writing from it).
 */
struct timed_ring {
	struct io_uring ring;
	bool ready;
	bool unavailable;             /* io_uring cannot be set up: plain calls, no timeout */
	uint8_t *bounce;
	size_t bounce_len;
};

/*
 * A request given up on: its ring and bounce buffer stay its own until it
 * completes. Until then its device counts as stalled and every request to
 * it fails at once; once it has completed, the device is used again.
 */
struct stalled_request {
	dev_t dev;
	ino_t ino;
	dev_t rdev;
	struct io_uring ring;
	uint8_t *bounce;
	struct stalled_request *next;
};

static __thread struct timed_ring thread_ring;
static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t stalled_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stalled_request *stalled;
static unsigned int nr_stalled;       /* atomic: requests skip the lookup while 0 */

static void ring_release(struct timed_ring *rr)
{
	if (rr->ready)
		io_uring_queue_exit(&rr->ring);
	free(rr->bounce);
	*rr = (struct timed_ring){ 0 };
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

static struct timed_ring *ring_for(size_t len)
{
	struct timed_ring *rr = &thread_ring;

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

static bool same_device(const struct stalled_request *s, const struct stat *st)
{
	if (S_ISBLK(st->st_mode))
		return s->rdev == st->st_rdev;
	return s->dev == st->st_dev && s->ino == st->st_ino;
}

/* True while a request to the device behind @fd has been given up on and not completed. */
static bool device_stalled(int fd)
{
	struct stalled_request **pp, *s;
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
 * until the device answers, and a write or flush its dirty pages: the kernel
 * waits for them when the device is closed for the last time, so this
 * process could not exit. A detached process (a grandchild, so no one waits
 * for it) keeps this process's device and image descriptors open and waits
 * for the device in its place (reading a byte at @offset, or with @flush
 * flushing), so this process ends at once; it exits as soon as the device
 * answers. Everything else (pipes, terminals) it closes, so no caller waits
 * on it either. Only async-signal-safe calls after the fork.
 */
static void keep_open_until_answered(int fd, uint64_t offset, bool flush)
{
	long max_fd = sysconf(_SC_OPEN_MAX);
	pid_t pid;

	if ((fcntl(fd, F_GETFL) & O_DIRECT) || max_fd < 0)
		return;         /* direct requests hold no page: nothing to wait for */
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
			if (flush)
				fdatasync(fd);
			else
				while (pread(fd, &byte, 1, (off_t)offset) < 0 && errno == EINTR)
					;
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* Hands the thread's ring and buffer over to the request in flight on @fd. */
static void give_up(struct timed_ring *rr, int fd, uint64_t offset, bool flush)
{
	struct stalled_request *s = calloc(1, sizeof(*s));
	struct stat st;

	if (s && fstat(fd, &st) == 0) {
		*s = (struct stalled_request){ st.st_dev, st.st_ino, st.st_rdev, rr->ring, rr->bounce };
		pthread_mutex_lock(&stalled_lock);
		s->next = stalled;
		stalled = s;
		__atomic_fetch_add(&nr_stalled, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&stalled_lock);
	} else {
		free(s);      /* nothing to remember it by: the ring and buffer are left to it */
	}
	*rr = (struct timed_ring){ 0 };
	keep_open_until_answered(fd, offset, flush);
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

/*
 * Submits the request prepared in @rr's ring and waits for it: its result,
 * or -ETIMEDOUT when it has not completed after @timeout seconds (then it is
 * given up: the ring and buffer are its own until it completes).
 */
static int ring_complete(struct timed_ring *rr, int fd, uint64_t offset, unsigned int timeout,
			 bool flush)
{
	struct io_uring_cqe *cqe;
	struct timespec deadline;
	int ret = io_uring_submit(&rr->ring);

	if (ret < 0)
		return ret;
	deadline_after(&deadline, timeout);
	for (;;) {
		struct __kernel_timespec left;

		if (!wait_left(&deadline, &left)) {
			give_up(rr, fd, offset, flush);
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
	return ret;
}

/* One read through the ring: bytes read, a negative errno, or -ETIMEDOUT. */
static ssize_t ring_read(struct timed_ring *rr, int fd, void *buf, size_t len, uint64_t offset,
			 unsigned int timeout)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rr->ring);
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, rr->bounce, (unsigned int)len, offset);
	ret = ring_complete(rr, fd, offset, timeout, false);
	if (ret > 0)
		memcpy(buf, rr->bounce, (size_t)ret);
	return ret;
}

/* One write of the first @len bytes of the bounce buffer: bytes written, an errno, -ETIMEDOUT. */
static ssize_t ring_write(struct timed_ring *rr, int fd, size_t len, uint64_t offset,
			  unsigned int timeout)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rr->ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_write(sqe, fd, rr->bounce, (unsigned int)len, offset);
	return ring_complete(rr, fd, offset, timeout, true);
}

ssize_t bx_pread_timed(int fd, void *buf, size_t len, uint64_t offset, unsigned int timeout)
{
	size_t done = 0;

	if (timeout && device_stalled(fd))
		return -ETIMEDOUT;
	while (done < len) {
		struct timed_ring *rr = timeout ? ring_for(len - done) : NULL;
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

static size_t iov_total(const struct iovec *iov, int nr)
{
	size_t len = 0;

	for (int i = 0; i < nr; i++)
		len += iov[i].iov_len;
	return len;
}

/* Without a timeout (or a ring): pwritev until all is written. */
static int plain_pwritev(int fd, const struct iovec *iov, int nr, uint64_t offset)
{
	struct iovec left[IOV_MAX];
	int first = 0;

	if (nr > IOV_MAX)
		return -EINVAL;
	memcpy(left, iov, (size_t)nr * sizeof(*iov));
	while (first < nr) {
		ssize_t n = pwritev(fd, left + first, nr - first, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		offset += (uint64_t)n;
		/* Skip what was written, trimming a partly written vector. */
		while (n > 0 && first < nr) {
			if ((size_t)n >= left[first].iov_len) {
				n -= (ssize_t)left[first].iov_len;
				first++;
			} else {
				left[first].iov_base = (uint8_t *)left[first].iov_base + n;
				left[first].iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

int bx_pwritev_timed(int fd, const struct iovec *iov, int nr, uint64_t offset,
		     unsigned int timeout)
{
	size_t len = iov_total(iov, nr), at = 0;
	struct timed_ring *rr;

	if (timeout && device_stalled(fd))
		return -ETIMEDOUT;
	rr = timeout ? ring_for(len) : NULL;
	if (!rr)
		return plain_pwritev(fd, iov, nr, offset);
	for (int i = 0; i < nr; i++) {
		memcpy(rr->bounce + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	while (len) {
		ssize_t ret = ring_write(rr, fd, len, offset, timeout);

		if (ret == -EINTR)
			continue;
		if (ret <= 0)
			return ret < 0 ? (int)ret : -EIO;
		len -= (size_t)ret;
		offset += (uint64_t)ret;
		/* What is left moves to the front: the ring writes from the buffer's start. */
		memmove(rr->bounce, rr->bounce + ret, len);
	}
	return 0;
}

int bx_pwrite_timed(int fd, const void *buf, size_t len, uint64_t offset, unsigned int timeout)
{
	struct iovec iov = { (void *)buf, len };

	return bx_pwritev_timed(fd, &iov, 1, offset, timeout);
}

int bx_fdatasync_timed(int fd, unsigned int timeout)
{
	struct timed_ring *rr;
	struct io_uring_sqe *sqe;

	if (timeout && device_stalled(fd))
		return -ETIMEDOUT;
	rr = timeout ? ring_for(0) : NULL;
	if (!rr)
		return fdatasync(fd) < 0 ? -errno : 0;
	sqe = io_uring_get_sqe(&rr->ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
	return ring_complete(rr, fd, 0, timeout, true);
}
