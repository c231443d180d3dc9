/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfsx inspect kernel-traits [--kernel VERSION]: every behaviour of the
 * kernel the models follow (model/kernel/register.c), with its versions
 * and whether the kernel in question has it.
 */
#include <getopt.h>
#include <stdio.h>

#include "cmds/format-output.h"
#include "cmds/inspect-kernel.h"
#include "cmds/kernel-option.h"
#include "cmds/table.h"
#include "fsops/snapshot-read.h"

const char *const bx_inspect_kernel_traits_usage[] = {
	"btrfsx inspect kernel-traits [-v] [--kernel <version>]",
	"List the kernel behaviours the models follow, and which a kernel has.",
	"",
	"Each trait is a rule of the kernel that filesystem usage, plan and",
	"misplaced follow: the kernels that have it (a first and a last version,",
	"or all the register knows), the kernel function, and whether the kernel",
	"asked for (the running one by default) has it. -v adds what the kernel",
	"does, the evidence and the unit test that pins it.",
	"",
	"-v|--verbose        what each trait is, how it was seen, its test",
	BX_KERNEL_HELP,
	NULL
};

/* "6.3 on", "5.2 to 6.8", "all" (no version known), into @buf. */
static void kernels_text(const struct bx_kernel_trait_info *t, char *buf, size_t len)
{
	if (!t->first)
		snprintf(buf, len, "all");
	else if (!t->last)
		snprintf(buf, len, "%u.%u on", BX_KV_MAJOR(t->first), BX_KV_MINOR(t->first));
	else
		snprintf(buf, len, "%u.%u to %u.%u", BX_KV_MAJOR(t->first), BX_KV_MINOR(t->first),
			 BX_KV_MAJOR(t->last), BX_KV_MINOR(t->last));
}

static void version_field(struct bx_out *out, const char *key, unsigned int v)
{
	char text[16];

	snprintf(text, sizeof(text), "%u.%u", BX_KV_MAJOR(v), BX_KV_MINOR(v));
	bx_out_str(out, key, v ? text : NULL, 0);
}

static void trait_json(struct bx_out *out, const struct bx_kernel_trait_info *t, bool active)
{
	bx_out_obj_begin(out, NULL, BX_OBJ_JSON_ONLY, NULL);
	bx_out_str(out, "name", t->name, 0);
	version_field(out, "first", t->first);
	version_field(out, "last", t->last);
	bx_out_bool(out, "active", active, 0);
	bx_out_str(out, "function", t->function, 0);
	bx_out_str(out, "model", t->model, 0);
	bx_out_str(out, "summary", t->summary, 0);
	bx_out_str(out, "evidence", t->evidence, 0);
	bx_out_str(out, "test", t->test, 0);
	bx_out_str(out, "unversioned", t->unversioned, 0);
	bx_out_obj_end(out);
}

/* -v: a trait's text, each part on a line of its own. */
static void trait_text(struct bx_out *out, const struct bx_kernel_trait_info *t, bool active)
{
	char kernels[32];

	kernels_text(t, kernels, sizeof(kernels));
	bx_out_textf(out, "%s (%s): %s", t->name, kernels, active ? "active" : "not active");
	bx_out_textf(out, "    %s.", t->summary);
	if (t->unversioned)
		bx_out_textf(out, "    No version: %s.", t->unversioned);
	bx_out_textf(out, "    Kernel: %s", t->function);
	bx_out_textf(out, "    Model: %s", t->model);
	bx_out_textf(out, "    Evidence: %s.", t->evidence);
	bx_out_textf(out, "    Test: %s", t->test);
}

static int print_table(struct bx_out *out, const struct bx_kernel *k)
{
	static const char *const header[] = { "Trait", "Kernels", "Active" };
	struct bx_table *t = bx_table_new(3);

	bx_table_header(t, header, 3);
	bx_table_rule(t);
	for (int i = 0; i < BX_KT_COUNT; i++) {
		const struct bx_kernel_trait_info *info = bx_kernel_trait_info(i);
		char kernels[32];

		kernels_text(info, kernels, sizeof(kernels));
		bx_table_row(t);
		bx_table_cell(t, 0, BX_ALIGN_LEFT, info->name);
		bx_table_cell(t, 1, BX_ALIGN_LEFT, kernels);
		bx_table_cell(t, 2, BX_ALIGN_LEFT, bx_kernel_has(k, i) ? "yes" : "no");
	}
	return bx_table_print(out, t);
}

int bx_cmd_inspect_kernel_traits(struct bx_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		BX_KERNEL_LONGOPT,
		BX_HELP_LONGOPT,
		{ 0 },
	};
	const char *kernel_version = ctx->kernel;
	struct bx_kernel kernel;
	bool verbose = false;
	int opt, ret;

	while ((opt = bx_getopt(ctx, argc, argv, "vh", longopts)) != -1) {
		if (opt == 'v')
			verbose = true;
		else if (opt == BX_OPT_KERNEL)
			kernel_version = optarg;
		else
			return bx_opt_result(opt);
	}
	if (bx_check_argc(argc - optind, 0, 0))
		return BX_EXIT_USAGE;
	ret = bx_kernel_arg(ctx, kernel_version, &kernel);
	if (ret)
		return ret;
	if (!kernel.chosen)
		bx_kernel_running(&kernel);
	bx_out_kernel(ctx->out, &kernel);
	bx_out_text(ctx->out, "");
	bx_out_list_begin(ctx->out, "traits");
	for (int i = 0; i < BX_KT_COUNT; i++) {
		trait_json(ctx->out, bx_kernel_trait_info(i), bx_kernel_has(&kernel, i));
		if (verbose)
			trait_text(ctx->out, bx_kernel_trait_info(i), bx_kernel_has(&kernel, i));
	}
	bx_out_list_end(ctx->out);
	return verbose ? 0 : print_table(ctx->out, &kernel);
}
