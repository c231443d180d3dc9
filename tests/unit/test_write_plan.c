/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * BX_CMD_WRITES enforced: a write plan marked refused (what the dispatcher
 * gives a command that does not declare it writes) makes every writer fail
 * with -EPERM before anything reaches the device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "fsops/alloc-hint.h"
#include "format/hints.h"
#include "mkfs/mkfs.h"
#include "tests/unit/unit.h"

#define IMAGE_SIZE (256u << 20)

/* Whether the image behind @fd is still all zeros. */
static int untouched(int fd)
{
	static uint8_t buf[1 << 20];

	for (off_t at = 0; at < IMAGE_SIZE; at += sizeof(buf)) {
		if (pread(fd, buf, sizeof(buf), at) != (ssize_t)sizeof(buf))
			return 0;
		for (size_t i = 0; i < sizeof(buf); i++)
			if (buf[i])
				return 0;
	}
	return 1;
}

static int make_fs(const char *path, bool refused)
{
	struct bx_mkfs_device dev = { path, BX_HINT_DATA_PREFERRED };
	struct bx_mkfs_options opts = {
		.devs = &dev, .nr_devs = 1, .csum_type = 0, .force = true,
		.metadata_profile_default = true, .features = BX_MKFS_F_DEFAULT,
		.writes = { .refused = refused },
	};
	struct bx_mkfs_result *res = NULL;
	int ret;

	bx_mkfs_default_profiles(&opts);
	ret = bx_mkfs(&opts, &res);
	bx_mkfs_result_free(res);
	return ret;
}

int main(void)
{
	char path[] = "/tmp/btrfsx-write-plan.XXXXXX";
	struct bx_write_plan refused = { .refused = true };
	struct bx_hint_state before, after;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && ftruncate(fd, IMAGE_SIZE) == 0);
	CHECK(make_fs(path, true) == -EPERM);
	CHECK(untouched(fd));

	CHECK(make_fs(path, false) == 0);
	CHECK(bx_hint_set("/sys", path, BX_HINT_METADATA_ONLY, BX_HINT_SET_FORCE, &refused,
			  &before, &after) == -EPERM);
	CHECK(bx_hint_set("/sys", path, BX_HINT_METADATA_ONLY, BX_HINT_SET_FORCE, NULL,
			  &before, &after) == 0);
	CHECK(after.hint == BX_HINT_METADATA_ONLY);
	bx_warnings_clear();
	close(fd);
	unlink(path);
	return unit_summary();
}
