/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fsops/alloc-hint.h"
#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/offline.h"
#include "common/units.h"
#include "model/allocator.h"
#include "disk/dev-item.h"
#include "format/hints.h"
#include "disk/volumes.h"
#include "disk/write.h"

/* ---- the kernel's sysfs files ---- */

static void devinfo_file(const char *sysfs_root, const uint8_t fsid[16], uint64_t devid,
			 const char *name, char *path, size_t len)
{
	char fsid_str[BX_FSID_STR_LEN];

	bx_fsid_unparse(fsid, fsid_str);
	snprintf(path, len, "%s/fs/btrfs/%s/devinfo/%llu/%s", sysfs_root, fsid_str,
		 (unsigned long long)devid, name);
}

static enum bx_hint_iface detect_iface(const char *sysfs_root, const uint8_t fsid[16],
				       uint64_t devid)
{
	char path[PATH_MAX];

	devinfo_file(sysfs_root, fsid, devid, "allocation_hint", path, sizeof(path));
	if (!access(path, F_OK))
		return BX_HINT_IFACE_NAME;
	devinfo_file(sysfs_root, fsid, devid, "type", path, sizeof(path));
	if (!access(path, F_OK))
		return BX_HINT_IFACE_TYPE;
	return BX_HINT_IFACE_NONE;
}

/*
 * Any mounted btrfs's devinfo directories under @sysfs_root: 1 when one has
 * a hint file, 0 when one lacks it, -1 when none is mounted.
 */
static int hint_files_in_sysfs(const char *sysfs_root)
{
	char path[PATH_MAX];
	struct dirent *fs;
	int seen = -1;
	DIR *top;

	snprintf(path, sizeof(path), "%s/fs/btrfs", sysfs_root);
	top = opendir(path);
	while (top && seen < 0 && (fs = readdir(top))) {
		char devinfo[PATH_MAX + 272];	/* room for a name and /devinfo */
		struct dirent *dev;
		DIR *d;

		snprintf(devinfo, sizeof(devinfo), "%s/%s/devinfo", path, fs->d_name);
		d = fs->d_name[0] == '.' ? NULL : opendir(devinfo);
		while (d && seen < 0 && (dev = readdir(d))) {
			char file[sizeof(devinfo) + 288];

			if (dev->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s/allocation_hint", devinfo, dev->d_name);
			seen = !access(file, F_OK);
			snprintf(file, sizeof(file), "%s/%s/type", devinfo, dev->d_name);
			seen |= !access(file, F_OK);
		}
		if (d)
			closedir(d);
	}
	if (top)
		closedir(top);
	return seen;
}

/*
 * The kernel's symbols: the sysfs handlers of the hint series (V12's
 * allocation_hint, kakra's type) are there when its btrfs has them; 1, 0
 * (btrfs is there without them), or -1 (no btrfs loaded, or unreadable).
 */
static int hint_handlers_in_kallsyms(void)
{
	FILE *fp = fopen("/proc/kallsyms", "re");
	char line[512];
	int seen = -1;

	while (fp && seen < 1 && fgets(line, sizeof(line), fp)) {
		const char *name = strrchr(line, ' ');

		if (!name)
			continue;
		if (strstr(name, " btrfs_devinfo_allocation_hint_show") ||
		    strstr(name, " btrfs_devinfo_type_show"))
			seen = 1;
		else if (seen < 0 && strstr(name, " btrfs_"))
			seen = 0;
	}
	if (fp)
		fclose(fp);
	return seen;
}

int bx_hint_kernel_support(const char *sysfs_root)
{
	int seen = hint_files_in_sysfs(sysfs_root ? sysfs_root : "/sys");

	/* Without a mounted btrfs to ask, the real kernel's symbols say (not for a fake /sys). */
	if (seen < 0 && (!sysfs_root || !strcmp(sysfs_root, "/sys")))
		seen = hint_handlers_in_kallsyms();
	return seen;
}

static int sysfs_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return bx_error(-errno, "%s: %m", path);
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return bx_error(-errno, "%s: %m", path);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Writes @value; the kernel's answer becomes a message that says what it means. */
static int sysfs_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return bx_error(-errno, "%s: %m", path);
	n = write(fd, value, strlen(value));
	err = errno;
	close(fd);
	if (n >= 0)
		return 0;
	switch (err) {
	case EINVAL:
		return bx_error(-EINVAL, "the kernel rejected '%s' (%s)", value, path);
	case EROFS:
		return bx_error(-EROFS, "the filesystem is mounted read-only; remount it "
				"read-write to change the hint");
	case EPERM:
		return bx_error(-EPERM, "the kernel refused the change (filesystem not ready, "
				"or no permission)");
	default:
		return bx_error(-err, "%s: %s", path, strerror(err));
	}
}

static int sysfs_get_hint(const char *sysfs_root, const uint8_t fsid[16],
			  struct bx_hint_state *st)
{
	char path[PATH_MAX], buf[64];
	int ret;

	devinfo_file(sysfs_root, fsid, st->devid,
		     st->iface == BX_HINT_IFACE_NAME ? "allocation_hint" : "type", path, sizeof(path));
	ret = sysfs_read(path, buf, sizeof(buf));
	if (ret)
		return ret;
	if (st->iface == BX_HINT_IFACE_TYPE) {
		if (bx_parse_u64(buf, &st->type))
			return bx_error(-EINVAL, "%s: unexpected content '%s'", path, buf);
		st->hint = bx_hint_of_type(st->type);
		return 0;
	}
	if (bx_hint_parse(buf, false, &st->hint) || st->hint > BX_HINT_DATA_ONLY)
		return bx_error(-EINVAL, "%s: the kernel reports '%s'", path, buf);
	st->type = bx_type_with_hint(st->type, st->hint);
	return 0;
}

static int sysfs_set_hint(const char *sysfs_root, const uint8_t fsid[16],
			  const struct bx_hint_state *st, uint64_t hint)
{
	char path[PATH_MAX], value[64];

	if (st->iface == BX_HINT_IFACE_NAME) {
		if (hint > BX_HINT_DATA_ONLY)
			return bx_error(-EINVAL, "this kernel's allocation_hint takes only "
					"data_preferred, metadata_preferred, metadata_only and "
					"data_only; '%s' needs a kernel with the 3-bit type field",
					bx_hint_name(hint) ? bx_hint_name(hint) : "that value");
		devinfo_file(sysfs_root, fsid, st->devid, "allocation_hint", path, sizeof(path));
		snprintf(value, sizeof(value), "%s", bx_hint_name(hint));
		for (char *p = value; *p; p++)
			*p = (char)toupper((unsigned char)*p);
	} else {
		/* The type file replaces the whole field: keep the bits above the hint. */
		devinfo_file(sysfs_root, fsid, st->devid, "type", path, sizeof(path));
		snprintf(value, sizeof(value), "0x%llx",
			 (unsigned long long)bx_type_with_hint(st->type, hint));
	}
	return sysfs_write(path, value);
}

/* ---- guard rails ---- */

struct hint_member {
	uint64_t devid;
	uint64_t hint;
};

bool bx_hint_profiles_fit(const uint64_t *types, size_t nr_types, const uint64_t *hints,
			  size_t nr_hints, struct bx_hint_shortfall *why)
{
	for (size_t c = 0; c < nr_types; c++) {
		uint64_t type = types[c];
		bool data = type & BTRFS_BLOCK_GROUP_DATA;
		struct bx_raid_attr attr;
		size_t allowed = 0;

		/* Not a block group (global reserve), or mixed: mixed ignores hints. */
		if (!(type & BTRFS_BLOCK_GROUP_TYPE_MASK) ||
		    ((type & BTRFS_BLOCK_GROUP_DATA) && (type & BTRFS_BLOCK_GROUP_METADATA)))
			continue;
		if (bx_raid_attr(type, &attr))
			continue;
		for (size_t i = 0; i < nr_hints; i++)
			if (data ? bx_hint_allows_data(hints[i]) : bx_hint_allows_metadata(hints[i]))
				allowed++;
		if (allowed < (size_t)attr.devs_min) {
			*why = (struct bx_hint_shortfall){ type, allowed, attr.devs_min };
			return false;
		}
	}
	return true;
}

void bx_hint_shortfall_text(const struct bx_hint_shortfall *why, char *buf, size_t len)
{
	bool data = why->type & BTRFS_BLOCK_GROUP_DATA;
	const char *kind = data ? "data" : (why->type & BTRFS_BLOCK_GROUP_SYSTEM) ? "system" :
			   "metadata";

	snprintf(buf, len, "after this change %zu device%s would allow %s, but %s %s needs %d; "
		 "no new %s chunk could be allocated", why->allowed, why->allowed == 1 ? "" : "s",
		 data ? "data" : "metadata", bx_profile_name(why->type), kind, why->needed, kind);
}

/*
 * Enough devices for every block group type in @types (type | profile bits,
 * repeats allowed) to allocate another chunk under the hints of @members?
 */
static int check_profiles(const uint64_t *types, size_t nr_types,
			  const struct hint_member *members, size_t nr)
{
	struct bx_hint_shortfall why;
	uint64_t *hints = calloc(nr + 1, sizeof(*hints));
	char text[256];
	bool fit;

	if (!hints)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < nr; i++)
		hints[i] = members[i].hint;
	fit = bx_hint_profiles_fit(types, nr_types, hints, nr, &why);
	free(hints);
	if (fit)
		return 0;
	bx_hint_shortfall_text(&why, text, sizeof(text));
	return bx_error(-ENOSPC, "%s (--force overrides)", text);
}

int bx_hint_check_profiles(struct bx_fs *fs, uint64_t devid, uint64_t new_hint)
{
	struct hint_member *members = calloc(fs->nr_devs, sizeof(*members));
	uint64_t *types = calloc(fs->chunks.nr + 1, sizeof(*types));
	int ret;

	if (!members || !types) {
		free(members);
		free(types);
		return bx_error(-ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < fs->nr_devs; i++) {
		members[i].devid = fs->devs[i]->devid;
		members[i].hint = fs->devs[i]->devid == devid ? new_hint :
				  bx_hint_of_type(le64toh(fs->devs[i]->item.type));
	}
	for (size_t c = 0; c < fs->chunks.nr; c++)
		types[c] = fs->chunks.chunks[c]->type;
	ret = check_profiles(types, fs->chunks.nr, members, fs->nr_devs);
	free(members);
	free(types);
	return ret;
}

/* The guard rails read from the devices of a filesystem no kernel writes to. */
static int check_profiles_on_devices(const char *device, uint64_t devid, uint64_t new_hint)
{
	struct bx_fs *fs;
	int ret = bx_fs_open(&fs, (char *const *)&device, 1, BX_OPEN_DEGRADED);

	if (ret)
		return ret;
	ret = bx_hint_check_profiles(fs, devid, new_hint);
	bx_fs_close(fs);
	return ret;
}

/*
 * The guard rails on a mounted filesystem, from what the kernel owns: the
 * block group types in use (SPACE_INFO), the members (DEV_INFO) and their
 * hints (sysfs). Reading the tree blocks from the devices instead would race
 * with the kernel rewriting them.
 */
static int check_profiles_mounted(const char *sysfs_root, const uint8_t fsid[16],
				  const struct bx_hint_state *target, uint64_t new_hint)
{
	uint64_t types[64];
	struct bx_mounted_fs mfs;
	struct hint_member *members;
	char mnt[4096];
	size_t nr_types = 0;
	int ret;

	/* A sysfs tree of tests over an unmounted filesystem: the devices are quiet. */
	if (!bx_fs_is_mounted("/sys", fsid, mnt, sizeof(mnt)))
		return check_profiles_on_devices(target->path, target->devid, new_hint);
	ret = bx_mounted_open(mnt, &mfs);
	if (ret)
		return ret;
	ret = bx_mounted_space_flags(&mfs, types, sizeof(types) / sizeof(types[0]), &nr_types);
	members = calloc(mfs.nr_devs ? mfs.nr_devs : 1, sizeof(*members));
	if (!ret && !members)
		ret = bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < mfs.nr_devs; i++) {
		struct bx_hint_state st = { .devid = mfs.devs[i].devid, .iface = target->iface };

		members[i].devid = st.devid;
		if (st.devid == target->devid)
			members[i].hint = new_hint;
		else if (!(ret = sysfs_get_hint(sysfs_root, fsid, &st)))
			members[i].hint = st.hint;
	}
	if (!ret)
		ret = check_profiles(types, nr_types, members, mfs.nr_devs);
	free(members);
	bx_mounted_close(&mfs);
	return ret;
}

/* ---- get and set ---- */

static int identify(const char *device, struct bx_hint_state *st, uint8_t fsid[16])
{
	struct bx_fs *fs;
	int ret = bx_fs_open(&fs, (char *const *)&device, 1, BX_OPEN_SB_ONLY | BX_OPEN_NO_SCAN);

	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	st->devid = fs->devs[0]->devid;
	snprintf(st->path, sizeof(st->path), "%s", device);
	st->type = le64toh(fs->devs[0]->sb.dev_item.type);
	memcpy(fsid, fs->fsid, 16);
	bx_fs_close(fs);
	return 0;
}

/*
 * The stored value of an unmounted filesystem's device: its DEV_ITEM in the
 * chunk tree, which the kernel reads at mount. When other members cannot be
 * found (a member missing), or the trees use a format feature btrfsx does not
 * read, the copy in the device's own superblock, which identify() read and
 * every change writes too.
 */
static int read_stored(const char *device, struct bx_hint_state *st)
{
	struct btrfs_dev_item item;
	struct bx_fs *fs;
	int ret = bx_fs_open(&fs, (char *const *)&device, 1, BX_OPEN_SB_ONLY);
	bool complete = !ret && fs->nr_devs >= le64toh(fs->sb.num_devices);

	bx_fs_close(fs);
	if (ret || !complete) {
		st->hint = bx_hint_of_type(st->type);
		return ret;
	}
	ret = bx_fs_open(&fs, (char *const *)&device, 1, 0);
	if (ret == -EOPNOTSUPP) {
		/* Trees btrfsx does not read (a format feature it lacks): the superblock's copy. */
		bx_error_clear();
		st->hint = bx_hint_of_type(st->type);
		return 0;
	}
	if (ret)
		return ret;
	ret = bx_read_dev_item(fs, st->devid, &item);
	if (!ret)
		st->type = le64toh(item.type);
	bx_fs_close(fs);
	st->hint = bx_hint_of_type(st->type);
	return ret;
}

void bx_hint_warn_unusual(const struct bx_hint_state *st)
{
	if (bx_type_is_device_roles(st->type))
		bx_warn("devid %llu: type 0x%llx uses the device-roles encoding, which btrfsx does "
			"not support yet", (unsigned long long)st->devid,
			(unsigned long long)st->type);
	else if (!bx_hint_name(st->hint))
		bx_warn("devid %llu: unknown allocation hint value %llu",
			(unsigned long long)st->devid, (unsigned long long)st->hint);
}

static int dev_item_type_cb(void *arg, const struct btrfs_ioctl_search_header *sh,
			    const void *item)
{
	struct bx_hint_state *st = arg;
	struct btrfs_dev_item di;

	if (sh->offset != st->devid || sh->len < sizeof(di))
		return 0;
	memcpy(&di, item, sizeof(di));
	st->type = le64toh(di.type);
	return 1;
}

/*
 * The stored value of a mounted filesystem's device, from the kernel's chunk
 * tree (TREE_SEARCH_V2): the tree blocks on the devices may be half rewritten
 * by the kernel at any moment.
 */
static int read_stored_mounted(const uint8_t fsid[16], struct bx_hint_state *st)
{
	struct bx_mounted_fs mfs;
	char mnt[4096];
	int ret;

	/* A sysfs tree of tests over an unmounted filesystem: the devices are quiet. */
	if (!bx_fs_is_mounted("/sys", fsid, mnt, sizeof(mnt)))
		return read_stored(st->path, st);
	ret = bx_mounted_open(mnt, &mfs);
	if (ret)
		return ret;
	ret = bx_mounted_search_tree(mfs.fd, mnt, BTRFS_CHUNK_TREE_OBJECTID,
				     BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEMS_OBJECTID,
				     BTRFS_DEV_ITEM_KEY, dev_item_type_cb, st);
	bx_mounted_close(&mfs);
	if (ret < 0)
		return ret;
	if (!ret)
		return bx_error(-ENOENT, "%s: devid %llu has no device item in the chunk tree",
				st->path, (unsigned long long)st->devid);
	st->hint = bx_hint_of_type(st->type);
	return 0;
}

int bx_hint_query(const char *sysfs_root, const char *device, struct bx_hint_state *st)
{
	uint8_t fsid[16];
	int ret = identify(device, st, fsid);

	if (ret)
		return ret;
	st->mounted = bx_fs_is_mounted(sysfs_root, fsid, NULL, 0);
	if (st->mounted)
		st->iface = detect_iface(sysfs_root, fsid, st->devid);
	if (st->iface != BX_HINT_IFACE_NONE) {
		st->effective = true;
		return sysfs_get_hint(sysfs_root, fsid, st);
	}
	return st->mounted ? read_stored_mounted(fsid, st) : read_stored(device, st);
}

int bx_hint_get(const char *sysfs_root, const char *device, struct bx_hint_state *st)
{
	int ret = bx_hint_query(sysfs_root, device, st);

	if (ret)
		return ret;
	/* data_preferred is what a kernel without hints does anyway. */
	if (st->mounted && !st->effective && st->hint != BX_HINT_DATA_PREFERRED)
		bx_warn("the running kernel has no allocation hint support: the stored hint "
			"has no effect");
	bx_hint_warn_unusual(st);
	return 0;
}

static int set_online(const char *sysfs_root, const uint8_t fsid[16], const char *device,
		      uint64_t hint, unsigned int flags, struct bx_hint_state *before,
		      struct bx_hint_state *after)
{
	int ret;

	if (before->iface == BX_HINT_IFACE_NONE)
		return bx_error(-EOPNOTSUPP, "%s: the running kernel has no allocation hint support "
				"(no devinfo/%llu/allocation_hint or type in sysfs); unmount the "
				"filesystem to set the hint offline", device,
				(unsigned long long)before->devid);
	ret = sysfs_get_hint(sysfs_root, fsid, before);
	if (!ret && bx_type_is_device_roles(before->type))
		ret = bx_error(-EOPNOTSUPP, "devid %llu uses the device-roles encoding; not "
			       "writing over it", (unsigned long long)before->devid);
	if (!ret && !(flags & BX_HINT_SET_FORCE))
		ret = check_profiles_mounted(sysfs_root, fsid, before, hint);
	if (!ret)
		ret = sysfs_set_hint(sysfs_root, fsid, before, hint);
	*after = *before;
	if (!ret)
		ret = sysfs_get_hint(sysfs_root, fsid, after);
	if (!ret && after->hint != hint)
		ret = bx_error(-EIO, "the kernel took the write but reports %s afterwards",
			       bx_hint_name(after->hint) ? bx_hint_name(after->hint) : "another value");
	return ret;
}

/*
 * The device item in the chunk tree and in the device's superblock both hold
 * @hint: nothing to write (a copy left old by a crash is rewritten).
 */
static bool already_set(struct bx_fs *fs, const struct bx_hint_state *before, uint64_t hint)
{
	const struct bx_device *dev = bx_fs_device(fs, before->devid);
	uint64_t type = bx_type_with_hint(before->type, hint);

	return dev && type == before->type && le64toh(dev->sb.dev_item.type) == type;
}

static int set_offline(const char *device, uint64_t hint, unsigned int flags,
		       const struct bx_write_plan *writes, struct bx_hint_state *before,
		       struct bx_hint_state *after)
{
	struct btrfs_dev_item item;
	struct bx_fs *fs;
	int ret = bx_open_offline(&fs, (char *const *)&device, 1, BX_OPEN_WRITE,
				  "the online path");

	if (ret)
		return ret;
	ret = bx_read_dev_item(fs, before->devid, &item);
	if (ret)
		goto out;
	before->type = le64toh(item.type);
	before->hint = bx_hint_of_type(before->type);
	if (bx_type_is_device_roles(before->type)) {
		ret = bx_error(-EOPNOTSUPP, "devid %llu uses the device-roles encoding (type 0x%llx);"
			       " not writing over it", (unsigned long long)before->devid,
			       (unsigned long long)before->type);
		goto out;
	}
	if (!(flags & BX_HINT_SET_FORCE)) {
		ret = bx_hint_check_profiles(fs, before->devid, hint);
		if (ret)
			goto out;
	}
	if (writes)
		fs->writes = *writes;
	*after = *before;
	if (already_set(fs, before, hint))
		goto out;
	ret = bx_set_dev_type(fs, before->devid, bx_type_with_hint(before->type, hint));
	if (!ret)
		ret = bx_read_dev_item(fs, before->devid, &item);
	if (!ret) {
		after->type = le64toh(item.type);
		after->hint = bx_hint_of_type(after->type);
	}
out:
	bx_fs_close(fs);
	return ret;
}

int bx_hint_set(const char *sysfs_root, const char *device, uint64_t hint, unsigned int flags,
		const struct bx_write_plan *writes, struct bx_hint_state *before,
		struct bx_hint_state *after)
{
	uint8_t fsid[16];
	int ret = identify(device, before, fsid);

	if (ret)
		return ret;
	if (hint > BTRFSX_HINT_FIELD_MASK)
		return bx_error(-EINVAL, "hint value %llu does not fit the 3-bit hint field",
				(unsigned long long)hint);
	if (!bx_hint_name(hint)) {
		if (!(flags & BX_HINT_SET_FORCE))
			return bx_error(-EINVAL, "hint value %llu is unknown; --force writes it "
					"anyway", (unsigned long long)hint);
		bx_warn("writing unknown allocation hint value %llu (forced)",
			(unsigned long long)hint);
	}
	if (writes && writes->refused)
		return bx_error(-EPERM, "%s: this command does not write (BX_CMD_WRITES)", device);
	before->mounted = bx_fs_is_mounted(sysfs_root, fsid, NULL, 0);
	if (before->mounted) {
		before->iface = detect_iface(sysfs_root, fsid, before->devid);
		before->effective = before->iface != BX_HINT_IFACE_NONE;
		return set_online(sysfs_root, fsid, device, hint, flags, before, after);
	}
	return set_offline(device, hint, flags, writes, before, after);
}
