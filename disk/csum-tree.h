/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Data checksums from the csum tree, sector by sector: a cursor that keeps
 * the csum item it found last, so reading a file in order costs one search
 * per item.
 */
#ifndef BTRFSX_CSUM_TREE_H
#define BTRFSX_CSUM_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk/btree.h"

struct bx_csum_cursor {
	struct bx_fs *fs;
	struct bx_root root;
	bool have_root;          /* a filesystem without a csum tree has no checksums */
	uint64_t start, end;     /* logical range the cached item covers */
	uint8_t *data;           /* its checksums, fs->csum_size each */
	size_t cap;
};

void bx_csum_cursor_init(struct bx_csum_cursor *c, struct bx_fs *fs);
void bx_csum_cursor_release(struct bx_csum_cursor *c);

/*
 * The checksum of the data sector at @logical into @out (fs->csum_size
 * bytes). Returns 1 when it has one, 0 when not (nodatasum, or no csum
 * tree), or a negative errno with a message.
 */
int bx_csum_lookup(struct bx_csum_cursor *c, uint64_t logical, uint8_t *out);

#endif
