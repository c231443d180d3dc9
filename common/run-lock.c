/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/atomic-file.h"
#include "common/error.h"
#include "common/run-lock.h"

static void lock_path(const char *state_dir, const char *kind, const char *fsid, char *buf,
		      size_t len)
{
	snprintf(buf, len, "%s/%s/%s.lock", state_dir, kind, fsid);
}

int bx_run_lock_take(const char *state_dir, const char *kind, const char *fsid, int *fd)
{
	char path[PATH_MAX];
	int ret;

	*fd = -1;
	snprintf(path, sizeof(path), "%s/%s", state_dir, kind);
	ret = bx_mkdir_parents(path);
	if (ret)
		return ret;
	lock_path(state_dir, kind, fsid, path, sizeof(path));
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0)
		return bx_error(-errno, "%s: %m", path);
	if (!flock(*fd, LOCK_EX | LOCK_NB))
		return 0;
	ret = errno == EWOULDBLOCK ? -EBUSY : bx_error(-errno, "%s: %m", path);
	close(*fd);
	*fd = -1;
	return ret;
}

int bx_run_lock_held(const char *state_dir, const char *kind, const char *fsid, bool *held)
{
	char path[PATH_MAX];
	int fd;

	*held = false;
	lock_path(state_dir, kind, fsid, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : bx_error(-errno, "%s: %m", path);
	/* A shared lock is refused only while a run holds the exclusive one. */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		*held = errno == EWOULDBLOCK;
	close(fd);
	return 0;
}
