/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Real filesystem images for the harnesses that fuzz the full open path
 * (fuzz_image) and single items in place (fuzz_item).
 *
 * The base images (tests/fuzz/images/<name>.bxfi, made by make-corpus.py: every
 * profile x checksum, written by the kernel) are loaded once into memfds, one
 * per member device, and opened through /proc/self/fd/N like image files. An
 * input changes some bytes (every change is logged and undone after the
 * input), repairs the checksums it was asked to, and runs the read-only
 * commands of the btrfsx command line in this process, through the same
 * command table as the program.
 *
 * Nothing here may leave memory or open files behind between inputs.
 */
#ifndef BTRFSX_FUZZ_IMAGE_H
#define BTRFSX_FUZZ_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmds/format-output.h"
#include "disk/btree.h"

#define FUZZ_MAX_DEVS 8
#define FUZZ_MAX_COPIES 4

struct fuzz_dev {
	int fd;                         /* memfd with the member's bytes */
	char path[40];                  /* /proc/self/fd/<fd> */
	uint64_t size;
};

/* Where a logical range lives: every copy a reader may verify. */
struct fuzz_copies {
	int nr;
	struct {
		int dev;
		uint64_t physical;
	} at[FUZZ_MAX_COPIES];
};

/* A live tree block of the base image (reached from the superblock). */
struct fuzz_block {
	uint64_t logical;
	uint64_t owner;
	int level;
	uint32_t nritems;
	struct fuzz_copies copies;
};

/* A leaf item of the base image. */
struct fuzz_item_ref {
	uint32_t block;                 /* index into fuzz_image.blocks */
	uint16_t slot;
	uint8_t type;
};

/* A data extent (EXTENT_ITEM with the data flag) of the base image. */
struct fuzz_extent {
	uint64_t start;
	uint64_t len;
};

struct fuzz_image {
	char name[64];
	int nr_devs;
	struct fuzz_dev devs[FUZZ_MAX_DEVS];
	char *paths[FUZZ_MAX_DEVS];     /* the devs' paths, for argv */
	uint32_t nodesize;
	uint32_t sectorsize;
	unsigned int csum_type;
	struct fuzz_block *blocks;
	size_t nr_blocks;
	struct fuzz_item_ref *items;
	size_t nr_items;
	struct fuzz_extent *extents;
	size_t nr_extents;
};

extern struct fuzz_image *fuzz_images;
extern size_t fuzz_nr_images;

/*
 * Loads every image of $BTRFSX_FUZZ_IMAGES (default: the source tree's
 * tests/fuzz/images), sorted by name, and learns its blocks, items and data
 * extents by opening it. Aborts with a message when that fails: a harness
 * without its images must not pretend to run.
 */
void fuzz_images_init(void);

/* Reads or writes the bytes of member @dev; every write is undone by fuzz_undo(). */
void fuzz_dev_read(const struct fuzz_image *img, int dev, uint64_t off, void *buf, size_t len);
void fuzz_dev_write(struct fuzz_image *img, int dev, uint64_t off, const void *buf, size_t len);
/* Restores every byte written since the last call, newest first. */
void fuzz_undo(void);

/* Recomputes the checksum of the tree block copy or superblock copy at @off. */
void fuzz_fix_tree_block_csum(struct fuzz_image *img, int dev, uint64_t off);
void fuzz_fix_super_csum(struct fuzz_image *img, int dev, uint64_t off);

/* Copies of the sector holding data byte @logical; nr 0 when not mapped. */
void fuzz_map_copies(const struct fuzz_image *img, uint64_t logical, struct fuzz_copies *out);

/* The commands an input may run on the image (a bit mask). */
enum {
	FUZZ_CMD_DUMP_SUPER = 1u << 0,  /* inspect dump-super -a -f on one member */
	FUZZ_CMD_DUMP_TREE = 1u << 1,   /* inspect dump-tree [-t <tree>] */
	FUZZ_CMD_READ_FILE = 1u << 2,   /* inspect read-file of the base files */
	FUZZ_CMD_USAGE = 1u << 3,       /* filesystem usage (offline) */
	FUZZ_CMD_PROPERTY = 1u << 4,    /* device property get on one member */
	FUZZ_CMD_SCRUB = 1u << 5,       /* scrub -r (small reads), its status saved and loaded */
	FUZZ_CMD_RESOLVE = 1u << 6,     /* which files each data extent belongs to */
	FUZZ_CMD_ALL = (1u << 7) - 1,
};

struct fuzz_run {
	unsigned int cmds;
	enum bx_format format;
	int member;                     /* the member dump-super and property get look at */
	unsigned int file;              /* read-file: base file @file % 8, mirror 1 + @file / 8 % 3 */
	uint64_t tree;                  /* dump-tree -t @tree; 0: every tree */
};

/* Runs the commands of @run on @img, each checking its own exit status. */
void fuzz_run_commands(struct fuzz_image *img, const struct fuzz_run *run);

#endif
