/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The requests that give up on a stalled device (disk/timed-io.c), on a
 * pipe: a read that waits for data that does not come, or a write that
 * waits for room in a full pipe, stands for a device that stalls. It must be
 * given up after the timeout, later requests to the same "device" must fail
 * at once while it stays stalled (a second timeout of 600 s would hang the
 * test), and once the abandoned request has completed (data arrived, room
 * was made) the device is used again. The timeout is each call's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disk/timed-io.h"
#include "tests/unit/unit.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reads(void)
{
	char buf[16] = "";
	int fds[2];
	double t;

	CHECK(pipe(fds) == 0);
	CHECK(write(fds[1], "hello", 5) == 5);
	CHECK_EQ_U64(bx_pread_timed(fds[0], buf, 5, 0, 1), 5);
	CHECK(!memcmp(buf, "hello", 5));

	/* Nothing comes: given up after the timeout, not before. */
	t = now();
	CHECK(bx_pread_timed(fds[0], buf, 4, 0, 1) == -ETIMEDOUT);
	CHECK(now() - t >= 0.9);

	/* Still stalled: fails at once, whatever the timeout. */
	CHECK(bx_pread_timed(fds[0], buf, 4, 0, 600) == -ETIMEDOUT);

	/* The abandoned read takes the first 4 bytes; the device answers again. */
	CHECK(write(fds[1], "abcdWXYZ", 8) == 8);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ_U64(bx_pread_timed(fds[0], buf, 4, 0, 1), 4);
	CHECK(!memcmp(buf, "WXYZ", 4));
	close(fds[0]);
	close(fds[1]);
}

/* Fills the pipe's buffer of @size bytes, so the next write waits. */
static void fill(int fd, size_t size)
{
	char *junk = calloc(1, size);
	int flags = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	CHECK(write(fd, junk, size) == (ssize_t)size);
	CHECK(write(fd, junk, 1) < 0 && errno == EAGAIN);
	fcntl(fd, F_SETFL, flags);
	free(junk);
}

static void writes(void)
{
	char *drained;
	char buf[8] = "";
	int fds[2], size, ret;

	CHECK(pipe(fds) == 0);
	size = fcntl(fds[1], F_SETPIPE_SZ, 4096);
	CHECK(size >= 4096);
	drained = malloc((size_t)size);
	fill(fds[1], (size_t)size);

	/* No room comes: given up after the timeout. */
	CHECK(bx_pwrite_timed(fds[1], "abcd", 4, 0, 1) == -ETIMEDOUT);
	/* Still stalled: fails at once; flushes too. */
	CHECK(bx_pwrite_timed(fds[1], "efgh", 4, 0, 600) == -ETIMEDOUT);
	CHECK(bx_fdatasync_timed(fds[1], 600) == -ETIMEDOUT);

	/*
	 * Room is made: the abandoned write lands, and once its completion is
	 * in (a moment after its data) the device takes writes again.
	 */
	CHECK(read(fds[0], drained, (size_t)size) == size);
	CHECK(read(fds[0], buf, 4) == 4 && !memcmp(buf, "abcd", 4));
	for (int i = 0; i < 500 && (ret = bx_pwrite_timed(fds[1], "ijkl", 4, 0, 1)) == -ETIMEDOUT;
	     i++)
		usleep(10000);
	CHECK(ret == 0);
	CHECK(read(fds[0], buf, 4) == 4 && !memcmp(buf, "ijkl", 4));
	free(drained);
	close(fds[0]);
	close(fds[1]);
}

/* Writes of several pieces and flushes reach a file whole, and read back. */
static void file_writes(void)
{
	char path[] = "/tmp/btrfsx-test-io-timeout-XXXXXX", buf[12] = "";
	struct iovec iov[3] = { { "abc", 3 }, { "defg", 4 }, { "hijkl", 5 } };
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	CHECK(bx_pwritev_timed(fd, iov, 3, 100, 60) == 0);
	CHECK(bx_fdatasync_timed(fd, 60) == 0);
	CHECK(bx_pwritev_timed(fd, iov, 3, 200, 0) == 0);
	CHECK(bx_fdatasync_timed(fd, 0) == 0);
	CHECK_EQ_U64(bx_pread_timed(fd, buf, 12, 100, 60), 12);
	CHECK(!memcmp(buf, "abcdefghijkl", 12));
	/* 0: no timeout, plain calls. */
	memset(buf, 0, sizeof(buf));
	CHECK_EQ_U64(bx_pread_timed(fd, buf, 12, 200, 0), 12);
	CHECK(!memcmp(buf, "abcdefghijkl", 12));
	close(fd);
}

int main(void)
{
	reads();
	writes();
	file_writes();
	return unit_summary();
}
