/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmds/suggest.h"

/* Words longer than this are never what a short one was meant to be. */
#define MAX_WORD 64

static unsigned int min3(unsigned int a, unsigned int b, unsigned int c)
{
	unsigned int m = a < b ? a : b;

	return m < c ? m : c;
}

unsigned int bx_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	/* Three rows of the table: two back for a swap, the last, this one. */
	unsigned int rows[3][MAX_WORD + 1];
	unsigned int *back2 = rows[0], *back = rows[1], *row = rows[2];

	if (la > MAX_WORD || lb > MAX_WORD)
		return (unsigned int)(la > lb ? la : lb);
	for (size_t j = 0; j <= lb; j++)
		back[j] = (unsigned int)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned int *spare = back2;

		row[0] = (unsigned int)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned int cost = a[i - 1] != b[j - 1];

			row[j] = min3(back[j] + 1, row[j - 1] + 1, back[j - 1] + cost);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    back2[j - 2] + 1 < row[j])
				row[j] = back2[j - 2] + 1;
		}
		back2 = back;
		back = row;
		row = spare;
	}
	return back[lb];
}

const char *bx_suggest(const char *typed, const char *const *words, size_t nr)
{
	const char *best = NULL;
	unsigned int best_distance = 0;
	bool tie = false;

	for (size_t i = 0; i < nr; i++) {
		size_t longer;
		unsigned int d, allowed;

		if (!words[i])
			continue;
		longer = strlen(typed) > strlen(words[i]) ? strlen(typed) : strlen(words[i]);
		allowed = (unsigned int)(longer / 3);
		allowed = allowed < 1 ? 1 : allowed > 3 ? 3 : allowed;
		d = bx_edit_distance(typed, words[i]);
		if (d > allowed || (best && d > best_distance))
			continue;
		tie = best && d == best_distance && strcmp(best, words[i]);
		if (!best || d < best_distance) {
			best = words[i];
			best_distance = d;
			tie = false;
		}
	}
	return tie ? NULL : best;
}

const char *bx_did_you_mean(const char *typed, const char *const *words, size_t nr,
			    const char *prefix, char *buf, size_t len)
{
	const char *best = bx_suggest(typed, words, nr);

	if (!best)
		return "";
	snprintf(buf, len, "; did you mean '%s%s'?", prefix, best);
	return buf;
}
