/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The dispatcher: global options, command lookup by unique prefix, errors, exit codes. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/commands.h"
#include "cmds/suggest.h"
#include "common/error.h"

static const char *const btrfsx_usage[] = {
	"btrfsx [--format text|json] <group> <command> [<args>]",
	"Manage btrfs allocation hints, read policies, usage, offline scrub and monitoring.",
	"",
	"Global options:",
	"--format text|json   output format; JSON is the stable interface for scripts",
	"                     (also accepted after the group or the command)",
	"--version            print the version and exit",
	"-h|--help            print this help and exit",
	"",
	"Commands accept unique prefixes (btrfsx insp dump-s).",
	"'btrfsx <group> --help' lists a group's commands.",
	NULL
};

static const struct bx_cmd top_cmds[] = {
	{ "filesystem", NULL, NULL, &bx_filesystem_group, 0 },
	{ "inspect", NULL, NULL, &bx_inspect_group, 0 },
	{ "read-policy", NULL, NULL, &bx_read_policy_group, 0 },
	{ "property", NULL, NULL, &bx_property_group, 0 },
	{ "device", NULL, NULL, &bx_device_group, 0 },
	{ "scrub", NULL, NULL, &bx_scrub_group, 0 },
	{ "monitor", NULL, NULL, &bx_monitor_group, 0 },
	{ "balance", NULL, NULL, &bx_balance_group, 0 },
	{ "maintain", NULL, NULL, &bx_maintain_group, 0 },
	{ "mkfs", cmd_mkfs, mkfs_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ NULL },
};

static const struct bx_cmd_group top_group = { btrfsx_usage, top_cmds };

static void print_group_help(const struct bx_cmd_group *group, const char *path)
{
	bx_print_usage(group->usage, true);
	printf("\nCommands:\n");
	for (const struct bx_cmd *cmd = group->cmds; cmd->name; cmd++) {
		const char *const *usage = cmd->group ? cmd->group->usage : cmd->usage;

		if (cmd->flags & BX_CMD_HIDDEN)
			continue;
		printf("    %-16s %s\n", cmd->name, usage && usage[1] ? usage[1] : "");
	}
	printf("\nRun 'btrfsx %s%s<command> --help' for more.\n", path, *path ? " " : "");
}

/* "; did you mean 'filesystem'?" for a mistyped command of @group, into @buf; "" if none. */
static const char *did_you_mean(const struct bx_cmd_group *group, const char *name, char *buf,
				size_t len)
{
	const char *words[64];
	size_t nr = 0;

	for (const struct bx_cmd *cmd = group->cmds; cmd->name && nr < 64; cmd++)
		if (!(cmd->flags & BX_CMD_HIDDEN))
			words[nr++] = cmd->name;
	return bx_did_you_mean(name, words, nr, "", buf, len);
}

/* Exact name, else a unique prefix. NULL with a usage error otherwise. */
static const struct bx_cmd *find_cmd(const struct bx_cmd_group *group, const char *name,
				     const char *path)
{
	const struct bx_cmd *match = NULL;
	int nr_matches = 0;
	char candidates[256] = "";

	for (const struct bx_cmd *cmd = group->cmds; cmd->name; cmd++) {
		if (!strcmp(cmd->name, name))
			return cmd;
		if (!strncmp(cmd->name, name, strlen(name))) {
			match = cmd;
			nr_matches++;
			strncat(candidates, " ", sizeof(candidates) - strlen(candidates) - 1);
			strncat(candidates, cmd->name, sizeof(candidates) - strlen(candidates) - 1);
		}
	}
	if (nr_matches == 1)
		return match;
	if (nr_matches > 1)
		bx_usage_error("'%s' is ambiguous:%s", name, candidates);
	else
		bx_usage_error("unknown command '%s%s%s'%s", path, *path ? " " : "", name,
			       did_you_mean(group, name, candidates, sizeof(candidates)));
	return NULL;
}

/*
 * The JSON document of a failure before a command could start (usage
 * errors), and a monitoring plugin's status line.
 */
static void open_output(struct bx_ctx *ctx)
{
	if (!ctx->out && (ctx->format == BX_FORMAT_JSON || ctx->plugin))
		ctx->out = bx_out_new(ctx->format, stdout);
}

/* Whether a failure is the command's (or a usage error), not a result. */
static bool failed(int ret)
{
	return ret < 0 || ret == BX_EXIT_USAGE;
}

/*
 * A monitoring plugin that failed says UNKNOWN on its one status line (the
 * "check" object in JSON), before the error object.
 */
static void plugin_status_line(struct bx_ctx *ctx, int ret)
{
	char line[1200];

	snprintf(line, sizeof(line), "BTRFSX UNKNOWN - %s",
		 bx_error_message(ret < 0 ? ret : -EINVAL));
	for (char *c = line; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';	/* one line, whatever a path or a value holds */
	bx_out_obj_begin(ctx->out, "check", BX_OBJ_INLINE, NULL);
	bx_out_str(ctx->out, "line", line, BX_F_NO_NAME);
	bx_out_str(ctx->out, "status", "UNKNOWN", BX_F_JSON_ONLY);
	bx_out_obj_end(ctx->out);
}

/*
 * The one place that ends a command: warnings, the error (stderr, and the
 * "error" object in JSON, usage errors included), the exit code. A
 * monitoring plugin (BX_CMD_PLUGIN with --check) says its failures on its
 * status line, exits 3, and keeps standard error quiet: its warnings
 * follow its output on standard output.
 */
static int report(struct bx_ctx *ctx, int ret)
{
	size_t nr_warnings = bx_warnings_count();
	int exit_code = ret == BX_DONE ? BX_EXIT_OK : ret < 0 ? BX_EXIT_FAILURE :
			ret >= BX_EXIT_WITH(0) ? ret - BX_EXIT_WITH(0) : ret;
	bool plugin_text = ctx->plugin && ctx->format == BX_FORMAT_TEXT;

	if (ctx->plugin && failed(ret))
		exit_code = BX_PLUGIN_UNKNOWN;
	open_output(ctx);
	if (ctx->plugin && failed(ret) && ctx->out)
		plugin_status_line(ctx, ret);
	if (ctx->out && nr_warnings) {
		bx_out_list_begin(ctx->out, "warnings");
		for (size_t i = 0; i < nr_warnings; i++)
			bx_out_str(ctx->out, NULL, bx_warning(i), BX_F_JSON_ONLY);
		bx_out_list_end(ctx->out);
	}
	for (size_t i = 0; i < nr_warnings && !ctx->plugin; i++)
		fprintf(stderr, "btrfsx: warning: %s\n", bx_warning(i));
	if (failed(ret) && ctx->out) {
		int code = ret < 0 ? -ret : EINVAL;

		bx_out_obj_begin(ctx->out, "error", BX_OBJ_LINES, NULL);
		bx_out_s64(ctx->out, "code", code, BX_F_JSON_ONLY);
		bx_out_str(ctx->out, "message", bx_error_message(-code), BX_F_JSON_ONLY);
		bx_out_s64(ctx->out, "exit_code", exit_code, BX_F_JSON_ONLY);
		bx_out_obj_end(ctx->out);
	}
	if (bx_out_finish(ctx->out)) {
		fprintf(stderr, "btrfsx: internal error: output nested too deep, part of it left out\n");
		if (exit_code == BX_EXIT_OK)
			exit_code = BX_EXIT_FAILURE;
	}
	ctx->out = NULL;
	/* A plugin's warnings follow its status line and report, as long output. */
	for (size_t i = 0; i < nr_warnings && plugin_text; i++)
		printf("warning: %s\n", bx_warning(i));
	bx_warnings_clear();
	if (ctx->plugin)
		return exit_code;
	if (failed(ret))
		fprintf(stderr, "btrfsx: %s\n", bx_error_message(ret < 0 ? ret : -EINVAL));
	if (ret == BX_EXIT_USAGE && ctx->cmd_path)
		fprintf(stderr, "Try 'btrfsx %s --help'.\n", ctx->cmd_path);
	return exit_code;
}

static int parse_format(struct bx_ctx *ctx, const char *value)
{
	if (!strcmp(value, "json"))
		ctx->format = BX_FORMAT_JSON;
	else if (!strcmp(value, "text"))
		ctx->format = BX_FORMAT_TEXT;
	else
		return bx_usage_error("unknown format '%s' (text or json)", value);
	return 0;
}

/*
 * Takes "--format X" / "--format=X" out of the arguments after the global
 * options (up to "--"), so the global option works after the group and the
 * command too: every command gets it without declaring it.
 */
static int take_format_options(struct bx_ctx *ctx, int *argc, char **argv)
{
	int kept = 0, i;

	for (i = 0; i < *argc && strcmp(argv[i], "--"); i++) {
		const char *value = NULL;
		int ret;

		if (!strncmp(argv[i], "--format=", 9)) {
			value = argv[i] + 9;
		} else if (!strcmp(argv[i], "--format")) {
			if (i + 1 == *argc)
				return bx_usage_error("option '--format' needs a value");
			value = argv[++i];
		} else {
			argv[kept++] = argv[i];
			continue;
		}
		ret = parse_format(ctx, value);
		if (ret)
			return ret;
	}
	while (i < *argc)
		argv[kept++] = argv[i++];
	*argc = kept;
	argv[kept] = NULL;
	return 0;
}

/* The usage error take_format_options() found, said now that the command is known. */
static int report_pending(struct bx_ctx *ctx)
{
	return report(ctx, bx_usage_error("%s", ctx->pending));
}

/* --check (or a prefix getopt would take for it, --ch...) before "--". */
static bool asks_check(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		size_t len = strlen(argv[i]);

		if (len >= 4 && !strncmp(argv[i], "--check", len))
			return true;
	}
	return false;
}

static int run_cmd(struct bx_ctx *ctx, const struct bx_cmd *cmd, char *path, int argc,
		   char **argv)
{
	ctx->cmd_path = path;
	ctx->plugin = (cmd->flags & BX_CMD_PLUGIN) && asks_check(argc, argv);
	if (ctx->pending[0])
		return report_pending(ctx);
	if (!(cmd->flags & BX_CMD_JSON) && ctx->format == BX_FORMAT_JSON)
		return report(ctx, bx_usage_error("%s does not support --format json", path));
	ctx->usage = cmd->usage;
	ctx->writes.refused = !(cmd->flags & BX_CMD_WRITES);
	ctx->out = bx_out_new(ctx->format, stdout);
	if (!ctx->out)
		return report(ctx, bx_error(-12, "out of memory"));
	optind = 0;  /* 0 makes glibc reset getopt fully, permutation included */
	return report(ctx, cmd->fn(ctx, argc, argv));
}

/* Walks groups by name until a command, then runs it with the remaining arguments. */
static int dispatch(struct bx_ctx *ctx, int argc, char **argv)
{
	const struct bx_cmd_group *group = &top_group;
	char path[256] = "";

	for (int i = 0;; i++) {
		const struct bx_cmd *cmd;

		if (i == argc) {
			ctx->cmd_path = *path ? path : NULL;
			if (ctx->pending[0])
				return report_pending(ctx);
			if (ctx->format == BX_FORMAT_JSON)
				return report(ctx, bx_usage_error("no command given"));
			print_group_help(group, path);
			return BX_EXIT_USAGE;
		}
		if (ctx->pending[0] && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
				     !strcmp(argv[i], "help"))) {
			ctx->cmd_path = *path ? path : NULL;
			return report_pending(ctx);
		}
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ||
		    !strcmp(argv[i], "help")) {
			print_group_help(group, path);
			return BX_EXIT_OK;
		}
		cmd = find_cmd(group, argv[i], path);
		if (!cmd) {
			ctx->cmd_path = *path ? path : NULL;
			return ctx->pending[0] ? report_pending(ctx) : report(ctx, BX_EXIT_USAGE);
		}
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s", *path ? " " : "",
			 cmd->name);
		if (!cmd->group)
			return run_cmd(ctx, cmd, path, argc - i, argv + i);
		group = cmd->group;
	}
}

static int parse_global(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char hint[96];
	int opt;

	opterr = 0;
	/* '+': stop at the first non-option, the group name. */
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (parse_format(ctx, optarg))
				return BX_EXIT_USAGE;
			break;
		case 'V':
#ifdef BTRFSX_FAULT_INJECTION
			printf("btrfsx %s (test build: fault injection)\n", PACKAGE_VERSION);
#else
			printf("btrfsx %s\n", PACKAGE_VERSION);
#endif
			return BX_DONE;
		case 'h':
			print_group_help(&top_group, "");
			return BX_DONE;
		default:
			return bx_usage_error("unknown global option '%s'%s", argv[optind - 1],
					      bx_option_suggestion(argv[optind - 1], longopts, hint,
								   sizeof(hint)));
		}
	}
	return 0;
}

/*
 * util-linux's close_stdout: output that could not be written (a full disk,
 * a closed pipe's EIO) is a failure, not a silent exit 0.
 */
static int close_stdout(int exit_code)
{
	bool failed = ferror(stdout);
	int err;

	errno = 0;
	if (fclose(stdout) != 0)
		failed = true;
	err = errno;
	if (!failed || err == EPIPE)
		return exit_code;
	/* An error of an earlier flush left no errno behind. */
	fprintf(stderr, "btrfsx: write error on standard output%s%s\n", err ? ": " : "",
		err ? strerror(err) : "");
	return exit_code == BX_EXIT_OK ? BX_EXIT_FAILURE : exit_code;
}

static int run(int argc, char **argv)
{
	struct bx_ctx ctx = { .format = BX_FORMAT_TEXT };
	const char *env;
	int ret;

	env = getenv("BTRFSX_SYSFS_ROOT");
	ctx.sysfs_root = env && *env ? env : "/sys";
	env = getenv("BTRFSX_CONFIG_DIR");
	ctx.config_dir = env && *env ? env : SYSCONFDIR "/btrfsx";
	env = getenv("BTRFSX_STATE_DIR");
	ctx.state_dir = env && *env ? env : "/var/lib/btrfsx";
	env = getenv("BTRFSX_KERNEL");
	ctx.kernel = env && *env ? env : NULL;
#ifdef BTRFSX_FAULT_INJECTION
	ret = bx_fault_plan_parse(&ctx.writes, getenv("BTRFSX_FAULT_AFTER_WRITES"),
				  getenv("BTRFSX_FAULT_DROP_UNFLUSHED"),
				  getenv("BTRFSX_FAULT_PAUSE_BEFORE_WRITE"));
	if (ret)
		return report(&ctx, ret);
#endif
	ret = parse_global(&ctx, argc, argv);
	if (ret == BX_DONE)
		return BX_EXIT_OK;
	if (ret)
		return report(&ctx, ret);
	argc -= optind;
	argv += optind;
	/* Reported once the command is known: a monitoring plugin says it its own way. */
	if (take_format_options(&ctx, &argc, argv))
		snprintf(ctx.pending, sizeof(ctx.pending), "%s", bx_error_message(-EINVAL));
	return dispatch(&ctx, argc, argv);
}

int main(int argc, char **argv)
{
	return close_stdout(run(argc, argv));
}
