/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx scrub: offline scrub of an unmounted filesystem (start) and the
 * last run's result (status). The work is in scrub/scrub.c; this
 * file opens the filesystem safely, shows progress, runs in the background
 * unless -B, keeps the status file and picks the exit code.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "cmds/commands.h"
#include "cmds/scrub.h"
#include "common/error.h"
#include "fsops/offline.h"
#include "disk/timed-io.h"
#include "common/units.h"
#include "scrub/scrub.h"

static const char *const scrub_usage[] = {
	"btrfsx scrub <command> [<args>]",
	"Verify and repair every copy of every block of an unmounted filesystem.",
	NULL
};

static const char *const start_usage[] = {
	"btrfsx scrub start --offline [-r] [-B] [-d] [-R] [--progress|--no-progress] "
	"[--metadata-only] [--no-readahead] [--memory <size>] [--io-timeout <seconds>] "
	"<device>...",
	"Scrub an unmounted filesystem: verify every copy, repair the bad ones.",
	"",
	"Reads every superblock copy, every tree block and every checksummed data",
	"sector on every mirror, and recomputes RAID5/6 parity. A bad copy is",
	"rewritten from a good one (another mirror or a RAID5/6 rebuild), one at a",
	"time, each write flushed before the next: a crash loses nothing and the",
	"next run finishes the job. Refused when the filesystem is mounted or a",
	"device is busy. Name every member, or one and let the others be found.",
	"The counters carry the kernel scrub's names and meaning.",
	"",
	"--offline          scrub the devices directly (required: the kernel's",
	"                   scrub of a mounted filesystem is 'btrfs scrub')",
	"-r                 read-only: find and report, write nothing",
	"-B                 stay in the foreground and print the result; without",
	"                   it the scrub goes on in the background",
	"-d                 print the statistics of each device",
	"-R                 print every raw counter instead of the summary",
	"--progress         show bytes, rate and ETA on stderr (default on a terminal)",
	"--no-progress      never show progress",
	"--metadata-only    verify the superblocks and tree blocks only, not the",
	"                   data: minutes instead of hours on a large HDD array",
	"--no-readahead     walk the extent and csum trees without readahead",
	"                   (for measurements)",
	"--memory <size>    read buffers in all (default 48MiB, 96MiB for sha256 and",
	"                   blake2b; at least 1MiB): more reads faster on deep",
	"                   storage and costs as much",
	"--io-timeout <seconds>",
	"                   give up when a read or write of a device has not",
	"                   completed after this long: the device stalls (default",
	"                   60; 0: wait)",
	"",
	"Exit status: 0 nothing bad is left, 1 failure, 2 usage, 3 uncorrectable errors.",
	NULL
};

static const char *const status_usage[] = {
	"btrfsx scrub status --offline [-d] [-R] <device>",
	"Show the result (or progress) of the last offline scrub of a filesystem.",
	"",
	"Kept in $BTRFSX_STATE_DIR/scrub/<fsid>.json (default /var/lib/btrfsx).",
	"",
	"--offline          the offline scrub's status (required)",
	"-d                 print the statistics of each device",
	"-R                 print every raw counter instead of the summary",
	NULL
};

static volatile sig_atomic_t cancel_requested;

static void on_signal(int sig)
{
	(void)sig;
	cancel_requested = 1;
}

struct run_state {
	bool show_progress;
	size_t line_len;
};

static void progress_line(struct run_state *rs, const struct bx_scrub_progress *p)
{
	char done[32], total[32], rate_text[32], line[160];
	double rate = p->elapsed > 0 ? (double)p->bytes_done / p->elapsed : 0;
	double pct = p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 0;
	unsigned long long eta = 0;
	int len;

	if (pct > 100)
		pct = 100;
	if (rate > 0 && p->bytes_total > p->bytes_done)
		eta = (unsigned long long)((double)(p->bytes_total - p->bytes_done) / rate);
	bx_pretty_size(p->bytes_done, 0, done, sizeof(done));
	bx_pretty_size(p->bytes_total, 0, total, sizeof(total));
	bx_pretty_size((uint64_t)rate, 0, rate_text, sizeof(rate_text));
	len = snprintf(line, sizeof(line), "scrubbed %s of %s (%.1f%%), %s/s, ETA %llu:%02llu:%02llu",
		       done, total, pct, rate_text, eta / 3600, eta / 60 % 60, eta % 60);
	fprintf(stderr, "\r%s%*s", line, rs->line_len > (size_t)len ? (int)(rs->line_len - len) : 0,
		"");
	fflush(stderr);
	rs->line_len = (size_t)len;
}

static void on_progress(void *arg, const struct bx_scrub_progress *p)
{
	struct run_state *rs = arg;

	if (rs->show_progress)
		progress_line(rs, p);
}

static void clear_progress(struct run_state *rs)
{
	if (rs->show_progress && rs->line_len)
		fprintf(stderr, "\r%*s\r", (int)rs->line_len, "");
	rs->line_len = 0;
}

struct start_args {
	bool offline, readonly, foreground, readahead, metadata_only;
	uint64_t memory;              /* 0: the library's default */
	uint64_t io_timeout;          /* seconds */
	struct bx_progress_choice progress;
	struct scrub_print_opts po;
};

static int parse_start(struct bx_ctx *ctx, int argc, char **argv, struct start_args *a)
{
	enum { OPT_OFFLINE = 0x200, OPT_NO_READAHEAD, OPT_MEMORY, OPT_IO_TIMEOUT,
	       OPT_METADATA_ONLY };
	static const struct option longopts[] = {
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		BX_PROGRESS_LONGOPTS,
		{ "no-readahead", no_argument, NULL, OPT_NO_READAHEAD },
		{ "metadata-only", no_argument, NULL, OPT_METADATA_ONLY },
		{ "memory", required_argument, NULL, OPT_MEMORY },
		{ "io-timeout", required_argument, NULL, OPT_IO_TIMEOUT },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	int opt, ret;

	*a = (struct start_args){ .readahead = true, .io_timeout = BX_IO_TIMEOUT_DEFAULT };
	while ((opt = bx_getopt(ctx, argc, argv, "rBdRh", longopts)) != -1) {
		if (bx_progress_option(opt, &a->progress))
			continue;
		switch (opt) {
		case OPT_OFFLINE:
			a->offline = true;
			break;
		case 'r':
			a->readonly = true;
			break;
		case 'B':
			a->foreground = true;
			break;
		case 'd':
			a->po.per_device = true;
			break;
		case 'R':
			a->po.raw = true;
			break;
		case OPT_NO_READAHEAD:
			a->readahead = false;
			break;
		case OPT_METADATA_ONLY:
			a->metadata_only = true;
			break;
		case OPT_MEMORY:
			ret = bx_parse_size(optarg, &a->memory);
			if (ret)
				return bx_usage_error("--memory: %s", bx_error_message(ret));
			if (a->memory < BX_SCRUB_MIN_MEMORY)
				return bx_usage_error("--memory: '%s' is not a size of at least 1MiB",
						      optarg);
			break;
		case OPT_IO_TIMEOUT:
			if (bx_parse_u64(optarg, &a->io_timeout) || a->io_timeout > UINT_MAX)
				return bx_usage_error("--io-timeout: '%s' is not a number of seconds",
						      optarg);
			break;
		default:
			return bx_opt_result(opt);
		}
	}
	ret = bx_progress_check(&a->progress);
	if (ret)
		return ret;
	if (!a->offline)
		return bx_usage_error("only the offline scrub is done here: add --offline (for a "
				      "mounted filesystem use 'btrfs scrub start')");
	return bx_check_argc(argc - optind, 1, -1);
}

/* Runs the scrub in this process; the result and the exit code. */
static int run_scrub(struct bx_ctx *ctx, struct bx_fs *fs, const struct start_args *a,
		     const char *status_path, bool print)
{
	struct run_state rs = { 0 };
	struct bx_scrub_opts opts = { .readonly = a->readonly, .readahead = a->readahead,
				      .metadata_only = a->metadata_only,
				      .memory_bytes = a->memory,
				      .progress = on_progress, .progress_arg = &rs,
				      .cancel = &cancel_requested, .status_path = status_path };
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	struct bx_scrub_result *res;
	const char *status;
	int ret;

	rs.show_progress = print && bx_progress_shown(&a->progress);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = bx_scrub_run(fs, &opts, &res);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	clear_progress(&rs);
	if (ret)
		return ret;
	status = res->cancelled ? "cancelled" : "finished";
	if (print)
		scrub_print(ctx->out, res, status, &a->po);
	if (res->cancelled)
		ret = bx_error(-EINTR, "scrub cancelled");
	else if (bx_scrub_has_uncorrectable(res))
		ret = BX_EXIT_UNCORRECTABLE;
	bx_scrub_result_free(res);
	return ret;
}

/*
 * Without -B: the scrub goes on in a child process; the parent says so and
 * returns. The child waits until the parent has written the "running" status
 * (so a quick child cannot be overtaken by it).
 */
static int start_background(struct bx_ctx *ctx, struct bx_fs *fs, const struct start_args *a,
			    const char *status_path)
{
	struct bx_scrub_result placeholder = { .readonly = a->readonly,
					       .metadata_only = a->metadata_only,
					       .started = time(NULL) };
	int pipefd[2], ret;
	pid_t pid;
	char go;

	if (pipe2(pipefd, O_CLOEXEC))
		return bx_error(-errno, "pipe: %m");
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return bx_error(-errno, "fork: %m");
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		close(pipefd[1]);
		while (read(pipefd[0], &go, 1) < 0 && errno == EINTR)
			;
		close(pipefd[0]);
		setsid();
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		ret = run_scrub(ctx, fs, a, status_path, false);
		_exit(ret < 0 ? BX_EXIT_FAILURE : ret);
	}
	close(pipefd[0]);
	memcpy(placeholder.fsid, fs->fsid, sizeof(placeholder.fsid));
	ret = bx_scrub_status_save(status_path, &placeholder, "running", pid);
	close(pipefd[1]);
	if (ret)
		bx_warn("%s; 'scrub status' will not see this run", bx_error_message(ret));
	bx_error_clear();
	bx_out_obj_begin(ctx->out, "scrub", BX_OBJ_LINES, NULL);
	bx_out_uuid(ctx->out, "fsid", fs->fsid, 0);
	bx_out_str(ctx->out, "status", "started in the background", BX_F_TEXT_ONLY);
	bx_out_str(ctx->out, "status", "running", BX_F_JSON_ONLY);
	bx_out_s64(ctx->out, "pid", pid, 0);
	bx_out_str(ctx->out, "status_file", status_path, 0);
	bx_out_obj_end(ctx->out);
	return 0;
}

static int cmd_start(struct bx_ctx *ctx, int argc, char **argv)
{
	char status_path[PATH_MAX];
	struct start_args a;
	struct bx_fs *fs;
	int ret;

	ret = parse_start(ctx, argc, argv, &a);
	if (ret)
		return ret;
	ret = bx_open_offline_scrub(&fs, argv + optind, argc - optind, a.readonly,
				    (unsigned int)a.io_timeout);
	if (ret)
		return ret;
	fs->writes = ctx->writes;
	bx_scrub_status_path(ctx->state_dir, fs->fsid, status_path, sizeof(status_path));
	if (a.foreground)
		ret = run_scrub(ctx, fs, &a, status_path, true);
	else
		ret = start_background(ctx, fs, &a, status_path);
	bx_fs_close(fs);
	return ret;
}

static int cmd_status(struct bx_ctx *ctx, int argc, char **argv)
{
	enum { OPT_OFFLINE = 0x200 };
	static const struct option longopts[] = {
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct scrub_print_opts po = { 0 };
	char path[PATH_MAX], fsid[37];
	struct bx_scrub_status *st;
	bool offline = false;
	struct bx_fs *fs;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "dRh", longopts)) != -1) {
		if (opt == OPT_OFFLINE)
			offline = true;
		else if (opt == 'd')
			po.per_device = true;
		else if (opt == 'R')
			po.raw = true;
		else
			return bx_opt_result(opt);
	}
	if (!offline)
		return bx_usage_error("only the offline scrub's status is kept here: add --offline");
	ret = bx_check_argc(argc - optind, 1, 1);
	if (ret)
		return ret;
	ret = bx_fs_open(&fs, argv + optind, 1, BX_OPEN_SB_ONLY | BX_OPEN_NO_SCAN);
	if (ret)
		return ret;
	bx_scrub_status_path(ctx->state_dir, fs->fsid, path, sizeof(path));
	uuid_unparse(fs->fsid, fsid);
	bx_fs_close(fs);
	ret = bx_scrub_status_load(path, &st);
	if (ret == -ENOENT)
		return bx_error(-ENOENT, "%s: no offline scrub recorded for filesystem %s",
				argv[optind], fsid);
	if (ret)
		return ret;
	scrub_print(ctx->out, bx_scrub_status_result(st), bx_scrub_status_state(st), &po);
	bx_scrub_status_free(st);
	return 0;
}

static const struct bx_cmd scrub_cmds[] = {
	{ "start", cmd_start, start_usage, NULL, BX_CMD_JSON | BX_CMD_WRITES },
	{ "status", cmd_status, status_usage, NULL, BX_CMD_JSON },
	{ NULL },
};

const struct bx_cmd_group bx_scrub_group = { scrub_usage, scrub_cmds };
