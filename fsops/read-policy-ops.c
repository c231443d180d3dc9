/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read policy operations as users see them: show one filesystem's
 * policy with its record, switch it (and record it), apply the records to
 * what is mounted. The command line prints their results; libbtrfsx returns
 * them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/error.h"
#include "fsops/read-policy.h"

#define NO_EFFECT_WARNING "%s: no RAID1, RAID1C3, RAID1C4 or RAID10 block group: the read " \
	"policy changes nothing on this filesystem"

bool bx_rp_check_effect(const char *sysfs_root, const struct bx_mounted_fs *fs,
			struct bx_rp_mirrored *mirrored)
{
	if (bx_rp_mirrored(sysfs_root, fs, mirrored)) {
		bx_error_clear();
		mirrored->nr = 0;
		return false;
	}
	if (mirrored->nr == 0)
		bx_warn(NO_EFFECT_WARNING, fs->path);
	return true;
}

/* The policy recorded for @fsid into @recorded ("" if none). */
static int find_record(const char *config_dir, const char *fsid, char *recorded, size_t len)
{
	const struct bx_rp_record *rec;
	struct bx_rp_config config;
	int ret = bx_rp_config_load(config_dir, &config);

	if (ret)
		return ret;
	rec = bx_rp_config_find(&config, fsid);
	snprintf(recorded, len, "%s", rec ? rec->policy : "");
	bx_rp_config_free(&config);
	return 0;
}

int bx_rp_info_read(const char *sysfs_root, const char *config_dir,
		    const struct bx_mounted_fs *fs, struct bx_rp_info *info)
{
	int ret;

	memset(info, 0, sizeof(*info));
	ret = bx_rp_read(sysfs_root, fs->fsid_str, &info->state);
	if (!ret)
		ret = find_record(config_dir, fs->fsid_str, info->recorded, sizeof(info->recorded));
	if (!ret)
		info->mirrored_known = bx_rp_check_effect(sysfs_root, fs, &info->mirrored);
	return ret;
}

int bx_rp_record(const char *config_dir, const char *fsid, const char *policy)
{
	struct bx_rp_config config;
	int ret;

	ret = bx_rp_config_load(config_dir, &config);
	if (ret)
		return ret;
	ret = bx_rp_config_put(&config, fsid, policy);
	if (!ret)
		ret = bx_rp_config_save(config_dir, &config);
	bx_rp_config_free(&config);
	return ret;
}

/*
 * The FSID @arg names: itself when it is one (and no file of that name
 * exists), else the filesystem mounted where the path @arg leads.
 */
static int fsid_named(const char *arg, char fsid[BX_FSID_STR_LEN])
{
	struct bx_mounted_fs fs;
	uuid_t uu;
	int ret;

	if (strlen(arg) == 36 && !uuid_parse(arg, uu) && access(arg, F_OK)) {
		uuid_unparse_lower(uu, fsid);
		return 0;
	}
	ret = bx_mounted_open(arg, &fs);
	if (ret) {
		char why[512];

		snprintf(why, sizeof(why), "%s", bx_error_message(ret));
		return bx_error(ret, "'%s' is neither an FSID nor a path on a mounted btrfs (%s)",
				arg, why);
	}
	snprintf(fsid, BX_FSID_STR_LEN, "%s", fs.fsid_str);
	bx_mounted_close(&fs);
	return 0;
}

int bx_rp_forget(const char *config_dir, const char *arg, char fsid[BX_FSID_STR_LEN])
{
	struct bx_rp_config config;
	int ret = fsid_named(arg, fsid);

	if (!ret)
		ret = bx_rp_config_load(config_dir, &config);
	if (ret)
		return ret;
	if (!bx_rp_config_remove(&config, fsid))
		ret = bx_error(-ENOENT, "%s: no read policy is recorded for filesystem %s", arg, fsid);
	else
		ret = bx_rp_config_save(config_dir, &config);
	bx_rp_config_free(&config);
	return ret;
}

/* Without a new record, a different recorded policy comes back at the next mount: say so. */
static void note_record(const char *config_dir, const char *fsid, const char *wanted,
			char *recorded, size_t len)
{
	if (find_record(config_dir, fsid, recorded, len)) {
		bx_error_clear();
		return;
	}
	if (recorded[0] && strcmp(recorded, wanted))
		bx_warn("filesystem %s has '%s' recorded for every mount; it comes back at the next "
			"mount (use --persistent to record '%s')", fsid, recorded, wanted);
}

int bx_rp_switch(const char *sysfs_root, const char *config_dir, const struct bx_mounted_fs *fs,
		 const struct bx_rp_value *value, bool persist, struct bx_rp_state *before,
		 struct bx_rp_info *after, bool *changed)
{
	char wanted[64];
	int ret;

	memset(after, 0, sizeof(*after));
	if (before) {
		ret = bx_rp_read(sysfs_root, fs->fsid_str, before);
		if (ret)
			return ret;
	}
	ret = bx_rp_set(sysfs_root, fs, value, &after->state, changed);
	if (ret)
		return bx_error_wrap(ret, "%s", fs->path);
	after->mirrored_known = bx_rp_check_effect(sysfs_root, fs, &after->mirrored);
	if (!config_dir)
		return 0;
	bx_rp_format(value, wanted, sizeof(wanted));
	if (!persist) {
		note_record(config_dir, fs->fsid_str, wanted, after->recorded,
			    sizeof(after->recorded));
		return 0;
	}
	ret = bx_rp_record(config_dir, fs->fsid_str, wanted);
	if (!ret)
		snprintf(after->recorded, sizeof(after->recorded), "%s", wanted);
	return ret;
}

/* ---- apply ---- */

static void report(bx_rp_apply_fn fn, void *arg, const char *fsid, const char *path,
		   const char *policy, enum bx_rp_apply_status status, int error)
{
	struct bx_rp_applied applied = {
		.fsid = fsid,
		.path = path,
		.policy = policy,
		.status = status,
		.error = error,
		.message = error ? bx_error_message(error) : NULL,
	};

	fn(arg, &applied);
}

int bx_rp_apply_one(const char *sysfs_root, const char *path, const struct bx_rp_config *config,
		    const char *known_fsid, bx_rp_apply_fn fn, void *arg)
{
	struct bx_rp_mirrored mirrored;
	const struct bx_rp_record *rec;
	struct bx_rp_value value;
	struct bx_mounted_fs fs;
	bool changed = false;
	int ret;

	ret = bx_mounted_open(path, &fs);
	if (ret) {
		report(fn, arg, known_fsid, path, NULL, BX_RP_APPLY_FAILED, ret);
		return ret;
	}
	rec = bx_rp_config_find(config, fs.fsid_str);
	if (!rec) {
		report(fn, arg, fs.fsid_str, path, NULL, BX_RP_NO_RECORD, 0);
		bx_mounted_close(&fs);
		return 0;
	}
	ret = bx_rp_parse(rec->policy, &value);
	if (!ret)
		ret = bx_rp_set(sysfs_root, &fs, &value, NULL, &changed);
	if (ret) {
		ret = bx_error_wrap(ret, "%s", path);
		report(fn, arg, fs.fsid_str, path, rec->policy, BX_RP_APPLY_FAILED, ret);
	} else {
		bx_rp_check_effect(sysfs_root, &fs, &mirrored);
		report(fn, arg, fs.fsid_str, path, rec->policy,
		       changed ? BX_RP_APPLIED : BX_RP_UNCHANGED, 0);
	}
	bx_mounted_close(&fs);
	return ret;
}

static const char *fsid_of(const struct bx_rp_mounts *t, int mount_id)
{
	for (size_t i = 0; t && i < t->nr; i++)
		if (t->mounts[i].mount_id == mount_id)
			return t->mounts[i].fsid;
	return NULL;
}

int bx_rp_scan_mounts(const char *mountinfo, const struct bx_rp_mounts *prev,
		      struct bx_rp_mounts *t)
{
	struct bx_mount_entry *entries;
	size_t nr;
	int ret;

	t->nr = 0;
	t->mounts = NULL;
	ret = bx_list_btrfs_mounts(mountinfo, &entries, &nr);
	if (ret)
		return ret;
	t->mounts = calloc(nr ? nr : 1, sizeof(*t->mounts));
	if (!t->mounts) {
		free(entries);
		return bx_error(-ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nr; i++) {
		struct bx_rp_mount *m = &t->mounts[t->nr];
		const char *known = fsid_of(prev, entries[i].mount_id);
		struct bx_mounted_fs fs;

		m->mount_id = entries[i].mount_id;
		snprintf(m->mountpoint, sizeof(m->mountpoint), "%s", entries[i].mountpoint);
		if (known) {
			snprintf(m->fsid, sizeof(m->fsid), "%s", known);
		} else {
			/* Gone again, or not reachable from here: skip it. */
			if (bx_mounted_open(m->mountpoint, &fs)) {
				bx_error_clear();
				continue;
			}
			snprintf(m->fsid, sizeof(m->fsid), "%s", fs.fsid_str);
			bx_mounted_close(&fs);
		}
		t->nr++;
	}
	free(entries);
	return 0;
}

/* Whether mount @mount_id of @t is one of filesystem @fsid. */
static bool same_mount(const struct bx_rp_mounts *t, int mount_id, const char *fsid)
{
	const char *known = fsid_of(t, mount_id);

	return known && !strcmp(known, fsid);
}

int bx_rp_apply_new(const char *sysfs_root, const char *config_dir,
		    const struct bx_rp_mounts *prev, const struct bx_rp_mounts *now,
		    bool report_unmounted, size_t *nr_failed, bx_rp_apply_fn fn, void *arg)
{
	struct bx_rp_config config;
	int ret;

	ret = bx_rp_config_load(config_dir, &config);
	if (ret)
		return ret;
	for (size_t r = 0; r < config.nr; r++) {
		const struct bx_rp_record *rec = &config.records[r];
		const struct bx_rp_mount *first = NULL;
		bool old = false;

		if (rec->verbatim)
			continue;
		for (size_t i = 0; i < now->nr; i++) {
			if (strcmp(now->mounts[i].fsid, rec->fsid))
				continue;
			if (!first)
				first = &now->mounts[i];
			if (same_mount(prev, now->mounts[i].mount_id, rec->fsid))
				old = true;
		}
		if (!first) {
			if (report_unmounted)
				report(fn, arg, rec->fsid, NULL, rec->policy, BX_RP_NOT_MOUNTED, 0);
			continue;
		}
		if (old)
			continue;
		if (bx_rp_apply_one(sysfs_root, first->mountpoint, &config, rec->fsid, fn, arg)) {
			(*nr_failed)++;
			bx_error_clear();
		}
	}
	bx_rp_config_free(&config);
	return 0;
}
