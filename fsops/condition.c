/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The condition of a mounted filesystem (condition.h). */
#include <errno.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>

#include "common/error.h"
#include "fsops/condition.h"

/* A balance the kernel runs or holds paused (ENOTCONN: none). */
static int read_balance(const struct bx_mounted_fs *mfs, struct bx_fs_condition *c)
{
	struct btrfs_ioctl_balance_args args;

	memset(&args, 0, sizeof(args));
	if (ioctl(mfs->fd, BTRFS_IOC_BALANCE_PROGRESS, &args) == 0) {
		c->balance = (args.state & BTRFS_BALANCE_STATE_RUNNING) ? BX_SNAP_BALANCE_RUNNING :
			     BX_SNAP_BALANCE_PAUSED;
		return 0;
	}
	if (errno == ENOTCONN)
		return 0;
	if (errno == EPERM)
		return bx_error(-EPERM, "%s: asking the kernel for its balance needs root "
				"(CAP_SYS_ADMIN)", mfs->path);
	return bx_error(-errno, "%s: cannot ask for the balance status: %m", mfs->path);
}

/*
 * The kernel's exclusive operation other than a balance (which
 * read_balance() says with its state): "device replace", "resize", ...; a
 * kernel without the file (before 5.10) or a fake sysfs tree says none.
 */
static void read_exclusive(const struct bx_mounted_fs *mfs, const char *sysfs_root,
			   struct bx_fs_condition *c)
{
	char path[4096], op[sizeof(c->exclusive)] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/fs/btrfs/%s/exclusive_operation",
		 sysfs_root ? sysfs_root : "/sys", mfs->fsid_str);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(op, sizeof(op), f))
		op[strcspn(op, "\n")] = '\0';
	fclose(f);
	if (strcmp(op, "none") && strncmp(op, "balance", 7))
		snprintf(c->exclusive, sizeof(c->exclusive), "%s", op);
}

/* A scrub of any member (the kernel says so per device). */
static bool scrub_running(const struct bx_mounted_fs *mfs)
{
	for (size_t i = 0; i < mfs->nr_devs; i++) {
		struct btrfs_ioctl_scrub_args args;

		memset(&args, 0, sizeof(args));
		args.devid = mfs->devs[i].devid;
		if (ioctl(mfs->fd, BTRFS_IOC_SCRUB_PROGRESS, &args) == 0)
			return true;
	}
	return false;
}

int bx_fs_condition_read(const struct bx_mounted_fs *mfs, const char *sysfs_root,
			 struct bx_fs_condition *c)
{
	struct statvfs sv;

	memset(c, 0, sizeof(*c));
	c->mounted = true;
	c->kernel_hints = -1;
	c->read_only = fstatvfs(mfs->fd, &sv) == 0 && (sv.f_flag & ST_RDONLY);
	for (size_t i = 0; i < mfs->nr_devs; i++) {
		if (mfs->devs[i].path[0])
			continue;
		if (c->nr_missing < BX_CONDITION_MISSING_MAX)
			c->missing[c->nr_missing] = mfs->devs[i].devid;
		c->nr_missing++;
	}
	read_exclusive(mfs, sysfs_root, c);
	c->scrub_running = scrub_running(mfs);
	return read_balance(mfs, c);
}
