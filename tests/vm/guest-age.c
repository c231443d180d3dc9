/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file work of the aging harness (tests/aging.py): gives a filesystem a
 * past. Runs on the host and inside the test guests (built static: the
 * initramfs has no libc). Every choice comes from the seed, so a seed
 * always does the same work; files are visited in name order.
 *
 *   guest-age write <dir> <seed> <bytes> <largest>
 *       Writes new files of pseudo-random bytes into <dir> until <bytes> are
 *       written or ENOSPC: many small ones (some inline, below 2 KiB), some
 *       medium (64 KiB .. 4 MiB) and a few large (4 MiB .. <largest>).
 *       Prints "@@R age_write <bytes> <files> <errno or 0>".
 *   guest-age small <dir> <seed> <files>
 *       Writes <files> small files (100 bytes .. 16 KiB: inline and one-block
 *       extents, metadata above all). Prints "@@R age_small <bytes> <files>
 *       <errno or 0>".
 *   guest-age delete <dir> <seed> <permille>
 *       Deletes about <permille>/1000 of the regular files in <dir>.
 *       Prints "@@R age_delete <files> <bytes>".
 *   guest-age overwrite <dir> <seed> <bytes>
 *       Rewrites <bytes> in place (4 KiB .. 256 KiB pieces at random offsets
 *       of random files, no truncation): copy-on-write splits their extents.
 *       Prints "@@R age_overwrite <bytes> <errno or 0>".
 *   guest-age reflink <dir> <seed> <permille>
 *       Clones about <permille>/1000 of the files (FICLONE) to "<name>.r".
 *       Prints "@@R age_reflink <files> <errno or 0>".
 *   guest-age settle <mnt>
 *       Commits and wakes the kernel's cleaner (BTRFS_IOC_SYNC, as `btrfs
 *       filesystem sync`) until it has deleted every empty block group it
 *       deletes: none left but the last of its type and profile
 *       (list_is_singular), or the same ones for SETTLE_STABLE rounds (the
 *       kernel keeps an empty one while the space its reservations count
 *       may need it). Prints "@@R age_settle <rounds> <empty block groups
 *       left> <errno or 0>".
 *
 * The kernel decides where data goes when it writes it back, frees what a
 * commit unpins, and deletes empty block groups when its cleaner wakes
 * (after the transaction thread's, every commit interval): each new file
 * is written back as soon as it is written (sync_file_range), writes are
 * committed (syncfs, which does not wake the cleaner) every SYNC_BYTES,
 * and each step of a past ends with a settle, so writeback, commits and
 * the cleaner come at the same points every run, not when a flusher or a
 * timer wakes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/vm/helper-common.h"

#ifndef FICLONE
#define FICLONE _IOW(0x94, 9, int)
#endif

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define SYNC_BYTES (64 * MiB)
#define SETTLE_STABLE 20
#define SETTLE_ROUNDS 600

/* Commits the filesystem of @dir: what is written so far is allocated and on disk. */
static int commit_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return errno;
	if (syncfs(fd))
		err = errno;
	close(fd);
	return err;
}

static uint64_t between(uint64_t lo, uint64_t hi)
{
	return hi <= lo ? lo : lo + next_random() % (hi - lo + 1);
}

static unsigned char buf[1 << 20];

static void fill_buffer(size_t len)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = next_random();

		memcpy(buf + i, &v, 8);
	}
}

/*
 * What was written to @fd is written back (allocated) now, in the order of
 * the writes, not when a flusher gets to it; no log tree (fsync's), whose
 * commits come and go with the kernel's timing. 0 or -1 (errno).
 */
static int written_back(int fd)
{
	return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			       SYNC_FILE_RANGE_WAIT_AFTER);
}

/* Writes @len bytes at @off of @fd; 0 or the errno. */
static int put(int fd, uint64_t off, uint64_t len)
{
	while (len) {
		size_t piece = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t n;

		fill_buffer(piece);
		n = pwrite(fd, buf, piece, (off_t)off);
		if (n < 0)
			return errno;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* A file size of the mix: 2 in 3 small, 1 in 4 medium, the rest large. */
static uint64_t file_size(uint64_t largest)
{
	uint64_t pick = next_random() % 100;

	if (pick < 20)
		return between(100, 2000);
	if (pick < 67)
		return between(4 * KiB, 64 * KiB);
	if (pick < 92)
		return between(64 * KiB, 4 * MiB);
	return between(4 * MiB, largest > 4 * MiB ? largest : 4 * MiB);
}

/* New files until @bytes or @count; sizes from file_size(), or small ones when @largest is 0. */
static int write_files(const char *what, const char *dir, uint64_t seed, uint64_t bytes,
		       unsigned int count, uint64_t largest)
{
	uint64_t written = 0, synced = 0;
	unsigned int files = 0;
	int err = 0;

	seed_with(what, seed);
	while (written < bytes && files < count && !err) {
		uint64_t size = largest ? file_size(largest) : between(100, 16 * KiB);
		char path[4096];
		int fd;

		if (size > bytes - written)
			size = bytes - written;
		snprintf(path, sizeof(path), "%s/%c%llu_%06u", dir, what[0],
			 (unsigned long long)seed, files);
		fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = errno;
			break;
		}
		err = put(fd, 0, size);
		if (!err && written_back(fd))
			err = errno;
		if (close(fd) && !err)
			err = errno;
		if (err)
			break;
		written += size;
		files++;
		if (written - synced >= SYNC_BYTES) {
			err = commit_dir(dir);
			synced = written;
		}
	}
	printf("@@R age_%s %llu %u %d\n", what, (unsigned long long)written, files, err);
	return 0;
}

static int age_delete(const char *dir, uint64_t seed, unsigned int permille)
{
	struct names n;
	unsigned int files = 0;
	uint64_t bytes = 0;
	int err = list_files(dir, &n);

	seed_with("delete", seed);
	for (size_t i = 0; !err && i < n.nr; i++) {
		struct stat st;

		if (next_random() % 1000 >= permille || stat(n.v[i], &st))
			continue;
		if (!unlink(n.v[i])) {
			files++;
			bytes += (uint64_t)st.st_size;
		}
	}
	free_names(&n);
	printf("@@R age_delete %u %llu\n", files, (unsigned long long)bytes);
	return 0;
}

static int age_overwrite(const char *dir, uint64_t seed, uint64_t bytes)
{
	struct names n;
	uint64_t done = 0, tries = 0;
	int err = list_files(dir, &n);

	seed_with("overwrite", seed);
	/* Small files are inline or one extent: rewrite the larger ones (if any). */
	while (!err && n.nr && done < bytes && tries++ < 100000) {
		const char *path = n.v[next_random() % n.nr];
		uint64_t piece = between(4 * KiB, 256 * KiB) & ~(4 * KiB - 1);
		struct stat st;
		uint64_t off;
		int fd;

		if (stat(path, &st) || (uint64_t)st.st_size < 4 * piece)
			continue;
		off = between(0, (uint64_t)st.st_size - piece) & ~(4 * KiB - 1);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			err = errno;
			break;
		}
		err = put(fd, off, piece);
		if (!err && written_back(fd))
			err = errno;
		close(fd);
		done += piece;
	}
	free_names(&n);
	printf("@@R age_overwrite %llu %d\n", (unsigned long long)done, err);
	return 0;
}

static int age_reflink(const char *dir, uint64_t seed, unsigned int permille)
{
	struct names n;
	unsigned int files = 0;
	int err = list_files(dir, &n);

	seed_with("reflink", seed);
	for (size_t i = 0; !err && i < n.nr; i++) {
		char path[4096];
		int src, dst;

		if (next_random() % 1000 >= permille)
			continue;
		snprintf(path, sizeof(path), "%s.r", n.v[i]);
		src = open(n.v[i], O_RDONLY | O_CLOEXEC);
		if (src < 0)
			continue;
		dst = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (dst >= 0) {
			if (ioctl(dst, FICLONE, src))
				err = errno;
			else
				files++;
			close(dst);
		}
		close(src);
	}
	free_names(&n);
	printf("@@R age_reflink %u %d\n", files, err);
	return 0;
}

/* A block group as its item says: where, how big, its flags, its used bytes. */
struct bg {
	uint64_t start, length, flags, used;
};

struct bgs {
	struct bg v[4096];
	size_t nr;
};

/*
 * Every block group: the chunks from the chunk tree, then each one's item
 * (the extent tree's, or the block group tree's when there is one) by its
 * exact key.
 */
static int read_bgs(int fd, struct bgs *out)
{
	static char buf[1 << 16];
	struct btrfs_ioctl_search_args_v2 *args = (void *)buf;
	struct btrfs_disk_key min = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, 0 };
	struct btrfs_disk_key max = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				      UINT64_MAX };
	uint64_t tree = BTRFS_BLOCK_GROUP_TREE_OBJECTID;
	int n;

	out->nr = 0;
	do {
		size_t off = 0;

		n = search(fd, args, sizeof(buf), BTRFS_CHUNK_TREE_OBJECTID, &min, &max);
		for (int i = 0; i < n && out->nr < 4096; i++) {
			struct btrfs_ioctl_search_header *h = (void *)(args->buf + off);
			struct btrfs_chunk *c = (void *)(h + 1);

			off += sizeof(*h) + h->len;
			out->v[out->nr++] = (struct bg){ h->offset, le64toh(c->length),
							 le64toh(c->type), 0 };
			min.offset = h->offset + 1;
		}
	} while (n > 0 && min.offset);
	if (n < 0)
		return -n;
	for (size_t i = 0; i < out->nr; i++) {
		struct btrfs_disk_key key = { out->v[i].start, BTRFS_BLOCK_GROUP_ITEM_KEY,
					      out->v[i].length };
		struct btrfs_ioctl_search_header *h = (void *)args->buf;

		n = search(fd, args, sizeof(buf), tree, &key, &key);
		if (n == -ENOENT && tree == BTRFS_BLOCK_GROUP_TREE_OBJECTID) {
			tree = BTRFS_EXTENT_TREE_OBJECTID;	/* no block group tree */
			n = search(fd, args, sizeof(buf), tree, &key, &key);
		}
		if (n < 0)
			return -n;
		if (n)
			out->v[i].used = le64toh(((struct btrfs_block_group_item *)(h + 1))->used);
		else
			out->v[i].used = UINT64_MAX;	/* not committed yet: not empty */
	}
	return 0;
}

#define BG_KIND (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM)

/* Empty block groups the cleaner deletes: not the last of their type and profile. */
static size_t deletable(const struct bgs *b, uint64_t *sum)
{
	size_t n = 0;

	*sum = 0;
	for (size_t i = 0; i < b->nr; i++) {
		size_t alike = 0;

		if (b->v[i].used)
			continue;
		for (size_t k = 0; k < b->nr; k++)
			alike += b->v[k].flags == b->v[i].flags;
		if (alike > 1) {
			n++;
			*sum += b->v[i].start;
		}
	}
	return n;
}

static int age_settle(const char *mnt)
{
	static struct bgs b;
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t sum, last_sum = 0;
	size_t left = 0, last = SIZE_MAX;
	int rounds, stable = 0, err = 0;

	if (fd < 0)
		return 1;
	for (rounds = 1; rounds <= SETTLE_ROUNDS; rounds++) {
		struct timespec pause = { 0, 100 * 1000 * 1000 };

		if (ioctl(fd, BTRFS_IOC_SYNC, NULL)) {
			err = errno;
			break;
		}
		nanosleep(&pause, NULL);
		err = read_bgs(fd, &b);
		if (err)
			break;
		left = deletable(&b, &sum);
		stable = left == last && sum == last_sum ? stable + 1 : 0;
		if (!left || stable >= SETTLE_STABLE)
			break;
		last = left;
		last_sum = sum;
	}
	close(fd);
	printf("@@R age_settle %d %zu %d\n", rounds, left, err);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "write"))
		return write_files("write", argv[2], strtoull(argv[3], NULL, 0),
				   strtoull(argv[4], NULL, 0), UINT32_MAX, strtoull(argv[5], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "small"))
		return write_files("small", argv[2], strtoull(argv[3], NULL, 0), UINT64_MAX,
				   (unsigned int)strtoul(argv[4], NULL, 0), 0);
	if (argc == 5 && !strcmp(argv[1], "delete"))
		return age_delete(argv[2], strtoull(argv[3], NULL, 0),
				  (unsigned int)strtoul(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "overwrite"))
		return age_overwrite(argv[2], strtoull(argv[3], NULL, 0),
				     strtoull(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "reflink"))
		return age_reflink(argv[2], strtoull(argv[3], NULL, 0),
				   (unsigned int)strtoul(argv[4], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "settle"))
		return age_settle(argv[2]);
	fprintf(stderr, "usage: guest-age write <dir> <seed> <bytes> <largest> | small <dir> "
		"<seed> <files> | delete <dir> <seed> <permille> | overwrite <dir> <seed> <bytes> | reflink <dir> <seed> "
		"<permille> | settle <mnt>\n");
	return 2;
}
