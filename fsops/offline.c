#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/fs.h>

#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/offline.h"

/* Mount point of the filesystem with @fsid, from this namespace's mounts. */
static void find_mountpoint(const uint8_t fsid[16], char *mnt, size_t len)
{
	struct bx_mount_entry *mounts = NULL;
	size_t nr = 0;

	snprintf(mnt, len, "an unknown mount point");
	if (bx_list_btrfs_mounts("/proc/self/mountinfo", &mounts, &nr))
		return;
	for (size_t i = 0; i < nr; i++) {
		struct bx_mounted_fs mfs;
		bool same;

		if (bx_mounted_open(mounts[i].mountpoint, &mfs))
			continue;
		same = !memcmp(mfs.fsid, fsid, 16);
		bx_mounted_close(&mfs);
		if (same) {
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
	    bx_read_super_copy(fd, size, 0, &sb) == BX_SB_OK)
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

int bx_open_offline(struct bx_fs **out, char *const *paths, int nr_paths, unsigned int flags,
		    const char *online_path)
{
	char mnt[4096];
	struct bx_fs *fs;
	int ret;

	for (int i = 0; i < nr_paths; i++) {
		ret = bx_check_not_loop_backed(paths[i]);
		if (ret)
			return ret;
	}
	/* Read-only first: the fsid tells whether the kernel has it mounted. */
	ret = bx_fs_open(&fs, paths, nr_paths, BX_OPEN_SB_ONLY | BX_OPEN_NO_SCAN);
	if (ret)
		return ret;
	if (bx_fs_is_mounted("/sys", fs->fsid, mnt, sizeof(mnt))) {
		ret = bx_error_as(-EBUSY, BX_ERROR_KIND_MOUNTED,
				  "%s: filesystem is mounted at %s; use %s or unmount", paths[0],
				  mnt, online_path);
		bx_fs_close(fs);
		return ret;
	}
	bx_fs_close(fs);
	ret = bx_fs_open(&fs, paths, nr_paths, flags | BX_OPEN_EXCL);
	if (ret)
		return ret;
	/* Degraded is for members that are gone, not for one another program holds. */
	if (fs->member_busy) {
		ret = bx_error(-EBUSY, "%s", fs->scan_failures);
		bx_fs_close(fs);
		return ret;
	}
	for (size_t i = 0; i < fs->nr_devs; i++) {
		ret = bx_check_not_loop_backed(fs->devs[i]->path);
		if (ret) {
			bx_fs_close(fs);
			return ret;
		}
	}
	*out = fs;
	return 0;
}

int bx_open_offline_scrub(struct bx_fs **fs, char *const *paths, int nr_paths, bool readonly)
{
	return bx_open_offline(fs, paths, nr_paths,
			       BX_OPEN_DEGRADED | (readonly ? 0 : BX_OPEN_WRITE),
			       "the online path (btrfs scrub)");
}
