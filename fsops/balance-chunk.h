/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One chunk moved by the kernel: a balance of that chunk alone
 * (BTRFS_IOC_BALANCE_V2 with a vrange filter on its address and its type),
 * in a worker thread, while the calling thread polls for progress and a
 * cancel, which goes to the kernel's balance control (BTRFS_IOC_BALANCE_CTL).
 * `balance misplaced` (relocate/) and the maintain engine move chunks so.
 * Library style: 0 or a negative errno with the message recorded.
 */
#ifndef BTRFSX_BALANCE_CHUNK_H
#define BTRFSX_BALANCE_CHUNK_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/btrfs.h>

/*
 * Called from the calling thread about every 0.1 s while the chunk moves,
 * with the seconds spent in the kernel so far; true asks for a cancel.
 */
typedef bool (*bx_balance_chunk_poll)(void *arg, double seconds);

/*
 * Balances the chunk at @logical of @type (type and profile bits) on the
 * mounted filesystem open as @fd (@path names it in messages); @poll may be
 * NULL. *@seconds: the time the call took. Returns 0 (moved; also when a
 * cancel came after it was done), -EINTR when @poll's cancel stopped it
 * (the chunk stays where it was), -ECANCELED when someone else cancelled
 * it, or the ioctl's negative errno (-ENOSPC, -EBUSY for another exclusive
 * operation), the last two without a message.
 */
int bx_balance_chunk(int fd, const char *path, uint64_t logical, uint64_t type,
		     bx_balance_chunk_poll poll, void *arg, double *seconds);

/* The balance arguments that select exactly the chunk at @logical of @type. */
void bx_balance_chunk_args(uint64_t logical, uint64_t type, struct btrfs_ioctl_balance_args *a);

#endif
