/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file work of bench/maintain and tests/test_maintain_regimes.py: the
 * metadata ENOSPC trap of issue 37 and a churn that ages a filesystem,
 * fast. Every choice comes from a seed; results come back as "@@R" lines.
 *
 *   maintain-load large <dir> <file-bytes>
 *       Writes files of <file-bytes> (real writes) until ENOSPC; the file
 *       that did not fit is removed. "@@R large <files> <bytes> <errno>".
 *   maintain-load thin <dir>
 *       Removes every other file of <dir> (name order, the second, fourth,
 *       ...). "@@R thin <files> <bytes>".
 *   maintain-load small <dir> <file-bytes> <count> <first>
 *       Creates files <first> .. <first> + <count> - 1 of <file-bytes> each
 *       (10,000 a directory) until ENOSPC. "@@R small <files made> <errno
 *       or 0> <bytes statfs shows available>".
 *   maintain-load write <dir> <seed> <count> <min-bytes> <max-bytes>
 *       Creates <count> files of sizes between the bounds (log-uniform).
 *       A file refused with ENOSPC is removed and the next tried; after
 *       GIVE_UP refusals in a row the rest of the step is given up.
 *       "@@R write <files> <bytes> <enospc refusals> <first other errno>".
 *   maintain-load delete <dir> <seed> <permille>
 *       Removes about <permille>/1000 of the regular files of <dir>.
 *       "@@R delete <files> <bytes> <enospc refusals>".
 *   maintain-load overwrite <dir> <seed> <bytes>
 *       Rewrites <bytes> in place (4 KiB .. 256 KiB pieces at random offsets
 *       of the files of <dir> of 1 MiB or more): copy-on-write splits their
 *       extents, as a database's. "@@R overwrite <bytes> <enospc refusals>".
 *   maintain-load probe <dir> <interval-ms> <stop-file> <out-file>
 *       The workload's fsync: every <interval-ms> one 4 KiB file of <dir>
 *       (256 names, reused) rewritten and fsynced, until <stop-file>
 *       exists. Each sample goes to <out-file> as "<CLOCK_MONOTONIC ns at
 *       its start> <latency ns> <errno or 0>".
 *   maintain-load bgs <mnt>
 *       Every block group, as the kernel has it (the chunk tree and the
 *       block group items, by tree search): "bg <start> <length> <flags>
 *       <used>" a line.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "tests/vm/helper-common.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GIVE_UP 5
#define PER_DIR 10000
#define PROBE_NAMES 256

static unsigned char buf[4 * MiB];

/* Bytes that do not compress, made once: what they are does not matter. */
static void fill_buffer(void)
{
	for (size_t i = 0; i < sizeof(buf); i += 8) {
		uint64_t v = next_random();

		memcpy(buf + i, &v, 8);
	}
}

/* Writes @len bytes at @off of @fd; 0 or the errno. */
static int put(int fd, uint64_t off, uint64_t len)
{
	while (len) {
		size_t piece = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t n = pwrite(fd, buf, piece, (off_t)off);

		if (n < 0)
			return errno;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* A new file @path of @size bytes; 0 or the errno (the file is then removed). */
static int new_file(const char *path, uint64_t size)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	int err;

	if (fd < 0)
		return errno;
	err = put(fd, 0, size);
	if (close(fd) && !err)
		err = errno;
	if (err)
		unlink(path);
	return err;
}

static uint64_t available_bytes(const char *dir)
{
	struct statvfs st;

	if (statvfs(dir, &st))
		return 0;
	return (uint64_t)st.f_bavail * st.f_frsize;
}

static int load_large(const char *dir, uint64_t size)
{
	unsigned int files = 0;
	int err = 0;

	while (!err) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/l%06u", dir, files);
		err = new_file(path, size);
		if (!err)
			files++;
	}
	printf("@@R large %u %llu %d\n", files, (unsigned long long)files * size, err);
	return err == ENOSPC ? 0 : 1;
}

/* Removes @path; adds its size to @bytes. 0 or the errno of unlink. */
static int remove_file(const char *path, uint64_t *bytes)
{
	struct stat st;

	if (stat(path, &st))
		return errno;
	if (unlink(path))
		return errno;
	*bytes += (uint64_t)st.st_size;
	return 0;
}

static int load_thin(const char *dir)
{
	struct names n;
	unsigned int files = 0;
	uint64_t bytes = 0;
	int err = list_files(dir, &n);

	for (size_t i = 1; !err && i < n.nr; i += 2)
		if (!remove_file(n.v[i], &bytes))
			files++;
	free_names(&n);
	printf("@@R thin %u %llu\n", files, (unsigned long long)bytes);
	return err != 0;
}

static int load_small(const char *dir, uint64_t size, unsigned int count, unsigned int first)
{
	unsigned int made = 0;
	int err = 0;

	for (unsigned int i = first; i < first + count && !err; i++) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/s%04u", dir, i / PER_DIR);
		if (i % PER_DIR == 0 || i == first) {
			if (mkdir(path, 0755) && errno != EEXIST) {
				err = errno;
				break;
			}
		}
		snprintf(path, sizeof(path), "%s/s%04u/f%07u", dir, i / PER_DIR, i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = errno;
			break;
		}
		if (write(fd, buf, size) != (ssize_t)size)
			err = errno ? errno : EIO;
		if (close(fd) && !err)
			err = errno;
		if (err)
			unlink(path);
		else
			made++;
	}
	printf("@@R small %u %d %llu\n", made, err, (unsigned long long)available_bytes(dir));
	return err && err != ENOSPC;
}

/* A size between @lo and @hi, log-uniform (as many files a decade of sizes). */
static uint64_t log_uniform(uint64_t lo, uint64_t hi)
{
	double u = (double)(next_random() >> 11) / (double)(1ULL << 53);

	if (hi <= lo)
		return lo;
	return (uint64_t)((double)lo * exp(u * log((double)hi / (double)lo)));
}

static int load_write(const char *dir, uint64_t seed, unsigned int count, uint64_t lo,
		      uint64_t hi)
{
	unsigned int files = 0, refused = 0, in_a_row = 0;
	uint64_t bytes = 0;
	int other = 0;

	seed_with("write", seed);
	for (unsigned int i = 0; i < count && in_a_row < GIVE_UP; i++) {
		uint64_t size = log_uniform(lo, hi);
		char path[4096];
		int err;

		snprintf(path, sizeof(path), "%s/w%llu_%06u", dir, (unsigned long long)seed, i);
		err = new_file(path, size);
		if (!err) {
			files++;
			bytes += size;
			in_a_row = 0;
		} else if (err == ENOSPC) {
			refused++;
			in_a_row++;
		} else {
			other = err;
			break;
		}
	}
	printf("@@R write %u %llu %u %d\n", files, (unsigned long long)bytes, refused, other);
	return other != 0;
}

static int load_delete(const char *dir, uint64_t seed, unsigned int permille)
{
	struct names n;
	unsigned int files = 0, refused = 0;
	uint64_t bytes = 0;
	int err = list_files(dir, &n);

	seed_with("delete", seed);
	for (size_t i = 0; !err && i < n.nr; i++) {
		if (next_random() % 1000 >= permille)
			continue;
		err = remove_file(n.v[i], &bytes);
		if (!err)
			files++;
		else if (err == ENOSPC)
			refused++, err = 0;
	}
	free_names(&n);
	printf("@@R delete %u %llu %u\n", files, (unsigned long long)bytes, refused);
	return err != 0;
}

static int load_overwrite(const char *dir, uint64_t seed, uint64_t bytes)
{
	struct names n;
	uint64_t done = 0, tries = 0;
	unsigned int refused = 0;
	int err = list_files(dir, &n);

	seed_with("overwrite", seed);
	while (!err && n.nr && done < bytes && tries++ < 1000000 && refused < GIVE_UP) {
		const char *path = n.v[next_random() % n.nr];
		uint64_t piece = (4 * KiB + next_random() % (252 * KiB)) & ~(4 * KiB - 1);
		struct stat st;
		uint64_t off;
		int fd;

		if (stat(path, &st) || (uint64_t)st.st_size < MiB)
			continue;
		off = (next_random() % ((uint64_t)st.st_size - piece)) & ~(4 * KiB - 1);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			err = errno;
			break;
		}
		err = put(fd, off, piece);
		close(fd);
		if (err == ENOSPC) {
			refused++;
			err = 0;
			continue;
		}
		done += piece;
	}
	free_names(&n);
	printf("@@R overwrite %llu %u\n", (unsigned long long)done, refused);
	return err != 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One 4 KiB file rewritten and fsynced; 0 or the errno. */
static int probe_once(const char *dir, unsigned int i)
{
	char path[4096];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/p%03u", dir, i % PROBE_NAMES);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	if (write(fd, buf, 4096) != 4096 || fsync(fd))
		err = errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	return err;
}

static int load_probe(const char *dir, unsigned int interval_ms, const char *stop,
		      const char *out_path)
{
	FILE *out = fopen(out_path, "w");
	uint64_t next = mono_ns();

	if (!out) {
		fprintf(stderr, "maintain-load: %s: %s\n", out_path, strerror(errno));
		return 1;
	}
	for (unsigned int i = 0; access(stop, F_OK); i++) {
		uint64_t t0 = mono_ns(), now;
		int err = probe_once(dir, i);

		now = mono_ns();
		fprintf(out, "%llu %llu %d\n", (unsigned long long)t0,
			(unsigned long long)(now - t0), err);
		if (i % 64 == 0)
			fflush(out);
		next += (uint64_t)interval_ms * 1000000ULL;
		if (next > now) {
			struct timespec ts = { (time_t)((next - now) / 1000000000ULL),
					       (long)((next - now) % 1000000000ULL) };

			nanosleep(&ts, NULL);
		} else {
			next = now;
		}
	}
	return fclose(out) != 0;
}

/* The used bytes of the block group at @start of @length (its item, by its exact key). */
static int block_group_used(int fd, uint64_t start, uint64_t length, uint64_t *used)
{
	static char area[4096];
	struct btrfs_ioctl_search_args_v2 *args = (void *)area;
	struct btrfs_disk_key key = { start, BTRFS_BLOCK_GROUP_ITEM_KEY, length };
	const uint64_t trees[] = { BTRFS_BLOCK_GROUP_TREE_OBJECTID, BTRFS_EXTENT_TREE_OBJECTID };

	for (size_t t = 0; t < 2; t++) {
		struct btrfs_ioctl_search_header sh;
		struct btrfs_block_group_item item;

		if (search(fd, args, sizeof(area), trees[t], &key, &key) != 1)
			continue;
		memcpy(&sh, args->buf, sizeof(sh));
		memcpy(&item, (char *)args->buf + sizeof(sh), sizeof(item));
		*used = le64toh(item.used);
		return 0;
	}
	return -ENOENT;
}

static int load_bgs(const char *mnt)
{
	static char area[1 << 16];
	struct btrfs_ioctl_search_args_v2 *args = (void *)area;
	struct btrfs_disk_key min = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, 0 };
	struct btrfs_disk_key max = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				      UINT64_MAX };
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int n;

	if (fd < 0) {
		fprintf(stderr, "maintain-load: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	do {
		size_t off = 0;

		n = search(fd, args, sizeof(area), BTRFS_CHUNK_TREE_OBJECTID, &min, &max);
		for (int i = 0; i < n; i++) {
			struct btrfs_ioctl_search_header sh;
			struct btrfs_chunk chunk;
			uint64_t used = 0;

			memcpy(&sh, (char *)args->buf + off, sizeof(sh));
			memcpy(&chunk, (char *)args->buf + off + sizeof(sh), sizeof(chunk));
			off += sizeof(sh) + sh.len;
			min.offset = sh.offset + 1;
			/*
			 * No item: the cleaner or a relocation deleted the block
			 * group after the chunk was listed; it is gone, not an error.
			 */
			if (block_group_used(fd, sh.offset, le64toh(chunk.length), &used))
				continue;
			printf("bg %llu %llu %llu %llu\n", (unsigned long long)sh.offset,
			       (unsigned long long)le64toh(chunk.length),
			       (unsigned long long)le64toh(chunk.type), (unsigned long long)used);
		}
	} while (n > 0 && min.offset);
	close(fd);
	if (n < 0) {
		fprintf(stderr, "maintain-load: %s: tree search: %s\n", mnt, strerror(-n));
		return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: maintain-load large|thin|small|write|delete|overwrite|probe|bgs "
			"ARGS (see the head of bench/maintain-load.c)\n");
	return 2;
}

static uint64_t number(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	seed_with("content", 1);
	fill_buffer();
	if (!strcmp(cmd, "large") && argc == 4)
		return load_large(argv[2], number(argv[3]));
	if (!strcmp(cmd, "thin") && argc == 3)
		return load_thin(argv[2]);
	if (!strcmp(cmd, "small") && argc == 6)
		return load_small(argv[2], number(argv[3]), (unsigned int)number(argv[4]),
				  (unsigned int)number(argv[5]));
	if (!strcmp(cmd, "write") && argc == 7)
		return load_write(argv[2], number(argv[3]), (unsigned int)number(argv[4]),
				  number(argv[5]), number(argv[6]));
	if (!strcmp(cmd, "delete") && argc == 5)
		return load_delete(argv[2], number(argv[3]), (unsigned int)number(argv[4]));
	if (!strcmp(cmd, "overwrite") && argc == 5)
		return load_overwrite(argv[2], number(argv[3]), number(argv[4]));
	if (!strcmp(cmd, "probe") && argc == 6)
		return load_probe(argv[2], (unsigned int)number(argv[3]), argv[4], argv[5]);
	if (!strcmp(cmd, "bgs") && argc == 3)
		return load_bgs(argv[2]);
	return usage();
}
