/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfsx device: per-device views of a mounted filesystem. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cmds/commands.h"
#include "cmds/device-usage.h"
#include "common/clock.h"
#include "common/error.h"
#include "fsops/io-stats.h"
#include "fsops/mounted-fs.h"
#include "fsops/read-policy.h"
#include "common/units.h"

/* ---- io-stats ---- */

static const char *const io_stats_usage[] = {
	"btrfsx device io-stats [-i <seconds>] [-c <count>] [<units>] <path>",
	"Show how reads are spread over the devices of a mounted filesystem.",
	"",
	"Samples the read counters of every member block device (its stat in",
	"sysfs) over an interval, and prints per device the reads and the bytes",
	"read in it with their share of the total, <count> times. Shows the read",
	"policy beside them: whether it spreads reads is what this is for. Then",
	"the kernel's error counters of each device (as 'btrfs device stats').",
	"",
	"SIGINT or SIGTERM ends the sample under way: it is printed with its",
	"real length, and the command ends (exit 0). So '-i 3600' and Ctrl-C",
	"when a job is done show how the job's reads were spread.",
	"",
	"-i|--interval <seconds>  length of a sample (default 1, fractions allowed)",
	"-c|--count <count>       number of samples (default 1)",
	BX_UNITS_HELP_SHORT,
	NULL
};

/*
 * Waits @seconds for SIGINT or SIGTERM on @stop_fd (a signalfd of the two,
 * blocked), or for good when it cannot be polled. Returns true when one
 * came: the caller stops.
 */
static bool wait_for_stop(int stop_fd, double seconds)
{
	double end = bx_monotonic_seconds() + seconds, left;

	while ((left = end - bx_monotonic_seconds()) > 0) {
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
		int n = ppoll(&pfd, 1, &ts, NULL);

		if (n > 0)
			return true;
		if (n < 0 && errno != EINTR)
			return false;
	}
	return false;
}

static double share(uint64_t part, uint64_t total)
{
	return total ? 100.0 * (double)part / (double)total : 0.0;
}

static void print_sample(struct bx_out *out, unsigned int units, unsigned int index,
			 double elapsed, const struct bx_mounted_fs *fs,
			 const struct bx_dev_reads *before, const struct bx_dev_reads *after)
{
	uint64_t total_reads = 0, total_bytes = 0;
	char heading[64];

	for (size_t i = 0; i < fs->nr_devs; i++) {
		total_reads += after[i].reads - before[i].reads;
		total_bytes += after[i].read_bytes - before[i].read_bytes;
	}
	snprintf(heading, sizeof(heading), "sample %u (%.2fs):", index, elapsed);
	bx_out_obj_begin(out, NULL, BX_OBJ_LINES, heading);
	bx_out_u64(out, "sample", index, BX_F_JSON_ONLY);
	bx_out_double(out, "seconds", elapsed, 3, BX_F_JSON_ONLY);
	bx_out_list_begin(out, "devices");
	for (size_t i = 0; i < fs->nr_devs; i++) {
		uint64_t reads = after[i].reads - before[i].reads;
		uint64_t bytes = after[i].read_bytes - before[i].read_bytes;

		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(out, "devid", after[i].devid, 0);
		bx_out_str(out, "device", after[i].path[0] ? after[i].path : NULL, 0);
		/* Text says so only when a device's counters could not be read. */
		bx_out_bool(out, "stats_available=present", after[i].present,
			    after[i].present ? BX_F_JSON_ONLY : 0);
		bx_out_u64(out, "reads", reads, 0);
		bx_out_double(out, "reads_pct", share(reads, total_reads), 2, 0);
		bx_out_size(out, "read_bytes", bytes, units, 0);
		bx_out_double(out, "read_bytes_pct", share(bytes, total_bytes), 2, 0);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	bx_out_obj_begin(out, "total", BX_OBJ_INLINE, NULL);
	bx_out_textf(out, "total");
	bx_out_u64(out, "reads", total_reads, 0);
	bx_out_size(out, "read_bytes", total_bytes, units, 0);
	bx_out_obj_end(out);
	bx_out_obj_end(out);
}

/*
 * The kernel's error counters of every member device (BTRFS_IOC_GET_DEV_STATS,
 * not reset), after the samples: `btrfs device stats` beside the reads. A
 * missing device has none (null).
 */
static void print_errors(struct bx_out *out, const struct bx_mounted_fs *fs)
{
	uint64_t stats[BX_DEV_STAT_COUNT];

	bx_out_list_begin(out, "errors");
	for (size_t i = 0; i < fs->nr_devs; i++) {
		const struct bx_mounted_dev *d = &fs->devs[i];
		bool known = d->path[0] && !bx_mounted_dev_stats(fs, d->devid, stats);

		/* A device the kernel keeps no counters for is shown as such, not failed. */
		if (!known)
			bx_error_clear();
		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(out, "devid", d->devid, 0);
		bx_out_str(out, "device", d->path[0] ? d->path : NULL, 0);
		for (int k = 0; k < BX_DEV_STAT_COUNT; k++) {
			if (known)
				bx_out_u64(out, bx_dev_stat_names[k], stats[k], 0);
			else
				bx_out_str(out, bx_dev_stat_names[k], NULL, 0);
		}
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
}

static int parse_interval(const char *arg, double *seconds)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > 86400)
		return bx_usage_error("invalid interval '%s' (seconds, more than 0)", arg);
	*seconds = v;
	return 0;
}

static int cmd_io_stats(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		BX_UNITS_LONGOPTS,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	struct bx_dev_reads *before = NULL, *after = NULL, *tmp;
	sigset_t stop_signals;
	bool stopped = false;
	int stop_fd = -1;
	unsigned int units = 0;
	struct bx_mounted_fs fs;
	struct bx_rp_state st;
	double interval = 1.0, start;
	uint64_t count = 1;
	char policy[64];
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "i:c:" BX_UNITS_SHORTOPTS, longopts)) != -1) {
		switch (opt) {
		case 'i':
			ret = parse_interval(optarg, &interval);
			if (ret)
				return ret;
			break;
		case 'c':
			if (bx_parse_u64(optarg, &count) || count == 0 || count > 1000000)
				return bx_usage_error("invalid count '%s' (a number from 1)", optarg);
			break;
		default:
			if (!bx_units_option(opt, &units))
				return bx_opt_result(opt);
		}
	}
	ret = bx_check_argc(argc - optind, 1, 1);
	if (ret)
		return ret;
	ret = bx_mounted_open(argv[optind], &fs);
	if (ret)
		return ret;
	before = calloc(fs.nr_devs ? fs.nr_devs : 1, sizeof(*before));
	after = calloc(fs.nr_devs ? fs.nr_devs : 1, sizeof(*after));
	if (!before || !after) {
		ret = bx_error(-ENOMEM, "out of memory");
		goto out;
	}
	bx_out_str(ctx->out, "fsid", fs.fsid_str, 0);
	bx_out_str(ctx->out, "mountpoint=path", fs.path, 0);
	if (bx_rp_read(ctx->sysfs_root, fs.fsid_str, &st) == 0) {
		bx_rp_format(&st.active, policy, sizeof(policy));
		bx_out_str(ctx->out, "read_policy", policy, 0);
	} else {
		bx_error_clear();
		bx_out_str(ctx->out, "read_policy", NULL, 0);
	}
	bx_out_double(ctx->out, "interval", interval, 3, 0);
	ret = bx_read_dev_reads(ctx->sysfs_root, &fs, before);
	if (ret)
		goto out;
	/*
	 * From the first counters on, SIGINT and SIGTERM end the sample under
	 * way instead of the process. Blocked until the end: one that comes
	 * while a sample is printed waits for the next wait.
	 */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_signals, NULL);
	stop_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
	if (stop_fd < 0) {
		ret = bx_error(-errno, "signalfd: %m");
		goto out;
	}
	bx_warn_no_dev_reads(&fs, before);
	bx_out_list_begin(ctx->out, "samples");
	start = bx_monotonic_seconds();
	for (uint64_t n = 1; n <= count && !stopped; n++) {
		double t;

		stopped = wait_for_stop(stop_fd, interval);
		ret = bx_read_dev_reads(ctx->sysfs_root, &fs, after);
		if (ret)
			break;
		t = bx_monotonic_seconds();
		print_sample(ctx->out, units, (unsigned int)n, t - start, &fs, before, after);
		fflush(stdout);
		start = t;
		tmp = before;
		before = after;
		after = tmp;
	}
	bx_out_list_end(ctx->out);
	if (!ret)
		print_errors(ctx->out, &fs);
out:
	if (stop_fd >= 0)
		close(stop_fd);
	free(before);
	free(after);
	bx_mounted_close(&fs);
	return ret;
}

static const char *const device_usage[] = {
	"btrfsx device <command> [<args>]",
	"Per-device views and settings.",
	NULL
};

static const struct bx_cmd device_cmds[] = {
	{ "io-stats", cmd_io_stats, io_stats_usage, NULL, BX_CMD_JSON },
	{ "usage", bx_cmd_device_usage, bx_device_usage_usage, NULL, BX_CMD_JSON },
	{ "property", NULL, NULL, &bx_device_property_group, 0 },
	{ NULL },
};

const struct bx_cmd_group bx_device_group = { device_usage, device_cmds };
