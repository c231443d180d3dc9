/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One chunk moved by the kernel (balance-chunk.h). */
#include <errno.h>
#include <linux/btrfs.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "common/clock.h"
#include "common/error.h"
#include "format/ctree.h"
#include "fsops/balance-chunk.h"

#define POLL_SECONDS 0.1

void bx_balance_chunk_args(uint64_t logical, uint64_t type, struct btrfs_ioctl_balance_args *a)
{
	struct btrfs_balance_args one = {
		.flags = BTRFS_BALANCE_ARGS_VRANGE,
		.vstart = logical,
		.vend = logical + 1,
	};

	memset(a, 0, sizeof(*a));
	if (type & BTRFS_BLOCK_GROUP_DATA) {
		a->flags |= BTRFS_BALANCE_DATA;
		a->data = one;
	}
	/* Mixed block groups: the kernel wants data and metadata with the same arguments. */
	if (type & BTRFS_BLOCK_GROUP_METADATA) {
		a->flags |= BTRFS_BALANCE_METADATA;
		a->meta = one;
	}
	if (type & BTRFS_BLOCK_GROUP_SYSTEM) {
		a->flags |= BTRFS_BALANCE_SYSTEM;
		a->sys = one;
	}
}

struct balance_call {
	int fd;
	struct btrfs_ioctl_balance_args args;
	int err;			/* 0 or the errno of the ioctl */
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *balance_thread(void *arg)
{
	struct balance_call *b = arg;
	int ret = ioctl(b->fd, BTRFS_IOC_BALANCE_V2, &b->args);
	int err = ret < 0 ? errno : ret > 0 ? EBUSY : 0;	/* > 0: another exclusive operation */

	pthread_mutex_lock(&b->lock);
	b->err = err;
	b->done = true;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static void wait_a_little(struct balance_call *b, double seconds)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(seconds * 1e9);
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&b->lock);
	if (!b->done)
		pthread_cond_timedwait(&b->cond, &b->lock, &until);
	pthread_mutex_unlock(&b->lock);
}

int bx_balance_chunk(int fd, const char *path, uint64_t logical, uint64_t type,
		     bx_balance_chunk_poll poll, void *arg, double *seconds)
{
	struct balance_call b = { .fd = fd };
	sigset_t block, old;
	bool cancel_sent = false;
	pthread_t thread;
	double t0 = bx_monotonic_seconds();
	int ret;

	bx_balance_chunk_args(logical, type, &b.args);
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	/* Signals go to the calling thread, which turns them into a cancel. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	ret = pthread_create(&thread, NULL, balance_thread, &b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pthread_mutex_destroy(&b.lock);
		pthread_cond_destroy(&b.cond);
		return bx_error(-ret, "cannot start a thread: %s", strerror(ret));
	}
	for (;;) {
		bool done;

		wait_a_little(&b, POLL_SECONDS);
		pthread_mutex_lock(&b.lock);
		done = b.done;
		pthread_mutex_unlock(&b.lock);
		if (done)
			break;
		/*
		 * The cancel returns once the kernel has stopped; the balance call
		 * then ends too. ENOTCONN: the call has not reached the kernel's
		 * balance yet (or has left it): try again at the next poll.
		 */
		if (!cancel_sent && poll && poll(arg, bx_monotonic_seconds() - t0) &&
		    ioctl(fd, BTRFS_IOC_BALANCE_CTL, BTRFS_BALANCE_CTL_CANCEL) == 0)
			cancel_sent = true;
	}
	pthread_join(thread, NULL);
	pthread_mutex_destroy(&b.lock);
	pthread_cond_destroy(&b.cond);
	*seconds = bx_monotonic_seconds() - t0;
	/* A cancel that came after the chunk was done leaves it moved. */
	if (b.err == ECANCELED)
		return cancel_sent ? -EINTR : bx_error(-ECANCELED, "%s: someone cancelled the "
						       "balance of chunk %llu", path,
						       (unsigned long long)logical);
	return -b.err;
}

