/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RAID1-family read policies: detect the kernel interface, parse what it
 * shows, validate a request against it and the filesystem, write it and read
 * it back; the tunables of the earlier read_policies/ interface; the
 * per-filesystem records of <config_dir>/read-policy.conf.
 *
 * Library style: nothing here prints or exits. Functions return 0 (or a
 * documented positive value) or a negative errno with a message recorded by
 * bx_error(); notes for the user are recorded with bx_warn(). The sysfs root
 * and the config directory are parameters, never globals.
 *
 * Kernel interfaces, all detected, never assumed:
 *  - mainline (5.11+): /sys/fs/btrfs/<FSID>/read_policy, e.g. "[pid]" or,
 *    6.14+ with CONFIG_BTRFS_EXPERIMENTAL, "pid [round-robin:262144] devid:1";
 *    takes pid, round-robin[:<bytes>], devid[:<devid>]; EINVAL otherwise;
 *  - the earlier round-robin patches: /sys/fs/btrfs/<FSID>/read_policies/policy
 *    (pid, roundrobin) and the roundrobin_* tunables beside it;
 *  - neither (before 5.11): reads always use pid.
 */
#ifndef BTRFSX_READ_POLICY_H
#define BTRFSX_READ_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsops/mounted-fs.h"

enum bx_rp_iface {
	BX_RP_IFACE_NONE,      /* no read policy file: the kernel always uses pid */
	BX_RP_IFACE_MAINLINE,  /* read_policy */
	BX_RP_IFACE_EARLIER,   /* read_policies/policy */
};

/* "none", "read_policy", "read_policies". */
const char *bx_rp_iface_name(enum bx_rp_iface iface);

enum bx_rp_kind {
	BX_RP_PID,
	BX_RP_ROUND_ROBIN,
	BX_RP_DEVID,
	BX_RP_OTHER,           /* a name this version does not know */
};

/* A policy with its optional argument: "pid", "round-robin:262144", "devid:2". */
struct bx_rp_value {
	enum bx_rp_kind kind;
	char name[32];         /* our spelling; the kernel's for BX_RP_OTHER */
	bool has_arg;
	uint64_t arg;          /* round-robin: minimum contiguous read in bytes; devid */
};

#define BX_RP_MAX_OFFERED 16

/* What the kernel shows for one filesystem. */
struct bx_rp_state {
	enum bx_rp_iface iface;
	char raw[512];                   /* the policy file, trailing newline removed */
	struct bx_rp_value active;
	size_t nr_offered;
	struct {
		char kernel_name[32];    /* spelled as the kernel takes it ("roundrobin") */
		struct bx_rp_value value;
	} offered[BX_RP_MAX_OFFERED];
	bool has_tunables;               /* read_policies/roundrobin_* present */
};

/*
 * Parses a request, syntax only: pid, round-robin (also roundrobin),
 * round-robin:<size> (K/M/G suffixes), devid, devid:<N>, or any other word
 * (BX_RP_OTHER, acceptable only if the kernel offers it). -EINVAL with a
 * message for anything else.
 */
int bx_rp_parse(const char *str, struct bx_rp_value *value);

/* "round-robin:262144": the canonical form, as recorded in the config file. */
void bx_rp_format(const struct bx_rp_value *value, char *buf, size_t len);

/*
 * Reads the kernel's state for filesystem @fsid under @sysfs_root.
 * -ENOENT when <sysfs_root>/fs/btrfs/<fsid> does not exist (not mounted).
 */
int bx_rp_read(const char *sysfs_root, const char *fsid, struct bx_rp_state *state);

/* True if the kernel offers a policy of @kind (or, for BX_RP_OTHER, named @name). */
bool bx_rp_offers(const struct bx_rp_state *state, enum bx_rp_kind kind, const char *name);

/*
 * Validates @value against what @state offers and what @fs is: a round-robin
 * size must be a positive multiple of the sector size that fits 32 bits, a
 * devid must be a device of @fs. -EINVAL (bad value) or -EOPNOTSUPP (the
 * kernel does not offer it; the message names the kernel that does).
 */
int bx_rp_check(const struct bx_rp_state *state, const struct bx_mounted_fs *fs,
		const struct bx_rp_value *value);

/*
 * Reads the state, validates @value, writes it (unless exactly it is active) and
 * reads back to confirm. @after (may be NULL) gets the state read back;
 * *@changed (may be NULL) whether anything was written. A kernel rejection is
 * -EINVAL with a message saying so; a read-back that disagrees is -EIO.
 */
int bx_rp_set(const char *sysfs_root, const struct bx_mounted_fs *fs,
	      const struct bx_rp_value *value, struct bx_rp_state *after, bool *changed);

/* RAID1-family block groups: their "type/profile" names, e.g. "data/raid1". */
#define BX_RP_MAX_MIRRORED 12
struct bx_rp_mirrored {
	size_t nr;
	char names[BX_RP_MAX_MIRRORED][32];
};

/*
 * Which RAID1/RAID1C3/RAID1C4/RAID10 block groups @fs has: from
 * <sysfs_root>/fs/btrfs/<FSID>/allocation/<type>/<profile>/, or from
 * BTRFS_IOC_SPACE_INFO where that directory does not exist.
 */
int bx_rp_mirrored(const char *sysfs_root, const struct bx_mounted_fs *fs,
		   struct bx_rp_mirrored *mirrored);

/*
 * The global default of experimental kernels (module parameter
 * btrfs.read_policy=) from the kernel command line @cmdline_path and the
 * modprobe configuration in @modprobe_dir. Returns 1 and fills @value and
 * @source (the file it came from) if set, 0 if not, negative errno on error.
 */
int bx_rp_module_default(const char *cmdline_path, const char *modprobe_dir, char *value,
			 size_t value_len, char *source, size_t source_len);

/*
 * Warns (bx_warn) about a module default @value (from @source) that the
 * kernel refuses or cannot live with, read as the kernel reads it at load
 * and at each mount of @fs: a name other than pid, round-robin or devid, or
 * a value that is not a positive number (the module load fails with
 * EINVAL); a round-robin below @fs's sector size, or of 4GiB or more (kept
 * in 32 bits), which the kernel takes unrounded and whose first RAID1 read
 * divides by zero when that leaves less than a sector; a devid that is not
 * in @fs (its reads fall back to each chunk's first copy). Returns whether
 * it warned.
 */
bool bx_rp_module_default_check(const char *value, const char *source,
				const struct bx_mounted_fs *fs);

/* ---- tunables of the read_policies/ interface ---- */

struct bx_rp_tunable {
	const char *name;
	bool is_bool;          /* 0 or 1; otherwise a 32-bit unsigned number */
	uint64_t def;          /* the kernel's default */
	const char *help;
};

/* The known tunables, terminated by a NULL name. */
extern const struct bx_rp_tunable bx_rp_tunables[];

/* The tunable named @name, or NULL with -EINVAL recorded. */
const struct bx_rp_tunable *bx_rp_tunable_find(const char *name);

/* Parses a value for @t: 0/1 (also yes/no, true/false, on/off) or a u32. */
int bx_rp_tunable_parse(const struct bx_rp_tunable *t, const char *str, uint64_t *value);

/* -EOPNOTSUPP when this kernel has no read_policies/<name>. */
int bx_rp_tunable_get(const char *sysfs_root, const char *fsid, const struct bx_rp_tunable *t,
		      uint64_t *value);

/* Writes and reads back. */
int bx_rp_tunable_set(const char *sysfs_root, const char *fsid, const struct bx_rp_tunable *t,
		      uint64_t value);

/* ---- persistence: <config_dir>/read-policy.conf, "<fsid> <policy>" per line ---- */

#define BX_RP_CONFIG_FILE "read-policy.conf"

struct bx_rp_record {
	char fsid[BX_FSID_STR_LEN];   /* "" for a line kept verbatim */
	char policy[64];
	char *verbatim;               /* comment or unparsable line, written back as is */
};

struct bx_rp_config {
	size_t nr;
	struct bx_rp_record *records;
};

/*
 * Loads the records; a missing file is an empty config. Unparsable lines are
 * kept verbatim and reported with bx_warn(). Free with bx_rp_config_free().
 */
int bx_rp_config_load(const char *config_dir, struct bx_rp_config *config);

/* Writes the file atomically (temporary file, fsync, rename), creating @config_dir. */
int bx_rp_config_save(const char *config_dir, const struct bx_rp_config *config);

/* The record for @fsid, or NULL. */
const struct bx_rp_record *bx_rp_config_find(const struct bx_rp_config *config, const char *fsid);

/* Adds or replaces the record for @fsid. */
int bx_rp_config_put(struct bx_rp_config *config, const char *fsid, const char *policy);

/* Removes the record for @fsid; returns 1 if there was one, else 0. */
int bx_rp_config_remove(struct bx_rp_config *config, const char *fsid);

void bx_rp_config_free(struct bx_rp_config *config);

/*
 * ---- the operations of `read-policy get/set/apply`, one implementation for
 * the command line and libbtrfsx (fsops/read-policy-ops.c) ----
 */

/*
 * Lists the RAID1-family block groups of @fs into @mirrored and warns when
 * there is none (the policy then changes nothing). False when they could not
 * be listed; that costs only the warning.
 */
bool bx_rp_check_effect(const char *sysfs_root, const struct bx_mounted_fs *fs,
			struct bx_rp_mirrored *mirrored);

/* A filesystem's read policy with its record and what it affects. */
struct bx_rp_info {
	struct bx_rp_state state;
	char recorded[64];               /* the record in the config file; "" if none */
	bool mirrored_known;
	struct bx_rp_mirrored mirrored;
};

/* What `read-policy get` shows of @fs, except the global module default. */
int bx_rp_info_read(const char *sysfs_root, const char *config_dir,
		    const struct bx_mounted_fs *fs, struct bx_rp_info *info);

/* Adds or replaces the record of @fsid in <config_dir>/read-policy.conf. */
int bx_rp_record(const char *config_dir, const char *fsid, const char *policy);

/*
 * Removes the record of the filesystem @arg names (an FSID, or a path on a
 * mounted btrfs) from <config_dir>/read-policy.conf; its FSID into @fsid.
 * -ENOENT when none is recorded.
 */
int bx_rp_forget(const char *config_dir, const char *arg, char fsid[BX_FSID_STR_LEN]);

/*
 * Switches @fs to @value (bx_rp_set) and warns when that changes nothing.
 * With @config_dir, records it when @persist, or warns when another policy
 * is recorded (it comes back at the next mount). @before (may be NULL) gets
 * the state read first; @after the state read back with the record.
 */
int bx_rp_switch(const char *sysfs_root, const char *config_dir, const struct bx_mounted_fs *fs,
		 const struct bx_rp_value *value, bool persist, struct bx_rp_state *before,
		 struct bx_rp_info *after, bool *changed);

enum bx_rp_apply_status {
	BX_RP_APPLIED,
	BX_RP_UNCHANGED,
	BX_RP_APPLY_FAILED,
	BX_RP_NOT_MOUNTED,
	BX_RP_NO_RECORD,
};

/* What applying did to one filesystem; strings NULL where not known. */
struct bx_rp_applied {
	const char *fsid;
	const char *path;
	const char *policy;              /* the record */
	enum bx_rp_apply_status status;
	int error;                       /* BX_RP_APPLY_FAILED: the negative errno */
	const char *message;             /* ... and its message */
};

/* Called once per filesystem applied to (or found without a mount or record). */
typedef void (*bx_rp_apply_fn)(void *arg, const struct bx_rp_applied *applied);

/*
 * Applies the policy @config records for the filesystem at @path (its FSID
 * @known_fsid when the caller knows it, else NULL) and reports it to @fn.
 * Returns 0, or the failure's negative errno (also reported).
 */
int bx_rp_apply_one(const char *sysfs_root, const char *path, const struct bx_rp_config *config,
		    const char *known_fsid, bx_rp_apply_fn fn, void *arg);

/* The btrfs mounts of this namespace with their FSIDs. */
struct bx_rp_mount {
	int mount_id;
	char fsid[BX_FSID_STR_LEN];
	char mountpoint[4096];
};

struct bx_rp_mounts {
	size_t nr;
	struct bx_rp_mount *mounts;      /* malloc()ed: free() it */
};

/*
 * Reads the btrfs mounts of @mountinfo with their FSIDs; those already in
 * @prev (may be NULL) are not opened again. Mounts that cannot be opened are
 * left out.
 */
int bx_rp_scan_mounts(const char *mountinfo, const struct bx_rp_mounts *prev,
		      struct bx_rp_mounts *now);

/*
 * Applies the recorded policies to the filesystems of @now that are new
 * since @prev (all of them when @prev is NULL): a filesystem is new when
 * none of its mounts in @now was there before. Records of filesystems not
 * mounted are reported when @report_unmounted. *@nr_failed counts failures
 * (reported to @fn, not returned); the return value is for the config file.
 */
int bx_rp_apply_new(const char *sysfs_root, const char *config_dir,
		    const struct bx_rp_mounts *prev, const struct bx_rp_mounts *now,
		    bool report_unmounted, size_t *nr_failed, bx_rp_apply_fn fn, void *arg);

#endif
