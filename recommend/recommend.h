/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read-policy recommender (`btrfsx read-policy recommend`): measures
 * which read policy reads a mounted filesystem fastest, for the workloads
 * asked for, and picks one.
 *
 * Every candidate policy -- pid, round-robin with three min_contig_read
 * values, devid of each device holding copies -- is replayed by the probe
 * (recommend/probe.h) over data the filesystem holds, for each workload,
 * within a bounded time, read-only; the devices' own counters say whether
 * anything else read or wrote meanwhile (the figures are then disturbed).
 * The pick comes from these rates, never from the devices' rotational flag
 * (which virtual disks, USB bridges and SMR drives get wrong): with one
 * workload, the fastest policy; with several, the one whose worst workload
 * comes closest to that workload's fastest policy. It is said with its
 * figures, checked against what the running kernel offers, and with
 * apply set and recorded for every mount.
 *
 * Library style: nothing prints or exits; negative errno with bx_error().
 */
#ifndef BTRFSX_RECOMMEND_RECOMMEND_H
#define BTRFSX_RECOMMEND_RECOMMEND_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fields.h"
#include "recommend/probe.h"

#define BX_REC_DEFAULT_SECONDS 30.0
#define BX_REC_MAX_WORKLOADS 8
/* Candidates within this fraction of each other are a tie: the earlier wins. */
#define BX_REC_TIE 0.02
/* Rounds of the probe at most, until a round's passes agree with the pick. */
#define BX_REC_MAX_ROUNDS 3
/* A device is disturbed when others moved more than this share of what the probe read there ... */
#define BX_REC_DISTURBED_SHARE 0.05
/* ... and more than this many bytes (a commit's few metadata writes do not count). */
#define BX_REC_DISTURBED_MIN (1ULL << 20)

struct bx_rec_options {
	double seconds;                 /* the probe's bound; 0: BX_REC_DEFAULT_SECONDS */
	size_t nr_workloads;            /* 0: 1 and 8 readers, sequential and random */
	struct bx_probe_workload workloads[BX_REC_MAX_WORKLOADS];
	bool apply;                     /* set the pick and record it for every mount */
	const char *sysfs_root;
	const char *config_dir;         /* where apply records it */
	const volatile sig_atomic_t *cancel;  /* may be NULL; set: stop with -EINTR */
	/* Called after each replay (may be NULL): @done of @total replays, @seconds so far. */
	void (*progress)(void *arg, size_t done, size_t total, double seconds);
	void *progress_arg;
};

/*
 * A candidate policy and what it read: struct btrfsx_recommend_candidate and
 * Python's RecommendCandidate take the list as it is (common/fields.h); the
 * rates the library copies by hand (Python gets a list).
 */
#define BX_REC_CANDIDATE_FIELDS(X)								\
	X(char, policy, [64])		/* canonical, "round-robin:65536" */			\
	X(double, worst_ratio, )	/* min over workloads of rate / that workload's best */

struct bx_rec_candidate {
	BX_REC_CANDIDATE_FIELDS(BX_FIELD_MEMBER)
	double rates[BX_REC_MAX_WORKLOADS];     /* bytes a second, per workload */
	struct bx_rp_value value;
	size_t worst_workload;
};

struct bx_rec_workload {
	struct bx_probe_workload w;
	size_t best;                    /* the fastest candidate */
};

/* A member device the probe read: btrfsx_recommend_device, RecommendDevice. */
#define BX_REC_DEVICE_FIELDS(X)									\
	X(uint64_t, devid, )									\
	X(char, device, [1024])									\
	X(bool, stats_available, )	/* its block device has counters */			\
	X(uint64_t, probe_bytes, )	/* what the probe read from it */			\
	X(uint64_t, other_read_bytes, )	/* what others read meanwhile */			\
	X(uint64_t, other_write_bytes, )	/* ... and wrote */				\
	X(bool, disturbed, )		/* others moved enough to disturb its figures */

struct bx_rec_device {
	BX_REC_DEVICE_FIELDS(BX_FIELD_MEMBER)
};

/* The recommendation: btrfsx_recommendation, Python's Recommendation. */
#define BX_REC_RESULT_FIELDS(X)									\
	X(char, fsid, [37])									\
	X(char, mountpoint, [4096])								\
	X(bool, affects_reads, )	/* false: no copies to choose from; nothing probed */	\
	X(bool, metadata_region, )	/* the probe read metadata: no mirrored data chunk */	\
	X(uint64_t, region_bytes, )								\
	X(double, seconds, )		/* the probe took */					\
	X(char, recommended, [64])	/* the pick, "" when none */				\
	X(char, reason, [2048])		/* why, with the figures */				\
	X(char, current, [64])		/* the active policy */					\
	X(bool, offered, )		/* the running kernel takes the pick */			\
	X(char, not_offered, [512])	/* ... and why not */					\
	X(bool, applied, )		/* set and recorded for every mount */			\
	X(bool, changed, )		/* the kernel's policy was another before */		\
	X(char, persistent, [64])	/* the record for every mount, "" if none */		\
	X(bool, disturbed, )		/* some device's figures are */				\
	X(bool, stable, )		/* each pass of the last round alone picks the same */	\
	X(uint8_t, rounds, )		/* of the probe, each every replay twice */

struct bx_rec_result {
	BX_REC_RESULT_FIELDS(BX_FIELD_MEMBER)
	int pick;                       /* candidate index; -1 when nothing is recommended */
	size_t nr_workloads;
	struct bx_rec_workload workloads[BX_REC_MAX_WORKLOADS];
	size_t nr_candidates;
	struct bx_rec_candidate *candidates;
	size_t nr_devices;
	struct bx_rec_device *devices;
};

/* Runs the recommender on the mounted filesystem at @path. */
int bx_rec_run(const char *path, const struct bx_rec_options *opts, struct bx_rec_result *res);
void bx_rec_result_free(struct bx_rec_result *res);

/*
 * The pick from the rates (pure): fills each workload's best, each
 * candidate's worst ratio, the recommendation and its reason (without what
 * the kernel offers). Needs candidates and workloads.
 */
void bx_rec_decide(struct bx_rec_result *res);

/*
 * Whether each of @nr_passes passes alone (their rates, laid out
 * [pass][workload][candidate]) picks what @res picked (bx_rec_decide()
 * first), or a candidate within BX_REC_TIE of it. Pure.
 */
bool bx_rec_passes_agree(const struct bx_rec_result *res, const double *pass_rates,
			 size_t nr_passes);

/* "1 sequential reader", "8 random readers". */
void bx_rec_workload_name(const struct bx_probe_workload *w, char *buf, size_t len);

#endif
