/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "common/units.h"
#include "format/ctree.h"
#include "format/hints.h"

static const char *const hint_names[] = {
	[BX_HINT_DATA_PREFERRED] = "data_preferred",
	[BX_HINT_METADATA_PREFERRED] = "metadata_preferred",
	[BX_HINT_METADATA_ONLY] = "metadata_only",
	[BX_HINT_DATA_ONLY] = "data_only",
	[BX_HINT_NONE] = "none",
};

static const struct {
	const char *alias;
	uint64_t hint;
} short_forms[] = {
	{ "d", BX_HINT_DATA_PREFERRED },
	{ "m", BX_HINT_METADATA_PREFERRED },
	{ "donly", BX_HINT_DATA_ONLY },
	{ "monly", BX_HINT_METADATA_ONLY },
};

const char *bx_hint_name(uint64_t value)
{
	return value <= BX_HINT_MAX_KNOWN ? hint_names[value] : NULL;
}

void bx_hint_describe(uint64_t hint, char *buf, size_t len)
{
	const char *name = bx_hint_name(hint);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "unknown(%llu)", (unsigned long long)hint);
}

int bx_hint_parse(const char *str, bool allow_number, uint64_t *value)
{
	for (uint64_t i = 0; i <= BX_HINT_MAX_KNOWN; i++) {
		if (!strcasecmp(str, hint_names[i])) {
			*value = i;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(short_forms) / sizeof(short_forms[0]); i++) {
		if (!strcasecmp(str, short_forms[i].alias)) {
			*value = short_forms[i].hint;
			return 0;
		}
	}
	if (allow_number && bx_parse_u64(str, value) == 0) {
		if (*value > BTRFSX_HINT_FIELD_MASK)
			return bx_error(-EINVAL, "hint value %s does not fit the 3-bit hint field", str);
		return 0;
	}
	return bx_error(-EINVAL, "unknown allocation hint '%s' (data_preferred, metadata_preferred, "
			"metadata_only, data_only, none; short: d, m, donly, monly)", str);
}

uint64_t bx_hint_of_type(uint64_t type)
{
	return type & BTRFSX_HINT_FIELD_MASK;
}

uint64_t bx_type_with_hint(uint64_t type, uint64_t hint)
{
	return (type & ~BTRFSX_HINT_FIELD_MASK) | (hint & BTRFSX_HINT_FIELD_MASK);
}

bool bx_type_is_device_roles(uint64_t type)
{
	switch (type & 0xff) {
	case 20: case 40: case 80: case 100: case 120:
		return true;
	default:
		return false;
	}
}

bool bx_hint_allows_data(uint64_t hint)
{
	return hint != BX_HINT_METADATA_ONLY;
}

bool bx_hint_allows_metadata(uint64_t hint)
{
	return hint != BX_HINT_DATA_ONLY;
}
