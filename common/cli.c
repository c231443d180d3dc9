/* Option parsing and usage helpers shared by every command. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cmds/commands.h"
#include "common/error.h"
#include "common/units.h"

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

int bx_getopt(struct bx_ctx *ctx, int argc, char **argv, const char *shortopts,
	      const struct option *longopts)
{
	static const struct option help_only[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	int opt;

	opterr = 0;
	opt = getopt_long(argc, argv, shortopts, longopts ? longopts : help_only, NULL);
	if (opt == 'h' || opt == -2) {
		bx_print_usage(ctx->usage, true);
		return BX_OPT_HELP;
	}
	if (opt == '?' || opt == ':') {
		if (optopt)
			bx_usage_error("%s: invalid option or missing argument: -%c", ctx->cmd_path,
				       optopt);
		else
			bx_usage_error("%s: invalid option or missing argument: %s", ctx->cmd_path,
				       argv[optind - 1]);
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

bool bx_units_option(int opt, unsigned int *units)
{
	unsigned int fixed;

	switch (opt) {
	case 'b':
		fixed = BX_UNITS_RAW;
		break;
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
	case BX_OPT_UNITS + 0:
		fixed = 0;
		break;
	case BX_OPT_UNITS + 1:
		*units &= ~BX_UNITS_DECIMAL;
		return true;
	case BX_OPT_UNITS + 2:
		*units |= BX_UNITS_DECIMAL;
		return true;
	default:
		return false;
	}
	*units = (*units & ~0xffu) | fixed;
	return true;
}
