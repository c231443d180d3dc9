/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds a device: the mount table of this namespace, the filesystems the
 * kernel has mounted, exclusive opens, flocks on image files and loop
 * devices backed by an image file. Device assembly claims members through
 * these; mkfs and the offline open check them before writing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/error.h"
#include "disk/device-claim.h"
#include "disk/volumes.h"

void bx_fsid_unparse(const uint8_t fsid[16], char out[BX_FSID_STR_LEN])
{
	uuid_unparse_lower(fsid, out);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

/* One mountinfo line's fields, pointing into the line; the paths unescaped. */
struct mountinfo_line {
	int mount_id;
	dev_t dev;
	const char *mountpoint;
	const char *fstype;
	const char *source;
};

/* Splits one mountinfo line (modifying it); 0 when it is malformed. */
static int split_mountinfo_line(char *line, struct mountinfo_line *m)
{
	char *fields[16], *save = NULL, *tok;
	unsigned int maj, min;
	int nr = 0, sep = -1;

	for (tok = strtok_r(line, " \n", &save); tok && nr < 16; tok = strtok_r(NULL, " \n", &save)) {
		if (sep < 0 && !strcmp(tok, "-"))
			sep = nr;
		fields[nr++] = tok;
	}
	/* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
	if (sep < 6 || sep + 2 >= nr || sscanf(fields[2], "%u:%u", &maj, &min) != 2)
		return 0;
	unescape(fields[4]);
	unescape(fields[sep + 2]);
	*m = (struct mountinfo_line){ atoi(fields[0]), makedev(maj, min), fields[4],
				      fields[sep + 1], fields[sep + 2] };
	return 1;
}

/* Fills @e and returns 1 for a btrfs mount, 0 otherwise. */
static int parse_mountinfo_line(char *line, struct bx_mount_entry *e)
{
	struct mountinfo_line m;

	if (!split_mountinfo_line(line, &m) || strcmp(m.fstype, "btrfs"))
		return 0;
	e->mount_id = m.mount_id;
	snprintf(e->mountpoint, sizeof(e->mountpoint), "%s", m.mountpoint);
	snprintf(e->source, sizeof(e->source), "%s", m.source);
	return 1;
}

bool bx_block_dev_mounted_at(dev_t rdev, char *mnt, size_t len)
{
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!fp)
		return false;
	while (!found && getline(&line, &cap, fp) > 0) {
		struct mountinfo_line m;

		if (split_mountinfo_line(line, &m) && m.dev == rdev) {
			snprintf(mnt, len, "%s", m.mountpoint);
			found = true;
		}
	}
	free(line);
	fclose(fp);
	return found;
}

int bx_list_btrfs_mounts(const char *mountinfo, struct bx_mount_entry **entries, size_t *nr)
{
	struct bx_mount_entry *list = NULL;
	size_t alloc = 0, count = 0, cap = 0;
	char *line = NULL;
	FILE *fp;

	*entries = NULL;
	*nr = 0;
	fp = fopen(mountinfo, "re");
	if (!fp)
		return bx_error(-errno, "%s: %m", mountinfo);
	while (getline(&line, &cap, fp) > 0) {
		struct bx_mount_entry e;

		if (!parse_mountinfo_line(line, &e))
			continue;
		if (count == alloc) {
			struct bx_mount_entry *grown;

			alloc = alloc ? alloc * 2 : 8;
			grown = realloc(list, alloc * sizeof(*grown));
			if (!grown) {
				free(list);
				free(line);
				fclose(fp);
				return bx_error(-ENOMEM, "out of memory");
			}
			list = grown;
		}
		list[count++] = e;
	}
	free(line);
	fclose(fp);
	*entries = list;
	*nr = count;
	return 0;
}

/* The FSID of the btrfs mounted at @mountpoint (BTRFS_IOC_FS_INFO). */
static int mounted_fsid(const char *mountpoint, uint8_t fsid[16])
{
	struct btrfs_ioctl_fs_info_args info;
	int fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) < 0)
		ret = -errno;
	else
		memcpy(fsid, info.fsid, 16);
	close(fd);
	return ret;
}

/* Mount point of the filesystem with @fsid, from this namespace's mounts. */
static void find_mountpoint(const uint8_t fsid[16], char *mnt, size_t len)
{
	struct bx_mount_entry *mounts = NULL;
	size_t nr = 0;

	snprintf(mnt, len, "an unknown mount point");
	if (bx_list_btrfs_mounts("/proc/self/mountinfo", &mounts, &nr))
		return;
	for (size_t i = 0; i < nr; i++) {
		uint8_t mounted[16];

		if (!mounted_fsid(mounts[i].mountpoint, mounted) && !memcmp(mounted, fsid, 16)) {
			snprintf(mnt, len, "%s", mounts[i].mountpoint);
			break;
		}
	}
	free(mounts);
	bx_error_clear();
}

bool bx_fs_is_mounted(const char *sysfs_root, const uint8_t fsid[16], char *mnt, size_t len)
{
	char fsid_str[BX_FSID_STR_LEN], path[PATH_MAX];

	bx_fsid_unparse(fsid, fsid_str);
	snprintf(path, sizeof(path), "%s/fs/btrfs/%s", sysfs_root, fsid_str);
	if (access(path, F_OK))
		return false;
	if (mnt)
		find_mountpoint(fsid, mnt, len);
	return true;
}

/* "pid 1234 (btrfsx)" */
static void name_process(pid_t pid, char *buf, size_t len)
{
	char path[64], comm[64] = "";
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fp = fopen(path, "re");
	if (fp) {
		if (fgets(comm, sizeof(comm), fp))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(fp);
	}
	snprintf(buf, len, "pid %d%s%s%s", (int)pid, *comm ? " (" : "", comm, *comm ? ")" : "");
}

/* The process holding a flock on the file @st, from /proc/locks; 0 if none is seen. */
static pid_t flock_holder(const struct stat *st)
{
	FILE *fp = fopen("/proc/locks", "re");
	char line[512];
	pid_t holder = 0;

	if (!fp)
		return 0;
	while (!holder && fgets(line, sizeof(line), fp)) {
		unsigned int maj, min;
		unsigned long long ino;
		char kind[16], mode[16];
		int pid;

		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->". */
		if (sscanf(line, "%*d: %15s %*s %15s %d %x:%x:%llu", kind, mode, &pid, &maj, &min,
			   &ino) == 6 && !strcmp(kind, "FLOCK") && makedev(maj, min) == st->st_dev &&
		    ino == st->st_ino)
			holder = pid;
	}
	fclose(fp);
	return holder;
}

/* Up to @max other processes that have the block device @rdev open; how many were found. */
static size_t block_dev_openers(dev_t rdev, pid_t *pids, size_t max)
{
	DIR *procs = opendir("/proc");
	struct dirent *p;
	size_t nr = 0;

	if (!procs)
		return 0;
	while (nr < max && (p = readdir(procs))) {
		char dir[64];
		struct dirent *f;
		DIR *fds;
		int pid = atoi(p->d_name);
		bool found = false;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
		fds = opendir(dir);
		if (!fds)
			continue;
		while (!found && (f = readdir(fds))) {
			char fd_path[320];
			struct stat st;

			snprintf(fd_path, sizeof(fd_path), "%s/%s", dir, f->d_name);
			found = f->d_name[0] != '.' && !stat(fd_path, &st) && S_ISBLK(st.st_mode) &&
				st.st_rdev == rdev;
		}
		closedir(fds);
		if (found)
			pids[nr++] = pid;
	}
	closedir(procs);
	return nr;
}

/* The mount point of the btrfs whose member the block device @path is, if mounted. */
static bool member_mounted_at(const char *path, char *mnt, size_t len)
{
	struct btrfs_super_block sb;
	uint64_t size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool mounted = false;

	if (fd < 0)
		return false;
	if (!ioctl(fd, BLKGETSIZE64, &size) &&
	    bx_read_super_copy(fd, size, 0, &sb, BX_IO_TIMEOUT_DEFAULT) == BX_SB_OK)
		mounted = bx_fs_is_mounted("/sys", sb.fsid, mnt, len);
	close(fd);
	return mounted;
}

int bx_busy_error(const char *path, const struct stat *st)
{
	char who[512] = "", mnt[4096];
	pid_t pids[4];
	size_t nr;

	if (S_ISBLK(st->st_mode)) {
		if (bx_block_dev_mounted_at(st->st_rdev, mnt, sizeof(mnt)))
			return bx_error(-EBUSY, "%s: is mounted at %s", path, mnt);
		if (member_mounted_at(path, mnt, sizeof(mnt)))
			return bx_error(-EBUSY, "%s: is a member of the filesystem mounted at %s",
					path, mnt);
		nr = block_dev_openers(st->st_rdev, pids, sizeof(pids) / sizeof(pids[0]));
	} else {
		pids[0] = flock_holder(st);
		nr = pids[0] != 0;
	}
	if (!nr)
		return bx_error(-EBUSY, "%s: is held exclusively (by the kernel or another "
				"program)", path);
	for (size_t i = 0; i < nr; i++) {
		size_t used = strlen(who);

		if (i)
			snprintf(who + used, sizeof(who) - used, ", ");
		used = strlen(who);
		name_process(pids[i], who + used, sizeof(who) - used);
	}
	return bx_error(-EBUSY, "%s: is in use by %s; wait until it has finished", path, who);
}

int bx_claim_image_file(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return bx_error(-errno, "%s: %m", path);
	if (!S_ISREG(st.st_mode) || !flock(fd, LOCK_EX | LOCK_NB))
		return 0;
	if (errno != EWOULDBLOCK)
		return bx_error(-errno, "%s: cannot lock: %m", path);
	return bx_busy_error(path, &st);
}

int bx_check_not_loop_backed(const char *path)
{
	struct stat target, backing;
	struct dirent *de;
	DIR *dir;
	int ret = 0;

	if (stat(path, &target) || !S_ISREG(target.st_mode))
		return 0;
	dir = opendir("/sys/block");
	if (!dir)
		return 0;
	while (!ret && (de = readdir(dir))) {
		char file[PATH_MAX], backing_path[PATH_MAX];
		FILE *fp;

		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(file, sizeof(file), "/sys/block/%s/loop/backing_file", de->d_name);
		fp = fopen(file, "re");
		if (!fp)
			continue;
		if (fgets(backing_path, sizeof(backing_path), fp)) {
			backing_path[strcspn(backing_path, "\n")] = '\0';
			if (!stat(backing_path, &backing) && backing.st_dev == target.st_dev &&
			    backing.st_ino == target.st_ino)
				ret = bx_error(-EBUSY, "%s: image file is attached to /dev/%s; name "
					       "the loop device (or detach it)", path, de->d_name);
		}
		fclose(fp);
	}
	closedir(dir);
	return ret;
}

int bx_open_claimed(const char *path, const struct stat *st, bool write, int *fd)
{
	int ret, ro = 0;

	*fd = -1;
	ret = bx_check_member_type(st, path);
	if (!ret && !S_ISBLK(st->st_mode))
		ret = bx_check_not_loop_backed(path);
	if (ret)
		return ret;
	*fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC |
		   (S_ISBLK(st->st_mode) ? O_EXCL : 0));
	if (*fd < 0)
		return errno == EBUSY ? bx_busy_error(path, st)
				      : bx_error(-errno, "%s: cannot open%s: %m", path,
						 write ? " for writing" : "");
	ret = bx_claim_image_file(*fd, path);
	/* A read-only block device opens read-write; only the writes would fail. */
	if (!ret && write && S_ISBLK(st->st_mode) && ioctl(*fd, BLKROGET, &ro) == 0 && ro)
		ret = bx_error(-EROFS, "%s: cannot open for writing: the device is read-only",
			       path);
	if (ret) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}
