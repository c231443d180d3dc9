/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one output formatter. Commands describe what they print as nested
 * objects and lists of keyed fields; text and JSON are both rendered from
 * those calls, so a command never writes JSON by hand or checks the format.
 *
 * JSON is streamed (memory stays bounded for huge tree dumps) as one object
 * per invocation with a version header: {"__header": {"version": "1"}, ...}.
 *
 * Text: an object opens a new line indented by its depth. BX_OBJ_INLINE puts
 * its fields on that line as "name value"; BX_OBJ_LINES puts each field on a
 * line of its own, name padded into a column.
 *
 * A key names the field in both forms. Where text wants another label than
 * the JSON key, write "json_key=text label": one call, both forms, no
 * BX_F_JSON_ONLY / BX_F_TEXT_ONLY pair. JSON keys follow the scheme in
 * Documentation/dev/json.md.
 */
#ifndef BTRFSX_FORMAT_OUTPUT_H
#define BTRFSX_FORMAT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define BX_JSON_VERSION "2"

enum bx_format { BX_FORMAT_TEXT, BX_FORMAT_JSON };

/* BX_OBJ_JSON_ONLY: the object and everything in it are left out of text. */
enum bx_obj_style { BX_OBJ_LINES, BX_OBJ_INLINE, BX_OBJ_JSON_ONLY };

/* Field flags. */
#define BX_F_JSON_ONLY (1u << 0)   /* left out of text */
#define BX_F_TEXT_ONLY (1u << 1)   /* left out of JSON */
#define BX_F_HEX (1u << 2)         /* text shows 0x...; JSON keeps the number */
#define BX_F_NO_NAME (1u << 3)     /* text shows the value without its name */

struct bx_out;

struct bx_out *bx_out_new(enum bx_format format, FILE *fp);
/*
 * Closes every open level, ends the JSON document, frees @out. Returns 0, or
 * -E2BIG when objects nested deeper than the formatter keeps were left out.
 */
int bx_out_finish(struct bx_out *out);
enum bx_format bx_out_format(const struct bx_out *out);

/* @key is NULL inside lists. Text shows @heading (if not NULL) before the fields. */
void bx_out_obj_begin(struct bx_out *out, const char *key, enum bx_obj_style style,
		      const char *heading);
void bx_out_obj_end(struct bx_out *out);
void bx_out_list_begin(struct bx_out *out, const char *key);
void bx_out_list_end(struct bx_out *out);

/*
 * Decimal digits of @value, written backwards from the end of @buf (21
 * bytes hold any); returns where they start. Dumps print millions of
 * numbers: this skips printf's format parsing.
 */
char *bx_u64_decimal(uint64_t value, char *buf, size_t len);
void bx_out_u64(struct bx_out *out, const char *key, uint64_t value, unsigned int flags);
void bx_out_s64(struct bx_out *out, const char *key, int64_t value, unsigned int flags);
void bx_out_str(struct bx_out *out, const char *key, const char *value, unsigned int flags);
void bx_out_bool(struct bx_out *out, const char *key, bool value, unsigned int flags);
void bx_out_uuid(struct bx_out *out, const char *key, const uint8_t uuid[16], unsigned int flags);
/* Bytes as lowercase hex, e.g. a checksum. */
void bx_out_hexbytes(struct bx_out *out, const char *key, const uint8_t *bytes, size_t len,
		     unsigned int flags);
/* A size: text in the chosen units, JSON always in bytes. */
void bx_out_size(struct bx_out *out, const char *key, uint64_t bytes, unsigned int units,
		 unsigned int flags);
/* A fraction, e.g. a percentage: @decimals digits after the point in text and JSON. */
void bx_out_double(struct bx_out *out, const char *key, double value, int decimals,
		   unsigned int flags);
/* Text only: ends the current line; the object's next fields go on a line indented deeper. */
void bx_out_text_break(struct bx_out *out);
/* Text only: free-form words on the current line (e.g. "key (256 INODE_ITEM 0)"). */
void bx_out_textf(struct bx_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text only: bx_out_textf's "%s" for text of any length (a table's line, cmds/table.h). */
void bx_out_text(struct bx_out *out, const char *text);

#endif
