/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs inside the test guests (built static: the initramfs has no libc).
 *
 *   guest-fsync <dir> <stop-file> [<interval-ms>]
 *       The foreground load of a busy file server: every <interval-ms>
 *       (default 50) write one 4 KiB file in <dir> (1000 names, reused) and
 *       fsync it, until <stop-file> exists. Then prints
 *       "@@R fsync <count> <p50> <p90> <p99> <max>" with the latencies of
 *       open+write+fsync+close in milliseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (1 << 20)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

/* One file written and flushed; its latency in ms, or -1 with errno set. */
static double one_fsync(const char *dir, unsigned int i, const char *buf)
{
	char path[4096];
	double t0 = now_ms();
	int fd, ok;

	snprintf(path, sizeof(path), "%s/f%u", dir, i % 1000);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	ok = write(fd, buf, 4096) == 4096 && fsync(fd) == 0;
	close(fd);
	return ok ? now_ms() - t0 : -1;
}

int main(int argc, char **argv)
{
	static double lat[MAX_SAMPLES];
	static char buf[4096];
	unsigned int interval = argc > 3 ? (unsigned int)atoi(argv[3]) : 50;
	size_t n = 0;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: guest-fsync <dir> <stop-file> [<interval-ms>]\n");
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	while (access(argv[2], F_OK) != 0 && n < MAX_SAMPLES) {
		double ms = one_fsync(argv[1], (unsigned int)n, buf);

		if (ms < 0) {
			fprintf(stderr, "guest-fsync: %s: %s\n", argv[1], strerror(errno));
			break;
		}
		lat[n++] = ms;
		usleep(interval * 1000);
	}
	qsort(lat, n, sizeof(lat[0]), cmp_double);
	printf("@@R fsync %zu %.1f %.1f %.1f %.1f\n", n, percentile(lat, n, 50),
	       percentile(lat, n, 90), percentile(lat, n, 99), n ? lat[n - 1] : 0.0);
	return 0;
}
