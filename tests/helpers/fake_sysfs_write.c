/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * LD_PRELOAD helper for the read policy tests: makes a write to a fake sysfs
 * attribute behave like a kernel that disagrees with what it advertises.
 *
 *   FAKE_SYSFS_EINVAL=<suffix>  writes to a file whose path ends with <suffix>
 *                               fail with EINVAL (the kernel rejected it); the
 *                               file gets $FAKE_SYSFS_SHOW, if set, since the
 *                               writer's O_TRUNC emptied it (sysfs ignores
 *                               O_TRUNC, a regular file does not)
 *                               ($FAKE_SYSFS_ERRNO, if set, replaces EINVAL:
 *                               30 for EROFS, 1 for EPERM)
 *   FAKE_SYSFS_IGNORE=<suffix>  such writes report success but the file gets
 *                               $FAKE_SYSFS_SHOW instead (a kernel that shows
 *                               something else afterwards: the read-back must
 *                               catch it)
 *
 * Built by the tests (test_read_policy.py, test_property.py) with the system compiler.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fd_matches(int fd, const char *suffix)
{
	char link[64], target[4096];
	size_t len = strlen(suffix);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = '\0';
	return (size_t)n >= len && !strcmp(target + n - len, suffix);
}

ssize_t write(int fd, const void *buf, size_t count)
{
	static ssize_t (*real_write)(int, const void *, size_t);
	const char *einval = getenv("FAKE_SYSFS_EINVAL");
	const char *ignore = getenv("FAKE_SYSFS_IGNORE");

	if (!real_write)
		real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (einval && *einval && fd_matches(fd, einval)) {
		const char *show = getenv("FAKE_SYSFS_SHOW");

		if (show)
			real_write(fd, show, strlen(show));
		errno = getenv("FAKE_SYSFS_ERRNO") ? atoi(getenv("FAKE_SYSFS_ERRNO")) : EINVAL;
		return -1;
	}
	if (ignore && *ignore && fd_matches(fd, ignore)) {
		const char *show = getenv("FAKE_SYSFS_SHOW");

		if (show && real_write(fd, show, strlen(show)) < 0)
			return -1;
		return (ssize_t)count;
	}
	return real_write(fd, buf, count);
}
