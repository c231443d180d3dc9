/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names and decoded fields of tree items, for inspect dump-tree. */
#ifndef BTRFSX_INSPECT_ITEMS_H
#define BTRFSX_INSPECT_ITEMS_H

#include <stdint.h>

#include "cmds/format-output.h"
#include "disk/btree.h"

/* "INODE_ITEM", ... or NULL for an unknown type. */
const char *bx_key_type_name(uint8_t type);

/* "ROOT_TREE", "FIRST_CHUNK_TREE", ... or NULL when a plain number reads better. */
const char *bx_objectid_name(uint64_t objectid, uint8_t type);

/* "(FS_TREE ROOT_ITEM 0)": a key as btrfs-progs 6.19 prints it, into @buf. */
void bx_key_text(const struct btrfs_key *key, char *buf, size_t len);

/*
 * Emits item @slot of leaf @eb: its key, position and the decoded fields of
 * its type. Every decoder checks the item size before reading, so a corrupt
 * (but checksum-valid) leaf prints an error field instead of reading past it.
 */
void bx_print_leaf_item(struct bx_out *out, const struct bx_fs *fs, const struct bx_eb *eb,
			int slot);

#endif
