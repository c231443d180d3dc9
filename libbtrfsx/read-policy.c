/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Read policies: the public face of fsops/read-policy-ops.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/read-policy.h"
#include "libbtrfsx/libbtrfsx-private.h"

#define MOUNTINFO "/proc/self/mountinfo"

static enum btrfsx_read_policy_iface public_iface(enum bx_rp_iface iface)
{
	switch (iface) {
	case BX_RP_IFACE_MAINLINE:
		return BTRFSX_READ_POLICY_IFACE_MAINLINE;
	case BX_RP_IFACE_EARLIER:
		return BTRFSX_READ_POLICY_IFACE_EARLIER;
	default:
		return BTRFSX_READ_POLICY_IFACE_NONE;
	}
}

static void public_policy(const struct bx_mounted_fs *fs, const struct bx_rp_info *info,
			  struct btrfsx_read_policy *out)
{
	const struct bx_rp_state *st = &info->state;

	memset(out, 0, sizeof(*out));
	snprintf(out->fsid, sizeof(out->fsid), "%s", fs->fsid_str);
	out->iface = public_iface(st->iface);
	bx_rp_format(&st->active, out->active, sizeof(out->active));
	for (size_t i = 0; i < st->nr_offered && i < BTRFSX_READ_POLICY_MAX_OFFERED; i++)
		snprintf(out->offered[i], sizeof(out->offered[i]), "%s",
			 st->offered[i].kernel_name);
	out->nr_offered = st->nr_offered < BTRFSX_READ_POLICY_MAX_OFFERED ?
			  st->nr_offered : BTRFSX_READ_POLICY_MAX_OFFERED;
	snprintf(out->raw, sizeof(out->raw), "%s", st->raw);
	snprintf(out->recorded, sizeof(out->recorded), "%s", info->recorded);
	out->mirrored_known = info->mirrored_known;
	for (size_t i = 0; i < info->mirrored.nr && i < BTRFSX_READ_POLICY_MAX_MIRRORED; i++)
		snprintf(out->mirrored[i], sizeof(out->mirrored[i]), "%s",
			 info->mirrored.names[i]);
	out->nr_mirrored = info->mirrored.nr < BTRFSX_READ_POLICY_MAX_MIRRORED ?
			   info->mirrored.nr : BTRFSX_READ_POLICY_MAX_MIRRORED;
}

PUBLIC enum btrfsx_error btrfsx_read_policy_get(const char *path, const char *sysfs_root,
						const char *config_dir,
						struct btrfsx_read_policy *policy)
{
	struct bx_mounted_fs fs;
	struct bx_rp_info info;
	int ret;

	bx_api_begin();
	if (!path)
		return bx_api_missing("a path");
	if (!policy)
		return bx_api_missing("policy");
	ret = bx_mounted_open(path, &fs);
	if (ret)
		return bx_api_result(ret);
	ret = bx_rp_info_read(bx_api_sysfs_root(sysfs_root), bx_api_config_dir(config_dir), &fs,
			      &info);
	if (!ret)
		public_policy(&fs, &info, policy);
	bx_mounted_close(&fs);
	return bx_api_result(ret);
}

PUBLIC enum btrfsx_error btrfsx_read_policy_set(const char *path, const char *policy,
						unsigned int flags, const char *sysfs_root,
						const char *config_dir,
						struct btrfsx_read_policy *after, bool *changed)
{
	struct bx_rp_value value;
	struct bx_mounted_fs fs;
	struct bx_rp_info info;
	bool written = false;
	int ret;

	bx_api_begin();
	if (!path)
		return bx_api_missing("a path");
	if (!policy)
		return bx_api_missing("a policy");
	if (bx_api_check_flags(flags, BTRFSX_READ_POLICY_PERSIST))
		return BTRFSX_ERROR_INVALID_ARGUMENT;
	ret = bx_rp_parse(policy, &value);
	if (ret)
		return bx_api_result(ret);
	ret = bx_mounted_open(path, &fs);
	if (ret)
		return bx_api_result(ret);
	ret = bx_rp_switch(bx_api_sysfs_root(sysfs_root), bx_api_config_dir(config_dir), &fs,
			   &value, flags & BTRFSX_READ_POLICY_PERSIST, NULL, &info, &written);
	if (!ret && after)
		public_policy(&fs, &info, after);
	if (changed)
		*changed = written;
	bx_mounted_close(&fs);
	return bx_api_result(ret);
}

/* ---- apply ---- */

struct apply_results {
	struct btrfsx_apply_result *items;
	size_t nr, cap;
	bool no_memory;
	int first_error;
	enum bx_error_kind first_kind;
	char first_message[512];
};

static enum btrfsx_apply_status public_status(enum bx_rp_apply_status status)
{
	switch (status) {
	case BX_RP_APPLIED:
		return BTRFSX_APPLY_APPLIED;
	case BX_RP_UNCHANGED:
		return BTRFSX_APPLY_UNCHANGED;
	case BX_RP_NOT_MOUNTED:
		return BTRFSX_APPLY_NOT_MOUNTED;
	case BX_RP_NO_RECORD:
		return BTRFSX_APPLY_NO_RECORD;
	default:
		return BTRFSX_APPLY_FAILED;
	}
}

static void collect(void *arg, const struct bx_rp_applied *a)
{
	struct apply_results *r = arg;
	struct btrfsx_apply_result *item;

	if (r->nr == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 8;
		struct btrfsx_apply_result *grown = realloc(r->items, cap * sizeof(*grown));

		if (!grown) {
			r->no_memory = true;
			return;
		}
		r->items = grown;
		r->cap = cap;
	}
	item = &r->items[r->nr++];
	memset(item, 0, sizeof(*item));
	snprintf(item->fsid, sizeof(item->fsid), "%s", a->fsid ? a->fsid : "");
	snprintf(item->path, sizeof(item->path), "%s", a->path ? a->path : "");
	snprintf(item->policy, sizeof(item->policy), "%s", a->policy ? a->policy : "");
	item->status = public_status(a->status);
	snprintf(item->error, sizeof(item->error), "%s", a->message ? a->message : "");
	if (a->error && !r->first_error) {
		r->first_error = a->error;
		r->first_kind = bx_error_last_kind();
		snprintf(r->first_message, sizeof(r->first_message), "%s", a->message);
	}
}

static int apply_all(const char *sysfs_root, const char *config_dir, struct apply_results *r)
{
	struct bx_rp_mounts now;
	size_t nr_failed = 0;
	int ret;

	ret = bx_rp_scan_mounts(MOUNTINFO, NULL, &now);
	if (ret)
		return ret;
	ret = bx_rp_apply_new(sysfs_root, config_dir, NULL, &now, true, &nr_failed, collect, r);
	free(now.mounts);
	return ret;
}

static int apply_path(const char *path, const char *sysfs_root, const char *config_dir,
		      struct apply_results *r)
{
	struct bx_rp_config config;
	int ret;

	ret = bx_rp_config_load(config_dir, &config);
	if (ret)
		return ret;
	bx_rp_apply_one(sysfs_root, path, &config, NULL, collect, r);
	bx_rp_config_free(&config);
	return 0;
}

PUBLIC enum btrfsx_error btrfsx_read_policy_apply(const char *path, const char *sysfs_root,
						  const char *config_dir,
						  struct btrfsx_apply_result **results,
						  size_t *nr_results)
{
	struct apply_results r = { 0 };
	int ret;

	bx_api_begin();
	if (!results || !nr_results)
		return bx_api_missing("results and nr_results");
	sysfs_root = bx_api_sysfs_root(sysfs_root);
	config_dir = bx_api_config_dir(config_dir);
	if (path)
		ret = apply_path(path, sysfs_root, config_dir, &r);
	else
		ret = apply_all(sysfs_root, config_dir, &r);
	if (!ret && r.no_memory)
		ret = bx_error(-ENOMEM, "out of memory");
	if (ret) {
		free(r.items);
		return bx_api_result(ret);
	}
	*results = r.items;
	*nr_results = r.nr;
	if (r.first_error)
		return bx_api_result(bx_error_as(r.first_error, r.first_kind, "%s",
						 r.first_message));
	return BTRFSX_OK;
}
