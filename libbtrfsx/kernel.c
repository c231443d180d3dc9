/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The register of kernel behaviour (model/kernel/register.c), and the kernel a call follows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "fsops/snapshot-read.h"
#include "libbtrfsx/libbtrfsx-private.h"
#include "model/kernel/kernel.h"

int bx_api_kernel(const char *kernel, struct bx_kernel *k)
{
	memset(k, 0, sizeof(*k));
	return kernel ? bx_kernel_choose(kernel, "kernel", k) : 0;
}

void bx_api_kernel_use(const struct bx_kernel *k, struct bx_snapshot *in)
{
	if (k->chosen)
		in->kernel = *k;
}

void bx_api_kernel_fields(const struct bx_kernel *k, char version[16], bool *running)
{
	if (k->version)
		bx_kernel_version_text(k, version, 16);
	else
		version[0] = '\0';
	*running = !k->chosen;
}

static void version_text(unsigned int v, char out[16])
{
	if (v)
		snprintf(out, 16, "%u.%u", BX_KV_MAJOR(v), BX_KV_MINOR(v));
	else
		out[0] = '\0';
}

PUBLIC enum btrfsx_error btrfsx_kernel_traits_get(const char *kernel,
						  struct btrfsx_kernel_traits **out)
{
	struct btrfsx_kernel_traits *t;
	struct bx_kernel k;
	int ret;

	bx_api_begin();
	if (!out)
		return bx_api_missing("out");
	ret = bx_api_kernel(kernel, &k);
	if (ret)
		return bx_api_result(ret);
	if (!k.chosen)
		bx_kernel_running(&k);
	t = calloc(1, sizeof(*t));
	if (t)
		t->traits = calloc(BX_KT_COUNT, sizeof(*t->traits));
	if (!t || !t->traits) {
		btrfsx_kernel_traits_free(t);
		return bx_api_result(bx_error(-ENOMEM, "out of memory"));
	}
	bx_api_kernel_fields(&k, t->kernel, &t->kernel_running);
	snprintf(t->release, sizeof(t->release), "%s", k.release);
	for (int i = 0; i < BX_KT_COUNT; i++) {
		const struct bx_kernel_trait_info *info = bx_kernel_trait_info(i);
		struct btrfsx_kernel_trait *o = &t->traits[t->nr_traits++];

		o->name = info->name;
		version_text(info->first, o->first);
		version_text(info->last, o->last);
		o->active = bx_kernel_has(&k, i);
		o->function = info->function;
		o->model = info->model;
		o->summary = info->summary;
		o->evidence = info->evidence;
		o->test = info->test;
		o->unversioned = info->unversioned;
	}
	*out = t;
	return BTRFSX_OK;
}

PUBLIC void btrfsx_kernel_traits_free(struct btrfsx_kernel_traits *traits)
{
	if (!traits)
		return;
	free(traits->traits);
	free(traits);
}
