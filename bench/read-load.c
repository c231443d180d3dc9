/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The readers of bench/readpolicy: N processes read one file through the
 * filesystem, so the kernel's read policy picks the copy of every read. Each
 * is a process of its own, as fio's jobs are, so the pid policy sees N pids.
 *
 *   read-load [--readers N] [--pattern seq|rand] [--bs SIZE] [--bytes TOTAL]
 *             [--buffered] [--seed S] FILE
 *
 * seq: reader i reads its slice [i*TOTAL/N, (i+1)*TOTAL/N) of the file from
 * the start, one --bs request after the other. rand: reader i reads TOTAL/N
 * bytes in --bs requests at random --bs-aligned offsets of the whole file
 * (seeded: the same offsets for the same --seed and i). O_DIRECT unless
 * --buffered; one request in flight per reader. The readers start together
 * (released by the parent once all are ready); the time is from their
 * release until the last one has finished.
 *
 * Output: "readers N pattern P bytes B seconds S" on one line; exit 1 with a
 * message when a read fails or comes short.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/timing.h"

#define MAX_READERS 256

struct load {
	const char *path;
	unsigned int readers;
	bool random;
	bool buffered;
	uint64_t bs;
	uint64_t total;
	uint64_t seed;
	uint64_t file_size;
};

/* xorshift64*: the same offsets for the same seed, no libc state. */
static uint64_t next_random(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 2685821657736338717ULL;
}

static int read_one(int fd, void *buf, uint64_t bs, uint64_t offset)
{
	ssize_t got = pread(fd, buf, bs, (off_t)offset);

	if (got == (ssize_t)bs)
		return 0;
	if (got < 0)
		fprintf(stderr, "read-load: read at %" PRIu64 ": %s\n", offset, strerror(errno));
	else
		fprintf(stderr, "read-load: short read at %" PRIu64 ": %zd bytes\n", offset, got);
	return 1;
}

/* Reader @index: says it is @ready, waits on @start, reads its share; 0 or 1. */
static int reader(const struct load *l, unsigned int index, int ready, int start)
{
	uint64_t share = l->total / l->readers / l->bs * l->bs;
	uint64_t blocks = l->file_size / l->bs;
	uint64_t state = (l->seed + index + 1) * 0x9e3779b97f4a7c15ULL;
	void *buf;
	char go;
	int fd;

	fd = open(l->path, O_RDONLY | (l->buffered ? 0 : O_DIRECT));
	if (fd < 0 || posix_memalign(&buf, 4096, l->bs)) {
		fprintf(stderr, "read-load: %s: %s\n", l->path, strerror(errno));
		return 1;
	}
	go = 1;
	if (write(ready, &go, 1) != 1 || read(start, &go, 1) < 0)
		return 1;
	for (uint64_t done = 0; done < share; done += l->bs) {
		uint64_t offset = l->random ? next_random(&state) % blocks * l->bs :
				  index * share + done;

		if (read_one(fd, buf, l->bs, offset))
			return 1;
	}
	return 0;
}

static int parse_size(const char *arg, uint64_t *value)
{
	char *end;

	errno = 0;
	*value = strtoull(arg, &end, 0);
	if (errno || end == arg)
		return -1;
	switch (*end) {
	case 'k': case 'K': *value <<= 10; end++; break;
	case 'm': case 'M': *value <<= 20; end++; break;
	case 'g': case 'G': *value <<= 30; end++; break;
	}
	return *end ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: read-load [--readers N] [--pattern seq|rand] [--bs SIZE] "
		"[--bytes TOTAL] [--buffered] [--seed S] FILE\n");
	return 2;
}

static int parse_args(int argc, char **argv, struct load *l)
{
	static const struct option opts[] = {
		{ "readers", required_argument, NULL, 'r' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "bs", required_argument, NULL, 'b' },
		{ "bytes", required_argument, NULL, 't' },
		{ "buffered", no_argument, NULL, 'B' },
		{ "seed", required_argument, NULL, 's' },
		{ 0 },
	};
	uint64_t readers = 1;
	struct stat st;
	int opt;

	*l = (struct load){ .bs = 65536 };
	while ((opt = getopt_long(argc, argv, "r:p:b:t:Bs:", opts, NULL)) != -1) {
		if ((opt == 'r' && parse_size(optarg, &readers)) ||
		    (opt == 'b' && parse_size(optarg, &l->bs)) ||
		    (opt == 't' && parse_size(optarg, &l->total)) ||
		    (opt == 's' && parse_size(optarg, &l->seed)) ||
		    (opt == 'p' && strcmp(optarg, "seq") && strcmp(optarg, "rand")) || opt == '?')
			return usage();
		if (opt == 'p')
			l->random = !strcmp(optarg, "rand");
		if (opt == 'B')
			l->buffered = true;
	}
	if (optind != argc - 1 || !readers || readers > MAX_READERS || !l->bs || l->bs % 4096)
		return usage();
	l->readers = (unsigned int)readers;
	l->path = argv[optind];
	if (stat(l->path, &st)) {
		fprintf(stderr, "read-load: %s: %s\n", l->path, strerror(errno));
		return 1;
	}
	l->file_size = (uint64_t)st.st_size;
	if (!l->total)
		l->total = l->file_size;
	if (l->file_size < l->bs || (!l->random && l->total > l->file_size)) {
		fprintf(stderr, "read-load: %s: %" PRIu64 " bytes, too small for --bytes %" PRIu64 "\n",
			l->path, l->file_size, l->total);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pid_t pids[MAX_READERS];
	int ready[2], start[2], status, failed = 0, ret;
	struct load l;
	double t0;

	ret = parse_args(argc, argv, &l);
	if (ret)
		return ret;
	if (pipe(ready) || pipe(start))
		return 1;
	for (unsigned int i = 0; i < l.readers; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			close(start[1]);
			close(ready[0]);
			_exit(reader(&l, i, ready[1], start[0]));
		}
	}
	close(start[0]);
	close(ready[1]);
	/* Each reader has opened the file and allocated its buffer: one byte each. */
	for (unsigned int i = 0; i < l.readers; i++) {
		char byte;

		if (read(ready[0], &byte, 1) != 1)
			break;
	}
	t0 = bench_now();
	close(start[1]);        /* every reader's read() of the pipe returns: go */
	for (unsigned int i = 0; i < l.readers; i++)
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	printf("readers %u pattern %s bytes %" PRIu64 " seconds %.3f\n", l.readers,
	       l.random ? "rand" : "seq", l.total / l.readers / l.bs * l.bs * l.readers,
	       bench_now() - t0);
	return failed;
}
