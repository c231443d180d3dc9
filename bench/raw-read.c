/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The raw read baseline of bench/scrub: reads a list of byte ranges of
 * block devices with O_DIRECT as fast as the devices give them, and prints
 * how many bytes it read and how long that took. bench/scrub gives it the
 * written parts of the device extents, the bytes a scrub reads too: a read
 * of whole extents counted the holes of the sparse loop images, which the
 * host serves as zeros at memory speed, and fio's replay of the written
 * ranges alone (read_iolog) did not keep the disk busy.
 *
 *   raw-read [--depth N] [--bs SIZE] [FILE]
 *
 * Input (FILE or stdin): lines "DEVICE OFFSET LENGTH", DEVICE a path,
 * OFFSET and LENGTH in bytes, multiples of 4096. Output: "BYTES SECONDS".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/timing.h"

/* The logical block size O_DIRECT needs on every device we read. */
#define SECTOR 4096u
#define HUGE_PAGE (2u << 20)
#define MAX_DEPTH 256u

struct range {
	uint64_t offset;
	uint64_t length;
};

struct device {
	char *path;
	int fd;
	struct range *ranges;
	size_t nr_ranges;
	size_t cap_ranges;
	/* The range being read and the next byte of it to ask for. */
	size_t cur;
	uint64_t pos;
};

/* One read in flight: the io_uring user_data points here. */
struct slot {
	struct device *dev;
	void *buf;
	uint64_t offset;
	unsigned int length;
};

struct reader {
	struct io_uring ring;
	bool ring_ok;
	struct device *devs;
	size_t nr_devs;
	struct slot *slots;
	size_t nr_slots;
	void *buffers;
	size_t buffers_size;
	unsigned int in_flight;
	uint64_t bytes;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: raw-read [--depth N] [--bs SIZE] [FILE]\n"
		"\n"
		"Reads the byte ranges listed in FILE (or stdin), lines \"DEVICE OFFSET LENGTH\",\n"
		"with O_DIRECT: all devices in parallel, each device's ranges in ascending\n"
		"order, and prints \"BYTES SECONDS\" (first submit to last completion).\n"
		"OFFSET and LENGTH are bytes, multiples of 4096.\n"
		"\n"
		"  --depth N    reads in flight per device (default 3)\n"
		"  --bs SIZE    the largest read, bytes or with K, M, G (default 4M)\n"
		"  -h, --help   this text\n"
		"\n"
		"Exit: 0 done, 1 a read or a device failed, 2 bad arguments or input.\n");
}

/* A size in bytes, with an optional binary K, M or G suffix; 0 when invalid. */
static uint64_t parse_size(const char *text)
{
	char *end;
	uint64_t value;

	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno || end == text || *text == '-')
		return 0;
	switch (*end) {
	case 'G':
		value <<= 10;
		/* fallthrough */
	case 'M':
		value <<= 10;
		/* fallthrough */
	case 'K':
		value <<= 10;
		end++;
		break;
	}
	return *end ? 0 : value;
}

static struct device *device_of(struct reader *r, const char *path)
{
	struct device *devs;

	for (size_t i = 0; i < r->nr_devs; i++)
		if (!strcmp(r->devs[i].path, path))
			return &r->devs[i];
	devs = realloc(r->devs, (r->nr_devs + 1) * sizeof(*devs));
	if (!devs)
		return NULL;
	r->devs = devs;
	devs[r->nr_devs] = (struct device){ .fd = -1, .path = strdup(path) };
	if (!devs[r->nr_devs].path)
		return NULL;
	return &devs[r->nr_devs++];
}

static int add_range(struct device *dev, uint64_t offset, uint64_t length)
{
	if (dev->nr_ranges == dev->cap_ranges) {
		size_t cap = dev->cap_ranges ? 2 * dev->cap_ranges : 64;
		struct range *ranges = realloc(dev->ranges, cap * sizeof(*ranges));

		if (!ranges)
			return -ENOMEM;
		dev->ranges = ranges;
		dev->cap_ranges = cap;
	}
	dev->ranges[dev->nr_ranges++] = (struct range){ offset, length };
	return 0;
}

/* Reads the input lines into per-device range lists; 2 on bad input, 1 on no memory. */
static int read_ranges(struct reader *r, FILE *in, const char *name)
{
	char *line = NULL, *path;
	size_t cap = 0;
	unsigned long lineno = 0;
	int ret = 0;

	while (!ret && getline(&line, &cap, in) >= 0) {
		uint64_t offset, length;
		struct device *dev;
		int end = 0;

		lineno++;
		if (line[strspn(line, " \t\n")] == '\0')
			continue;
		if (sscanf(line, "%ms %" SCNu64 " %" SCNu64 " %n", &path, &offset, &length, &end) != 3 ||
		    line[end] != '\0') {
			fprintf(stderr, "raw-read: %s:%lu: not \"DEVICE OFFSET LENGTH\"\n", name, lineno);
			ret = 2;
			break;
		}
		if (offset % SECTOR || length % SECTOR || !length) {
			fprintf(stderr,
				"raw-read: %s:%lu: offset %" PRIu64 " and length %" PRIu64
				" must be multiples of %u (O_DIRECT), the length not 0\n",
				name, lineno, offset, length, SECTOR);
			ret = 2;
		} else if (length > UINT64_MAX - offset) {
			fprintf(stderr, "raw-read: %s:%lu: the range ends past 2^64\n", name, lineno);
			ret = 2;
		} else {
			dev = device_of(r, path);
			if (!dev || add_range(dev, offset, length)) {
				fprintf(stderr, "raw-read: out of memory\n");
				ret = 1;
			}
		}
		free(path);
	}
	free(line);
	if (!ret && ferror(in)) {
		fprintf(stderr, "raw-read: reading %s: %s\n", name, strerror(errno));
		ret = 1;
	}
	if (!ret && !r->nr_devs) {
		fprintf(stderr, "raw-read: %s: no ranges to read\n", name);
		ret = 2;
	}
	return ret;
}

static int compare_ranges(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

/*
 * Sorts a device's ranges and joins adjacent ones, so a run of written
 * extents is read like one file: full-size reads across their borders.
 * Overlaps would read bytes twice and count them twice: refused.
 */
static int sort_ranges(struct device *dev)
{
	size_t out = 0;

	qsort(dev->ranges, dev->nr_ranges, sizeof(*dev->ranges), compare_ranges);
	for (size_t i = 1; i < dev->nr_ranges; i++) {
		struct range *last = &dev->ranges[out];
		uint64_t last_end = last->offset + last->length;

		if (dev->ranges[i].offset < last_end) {
			fprintf(stderr, "raw-read: %s: ranges at %" PRIu64 " and %" PRIu64 " overlap\n",
				dev->path, last->offset, dev->ranges[i].offset);
			return 2;
		}
		if (dev->ranges[i].offset == last_end)
			last->length += dev->ranges[i].length;
		else
			dev->ranges[++out] = dev->ranges[i];
	}
	dev->nr_ranges = out + 1;
	dev->pos = dev->ranges[0].offset;
	return 0;
}

static int open_devices(struct reader *r)
{
	for (size_t i = 0; i < r->nr_devs; i++) {
		int ret = sort_ranges(&r->devs[i]);

		if (ret)
			return ret;
		r->devs[i].fd = open(r->devs[i].path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (r->devs[i].fd < 0) {
			fprintf(stderr, "raw-read: open %s: %s\n", r->devs[i].path, strerror(errno));
			return 1;
		}
	}
	return 0;
}

/*
 * One buffer region for every slot, faulted in before the clock starts.
 * Huge pages when the pool has them: a buffer of scattered 4 KiB pages is
 * split by the block layer into more, smaller requests, and the baseline
 * should be the disk's best.
 */
static int map_buffers(struct reader *r, unsigned int bs)
{
	size_t size = r->nr_slots * bs;

	r->buffers_size = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	r->buffers = mmap(NULL, r->buffers_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (r->buffers == MAP_FAILED) {
		fprintf(stderr,
			"raw-read: note: no huge pages for %zu MiB of buffers (%s; see "
			"/proc/sys/vm/nr_hugepages): ordinary pages, reads may reach the "
			"devices in smaller requests\n",
			r->buffers_size >> 20, strerror(errno));
		r->buffers_size = size;
		r->buffers = mmap(NULL, size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (r->buffers == MAP_FAILED) {
			r->buffers = NULL;
			fprintf(stderr, "raw-read: %zu MiB of buffers: %s\n", size >> 20, strerror(errno));
			return 1;
		}
	}
	for (size_t i = 0; i < r->nr_slots; i++)
		r->slots[i].buf = (char *)r->buffers + i * bs;
	return 0;
}

/* Queues @slot's device's next read of up to @bs bytes; 0 when the device is done. */
static int queue_next(struct reader *r, struct slot *slot, unsigned int bs)
{
	struct device *dev = slot->dev;
	struct range *range;
	struct io_uring_sqe *sqe;
	uint64_t left;

	if (dev->cur == dev->nr_ranges)
		return 0;
	range = &dev->ranges[dev->cur];
	left = range->offset + range->length - dev->pos;
	slot->offset = dev->pos;
	slot->length = left < bs ? (unsigned int)left : bs;
	dev->pos += slot->length;
	if (dev->pos == range->offset + range->length && ++dev->cur < dev->nr_ranges)
		dev->pos = dev->ranges[dev->cur].offset;
	/* The ring has an entry for every slot, so one is always free. */
	sqe = io_uring_get_sqe(&r->ring);
	io_uring_prep_read(sqe, dev->fd, slot->buf, slot->length, slot->offset);
	io_uring_sqe_set_data(sqe, slot);
	r->in_flight++;
	return 1;
}

/* A completed read: anything but the whole length is a failure, never skipped. */
static int complete(struct reader *r, struct io_uring_cqe *cqe, unsigned int bs)
{
	struct slot *slot = io_uring_cqe_get_data(cqe);

	r->in_flight--;
	if (cqe->res < 0) {
		fprintf(stderr, "raw-read: %s: read of %u bytes at %" PRIu64 ": %s (errno %d)\n",
			slot->dev->path, slot->length, slot->offset, strerror(-cqe->res), -cqe->res);
		return 1;
	}
	if ((unsigned int)cqe->res != slot->length) {
		fprintf(stderr, "raw-read: %s: short read at %" PRIu64 ": %d of %u bytes (past the end?)\n",
			slot->dev->path, slot->offset, cqe->res, slot->length);
		return 1;
	}
	r->bytes += slot->length;
	queue_next(r, slot, bs);
	return 0;
}

/*
 * One ring and one thread for all devices, not a thread per device: the
 * thread submits the refill of every finished read in the same
 * io_uring_enter that waits for the next completion, so a device gets its
 * next read as soon as any completion is reaped, with no wakeup of another
 * thread in between (on a shared 2-CPU machine a woken thread can wait for
 * a CPU while its device idles). O_DIRECT reads of block devices go to the
 * device from the submitting call, so one thread submits for all at once.
 */
static int read_all(struct reader *r, unsigned int bs, double *seconds)
{
	double start;
	int ret = 0;

	for (size_t i = 0; i < r->nr_slots; i++)
		queue_next(r, &r->slots[i], bs);
	start = bench_now();
	while (r->in_flight) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		int err = io_uring_submit_and_wait(&r->ring, 1);

		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "raw-read: io_uring_submit_and_wait: %s\n", strerror(-err));
			return 1;
		}
		io_uring_for_each_cqe(&r->ring, head, cqe) {
			seen++;
			if (complete(r, cqe, bs))
				ret = 1;
		}
		io_uring_cq_advance(&r->ring, seen);
		if (ret)
			return ret;
	}
	*seconds = bench_now() - start;
	return 0;
}

static int setup(struct reader *r, unsigned int depth, unsigned int bs)
{
	int ret = open_devices(r);

	if (ret)
		return ret;
	r->nr_slots = r->nr_devs * depth;
	r->slots = calloc(r->nr_slots, sizeof(*r->slots));
	if (!r->slots) {
		fprintf(stderr, "raw-read: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < r->nr_slots; i++)
		r->slots[i].dev = &r->devs[i / depth];
	ret = map_buffers(r, bs);
	if (ret)
		return ret;
	ret = io_uring_queue_init((unsigned int)r->nr_slots, &r->ring, 0);
	if (ret) {
		fprintf(stderr, "raw-read: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	r->ring_ok = true;
	return 0;
}

static void teardown(struct reader *r)
{
	if (r->ring_ok)
		io_uring_queue_exit(&r->ring);
	if (r->buffers)
		munmap(r->buffers, r->buffers_size);
	for (size_t i = 0; i < r->nr_devs; i++) {
		if (r->devs[i].fd >= 0)
			close(r->devs[i].fd);
		free(r->devs[i].path);
		free(r->devs[i].ranges);
	}
	free(r->devs);
	free(r->slots);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "depth", required_argument, NULL, 'd' },
		{ "bs", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct reader r = { 0 };
	unsigned long depth = 3;
	uint64_t bs = 4u << 20;
	const char *name = "stdin";
	double seconds = 0;
	FILE *in = stdin;
	char *end;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (opt) {
		case 'd':
			errno = 0;
			depth = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || depth < 1 || depth > MAX_DEPTH) {
				fprintf(stderr, "raw-read: --depth: 1 to %u, not '%s'\n", MAX_DEPTH, optarg);
				return 2;
			}
			break;
		case 'b':
			bs = parse_size(optarg);
			if (!bs || bs % SECTOR || bs > (1u << 30)) {
				fprintf(stderr, "raw-read: --bs: a multiple of %u up to 1G, not '%s'\n",
					SECTOR, optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "raw-read: one input file at most\n");
		usage(stderr);
		return 2;
	}
	if (optind < argc && strcmp(argv[optind], "-")) {
		name = argv[optind];
		in = fopen(name, "r");
		if (!in) {
			fprintf(stderr, "raw-read: open %s: %s\n", name, strerror(errno));
			return 2;
		}
	}
	ret = read_ranges(&r, in, name);
	if (in != stdin)
		fclose(in);
	if (!ret)
		ret = setup(&r, (unsigned int)depth, (unsigned int)bs);
	if (!ret)
		ret = read_all(&r, (unsigned int)bs, &seconds);
	if (!ret)
		printf("%" PRIu64 " %.3f\n", r.bytes, seconds);
	teardown(&r);
	return ret;
}
