/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "cmds/format-output.h"
#include "common/units.h"

#define MAX_DEPTH 32
#define TEXT_NAME_WIDTH 28

struct level {
	bool is_list;
	bool has_items;          /* JSON: a comma is needed before the next member */
	enum bx_obj_style style;
	bool line_open;          /* text: something was printed on the object's line */
	int extra_indent;        /* text: lines after a bx_out_text_break */
};

struct bx_out {
	enum bx_format format;
	FILE *fp;
	int depth;
	int overflow;            /* levels opened beyond MAX_DEPTH: left out, counted to close */
	bool overflow_seen;      /* ... which bx_out_finish reports */
	struct level levels[MAX_DEPTH];
};

enum bx_format bx_out_format(const struct bx_out *out)
{
	return out->format;
}

static struct level *top(struct bx_out *out)
{
	return &out->levels[out->depth];
}

/* A key's JSON name: the part before '=' of "json_key=text label". */
static size_t json_key_len(const char *key)
{
	return strcspn(key, "=");
}

/* A key's text label: the part after '=', or the whole key. */
static const char *text_label(const char *key)
{
	const char *eq = key ? strchr(key, '=') : NULL;

	return eq ? eq + 1 : key;
}

/* A JSON string literal of @len bytes; bytes >= 0x80 pass through as json-c would. */
static void json_string_len(FILE *fp, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	fputc_unlocked('"', fp);
	for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + len;
	     p++) {
		switch (*p) {
		case '"':
			fputs_unlocked("\\\"", fp);
			break;
		case '\\':
			fputs_unlocked("\\\\", fp);
			break;
		case '\n':
			fputs_unlocked("\\n", fp);
			break;
		case '\t':
			fputs_unlocked("\\t", fp);
			break;
		case '\r':
			fputs_unlocked("\\r", fp);
			break;
		default:
			if (*p < 0x20) {
				fputs_unlocked("\\u00", fp);
				fputc_unlocked(hex[*p >> 4], fp);
				fputc_unlocked(hex[*p & 15], fp);
			} else {
				fputc_unlocked(*p, fp);
			}
		}
	}
	fputc_unlocked('"', fp);
}

static void json_string(FILE *fp, const char *s)
{
	json_string_len(fp, s, strlen(s));
}

/* JSON: the separator and "key": before a member. */
static void json_member(struct bx_out *out, const char *key)
{
	struct level *lvl = top(out);

	if (lvl->has_items)
		fputc(',', out->fp);
	lvl->has_items = true;
	if (key && !lvl->is_list) {
		json_string_len(out->fp, key, json_key_len(key));
		fputc(':', out->fp);
	}
}

static void text_indent(struct bx_out *out, int depth)
{
	for (int i = 0; i < depth; i++)
		fputc('\t', out->fp);
}

static void text_close_line(struct bx_out *out)
{
	struct level *lvl = top(out);

	if (lvl->line_open) {
		fputc('\n', out->fp);
		lvl->line_open = false;
	}
}

/* Text depth: the root object and lists do not indent. */
static int text_depth(struct bx_out *out)
{
	int depth = 0;

	for (int i = 2; i <= out->depth; i++)
		if (!out->levels[i].is_list)
			depth++;
	return depth;
}

struct bx_out *bx_out_new(enum bx_format format, FILE *fp)
{
	struct bx_out *out = calloc(1, sizeof(*out));

	if (!out)
		return NULL;
	out->format = format;
	out->fp = fp;
	if (format == BX_FORMAT_JSON) {
		fputs("{\"__header\":{\"version\":\"" BX_JSON_VERSION "\"}", fp);
		out->levels[0].has_items = true;
	}
	return out;
}

int bx_out_finish(struct bx_out *out)
{
	int ret;

	if (!out)
		return 0;
	ret = out->overflow_seen ? -E2BIG : 0;
	out->overflow = 0;
	while (out->depth > 0) {
		if (top(out)->is_list)
			bx_out_list_end(out);
		else
			bx_out_obj_end(out);
	}
	if (out->format == BX_FORMAT_JSON)
		fputs("}\n", out->fp);
	else
		text_close_line(out);
	fflush(out->fp);
	free(out);
	return ret;
}

/*
 * A level deeper than MAX_DEPTH is left out with everything in it (the
 * document stays valid) and bx_out_finish() reports it; begin and end stay
 * balanced through the overflow count.
 */
static bool overflowed(struct bx_out *out)
{
	if (out->overflow || out->depth + 1 >= MAX_DEPTH) {
		out->overflow++;
		out->overflow_seen = true;
		return true;
	}
	return false;
}

static void push(struct bx_out *out, bool is_list, enum bx_obj_style style)
{
	out->depth++;
	*top(out) = (struct level){ .is_list = is_list, .style = style };
}

/* Closes a level: false when it was one left out. */
static bool pop(struct bx_out *out)
{
	if (out->overflow) {
		out->overflow--;
		return false;
	}
	return true;
}

void bx_out_obj_begin(struct bx_out *out, const char *key, enum bx_obj_style style,
		      const char *heading)
{
	if (overflowed(out))
		return;
	if (out->format == BX_FORMAT_JSON) {
		json_member(out, key);
		fputc('{', out->fp);
		push(out, false, style);
		return;
	}
	if (style == BX_OBJ_JSON_ONLY || top(out)->style == BX_OBJ_JSON_ONLY) {
		push(out, false, BX_OBJ_JSON_ONLY);
		return;
	}
	text_close_line(out);
	push(out, false, style);
	if (heading) {
		text_indent(out, text_depth(out) - 1 < 0 ? 0 : text_depth(out) - 1);
		fputs(heading, out->fp);
		top(out)->line_open = true;
		if (style == BX_OBJ_LINES)
			text_close_line(out);
	}
}

void bx_out_obj_end(struct bx_out *out)
{
	if (!pop(out))
		return;
	if (out->format == BX_FORMAT_JSON)
		fputc('}', out->fp);
	else if (top(out)->style != BX_OBJ_JSON_ONLY)
		text_close_line(out);
	if (out->depth > 0)
		out->depth--;
}

void bx_out_list_begin(struct bx_out *out, const char *key)
{
	if (overflowed(out))
		return;
	if (out->format == BX_FORMAT_JSON) {
		json_member(out, key);
		fputc('[', out->fp);
	} else {
		text_close_line(out);
	}
	push(out, true, BX_OBJ_LINES);
}

void bx_out_list_end(struct bx_out *out)
{
	if (!pop(out))
		return;
	if (out->format == BX_FORMAT_JSON)
		fputc(']', out->fp);
	if (out->depth > 0)
		out->depth--;
}

/* Text: one "name value" field in the current object's style. */
static void text_field(struct bx_out *out, const char *key, const char *value, unsigned int flags)
{
	struct level *lvl = top(out);
	bool named = key && !(flags & BX_F_NO_NAME);

	key = text_label(key);
	if (lvl->style == BX_OBJ_INLINE) {
		if (!lvl->line_open) {
			text_indent(out, (text_depth(out) > 0 ? text_depth(out) - 1 : 0) +
					 lvl->extra_indent);
			lvl->line_open = true;
		} else {
			fputc(' ', out->fp);
		}
		if (named) {
			fputs_unlocked(key, out->fp);
			fputc_unlocked(' ', out->fp);
		}
		fputs_unlocked(value, out->fp);
		return;
	}
	text_indent(out, text_depth(out));
	if (named)
		fprintf(out->fp, "%-*s %s\n", TEXT_NAME_WIDTH, key, value);
	else {
		fputs_unlocked(value, out->fp);
		fputc_unlocked('\n', out->fp);
	}
}

static bool wanted(const struct bx_out *out, unsigned int flags)
{
	if (out->overflow)
		return false;
	if (out->format == BX_FORMAT_JSON)
		return !(flags & BX_F_TEXT_ONLY);
	return !(flags & BX_F_JSON_ONLY) && out->levels[out->depth].style != BX_OBJ_JSON_ONLY;
}

/* A field whose JSON form is @json (already valid JSON) and text form @text. */
static void field(struct bx_out *out, const char *key, const char *json, const char *text,
		  unsigned int flags)
{
	if (!wanted(out, flags))
		return;
	if (out->format == BX_FORMAT_JSON) {
		json_member(out, key);
		fputs_unlocked(json, out->fp);
	} else {
		text_field(out, key, text, flags);
	}
}

char *bx_u64_decimal(uint64_t value, char *buf, size_t len)
{
	char *p = buf + len - 1;

	*p = '\0';
	do {
		*--p = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	return p;
}

void bx_out_u64(struct bx_out *out, const char *key, uint64_t value, unsigned int flags)
{
	char buf[32], *decimal;

	/* Dumps print millions of numbers: format only the form this output shows. */
	if (out->format == BX_FORMAT_TEXT && (flags & BX_F_HEX)) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)value);
		field(out, key, buf, buf, flags);
		return;
	}
	decimal = bx_u64_decimal(value, buf, sizeof(buf));
	field(out, key, decimal, decimal, flags);
}

void bx_out_s64(struct bx_out *out, const char *key, int64_t value, unsigned int flags)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)value);
	field(out, key, buf, buf, flags);
}

void bx_out_str(struct bx_out *out, const char *key, const char *value, unsigned int flags)
{
	if (!wanted(out, flags))
		return;
	if (out->format == BX_FORMAT_JSON) {
		json_member(out, key);
		if (value)
			json_string(out->fp, value);
		else
			fputs("null", out->fp);
	} else {
		text_field(out, key, value ? value : "-", flags);
	}
}

void bx_out_bool(struct bx_out *out, const char *key, bool value, unsigned int flags)
{
	field(out, key, value ? "true" : "false", value ? "yes" : "no", flags);
}

void bx_out_uuid(struct bx_out *out, const char *key, const uint8_t uuid[16], unsigned int flags)
{
	char text[37];

	uuid_unparse(uuid, text);
	bx_out_str(out, key, text, flags);
}

void bx_out_hexbytes(struct bx_out *out, const char *key, const uint8_t *bytes, size_t len,
		     unsigned int flags)
{
	static const char digits[] = "0123456789abcdef";
	char text[2 * 64 + 1];

	/* A dump's csum items call this for every sector: skip what is not shown. */
	if (!wanted(out, flags))
		return;
	if (len > 64)
		len = 64;
	for (size_t i = 0; i < len; i++) {
		text[2 * i] = digits[bytes[i] >> 4];
		text[2 * i + 1] = digits[bytes[i] & 0xf];
	}
	text[2 * len] = '\0';
	bx_out_str(out, key, text, flags);
}

void bx_out_size(struct bx_out *out, const char *key, uint64_t bytes, unsigned int units,
		 unsigned int flags)
{
	char json[32], text[48];

	snprintf(json, sizeof(json), "%llu", (unsigned long long)bytes);
	bx_pretty_size(bytes, units, text, sizeof(text));
	field(out, key, json, text, flags);
}

void bx_out_double(struct bx_out *out, const char *key, double value, int decimals,
		   unsigned int flags)
{
	char buf[64];

	if (value != value || value > 1e300 || value < -1e300)
		value = 0;
	snprintf(buf, sizeof(buf), "%.*f", decimals, value);
	field(out, key, buf, buf, flags);
}

void bx_out_text_break(struct bx_out *out)
{
	if (out->format == BX_FORMAT_JSON || out->overflow)
		return;
	text_close_line(out);
	top(out)->extra_indent++;
}

void bx_out_text(struct bx_out *out, const char *text)
{
	if (out->format == BX_FORMAT_JSON || !wanted(out, 0))
		return;
	text_field(out, NULL, text, BX_F_NO_NAME);
}

void bx_out_textf(struct bx_out *out, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (out->format == BX_FORMAT_JSON || !wanted(out, 0))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	bx_out_text(out, buf);
}
