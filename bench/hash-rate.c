/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hashing limit of a scrub: MiB/s of btrfsx_csum over 4 KiB sectors on
 * N threads at once (default: every online CPU), each hashing its own 4 MiB
 * buffer (a read buffer's size) over and over for about a second. Built and
 * run by bench/scrub, which prints the figure next to the scrub's rate.
 *
 *   hash-rate crc32c|xxhash|sha256|blake2 [threads] [seconds]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/timing.h"
#include "format/csum.h"
#include "format/ctree.h"

#define SECTOR 4096
#define BUFFER (4u << 20)

struct hasher {
	pthread_t tid;
	unsigned int csum_type;
	double seconds;
	uint64_t bytes;
};

static void *hash_main(void *arg)
{
	struct hasher *h = arg;
	uint8_t *buf = malloc(BUFFER), out[32];
	double end;

	if (!buf)
		return NULL;
	for (size_t i = 0; i < BUFFER; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	end = bench_now() + h->seconds;
	while (bench_now() < end) {
		for (size_t off = 0; off < BUFFER; off += SECTOR)
			btrfsx_csum(h->csum_type, buf + off, SECTOR, out);
		h->bytes += BUFFER;
	}
	free(buf);
	return NULL;
}

static int csum_type_of(const char *name)
{
	static const struct { const char *name; unsigned int type; } names[] = {
		{ "crc32c", BTRFS_CSUM_TYPE_CRC32 }, { "xxhash", BTRFS_CSUM_TYPE_XXHASH },
		{ "sha256", BTRFS_CSUM_TYPE_SHA256 }, { "blake2", BTRFS_CSUM_TYPE_BLAKE2 },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].name))
			return (int)names[i].type;
	return -1;
}

int main(int argc, char **argv)
{
	long threads = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
	double seconds = argc > 3 ? atof(argv[3]) : 1.0, start, elapsed;
	int type = argc > 1 ? csum_type_of(argv[1]) : -1;
	struct hasher *h;
	uint64_t bytes = 0;

	if (type < 0 || threads < 1 || seconds <= 0) {
		fprintf(stderr, "usage: hash-rate crc32c|xxhash|sha256|blake2 [threads] [seconds]\n");
		return 2;
	}
	h = calloc((size_t)threads, sizeof(*h));
	if (!h)
		return 1;
	start = bench_now();
	for (long i = 0; i < threads; i++) {
		h[i] = (struct hasher){ .csum_type = (unsigned int)type, .seconds = seconds };
		if (pthread_create(&h[i].tid, NULL, hash_main, &h[i]))
			return 1;
	}
	for (long i = 0; i < threads; i++) {
		pthread_join(h[i].tid, NULL);
		bytes += h[i].bytes;
	}
	elapsed = bench_now() - start;
	printf("%.1f\n", (double)bytes / elapsed / (1 << 20));
	free(h);
	return 0;
}
