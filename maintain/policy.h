/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The maintain policy of a filesystem, from <config_dir>/maintain.conf
 * (/etc/btrfsx/maintain.conf unless the prefix or BTRFSX_CONFIG_DIR says
 * otherwise, as the monitor's). The file holds sections; a section is
 * "[default]" or "[<mount point or fsid>]", then "key = value" lines; "#"
 * starts a comment. A filesystem takes the built-in defaults, then the
 * [default] section, then its own section. Keys:
 *
 *   metadata-room = auto | none | <size>    room wanted (auto: see maintain.h)
 *   metadata-room-days = <days> | none      room for that many days at the pace
 *   placement = on | off | forbidden-only   misplaced chunks to move
 *   budget = <MiB/s> | none                 copy rate at most, on average
 *   quiet-hours = HH:MM-HH:MM | always      when a run may move chunks
 *   busy-pressure = <percent>               I/O pressure that pauses a run
 *   busy-device = <percent>                 a member device's busy time that pauses
 *
 * An unknown key, a bad value, a line that is neither: -EINVAL with the
 * file, the line and what is wrong.
 */
#ifndef BTRFSX_MAINTAIN_POLICY_H
#define BTRFSX_MAINTAIN_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define BX_MAINTAIN_CONF "maintain.conf"

enum bx_maintain_placement {
	BX_MAINTAIN_PLACEMENT_ON,
	BX_MAINTAIN_PLACEMENT_OFF,
	BX_MAINTAIN_PLACEMENT_FORBIDDEN_ONLY,
};

struct bx_maintain_policy {
	bool room_auto;			/* default: true */
	uint64_t room_bytes;		/* 0: none (default) */
	double room_days;		/* 0: none; default 30 (used only with a pace) */
	enum bx_maintain_placement placement;	/* default: on */
	double budget;			/* MiB/s; 0: none; default 100 */
	int window_start;		/* minutes after midnight; -1: always (default) */
	int window_end;
	double busy_pressure;		/* percent of a second stalled; default 40; 0: no pause */
	double busy_device;		/* percent of a second a member is busy; default 75 */
};

/* The built-in defaults. */
void bx_maintain_policy_defaults(struct bx_maintain_policy *p);

/*
 * Applies the sections of @text (@name names it in messages) that hold for
 * a filesystem mounted at @mountpoint with fsid @fsid (text): [default],
 * then its own. *@found: whether a section named it. Returns 0 or -EINVAL
 * with the message (every section is checked, also the others').
 */
int bx_maintain_policy_parse(const char *text, const char *name, const char *mountpoint,
			     const char *fsid, struct bx_maintain_policy *p, bool *found);

/*
 * bx_maintain_policy_parse() of the file @path; no file at @path leaves
 * @p as it is (unless @required). Returns 0 or a negative errno.
 */
int bx_maintain_policy_load(const char *path, bool required, const char *mountpoint,
			    const char *fsid, struct bx_maintain_policy *p, bool *found);

/* "HH:MM-HH:MM" into minutes after midnight; -EINVAL with the message. */
int bx_maintain_parse_window(const char *s, int *start, int *end);

/* Whether minute @now of the day is inside the window (always with start -1). */
bool bx_maintain_in_window(const struct bx_maintain_policy *p, int now);

#endif
