/*
 * Block group profiles by their type bits; the table behind them is the
 * allocator model's (kernel-shared/allocator.c). No format structures here,
 * so code that includes <linux/btrfs_tree.h> can use it too.
 */
#ifndef BTRFSX_PROFILES_H
#define BTRFSX_PROFILES_H

#include <stdbool.h>
#include <stdint.h>

/* Profile name ("single", "raid1", ...) of chunk type bits; "unknown" for bad bits. */
const char *bx_profile_name(uint64_t type);
/* Whether reads of @type choose among mirrors (RAID1, RAID1C3, RAID1C4, RAID10). */
bool bx_profile_is_mirrored(uint64_t type);
/* Copies of every block a profile keeps (1 for single, raid0, raid5/6; 3 for raid1c3). */
int bx_profile_ncopies(uint64_t type);

#endif
