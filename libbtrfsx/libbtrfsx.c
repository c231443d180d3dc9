/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The public library's conventions: error codes and their strings, the
 * calling thread's message and warnings, and the offline identity query.
 * Each area's entry points live beside it (hint.c, usage.c, ...).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "format/csum.h"
#include "disk/volumes.h"
#include "libbtrfsx/libbtrfsx-private.h"

static const char *const error_strings[] = {
	[BTRFSX_OK] = "success",
	[BTRFSX_ERROR_NO_MEMORY] = "out of memory",
	[BTRFSX_ERROR_INVALID_ARGUMENT] = "invalid argument",
	[BTRFSX_ERROR_NOT_BTRFS] = "not a btrfs filesystem",
	[BTRFSX_ERROR_CORRUPTED] = "filesystem structure is corrupted",
	[BTRFSX_ERROR_IO] = "I/O error",
	[BTRFSX_ERROR_MISSING_DEVICE] = "a member device is missing",
	[BTRFSX_ERROR_BUSY] = "device is busy or mounted",
	[BTRFSX_ERROR_PERMISSION] = "permission denied",
	[BTRFSX_ERROR_NOT_FOUND] = "not found",
	[BTRFSX_ERROR_OTHER] = "unexpected error",
	[BTRFSX_ERROR_NOT_SUPPORTED] = "not supported by the running kernel or this filesystem",
	[BTRFSX_ERROR_NOT_MOUNTED] = "filesystem is not mounted",
	[BTRFSX_ERROR_MOUNTED] = "filesystem is mounted",
	[BTRFSX_ERROR_CANCELLED] = "cancelled",
	[BTRFSX_ERROR_NO_SPACE] = "not enough space on the devices",
};

PUBLIC const char *btrfsx_strerror(enum btrfsx_error err)
{
	if ((unsigned int)err >= sizeof(error_strings) / sizeof(error_strings[0]))
		return "unknown error";
	return error_strings[err];
}

PUBLIC const char *btrfsx_last_error_message(void)
{
	return bx_error_message(0);
}

PUBLIC size_t btrfsx_warnings_count(void)
{
	return bx_warnings_count();
}

PUBLIC const char *btrfsx_warning(size_t i)
{
	return bx_warning(i);
}

void bx_api_begin(void)
{
	bx_error_clear();
	bx_warnings_clear();
}

static enum btrfsx_error from_kind(enum bx_error_kind kind)
{
	switch (kind) {
	case BX_ERROR_KIND_NOT_BTRFS:
		return BTRFSX_ERROR_NOT_BTRFS;
	case BX_ERROR_KIND_MOUNTED:
		return BTRFSX_ERROR_MOUNTED;
	case BX_ERROR_KIND_NOT_MOUNTED:
		return BTRFSX_ERROR_NOT_MOUNTED;
	case BX_ERROR_KIND_NO_SPACE:
		return BTRFSX_ERROR_NO_SPACE;
	default:
		return BTRFSX_OK;
	}
}

static enum btrfsx_error from_errno(int err)
{
	switch (err) {
	case ENOMEM:
		return BTRFSX_ERROR_NO_MEMORY;
	case EINVAL:
	case ERANGE:
	case ENAMETOOLONG:
	case ENOSPC:		/* a guard rail: the change would leave no room to allocate */
		return BTRFSX_ERROR_INVALID_ARGUMENT;
	case EUCLEAN:
	case EPROTO:		/* a kernel file that cannot be parsed */
		return BTRFSX_ERROR_CORRUPTED;
	case EIO:
	case ETIMEDOUT:		/* a device stalls */
		return BTRFSX_ERROR_IO;
	case ENODEV:
	case ENXIO:
		return BTRFSX_ERROR_MISSING_DEVICE;
	case EBUSY:
		return BTRFSX_ERROR_BUSY;
	case EACCES:
	case EPERM:
	case EROFS:
		return BTRFSX_ERROR_PERMISSION;
	case ENOENT:
	case ENOTDIR:
		return BTRFSX_ERROR_NOT_FOUND;
	case EOPNOTSUPP:
	case ENOTTY:
		return BTRFSX_ERROR_NOT_SUPPORTED;
	case EINTR:
		return BTRFSX_ERROR_CANCELLED;
	default:
		return BTRFSX_ERROR_OTHER;
	}
}

enum btrfsx_error bx_api_result(int ret)
{
	enum btrfsx_error kind;
	char message[1024];

	if (!ret)
		return BTRFSX_OK;
	/* A failure without its own message still gets one: strerror's. */
	snprintf(message, sizeof(message), "%s", bx_error_message(ret));
	kind = from_kind(bx_error_last_kind());
	bx_error_as(ret, bx_error_last_kind(), "%s", message);
	return kind != BTRFSX_OK ? kind : from_errno(-ret);
}

enum btrfsx_error bx_api_missing(const char *what)
{
	return bx_api_result(bx_error(-EINVAL, "%s is required", what));
}

enum btrfsx_error bx_api_check_flags(unsigned int flags, unsigned int known)
{
	if (flags & ~known)
		return bx_api_result(bx_error(-EINVAL, "unknown flags 0x%x", flags & ~known));
	return BTRFSX_OK;
}

const char *bx_api_sysfs_root(const char *sysfs_root)
{
	return sysfs_root ? sysfs_root : "/sys";
}

const char *bx_api_config_dir(const char *config_dir)
{
	return config_dir ? config_dir : SYSCONFDIR "/btrfsx";
}

const char *bx_api_state_dir(const char *state_dir)
{
	return state_dir ? state_dir : "/var/lib/btrfsx";
}

PUBLIC enum btrfsx_error btrfsx_fs_info_offline(const char *const *paths, size_t nr_paths,
						struct btrfsx_fs_info *info)
{
	struct bx_fs *fs;
	int ret;

	bx_api_begin();
	if (!paths || !nr_paths)
		return bx_api_missing("a device");
	if (!info)
		return bx_api_missing("info");
	ret = bx_fs_open(&fs, (char *const *)paths, (int)nr_paths, 0);
	if (ret)
		return bx_api_result(ret);
	memset(info, 0, sizeof(*info));
	memcpy(info->fsid, fs->fsid, sizeof(info->fsid));
	memcpy(info->metadata_uuid, fs->metadata_uuid, sizeof(info->metadata_uuid));
	memcpy(info->label, fs->sb.label, sizeof(info->label) - 1);
	info->generation = le64toh(fs->sb.generation);
	info->num_devices = le64toh(fs->sb.num_devices);
	info->total_bytes = le64toh(fs->sb.total_bytes);
	info->bytes_used = le64toh(fs->sb.bytes_used);
	info->nodesize = fs->nodesize;
	info->sectorsize = fs->sectorsize;
	info->csum_type = (uint16_t)fs->csum_type;
	snprintf(info->csum_name, sizeof(info->csum_name), "%s", btrfsx_csum_name(fs->csum_type));
	bx_fs_close(fs);
	return BTRFSX_OK;
}
