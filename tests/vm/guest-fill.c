/*
 * Runs inside the test guests (built static: the initramfs has no libc).
 *
 *   guest-fill data <dir>
 *       Preallocates files (fallocate: data chunks are allocated, nothing is
 *       written) largest step first until not even 4 KiB fits. Prints
 *       "@@R fill_data <bytes> <errno of the last failure>".
 *   guest-fill meta <dir> <bytes>
 *       Creates files carrying one large xattr each (metadata only, about a
 *       tree leaf per file) until <bytes> are stored or ENOSPC. Prints
 *       "@@R fill_meta <bytes> <files> <errno or 0>".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int fill_data(const char *dir)
{
	unsigned long long total = 0;
	unsigned int n = 0;
	int err = 0;

	for (size_t i = 0; i < sizeof(fill_steps) / sizeof(fill_steps[0]); i++) {
		for (;;) {
			char path[4096];

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

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "data"))
		return fill_data(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "meta"))
		return fill_meta(argv[2], strtoull(argv[3], NULL, 0));
	fprintf(stderr, "usage: guest-fill data <dir> | meta <dir> <bytes>\n");
	return 2;
}
