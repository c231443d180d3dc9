/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Allocation hints: the public face of fsops/alloc-hint.c and format/hints.c. */
#include <stdio.h>
#include <string.h>

#include "fsops/alloc-hint.h"
#include "common/error.h"
#include "format/hints.h"
#include "libbtrfsx/libbtrfsx-private.h"

PUBLIC const char *btrfsx_hint_name(uint64_t hint)
{
	return bx_hint_name(hint);
}

PUBLIC enum btrfsx_error btrfsx_hint_parse(const char *str, bool allow_number, uint64_t *hint)
{
	bx_api_begin();
	if (!str)
		return bx_api_missing("a hint name");
	if (!hint)
		return bx_api_missing("hint");
	return bx_api_result(bx_hint_parse(str, allow_number, hint));
}

static enum btrfsx_hint_iface public_iface(enum bx_hint_iface iface)
{
	switch (iface) {
	case BX_HINT_IFACE_NAME:
		return BTRFSX_HINT_IFACE_NAME;
	case BX_HINT_IFACE_TYPE:
		return BTRFSX_HINT_IFACE_TYPE;
	default:
		return BTRFSX_HINT_IFACE_NONE;
	}
}

static void public_state(const struct bx_hint_state *in, struct btrfsx_hint_state *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	BX_HINT_STATE_FIELDS(BX_FIELD_COPY)
	out->iface = public_iface(in->iface);
}

PUBLIC enum btrfsx_error btrfsx_hint_get(const char *sysfs_root, const char *device,
					 struct btrfsx_hint_state *state)
{
	struct bx_hint_state st;
	int ret;

	bx_api_begin();
	if (!device)
		return bx_api_missing("a device");
	if (!state)
		return bx_api_missing("state");
	ret = bx_hint_get(bx_api_sysfs_root(sysfs_root), device, &st);
	if (ret)
		return bx_api_result(ret);
	public_state(&st, state);
	return BTRFSX_OK;
}

PUBLIC enum btrfsx_error btrfsx_hint_set(const char *sysfs_root, const char *device,
					 uint64_t hint, unsigned int flags,
					 struct btrfsx_hint_state *before,
					 struct btrfsx_hint_state *after)
{
	struct bx_hint_state st_before, st_after;
	int ret;

	bx_api_begin();
	if (!device)
		return bx_api_missing("a device");
	if (bx_api_check_flags(flags, BTRFSX_HINT_SET_FORCE))
		return BTRFSX_ERROR_INVALID_ARGUMENT;
	ret = bx_hint_set(bx_api_sysfs_root(sysfs_root), device, hint,
			  (flags & BTRFSX_HINT_SET_FORCE) ? BX_HINT_SET_FORCE : 0, NULL, &st_before,
			  &st_after);
	if (ret)
		return bx_api_result(bx_error_about(ret, device));
	public_state(&st_before, before);
	public_state(&st_after, after);
	return BTRFSX_OK;
}
