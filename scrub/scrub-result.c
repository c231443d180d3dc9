/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The offline scrub's result and its vocabulary: the counter table, names
 * of what, fault and fix, and the result's release. What the run, the
 * status file, the command line and the library share.
 */
#include <stddef.h>
#include <stdlib.h>

#include "scrub/scrub.h"

/* bx_scrub_counter() reads each as a uint64_t. */
#define COUNTER_IS_U64(type, name, dims) \
	_Static_assert(__builtin_types_compatible_p(type dims, uint64_t), #name " is a uint64_t");
BX_SCRUB_COUNTERS_FIELDS(COUNTER_IS_U64)
#undef COUNTER_IS_U64

#define COUNTER_DESC(type, name, dims) { #name, offsetof(struct bx_scrub_counters, name) },
const struct bx_scrub_counter_desc bx_scrub_counter_table[] = {
	BX_SCRUB_COUNTERS_FIELDS(COUNTER_DESC)
};
#undef COUNTER_DESC
const size_t bx_scrub_nr_counters = sizeof(bx_scrub_counter_table) /
				    sizeof(bx_scrub_counter_table[0]);

void bx_scrub_counters_add(struct bx_scrub_counters *dst, const struct bx_scrub_counters *src)
{
	for (size_t i = 0; i < bx_scrub_nr_counters; i++) {
		uint64_t *d = bx_scrub_counter(dst, i);
		uint64_t s = *bx_scrub_counter((struct bx_scrub_counters *)src, i);

		if (bx_scrub_counter_table[i].offset == offsetof(struct bx_scrub_counters,
								 last_physical))
			*d = s > *d ? s : *d;
		else
			*d += s;
	}
}

const char *bx_scrub_what_str(enum bx_scrub_what what)
{
	switch (what) {
	case BX_SCRUB_DATA:
		return "data";
	case BX_SCRUB_TREE:
		return "tree";
	case BX_SCRUB_SUPER:
		return "super";
	case BX_SCRUB_PARITY:
		return "parity";
	}
	return "unknown";
}

const char *bx_scrub_fault_str(enum bx_scrub_fault fault)
{
	switch (fault) {
	case BX_SCRUB_READ_ERROR:
		return "read";
	case BX_SCRUB_CSUM_ERROR:
		return "csum";
	case BX_SCRUB_VERIFY_ERROR:
		return "verify";
	case BX_SCRUB_SUPER_ERROR:
		return "super";
	case BX_SCRUB_PARITY_ERROR:
		return "parity";
	}
	return "unknown";
}

const char *bx_scrub_fix_str(enum bx_scrub_fix fix)
{
	switch (fix) {
	case BX_SCRUB_CORRECTED:
		return "corrected";
	case BX_SCRUB_CORRECTABLE:
		return "correctable";
	case BX_SCRUB_UNCORRECTABLE:
		return "uncorrectable";
	}
	return "unknown";
}

void bx_scrub_result_free(struct bx_scrub_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->nr_devs; i++)
		free(res->devs[i].path);
	for (size_t i = 0; i < res->nr_files; i++)
		free(res->files[i].path);
	free(res->devs);
	free(res->errors);
	free(res->files);
	free(res);
}

bool bx_scrub_has_uncorrectable(const struct bx_scrub_result *res)
{
	if (res->total.uncorrectable_errors)
		return true;
	for (size_t i = 0; i < res->nr_devs; i++)
		if (res->devs[i].short_bytes)
			return true;
	for (size_t i = 0; i < res->nr_errors; i++)
		if (res->errors[i].fix == BX_SCRUB_UNCORRECTABLE)
			return true;
	return false;
}
