#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/mounted-fs.h"
#include "common/offline.h"

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
		ret = bx_error(-EBUSY, "%s: filesystem is mounted at %s; use %s or unmount",
			       paths[0], mnt, online_path);
		bx_fs_close(fs);
		return ret;
	}
	bx_fs_close(fs);
	ret = bx_fs_open(&fs, paths, nr_paths, flags | BX_OPEN_EXCL);
	if (ret)
		return ret;
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
