/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation hints: the low bits of btrfs_dev_item.type (the README's table,
 * btrfsx-property(8)). Pure
 * functions: names, parsing, and what each value allows.
 *
 * 0 data_preferred, 1 metadata_preferred, 2 metadata_only, 3 data_only (the
 * V12 patch set, 2 bits), 4 none (kakra's fork, 3 bits). 5-7 are unused. The
 * 2025 device-roles RFC puts 20/40/80/100/120 in the low 8 bits instead; we
 * recognise it to refuse writing over it.
 */
#ifndef BTRFSX_HINTS_H
#define BTRFSX_HINTS_H

#include <stdbool.h>
#include <stdint.h>

#define BX_HINT_DATA_PREFERRED 0
#define BX_HINT_METADATA_PREFERRED 1
#define BX_HINT_METADATA_ONLY 2
#define BX_HINT_DATA_ONLY 3
#define BX_HINT_NONE 4
#define BX_HINT_MAX_KNOWN 4

/* "data_preferred", ... or NULL for a value without a name. */
const char *bx_hint_name(uint64_t value);

/* The name of @hint, or "unknown(N)" for a value without one. */
void bx_hint_describe(uint64_t hint, char *buf, size_t len);

/*
 * Parses a hint: a name (any case, kernel spelling METADATA_ONLY, short
 * forms d m donly monly) or, with @allow_number, a number in any base.
 * Returns 0, or -EINVAL with a message listing the accepted names.
 */
int bx_hint_parse(const char *str, bool allow_number, uint64_t *value);

/* The hint field of a device type: its low 3 bits. */
uint64_t bx_hint_of_type(uint64_t type);

/* @type with its hint field replaced by @hint; every other bit kept. */
uint64_t bx_type_with_hint(uint64_t type, uint64_t hint);

/* True when the low 8 bits hold a value of the device-roles RFC encoding. */
bool bx_type_is_device_roles(uint64_t type);

/* Whether chunks of this kind may ever go to a device with @hint. */
bool bx_hint_allows_data(uint64_t hint);
bool bx_hint_allows_metadata(uint64_t hint);

#endif
