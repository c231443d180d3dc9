/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx read-policy: show, switch, persist and apply the RAID1-family read
 * policy; the tunables of the earlier read_policies/ interface; and the
 * read_policy filesystem property. The work is in fsops/read-policy.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds/commands.h"
#include "cmds/property.h"
#include "cmds/read-policy-recommend.h"
#include "common/error.h"
#include "fsops/mounted-fs.h"
#include "fsops/read-policy.h"

#define MOUNTINFO "/proc/self/mountinfo"
#define CMDLINE "/proc/cmdline"
#define MODPROBE_DIR "/etc/modprobe.d"

static void print_joined_list(struct bx_out *out, const char *key, const char *const *items,
			      size_t nr)
{
	char text[512] = "";

	for (size_t i = 0; i < nr; i++) {
		size_t used = strlen(text);

		snprintf(text + used, sizeof(text) - used, "%s%s", i ? " " : "", items[i]);
	}
	bx_out_str(out, key, nr ? text : "none", BX_F_TEXT_ONLY);
	bx_out_list_begin(out, key);
	for (size_t i = 0; i < nr; i++)
		bx_out_str(out, NULL, items[i], BX_F_JSON_ONLY);
	bx_out_list_end(out);
}

static void print_offered(struct bx_out *out, const struct bx_rp_state *st)
{
	const char *items[BX_RP_MAX_OFFERED];

	for (size_t i = 0; i < st->nr_offered; i++)
		items[i] = st->offered[i].value.name;
	print_joined_list(out, "available", items, st->nr_offered);
}

static void print_tunables(struct bx_ctx *ctx, const char *fsid)
{
	bx_out_obj_begin(ctx->out, "tunables", BX_OBJ_LINES, "tunables:");
	for (const struct bx_rp_tunable *t = bx_rp_tunables; t->name; t++) {
		uint64_t value;

		if (bx_rp_tunable_get(ctx->sysfs_root, fsid, t, &value)) {
			bx_error_clear();
			bx_out_str(ctx->out, t->name, NULL, 0);
			continue;
		}
		bx_out_u64(ctx->out, t->name, value, 0);
	}
	bx_out_obj_end(ctx->out);
}

/* ---- get ---- */

static const char *const get_usage[] = {
	"btrfsx read-policy get <path>",
	"Show the read policy of a mounted filesystem and what the kernel offers.",
	"",
	"<path> is the mount point or any path on the filesystem. Shows the kernel",
	"interface found (read_policy, read_policies or none), the active policy,",
	"the policies this kernel offers, the RAID1-family block groups the policy",
	"affects, the policy recorded for every mount and the module default.",
	NULL
};

static int cmd_get(struct bx_ctx *ctx, int argc, char **argv)
{
	struct bx_mounted_fs fs;
	struct bx_rp_info info;
	char active[64], module_value[128], module_source[4096];
	const char *items[BX_RP_MAX_MIRRORED];
	int ret, opt, has_module;

	while ((opt = bx_getopt(ctx, argc, argv, "h", NULL)) != -1)
		return bx_opt_result(opt);
	ret = bx_check_argc(argc - optind, 1, 1);
	if (ret)
		return ret;
	ret = bx_mounted_open(argv[optind], &fs);
	if (ret)
		return ret;
	ret = bx_rp_info_read(ctx->sysfs_root, ctx->config_dir, &fs, &info);
	if (ret)
		goto out;
	has_module = bx_rp_module_default(CMDLINE, MODPROBE_DIR, module_value,
					  sizeof(module_value), module_source,
					  sizeof(module_source));
	if (has_module > 0)
		bx_rp_module_default_check(module_value, module_source, &fs);
	bx_rp_format(&info.state.active, active, sizeof(active));

	bx_out_str(ctx->out, "fsid", fs.fsid_str, 0);
	bx_out_str(ctx->out, "mountpoint=path", fs.path, 0);
	bx_out_str(ctx->out, "interface", bx_rp_iface_name(info.state.iface), 0);
	bx_out_str(ctx->out, "policy", active, 0);
	print_offered(ctx->out, &info.state);
	bx_out_str(ctx->out, "kernel_shows",
		   info.state.iface == BX_RP_IFACE_NONE ? NULL : info.state.raw, 0);
	if (info.mirrored_known) {
		for (size_t i = 0; i < info.mirrored.nr; i++)
			items[i] = info.mirrored.names[i];
		print_joined_list(ctx->out, "mirrored", items, info.mirrored.nr);
		bx_out_bool(ctx->out, "affects_reads", info.mirrored.nr > 0, 0);
	}
	bx_out_str(ctx->out, "persistent", info.recorded[0] ? info.recorded : NULL, 0);
	bx_out_str(ctx->out, "module_default", has_module > 0 ? module_value : NULL, 0);
	if (has_module > 0)
		bx_out_str(ctx->out, "module_default_source", module_source, BX_F_JSON_ONLY);
	if (info.state.has_tunables)
		print_tunables(ctx, fs.fsid_str);
out:
	bx_mounted_close(&fs);
	return ret;
}

/* ---- set ---- */

static const char *const set_usage[] = {
	"btrfsx read-policy set [--persistent] <path> <policy>",
	"Switch the read policy of a mounted filesystem, and keep it across mounts.",
	"",
	"<policy> is one of:",
	"  pid                  the mirror by process id (the kernel's default)",
	"  round-robin          spread reads over the mirrors in turn",
	"  round-robin:<size>   ... switching after <size> bytes (K, M, G suffixes;",
	"                       a multiple of the sector size)",
	"  devid                read from the device the kernel picks",
	"  devid:<devid>        read from device <devid> of this filesystem",
	"The request is checked against what the running kernel offers before it is",
	"written, and read back. round-robin and devid need Linux 6.14 or later",
	"with CONFIG_BTRFS_EXPERIMENTAL; older kernels offer only pid.",
	"",
	"-p|--persistent   also record it (by FSID) in <config_dir>/read-policy.conf;",
	"                  btrfsx-read-policy.service applies it at every mount",
	NULL
};

static int cmd_set(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "persistent", no_argument, NULL, 'p' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_rp_state before;
	struct bx_rp_info after;
	struct bx_rp_value value;
	struct bx_mounted_fs fs;
	char previous[64], now[64];
	bool persistent = false, changed;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "ph", longopts)) != -1) {
		if (opt == 'p')
			persistent = true;
		else
			return bx_opt_result(opt);
	}
	ret = bx_check_argc(argc - optind, 2, 2);
	if (ret)
		return ret;
	ret = bx_rp_parse(argv[optind + 1], &value);
	if (ret)
		return bx_bad_value(ret);
	ret = bx_mounted_open(argv[optind], &fs);
	if (ret)
		return ret;
	ret = bx_rp_switch(ctx->sysfs_root, ctx->config_dir, &fs, &value, persistent, &before, &after,
			   &changed);
	if (ret)
		goto out;
	bx_rp_format(&before.active, previous, sizeof(previous));
	bx_rp_format(&after.state.active, now, sizeof(now));
	bx_out_str(ctx->out, "fsid", fs.fsid_str, 0);
	bx_out_str(ctx->out, "mountpoint=path", fs.path, 0);
	bx_out_str(ctx->out, "previous", previous, 0);
	bx_out_str(ctx->out, "policy", now, 0);
	bx_out_bool(ctx->out, "changed", changed, 0);
	bx_out_str(ctx->out, "persistent", persistent ? after.recorded : NULL, 0);
out:
	bx_mounted_close(&fs);
	return ret;
}

/* ---- apply ---- */

static const char *const apply_usage[] = {
	"btrfsx read-policy apply [--watch] [<path>]",
	"Apply the recorded read policies to mounted filesystems.",
	"",
	"With <path>, applies the policy recorded for that filesystem. Without,",
	"applies every recorded policy to the filesystems mounted now, by FSID.",
	"--watch then keeps running and applies the recorded policy each time a",
	"filesystem is mounted; btrfsx-read-policy.service runs it so.",
	"",
	"-w|--watch   keep running, applying at every mount (text output only)",
	NULL
};

static const char *const status_names[] = {
	[BX_RP_APPLIED] = "applied",
	[BX_RP_UNCHANGED] = "unchanged",
	[BX_RP_APPLY_FAILED] = "failed",
	[BX_RP_NOT_MOUNTED] = "not-mounted",
	[BX_RP_NO_RECORD] = "no-record",
};

static void print_apply(void *arg, const struct bx_rp_applied *a)
{
	struct bx_ctx *ctx = arg;

	bx_out_obj_begin(ctx->out, NULL, BX_OBJ_INLINE, NULL);
	bx_out_str(ctx->out, "fsid", a->fsid, 0);
	bx_out_str(ctx->out, "mountpoint=path", a->path, 0);
	bx_out_str(ctx->out, "policy", a->policy, 0);
	bx_out_str(ctx->out, "status", status_names[a->status], 0);
	if (a->message)
		bx_out_str(ctx->out, "error", a->message, 0);
	bx_out_obj_end(ctx->out);
}

static void flush_warnings(void)
{
	for (size_t i = 0; i < bx_warnings_count(); i++)
		fprintf(stderr, "btrfsx: warning: %s\n", bx_warning(i));
	bx_warnings_clear();
}

/* Runs until killed: applies at start, then at every change of the mount table. */
static int watch(struct bx_ctx *ctx)
{
	struct bx_rp_mounts prev = { 0 }, now;
	size_t nr_failed = 0;
	int fd, ret;

	/* Opened before the first scan so that no mount in between is missed. */
	fd = open(MOUNTINFO, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bx_error(-errno, "%s: %m", MOUNTINFO);
	ret = bx_rp_scan_mounts(MOUNTINFO, NULL, &prev);
	if (!ret)
		ret = bx_rp_apply_new(ctx->sysfs_root, ctx->config_dir, NULL, &prev, false,
				      &nr_failed, print_apply, ctx);
	while (!ret) {
		struct pollfd pfd = { .fd = fd, .events = POLLPRI };

		fflush(stdout);
		flush_warnings();
		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			ret = bx_error(-errno, "poll %s: %m", MOUNTINFO);
			break;
		}
		ret = bx_rp_scan_mounts(MOUNTINFO, &prev, &now);
		if (ret)
			break;
		ret = bx_rp_apply_new(ctx->sysfs_root, ctx->config_dir, &prev, &now, false,
				      &nr_failed, print_apply, ctx);
		free(prev.mounts);
		prev = now;
	}
	free(prev.mounts);
	close(fd);
	return ret;
}

static int cmd_apply(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "watch", no_argument, NULL, 'w' },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_rp_mounts now;
	bool do_watch = false;
	size_t nr_failed = 0;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "wh", longopts)) != -1) {
		if (opt == 'w')
			do_watch = true;
		else
			return bx_opt_result(opt);
	}
	ret = bx_check_argc(argc - optind, 0, do_watch ? 0 : 1);
	if (ret)
		return ret;
	if (do_watch && ctx->format == BX_FORMAT_JSON)
		return bx_usage_error("--watch prints text only");
	bx_out_list_begin(ctx->out, "filesystems");
	if (do_watch) {
		ret = watch(ctx);
	} else if (argc - optind == 1) {
		struct bx_rp_config config;

		ret = bx_rp_config_load(ctx->config_dir, &config);
		if (!ret) {
			ret = bx_rp_apply_one(ctx->sysfs_root, argv[optind], &config, NULL,
					      print_apply, ctx);
			bx_rp_config_free(&config);
		}
	} else {
		ret = bx_rp_scan_mounts(MOUNTINFO, NULL, &now);
		if (!ret) {
			ret = bx_rp_apply_new(ctx->sysfs_root, ctx->config_dir, NULL, &now, true,
					      &nr_failed, print_apply, ctx);
			free(now.mounts);
		}
	}
	/* Closed before the dispatcher adds warnings and the error beside it. */
	bx_out_list_end(ctx->out);
	if (!ret && nr_failed)
		ret = bx_error(-EIO, "%zu recorded read polic%s could not be applied", nr_failed,
			       nr_failed == 1 ? "y" : "ies");
	return ret;
}

/* ---- list, forget ---- */

static const char *const list_usage[] = {
	"btrfsx read-policy list",
	"List the read policies recorded for every mount.",
	"",
	"Shows each FSID in <config_dir>/read-policy.conf, its policy and where it",
	"is mounted now.",
	NULL
};

static int cmd_list(struct bx_ctx *ctx, int argc, char **argv)
{
	struct bx_rp_config config;
	struct bx_rp_mounts now;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "h", NULL)) != -1)
		return bx_opt_result(opt);
	ret = bx_check_argc(argc - optind, 0, 0);
	if (ret)
		return ret;
	ret = bx_rp_config_load(ctx->config_dir, &config);
	if (ret)
		return ret;
	ret = bx_rp_scan_mounts(MOUNTINFO, NULL, &now);
	if (ret) {
		bx_rp_config_free(&config);
		return ret;
	}
	bx_out_list_begin(ctx->out, "records");
	for (size_t r = 0; r < config.nr; r++) {
		const struct bx_rp_record *rec = &config.records[r];
		const char *mnt = NULL;

		if (rec->verbatim)
			continue;
		for (size_t i = 0; i < now.nr && !mnt; i++)
			if (!strcmp(now.mounts[i].fsid, rec->fsid))
				mnt = now.mounts[i].mountpoint;
		bx_out_obj_begin(ctx->out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_str(ctx->out, "fsid", rec->fsid, 0);
		bx_out_str(ctx->out, "policy", rec->policy, 0);
		bx_out_bool(ctx->out, "mounted", mnt != NULL, BX_F_JSON_ONLY);
		bx_out_str(ctx->out, "mountpoint=mounted", mnt, 0);
		bx_out_obj_end(ctx->out);
	}
	bx_out_list_end(ctx->out);
	free(now.mounts);
	bx_rp_config_free(&config);
	return 0;
}

static const char *const forget_usage[] = {
	"btrfsx read-policy forget <path>|<fsid>",
	"Remove the read policy recorded for a filesystem.",
	"",
	"The policy active now stays until the next mount.",
	NULL
};

static int cmd_forget(struct bx_ctx *ctx, int argc, char **argv)
{
	char fsid[BX_FSID_STR_LEN];
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "h", NULL)) != -1)
		return bx_opt_result(opt);
	ret = bx_check_argc(argc - optind, 1, 1);
	if (!ret)
		ret = bx_rp_forget(ctx->config_dir, argv[optind], fsid);
	if (ret)
		return ret;
	bx_out_str(ctx->out, "fsid", fsid, 0);
	bx_out_bool(ctx->out, "forgotten", true, 0);
	return 0;
}

/* ---- tunables ---- */

static const char *const tunables_usage[] = {
	"btrfsx read-policy tunables <path> [<name> [<value>]]",
	"Show or set the round-robin tunables of the earlier read_policies/ interface.",
	"",
	"Without <name>, shows all of them; with <value>, sets <name>: the value is",
	"checked, written and read back.",
	"  roundrobin_nonlocal_inc_mixed_only (0 or 1, default 1): add the penalty",
	"    only when rotational and non-rotational devices are mixed;",
	"  roundrobin_nonrot_nonlocal_inc (default 0), roundrobin_rot_nonlocal_inc",
	"    (default 1): the penalty added to a non-rotational or rotational",
	"    device's load when a read is not next to its previous one (0-4294967295).",
	"Mainline kernels have none of these.",
	NULL
};

static int show_tunables(struct bx_ctx *ctx, const struct bx_mounted_fs *fs,
			 const struct bx_rp_tunable *only)
{
	int ret = 0;

	bx_out_str(ctx->out, "fsid", fs->fsid_str, BX_F_JSON_ONLY);
	bx_out_list_begin(ctx->out, "tunables");
	for (const struct bx_rp_tunable *t = bx_rp_tunables; t->name; t++) {
		uint64_t value;

		if (only && only != t)
			continue;
		ret = bx_rp_tunable_get(ctx->sysfs_root, fs->fsid_str, t, &value);
		if (ret)
			break;
		bx_out_obj_begin(ctx->out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_str(ctx->out, "name", t->name, BX_F_NO_NAME);
		bx_out_u64(ctx->out, "value", value, BX_F_NO_NAME);
		bx_out_u64(ctx->out, "default", t->def, 0);
		bx_out_obj_end(ctx->out);
	}
	bx_out_list_end(ctx->out);
	return ret;
}

static int set_tunable(struct bx_ctx *ctx, const struct bx_mounted_fs *fs,
		       const struct bx_rp_tunable *t, uint64_t value)
{
	uint64_t before;
	int ret;

	ret = bx_rp_tunable_get(ctx->sysfs_root, fs->fsid_str, t, &before);
	if (!ret)
		ret = bx_rp_tunable_set(ctx->sysfs_root, fs->fsid_str, t, value);
	if (ret)
		return ret;
	bx_out_str(ctx->out, "fsid", fs->fsid_str, BX_F_JSON_ONLY);
	bx_out_str(ctx->out, "name", t->name, 0);
	bx_out_u64(ctx->out, "previous", before, 0);
	bx_out_u64(ctx->out, "value", value, 0);
	return 0;
}

static int cmd_tunables(struct bx_ctx *ctx, int argc, char **argv)
{
	const struct bx_rp_tunable *t = NULL;
	struct bx_mounted_fs fs;
	uint64_t value = 0;
	int opt, ret, nargs;

	while ((opt = bx_getopt(ctx, argc, argv, "h", NULL)) != -1)
		return bx_opt_result(opt);
	nargs = argc - optind;
	ret = bx_check_argc(nargs, 1, 3);
	if (ret)
		return ret;
	if (nargs >= 2 && !(t = bx_rp_tunable_find(argv[optind + 1])))
		return -EINVAL;
	if (nargs == 3) {
		ret = bx_rp_tunable_parse(t, argv[optind + 2], &value);
		if (ret)
			return ret;
	}
	ret = bx_mounted_open(argv[optind], &fs);
	if (ret)
		return ret;
	if (nargs == 3)
		ret = set_tunable(ctx, &fs, t, value);
	else
		ret = show_tunables(ctx, &fs, t);
	bx_mounted_close(&fs);
	return ret;
}

/* ---- the read_policy property ---- */

int bx_read_policy_prop_get(struct bx_ctx *ctx, const char *object, char *value, size_t len)
{
	struct bx_mounted_fs fs;
	struct bx_rp_state st;
	int ret;

	ret = bx_mounted_open(object, &fs);
	if (ret)
		return ret;
	ret = bx_rp_read(ctx->sysfs_root, fs.fsid_str, &st);
	if (!ret)
		bx_rp_format(&st.active, value, len);
	bx_mounted_close(&fs);
	return ret;
}

int bx_read_policy_prop_set(struct bx_ctx *ctx, const char *object, const char *str,
			    char *now, size_t len)
{
	struct bx_rp_value value;
	struct bx_mounted_fs fs;
	struct bx_rp_info after;
	int ret;

	ret = bx_rp_parse(str, &value);
	if (ret)
		return bx_bad_value(ret);
	ret = bx_mounted_open(object, &fs);
	if (ret)
		return ret;
	/* No config directory: a property set records nothing and checks no record. */
	ret = bx_rp_switch(ctx->sysfs_root, NULL, &fs, &value, false, NULL, &after, NULL);
	if (!ret)
		bx_rp_format(&after.state.active, now, len);
	bx_mounted_close(&fs);
	return ret;
}

/* ---- the group ---- */

static const char *const read_policy_usage[] = {
	"btrfsx read-policy <command> [<args>]",
	"Show, switch and persist the RAID1-family read policy.",
	NULL
};

static const struct bx_cmd read_policy_cmds[] = {
	{ "get", cmd_get, get_usage, NULL, BX_CMD_JSON },
	{ "set", cmd_set, set_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "apply", cmd_apply, apply_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "list", cmd_list, list_usage, NULL, BX_CMD_JSON },
	{ "forget", cmd_forget, forget_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "tunables", cmd_tunables, tunables_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "recommend", bx_cmd_read_policy_recommend, bx_read_policy_recommend_usage, NULL,
	  BX_CMD_JSON | BX_CMD_WRITES },
	{ NULL },
};

const struct bx_cmd_group bx_read_policy_group = { read_policy_usage, read_policy_cmds };
