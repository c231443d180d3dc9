/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The allocation hint codec: names, spellings, the bits it may touch. */
#include <string.h>

#include "common/error.h"
#include "format/hints.h"
#include "tests/unit/unit.h"

static uint64_t parsed(const char *str, bool allow_number)
{
	uint64_t value = 99;

	return bx_hint_parse(str, allow_number, &value) ? 99 : value;
}

int main(void)
{
	CHECK_EQ_U64(parsed("data_preferred", false), 0);
	CHECK_EQ_U64(parsed("METADATA_PREFERRED", false), 1);
	CHECK_EQ_U64(parsed("Metadata_Only", false), 2);
	CHECK_EQ_U64(parsed("DATA_ONLY", false), 3);
	CHECK_EQ_U64(parsed("none", false), 4);
	CHECK_EQ_U64(parsed("d", false), 0);
	CHECK_EQ_U64(parsed("m", false), 1);
	CHECK_EQ_U64(parsed("monly", false), 2);
	CHECK_EQ_U64(parsed("DONLY", false), 3);
	CHECK_EQ_U64(parsed("2", false), 99);
	CHECK_EQ_U64(parsed("2", true), 2);
	CHECK_EQ_U64(parsed("0x7", true), 7);
	CHECK_EQ_U64(parsed("8", true), 99);
	CHECK_EQ_U64(parsed("-1", true), 99);
	CHECK_EQ_U64(parsed("", true), 99);
	CHECK(strstr(bx_error_message(-22), "metadata_only") != NULL);

	/* Only the 3-bit field changes. */
	CHECK_EQ_U64(bx_type_with_hint(0x100, 2), 0x102);
	CHECK_EQ_U64(bx_type_with_hint(0xfffffffffffffff8ULL | 3, 1), 0xfffffffffffffff9ULL);
	CHECK_EQ_U64(bx_hint_of_type(0x105), 5);
	CHECK(bx_hint_name(5) == NULL);
	CHECK(!strcmp(bx_hint_name(3), "data_only"));

	CHECK(bx_type_is_device_roles(20) && bx_type_is_device_roles(120));
	CHECK(!bx_type_is_device_roles(2) && !bx_type_is_device_roles(0x104));
	CHECK(!bx_hint_allows_data(2) && bx_hint_allows_metadata(2));
	CHECK(bx_hint_allows_data(3) && !bx_hint_allows_metadata(3));
	CHECK(bx_hint_allows_data(4) && bx_hint_allows_metadata(4));
	return unit_summary();
}
