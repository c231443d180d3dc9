/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Aligned text tables in btrfs-progs' layout (filesystem usage -T): each
 * column as wide as its widest cell, one space between columns, header
 * cells left-aligned, numbers right-aligned, rules of dashes under each
 * column, blank cells as spaces, no trailing blanks.
 *
 * A table is text only: bx_table_print() writes it through the formatter,
 * which leaves it out of JSON. A command writes its JSON with the
 * formatter's own calls beside the table (BX_F_JSON_ONLY or a
 * BX_OBJ_JSON_ONLY object), so it never checks the output format.
 *
 * Rows are appended; cells are set in the last row by column. A failed
 * allocation is remembered and reported by bx_table_print(); every call
 * takes a NULL table (what bx_table_new() returns without memory).
 */
#ifndef BTRFSX_TABLE_H
#define BTRFSX_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bx_out;
struct bx_table;

enum bx_align { BX_ALIGN_LEFT, BX_ALIGN_RIGHT };

struct bx_table *bx_table_new(size_t nr_cols);
/* Appends a row of blank cells. */
void bx_table_row(struct bx_table *t);
/* Appends a rule: dashes under every column. */
void bx_table_rule(struct bx_table *t);
/* Appends a row of left-aligned labels, one per column (NULL: blank), @nr of them. */
void bx_table_header(struct bx_table *t, const char *const *labels, size_t nr);
/* Sets a cell of the last row; the text is copied. */
void bx_table_cell(struct bx_table *t, size_t col, enum bx_align align, const char *text);
void bx_table_cellf(struct bx_table *t, size_t col, enum bx_align align, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A size right-aligned in @units (common/units.h); "-" for 0 when @dash_zero. */
void bx_table_size(struct bx_table *t, size_t col, uint64_t bytes, unsigned int units,
		   bool dash_zero);
/*
 * Writes the table (text only, each line indented as a field of the
 * current object) and frees it. Returns 0, or -ENOMEM (message recorded)
 * when a cell could not be stored; nothing is written then.
 */
int bx_table_print(struct bx_out *out, struct bx_table *t);
/* Frees a table without printing it. */
void bx_table_free(struct bx_table *t);

#endif
