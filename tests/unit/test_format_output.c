/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The output formatter: the same calls render text and JSON; "key=label"
 * names a field differently in each; JSON_ONLY / TEXT_ONLY; escaping; lists;
 * nesting deeper than it keeps is left out and reported; the aligned tables
 * (cmds/table.h) in text and nowhere in JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/format-output.h"
#include "cmds/table.h"
#include "common/units.h"
#include "tests/unit/unit.h"

#define CHECK_STR(got, want)                                                         \
	do {                                                                         \
		if (!strcmp((got), (want))) {                                        \
			unit_passed++;                                               \
		} else {                                                             \
			unit_failed++;                                               \
			fprintf(stderr, "%s:%d: got\n%s\nwant\n%s\n", __FILE__,      \
				__LINE__, (got), (want));                            \
		}                                                                    \
	} while (0)

typedef void (*render_fn)(struct bx_out *out);

static char *render(enum bx_format format, render_fn fn, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	struct bx_out *out = bx_out_new(format, fp);

	fn(out);
	*ret = bx_out_finish(out);
	fclose(fp);
	return buf;
}

static void device_list(struct bx_out *out)
{
	bx_out_str(out, "label", "tank \"x\"\n", BX_F_JSON_ONLY);
	bx_out_list_begin(out, "devices");
	for (int i = 1; i <= 2; i++) {
		bx_out_obj_begin(out, NULL, BX_OBJ_INLINE, NULL);
		bx_out_u64(out, "devid", (uint64_t)i, 0);
		bx_out_size(out, "size", 1536ull << 20, 0, 0);
		bx_out_str(out, "device=path", i == 1 ? "/dev/sda" : NULL, 0);
		bx_out_bool(out, "missing", i == 2, BX_F_JSON_ONLY);
		bx_out_obj_end(out);
	}
	bx_out_list_end(out);
	bx_out_obj_begin(out, "overall", BX_OBJ_LINES, "Overall:");
	bx_out_size(out, "device_size=Device size:", 1000, BX_UNITS_RAW, 0);
	bx_out_double(out, "ratio", 2.0, 2, BX_F_TEXT_ONLY);
	bx_out_obj_end(out);
}

static void too_deep(struct bx_out *out)
{
	for (int i = 0; i < 40; i++)
		bx_out_obj_begin(out, "o", BX_OBJ_LINES, NULL);
	bx_out_u64(out, "deep", 1, 0);
	for (int i = 0; i < 40; i++)
		bx_out_obj_end(out);
	bx_out_u64(out, "after", 2, 0);
}

/* Two header rows, a rule, a blank cell, a "-" for 0, a long path, the footer. */
static int table_ret;

static void small_table(struct bx_out *out)
{
	struct bx_table *t = bx_table_new(4);

	bx_out_u64(out, "devices", 2, BX_F_JSON_ONLY);
	bx_table_header(t, (const char *const[]){ NULL, NULL, "Data" }, 3);
	bx_table_header(t, (const char *const[]){ "Id", "Path", "single", "Total" }, 4);
	bx_table_rule(t);
	bx_table_row(t);
	bx_table_cellf(t, 0, BX_ALIGN_RIGHT, "%d", 1);
	bx_table_cell(t, 1, BX_ALIGN_LEFT, "/dev/a-rather-long-path");
	bx_table_size(t, 2, 0, BX_UNITS_RAW, true);
	bx_table_size(t, 3, 1536ull << 20, 0, false);
	bx_table_row(t);
	bx_table_cellf(t, 0, BX_ALIGN_RIGHT, "%d", 12);
	bx_table_cell(t, 1, BX_ALIGN_LEFT, "/dev/b");
	bx_table_size(t, 2, 4096, BX_UNITS_RAW, true);
	bx_table_rule(t);
	bx_table_row(t);
	bx_table_cell(t, 1, BX_ALIGN_LEFT, "Total");
	bx_table_cell(t, 99, BX_ALIGN_LEFT, "out of range: ignored");
	table_ret = bx_table_print(out, t);
}

int main(void)
{
	char *text, *json;
	int ret;

	json = render(BX_FORMAT_JSON, device_list, &ret);
	CHECK(ret == 0);
	CHECK_STR(json, "{\"__header\":{\"version\":\"" BX_JSON_VERSION "\"},"
		  "\"label\":\"tank \\\"x\\\"\\n\",\"devices\":["
		  "{\"devid\":1,\"size\":1610612736,\"device\":\"/dev/sda\",\"missing\":false},"
		  "{\"devid\":2,\"size\":1610612736,\"device\":null,\"missing\":true}],"
		  "\"overall\":{\"device_size\":1000}}\n");
	text = render(BX_FORMAT_TEXT, device_list, &ret);
	CHECK(ret == 0);
	CHECK_STR(text, "devid 1 size 1.50GiB path /dev/sda\n"
		  "devid 2 size 1.50GiB path -\n"
		  "Overall:\n"
		  "Device size:                 1000\n"
		  "ratio                        2.00\n");
	free(json);
	free(text);

	text = render(BX_FORMAT_TEXT, small_table, &ret);
	CHECK(ret == 0 && table_ret == 0);
	CHECK_STR(text, "                           Data\n"
		  "Id Path                    single Total\n"
		  "-- ----------------------- ------ -------\n"
		  " 1 /dev/a-rather-long-path      - 1.50GiB\n"
		  "12 /dev/b                    4096\n"
		  "-- ----------------------- ------ -------\n"
		  "   Total\n");
	json = render(BX_FORMAT_JSON, small_table, &ret);
	CHECK(ret == 0 && table_ret == 0);
	CHECK_STR(json, "{\"__header\":{\"version\":\"" BX_JSON_VERSION "\"},\"devices\":2}\n");
	free(json);
	free(text);
	CHECK(bx_table_print(NULL, NULL) == -ENOMEM);

	json = render(BX_FORMAT_JSON, too_deep, &ret);
	CHECK(ret == -E2BIG);
	CHECK(strstr(json, "\"deep\"") == NULL);
	CHECK(strstr(json, "}}},\"after\":2}\n") != NULL);
	free(json);
	return unit_summary();
}
