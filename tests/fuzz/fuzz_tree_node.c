/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: the input is one tree block (node or leaf).
 *
 * Inputs up to 4096 bytes are 4 KiB blocks, longer ones 16 KiB blocks (cut or
 * zero-padded). The harness makes the cheap checks pass so the fuzzer spends
 * its time in the content checks: the header's fsid is set to the in-memory
 * filesystem's metadata_uuid (all zero), the expected bytenr and generation
 * are the ones the header claims, and the crc32c checksum is recomputed.
 *
 * A block that bx_check_tree_block accepts is walked slot by slot with
 * bx_item_key / bx_item_ptr / bx_item_size (every item byte is read, so any
 * bound the checker missed shows up under AddressSanitizer), and every leaf
 * item goes through the dump-tree decoder bx_print_leaf_item, rendered as
 * JSON to /dev/null, or as text when the lowest bit of the input's first
 * byte is set (that byte is the checksum, which the harness overwrites, so
 * it is free to steer with; rendering is most of the cost of an input, so
 * one format per input doubles the speed).
 *
 * Bit 1 of that byte asks the harness to repack a leaf first: item offsets
 * are rewritten from the item sizes (sizes clamped, nritems capped to what
 * fits), the layout bx_check_tree_block demands. Mutations that change an
 * item's size then still reach the decoders instead of failing the layout
 * check; the checker must accept every leaf repacked this way.
 *
 * BTRFSX_FUZZ_CHECK_JSON=1 in the environment renders the JSON into memory
 * instead and aborts when json-c cannot parse it (slower).
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/inspect-items.h"
#include "cmds/format-output.h"
#include "disk/btree.h"
#include "format/csum.h"
#include "tests/fuzz/fuzz-common.h"

static FILE *devnull;
static int check_json;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *env = getenv("BTRFSX_FUZZ_CHECK_JSON");

	devnull = fopen("/dev/null", "w");
	if (!devnull) {
		perror("/dev/null");
		abort();
	}
	check_json = env && env[0] && strcmp(env, "0");
	return 0;
}

static void print_leaf(const struct bx_fs *fs, const struct bx_eb *eb, enum bx_format format)
{
	char *text = NULL;
	size_t text_len = 0;
	FILE *fp = devnull;
	struct bx_out *out;

	if (format == BX_FORMAT_JSON && check_json) {
		fp = open_memstream(&text, &text_len);
		if (!fp)
			abort();
	}
	out = bx_out_new(format, fp);
	if (!out)
		abort();
	bx_out_list_begin(out, "items");
	for (uint32_t slot = 0; slot < bx_eb_nritems(eb); slot++)
		bx_print_leaf_item(out, fs, eb, (int)slot);
	bx_out_list_end(out);
	bx_out_finish(out);
	if (fp != devnull) {
		struct json_tokener *tok = json_tokener_new();
		struct json_object *obj;

		fclose(fp);
		obj = json_tokener_parse_ex(tok, text, (int)text_len);
		if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
		    json_tokener_get_parse_end(tok) + 1 < text_len) {
			fprintf(stderr, "invalid JSON from the item decoders:\n%s\n", text);
			abort();
		}
		json_object_put(obj);
		json_tokener_free(tok);
		free(text);
	}
}

static void walk_block(const struct bx_fs *fs, const struct bx_eb *eb, enum bx_format format)
{
	uint32_t nritems = bx_eb_nritems(eb);
	struct btrfs_key key, prev;

	for (uint32_t slot = 0; slot < nritems; slot++) {
		bx_item_key(eb, (int)slot, &key);
		/* The checker promised strictly ascending keys. */
		if (slot && btrfs_key_cmp(&prev, &key) >= 0)
			abort();
		prev = key;
		if (bx_eb_level(eb) == 0) {
			const uint8_t *ptr = bx_item_ptr(eb, (int)slot);
			uint32_t size = bx_item_size(eb, (int)slot);

			if (ptr < eb->data + sizeof(struct btrfs_header) ||
			    ptr + size > eb->data + eb->len)
				abort();
			fuzz_touch(ptr, size);
		} else {
			fuzz_touch(bx_node_ptr(eb, (int)slot), sizeof(struct btrfs_key_ptr));
		}
	}
	if (bx_eb_level(eb) == 0)
		print_leaf(fs, eb, format);
}

/* Packs the items of the leaf in @buf from the end of the block, in slot order. */
static void repack_leaf(uint8_t *buf, uint32_t nodesize)
{
	struct btrfs_header *hdr = (struct btrfs_header *)buf;
	struct btrfs_item *items = (struct btrfs_item *)(buf + sizeof(*hdr));
	uint32_t data_space = nodesize - sizeof(*hdr);
	uint32_t nritems = le32toh(hdr->nritems);
	uint32_t end = data_space;

	if (nritems > data_space / sizeof(struct btrfs_item))
		nritems = data_space / sizeof(struct btrfs_item);
	for (uint32_t i = 0; i < nritems; i++) {
		uint32_t size = le32toh(items[i].size), room;

		if (end < (i + 1) * sizeof(struct btrfs_item)) {
			nritems = i;   /* the item array would run into the data */
			break;
		}
		room = end - (i + 1) * sizeof(struct btrfs_item);
		if (size > room)
			size = room;
		items[i].size = htole32(size);
		items[i].offset = htole32(end - size);
		end -= size;
	}
	hdr->nritems = htole32(nritems);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t nodesize = size > 4096 ? 16384 : 4096;
	enum bx_format format;
	bool repacked;
	struct btrfs_header *hdr;
	struct bx_block_expect expect;
	enum bx_eb_status status;
	struct bx_eb eb;
	struct bx_fs *fs;
	uint64_t bytenr;
	uint8_t *buf;

	if (size > 16384)
		return -1;
	if (size < sizeof(struct btrfs_header))
		return 0;
	format = (data[0] & 1) ? BX_FORMAT_TEXT : BX_FORMAT_JSON;
	fs = calloc(1, sizeof(*fs));
	buf = calloc(1, nodesize);   /* exactly a block: overreads hit the redzone */
	if (!fs || !buf)
		abort();
	fs->csum_type = BTRFS_CSUM_TYPE_CRC32;
	fs->csum_size = btrfsx_csum_size(BTRFS_CSUM_TYPE_CRC32);
	fs->nodesize = nodesize;
	fs->sectorsize = 4096;
	fs->sb.nodesize = htole32(nodesize);
	fs->sb.sectorsize = htole32(4096);
	fs->sb.csum_type = htole16(BTRFS_CSUM_TYPE_CRC32);
	/* fs->metadata_uuid and fs->fsid stay zero. */

	memcpy(buf, data, size < nodesize ? size : nodesize);
	hdr = (struct btrfs_header *)buf;
	repacked = (data[0] & 2) && hdr->level == 0;
	if (repacked)
		repack_leaf(buf, nodesize);
	memcpy(hdr->fsid, fs->metadata_uuid, BTRFS_FSID_SIZE);
	if (btrfsx_csum(fs->csum_type, buf + BTRFS_CSUM_SIZE, nodesize - BTRFS_CSUM_SIZE, hdr->csum))
		abort();
	bytenr = le64toh(hdr->bytenr);
	expect.generation = le64toh(hdr->generation);
	expect.level = -1;

	status = bx_check_tree_block(fs, buf, bytenr, &expect);
	if (status == BX_EB_BAD_CSUM || status == BX_EB_BAD_BYTENR || status == BX_EB_BAD_FSID ||
	    status == BX_EB_BAD_GENERATION)
		abort();   /* the harness made these right */
	if (repacked && status == BX_EB_BAD_ITEMS)
		abort();   /* a packed leaf has a valid layout */
	if (status == BX_EB_OK) {
		/* Without expectations the same block is as good. */
		if (bx_check_tree_block(fs, buf, bytenr, NULL) != BX_EB_OK)
			abort();
		eb = (struct bx_eb){ .start = bytenr, .len = nodesize, .mirror = 1, .refs = 1,
				     .data = buf };
		walk_block(fs, &eb, format);
	}
	free(buf);
	free(fs);
	fuzz_reset_messages();
	return 0;
}
