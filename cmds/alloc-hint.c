/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The allocation_hint property of devices: handlers for cmds/property.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmds/commands.h"
#include "cmds/property.h"
#include "fsops/alloc-hint.h"
#include "common/error.h"
#include "format/hints.h"

static const char *iface_name(enum bx_hint_iface iface)
{
	switch (iface) {
	case BX_HINT_IFACE_NAME:
		return "allocation_hint";
	case BX_HINT_IFACE_TYPE:
		return "type";
	default:
		return NULL;
	}
}

int bx_alloc_hint_prop_get(struct bx_ctx *ctx, const char *object, char *value, size_t len)
{
	struct bx_hint_state st;
	int ret = bx_hint_get(ctx->sysfs_root, object, &st);

	if (ret)
		return ret;
	bx_hint_describe(st.hint, value, len);
	return 0;
}

int bx_alloc_hint_prop_details(struct bx_ctx *ctx, const char *object)
{
	struct bx_hint_state st;
	int ret = bx_hint_get(ctx->sysfs_root, object, &st);

	if (ret)
		return ret;
	bx_out_u64(ctx->out, "devid", st.devid, BX_F_JSON_ONLY);
	bx_out_str(ctx->out, "device", st.path, BX_F_JSON_ONLY);
	bx_out_u64(ctx->out, "hint_value", st.hint, BX_F_JSON_ONLY);
	bx_out_u64(ctx->out, "dev_item_type", st.type, BX_F_JSON_ONLY);
	bx_out_bool(ctx->out, "mounted", st.mounted, BX_F_JSON_ONLY);
	bx_out_str(ctx->out, "kernel_interface", iface_name(st.iface), BX_F_JSON_ONLY);
	bx_out_bool(ctx->out, "effective", st.effective, BX_F_JSON_ONLY);
	return 0;
}

int bx_alloc_hint_prop_set(struct bx_ctx *ctx, const char *object, const char *value,
			   char *now, size_t len)
{
	struct bx_hint_state before, after;
	char old[32];
	uint64_t hint;
	int ret;

	ret = bx_hint_parse(value, ctx->force, &hint);
	if (ret)
		return bx_bad_value(ret);
	ret = bx_hint_set(ctx->sysfs_root, object, hint, ctx->force ? BX_HINT_SET_FORCE : 0,
			  &ctx->writes, &before, &after);
	if (ret)
		return bx_error_about(ret, object);
	bx_hint_describe(before.hint, old, sizeof(old));
	bx_hint_describe(after.hint, now, len);
	bx_out_str(ctx->out, "previous", old, BX_F_JSON_ONLY);
	bx_out_textf(ctx->out, "%s: devid %llu allocation_hint %s -> %s (%s)", object,
		     (unsigned long long)before.devid, old, now,
		     before.mounted ? "through the kernel" :
		     "offline: chunk tree device item and superblock copies rewritten");
	return 0;
}
