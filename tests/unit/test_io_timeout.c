/*
 * The read path's timeout (disk/io.c), on a pipe: a read that
 * waits for data that does not come stands for a device that stalls. It
 * must be given up after the timeout, later reads of the same "device"
 * must fail at once while it stays stalled, and once the abandoned read has
 * completed (data arrived) the device is read again.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disk/io.h"
#include "tests/unit/unit.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	char buf[16] = "";
	int fds[2];
	double t;

	CHECK_EQ_U64(bx_io_timeout(), BX_IO_TIMEOUT_DEFAULT);
	if (pipe(fds)) {
		perror("pipe");
		return 1;
	}
	bx_io_set_timeout(1);
	CHECK(write(fds[1], "hello", 5) == 5);
	CHECK_EQ_U64(bx_pread_timed(fds[0], buf, 5, 0), 5);
	CHECK(!memcmp(buf, "hello", 5));

	/* Nothing comes: given up after the timeout, not before. */
	t = now();
	CHECK(bx_pread_timed(fds[0], buf, 4, 0) == -ETIMEDOUT);
	CHECK(now() - t >= 0.9);

	/* Still stalled: fails at once, whatever the timeout. */
	bx_io_set_timeout(600);
	t = now();
	CHECK(bx_pread_timed(fds[0], buf, 4, 0) == -ETIMEDOUT);
	CHECK(now() - t < 300);

	/* The abandoned read takes the first 4 bytes; the device answers again. */
	CHECK(write(fds[1], "abcdWXYZ", 8) == 8);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ_U64(bx_pread_timed(fds[0], buf, 4, 0), 4);
	CHECK(!memcmp(buf, "WXYZ", 4));

	/* 0: no timeout (a plain read). */
	bx_io_set_timeout(0);
	CHECK_EQ_U64(bx_io_timeout(), 0);
	close(fds[0]);
	close(fds[1]);
	return unit_summary();
}
