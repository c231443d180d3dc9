/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Option parsing and usage helpers shared by every command. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds/commands.h"
#include "cmds/suggest.h"
#include "common/error.h"
#include "common/units.h"
#include "format/hints.h"

int bx_usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	bx_error(-22, "%s", msg);
	return BX_EXIT_USAGE;
}

int bx_bad_value(int ret)
{
	return ret < 0 ? BX_EXIT_USAGE : ret;
}

void bx_print_usage(const char *const *usage, bool full)
{
	printf("usage: %s\n", usage[0]);
	if (!usage[1])
		return;
	printf("\n    %s\n", usage[1]);
	if (!full)
		return;
	for (int i = 2; usage[i]; i++)
		printf("%s%s\n", usage[i][0] ? "    " : "", usage[i]);
}

/* Whether @arg is "--name" (or a prefix getopt took for it) of a long option with a value. */
static bool long_option_wants_value(const char *arg, const struct option *longopts)
{
	if (strncmp(arg, "--", 2) || strchr(arg, '=') || !arg[2])
		return false;
	for (const struct option *o = longopts; o->name; o++)
		if (!strncmp(o->name, arg + 2, strlen(arg + 2)) && o->has_arg == required_argument)
			return true;
	return false;
}

/* The usage error for what getopt refused: an unknown option or a missing value. */
static int option_error(struct bx_ctx *ctx, int argc, char **argv, const char *shortopts,
			const struct option *longopts)
{
	const char *spec = optopt > 0 && optopt < 256 ? strchr(shortopts, optopt) : NULL;
	const char *arg = argv[optind - 1];
	char hint[96];

	/* Inside a cluster of short options (-9223...) getopt has not moved past it yet. */
	if (optopt > 0 && optopt < 256 && optind < argc && argv[optind][0] == '-' &&
	    argv[optind][1] != '-' && strchr(argv[optind] + 1, optopt))
		arg = argv[optind];
	if ((spec && spec[1] == ':' && arg[1] != '-') || long_option_wants_value(arg, longopts))
		return bx_usage_error("%s: option '%s' needs a value", ctx->cmd_path, arg);
	if (optopt > 0 && optopt < 256 && arg[1] != '-' && strlen(arg) > 2)
		return bx_usage_error("%s: unknown option '-%c' in '%s'%s", ctx->cmd_path, optopt,
				      arg, arg[1] >= '0' && arg[1] <= '9' ?
				      " (negative numbers are not valid here)" : "");
	return bx_usage_error("%s: unknown option '%s'%s", ctx->cmd_path, arg,
			      bx_option_suggestion(arg, longopts, hint, sizeof(hint)));
}

const char *bx_option_suggestion(const char *arg, const struct option *longopts, char *buf,
				 size_t buf_len)
{
	const char *words[128];
	char typed[64];
	size_t nr = 0, len;

	if (strncmp(arg, "--", 2) || !arg[2])
		return "";
	len = strcspn(arg + 2, "=");
	if (len >= sizeof(typed))
		return "";
	memcpy(typed, arg + 2, len);
	typed[len] = '\0';
	for (const struct option *o = longopts; o->name && nr < 128; o++)
		words[nr++] = o->name;
	return bx_did_you_mean(typed, words, nr, "--", buf, buf_len);
}

int bx_getopt(struct bx_ctx *ctx, int argc, char **argv, const char *shortopts,
	      const struct option *longopts)
{
	static const struct option help_only[] = { BX_HELP_LONGOPT, { 0 } };
	bool h_is_help = !strstr(shortopts, BX_UNITS_SHORTOPTS);
	int opt;

	opterr = 0;
	if (!longopts)
		longopts = help_only;
	opt = getopt_long(argc, argv, shortopts, longopts, NULL);
	if (opt == BX_OPT_HELP_LONG || (opt == 'h' && h_is_help)) {
		bx_print_usage(ctx->usage, true);
		return BX_OPT_HELP;
	}
	if (opt == '?' || opt == ':') {
		option_error(ctx, argc, argv, shortopts, longopts);
		return BX_OPT_ERROR;
	}
	return opt;
}

int bx_opt_result(int opt)
{
	return opt == BX_OPT_HELP ? BX_DONE : BX_EXIT_USAGE;
}

int bx_check_argc(int nargs, int min, int max)
{
	if (nargs < min)
		return bx_usage_error("not enough arguments");
	if (max >= 0 && nargs > max)
		return bx_usage_error("too many arguments");
	return 0;
}

bool bx_progress_option(int opt, struct bx_progress_choice *choice)
{
	if (opt == BX_OPT_PROGRESS)
		choice->on = true;
	else if (opt == BX_OPT_NO_PROGRESS)
		choice->off = true;
	else
		return false;
	return true;
}

int bx_progress_check(const struct bx_progress_choice *choice)
{
	if (choice->on && choice->off)
		return bx_usage_error("--progress and --no-progress exclude each other");
	return 0;
}

bool bx_progress_shown(const struct bx_progress_choice *choice)
{
	return choice->on || (!choice->off && isatty(STDERR_FILENO));
}

bool bx_units_option(int opt, unsigned int *units)
{
	unsigned int fixed;

	if (opt >= BX_OPT_UNITS && opt < BX_OPT_UNITS + 256)
		opt -= BX_OPT_UNITS;
	else if (opt < 0 || opt > 255 || !strchr(BX_UNITS_SHORTOPTS, opt))
		return false;
	switch (opt) {
	case 'b':
		*units = BX_UNITS_RAW;
		return true;
	case 'h':
		*units = BX_UNITS_BINARY;
		return true;
	case 'H':
		*units = BX_UNITS_DECIMAL;
		return true;
	case 'i':
		*units &= ~BX_UNITS_DECIMAL;
		return true;
	case 's':
		*units |= BX_UNITS_DECIMAL;
		return true;
	case 'k':
		fixed = BX_UNITS_KIB;
		break;
	case 'm':
		fixed = BX_UNITS_MIB;
		break;
	case 'g':
		fixed = BX_UNITS_GIB;
		break;
	case 't':
		fixed = BX_UNITS_TIB;
		break;
	default:
		return false;
	}
	*units = (*units & ~0xffu) | fixed;
	return true;
}

void bx_out_hint(struct bx_out *out, const char *text_label, uint64_t hint, unsigned int flags)
{
	char key[64], text[32];

	snprintf(key, sizeof(key), "hint=%s", text_label);
	bx_hint_describe(hint, text, sizeof(text));
	if (bx_out_format(out) == BX_FORMAT_JSON)
		bx_out_str(out, key, bx_hint_name(hint), flags);
	else
		bx_out_str(out, key, text, flags);
	bx_out_u64(out, "hint_value", hint, flags | BX_F_JSON_ONLY);
}
