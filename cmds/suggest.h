/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * "Did you mean": the word of a set that a mistyped one was meant to be,
 * for unknown commands and long options.
 */
#ifndef BTRFSX_SUGGEST_H
#define BTRFSX_SUGGEST_H

#include <stddef.h>

/*
 * The number of edits that turn @a into @b: a character inserted, deleted
 * or replaced, or two neighbours swapped, one each (the optimal string
 * alignment distance: the typos people make).
 */
unsigned int bx_edit_distance(const char *a, const char *b);

/*
 * The one word of @words (@nr of them; NULL entries are skipped) closest to
 * @typed, when it is close enough to be what was meant: at most a third of
 * the longer word's length away (one edit at least, three at most), and no
 * other word as close. NULL otherwise.
 */
const char *bx_suggest(const char *typed, const char *const *words, size_t nr);

/* "; did you mean '<@prefix><word>'?" for bx_suggest()'s word into @buf, or "" for none. */
const char *bx_did_you_mean(const char *typed, const char *const *words, size_t nr,
			    const char *prefix, char *buf, size_t len);

#endif
