/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation hints of member devices: read and set, through the kernel's
 * sysfs when the filesystem is mounted, on the device items when it is not.
 * Library style: no printing; warnings through bx_warn.
 */
#ifndef BTRFSX_ALLOC_HINT_H
#define BTRFSX_ALLOC_HINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "disk/write-plan.h"

/* Which kernel interface carries the hint of a mounted filesystem. */
enum bx_hint_iface {
	BX_HINT_IFACE_NONE,   /* the running kernel ignores hints */
	BX_HINT_IFACE_NAME,   /* V12: devinfo/<devid>/allocation_hint, names */
	BX_HINT_IFACE_TYPE,   /* kakra's fork: devinfo/<devid>/type, the whole field */
};

/* What struct btrfsx_hint_state and Python's HintState take as it is (common/fields.h). */
#define BX_HINT_STATE_FIELDS(X)					\
	X(uint64_t, devid, )					\
	X(char, path, [4096])					\
	X(uint64_t, type, )	/* the whole type field */	\
	X(uint64_t, hint, )	/* its hint bits */		\
	X(bool, mounted, )					\
	X(bool, effective, )	/* the running kernel honours it */

struct bx_hint_state {
	BX_HINT_STATE_FIELDS(BX_FIELD_MEMBER)
	enum bx_hint_iface iface;
};

/*
 * Whether the running kernel honours allocation hints, for a filesystem it
 * has not mounted: 1 yes, 0 no, -1 unknown. A mounted btrfs's devinfo
 * files in @sysfs_root (NULL: "/sys") say it; without one, the kernel's
 * symbols (/proc/kallsyms: the hint series' sysfs handlers), unless
 * @sysfs_root is a fake tree.
 */
int bx_hint_kernel_support(const char *sysfs_root);

/* Options of bx_hint_set. */
#define BX_HINT_SET_FORCE (1u << 0)   /* unknown values; guard rails off */

/*
 * The hint of the device (block device or image file) @device. Mounted:
 * from sysfs when the kernel exposes it, else the stored value with
 * effective = false. No warnings: for callers that present many devices.
 */
int bx_hint_query(const char *sysfs_root, const char *device, struct bx_hint_state *state);

/*
 * bx_hint_query() for one device, with the warnings its value deserves: a
 * hint other than data_preferred that the running kernel ignores, a value
 * btrfsx does not know.
 */
int bx_hint_get(const char *sysfs_root, const char *device, struct bx_hint_state *state);

/* Warns about a value btrfsx does not know (device roles, an unknown hint). */
void bx_hint_warn_unusual(const struct bx_hint_state *st);

/*
 * Sets the hint of @device to @hint. Mounted: through the kernel interface,
 * read back to confirm. Unmounted: the device items on disk (crash-safe
 * order). Refuses changes that leave a profile in use without enough
 * devices to allocate a chunk, unless BX_HINT_SET_FORCE. @writes: whether
 * the caller may write, and the crash tests' plan (NULL: it may, no faults).
 * Fills @before and @after.
 */
int bx_hint_set(const char *sysfs_root, const char *device, uint64_t hint, unsigned int flags,
		const struct bx_write_plan *writes, struct bx_hint_state *before,
		struct bx_hint_state *after);

/*
 * The guard rails, pure: whether every block group type in @types (type and
 * profile bits; repeats, the global reserve and mixed groups are fine) could
 * still allocate a chunk on devices with @hints: each profile needs its
 * minimum device count among the devices whose hint allows the type. False
 * with the first type that could not in @why.
 */
struct bx_hint_shortfall {
	uint64_t type;		/* the block group type that could not allocate */
	size_t allowed;		/* devices whose hint allows it */
	int needed;		/* its profile's minimum device count */
};
bool bx_hint_profiles_fit(const uint64_t *types, size_t nr_types, const uint64_t *hints,
			  size_t nr_hints, struct bx_hint_shortfall *why);
/* "after this change 1 device would allow metadata, but raid1 metadata needs 2; ..." */
void bx_hint_shortfall_text(const struct bx_hint_shortfall *why, char *buf, size_t len);

/*
 * Whether every chunk profile in use could still allocate a chunk if devid
 * @devid had @new_hint: -ENOSPC with an explanation if not.
 */
struct bx_fs;
int bx_hint_check_profiles(struct bx_fs *fs, uint64_t devid, uint64_t new_hint);

#endif
