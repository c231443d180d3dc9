/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Changes of a plan as the command line (and the library's callers) spell
 * them: parsing with messages that say what is wrong, and descriptions.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/units.h"
#include "format/ctree.h"
#include "format/hints.h"
#include "format/profiles.h"
#include "plan/plan.h"

static const char *const op_names[] = {
	[BX_PLAN_ADD] = "add",
	[BX_PLAN_REMOVE] = "remove",
	[BX_PLAN_RESIZE] = "resize",
	[BX_PLAN_HINT] = "hint",
	[BX_PLAN_CONVERT] = "convert",
	[BX_PLAN_REPLACE] = "replace",
	[BX_PLAN_RELOCATE] = "relocate",
	[BX_PLAN_BALANCE] = "balance",
	[BX_PLAN_RESUME] = "resume",
};

const char *bx_plan_op_name(enum bx_plan_op op)
{
	return (size_t)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

static int parse_devid(const char *op, const char *str, uint64_t *devid)
{
	if (bx_parse_u64(str, devid) || !*devid)
		return bx_error(-EINVAL, "--%s: '%s' is not a devid (a number from 1)", op, str);
	return 0;
}

static int parse_size(const char *op, const char *str, uint64_t *size)
{
	int ret = bx_parse_size(str, size);

	return ret ? bx_error_wrap(ret, "--%s", op) : 0;
}

/* A hint by name or by its value (0 .. 4). */
static int parse_hint(const char *op, const char *str, uint64_t *hint)
{
	int ret = bx_hint_parse(str, true, hint);

	if (ret)
		return bx_error_wrap(ret, "--%s", op);
	if (*hint > BX_HINT_MAX_KNOWN)
		return bx_error(-EINVAL, "--%s: hint value %s has no meaning to the kernels (0 .. 4)",
				op, str);
	return 0;
}

/* "SIZE[:HINT]" */
static int parse_size_hint(const char *op, const char *str, struct bx_plan_change *c)
{
	char size[64];
	const char *colon = strchr(str, ':');
	size_t len = colon ? (size_t)(colon - str) : strlen(str);
	int ret;

	if (len >= sizeof(size))
		return bx_error(-EINVAL, "--%s: '%s' is not SIZE[:HINT]", op, str);
	memcpy(size, str, len);
	size[len] = '\0';
	ret = parse_size(op, size, &c->size);
	if (ret || !colon)
		return ret;
	ret = parse_hint(op, colon + 1, &c->hint);
	if (ret)
		return ret;
	c->has_hint = true;
	return 0;
}

/*
 * Splits "LEFT=RIGHT" into @left (at most @len bytes) and the right side; an
 * empty side is left to its parser to refuse by name.
 */
static int split(const char *op, const char *str, const char *form, char *left, size_t len,
		 const char **right)
{
	const char *eq = strchr(str, '=');

	if (!eq || (size_t)(eq - str) >= len)
		return bx_error(-EINVAL, "--%s: '%s' is not %s", op, str, form);
	memcpy(left, str, (size_t)(eq - str));
	left[eq - str] = '\0';
	*right = eq + 1;
	return 0;
}

static int parse_convert(const char *str, struct bx_plan_change *c)
{
	char kind[32];
	const char *profile;
	int ret = split("convert", str, "data=PROFILE or metadata=PROFILE", kind, sizeof(kind),
			&profile);

	if (ret)
		return ret;
	if (!strcmp(kind, "data"))
		c->type = BTRFS_BLOCK_GROUP_DATA;
	else if (!strcmp(kind, "metadata"))
		c->type = BTRFS_BLOCK_GROUP_METADATA;
	else
		return bx_error(-EINVAL, "--convert: '%s' is neither data nor metadata (metadata "
				"converts system chunks too)", kind);
	ret = bx_profile_parse(profile, &c->profile);
	return ret ? bx_error_wrap(ret, "--convert") : 0;
}

/* A percent of a chunk's size: 0 .. 100. */
static int parse_percent(const char *str, size_t len, uint8_t *pct)
{
	char num[8];
	uint64_t v;

	if (!len || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, str, len);
	num[len] = '\0';
	if (bx_parse_u64(num, &v) || v > 100)
		return -EINVAL;
	*pct = (uint8_t)v;
	return 0;
}

/*
 * "N" (0 .. N) or "MIN..MAX", percent, as btrfs balance takes them. For a
 * range btrfs-progs sets the single-value filter too, with MIN as its value:
 * the kernel asks that one first, and from 0 it takes only the empty
 * chunks. So "0..MAX" is what the kernel makes of it: "0".
 */
static int parse_usage(const char *item, const char *str, uint8_t *min, uint8_t *max)
{
	const char *dots = strstr(str, "..");
	int ret;

	*min = 0;
	if (dots)
		ret = parse_percent(str, (size_t)(dots - str), min) ||
		      parse_percent(dots + 2, strlen(dots + 2), max) || *min > *max ? -EINVAL : 0;
	else
		ret = parse_percent(str, strlen(str), max);
	if (ret)
		return bx_error(-EINVAL, "--balance: the usage '%s' of '%s' is neither a percent "
				"(0 .. 100) nor MIN..MAX (MIN at most MAX)", str, item);
	if (dots && !*min)
		*max = 0;
	return 0;
}

/* One filter of --balance: [-]dusage=U or [-]musage=U. */
static int parse_balance_item(const char *item, struct bx_plan_change *c)
{
	const char *name = item[0] == '-' ? item + 1 : item;
	bool data = !strncmp(name, "dusage=", 7);
	uint64_t kind = data ? BTRFS_BLOCK_GROUP_DATA : BTRFS_BLOCK_GROUP_METADATA;

	if (!data && strncmp(name, "musage=", 7))
		return bx_error(-EINVAL, "--balance: '%s' is not a filter (dusage=U or musage=U, U "
				"a percent or MIN..MAX: dusage=50,musage=30)", item);
	if (c->type & kind)
		return bx_error(-EINVAL, "--balance: %s is filtered twice",
				data ? "data" : "metadata");
	c->type |= kind;
	return data ? parse_usage(item, name + 7, &c->data_usage_min, &c->data_usage_max) :
		      parse_usage(item, name + 7, &c->metadata_usage_min, &c->metadata_usage_max);
}

/* "dusage=50,musage=10..30": the kinds balanced and their usage ranges. */
static int parse_balance(const char *value, struct bx_plan_change *c)
{
	char item[64];
	const char *p = value;

	for (;;) {
		size_t len = strcspn(p, ",");
		int ret;

		if (len >= sizeof(item))
			return bx_error(-EINVAL, "--balance: '%.*s' is not a filter", (int)len, p);
		memcpy(item, p, len);
		item[len] = '\0';
		ret = parse_balance_item(item, c);
		if (ret)
			return ret;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

static int parse_value(const char *op, const char *value, struct bx_plan_change *c)
{
	char devid[32];
	const char *right;
	int ret;

	switch (c->op) {
	case BX_PLAN_ADD:
		return parse_size_hint(op, value, c);
	case BX_PLAN_REMOVE:
		return parse_devid(op, value, &c->devid);
	case BX_PLAN_RESIZE:
		ret = split(op, value, "DEVID=SIZE or DEVID=max", devid, sizeof(devid), &right);
		if (!ret)
			ret = parse_devid(op, devid, &c->devid);
		if (!ret && !strcmp(right, "max")) {
			c->size = BX_PLAN_SIZE_MAX;
			return 0;
		}
		return ret ? ret : parse_size(op, right, &c->size);
	case BX_PLAN_HINT:
		ret = split(op, value, "DEVID=HINT", devid, sizeof(devid), &right);
		if (!ret)
			ret = parse_devid(op, devid, &c->devid);
		return ret ? ret : parse_hint(op, right, &c->hint);
	case BX_PLAN_CONVERT:
		return parse_convert(value, c);
	case BX_PLAN_REPLACE:
		ret = split(op, value, "DEVID=SIZE[:HINT]", devid, sizeof(devid), &right);
		if (!ret)
			ret = parse_devid(op, devid, &c->devid);
		return ret ? ret : parse_size_hint(op, right, c);
	case BX_PLAN_BALANCE:
		return parse_balance(value, c);
	default:
		return 0;
	}
}

int bx_plan_parse_change(const char *op, const char *value, struct bx_plan_change *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (op && !strcmp(op, op_names[i]))
			break;
	if (i == sizeof(op_names) / sizeof(op_names[0]))
		return bx_error(-EINVAL, "unknown change '%s' (add, remove, resize, hint, convert, "
				"replace, relocate, balance, resume)", op ? op : "");
	c->op = (enum bx_plan_op)i;
	if (c->op == BX_PLAN_RELOCATE || c->op == BX_PLAN_RESUME) {
		if (value)
			return bx_error(-EINVAL, "--%s takes no value", op);
		return 0;
	}
	if (!value || !*value)
		return bx_error(-EINVAL, "--%s: the value is empty ('')", op);
	return parse_value(op, value, c);
}

/* "data chunks below 50 % used", "metadata and system chunks 10 % to 30 % used" */
static size_t describe_usage(char *buf, size_t len, const char *kind, unsigned int min,
			     unsigned int max)
{
	if (!max)
		return (size_t)snprintf(buf, len, "the empty %s chunks", kind);
	if (!min)
		return (size_t)snprintf(buf, len, "%s chunks below %u %% used", kind, max);
	return (size_t)snprintf(buf, len, "%s chunks %u %% to %u %% used", kind, min, max);
}

static void describe_balance(const struct bx_plan_change *c, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "balance ");

	if ((c->type & BTRFS_BLOCK_GROUP_DATA) && used < len)
		used += describe_usage(buf + used, len - used, "data", c->data_usage_min,
				       c->data_usage_max);
	if ((c->type & BTRFS_BLOCK_GROUP_DATA) && (c->type & BTRFS_BLOCK_GROUP_METADATA) &&
	    used < len)
		used += (size_t)snprintf(buf + used, len - used, " and ");
	if ((c->type & BTRFS_BLOCK_GROUP_METADATA) && used < len)
		describe_usage(buf + used, len - used, "metadata and system", c->metadata_usage_min,
			       c->metadata_usage_max);
}

void bx_plan_describe_change(const struct bx_plan_change *c, char *buf, size_t len)
{
	char size[32], hint[48] = "";

	bx_pretty_size(c->size, 0, size, sizeof(size));
	if (c->has_hint || c->op == BX_PLAN_HINT)
		bx_hint_describe(c->hint, hint, sizeof(hint));
	switch (c->op) {
	case BX_PLAN_ADD:
		snprintf(buf, len, "add a %s device%s%s", size, *hint ? " as " : "", hint);
		break;
	case BX_PLAN_REMOVE:
		snprintf(buf, len, "remove devid %llu", (unsigned long long)c->devid);
		break;
	case BX_PLAN_RESIZE:
		snprintf(buf, len, "resize devid %llu to %s", (unsigned long long)c->devid,
			 c->size == BX_PLAN_SIZE_MAX ? "its device's size (max)" : size);
		break;
	case BX_PLAN_HINT:
		snprintf(buf, len, "set devid %llu to %s", (unsigned long long)c->devid, hint);
		break;
	case BX_PLAN_CONVERT:
		snprintf(buf, len, "convert %s to %s",
			 c->type & BTRFS_BLOCK_GROUP_DATA ? "data" : "metadata and system",
			 bx_profile_name(c->profile));
		break;
	case BX_PLAN_REPLACE:
		snprintf(buf, len, "replace devid %llu by a %s device%s%s",
			 (unsigned long long)c->devid, size, *hint ? " as " : "", hint);
		break;
	case BX_PLAN_RELOCATE:
		snprintf(buf, len, "relocate the misplaced chunks");
		break;
	case BX_PLAN_BALANCE:
		describe_balance(c, buf, len);
		break;
	case BX_PLAN_RESUME:
		snprintf(buf, len, "resume the balance to its end");
		break;
	}
}
