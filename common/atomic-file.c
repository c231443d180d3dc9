/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole-file replacement through a temporary file and rename; see atomic-file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic-file.h"
#include "common/error.h"

int bx_mkdir_parents(const char *dir)
{
	char buf[PATH_MAX];
	size_t len = strlen(dir);

	if (len >= sizeof(buf))
		return bx_error(-ENAMETOOLONG, "%s: path too long", dir);
	memcpy(buf, dir, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return bx_error(-errno, "%s: cannot create the directory: %m", buf);
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return bx_error(-errno, "%s: cannot create the directory: %m", buf);
	return 0;
}

/* The directory part of @path ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

int bx_atomic_begin(struct bx_atomic_file *af, const char *path, mode_t mode)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	int fd;

	memset(af, 0, sizeof(*af));
	if (!*name)
		return bx_error(-EINVAL, "%s: not a file name", path);
	if (snprintf(af->path, sizeof(af->path), "%s", path) >= (int)sizeof(af->path) ||
	    snprintf(af->tmp, sizeof(af->tmp), "%.*s.%s.XXXXXX", (int)(name - path), path, name) >=
		    (int)sizeof(af->tmp))
		return bx_error(-ENAMETOOLONG, "%s: path too long", path);
	fd = mkostemp(af->tmp, O_CLOEXEC);
	if (fd < 0)
		return bx_error(-errno, "%s: cannot create a temporary file beside it: %m", path);
	if (fchmod(fd, mode) < 0 || !(af->fp = fdopen(fd, "w"))) {
		int ret = bx_error(-errno, "%s: %m", af->tmp);

		close(fd);
		unlink(af->tmp);
		return ret;
	}
	return 0;
}

int bx_atomic_commit(struct bx_atomic_file *af)
{
	char dir[PATH_MAX];
	int fd, ret = 0;

	if (fflush(af->fp) || ferror(af->fp) || fsync(fileno(af->fp)) < 0)
		ret = bx_error(errno ? -errno : -EIO, "%s: cannot write: %m", af->path);
	if (fclose(af->fp) && !ret)
		ret = bx_error(-errno, "%s: cannot write: %m", af->path);
	af->fp = NULL;
	if (!ret && rename(af->tmp, af->path) < 0)
		ret = bx_error(-errno, "%s: cannot replace: %m", af->path);
	if (ret) {
		unlink(af->tmp);
		return ret;
	}
	dir_of(af->path, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

void bx_atomic_abort(struct bx_atomic_file *af)
{
	if (af->fp)
		fclose(af->fp);
	af->fp = NULL;
	unlink(af->tmp);
}
