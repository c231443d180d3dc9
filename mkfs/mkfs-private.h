/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What mkfs.c and mkfs-items.c share: the state of one mkfs run. */
#ifndef BTRFSX_MKFS_PRIVATE_H
#define BTRFSX_MKFS_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mkfs/mkfs.h"
#include "mkfs/mkfs-trees.h"
#include "disk/volumes.h"

/* Every tree block, root item and inode of the new filesystem carries this generation. */
#define BX_MKFS_GENERATION 1ULL
/* The first chunk's logical address, as mkfs.btrfs has it; also the wiped head of a device. */
#define BX_MKFS_FIRST_LOGICAL (1024 * 1024ULL)
#define BX_MKFS_MIN_DEV_SIZE (16 * 1024 * 1024ULL)
/* A chunk item with the most stripes a chunk may have. */
#define BX_MKFS_CHUNK_ITEM_MAX (sizeof(struct btrfs_chunk) + \
				BX_MAX_STRIPES * sizeof(struct btrfs_stripe))

enum bx_mkfs_tree_index {
	BX_MKFS_T_ROOT,
	BX_MKFS_T_EXTENT,
	BX_MKFS_T_CHUNK,
	BX_MKFS_T_DEV,
	BX_MKFS_T_FS,
	BX_MKFS_T_CSUM,
	BX_MKFS_T_QUOTA,
	BX_MKFS_T_UUID,
	BX_MKFS_T_FREE_SPACE,
	BX_MKFS_T_BLOCK_GROUP,
	BX_MKFS_T_DATA_RELOC,
	BX_MKFS_NR_TREES,
};

enum bx_mkfs_chunk_index { BX_MKFS_C_SYSTEM, BX_MKFS_C_METADATA, BX_MKFS_C_DATA };

/* Which superblock copies, in which state (mkfs.h: the write order). */
enum bx_mkfs_sb_kind {
	BX_MKFS_SB_UNFINISHED,  /* primary, generation + 1, unknown incompat bit */
	BX_MKFS_SB_BACKUPS,     /* the copies at 64 MiB and 256 GiB, final */
	BX_MKFS_SB_FINAL,       /* primary, final */
};

struct mk_dev {
	struct bx_device *dev;  /* owned by mkfs->fs */
	struct stat st;
	uint64_t real_size;     /* bytes the device or file has */
	uint64_t size;          /* total_bytes of the device item */
	uint64_t bytes_used;
	uint64_t hint;
	uint8_t uuid[BTRFS_UUID_SIZE];
	bool is_file;
	bool created;           /* the image file did not exist before */
	char old_type[48];      /* the first signature found, "" if none */
	uint64_t wipes[16][2];  /* (offset, length) of signatures found */
	size_t nr_wipes;
};

struct bx_mkfs_rendered {
	uint64_t bytenr;
	const uint8_t *data;    /* nodesize bytes in mkfs->render_buf */
};

/* Where a tree's blocks went: a copy of its layout, kept while the tree is filled again. */
struct mk_placed {
	struct bx_tb_block *blocks;
	size_t nr;
	int level;
};

struct mkfs {
	const struct bx_mkfs_options *opts;
	struct bx_fs *fs;       /* the devices and the chunk map, for the write path */
	struct mk_dev *devs;
	size_t nr_devs;
	uint32_t nodesize;
	uint32_t sectorsize;
	uint32_t features;
	uint64_t incompat;
	uint64_t compat_ro;
	uint64_t total_bytes;
	uint64_t bytes_used;    /* tree block bytes (logical) */
	uint64_t now;
	uint8_t fsid[BTRFS_FSID_SIZE];
	uint8_t chunk_uuid[BTRFS_UUID_SIZE];
	uint8_t subvol_uuid[BTRFS_UUID_SIZE];
	struct bx_mkfs_chunk *chunks[3];
	struct bx_tree_build trees[BX_MKFS_NR_TREES];
	bool present[BX_MKFS_NR_TREES];
	struct mk_placed placed[BX_MKFS_NR_TREES];
	uint8_t *render_buf;
	struct bx_mkfs_rendered *rendered;      /* sorted by bytenr before writing */
	size_t nr_rendered;
	void **bufs;            /* write buffers, freed at the end */
	size_t nr_bufs;
};

/* mkfs.c */
/* The next free block of chunk @chunk_index at or after *cursor (0: the chunk start). */
int bx_mkfs_next_block(struct mkfs *mk, int chunk_index, uint64_t *cursor, uint64_t *bytenr);

/* mkfs-items.c */
/* The chunk item of @c into @buf (BX_MKFS_CHUNK_ITEM_MAX bytes); returns its size. */
size_t bx_mkfs_chunk_item(const struct mkfs *mk, const struct bx_mkfs_chunk *c, uint8_t *buf);
/* Fills every tree and places its blocks; iterates until the layout settles. */
int bx_mkfs_plan_trees(struct mkfs *mk);
/* Renders every block into mk->render_buf / mk->rendered. */
int bx_mkfs_render_trees(struct mkfs *mk);
/* Superblock copy @mirror of device @d in state @kind, checksummed, into @sb. */
int bx_mkfs_super(const struct mkfs *mk, const struct mk_dev *d, int mirror,
		  enum bx_mkfs_sb_kind kind, struct btrfs_super_block *sb);

#endif
