/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command table. A group is a list of commands; a command is a function,
 * its usage text and what it supports. The dispatcher (btrfsx.c) enforces
 * the flags, parses the global options, prints errors and picks exit codes.
 *
 * Usage arrays: [0] synopsis, [1] one-line summary, then long text and
 * options, NULL-terminated. The synopsis is also the man page's.
 */
#ifndef BTRFSX_COMMANDS_H
#define BTRFSX_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "cmds/format-output.h"
#include "disk/write-plan.h"

#define BX_EXIT_OK 0
#define BX_EXIT_FAILURE 1
#define BX_EXIT_USAGE 2
#define BX_EXIT_UNCORRECTABLE 3
#define BX_EXIT_MISPLACED 4        /* filesystem misplaced found some */
#define BX_EXIT_PLAN_IMPOSSIBLE 5  /* filesystem plan: a change would fail */
#define BX_EXIT_STOPPED 6          /* maintain run: stopped before its target */
/* Returned by a command that printed its help: stop, exit 0. */
#define BX_DONE 100
/*
 * Returned by a command that printed everything, its failure included, and
 * chose its exit status itself: a monitoring plugin's 0-3 (monitor report
 * --check). The dispatcher exits with @code and prints nothing more.
 */
#define BX_EXIT_WITH(code) (1000 + (code))

/* What a command declares about itself. */
#define BX_CMD_JSON (1u << 0)      /* accepts --format json */
#define BX_CMD_WRITES (1u << 1)    /* may change devices: others get ctx->writes.refused */
#define BX_CMD_HIDDEN (1u << 2)    /* not listed in the group help */
/*
 * A monitoring plugin (Nagios, Icinga, Sensu) when --check is among its
 * arguments: the command prints one status line first and exits with the
 * state (BX_EXIT_WITH), and every failure, a usage error included, is
 * UNKNOWN: exit 3 with the line "BTRFSX UNKNOWN - <message>" on standard
 * output (the "check" object in JSON), nothing on standard error.
 */
#define BX_CMD_PLUGIN (1u << 3)
#define BX_PLUGIN_UNKNOWN 3

/* Everything a command gets from the command line besides its arguments. */
struct bx_ctx {
	enum bx_format format;
	struct bx_out *out;        /* set up by the dispatcher for the command */
	const char *sysfs_root;    /* BTRFSX_SYSFS_ROOT or "/sys" */
	const char *config_dir;    /* BTRFSX_CONFIG_DIR or SYSCONFDIR "/btrfsx" */
	const char *const *usage;  /* the running command's, for usage errors */
	const char *cmd_path;      /* "inspect dump-super" */
	bool force;                /* --force of the running command */
	struct bx_write_plan writes; /* refused unless BX_CMD_WRITES; BTRFSX_FAULT_* in tests */
	const char *state_dir;     /* BTRFSX_STATE_DIR or /var/lib/btrfsx (scrub status) */
	const char *kernel;        /* BTRFSX_KERNEL: --kernel's default (cmds/kernel-option.h) */
	bool plugin;               /* a BX_CMD_PLUGIN command run with --check */
	char pending[256];         /* a usage error found before the command was known */
};

struct bx_cmd_group;

struct bx_cmd {
	const char *name;
	int (*fn)(struct bx_ctx *ctx, int argc, char **argv);
	const char *const *usage;
	const struct bx_cmd_group *group;   /* set for a group of subcommands */
	unsigned int flags;
};

struct bx_cmd_group {
	const char *const *usage;
	const struct bx_cmd *cmds;          /* terminated by a NULL name */
};

/*
 * Command functions return 0, a negative errno (the message is in
 * bx_error_message), or a positive exit code (BX_EXIT_USAGE after
 * bx_usage_error, BX_EXIT_UNCORRECTABLE).
 */
int bx_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * getopt_long with the conventions every command shares (btrfsx(8), OPTION
 * CONVENTIONS): --help prints the usage and makes the command return 0, and
 * so does -h unless the command takes the short size options
 * (BX_UNITS_SHORTOPTS), where -h means --human-readable as in btrfs-progs;
 * an unknown option or missing argument is a usage error. Returns the
 * option, -1 at the end, or BX_OPT_HELP / BX_OPT_ERROR (return
 * bx_opt_result(...) then). Put BX_HELP_LONGOPT in every longopts table.
 */
#define BX_OPT_HELP (-100)
#define BX_OPT_ERROR (-101)
#define BX_OPT_HELP_LONG 0x1100
#define BX_HELP_LONGOPT { "help", no_argument, NULL, BX_OPT_HELP_LONG }
struct option;
int bx_getopt(struct bx_ctx *ctx, int argc, char **argv, const char *shortopts,
	      const struct option *longopts);
int bx_opt_result(int opt);

/*
 * "; did you mean '--dry-run'?" for a mistyped long option @arg ("--dry-rn",
 * "--formt=json") of @longopts, into @buf; "" when none is close enough.
 */
const char *bx_option_suggestion(const char *arg, const struct option *longopts, char *buf,
				 size_t buf_len);

/*
 * For a value parsed from the arguments that was refused (@ret < 0, the
 * message recorded): a usage error, exit 2, like an unknown option. 0 passes.
 */
int bx_bad_value(int ret);

/* Checks the number of positional arguments left after options. */
int bx_check_argc(int nargs, int min, int max);

void bx_print_usage(const char *const *usage, bool full);

/*
 * The size unit options of btrfs-progs. Every command that prints sizes takes
 * the long ones (BX_UNITS_LONGOPTS: --raw, --human-readable, --iec, --si,
 * --kbytes ... --tbytes); the commands where btrfs-progs has the short ones
 * (filesystem usage, device usage, io-stats) add BX_UNITS_SHORTOPTS to their
 * short options: -b -h -H -k -m -g -t, -h then being --human-readable and -H
 * human-readable in base 1000. The command handles its own options first and
 * passes the rest to bx_units_option(), which consumes the unit options.
 */
#define BX_OPT_UNITS 0x1000
#define BX_UNITS_SHORTOPTS "bhHkmgt"
#define BX_UNITS_LONGOPTS \
	{ "raw", no_argument, NULL, BX_OPT_UNITS + 'b' }, \
	{ "human-readable", no_argument, NULL, BX_OPT_UNITS + 'h' }, \
	{ "iec", no_argument, NULL, BX_OPT_UNITS + 'i' }, \
	{ "si", no_argument, NULL, BX_OPT_UNITS + 's' }, \
	{ "kbytes", no_argument, NULL, BX_OPT_UNITS + 'k' }, \
	{ "mbytes", no_argument, NULL, BX_OPT_UNITS + 'm' }, \
	{ "gbytes", no_argument, NULL, BX_OPT_UNITS + 'g' }, \
	{ "tbytes", no_argument, NULL, BX_OPT_UNITS + 't' }
/*
 * --progress and --no-progress of the long-running commands (scrub start,
 * balance misplaced): progress on stderr when asked for, by default when
 * stderr is a terminal. Like the unit options, the command passes its other
 * options on to bx_progress_option(); after parsing, bx_progress_check()
 * refuses both at once, and bx_progress_shown() decides when the work starts.
 */
#define BX_OPT_PROGRESS 0x1200		/* above BX_OPT_UNITS and BX_OPT_HELP_LONG */
#define BX_OPT_NO_PROGRESS 0x1201
#define BX_PROGRESS_LONGOPTS \
	{ "progress", no_argument, NULL, BX_OPT_PROGRESS }, \
	{ "no-progress", no_argument, NULL, BX_OPT_NO_PROGRESS }
struct bx_progress_choice {
	bool on, off;
};
/* True if @opt was one of the two; @choice updated. */
bool bx_progress_option(int opt, struct bx_progress_choice *choice);
/* 0, or a usage error when both were given. */
int bx_progress_check(const struct bx_progress_choice *choice);
bool bx_progress_shown(const struct bx_progress_choice *choice);

/*
 * An allocation hint in the JSON key scheme (Documentation/dev/json.md):
 * "hint" (the name, null for a value btrfsx does not know) and "hint_value"
 * (the number); text shows the name, or unknown(N), labelled @text_label.
 * @flags as for the other fields (BX_F_NO_NAME ...).
 */
void bx_out_hint(struct bx_out *out, const char *text_label, uint64_t hint, unsigned int flags);

/* The usage text lines for the two sets. */
#define BX_UNITS_HELP_SHORT \
	"Sizes: -b|--raw, -h|--human-readable (default), -H (base 1000), --iec, --si,", \
	"       -k|--kbytes, -m|--mbytes, -g|--gbytes, -t|--tbytes"
#define BX_UNITS_HELP_LONG \
	"Sizes: --raw, --human-readable (default), --iec, --si, --kbytes, --mbytes,", \
	"       --gbytes, --tbytes"
/* True if @opt was a unit option; *units updated (see common/units.h). */
bool bx_units_option(int opt, unsigned int *units);

extern const struct bx_cmd_group bx_inspect_group;
extern const struct bx_cmd_group bx_filesystem_group;
extern const struct bx_cmd_group bx_device_property_group;
extern const struct bx_cmd_group bx_read_policy_group;
extern const struct bx_cmd_group bx_property_group;
extern const struct bx_cmd_group bx_device_group;
extern const struct bx_cmd_group bx_scrub_group;
extern const struct bx_cmd_group bx_monitor_group;
extern const struct bx_cmd_group bx_balance_group;
extern const struct bx_cmd_group bx_maintain_group;

/* Top-level commands (not groups). */
int cmd_mkfs(struct bx_ctx *ctx, int argc, char **argv);
extern const char *const mkfs_usage[];

#endif
