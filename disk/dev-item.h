/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Offline edits of a device item: the chunk tree's DEV_ITEM and the superblock copies. */
#ifndef BTRFSX_DEV_ITEM_H
#define BTRFSX_DEV_ITEM_H

#include <stdint.h>

#include "disk/volumes.h"

/* The device item of @devid as the chunk tree holds it. */
int bx_read_dev_item(struct bx_fs *fs, uint64_t devid, struct btrfs_dev_item *item);

/* Calls @fn for every DEV_ITEM of the chunk tree, present devices or not. */
int bx_for_each_dev_item(struct bx_fs *fs,
			 int (*fn)(void *arg, const struct btrfs_dev_item *item), void *arg);

/*
 * Sets the type field of device @devid on an unmounted filesystem opened
 * with BX_OPEN_WRITE. Order: the chunk tree leaf holding the DEV_ITEM, one
 * mirror at a time, then every superblock copy of that device, backups
 * first. A stop between any two writes leaves every copy valid, holding the
 * old or the new value; the kernel takes the chunk tree's.
 */
int bx_set_dev_type(struct bx_fs *fs, uint64_t devid, uint64_t type);

#endif
