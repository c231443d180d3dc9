/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libbtrfsx: btrfs allocation hints, usage, read policies and offline scrub
 * for programs. No global state, no printing, no exiting: every function
 * returns an enum btrfsx_error and fills caller-owned structures.
 */
#ifndef BTRFSX_H
#define BTRFSX_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BTRFSX_VERSION_MAJOR 0
#define BTRFSX_VERSION_MINOR 3
#define BTRFSX_VERSION_PATCH 0

enum btrfsx_error {
	BTRFSX_OK = 0,
	BTRFSX_ERROR_NO_MEMORY,
	BTRFSX_ERROR_INVALID_ARGUMENT,
	BTRFSX_ERROR_NOT_BTRFS,
	BTRFSX_ERROR_CORRUPTED,
	BTRFSX_ERROR_IO,
	BTRFSX_ERROR_MISSING_DEVICE,
	BTRFSX_ERROR_BUSY,
	BTRFSX_ERROR_PERMISSION,
	BTRFSX_ERROR_NOT_FOUND,
	BTRFSX_ERROR_OTHER,
	BTRFSX_ERROR_NOT_SUPPORTED,	/* the running kernel or this filesystem lacks it */
	BTRFSX_ERROR_NOT_MOUNTED,	/* needs a mounted filesystem */
	BTRFSX_ERROR_MOUNTED,		/* needs an unmounted filesystem */
	BTRFSX_ERROR_CANCELLED,		/* stopped by the caller's cancel flag */
	BTRFSX_ERROR_NO_SPACE,		/* the devices lack room (e.g. a tier is full). Since 0.2 */
};

/**
 * btrfsx_strerror() - describe an error code.
 * @err: a value returned by a libbtrfsx function.
 *
 * Return: a static string, never NULL.
 * Since: 0.1
 */
const char *btrfsx_strerror(enum btrfsx_error err);

/*
 * Conventions of every function below:
 * - each call starts by clearing the calling thread's error message and
 *   warnings;
 * - the return value is BTRFSX_OK or an error; the calling thread's
 *   btrfsx_last_error_message() then names the object and the reason;
 * - warnings for the user (e.g. "the running kernel ignores hints") are kept
 *   per thread until the next call: btrfsx_warnings_count()/btrfsx_warning();
 * - @sysfs_root NULL means "/sys" (tests pass a fake tree), @config_dir NULL
 *   means SYSCONFDIR "/btrfsx"; offline work is refused when the real /sys
 *   shows the filesystem mounted, whatever @sysfs_root;
 * - common errors: BTRFSX_ERROR_INVALID_ARGUMENT (a required argument is
 *   NULL, unknown flags, a bad value), BTRFSX_ERROR_NOT_FOUND (no such path),
 *   BTRFSX_ERROR_NOT_BTRFS (no btrfs superblock, or not on a mounted btrfs),
 *   BTRFSX_ERROR_PERMISSION (also a read-only device or filesystem);
 * - no global state: functions are thread-safe on different filesystems;
 *   results are owned by the caller and freed with the matching _free() or
 *   free() as documented.
 */

/**
 * btrfsx_last_error_message() - the detailed message of the calling thread's
 * last failure, naming the object and the reason.
 *
 * Return: a string valid until the thread's next libbtrfsx call ("Success"
 * after a call that succeeded).
 * Since: 0.1
 */
const char *btrfsx_last_error_message(void);

/* What the superblocks of an unmounted filesystem say. */
struct btrfsx_fs_info {
	uint8_t fsid[16];
	uint8_t metadata_uuid[16];
	char label[256];
	uint64_t generation;
	uint64_t num_devices;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint32_t nodesize;
	uint32_t sectorsize;
	uint16_t csum_type;
	char csum_name[16];
};

/**
 * btrfsx_fs_info_offline() - read the identity of an unmounted filesystem.
 * @paths: member devices or image files; other members are found by fsid.
 * @nr_paths: how many paths.
 * @info: filled on success.
 *
 * Opens the devices read-only, verifies the superblocks and the chunk tree.
 * Return: BTRFSX_OK or an error; see btrfsx_last_error_message();
 * BTRFSX_ERROR_MISSING_DEVICE when a member is not found,
 * BTRFSX_ERROR_BUSY when one is held by another program,
 * BTRFSX_ERROR_CORRUPTED when no superblock copy or the chunk tree is valid.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_fs_info_offline(const char *const *paths, size_t nr_paths,
					 struct btrfsx_fs_info *info);

/**
 * btrfsx_warnings_count() - warnings recorded by the calling thread's last call.
 *
 * Warnings tell the user something the result alone does not: a hint the
 * running kernel ignores, a read policy that changes nothing, a degraded
 * filesystem. The call succeeded all the same.
 * Since: 0.1
 */
size_t btrfsx_warnings_count(void);

/**
 * btrfsx_warning() - the @i-th warning of the calling thread's last call.
 *
 * Return: a string valid until the thread's next libbtrfsx call, or NULL
 * when @i >= btrfsx_warnings_count().
 * Since: 0.1
 */
const char *btrfsx_warning(size_t i);

/* ---- Allocation hints: the low bits of each device item's type field ---- */

enum btrfsx_hint {
	BTRFSX_HINT_DATA_PREFERRED = 0,
	BTRFSX_HINT_METADATA_PREFERRED = 1,
	BTRFSX_HINT_METADATA_ONLY = 2,
	BTRFSX_HINT_DATA_ONLY = 3,
	BTRFSX_HINT_NONE = 4,
};

/**
 * btrfsx_hint_name() - "data_preferred", "metadata_only", ... for @hint.
 * @hint: a value of the hint field (enum btrfsx_hint or any other).
 * Return: a static string, or NULL for a value without a name.
 * Since: 0.1
 */
const char *btrfsx_hint_name(uint64_t hint);

/**
 * btrfsx_hint_parse() - parse a hint name (any case, short forms d, m,
 * donly, monly) or, with @allow_number, a number.
 * @str: the text to parse.
 * @allow_number: also accept a number (any base) that fits the 3-bit field.
 * @hint: the value, on success.
 * Return: BTRFSX_OK or BTRFSX_ERROR_INVALID_ARGUMENT (the message lists the
 * accepted names).
 * Since: 0.1
 */
enum btrfsx_error btrfsx_hint_parse(const char *str, bool allow_number, uint64_t *hint);

/* Which kernel interface carries the hint of a mounted filesystem. */
enum btrfsx_hint_iface {
	BTRFSX_HINT_IFACE_NONE,		/* not mounted, or the kernel ignores hints */
	BTRFSX_HINT_IFACE_NAME,		/* devinfo/<devid>/allocation_hint */
	BTRFSX_HINT_IFACE_TYPE,		/* devinfo/<devid>/type */
};

struct btrfsx_hint_state {
	uint64_t devid;
	char path[4096];
	uint64_t type;			/* the whole device type field */
	uint64_t hint;			/* its hint bits */
	bool mounted;
	enum btrfsx_hint_iface iface;
	bool effective;			/* the running kernel honours it */
};

/**
 * btrfsx_hint_get() - the allocation hint of one member device.
 * @sysfs_root: NULL for "/sys".
 * @device: a block device or image file of the filesystem.
 * @state: filled on success.
 *
 * Mounted: read from sysfs when the kernel exposes hints, otherwise the
 * stored value with effective = false (and a warning). Unmounted: read from
 * the device item. A value without a name, or in the device-roles encoding,
 * is returned with a warning.
 * Return: BTRFSX_OK or an error; BTRFSX_ERROR_CORRUPTED when sysfs shows
 * something that is not a hint.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_hint_get(const char *sysfs_root, const char *device,
				  struct btrfsx_hint_state *state);

/* Flags of btrfsx_hint_set(). */
#define BTRFSX_HINT_SET_FORCE (1u << 0)	/* unknown values allowed; guard rails off */

/**
 * btrfsx_hint_set() - set the allocation hint of one member device.
 * @sysfs_root: NULL for "/sys".
 * @device: a block device or image file of the filesystem.
 * @hint: the new value (enum btrfsx_hint unless BTRFSX_HINT_SET_FORCE).
 * @flags: BTRFSX_HINT_SET_*.
 * @before, @after: (may be NULL) the state before and after.
 *
 * Mounted: written through the kernel's sysfs file and read back
 * (BTRFSX_ERROR_NOT_SUPPORTED when the kernel ignores hints or the device
 * uses the device-roles encoding; BTRFSX_ERROR_IO when the kernel reports
 * another value afterwards). Unmounted: the device items and every
 * superblock copy are rewritten in a crash-safe order; every member must be
 * there (BTRFSX_ERROR_MISSING_DEVICE) and not in use (BTRFSX_ERROR_BUSY,
 * also for an image file attached to a loop device; BTRFSX_ERROR_MOUNTED
 * when the kernel has it mounted but @sysfs_root does not show it).
 * BTRFSX_ERROR_INVALID_ARGUMENT for a value beyond the 3-bit field, an
 * unknown value without BTRFSX_HINT_SET_FORCE, and a value that leaves a
 * profile in use without enough devices to allocate a chunk (the guard
 * rail, off with BTRFSX_HINT_SET_FORCE).
 * Since: 0.1
 */
enum btrfsx_error btrfsx_hint_set(const char *sysfs_root, const char *device, uint64_t hint,
				  unsigned int flags, struct btrfsx_hint_state *before,
				  struct btrfsx_hint_state *after);

/* ---- Filesystem usage with the preference breakdown ---- */

/* Devices sharing one hint value. */
struct btrfsx_usage_class {
	uint64_t hint;
	uint32_t devices;
	uint64_t size;			/* bytes, sum of the devices' sizes */
	uint64_t unallocated;
	uint64_t data_allocatable;	/* device bytes a data-only fill would take */
	uint64_t metadata_allocatable;	/* device bytes a metadata-only fill would take */
};

struct btrfsx_usage_device {
	uint64_t devid;
	char path[1024];		/* "" when missing */
	uint64_t hint;
	bool missing;
	uint64_t size;
	uint64_t slack;
	uint64_t unallocated;
	uint64_t data;			/* device bytes in data chunks */
	uint64_t metadata;
	uint64_t system;
};

/* One block group type and profile: a line of the usage's Data/Metadata/System list. */
struct btrfsx_usage_space {
	uint64_t flags;			/* BTRFS_BLOCK_GROUP_* type and profile bits */
	uint64_t total_bytes;		/* logical */
	uint64_t used_bytes;		/* logical */
};

/*
 * One kind's automatic reclaim by the kernel (btrfsx_usage.reclaim): the
 * sysfs settings of a mounted filesystem, the threshold of now, the block
 * groups used below it and what the kernel relocated since the mount.
 * Since 0.3
 */
struct btrfsx_usage_reclaim {
	bool known;			/* the kernel shows this kind's settings */
	bool on;			/* it relocates now or as space runs low */
	bool dynamic;			/* dynamic_reclaim */
	bool periodic;			/* periodic_reclaim */
	uint32_t threshold;		/* percent of a block group's size; 0: off */
	uint64_t below_block_groups;	/* block groups used below the threshold */
	uint64_t below_used;		/* logical bytes in them */
	uint64_t below_size;		/* their logical size */
	uint64_t below_device_bytes;	/* what they take of the devices */
	uint64_t reclaimed_block_groups;	/* since the mount */
	uint64_t reclaimed_bytes;	/* what they held */
	uint64_t reclaim_errors;	/* relocations that failed */
};

/* btrfsx_usage.warnings */
#define BTRFSX_USAGE_W_METADATA_LOW (1u << 0)		/* room < 50% of metadata used */
#define BTRFSX_USAGE_W_DATA_ON_META_DEVS (1u << 1)	/* data may fill metadata_preferred devices */
#define BTRFSX_USAGE_W_HINTS_IGNORED (1u << 2)		/* the mounted kernel ignores the hints */

/* Every figure of `btrfsx filesystem usage`, in bytes. */
struct btrfsx_usage {
	uint8_t fsid[16];
	bool mounted;
	char path[4096];		/* the mount point, or the first device */
	/* Overall, computed as btrfs-progs does */
	uint64_t device_size;
	uint64_t device_allocated;
	int64_t device_unallocated;
	uint64_t device_missing;
	uint64_t device_slack;
	uint64_t used;
	uint64_t progs_free_estimated;	/* btrfs-progs' "Free (estimated)" */
	uint64_t progs_free_min;
	double data_ratio;
	double metadata_ratio;
	/* the allocator model */
	bool hints_honoured;
	bool mixed;			/* mixed data+metadata block groups */
	uint64_t data_profile;		/* block group flags of the next data chunk */
	uint64_t metadata_profile;	/* ... of the next metadata chunk */
	uint64_t data_size;		/* logical bytes in data block groups */
	uint64_t data_used;
	uint64_t metadata_size;
	uint64_t metadata_used;
	uint64_t data_free_in_chunks;
	uint64_t free_estimated;	/* data still writable, preferences as the kernel treats them */
	uint64_t free_strict;		/* ... with every preference strict */
	bool have_statfs;
	uint64_t free_statfs;		/* what df shows (mounted only) */
	uint64_t metadata_free_in_chunks;
	uint64_t metadata_room;		/* metadata still writable */
	uint64_t metadata_room_after_data;	/* ... once data filled its room */
	uint64_t metadata_needed;	/* the warning threshold: 50% of metadata used */
	uint64_t data_on_metadata_devices;	/* device bytes of data chunks now on
						   metadata_only/metadata_preferred devices */
	uint32_t warnings;		/* BTRFSX_USAGE_W_* */
	size_t nr_classes;
	struct btrfsx_usage_class *classes;	/* by hint value */
	size_t nr_devices;
	struct btrfsx_usage_device *devices;	/* by devid */
	/* The rest of the overall section and the per-profile lines */
	bool have_global_reserve;	/* mounted only */
	uint64_t global_reserve;
	uint64_t global_reserve_used;
	char multiple_profiles[32];	/* "" or the types with several profiles, e.g. "data, metadata" */
	bool strict;			/* the model ran with BTRFSX_USAGE_STRICT */
	uint64_t data_new_chunks;	/* logical bytes of the data chunks the model allocated */
	size_t nr_spaces;
	struct btrfsx_usage_space *spaces;	/* data, metadata, system; by profile */
	/*
	 * The kernel whose behaviour the model followed: its version ("6.18";
	 * "" when the running kernel's release could not be read, the newest
	 * behaviour then), and whether it is the running one (not one asked
	 * for with btrfsx_usage_get_for_kernel()). Since 0.3
	 */
	char kernel[16];
	bool kernel_running;
	/*
	 * The kernel's automatic reclaim, which the figures leave out: false
	 * unmounted (or a kernel without it), the rest then 0. Since 0.3
	 */
	bool have_reclaim;
	uint64_t reclaim_data_chunk_size;	/* the data chunk size its rules reckon with */
	uint64_t reclaim_device_bytes_below_threshold;	/* of every kind */
	struct btrfsx_usage_reclaim reclaim[3];	/* data, metadata, system */
};

/* Flags of btrfsx_usage_get(). */
#define BTRFSX_USAGE_IGNORE_HINTS (1u << 0)	/* model the allocator without hints */
#define BTRFSX_USAGE_STRICT (1u << 1)		/* model every preference as strict */

/**
 * btrfsx_usage_get() - filesystem usage, mounted or not.
 * @paths: a mount point (or any path on a mounted btrfs), or the member
 *         devices / image files of an unmounted one (others found by fsid).
 *         A device of a mounted filesystem is read through its mount point.
 * @nr_paths: how many paths (1 for a mount point).
 * @sysfs_root: NULL for "/sys".
 * @flags: BTRFSX_USAGE_*.
 * @out: the result; free with btrfsx_usage_free().
 *
 * The figures are those of `btrfsx filesystem usage`: btrfs-progs' overall
 * section computed the same way, the block group lines, the hint classes,
 * and the allocator model run forward until ENOSPC on each device's free
 * space. Unmounted, the hints are assumed honoured by the next kernel;
 * mounted, as the running kernel treats them (BTRFSX_USAGE_W_HINTS_IGNORED).
 * Each BTRFSX_USAGE_W_* also comes as a warning. Missing members are
 * allowed. Mounted filesystems need CAP_SYS_ADMIN (tree search ioctl):
 * BTRFSX_ERROR_PERMISSION otherwise. BTRFSX_ERROR_INVALID_ARGUMENT for a
 * mount point with further paths.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_usage_get(const char *const *paths, size_t nr_paths,
				   const char *sysfs_root, unsigned int flags,
				   struct btrfsx_usage **out);

/**
 * btrfsx_usage_free() - free a result of btrfsx_usage_get(); NULL is fine.
 * Since: 0.1
 */
void btrfsx_usage_free(struct btrfsx_usage *usage);

/**
 * btrfsx_usage_get_for_kernel() - btrfsx_usage_get() as a given kernel would
 * allocate.
 * @kernel: "MAJOR.MINOR" of a kernel the register knows (6.1 to 7.3; see
 *          btrfsx_kernel_traits_get()); NULL for the running kernel.
 *
 * The same figures, the model following that kernel's behaviour (its
 * traits) instead of the running one's: for a filesystem about to move to
 * another kernel, or to replay a result seen on one. The result's kernel
 * says which. BTRFSX_ERROR_INVALID_ARGUMENT for a version the register does
 * not know, with the message; otherwise as btrfsx_usage_get().
 * Since: 0.3
 */
enum btrfsx_error btrfsx_usage_get_for_kernel(const char *const *paths, size_t nr_paths,
					      const char *sysfs_root, unsigned int flags,
					      const char *kernel, struct btrfsx_usage **out);

/* ---- Read policies of RAID1-family profiles (mounted filesystems) ---- */

enum btrfsx_read_policy_iface {
	BTRFSX_READ_POLICY_IFACE_NONE,		/* no file: the kernel always uses pid */
	BTRFSX_READ_POLICY_IFACE_MAINLINE,	/* /sys/fs/btrfs/<FSID>/read_policy */
	BTRFSX_READ_POLICY_IFACE_EARLIER,	/* .../read_policies/policy */
};

#define BTRFSX_READ_POLICY_MAX_OFFERED 16
#define BTRFSX_READ_POLICY_MAX_MIRRORED 12

struct btrfsx_read_policy {
	char fsid[37];
	enum btrfsx_read_policy_iface iface;
	char active[64];		/* canonical: "pid", "round-robin:262144", "devid:2" */
	size_t nr_offered;
	char offered[BTRFSX_READ_POLICY_MAX_OFFERED][64];	/* as the kernel names them */
	char raw[512];			/* the policy file as read */
	char recorded[64];		/* the persistent record, "" if none */
	bool mirrored_known;		/* false: the block groups could not be listed */
	size_t nr_mirrored;		/* 0: the policy changes nothing on this filesystem */
	char mirrored[BTRFSX_READ_POLICY_MAX_MIRRORED][32];	/* "data/raid1", ... */
};

/**
 * btrfsx_read_policy_get() - the read policy of a mounted filesystem.
 * @path: the mount point or any path on the filesystem.
 * @sysfs_root, @config_dir: NULL for the defaults.
 * @policy: filled on success: the kernel interface, the active policy, what
 *          the kernel offers, the record in @config_dir/read-policy.conf and
 *          the RAID1-family block groups the policy affects (none: a warning).
 *
 * BTRFSX_ERROR_NOT_MOUNTED when @sysfs_root has no fs/btrfs/<FSID>;
 * BTRFSX_ERROR_CORRUPTED when the policy file cannot be parsed.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_read_policy_get(const char *path, const char *sysfs_root,
					 const char *config_dir,
					 struct btrfsx_read_policy *policy);

/* Flags of btrfsx_read_policy_set(). */
#define BTRFSX_READ_POLICY_PERSIST (1u << 0)	/* also record it for later mounts */

/**
 * btrfsx_read_policy_set() - switch the read policy and read it back.
 * @path: the mount point or any path on the filesystem.
 * @policy: "pid", "round-robin", "round-robin:<bytes>" (K, M, G suffixes; a
 *          multiple of the sector size), "devid", "devid:<devid>", or another
 *          name the kernel offers.
 * @flags: BTRFSX_READ_POLICY_PERSIST to record it in
 *         @config_dir/read-policy.conf, applied again at every mount by
 *         btrfsx_read_policy_apply(); without it, a warning when another
 *         policy is recorded (it comes back at the next mount).
 * @sysfs_root, @config_dir: NULL for the defaults.
 * @after: (may be NULL) the state read back, with the record.
 * @changed: (may be NULL) whether anything was written (nothing is when
 *           exactly @policy is active).
 *
 * BTRFSX_ERROR_NOT_SUPPORTED when the kernel does not offer @policy;
 * BTRFSX_ERROR_INVALID_ARGUMENT for a bad value (also one the kernel
 * rejects); BTRFSX_ERROR_IO when the kernel shows another policy afterwards.
 * Nothing is recorded when the switch fails.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_read_policy_set(const char *path, const char *policy,
					 unsigned int flags, const char *sysfs_root,
					 const char *config_dir, struct btrfsx_read_policy *after,
					 bool *changed);

enum btrfsx_apply_status {
	BTRFSX_APPLY_APPLIED,
	BTRFSX_APPLY_UNCHANGED,
	BTRFSX_APPLY_FAILED,
	BTRFSX_APPLY_NO_RECORD,
	BTRFSX_APPLY_NOT_MOUNTED,	/* recorded, not mounted now (only when @path is NULL) */
};

struct btrfsx_apply_result {
	char fsid[37];
	char path[4096];
	char policy[64];		/* "" without a record */
	enum btrfsx_apply_status status;
	char error[512];		/* why, when FAILED */
};

/**
 * btrfsx_read_policy_apply() - apply recorded policies to mounted filesystems.
 * @path: one mounted filesystem, or NULL for every recorded filesystem
 *        (found by FSID among the btrfs mounts of this mount namespace).
 * @sysfs_root, @config_dir: NULL for the defaults.
 * @results, @nr_results: with @path one entry (BTRFSX_APPLY_NO_RECORD when
 *         nothing is recorded for it); without, one entry per record, those not
 *         mounted now as BTRFSX_APPLY_NOT_MOUNTED; free(*results).
 *
 * Return: BTRFSX_OK when every recorded policy was applied; otherwise the
 * first failure's error, with the results still filled.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_read_policy_apply(const char *path, const char *sysfs_root,
					   const char *config_dir,
					   struct btrfsx_apply_result **results,
					   size_t *nr_results);

/* ---- Device read counters of a mounted filesystem ---- */

struct btrfsx_io_stats {
	uint64_t devid;
	char path[1024];
	bool present;			/* false: missing device or no block stat file */
	uint64_t reads;			/* completed read requests */
	uint64_t read_bytes;
};

/**
 * btrfsx_io_stats_sample() - current read counters of every member device.
 * @path: the mount point or any path on the filesystem.
 * @sysfs_root: NULL for "/sys": the counters are its
 *              dev/block/<major>:<minor>/stat files.
 * @stats, @nr_stats: one entry per device, by devid; free(*stats).
 *
 * Two samples a second apart show which devices the read policy uses. A
 * device without a stat file is not present (and a warning);
 * BTRFSX_ERROR_CORRUPTED when a stat file cannot be parsed.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_io_stats_sample(const char *path, const char *sysfs_root,
					 struct btrfsx_io_stats **stats, size_t *nr_stats);

/* ---- Which read policy reads a mounted filesystem fastest, measured ---- */

#define BTRFSX_RECOMMEND_MAX_WORKLOADS 8

/* Patterns of btrfsx_recommend_options.patterns. */
#define BTRFSX_RECOMMEND_SEQUENTIAL (1u << 0)
#define BTRFSX_RECOMMEND_RANDOM (1u << 1)

/* A workload the probe replayed and the policy that read it fastest. */
struct btrfsx_recommend_workload {
	unsigned int readers;		/* each with one 64 KiB request in flight */
	bool random;			/* false: sequential, each reader its own slice */
	char fastest[64];		/* the fastest candidate ("devid:3") */
	double rate;			/* its bytes a second */
};

/* A candidate policy and what it read. */
struct btrfsx_recommend_candidate {
	char policy[64];		/* canonical: "pid", "round-robin:65536", "devid:2" */
	double rates[BTRFSX_RECOMMEND_MAX_WORKLOADS];	/* bytes a second, per workload */
	double worst_ratio;		/* min over workloads of rate / that workload's fastest */
};

/* A member device the probe read, and what else it did meanwhile. */
struct btrfsx_recommend_device {
	uint64_t devid;
	char device[1024];
	bool stats_available;		/* its block device has counters */
	uint64_t probe_bytes;		/* what the probe read from it */
	uint64_t other_read_bytes;	/* what others read meanwhile */
	uint64_t other_write_bytes;	/* ... and wrote */
	bool disturbed;			/* enough to disturb its figures (a warning too) */
};

struct btrfsx_recommendation {
	char fsid[37];
	char mountpoint[4096];
	bool affects_reads;		/* false: no RAID1-family chunk; nothing probed or picked */
	bool metadata_region;		/* the probe read metadata: no mirrored data chunk */
	uint64_t region_bytes;		/* the chunk bytes the probe read from */
	double seconds;			/* the probe took */
	char recommended[64];		/* the pick, "" when none */
	char reason[2048];		/* why, with the figures */
	char current[64];		/* the active policy */
	bool offered;			/* the running kernel takes the pick */
	char not_offered[512];		/* ... and why not */
	bool applied;			/* set and recorded for every mount */
	bool changed;			/* the kernel's policy was another before */
	char persistent[64];		/* the record for every mount, "" if none */
	bool disturbed;			/* some device's figures are */
	/*
	 * Whether each pass of the probe's last round alone picks the same
	 * (a busy host disturbs some replays), and how many rounds it took
	 * to get there (at most 3; each replays every candidate twice).
	 * Since: 0.2 (in the padding after disturbed: no member moved).
	 */
	bool stable;
	uint8_t rounds;
	size_t nr_workloads;
	struct btrfsx_recommend_workload workloads[BTRFSX_RECOMMEND_MAX_WORKLOADS];
	size_t nr_candidates;
	struct btrfsx_recommend_candidate *candidates;	/* pid, round-robin:65536, :262144,
							   :1048576, devid:N in devid order */
	size_t nr_devices;
	struct btrfsx_recommend_device *devices;	/* by devid */
};

/*
 * Called from the calling thread after each replay: @done of @total replays,
 * @seconds since the probe began; returning non-zero cancels the probe.
 */
typedef int (*btrfsx_recommend_progress_fn)(void *arg, size_t done, size_t total,
					    double seconds);

struct btrfsx_recommend_options {
	double seconds;			/* a probe round's bound; 0 for 30 */
	const unsigned int *readers;	/* reader counts (1 to 64); NULL for 1 and 8 */
	size_t nr_readers;		/* at most 4 */
	unsigned int patterns;		/* BTRFSX_RECOMMEND_*; 0 for both */
	bool apply;			/* set the pick and record it for every mount */
	btrfsx_recommend_progress_fn progress;	/* may be NULL */
	void *progress_arg;
	const volatile sig_atomic_t *cancel;	/* may be NULL; non-zero stops the probe */
};

/**
 * btrfsx_read_policy_recommend() - measure which read policy reads the mounted
 * filesystem holding @path fastest, and pick one.
 * @opts: NULL for 30 seconds, 1 and 8 readers, sequential and random.
 * @sysfs_root, @config_dir: NULL for the defaults.
 * @out: the recommendation; free with btrfsx_recommendation_free().
 *
 * Every candidate (pid, round-robin with min_contig_read 64K, 256K and 1M,
 * devid of each device holding copies) is replayed for every workload over
 * the RAID1-family chunks the filesystem holds, straight from its member
 * devices (read-only, O_DIRECT, 64 KiB requests), twice, within @opts->seconds;
 * the pick is the fastest policy with one workload, else the one whose
 * worst workload comes closest to that workload's fastest. When a pass of
 * those two alone would pick otherwise (a busy host), the round is repeated,
 * each taking @opts->seconds, up to 3 rounds: stable and rounds say how it
 * ended. Devices others
 * read or wrote meanwhile are marked disturbed, with a warning. Needs root
 * (the chunk tree, the block devices). Without RAID1-family chunks the
 * result says so (affects_reads false) and nothing is probed. With
 * @opts->apply the pick is set and recorded as btrfsx_read_policy_set() with
 * BTRFSX_READ_POLICY_PERSIST does: BTRFSX_ERROR_NOT_SUPPORTED (with *@out
 * filled) when the running kernel does not offer it. BTRFSX_ERROR_CANCELLED
 * when cancelled (nothing recommended, nothing applied);
 * BTRFSX_ERROR_INVALID_ARGUMENT when @opts->seconds is too short for the
 * replays (the message says how long).
 * Since: 0.2
 */
enum btrfsx_error btrfsx_read_policy_recommend(const char *path,
					       const struct btrfsx_recommend_options *opts,
					       const char *sysfs_root, const char *config_dir,
					       struct btrfsx_recommendation **out);

/**
 * btrfsx_recommendation_free() - free a result of btrfsx_read_policy_recommend();
 * NULL is fine.
 * Since: 0.2
 */
void btrfsx_recommendation_free(struct btrfsx_recommendation *r);

/* ---- Offline scrub ---- */

/* The kernel scrub's counters (same names and units), and two of btrfsx's. */
struct btrfsx_scrub_counters {
	uint64_t data_extents_scrubbed;
	uint64_t tree_extents_scrubbed;
	uint64_t data_bytes_scrubbed;
	uint64_t tree_bytes_scrubbed;
	uint64_t read_errors;
	uint64_t csum_errors;
	uint64_t verify_errors;
	uint64_t no_csum;
	uint64_t csum_discards;
	uint64_t super_errors;
	uint64_t malloc_errors;
	uint64_t uncorrectable_errors;
	uint64_t unverified_errors;
	uint64_t corrected_errors;
	uint64_t last_physical;
	uint64_t parity_errors;		/* btrfsx: RAID5/6 P/Q that disagreed */
	uint64_t super_corrected;	/* btrfsx: superblock copies rewritten */
};

struct btrfsx_scrub_device {
	uint64_t devid;
	char path[1024];		/* "" when missing */
	bool missing;
	uint64_t bytes_to_scrub;
	struct btrfsx_scrub_counters counters;
	/*
	 * How much shorter the device is than its device item says (a
	 * truncated image; the kernel does not mount such a filesystem):
	 * what lies beyond its end was not scrubbed. Since: 0.2
	 */
	uint64_t short_bytes;
};

/* One bad copy found. */
struct btrfsx_scrub_error {
	char what[16];			/* "data", "tree", "super", "parity" */
	char fault[16];			/* "read", "csum", "verify", "super", "parity" */
	char fix[16];			/* "corrected", "correctable", "uncorrectable" */
	uint64_t logical;
	uint32_t len;
	uint64_t devid;
	uint64_t physical;
	int mirror;			/* 1-based; 0 for superblocks and parity */
	char reason[64];
};

/* A file holding uncorrectable data. */
struct btrfsx_scrub_file {
	uint64_t logical;
	uint64_t root;
	uint64_t inode;
	uint64_t offset;
	char path[4096];		/* "" when it could not be resolved */
};

struct btrfsx_scrub_result {
	uint8_t fsid[16];
	bool readonly;
	bool metadata_only;		/* data was not read (options.metadata_only). Since 0.2 */
	bool cancelled;
	bool degraded;			/* a member is missing; its copies were not scrubbed */
	time_t started;
	double duration;		/* seconds */
	uint64_t bytes_to_scrub;
	struct btrfsx_scrub_counters total;
	size_t nr_devices;
	struct btrfsx_scrub_device *devices;
	size_t nr_errors;
	struct btrfsx_scrub_error *errors;	/* the first 4096 */
	uint64_t errors_dropped;
	size_t nr_files;
	struct btrfsx_scrub_file *files;
	bool uncorrectable;		/* something is left bad (the CLI's exit 3) */
};

struct btrfsx_scrub_progress {
	uint64_t bytes_done;
	uint64_t bytes_total;
	double elapsed;			/* seconds */
	struct btrfsx_scrub_counters total;	/* so far */
};

/*
 * Called from the calling thread once the scrub has started, about every
 * @progress_interval seconds and once at the end; returning non-zero cancels
 * the scrub (the value of the last call is ignored).
 */
typedef int (*btrfsx_scrub_progress_fn)(void *arg, const struct btrfsx_scrub_progress *p);

struct btrfsx_scrub_options {
	bool readonly;			/* find, do not repair */
	bool no_readahead;		/* tree walks without forward readahead */
	btrfsx_scrub_progress_fn progress;	/* may be NULL */
	void *progress_arg;
	double progress_interval;	/* seconds; 0 for 0.5 */
	const volatile sig_atomic_t *cancel;	/* may be NULL; non-zero stops the scrub (with a
					   progress callback, seen at its next call). Set it from a
					   signal handler, or from a thread with __atomic_store_n();
					   on Linux sig_atomic_t is the int this used to be */
	uint64_t memory_bytes;		/* read buffers in all; 0 for 48 MiB (96 MiB for
					   sha256 and blake2b), at least 1 MiB. More reads
					   faster on deep storage. Since 0.1 */
	bool metadata_only;		/* superblocks and tree blocks only, no data. Since 0.2 */
	const char *state_dir;		/* where the run's status is kept for `btrfsx scrub
					   status` and the monitor (<state_dir>/scrub/<fsid>.json,
					   as the command keeps it); NULL: /var/lib/btrfsx.
					   Since 0.2 */
	unsigned int io_timeout;	/* seconds a read or write of a device may take
					   before the device counts as stalled; 0: 60 (as
					   the command), BTRFSX_IO_TIMEOUT_NONE: wait. Since 0.2 */
};

/* btrfsx_scrub_options.io_timeout: wait however long a device takes. Since 0.2 */
#define BTRFSX_IO_TIMEOUT_NONE (~0u)

/**
 * btrfsx_scrub_offline() - verify (and unless readonly, repair) every copy of
 * every block of an unmounted filesystem.
 * @paths: member devices or image files; others are found by fsid, missing
 *         ones allowed (result->degraded).
 * @opts: NULL for a repairing scrub with readahead and no progress.
 * @result: filled when the scrub ran, whatever it found (also when
 *          cancelled: then BTRFSX_ERROR_CANCELLED and result->cancelled);
 *          free with btrfsx_scrub_result_free().
 *
 * The filesystem is opened as `btrfsx scrub start --offline` opens it:
 * every member exclusively, read-write unless @opts->readonly.
 * BTRFSX_ERROR_MOUNTED when the kernel has it mounted, BTRFSX_ERROR_BUSY
 * when another program holds a member or an image file is attached to a
 * loop device, BTRFSX_ERROR_PERMISSION for a read-only device without
 * @opts->readonly, BTRFSX_ERROR_IO when a device stalls (a read or write
 * not done after @opts->io_timeout seconds). Devices are read in parallel; the counters equal the
 * kernel scrub's for the same filesystem. Missing members: a warning each.
 * The run is recorded as `btrfsx scrub start` records it, "running" while
 * it runs, then its result, in @opts->state_dir: `btrfsx scrub status` and
 * `btrfsx monitor record` see it; a status that cannot be written is a
 * warning.
 * Since: 0.1
 */
enum btrfsx_error btrfsx_scrub_offline(const char *const *paths, size_t nr_paths,
				       const struct btrfsx_scrub_options *opts,
				       struct btrfsx_scrub_result **result);

/**
 * btrfsx_scrub_result_free() - free a scrub result; NULL is fine.
 * Since: 0.1
 */
void btrfsx_scrub_result_free(struct btrfsx_scrub_result *result);

/* ---- The monitor history (btrfsx monitor record) and its projections ---- */

/* The default history: what `btrfsx monitor record` writes without BTRFSX_STATE_DIR. */
#define BTRFSX_MONITOR_DEFAULT_DB "/var/lib/btrfsx/monitor.db"

/* The filesystem-wide figures of one sample, in bytes (as `btrfsx filesystem usage`). */
struct btrfsx_monitor_sample {
	int64_t time;			/* seconds since the epoch */
	uint64_t device_size;
	uint64_t device_allocated;
	uint64_t used;
	uint64_t data_size;		/* logical, in data block groups */
	uint64_t data_used;
	uint64_t metadata_size;
	uint64_t metadata_used;
	uint64_t free_estimated;
	uint64_t free_strict;
	bool have_statfs;
	uint64_t free_statfs;
	uint64_t metadata_room;
	uint64_t metadata_room_after_data;
	uint64_t global_reserve;
	uint64_t global_reserve_used;
};

/**
 * btrfsx_monitor_history() - the samples of one filesystem in the history.
 * @db: the history; NULL for BTRFSX_MONITOR_DEFAULT_DB.
 * @filesystem: its fsid, a mount point it was recorded at, or a path on it
 *              while it is mounted.
 * @since: the first time wanted (seconds since the epoch).
 * @until: the last.
 * @samples: the samples with since <= time <= until, in time order; free() it.
 * @nr_samples: how many.
 *
 * Opens the history read-only. BTRFSX_ERROR_NOT_FOUND when there is no
 * history or the filesystem is not in it; BTRFSX_ERROR_CORRUPTED for a
 * damaged file; BTRFSX_ERROR_INVALID_ARGUMENT for another program's
 * database or a schema newer than this library's; BTRFSX_ERROR_BUSY when a
 * writer held it too long.
 * Since: 0.2
 */
enum btrfsx_error btrfsx_monitor_history(const char *db, const char *filesystem,
					 int64_t since, int64_t until,
					 struct btrfsx_monitor_sample **samples, size_t *nr_samples);

/* A fitted pace (bytes per second) and the days it leaves, with 95% ranges. */
struct btrfsx_monitor_trend {
	bool ok;			/* enough history: the rest is filled */
	double growth;			/* bytes per second */
	double growth_low;
	double growth_high;
	size_t one_off_changes;		/* jumps left out of the fit */
	bool exhausts;			/* the pace consumes the room */
	double days_left;		/* from now; INFINITY when it does not */
	double days_left_low;		/* the soonest */
	double days_left_high;		/* the latest; INFINITY when the range includes no growth */
};

/* Where one filesystem is heading: `btrfsx monitor report`. */
struct btrfsx_monitor_projection {
	uint8_t fsid[16];
	char label[256];		/* as last recorded */
	char mountpoint[4096];
	int64_t now;
	int64_t window;			/* seconds before now */
	size_t nr_samples;		/* in the window */
	bool have_latest;		/* a sample in the window: latest is filled */
	struct btrfsx_monitor_sample latest;
	uint64_t metadata_left;		/* metadata_room less the global reserve */
	struct btrfsx_monitor_trend metadata;	/* metadata use; days until metadata ENOSPC */
	struct btrfsx_monitor_trend data;	/* data use; days until free_estimated is gone */
	char reason[128];		/* why there is no projection; "" when both are ok */
	/* Since 0.2: no projection without evidence (see btrfsx_monitor_projections()) */
	int64_t min_history;		/* BTRFSX_MONITOR_MIN_HISTORY */
	int64_t history_span;		/* the newest sample's time less the oldest's */
	bool learning;			/* too little history: metadata and data not ok */
	double metadata_growth_seen;	/* while learning: bytes, newest less oldest sample */
	double data_growth_seen;
	bool burst;			/* while learning: at that pace the metadata room or
					   the strict free space lasts less than 30 days */
};

/* The learning span of btrfsx_monitor_projections(): a day. */
#define BTRFSX_MONITOR_MIN_HISTORY 86400

/**
 * btrfsx_monitor_projections() - the projections of `btrfsx monitor report`.
 * @db: the history; NULL for BTRFSX_MONITOR_DEFAULT_DB.
 * @filesystems: fsids, recorded mount points or paths on mounted
 *               filesystems; NULL (with @nr_filesystems 0) for every one in
 *               the history.
 * @nr_filesystems: how many.
 * @now: the end of the window (seconds since the epoch; days count from it).
 * @window: its length in seconds (e.g. 30 days: 2592000).
 * @projections: one per filesystem, in the order asked (or by fsid); free() it.
 * @nr_projections: how many.
 *
 * The pace is a robust fit (Theil-Sen with up to three one-off jumps, a
 * balance or a deletion, left out); metadata's days run until the metadata
 * room falls to the global reserve, data taking its share of the room where
 * the two share devices; data's until free_estimated is gone. No projection
 * without evidence: until the window's samples span BTRFSX_MONITOR_MIN_HISTORY
 * and number 3, the filesystem is @learning, neither trend is ok, and
 * @reason tells the growth seen (a @burst when at its pace the room would
 * last less than 30 days) instead: `btrfsx monitor report` does the same
 * with its default --min-history. A window of a day or less is always
 * learning. Errors as btrfsx_monitor_history();
 * BTRFSX_ERROR_INVALID_ARGUMENT for a window that is not positive.
 * Since: 0.2
 */
enum btrfsx_error btrfsx_monitor_projections(const char *db, const char *const *filesystems,
					     size_t nr_filesystems, int64_t now, int64_t window,
					     struct btrfsx_monitor_projection **projections,
					     size_t *nr_projections);

/* ---- Misplaced chunks: the report and the relocation ---- */

enum btrfsx_misplaced_class {
	BTRFSX_MISPLACED_FORBIDDEN = 1,		/* a stripe where the hint excludes the type */
	BTRFSX_MISPLACED_OFF_PREFERENCE = 2,	/* a worse tier while a better one has room */
};

/* One chunk whose devices break the hints. Arrays are owned by the result. */
struct btrfsx_misplaced_chunk {
	uint64_t logical;
	uint64_t length;		/* logical bytes */
	uint64_t used;			/* logical bytes in use: what a relocation copies */
	uint64_t flags;			/* BTRFS_BLOCK_GROUP_* type and profile bits */
	enum btrfsx_misplaced_class cls;
	size_t nr_devids;
	uint64_t *devids;		/* each stripe's device, in stripe order */
	size_t nr_offending;
	uint64_t *offending;		/* the devices breaking the hints */
	/* where the allocator model would put a new chunk of this kind now */
	bool have_model;		/* false: the model finds no room */
	uint64_t model_flags;
	uint64_t model_length;
	size_t nr_model_devids;
	uint64_t *model_devids;
};

struct btrfsx_misplaced_totals {
	uint64_t chunks;
	uint64_t allocated;		/* logical bytes */
	uint64_t used;			/* logical bytes: what a relocation copies */
	double estimate_seconds;	/* from the measured copy rate; < 0: unknown */
};

struct btrfsx_misplaced {
	uint8_t fsid[16];
	bool mounted;
	char path[4096];
	bool hints_effective;		/* new chunks follow the hints (mounted: the kernel's support) */
	uint64_t chunks_checked;
	struct btrfsx_misplaced_totals forbidden;
	struct btrfsx_misplaced_totals off_preference;
	double copy_rate;		/* used bytes per second of earlier relocations; 0: none */
	size_t nr_chunks;
	struct btrfsx_misplaced_chunk *chunks;	/* forbidden first, then by used bytes */
	char kernel[16];		/* as btrfsx_usage.kernel. Since 0.3 */
	bool kernel_running;		/* Since 0.3 */
};

/**
 * btrfsx_misplaced_get() - the chunks whose devices break the allocation hints.
 * @paths: a mount point, or the member devices / image files of an unmounted
 *         filesystem (as btrfsx_usage_get()).
 * @nr_paths: how many paths.
 * @sysfs_root: NULL for "/sys".
 * @state_dir: where relocations recorded their copy rate (the estimate);
 *             NULL for /var/lib/btrfsx.
 * @out: the result; free with btrfsx_misplaced_free().
 *
 * The report of `btrfsx filesystem misplaced`: forbidden chunks (a stripe on
 * a device whose hint excludes the chunk's type) and off-preference chunks
 * (a stripe on a worse tier while the allocator model would place a new
 * chunk of that kind better now), each with where the model would put it.
 * The hints are the stored ones also when the running kernel ignores them
 * (hints_effective false, and a warning). Mounted filesystems need
 * CAP_SYS_ADMIN.
 * Since: 0.2
 */
enum btrfsx_error btrfsx_misplaced_get(const char *const *paths, size_t nr_paths,
				       const char *sysfs_root, const char *state_dir,
				       struct btrfsx_misplaced **out);

/**
 * btrfsx_misplaced_free() - free a result of btrfsx_misplaced_get(); NULL is fine.
 * Since: 0.2
 */
void btrfsx_misplaced_free(struct btrfsx_misplaced *misplaced);

/**
 * btrfsx_misplaced_get_for_kernel() - btrfsx_misplaced_get() as a given
 * kernel would place new chunks.
 * @kernel: as for btrfsx_usage_get_for_kernel(); NULL for the running kernel.
 * Since: 0.3
 */
enum btrfsx_error btrfsx_misplaced_get_for_kernel(const char *const *paths, size_t nr_paths,
						  const char *sysfs_root, const char *state_dir,
						  const char *kernel,
						  struct btrfsx_misplaced **out);

struct btrfsx_relocate_progress {
	uint64_t chunks_done;
	uint64_t chunks_total;		/* planned at the start */
	uint64_t bytes_done;		/* used bytes moved */
	uint64_t bytes_total;
	double elapsed;			/* seconds */
	double kernel_seconds;		/* in the kernel's balance calls */
	uint64_t current;		/* logical address of the chunk being moved; 0: none */
	uint64_t current_used;
	bool pausing;			/* waiting between chunks */
};

/*
 * Called from the calling thread about every @progress_interval seconds,
 * also while a chunk moves; non-zero cancels the run (the chunk being moved
 * through the kernel's balance control).
 */
typedef int (*btrfsx_relocate_progress_fn)(void *arg, const struct btrfsx_relocate_progress *p);

struct btrfsx_relocate_options {
	bool forbidden_only;		/* leave off-preference chunks alone */
	bool dry_run;			/* plan and check the room, move nothing */
	bool force;			/* move even when the kernel ignores hints */
	uint64_t limit;			/* at most this many chunks; 0: no limit */
	uint64_t max_bytes;		/* at most this many used bytes; 0: no limit */
	double pause;			/* seconds between chunks */
	const char *sysfs_root;		/* NULL: "/sys" */
	const char *state_dir;		/* copy rate and lock; NULL: /var/lib/btrfsx */
	btrfsx_relocate_progress_fn progress;	/* may be NULL */
	void *progress_arg;
	double progress_interval;	/* seconds; 0: 0.5 */
	const volatile int *cancel;	/* may be NULL; non-zero cancels */
};

/* A chunk the kernel created while one was moved. */
struct btrfsx_relocated_new {
	uint64_t logical;
	uint64_t flags;
	uint64_t length;
	size_t nr_devids;
	uint64_t *devids;
	bool as_modelled;		/* where the allocator model put it */
	bool improves;			/* better placed than the chunk moved */
};

struct btrfsx_relocated {
	uint64_t logical;
	uint64_t flags;
	uint64_t length;
	uint64_t used;
	enum btrfsx_misplaced_class cls;
	size_t nr_devids;
	uint64_t *devids;		/* where it was */
	double seconds;			/* in the kernel's balance call */
	size_t nr_new;
	struct btrfsx_relocated_new *new_chunks;	/* none: packed into existing chunks */
	bool as_modelled;
};

enum btrfsx_relocate_status {
	BTRFSX_RELOCATE_DONE,		/* nothing (selected) is misplaced any more */
	BTRFSX_RELOCATE_LIMIT,		/* the chunk or byte limit was reached */
	BTRFSX_RELOCATE_DRY_RUN,
	BTRFSX_RELOCATE_CANCELLED,
	BTRFSX_RELOCATE_NO_ROOM,	/* the model has no room for a chunk to move */
	BTRFSX_RELOCATE_ENOSPC,		/* the kernel ran out of space */
	BTRFSX_RELOCATE_MISPLACED_AGAIN,	/* a new chunk is placed no better */
	BTRFSX_RELOCATE_FAILED,
};

struct btrfsx_relocate_result {
	enum btrfsx_relocate_status status;
	char reason[2048];		/* why it stopped; "" when done */
	bool hints_effective;
	bool forced;
	uint8_t fsid[16];
	size_t nr_planned;
	struct btrfsx_misplaced_chunk *planned;	/* what the run meant to move, in order */
	uint64_t planned_bytes;
	size_t nr_relocated;
	struct btrfsx_relocated *relocated;
	uint64_t bytes_moved;
	double seconds;
	double kernel_seconds;
	uint64_t remaining_chunks;	/* misplaced at the end (all, whatever was selected) */
	uint64_t remaining_bytes;
	/* a dry run: what a real run would be refused for; "" nothing. Since 0.2 */
	char refused[2048];
};

/**
 * btrfsx_relocate_misplaced() - move the misplaced chunks of a mounted
 * filesystem, one kernel balance call per chunk.
 * @path: the mount point (a member device stands for it).
 * @opts: NULL for every chunk, no pause, no progress.
 * @result: filled once the run started (also when it stopped early: see
 *          ->status and ->reason); free with btrfsx_relocate_result_free().
 *
 * `btrfsx balance misplaced`: forbidden chunks first, then off-preference
 * ones; the allocator model must have room for every chunk planned
 * (BTRFSX_ERROR_NO_SPACE otherwise, with the reason); after each chunk the
 * new chunks are compared with the model, and one placed no better stops
 * the run (BTRFSX_ERROR_NO_SPACE). BTRFSX_ERROR_CANCELLED when cancelled;
 * BTRFSX_ERROR_BUSY when a balance runs or is paused, or another relocation
 * of this filesystem runs; BTRFSX_ERROR_NOT_SUPPORTED when the kernel ignores
 * hints (unless @opts->force; forced, when the kernel put a chunk where the
 * hints forbid or no better: every new chunk is compared with the model under
 * the stored hints). A dry run is not refused for any of these: ->refused
 * says what a real run would be. BTRFSX_ERROR_NOT_MOUNTED for an unmounted
 * filesystem; BTRFSX_ERROR_PERMISSION for a read-only mount or
 * without CAP_SYS_ADMIN. Running again resumes: what is still misplaced is
 * worked out afresh.
 * Since: 0.2
 */
enum btrfsx_error btrfsx_relocate_misplaced(const char *path,
					    const struct btrfsx_relocate_options *opts,
					    struct btrfsx_relocate_result **result);

/**
 * btrfsx_relocate_result_free() - free a relocation result; NULL is fine.
 * Since: 0.2
 */
void btrfsx_relocate_result_free(struct btrfsx_relocate_result *result);

/* ---- Maintenance: metadata room and placement ---- */

/* Why a chunk moves. */
enum btrfsx_maintain_reason {
	BTRFSX_MAINTAIN_ROOM,		/* metadata room below the target */
	BTRFSX_MAINTAIN_EMPTY,		/* an empty or nearly empty block group */
	BTRFSX_MAINTAIN_MISPLACED,	/* the hints want it elsewhere */
};

struct btrfsx_maintain_chunk {
	enum btrfsx_maintain_reason reason;
	uint64_t logical;
	uint64_t length;
	uint64_t used;			/* what the kernel copies */
	uint64_t type;			/* type and profile bits */
	double seconds;			/* planned: at the copy rate (< 0 unknown); moved: taken */
};

struct btrfsx_maintain_state {
	uint64_t metadata_room;
	uint64_t metadata_used;
	uint64_t unallocated;		/* device bytes, writable devices */
	double days_left;		/* at the pace; < 0 unknown, INFINITY when none is used */
	uint64_t misplaced;		/* chunks breaking the hints */
};

enum btrfsx_maintain_status {
	BTRFSX_MAINTAIN_NOTHING,	/* the target is met already */
	BTRFSX_MAINTAIN_PLANNED,	/* the actions meet it (a plan) */
	BTRFSX_MAINTAIN_MET,		/* the run met it */
	BTRFSX_MAINTAIN_CANNOT,		/* moving data cannot meet it (device_needed) */
	BTRFSX_MAINTAIN_STOPPED,	/* the run stopped before it: window, busy, cancel */
	BTRFSX_MAINTAIN_FAILED,
};

struct btrfsx_maintain_options {
	bool plan_only;			/* plan (a dry run): write nothing, not even a lock */
	const char *policy_file;	/* NULL: <sysconfdir>/btrfsx/maintain.conf if there */
	double pace;			/* metadata bytes a day; < 0 unknown, 0 none */
	const char *sysfs_root;		/* NULL: "/sys" */
	const char *state_dir;		/* copy rate and lock; NULL: /var/lib/btrfsx */
	/* 1: stop after the chunk moving now; 2: cancel it too. May be NULL. */
	const volatile int *cancel;
};

struct btrfsx_maintain_result {
	enum btrfsx_maintain_status status;
	uint8_t fsid[16];
	char path[4096];		/* the mount point */
	char refused[1024];		/* plan only: what a real run would be refused for */
	char reason[1024];		/* cannot meet, stopped, failed: why */
	bool target_met;
	uint64_t target;		/* metadata room wanted; 0: none */
	char target_why[256];
	bool room_below;		/* the room was below the target at the start */
	bool placement_wanted;		/* misplaced chunks to move */
	struct btrfsx_maintain_state before;
	struct btrfsx_maintain_state after;	/* predicted */
	struct btrfsx_maintain_state final;	/* read after a run (a plan: predicted) */
	size_t nr_actions;
	struct btrfsx_maintain_chunk *actions;	/* the plan, in order */
	uint64_t bytes_planned;
	double seconds_planned;		/* < 0 unknown */
	uint64_t chunks_created;	/* predicted new chunks */
	uint64_t device_needed;		/* cannot meet: a device of at least this would */
	double copy_rate;		/* used bytes a second measured before; 0 none */
	size_t nr_moved;
	struct btrfsx_maintain_chunk *moved;
	uint64_t bytes_moved;
	double seconds;
	double kernel_seconds;
	double paused_seconds;
};

/**
 * btrfsx_maintain() - plan or run maintenance on a mounted filesystem:
 * the fewest chunks moved that keep its metadata room at the policy's
 * target, and its chunks where the hints want them.
 * @path: the mount point (a member device stands for it).
 * @opts: NULL: run with the policy file and no pace.
 * @result: filled once the filesystem was read; free with
 *          btrfsx_maintain_result_free().
 *
 * `btrfsx maintain plan|run` (btrfsx-maintain(8)). A run moves chunk by
 * chunk through the kernel, paced by the policy, and stops once the target
 * is met; ->status says whether it was, could not be (->device_needed) or
 * stopped early. BTRFSX_ERROR_BUSY beside a balance, replace, resize,
 * device add or remove, scrub or another relocation; BTRFSX_ERROR_PERMISSION
 * on a read-only mount; BTRFSX_ERROR_MISSING_DEVICE degraded;
 * BTRFSX_ERROR_INVALID_ARGUMENT for a bad policy file. A plan is refused
 * for none of these: ->refused says what a run would be.
 * Since: 0.3
 */
enum btrfsx_error btrfsx_maintain(const char *path, const struct btrfsx_maintain_options *opts,
				  struct btrfsx_maintain_result **result);

/**
 * btrfsx_maintain_result_free() - free a maintenance result; NULL is fine.
 * Since: 0.3
 */
void btrfsx_maintain_result_free(struct btrfsx_maintain_result *result);

/* ---- The what-if planner ---- */

enum btrfsx_plan_op {
	BTRFSX_PLAN_ADD,	/* a new device of size, hint when has_hint */
	BTRFSX_PLAN_REMOVE,	/* devid */
	BTRFSX_PLAN_RESIZE,	/* devid to size */
	BTRFSX_PLAN_HINT,	/* devid gets hint */
	BTRFSX_PLAN_CONVERT,	/* flags: the type (data or metadata) and its new profile */
	BTRFSX_PLAN_REPLACE,	/* devid by a device of size, hint when has_hint */
	BTRFSX_PLAN_RELOCATE,	/* the misplaced chunks moved */
	BTRFSX_PLAN_BALANCE,	/* flags: the kinds; *_usage_*: their filters (Since: 0.2) */
	BTRFSX_PLAN_RESUME,	/* the paused balance resumed to its end (Since: 0.2) */
};

/* A resize to the size of the device itself ("3=max"). Since: 0.2 */
#define BTRFSX_PLAN_SIZE_MAX UINT64_MAX

/* One change of a plan. */
struct btrfsx_plan_change {
	enum btrfsx_plan_op op;
	uint64_t devid;
	uint64_t size;			/* bytes; resize: BTRFSX_PLAN_SIZE_MAX for "max" */
	uint64_t hint;
	bool has_hint;
	/*
	 * balance: a chunk of a kind in flags is balanced when its used bytes
	 * are at least MIN and below MAX percent of its size (MAX 0: the empty
	 * ones); metadata's range holds for system chunks too. Since: 0.2 (in
	 * the padding after has_hint: no member moved).
	 */
	uint8_t data_usage_min, data_usage_max;
	uint8_t metadata_usage_min, metadata_usage_max;
	/* convert: BTRFS_BLOCK_GROUP_DATA or _METADATA | profile; balance: DATA and/or METADATA */
	uint64_t flags;
};

/**
 * btrfsx_plan_change_parse() - a change as `btrfsx filesystem plan` spells it.
 * @op: "add", "remove", "resize", "hint", "convert", "replace", "relocate",
 *      "balance" or "resume".
 * @value: its value ("64G:metadata_only", "3", "3=10G", "3=max", "3=data_only",
 *         "data=raid1", "2=1T:metadata_only", "dusage=50,musage=10..30");
 *         NULL for relocate and resume.
 * @change: filled on success.
 *
 * Return: BTRFSX_OK, or BTRFSX_ERROR_INVALID_ARGUMENT with a message saying
 * what is wrong.
 * Since: 0.2
 */
enum btrfsx_error btrfsx_plan_change_parse(const char *op, const char *value,
					   struct btrfsx_plan_change *change);

enum btrfsx_plan_status {
	BTRFSX_PLAN_POSSIBLE,
	BTRFSX_PLAN_IMPOSSIBLE,		/* the kernel would fail or refuse it: see reason */
	BTRFSX_PLAN_NOT_REACHED,	/* an earlier change is impossible */
};

/* A device a short type of chunk may use, as the failed change leaves it. */
struct btrfsx_plan_short_device {
	uint64_t devid;
	uint64_t hint;
	uint32_t tier;			/* the allocator's tier for the type (1 first) */
	uint64_t unallocated;
};

/* Chunks of one type that a change cannot place. */
struct btrfsx_plan_short {
	uint64_t flags;			/* type and profile of the chunks it needs */
	uint64_t missing;		/* used bytes without room */
	uint32_t chunks;		/* chunks that could not move */
	size_t nr_devices;
	struct btrfsx_plan_short_device *devices;	/* best tier first */
};

struct btrfsx_plan_step {
	struct btrfsx_plan_change change;
	char description[160];		/* "remove devid 3", ... */
	uint64_t devid;			/* the device it acts on (add: the new devid) */
	enum btrfsx_plan_status status;
	bool tight;			/* possible, but the kernel's space reservation may fail it */
	char reason[1024];		/* impossible: why */
	uint64_t moved_chunks;		/* chunks relocated or rewritten */
	uint64_t moved_bytes;		/* their used bytes: what is copied */
	uint64_t moved_length;		/* their logical bytes */
	uint64_t new_chunks;		/* chunks allocated meanwhile */
	uint64_t new_length;
	uint64_t copied_bytes;		/* replace: bytes copied to the new device */
	size_t nr_short;
	struct btrfsx_plan_short *shorts;
};

/* A chunk a change moves, or one it creates. */
struct btrfsx_plan_chunk {
	size_t step;			/* index into btrfsx_plan.steps */
	uint64_t logical;
	uint64_t length;
	uint64_t used;			/* moved: when its change began; created: bytes placed */
	uint64_t used_before;		/* in the filesystem now */
	bool existed;			/* false: an earlier change of the plan made it */
	uint64_t flags;
	size_t nr_devids;
	uint64_t *devids;		/* in stripe order */
};

/* A plan and what it leads to; every array is owned by it. */
struct btrfsx_plan {
	bool possible;			/* every change is */
	size_t nr_steps;
	struct btrfsx_plan_step *steps;
	struct btrfsx_usage *before;	/* the usage figures now */
	struct btrfsx_usage *after;	/* ... after the plan (as far as it got) */
	size_t nr_moved;
	struct btrfsx_plan_chunk *moved;
	size_t nr_created;
	struct btrfsx_plan_chunk *created;
	/* NULL when no hint is set before or after the plan */
	struct btrfsx_misplaced *misplaced_after;
	bool *newly_misplaced;		/* per misplaced_after chunk: not misplaced now */
	size_t nr_warnings;
	char (*warnings)[512];		/* also btrfsx_warning() */
	char kernel[16];		/* as btrfsx_usage.kernel. Since 0.3 */
	bool kernel_running;		/* Since 0.3 */
};

/**
 * btrfsx_plan() - the space and placement after a list of changes, before
 * making them.
 * @paths: a mount point, or the member devices / image files of an
 *         unmounted filesystem (as btrfsx_usage_get()).
 * @nr_paths: how many paths.
 * @sysfs_root: NULL for "/sys".
 * @changes: applied in order (btrfsx_plan_change_parse() spells them).
 * @nr_changes: at least one.
 * @out: the result; free with btrfsx_plan_free().
 *
 * The computation of `btrfsx filesystem plan`: each change applied to a copy
 * of the filesystem as the kernel makes it (see that command's manual),
 * then the usage figures and the misplaced chunks of the result. Nothing is
 * changed. An impossible change is no error: see ->possible and each
 * step's status and reason. BTRFSX_ERROR_INVALID_ARGUMENT for a plan that
 * cannot be made (an unknown devid, a size below the smallest device or a
 * replace's source, a profile the devices cannot hold, conflicting
 * changes), with the message. Mounted filesystems need CAP_SYS_ADMIN.
 * Since: 0.2
 */
enum btrfsx_error btrfsx_plan(const char *const *paths, size_t nr_paths, const char *sysfs_root,
			      const struct btrfsx_plan_change *changes, size_t nr_changes,
			      struct btrfsx_plan **out);

/**
 * btrfsx_plan_free() - free a result of btrfsx_plan(); NULL is fine.
 * Since: 0.2
 */
void btrfsx_plan_free(struct btrfsx_plan *plan);

/**
 * btrfsx_plan_for_kernel() - btrfsx_plan() as a given kernel would make the
 * changes.
 * @kernel: as for btrfsx_usage_get_for_kernel(); NULL for the running kernel.
 *
 * Before an upgrade, or to replay a plan made on another machine: the
 * relocations, the cleaner and the space reservations follow that kernel.
 * Since: 0.3
 */
enum btrfsx_error btrfsx_plan_for_kernel(const char *const *paths, size_t nr_paths,
					 const char *sysfs_root, const char *kernel,
					 const struct btrfsx_plan_change *changes,
					 size_t nr_changes, struct btrfsx_plan **out);

/* ---- What btrfsx knows about the kernel ---- */

/*
 * One behaviour of the kernel the models follow. The strings are the
 * library's, valid as long as it is loaded.
 */
struct btrfsx_kernel_trait {
	const char *name;		/* "size_classes" */
	char first[16];			/* the first version with it; "" every kernel known */
	char last[16];			/* the last version with it; "" still there */
	bool active;			/* the kernel asked about has it */
	const char *function;		/* the kernel function it follows */
	const char *model;		/* the btrfsx file that follows it */
	const char *summary;
	const char *evidence;		/* the traces and test cases that showed it */
	const char *test;		/* the unit test that pins it, file:function */
	const char *unversioned;	/* why no version is known; NULL with a first version */
};

/* The register of kernel behaviour, for one kernel. */
struct btrfsx_kernel_traits {
	char kernel[16];		/* "6.18"; "" when the release could not be read */
	char release[65];		/* uname -r, or the version asked for */
	bool kernel_running;		/* the running kernel, not one asked for */
	size_t nr_traits;
	struct btrfsx_kernel_trait *traits;
};

/**
 * btrfsx_kernel_traits_get() - every kernel behaviour the models follow, and
 * which a kernel has.
 * @kernel: "MAJOR.MINOR" (6.1 to 7.3); NULL for the running kernel.
 * @out: the result; free with btrfsx_kernel_traits_free().
 *
 * `btrfsx inspect kernel-traits`. BTRFSX_ERROR_INVALID_ARGUMENT for a
 * version the register does not know.
 * Since: 0.3
 */
enum btrfsx_error btrfsx_kernel_traits_get(const char *kernel, struct btrfsx_kernel_traits **out);

/**
 * btrfsx_kernel_traits_free() - free a result of btrfsx_kernel_traits_get();
 * NULL is fine.
 * Since: 0.3
 */
void btrfsx_kernel_traits_free(struct btrfsx_kernel_traits *traits);

#ifdef __cplusplus
}
#endif

#endif
