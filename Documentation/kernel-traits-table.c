/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writes btrfsx-inspect(8)'s table of kernel traits (asciidoc) from the
 * register (model/kernel/register.c), so the manual cannot drift from it.
 * Run by the build (Documentation/Makemodule.am) into
 * Documentation/kernel-traits.adoc, which the page includes.
 */
#include <stdio.h>

#include "model/kernel/kernel.h"

static void kernels(const struct bx_kernel_trait_info *t)
{
	if (!t->first)
		printf("all");
	else if (!t->last)
		printf("%u.%u on", BX_KV_MAJOR(t->first), BX_KV_MINOR(t->first));
	else
		printf("%u.%u to %u.%u", BX_KV_MAJOR(t->first), BX_KV_MINOR(t->first),
		       BX_KV_MAJOR(t->last), BX_KV_MINOR(t->last));
}

int main(void)
{
	printf("// Made from model/kernel/register.c by Documentation/kernel-traits-table.\n");
	printf("[cols=\"3,1,3\",options=\"header\"]\n|===\n|Trait |Kernels |Modelled in\n");
	for (int i = 0; i < BX_KT_COUNT; i++) {
		const struct bx_kernel_trait_info *t = bx_kernel_trait_info(i);

		printf("|%s |", t->name);
		kernels(t);
		printf(" |%s\n", t->model);
	}
	printf("|===\n");
	return ferror(stdout) ? 1 : 0;
}
