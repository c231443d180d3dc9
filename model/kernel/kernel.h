/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The register of kernel behaviour: every behaviour of the kernel that the
 * model follows is one named trait, with the first (and, where it ended,
 * the last) kernel version that has it, the kernel function it follows, the
 * evidence, and the unit test that pins it (register.c). A kernel is its
 * version and the set of traits active for it; the snapshot carries one
 * whole (model/snapshot.h), so every model that takes a snapshot follows
 * the same kernel, the running one or the one asked for (--kernel).
 *
 * The files beside this one are named after the kernel's own (space-info,
 * block-group, volumes, extent-tree, relocation, dev-replace): a change in
 * a kernel file maps to one btrfsx file, and Documentation/dev/kernel-behaviour.md
 * says how to add a trait.
 *
 * Pure: no I/O (fsops/kernel-release.c reads the running kernel's release).
 */
#ifndef BTRFSX_MODEL_KERNEL_H
#define BTRFSX_MODEL_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A kernel version as a number: BX_KV(6, 18) = 6018, comparable. */
#define BX_KV(major, minor) ((major) * 1000U + (minor))
#define BX_KV_MAJOR(v) ((v) / 1000U)
#define BX_KV_MINOR(v) ((v) % 1000U)

/*
 * The oldest and newest kernels the register describes (plannable with
 * --kernel); 6.19 was the last of the 6 series.
 */
#define BX_KV_OLDEST BX_KV(6, 1)
#define BX_KV_NEWEST BX_KV(7, 3)
#define BX_KV_LAST_OF_6 BX_KV(6, 19)

/*
 * The traits. Those with a first version are keyed to releases; those
 * without hold for every kernel the register knows (register.c says why
 * no version is known) and are traits all the same, so that the model
 * asks every behaviour of the kernel in one way and a kernel that changes
 * one needs only its last version.
 */
enum bx_kernel_trait {
	/* allocator (model/allocator.c) */
	BX_KT_SORT_TIES_PRE_6_9,	/* lib/sort.c's order of ties, 5.2 .. 6.8 */
	BX_KT_HINT_DATA_ONLY_LAST,	/* hint patches, -funsigned-char: data_only last for data */
	BX_KT_HINT_SECOND_SORT,		/* hint patches sort the taken devices again */
	/* space reservations (space-info.c) */
	BX_KT_OVERCOMMIT_KEEPS_DATA_CHUNK,	/* overcommit beyond one data chunk's room */
	BX_KT_DELAYED_REFS_RESERVED_TWICE,	/* a file's creation reserves its delayed refs twice */
	BX_KT_FLUSH_OVERCOMMITS_64TH,	/* a flushing reservation overcommits a 64th, not an 8th */
	BX_KT_METADATA_FILL_GROWS,	/* a data fill forces a metadata chunk */
	BX_KT_TIGHT_HEADROOM,		/* metadata moves with little room per copy are uncertain */
	/* block groups (block-group.c) */
	BX_KT_CLEANS_NEW_BLOCK_GROUPS,	/* the cleaner deletes new block groups never used */
	BX_KT_CLEANER_KEEPS_NEEDED,	/* ... but the last of a profile and those needed soon */
	BX_KT_RO_NEEDS_OVERCOMMIT,	/* read-only only if its free bytes can be overcommitted */
	BX_KT_DEV_EXTENTS_FREE_AT_COMMIT,	/* freed device extents are free after the commit */
	/* data extents (extent-tree.c) */
	BX_KT_SIZE_CLASSES,		/* the data allocator keeps size classes */
	BX_KT_RAID56_FULL_STRIPE,	/* raid5/6: a full stripe or more starts on one */
	BX_KT_SINGLE_DATA_ANY_PROFILE,	/* single data goes into data block groups of any profile */
	/* relocation (relocation.c, volumes.c) */
	BX_KT_RELOCATES_EXTENT_BY_EXTENT,	/* each extent whole, in clusters */
	BX_KT_RO_NEW_PROFILE_CHUNK,	/* a chunk of the new profile before the read-only switch */
	BX_KT_MAY_ALLOC_DATA_CHUNK,	/* no data in use: an empty data chunk keeps the profile */
	BX_KT_CONVERT_PAIRS_SYSTEM_CHUNK,	/* a metadata convert's first chunk brings the other kind */
	BX_KT_CHUNK_TREE_IN_SINGLE_SYSTEM,	/* ... but no system chunk beside a single one with room */
	BX_KT_COMMIT_MAY_ABORT,		/* the commit before a metadata move may abort */
	BX_KT_SHRINK_SECOND_TRY,	/* a shrink tries what failed once more */
	BX_KT_BALANCE_USAGE_ON_ARRIVAL,	/* a balance reads a chunk's usage when it reaches it */
	BX_KT_PAUSED_BALANCE_TARGET,	/* a paused convert gives new chunks its target */
	BX_KT_RESUME_SOFT_FILTER,	/* a resumed convert leaves converted chunks */
	/* a replace (dev-replace.c) */
	BX_KT_REPLACE_COPIES_READ_ONLY,	/* each block group read-only while it is copied */
	BX_KT_REPLACE_KEEPS_CHUNK_TREE,	/* the chunk tree stays in the read-only system chunk */
	BX_KT_COUNT
};

/* A kernel as the model follows it. */
struct bx_kernel {
	char release[65];		/* uname -r, or the version asked for */
	unsigned int version;		/* BX_KV(); 0: unknown, taken as the newest */
	bool chosen;			/* asked for (--kernel), not the running one */
	uint64_t traits;		/* bit BX_KT_*: active for this kernel */
};

/* One entry of the register (register.c). */
struct bx_kernel_trait_info {
	const char *name;		/* "size_classes" */
	unsigned int first;		/* BX_KV(); 0: every kernel the register knows */
	unsigned int last;		/* BX_KV() of the last kernel with it; 0: still there */
	const char *function;		/* the kernel function it follows, with its file */
	const char *model;		/* the btrfsx file that follows it */
	const char *summary;		/* what the kernel does, in a sentence */
	const char *evidence;		/* traces and test cases that show it */
	const char *test;		/* the unit test that pins it (file:function) */
	const char *unversioned;	/* first 0: why no version is known; else NULL */
};

/* The register's entry of @trait (NULL for a value out of range). */
const struct bx_kernel_trait_info *bx_kernel_trait_info(enum bx_kernel_trait trait);

/* Whether @version (BX_KV; 0 unknown: the newest) has @trait. */
bool bx_kernel_version_has(unsigned int version, enum bx_kernel_trait trait);

/*
 * Parses "MAJOR.MINOR" with anything after it ("6.1", "6.18.0-1-amd64")
 * into *@version. Returns 0, or -EINVAL when @release does not start so.
 */
int bx_kernel_parse_version(const char *release, unsigned int *version);

/*
 * The kernel of @release: its version and traits. @chosen marks a kernel
 * asked for. A release whose version cannot be read is kept as unknown
 * (the newest behaviour). Never fails.
 */
void bx_kernel_init(struct bx_kernel *k, const char *release, bool chosen);

/*
 * A kernel asked for by version (--kernel): refused with -EINVAL and a
 * message that starts with @what ("--kernel") when @version is not
 * "MAJOR.MINOR" of a kernel the register describes (BX_KV_OLDEST ..
 * BX_KV_NEWEST).
 */
int bx_kernel_choose(const char *version, const char *what, struct bx_kernel *k);

static inline bool bx_kernel_has(const struct bx_kernel *k, enum bx_kernel_trait trait)
{
	return k->traits & (1ULL << trait);
}

/*
 * A kernel built by hand (a test, a benchmark): every trait that holds for
 * all kernels the register knows, none keyed to a release; a caller that
 * pins one turns it on with bx_kernel_set_trait().
 */
void bx_kernel_common(struct bx_kernel *k);

/* Turns @trait on or off in @k (tests that pin a trait, a kernel built by hand). */
static inline void bx_kernel_set_trait(struct bx_kernel *k, enum bx_kernel_trait trait, bool on)
{
	k->traits = on ? k->traits | (1ULL << trait) : k->traits & ~(1ULL << trait);
}

/* "6.18" for @k's version ("unknown" when not known), into @buf. */
void bx_kernel_version_text(const struct bx_kernel *k, char *buf, size_t len);

/*
 * The allocator model's BX_ALLOC_* flags of @k (model/allocator.h): the
 * sort order of ties, and the hint patches' order of data_only devices
 * (which only a kernel running a hint patch shows: the caller adds
 * BX_ALLOC_HINT_KERNEL and keeps this flag only then).
 */
uint32_t bx_kernel_alloc_flags(const struct bx_kernel *k);

#endif
