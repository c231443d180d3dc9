/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs inside the test guests (built static: the initramfs has no libc).
 *
 *   guest-fill data <dir>
 *       Preallocates files (fallocate: data chunks are allocated, nothing is
 *       written) largest step first until not even 4 KiB fits. Prints
 *       "@@R fill_data <bytes> <errno of the last failure>".
 *   guest-fill steady <dir>
 *       The same, but asking for no more at once than half of what statfs
 *       says is left (at least 16 MiB), as writers of moderate files do. A
 *       request the data cannot take makes the kernel allocate every data
 *       chunk it can first: after it, a nearly full metadata block group may
 *       have no device space left to grow into, and every later file fails
 *       with ENOSPC at its creation (seen on a raid0 with 7 MiB of single
 *       metadata: a first 1 GiB step failed, and nothing else fitted).
 *   guest-fill meta <dir> <bytes>
 *       Creates files carrying one large xattr each (metadata only, about a
 *       tree leaf per file) until <bytes> are stored or ENOSPC. Prints
 *       "@@R fill_meta <bytes> <files> <errno or 0>".
 *   guest-fill part <dir> <bytes> <files>
 *       Some content before a change: preallocates <bytes> in 1 MiB files
 *       (fewer at ENOSPC), removes every third (partly used chunks), and
 *       creates <files> small files with a 3000-byte xattr (metadata).
 *       Prints "@@R fill_part <data bytes kept> <files made> <errno or 0>".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define XATTR_BYTES 14000

static const unsigned long long fill_steps[] = {
	1 * GiB, 256 * MiB, 64 * MiB, 16 * MiB, 4 * MiB, 1 * MiB, 256 * KiB, 64 * KiB, 16 * KiB,
	4 * KiB,
};

/* 0 when @size bytes were preallocated in a new file @path, else the errno. */
static int preallocate(const char *path, unsigned long long size)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	int err;

	if (fd < 0)
		return errno;
	err = posix_fallocate(fd, 0, (off_t)size);
	close(fd);
	if (err)
		unlink(path);
	return err;
}

/* Whether a step of @size is asked for now (@steady: see "guest-fill steady"). */
static int step_fits(const char *dir, unsigned long long size, int steady)
{
	struct statvfs st;

	if (!steady || size <= 16 * MiB || statvfs(dir, &st))
		return 1;
	return size <= (unsigned long long)st.f_bavail * st.f_frsize / 2;
}

static int fill_data(const char *dir, int steady)
{
	unsigned long long total = 0;
	unsigned int n = 0;
	int err = 0;

	for (size_t i = 0; i < sizeof(fill_steps) / sizeof(fill_steps[0]); i++) {
		for (;;) {
			char path[4096];

			if (!step_fits(dir, fill_steps[i], steady))
				break;
			snprintf(path, sizeof(path), "%s/data%u", dir, n);
			err = preallocate(path, fill_steps[i]);
			if (err)
				break;
			total += fill_steps[i];
			n++;
		}
	}
	printf("@@R fill_data %llu %d\n", total, err);
	return 0;
}

static int fill_meta(const char *dir, unsigned long long limit)
{
	static char value[XATTR_BYTES];
	unsigned long long stored = 0;
	unsigned int files = 0;
	int err = 0;

	memset(value, 'm', sizeof(value));
	while (stored < limit) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/meta%u", dir, files);
		fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = errno;
			break;
		}
		if (fsetxattr(fd, "user.fill", value, sizeof(value), 0) < 0) {
			err = errno;
			close(fd);
			break;
		}
		close(fd);
		stored += sizeof(value);
		files++;
	}
	printf("@@R fill_meta %llu %u %d\n", stored, files, err);
	return 0;
}

static int fill_part(const char *dir, unsigned long long bytes, unsigned int files)
{
	static char value[3000];
	unsigned long long kept = 0;
	unsigned int n = 0, made = 0;
	int err = 0;

	memset(value, 'p', sizeof(value));
	for (; (unsigned long long)n * MiB < bytes; n++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/part%u", dir, n);
		err = preallocate(path, MiB);
		if (err)
			break;
	}
	for (unsigned int i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/part%u", dir, i);
		if (i % 3 == 2)
			unlink(path);
		else
			kept += MiB;
	}
	for (; made < files; made++) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/small%u", dir, made);
		fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = errno;
			break;
		}
		if (fsetxattr(fd, "user.part", value, sizeof(value), 0) < 0) {
			err = errno;
			close(fd);
			break;
		}
		close(fd);
	}
	printf("@@R fill_part %llu %u %d\n", kept, made, err);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "data"))
		return fill_data(argv[2], 0);
	if (argc == 3 && !strcmp(argv[1], "steady"))
		return fill_data(argv[2], 1);
	if (argc == 4 && !strcmp(argv[1], "meta"))
		return fill_meta(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "part"))
		return fill_part(argv[2], strtoull(argv[3], NULL, 0),
				 (unsigned int)strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: guest-fill data|steady <dir> | meta <dir> <bytes> | "
		"part <dir> <bytes> <files>\n");
	return 2;
}
