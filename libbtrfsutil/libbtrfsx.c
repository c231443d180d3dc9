/* The public library's entry points; each wraps kernel-shared and maps errors. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "kernel-shared/csum.h"
#include "kernel-shared/volumes.h"
#include "libbtrfsutil/btrfsx.h"

#define PUBLIC __attribute__((visibility("default")))

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
};

PUBLIC const char *btrfsx_strerror(enum btrfsx_error err)
{
	if ((unsigned int)err >= sizeof(error_strings) / sizeof(error_strings[0]))
		return "unknown error";
	return error_strings[err];
}

PUBLIC const char *btrfsx_last_error_message(void)
{
	return bx_error_message(-EINVAL);
}

static enum btrfsx_error from_errno(int ret)
{
	switch (-ret) {
	case 0:
		return BTRFSX_OK;
	case ENOMEM:
		return BTRFSX_ERROR_NO_MEMORY;
	case EINVAL:
		return BTRFSX_ERROR_INVALID_ARGUMENT;
	case EUCLEAN:
		return BTRFSX_ERROR_CORRUPTED;
	case EIO:
		return BTRFSX_ERROR_IO;
	case ENODEV:
		return BTRFSX_ERROR_MISSING_DEVICE;
	case EBUSY:
		return BTRFSX_ERROR_BUSY;
	case EACCES:
	case EPERM:
		return BTRFSX_ERROR_PERMISSION;
	case ENOENT:
		return BTRFSX_ERROR_NOT_FOUND;
	default:
		return BTRFSX_ERROR_OTHER;
	}
}

PUBLIC enum btrfsx_error btrfsx_fs_info_offline(const char *const *paths, size_t nr_paths,
						struct btrfsx_fs_info *info)
{
	struct bx_fs *fs;
	int ret;

	bx_error_clear();
	bx_warnings_clear();
	if (!paths || !nr_paths || !info)
		return from_errno(bx_error(-EINVAL, "no device given"));
	ret = bx_fs_open(&fs, (char *const *)paths, (int)nr_paths, 0);
	if (ret)
		return ret == -EINVAL && strstr(bx_error_message(ret), "not a btrfs") ?
			BTRFSX_ERROR_NOT_BTRFS : from_errno(ret);
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
