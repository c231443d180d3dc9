/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sample history: one SQLite file (default /var/lib/btrfsx/monitor.db).
 *
 * - WAL journal: readers (report, metrics, node_exporter's scrape of what
 *   they wrote) never wait for a writer, and a writer waits for another
 *   at most BX_MON_BUSY_TIMEOUT_MS before it gives up with -EBUSY.
 * - Every sample is stored in one transaction with its devices and block
 *   group lines: a failure (a full disk, a read-only file, a lock) leaves
 *   the history as it was, never half a sample.
 * - The file says what it is: PRAGMA application_id BX_MON_APPLICATION_ID,
 *   and the schema version in PRAGMA user_version. Opening for writing
 *   upgrades an older schema through the migrations in history.c, one
 *   transaction each; a newer schema, another application's database or a
 *   damaged file is refused with a message saying which.
 * - Retention: bx_mon_db_add() drops samples older than its @keep and thins
 *   those older than BX_MON_THIN_AFTER to the first of every hour.
 *
 * Library style: 0 or a negative errno with a message recorded by bx_error().
 */
#ifndef BTRFSX_MONITOR_HISTORY_H
#define BTRFSX_MONITOR_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk/device-claim.h"
#include "monitor/sample.h"

#define BX_MON_APPLICATION_ID 0x62747278	/* "btrx" */
#define BX_MON_SCHEMA_VERSION 2
#define BX_MON_BUSY_TIMEOUT_MS 3000
#define BX_MON_THIN_AFTER (35 * 86400)		/* past the default report window */
#define BX_MON_THIN_STEP 3600			/* keep one sample per hour there */
#define BX_MON_DB_FILE "monitor.db"
/* A record that read the clock this much before the newest sample lost a race, not time. */
#define BX_MON_RACE_SECONDS 60

struct bx_mon_db;

/* How bx_mon_db_open() opens the history. */
enum bx_mon_open {
	BX_MON_READ,		/* read-only: a missing file is -ENOENT */
	BX_MON_WRITE,		/* for recording: the file is made in its directory, which must exist */
	BX_MON_WRITE_MAKE_DIR,	/* the same, and the directory itself is made (not its parents) */
};

/*
 * Opens the history at @path. Writing, the schema is made or upgraded.
 * Reading leaves no file behind: where the directory can be written, the
 * connection is opened read-write at the file level (and answers only
 * queries), so that closing it removes SQLite's -wal and -shm files as a
 * writer's close does. Close with bx_mon_db_close().
 */
int bx_mon_db_open(const char *path, enum bx_mon_open how, struct bx_mon_db **db);
void bx_mon_db_close(struct bx_mon_db *db);

/* The schema version of an open history. */
int bx_mon_db_schema_version(struct bx_mon_db *db);

/*
 * Stores @sample (its filesystem is added or its label and mount point
 * updated) and applies the retention: samples older than @keep seconds
 * before the sample's time go, those older than BX_MON_THIN_AFTER are
 * thinned. One transaction. Nothing is stored when the filesystem already
 * has a sample of that second (-EEXIST: two records at once) or one more
 * than BX_MON_RACE_SECONDS later (-ERANGE: the clock went back).
 */
int bx_mon_db_add(struct bx_mon_db *db, const struct bx_mon_sample *sample, int64_t keep);

/* A filesystem in the history. */
struct bx_mon_fs {
	int64_t id;
	uint8_t fsid[16];
	char fsid_str[BX_FSID_STR_LEN];
	char label[256];		/* as last recorded */
	char mountpoint[4096];
	size_t nr_samples;
	int64_t first;			/* time of the first and the last sample */
	int64_t last;
};

/* Every filesystem in the history, by fsid; free() *@list. */
int bx_mon_db_filesystems(struct bx_mon_db *db, struct bx_mon_fs **list, size_t *nr);

/*
 * The filesystem of @list (@nr of them) that @name names: an fsid, a
 * recorded mount point, or a path on a mounted filesystem. -ENOENT (naming
 * @db_path) when it is not in the history.
 */
int bx_mon_find_fs(struct bx_mon_fs *list, size_t nr, const char *name, const char *db_path,
		   struct bx_mon_fs **found);

/* The figures of the samples of @fs_id with since <= time <= until, in time order; free() *@figs. */
int bx_mon_db_figures(struct bx_mon_db *db, int64_t fs_id, int64_t since, int64_t until,
		      struct bx_mon_figures **figs, size_t *nr);

/*
 * The newest sample of @fs_id at or before @until, whole (devices, block
 * group lines, scrub, read policy; label and mount point as last recorded).
 * -ENOENT when there is none. Release with bx_mon_sample_release().
 */
int bx_mon_db_latest(struct bx_mon_db *db, int64_t fs_id, int64_t until,
		     struct bx_mon_sample *sample);

#endif
