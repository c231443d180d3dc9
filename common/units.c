/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"

/*
 * btrfs-progs' rounding, digit for digit, so that text output can be
 * compared field by field: automatic units divide by whole steps and keep
 * the last value before the final division, which is then divided in
 * single-precision float and printed with two decimals ("1.67GiB" for
 * 1.675GiB, "0.00B" for 0); fixed units divide the whole byte count once.
 */
void bx_pretty_size(uint64_t bytes, unsigned int units, char *buf, size_t len)
{
	static const char *const binary[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	static const char *const decimal[] = { "B", "kB", "MB", "GB", "TB", "PB", "EB" };
	const char *const *names = (units & BX_UNITS_DECIMAL) ? decimal : binary;
	uint64_t step = (units & BX_UNITS_DECIMAL) ? 1000 : 1024;
	unsigned int fixed = units & 0xff;
	uint64_t divisor = 1, last = bytes;
	int exp = 0;

	if (fixed == BX_UNITS_RAW) {
		snprintf(buf, len, "%" PRIu64, bytes);
		return;
	}
	if (fixed) {
		for (exp = 0; exp < (int)fixed - 1; exp++)
			divisor *= step;
	} else {
		for (uint64_t rest = bytes; rest >= step; rest /= step) {
			last = rest;
			exp++;
		}
		if (exp)
			divisor = step;
	}
	snprintf(buf, len, "%.2f%s", (double)((float)last / (float)divisor), names[exp]);
}

/* The shift of a binary suffix (K, M, G, T, P, E, alone or with "iB"), 0 for none. */
static int suffix_shift(const char *suffix, unsigned int *shift)
{
	static const char letters[] = "KMGTPE";
	const char *pos;

	*shift = 0;
	if (!*suffix)
		return 0;
	pos = strchr(letters, toupper((unsigned char)suffix[0]));
	if (!pos || (suffix[1] && strcasecmp(suffix + 1, "iB")))
		return -EINVAL;
	*shift = 10 * (unsigned int)(pos - letters + 1);
	return 0;
}

/* The power of 1000 an SI suffix stands for ("kB", "MB" ... "EB", any case); 0 for none. */
static unsigned int si_power(const char *suffix)
{
	static const char letters[] = "KMGTPE";
	const char *pos;

	if (!suffix[0] || tolower((unsigned char)suffix[1]) != 'b' || suffix[2])
		return 0;
	pos = strchr(letters, toupper((unsigned char)suffix[0]));
	return pos ? (unsigned int)(pos - letters + 1) : 0;
}

/*
 * Sizes are binary, as in btrfs-progs, which refuses an SI suffix
 * ("mkfs.btrfs -b 1GB"): read as binary, "4TB" would be 10 % more than a
 * 4 TB disk holds. The message says what to write instead.
 */
static int refuse_si(const char *str, unsigned long long whole, const char *suffix,
		     unsigned int power)
{
	unsigned long long bytes = whole;
	char decimal[64] = "";
	bool fits = true;

	for (unsigned int i = 0; i < power && fits; i++) {
		fits = bytes <= ULLONG_MAX / 1000;
		bytes *= 1000;
	}
	if (fits)
		snprintf(decimal, sizeof(decimal), "%llu (bytes) for %llu %s, or ", bytes, whole,
			 suffix);
	return bx_error(-EINVAL, "'%s' is not a size btrfsx takes: %s is a decimal (SI) suffix, "
			"refused as btrfs-progs refuses it; write %s%llu%ciB for %llu %ciB",
			str, suffix, decimal, whole, toupper((unsigned char)suffix[0]), whole,
			toupper((unsigned char)suffix[0]));
}

int bx_parse_size(const char *str, uint64_t *bytes)
{
	unsigned int shift, power;
	char *end;
	unsigned long long whole;

	if (!str || !isdigit((unsigned char)str[0]))
		return bx_error(-EINVAL, "'%s' is not a size (bytes, or with a binary suffix K, M, "
				"G, T, P or E: 512M, 4TiB)", str ? str : "");
	errno = 0;
	whole = strtoull(str, &end, 10);
	power = si_power(end);
	if (power)
		return refuse_si(str, whole, end, power);
	if (suffix_shift(end, &shift))
		return bx_error(-EINVAL, "'%s' is not a size (bytes, or with a binary suffix K, M, "
				"G, T, P or E: 512M, 4TiB)", str);
	if (errno || (shift && whole > (UINT64_MAX >> shift)))
		return bx_error(-ERANGE, "'%s' is not a size that fits in 64 bits", str);
	*bytes = (uint64_t)whole << shift;
	return 0;
}

int bx_parse_u64(const char *str, uint64_t *value)
{
	char *end;
	unsigned long long v;

	if (!str || !isdigit((unsigned char)str[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(str, &end, 0);
	if (errno)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*value = v;
	return 0;
}

int bx_parse_duration(const char *str, int64_t *seconds)
{
	static const struct { char unit; int64_t seconds; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 7 * 86400 },
	};
	const int64_t max = 100LL * 366 * 86400;
	int64_t scale = 0;
	char *end;
	unsigned long long v;

	if (!str || !isdigit((unsigned char)str[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(str, &end, 10);
	if (errno)
		return -ERANGE;
	if (!*end)
		scale = 1;
	for (size_t i = 0; !scale && i < sizeof(units) / sizeof(units[0]); i++)
		if (end[0] == units[i].unit && !end[1])
			scale = units[i].seconds;
	if (!scale || !v)
		return -EINVAL;
	if (v > (unsigned long long)(max / scale))
		return -ERANGE;
	*seconds = (int64_t)v * scale;
	return 0;
}

void bx_format_duration(int64_t seconds, char *buf, size_t len)
{
	static const struct { char unit; uint64_t seconds; } units[] = {
		{ 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 },
	};
	const size_t nr = sizeof(units) / sizeof(units[0]);
	uint64_t left = seconds < 0 ? -(uint64_t)seconds : (uint64_t)seconds;
	const char *sign = seconds < 0 ? "-" : "";
	size_t i = 0;
	uint64_t rest;

	while (i < nr - 1 && left < units[i].seconds)
		i++;
	rest = (left % units[i].seconds) / (i < nr - 1 ? units[i + 1].seconds : 1);
	if (i < nr - 1 && rest)
		snprintf(buf, len, "%s%llu%c %llu%c", sign,
			 (unsigned long long)(left / units[i].seconds), units[i].unit,
			 (unsigned long long)rest, units[i + 1].unit);
	else
		snprintf(buf, len, "%s%llu%c", sign, (unsigned long long)(left / units[i].seconds),
			 units[i].unit);
}
