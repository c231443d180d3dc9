/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Aligned text tables (see table.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/format-output.h"
#include "cmds/table.h"
#include "common/error.h"
#include "common/units.h"

struct cell {
	char *text;              /* NULL: blank */
	enum bx_align align;
};

struct row {
	bool rule;
	struct cell *cells;      /* nr_cols of them */
};

struct bx_table {
	size_t nr_cols;
	size_t nr_rows, cap_rows;
	struct row *rows;
	bool failed;             /* a cell or row could not be stored */
};

struct bx_table *bx_table_new(size_t nr_cols)
{
	struct bx_table *t = calloc(1, sizeof(*t));

	if (t)
		t->nr_cols = nr_cols;
	return t;
}

void bx_table_free(struct bx_table *t)
{
	if (!t)
		return;
	for (size_t r = 0; r < t->nr_rows; r++) {
		for (size_t c = 0; t->rows[r].cells && c < t->nr_cols; c++)
			free(t->rows[r].cells[c].text);
		free(t->rows[r].cells);
	}
	free(t->rows);
	free(t);
}

static struct row *append_row(struct bx_table *t)
{
	struct row *row;

	if (!t || t->failed)
		return NULL;
	if (t->nr_rows == t->cap_rows) {
		size_t cap = t->cap_rows ? 2 * t->cap_rows : 16;
		struct row *grown = realloc(t->rows, cap * sizeof(*grown));

		if (!grown) {
			t->failed = true;
			return NULL;
		}
		t->rows = grown;
		t->cap_rows = cap;
	}
	row = &t->rows[t->nr_rows];
	*row = (struct row){ .cells = calloc(t->nr_cols ? t->nr_cols : 1, sizeof(*row->cells)) };
	if (!row->cells) {
		t->failed = true;
		return NULL;
	}
	t->nr_rows++;
	return row;
}

void bx_table_row(struct bx_table *t)
{
	append_row(t);
}

void bx_table_rule(struct bx_table *t)
{
	struct row *row = append_row(t);

	if (row)
		row->rule = true;
}

void bx_table_cell(struct bx_table *t, size_t col, enum bx_align align, const char *text)
{
	struct cell *cell;

	if (!t || t->failed || !t->nr_rows || col >= t->nr_cols)
		return;
	cell = &t->rows[t->nr_rows - 1].cells[col];
	free(cell->text);
	cell->text = strdup(text);
	cell->align = align;
	if (!cell->text)
		t->failed = true;
}

void bx_table_cellf(struct bx_table *t, size_t col, enum bx_align align, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	bx_table_cell(t, col, align, buf);
}

void bx_table_header(struct bx_table *t, const char *const *labels, size_t nr)
{
	bx_table_row(t);
	for (size_t c = 0; c < nr; c++)
		if (labels[c])
			bx_table_cell(t, c, BX_ALIGN_LEFT, labels[c]);
}

void bx_table_size(struct bx_table *t, size_t col, uint64_t bytes, unsigned int units,
		   bool dash_zero)
{
	char text[48];

	if (dash_zero && !bytes)
		snprintf(text, sizeof(text), "-");
	else
		bx_pretty_size(bytes, units, text, sizeof(text));
	bx_table_cell(t, col, BX_ALIGN_RIGHT, text);
}

/* Writes row @r into @line (wide enough for every row) without trailing blanks. */
static void render_row(const struct bx_table *t, size_t r, const size_t *width, char *line)
{
	const struct row *row = &t->rows[r];
	char *p = line;

	for (size_t c = 0; c < t->nr_cols; c++) {
		const struct cell *cell = &row->cells[c];
		size_t len = cell->text ? strlen(cell->text) : 0;
		size_t pad = width[c] - len;

		if (c)
			*p++ = ' ';
		if (row->rule) {
			memset(p, '-', width[c]);
			p += width[c];
			continue;
		}
		if (cell->align == BX_ALIGN_RIGHT) {
			memset(p, ' ', pad);
			p += pad;
		}
		memcpy(p, cell->text ? cell->text : "", len);
		p += len;
		if (cell->align == BX_ALIGN_LEFT) {
			memset(p, ' ', pad);
			p += pad;
		}
	}
	while (p > line && p[-1] == ' ')
		p--;
	*p = '\0';
}

int bx_table_print(struct bx_out *out, struct bx_table *t)
{
	size_t *width, line_len = 1;
	char *line;

	if (!t || t->failed) {
		bx_table_free(t);
		return bx_error(-ENOMEM, "out of memory");
	}
	width = calloc(t->nr_cols ? t->nr_cols : 1, sizeof(*width));
	if (!width) {
		bx_table_free(t);
		return bx_error(-ENOMEM, "out of memory");
	}
	for (size_t r = 0; r < t->nr_rows; r++)
		for (size_t c = 0; c < t->nr_cols && !t->rows[r].rule; c++)
			if (t->rows[r].cells[c].text && strlen(t->rows[r].cells[c].text) > width[c])
				width[c] = strlen(t->rows[r].cells[c].text);
	for (size_t c = 0; c < t->nr_cols; c++)
		line_len += width[c] + 1;
	line = malloc(line_len);
	if (!line) {
		free(width);
		bx_table_free(t);
		return bx_error(-ENOMEM, "out of memory");
	}
	for (size_t r = 0; r < t->nr_rows; r++) {
		render_row(t, r, width, line);
		bx_out_text(out, line);
	}
	free(line);
	free(width);
	bx_table_free(t);
	return 0;
}
