/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Size units as btrfs-progs spells them: --raw, --human-readable, --iec, --si, -b -k -m -g -t. */
#ifndef BTRFSX_UNITS_H
#define BTRFSX_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Low byte: the fixed unit (0 = automatic); flags above it. */
#define BX_UNITS_RAW 1
#define BX_UNITS_KIB 2
#define BX_UNITS_MIB 3
#define BX_UNITS_GIB 4
#define BX_UNITS_TIB 5
#define BX_UNITS_BINARY (0u << 8)   /* KiB, MiB, ... (default) */
#define BX_UNITS_DECIMAL (1u << 8)  /* kB, MB, ... */

/* Formats @bytes into @buf (at least 32 bytes). */
void bx_pretty_size(uint64_t bytes, unsigned int units, char *buf, size_t len);

/*
 * The one size parser of every command and the library: "1234", "64K",
 * "2MiB", "1g" (whole numbers, binary suffixes K, M, G, T, P, E, alone or
 * with "iB") into bytes. SI suffixes (kB, MB, GB, TB, PB, EB, in any case)
 * are refused, as btrfs-progs refuses them, never read as binary. Returns 0,
 * or -EINVAL / -ERANGE with a message saying what is wrong (and, for an SI
 * suffix, what to write); negative numbers and trailing garbage are refused.
 */
int bx_parse_size(const char *str, uint64_t *bytes);

/* Parses a whole unsigned number in any base (0x.., 0..). 0 or -EINVAL/-ERANGE. */
int bx_parse_u64(const char *str, uint64_t *value);

/*
 * Parses a duration: a whole number with a unit s, m, h, d or w ("400d",
 * "12h"; no unit: seconds) into seconds. 0, -EINVAL (no number, unknown
 * unit, zero) or -ERANGE (more than 100 years).
 */
int bx_parse_duration(const char *str, int64_t *seconds);

/*
 * Formats @seconds in the units bx_parse_duration() takes, days the largest
 * (as people write a window: "30d"): the largest that fits and the next
 * one when it is not zero, rounded down ("15s", "3m 20s", "5h", "2d 4h",
 * "400d"); negative durations with a minus sign.
 */
void bx_format_duration(int64_t seconds, char *buf, size_t len);

#endif
