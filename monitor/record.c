/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `monitor record`: sample, add the last offline scrub, store. See record.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "disk/device-claim.h"
#include "fsops/read-policy.h"
#include "monitor/record.h"
#include "scrub/scrub.h"

void bx_mon_take_scrub(const char *state_dir, struct bx_mon_sample *s)
{
	struct bx_mon_scrub *sc = &s->scrub;
	const struct bx_scrub_result *res;
	const struct bx_scrub_counters *c;
	struct bx_scrub_status *st;
	char path[PATH_MAX];
	int ret;

	bx_scrub_status_path(state_dir, s->fsid, path, sizeof(path));
	ret = bx_scrub_status_load(path, &st);
	if (ret) {
		if (ret != -ENOENT)
			bx_warn("%s", bx_error_message(ret));
		bx_error_clear();	/* the sample goes on without its scrub part */
		return;
	}
	res = bx_scrub_status_result(st);
	c = &res->total;
	sc->known = true;
	snprintf(sc->status, sizeof(sc->status), "%s", bx_scrub_status_state(st));
	sc->started = (int64_t)res->started;
	sc->duration = res->duration;
	sc->bytes_scrubbed = c->data_bytes_scrubbed + c->tree_bytes_scrubbed;
	sc->errors = c->read_errors + c->super_errors + c->verify_errors + c->csum_errors +
		     c->parity_errors;
	sc->corrected = c->corrected_errors + c->super_corrected;
	sc->uncorrectable = c->uncorrectable_errors;
	bx_scrub_status_free(st);
}

/*
 * @path (resolved) must be where a btrfs filesystem is mounted. A mount point
 * whose filesystem was unmounted leaves its directory behind, often on
 * another btrfs (the root's): opened, it would be that other filesystem,
 * sampled under the name the sysadmin gave for the first.
 */
static int check_mount_point(const char *path)
{
	struct bx_mount_entry *mounts = NULL;
	size_t nr = 0;
	bool found = false;
	int ret = bx_list_btrfs_mounts("/proc/self/mountinfo", &mounts, &nr);

	if (ret)
		return ret;
	for (size_t i = 0; i < nr && !found; i++)
		found = !strcmp(mounts[i].mountpoint, path);
	free(mounts);
	if (!found)
		return bx_error(-EINVAL, "%s: not where a btrfs filesystem is mounted "
				"(unmounted?)", path);
	return 0;
}

static int record_one(struct bx_mon_db *db, const char *arg, const struct bx_mon_record_opts *o)
{
	char mountpoint[PATH_MAX];
	struct bx_mon_sample s;
	int ret;

	if (!realpath(arg, mountpoint))
		return bx_error(-errno, "%s: %m", arg);
	ret = check_mount_point(mountpoint);
	if (ret)
		return ret;
	ret = bx_mon_collect(mountpoint, o->sysfs_root, o->now, &s);
	if (ret)
		return ret;
	bx_mon_take_scrub(o->state_dir, &s);
	ret = bx_mon_db_add(db, &s, o->keep);
	if (ret == -EEXIST) {
		/* Another record (a second timer) stored this moment: one sample is enough. */
		bx_warn("%s: %s", s.mountpoint, bx_error_message(ret));
		bx_error_clear();
		ret = 0;
	} else if (!ret && o->recorded)
		o->recorded(o->arg, &s);
	bx_mon_sample_release(&s);
	return ret;
}

int bx_mon_mounted_filesystems(char ***paths, int *nr)
{
	struct bx_rp_mounts mounts;
	int ret = bx_rp_scan_mounts("/proc/self/mountinfo", NULL, &mounts);

	*nr = 0;
	if (ret)
		return ret;
	*paths = calloc(mounts.nr + 1, sizeof(**paths));
	for (size_t i = 0; *paths && i < mounts.nr; i++) {
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen = seen || !strcmp(mounts.mounts[j].fsid, mounts.mounts[i].fsid);
		if (!seen && !((*paths)[(*nr)++] = strdup(mounts.mounts[i].mountpoint)))
			ret = bx_error(-ENOMEM, "out of memory");
	}
	if (!*paths)
		ret = bx_error(-ENOMEM, "out of memory");
	free(mounts.mounts);
	return ret;
}

void bx_mon_paths_free(char **paths, int nr)
{
	for (int i = 0; paths && i < nr; i++)
		free(paths[i]);
	free(paths);
}

int bx_mon_record(struct bx_mon_db *db, char **paths, int nr, bool found,
		  const struct bx_mon_record_opts *opts)
{
	char first_error[1024] = "";
	int ret, first_ret = 0, nr_failed = 0;

	for (int i = 0; i < nr; i++) {
		ret = record_one(db, paths[i], opts);
		if (!ret)
			continue;
		if (found && (ret == -ENOENT || bx_error_last_kind() == BX_ERROR_KIND_NOT_BTRFS)) {
			bx_warn("%s (unmounted meanwhile?)", bx_error_message(ret));
			continue;
		}
		if (!nr_failed++) {
			first_ret = ret;
			snprintf(first_error, sizeof(first_error), "%s", bx_error_message(ret));
		} else {
			bx_warn("%s", bx_error_message(ret));
		}
	}
	if (nr_failed == 1)
		return bx_error(first_ret, "%s", first_error);
	if (nr_failed) {
		bx_warn("%s", first_error);
		return bx_error(first_ret, "%d of %d filesystems not recorded", nr_failed, nr);
	}
	return 0;
}
