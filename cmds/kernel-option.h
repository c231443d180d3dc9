/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --kernel VERSION of the commands that model the kernel (filesystem usage,
 * plan, misplaced): which kernel's behaviour they follow (the register,
 * model/kernel/kernel.h), the running one by default, or the one
 * BTRFSX_KERNEL names (the test suite's). Their output says which.
 */
#ifndef BTRFSX_CMDS_KERNEL_OPTION_H
#define BTRFSX_CMDS_KERNEL_OPTION_H

#include "cmds/commands.h"
#include "model/snapshot.h"

#define BX_OPT_KERNEL 0x1300		/* above BX_OPT_PROGRESS */
#define BX_KERNEL_LONGOPT { "kernel", required_argument, NULL, BX_OPT_KERNEL }
#define BX_KERNEL_HELP \
	"--kernel <version>  follow that kernel's behaviour, not the running one's", \
	"                    (6.1 to 7.3; btrfsx inspect kernel-traits lists it)"

/*
 * The kernel asked for by @version (--kernel, or ctx->kernel from
 * BTRFSX_KERNEL; NULL: none) into @k, k->chosen set; without one @k is
 * left unchosen. Returns 0, or BX_EXIT_USAGE for a version the register
 * does not know (the message is recorded).
 */
int bx_kernel_arg(const struct bx_ctx *ctx, const char *version, struct bx_kernel *k);

/* The kernel @k of bx_kernel_arg() into the snapshot @in, when one was asked for. */
void bx_kernel_use(const struct bx_kernel *k, struct bx_snapshot *in);

/*
 * Which kernel's behaviour was followed: JSON "kernel" {version, release,
 * running}; text "Kernel behaviour: 6.18 (the running kernel)".
 */
void bx_out_kernel(struct bx_out *out, const struct bx_kernel *k);

#endif
