/* SPDX-License-Identifier: GPL-2.0-or-later */
/* --kernel VERSION and the line that says which kernel was followed (kernel-option.h). */
#include <stdio.h>
#include <string.h>

#include "cmds/format-output.h"
#include "cmds/kernel-option.h"

int bx_kernel_arg(const struct bx_ctx *ctx, const char *version, struct bx_kernel *k)
{
	memset(k, 0, sizeof(*k));
	if (!version)
		return 0;
	if (bx_kernel_choose(version, version == ctx->kernel ? "BTRFSX_KERNEL" : "--kernel", k))
		return BX_EXIT_USAGE;
	return 0;
}

void bx_kernel_use(const struct bx_kernel *k, struct bx_snapshot *in)
{
	if (k->chosen)
		in->kernel = *k;
}

void bx_out_kernel(struct bx_out *out, const struct bx_kernel *k)
{
	char version[16], text[160];

	bx_kernel_version_text(k, version, sizeof(version));
	if (k->chosen)
		snprintf(text, sizeof(text), "%s (asked for)", version);
	else
		snprintf(text, sizeof(text), "%s (the running kernel, %s)", version,
			 k->release[0] ? k->release : "release unknown");
	bx_out_str(out, "Kernel behaviour:", text, BX_F_TEXT_ONLY);
	bx_out_obj_begin(out, "kernel", BX_OBJ_JSON_ONLY, NULL);
	bx_out_str(out, "version", k->version ? version : NULL, 0);
	bx_out_str(out, "release", k->release, 0);
	bx_out_bool(out, "running", !k->chosen, 0);
	bx_out_obj_end(out);
}
