/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The maintain policy file (see policy.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/units.h"
#include "maintain/policy.h"

#define MAX_POLICY_FILE (1 << 20)

void bx_maintain_policy_defaults(struct bx_maintain_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->room_auto = true;
	p->room_days = 30;
	p->placement = BX_MAINTAIN_PLACEMENT_ON;
	p->budget = 100;
	p->window_start = p->window_end = -1;
	p->busy_pressure = 40;
	p->busy_device = 75;
}

static int parse_hhmm(const char *s, const char **end, int *minutes)
{
	char *e;
	long h = strtol(s, &e, 10), m;

	if (e == s || !isdigit((unsigned char)*s) || *e != ':' || h < 0 || h > 23)
		return -EINVAL;
	s = e + 1;
	if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
		return -EINVAL;
	m = strtol(s, &e, 10);
	if (e != s + 2 || m > 59)
		return -EINVAL;
	*minutes = (int)(h * 60 + m);
	*end = e;
	return 0;
}

int bx_maintain_parse_window(const char *s, int *start, int *end)
{
	const char *p;

	if (parse_hhmm(s, &p, start) || *p != '-' || parse_hhmm(p + 1, &p, end) || *p ||
	    *start == *end)
		return bx_error(-EINVAL, "'%s' is not a time window (HH:MM-HH:MM, e.g. 01:00-06:00; "
				"start and end differ)", s);
	return 0;
}

bool bx_maintain_in_window(const struct bx_maintain_policy *p, int now)
{
	if (p->window_start < 0)
		return true;
	if (p->window_start < p->window_end)
		return now >= p->window_start && now < p->window_end;
	/* Over midnight: 22:00-06:00. */
	return now >= p->window_start || now < p->window_end;
}

/* A non-negative number (fraction allowed) with nothing after it. */
static int parse_number(const char *s, double max, double *out)
{
	char *e;
	double v;

	errno = 0;
	v = strtod(s, &e);
	if (e == s || *e || errno || !isfinite(v) || v < 0 || v > max || !isdigit((unsigned char)*s))
		return -EINVAL;
	*out = v;
	return 0;
}

/* One "key = value" into @p; -EINVAL with what is wrong in @why. */
static int apply_key(struct bx_maintain_policy *p, const char *key, const char *value,
		     char *why, size_t len)
{
	if (!strcmp(key, "metadata-room")) {
		if (!strcmp(value, "auto")) {
			p->room_auto = true;
			p->room_bytes = 0;
		} else if (!strcmp(value, "none")) {
			p->room_auto = false;
			p->room_bytes = 0;
		} else if (bx_parse_size(value, &p->room_bytes) || !p->room_bytes) {
			snprintf(why, len, "metadata-room: '%s' is not auto, none or a size (e.g. "
				 "2G)", value);
			return -EINVAL;
		} else {
			p->room_auto = false;
		}
	} else if (!strcmp(key, "metadata-room-days")) {
		if (!strcmp(value, "none"))
			p->room_days = 0;
		else if (parse_number(value, 36500, &p->room_days) || p->room_days <= 0) {
			snprintf(why, len, "metadata-room-days: '%s' is not a number of days or none",
				 value);
			return -EINVAL;
		}
	} else if (!strcmp(key, "placement")) {
		if (!strcmp(value, "on"))
			p->placement = BX_MAINTAIN_PLACEMENT_ON;
		else if (!strcmp(value, "off"))
			p->placement = BX_MAINTAIN_PLACEMENT_OFF;
		else if (!strcmp(value, "forbidden-only"))
			p->placement = BX_MAINTAIN_PLACEMENT_FORBIDDEN_ONLY;
		else {
			snprintf(why, len, "placement: '%s' is not on, off or forbidden-only", value);
			return -EINVAL;
		}
	} else if (!strcmp(key, "budget")) {
		if (!strcmp(value, "none"))
			p->budget = 0;
		else if (parse_number(value, 1e6, &p->budget) || p->budget <= 0) {
			snprintf(why, len, "budget: '%s' is not MiB/s (e.g. 50) or none", value);
			return -EINVAL;
		}
	} else if (!strcmp(key, "quiet-hours")) {
		if (!strcmp(value, "always")) {
			p->window_start = p->window_end = -1;
		} else if (bx_maintain_parse_window(value, &p->window_start, &p->window_end)) {
			snprintf(why, len, "quiet-hours: %s", bx_error_message(-EINVAL));
			bx_error_clear();	/* said again with the file and line */
			return -EINVAL;
		}
	} else if (!strcmp(key, "busy-pressure")) {
		if (parse_number(value, 100, &p->busy_pressure)) {
			snprintf(why, len, "busy-pressure: '%s' is not a percentage (0-100)", value);
			return -EINVAL;
		}
	} else if (!strcmp(key, "busy-device")) {
		if (parse_number(value, 100, &p->busy_device) || p->busy_device <= 0) {
			snprintf(why, len, "busy-device: '%s' is not a percentage (1-100)", value);
			return -EINVAL;
		}
	} else {
		snprintf(why, len, "unknown key '%s' (metadata-room, metadata-room-days, placement, "
			 "budget, quiet-hours, busy-pressure, busy-device)", key);
		return -EINVAL;
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Whether section @name is the filesystem's own. */
static bool names_fs(const char *name, const char *mountpoint, const char *fsid)
{
	return (mountpoint && !strcmp(name, mountpoint)) || (fsid && !strcasecmp(name, fsid));
}

/*
 * One pass over the lines: @own false applies [default], true the
 * filesystem's own sections (every line is checked in both).
 */
static int parse_pass(char *copy, const char *name, const char *mountpoint, const char *fsid,
		      bool own, struct bx_maintain_policy *p, bool *found)
{
	struct bx_maintain_policy scratch;
	struct bx_maintain_policy *into = &scratch;
	char *line;
	unsigned int lineno = 0;

	bx_maintain_policy_defaults(&scratch);
	for (char *next = copy; next; ) {
		char why[256], *eq, *hash;

		line = next;
		next = strchr(next, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		line = trim(line);
		if (!*line)
			continue;
		if (*line == '[') {
			char *close = strchr(line, ']');

			if (!close || close[1] || close == line + 1)
				return bx_error(-EINVAL, "%s:%u: '%s' is not a section ([default] or "
						"[<mount point or fsid>])", name, lineno, line);
			*close = '\0';
			line = trim(line + 1);
			if (!strcmp(line, "default"))
				into = own ? &scratch : p;
			else if (names_fs(line, mountpoint, fsid)) {
				into = own ? p : &scratch;
				if (own)
					*found = true;
			} else
				into = &scratch;
			continue;
		}
		eq = strchr(line, '=');
		if (!eq)
			return bx_error(-EINVAL, "%s:%u: '%s' is not 'key = value'", name, lineno, line);
		*eq = '\0';
		if (apply_key(into, trim(line), trim(eq + 1), why, sizeof(why)))
			return bx_error(-EINVAL, "%s:%u: %s", name, lineno, why);
	}
	return 0;
}

int bx_maintain_policy_parse(const char *text, const char *name, const char *mountpoint,
			     const char *fsid, struct bx_maintain_policy *p, bool *found)
{
	int ret = 0;

	*found = false;
	for (int own = 0; !ret && own < 2; own++) {
		char *copy = strdup(text);

		if (!copy)
			return bx_error(-ENOMEM, "out of memory");
		ret = parse_pass(copy, name, mountpoint, fsid, own, p, found);
		free(copy);
	}
	return ret;
}

/*
 * The policy file opened for reading: a regular file only (opened without
 * blocking, so a FIFO or a device named by mistake is refused, not waited
 * on or read forever).
 */
static int open_policy(const char *path, bool required, FILE **fp)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	*fp = NULL;
	if (fd < 0)
		return errno == ENOENT && !required ? 0 : bx_error(-errno, "%s: %m", path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return bx_error(-EINVAL, "%s: not a regular file: not a policy file", path);
	}
	*fp = fdopen(fd, "r");
	if (!*fp) {
		close(fd);
		return bx_error(-ENOMEM, "out of memory");
	}
	return 0;
}

int bx_maintain_policy_load(const char *path, bool required, const char *mountpoint,
			    const char *fsid, struct bx_maintain_policy *p, bool *found)
{
	FILE *fp;
	char *text;
	size_t n;
	int ret;

	*found = false;
	ret = open_policy(path, required, &fp);
	if (ret || !fp)
		return ret;
	text = malloc(MAX_POLICY_FILE + 1);
	if (!text) {
		fclose(fp);
		return bx_error(-ENOMEM, "out of memory");
	}
	n = fread(text, 1, MAX_POLICY_FILE + 1, fp);
	ret = ferror(fp) ? bx_error(-EIO, "%s: cannot read it", path) : 0;
	fclose(fp);
	if (!ret && n > MAX_POLICY_FILE)
		ret = bx_error(-EINVAL, "%s: larger than 1 MiB: not a policy file", path);
	if (!ret && memchr(text, '\0', n))
		ret = bx_error(-EINVAL, "%s: holds a NUL byte: not a policy file", path);
	if (!ret) {
		text[n] = '\0';
		ret = bx_maintain_policy_parse(text, path, mountpoint, fsid, p, found);
	}
	free(text);
	return ret;
}
