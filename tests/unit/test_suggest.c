/* SPDX-License-Identifier: GPL-2.0-or-later */
/* "Did you mean": the edit distance and the pick (cmds/suggest.c). */
#include <string.h>

#include "cmds/suggest.h"
#include "unit.h"

static void test_distance(void)
{
	CHECK_EQ_U64(bx_edit_distance("plan", "plan"), 0);
	CHECK_EQ_U64(bx_edit_distance("", "plan"), 4);
	CHECK_EQ_U64(bx_edit_distance("filesytem", "filesystem"), 1);	/* a letter left out */
	CHECK_EQ_U64(bx_edit_distance("scurb", "scrub"), 1);		/* two swapped */
	CHECK_EQ_U64(bx_edit_distance("plna", "plan"), 1);
	CHECK_EQ_U64(bx_edit_distance("shwo", "show"), 1);
	CHECK_EQ_U64(bx_edit_distance("dry-rn", "dry-run"), 1);
	CHECK_EQ_U64(bx_edit_distance("kitten", "sitting"), 3);
	CHECK_EQ_U64(bx_edit_distance("ca", "abc"), 3);	/* no edit twice over a swapped pair */
}

static void test_suggest(void)
{
	static const char *const groups[] = { "filesystem", "inspect", "read-policy", "property",
					      "device", "monitor", "scrub", "balance", "mkfs" };
	static const char *const fs[] = { "show", "usage", "misplaced", "plan" };
	static const char *const opts[] = { "dry-run", "forbidden-only", "limit", "max-bytes",
					    "pause", "force", "help", NULL };
	const size_t ng = sizeof(groups) / sizeof(groups[0]);

	CHECK(!strcmp(bx_suggest("filesytem", groups, ng), "filesystem"));
	CHECK(!strcmp(bx_suggest("scurb", groups, ng), "scrub"));
	CHECK(!strcmp(bx_suggest("balnce", groups, ng), "balance"));
	CHECK(!strcmp(bx_suggest("plna", fs, 4), "plan"));
	CHECK(!strcmp(bx_suggest("dry-rn", opts, 8), "dry-run"));
	CHECK(!strcmp(bx_suggest("forse", opts, 8), "force"));
	/* Too far from everything, or as close to two words: no guess. */
	CHECK(bx_suggest("frobnicate", groups, ng) == NULL);
	CHECK(bx_suggest("xyz", fs, 4) == NULL);
	CHECK(bx_suggest("plaw", (const char *const[]){ "plan", "play" }, 2) == NULL);
}

int main(void)
{
	test_distance();
	test_suggest();
	return unit_summary();
}
