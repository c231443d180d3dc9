/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sample history in SQLite. See history.h. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sqlite3.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/error.h"
#include "common/units.h"
#include "fsops/mounted-fs.h"
#include "monitor/history.h"

struct bx_mon_db {
	sqlite3 *sql;
	char path[PATH_MAX];
};

/*
 * Migration N takes the schema from version N to N + 1; a new history runs
 * them all. They are history: never edit one, append the next.
 */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE filesystems ("
	" id INTEGER PRIMARY KEY,"
	" fsid TEXT NOT NULL UNIQUE,"
	" label TEXT NOT NULL,"
	" mountpoint TEXT NOT NULL,"
	" thinned_until INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE samples ("
	" id INTEGER PRIMARY KEY,"
	" fs INTEGER NOT NULL REFERENCES filesystems(id) ON DELETE CASCADE,"
	" time INTEGER NOT NULL,"
	" device_size INTEGER NOT NULL, device_allocated INTEGER NOT NULL,"
	" used INTEGER NOT NULL,"
	" data_size INTEGER NOT NULL, data_used INTEGER NOT NULL,"
	" metadata_size INTEGER NOT NULL, metadata_used INTEGER NOT NULL,"
	" free_estimated INTEGER NOT NULL, free_strict INTEGER NOT NULL,"
	" free_statfs INTEGER,"
	" metadata_room INTEGER NOT NULL, metadata_room_after_data INTEGER NOT NULL,"
	" global_reserve INTEGER NOT NULL, global_reserve_used INTEGER NOT NULL,"
	" read_policy TEXT NOT NULL,"
	" scrub_status TEXT, scrub_started INTEGER, scrub_duration REAL,"
	" scrub_bytes INTEGER, scrub_errors INTEGER, scrub_corrected INTEGER,"
	" scrub_uncorrectable INTEGER);"
	"CREATE INDEX samples_by_time ON samples(fs, time);"
	"CREATE TABLE sample_spaces ("
	" sample INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,"
	" flags INTEGER NOT NULL, total INTEGER NOT NULL, used INTEGER NOT NULL,"
	" PRIMARY KEY (sample, flags)) WITHOUT ROWID;"
	"CREATE TABLE sample_devices ("
	" sample INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,"
	" devid INTEGER NOT NULL, path TEXT NOT NULL, missing INTEGER NOT NULL,"
	" hint INTEGER NOT NULL, size INTEGER NOT NULL, unallocated INTEGER NOT NULL,"
	" data INTEGER NOT NULL, metadata INTEGER NOT NULL, system INTEGER NOT NULL,"
	" write_io_errs INTEGER, read_io_errs INTEGER, flush_io_errs INTEGER,"
	" corruption_errs INTEGER, generation_errs INTEGER,"
	" PRIMARY KEY (sample, devid)) WITHOUT ROWID;",
	/* 1 -> 2: what the alert rules need besides space; NULL in older samples */
	"ALTER TABLE samples ADD COLUMN hints_effective INTEGER;"
	"ALTER TABLE samples ADD COLUMN misplaced_forbidden_chunks INTEGER;"
	"ALTER TABLE samples ADD COLUMN misplaced_forbidden_used INTEGER;"
	"ALTER TABLE samples ADD COLUMN misplaced_off_preference_chunks INTEGER;"
	"ALTER TABLE samples ADD COLUMN misplaced_off_preference_used INTEGER;",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == BX_MON_SCHEMA_VERSION,
	       "one migration per schema version");

/* The figure columns of samples, in struct bx_mon_figures (time apart). */
struct column {
	const char *name;
	size_t offset;
	ptrdiff_t present;	/* offset of the bool saying the value is known; -1: always */
};

#define FIGURE(m) { #m, offsetof(struct bx_mon_figures, m), -1 }
static const struct column figure_columns[] = {
	FIGURE(device_size), FIGURE(device_allocated), FIGURE(used),
	FIGURE(data_size), FIGURE(data_used), FIGURE(metadata_size), FIGURE(metadata_used),
	FIGURE(free_estimated), FIGURE(free_strict),
	{ "free_statfs", offsetof(struct bx_mon_figures, free_statfs),
	  offsetof(struct bx_mon_figures, have_statfs) },
	FIGURE(metadata_room), FIGURE(metadata_room_after_data),
	FIGURE(global_reserve), FIGURE(global_reserve_used),
};
#define NR_FIGURES (sizeof(figure_columns) / sizeof(figure_columns[0]))

/* ---- errors ---- */

static int errno_of(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	default:
		return -EIO;
	}
}

/* What the user can do about it, after SQLite's own words. */
static const char *advice(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return " (another program held it for more than 3 s; try again)";
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return " (damaged, or not a database: move it away and a new history starts)";
	default:
		return "";
	}
}

static int db_error(struct bx_mon_db *db, int rc, const char *what)
{
	const char *msg = db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc);
	int code = errno_of(rc);

	if ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR) {
		int sys = db->sql ? sqlite3_system_errno(db->sql) : 0;

		if (sys) {
			code = -sys;
			msg = strerror(sys);
		}
	}
	return bx_error(code, "%s: %s: %s%s", db->path, what, msg, advice(rc));
}

/* ---- statements ---- */

static int exec(struct bx_mon_db *db, const char *sql, const char *what)
{
	int rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : db_error(db, rc, what);
}

static int prepare(struct bx_mon_db *db, const char *sql, sqlite3_stmt **st, const char *what)
{
	int rc = sqlite3_prepare_v2(db->sql, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : db_error(db, rc, what);
}

/* Steps a statement that returns no rows, then resets it for the next binding. */
static int run(struct bx_mon_db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : db_error(db, rc, what);
}

static int pragma_int(struct bx_mon_db *db, const char *name, int *value)
{
	char sql[64];
	sqlite3_stmt *st;
	int rc, ret;

	snprintf(sql, sizeof(sql), "PRAGMA %s", name);
	ret = prepare(db, sql, &st, "cannot read the history");
	if (ret)
		return ret;
	rc = sqlite3_step(st);
	*value = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_error(db, rc, "cannot read the history");
}

/* ---- opening, schema ---- */

/*
 * Upgrades the schema one migration per transaction. The version is read
 * again inside each: another record starting on the same new history may
 * have upgraded it meanwhile.
 */
static int migrate(struct bx_mon_db *db)
{
	char version[96];
	int v, ret;

	for (;;) {
		ret = exec(db, "BEGIN IMMEDIATE", "cannot upgrade the history");
		if (ret)
			return ret;
		ret = pragma_int(db, "user_version", &v);
		if (!ret && v >= BX_MON_SCHEMA_VERSION)
			return exec(db, "COMMIT", "cannot upgrade the history");
		snprintf(version, sizeof(version), "PRAGMA application_id = %d; PRAGMA user_version = %d",
			 BX_MON_APPLICATION_ID, v + 1);
		if (!ret)
			ret = exec(db, migrations[v], "cannot upgrade the history");
		if (!ret)
			ret = exec(db, version, "cannot upgrade the history");
		if (!ret)
			ret = exec(db, "COMMIT", "cannot upgrade the history");
		if (ret) {
			sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
			return ret;
		}
	}
}

/* Whether the file has any table: a history from elsewhere is not ours to fill. */
static int has_tables(struct bx_mon_db *db, bool *any)
{
	sqlite3_stmt *st;
	int rc, ret = prepare(db, "SELECT count(*) FROM sqlite_master", &st,
			      "cannot read the history");

	if (ret)
		return ret;
	rc = sqlite3_step(st);
	*any = rc == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : db_error(db, rc, "cannot read the history");
}

static int check_schema(struct bx_mon_db *db, bool write)
{
	int app, version, ret;
	bool any;

	/* One read transaction: the three from one state of a history another record may be making. */
	ret = exec(db, "BEGIN", "cannot read the history");
	if (!ret)
		ret = pragma_int(db, "application_id", &app);
	if (!ret)
		ret = pragma_int(db, "user_version", &version);
	if (!ret)
		ret = has_tables(db, &any);
	sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL);
	if (ret)
		return ret;
	if (app != BX_MON_APPLICATION_ID && (any || !write))
		return bx_error(-EINVAL, "%s: not a btrfsx monitor history", db->path);
	if (version > BX_MON_SCHEMA_VERSION)
		return bx_error(-EINVAL, "%s: the history has schema version %d; this btrfsx "
				"knows up to %d (a newer btrfsx wrote it)", db->path, version,
				BX_MON_SCHEMA_VERSION);
	if (version == BX_MON_SCHEMA_VERSION)
		return 0;
	if (!write)
		return bx_error(-EINVAL, "%s: the history has the older schema version %d; "
				"'btrfsx monitor record' upgrades it", db->path, version);
	/* WAL is kept in the file; it cannot change inside a transaction. */
	ret = exec(db, "PRAGMA journal_mode = WAL", "cannot set up the history");
	return ret ? ret : migrate(db);
}

/* The directory part of @path ("." for a bare name). */
static void parent_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else
		snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/*
 * The directory of a history to write: it must exist (a typo in --db must
 * not grow a directory tree as root); @make makes it, not its parents (the
 * state directory btrfsx owns). SQLite writes its journal files beside the
 * history: a directory it cannot write in is said as such, not as the
 * journal file SQLite then fails to open.
 */
static int writable_dir(const char *path, bool make)
{
	char dir[PATH_MAX];
	struct stat st;

	parent_of(path, dir, sizeof(dir));
	if (make && mkdir(dir, 0755) < 0 && errno != EEXIST)
		return bx_error(-errno, "%s: cannot make the directory %s: %m", path, dir);
	if (stat(dir, &st) < 0)
		return bx_error(-errno, "%s: %s: %m (the history's directory must exist)", path,
				dir);
	if (!S_ISDIR(st.st_mode))
		return bx_error(-ENOTDIR, "%s: %s is not a directory", path, dir);
	if (access(dir, W_OK) < 0)
		return bx_error(-errno, "%s: cannot write in %s: %m", path, dir);
	return 0;
}

/*
 * Opens the history for reading. Where the directory can be written, the
 * file is opened read-write and the connection answers only queries: a
 * read-only connection to a WAL database makes the -wal and -shm files
 * and, unable to checkpoint, leaves them behind; the last read-write
 * connection removes them on closing. In a directory nobody can write in
 * (a read-only mount) SQLite cannot make the shared-memory file WAL needs;
 * no writer can be there either, so the file is opened as immutable.
 */
static int open_for_reading(struct bx_mon_db *db, const char *path)
{
	int flags = SQLITE_OPEN_NOMUTEX;
	char dir[PATH_MAX], *uri;
	int rc;

	parent_of(path, dir, sizeof(dir));
	if (access(dir, W_OK) == 0)
		return sqlite3_open_v2(path, &db->sql, flags | SQLITE_OPEN_READWRITE, NULL);
	if (errno != EROFS && errno != EACCES)
		return sqlite3_open_v2(path, &db->sql, flags | SQLITE_OPEN_READONLY, NULL);
	uri = sqlite3_mprintf("file:%s?immutable=1", path);
	if (!uri)
		return SQLITE_NOMEM;
	rc = sqlite3_open_v2(uri, &db->sql, flags | SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
	sqlite3_free(uri);
	return rc;
}

int bx_mon_db_open(const char *path, enum bx_mon_open how, struct bx_mon_db **out)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	bool write = how != BX_MON_READ;
	struct bx_mon_db *db;
	struct stat st;
	int rc, ret;

	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return bx_error(-errno, "%s: %m", path);
		if (!write)
			return bx_error(-ENOENT, "%s: no history yet ('btrfsx monitor record' "
					"starts it)", path);
	} else if (!S_ISREG(st.st_mode)) {
		/* SQLite would block on a FIFO and read a device as a database. */
		return bx_error(-EINVAL, "%s: cannot open the history: not a regular file", path);
	}
	if (write && (ret = writable_dir(path, how == BX_MON_WRITE_MAKE_DIR)))
		return ret;
	db = calloc(1, sizeof(*db));
	if (!db)
		return bx_error(-ENOMEM, "out of memory");
	snprintf(db->path, sizeof(db->path), "%s", path);
	if (write)
		rc = sqlite3_open_v2(path, &db->sql, flags | SQLITE_OPEN_NOMUTEX, NULL);
	else
		rc = open_for_reading(db, path);
	if (rc != SQLITE_OK) {
		ret = db_error(db, rc, "cannot open the history");
		goto fail;
	}
	sqlite3_extended_result_codes(db->sql, 1);
	sqlite3_busy_timeout(db->sql, BX_MON_BUSY_TIMEOUT_MS);
	ret = exec(db, write ? "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL" :
		   "PRAGMA query_only = ON", "cannot open the history");
	if (!ret)
		ret = check_schema(db, write);
	if (ret)
		goto fail;
	*out = db;
	return 0;
fail:
	bx_mon_db_close(db);
	return ret;
}

void bx_mon_db_close(struct bx_mon_db *db)
{
	if (!db)
		return;
	sqlite3_close_v2(db->sql);
	free(db);
}

int bx_mon_db_schema_version(struct bx_mon_db *db)
{
	int version = 0;

	return pragma_int(db, "user_version", &version) ? -1 : version;
}

/* ---- storing ---- */

static int64_t s64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static uint64_t u64(sqlite3_stmt *st, int col)
{
	sqlite3_int64 v = sqlite3_column_int64(st, col);

	return v < 0 ? 0 : (uint64_t)v;
}

/* The filesystem's row id, added or updated with the sample's label and mount point. */
static int fs_row(struct bx_mon_db *db, const struct bx_mon_sample *s, int64_t *id)
{
	char fsid[BX_FSID_STR_LEN];
	sqlite3_stmt *st;
	int rc, ret;

	bx_fsid_unparse(s->fsid, fsid);
	ret = prepare(db, "INSERT INTO filesystems (fsid, label, mountpoint) VALUES (?1, ?2, ?3)"
			  " ON CONFLICT (fsid) DO UPDATE SET label = ?2, mountpoint = ?3"
			  " RETURNING id", &st, "cannot store the sample");
	if (ret)
		return ret;
	sqlite3_bind_text(st, 1, fsid, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, s->label, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, s->mountpoint, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : db_error(db, rc, "cannot store the sample");
}

/* "a, b, c" of the figure columns, and "?4, ?5, ..." from @first. */
static void figure_lists(char *names, size_t names_len, char *params, size_t params_len,
			 int first)
{
	size_t n = 0, p = 0;

	for (size_t i = 0; i < NR_FIGURES; i++) {
		n += (size_t)snprintf(names + n, names_len - n, "%s%s", i ? ", " : "",
				      figure_columns[i].name);
		p += (size_t)snprintf(params + p, params_len - p, "%s?%zu", i ? ", " : "",
				      first + i);
	}
}

static void bind_figures(sqlite3_stmt *st, int first, const struct bx_mon_figures *f)
{
	for (size_t i = 0; i < NR_FIGURES; i++) {
		const struct column *c = &figure_columns[i];
		int param = first + (int)i;

		if (c->present >= 0 && !*(const bool *)((const char *)f + c->present))
			sqlite3_bind_null(st, param);
		else
			sqlite3_bind_int64(st, param,
					   s64(*(const uint64_t *)((const char *)f + c->offset)));
	}
}

static void bind_scrub(sqlite3_stmt *st, int first, const struct bx_mon_scrub *sc)
{
	if (!sc->known)
		return;	/* NULLs */
	sqlite3_bind_text(st, first, sc->status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, first + 1, sc->started);
	sqlite3_bind_double(st, first + 2, sc->duration);
	sqlite3_bind_int64(st, first + 3, s64(sc->bytes_scrubbed));
	sqlite3_bind_int64(st, first + 4, s64(sc->errors));
	sqlite3_bind_int64(st, first + 5, s64(sc->corrected));
	sqlite3_bind_int64(st, first + 6, s64(sc->uncorrectable));
}

#define SCRUB_COLUMNS "scrub_status, scrub_started, scrub_duration, scrub_bytes, scrub_errors, " \
		      "scrub_corrected, scrub_uncorrectable"
#define PLACEMENT_COLUMNS "hints_effective, misplaced_forbidden_chunks, misplaced_forbidden_used, " \
			  "misplaced_off_preference_chunks, misplaced_off_preference_used"

/* Whether the kernel honours the hints and the misplaced chunks, from @first on (NULLs unknown). */
static void bind_placement(sqlite3_stmt *st, int first, const struct bx_mon_sample *s)
{
	const struct bx_mon_misplaced *m = &s->misplaced;

	if (s->have_hints_effective)
		sqlite3_bind_int(st, first, s->hints_effective);
	if (!m->known)
		return;
	sqlite3_bind_int64(st, first + 1, s64(m->forbidden_chunks));
	sqlite3_bind_int64(st, first + 2, s64(m->forbidden_used));
	sqlite3_bind_int64(st, first + 3, s64(m->off_preference_chunks));
	sqlite3_bind_int64(st, first + 4, s64(m->off_preference_used));
}

static int insert_sample(struct bx_mon_db *db, int64_t fs, const struct bx_mon_sample *s,
			 int64_t *id)
{
	char names[1024], params[512], sql[2048];
	int first_scrub = 4 + (int)NR_FIGURES, first_placement = first_scrub + 7;
	sqlite3_stmt *st;
	int rc, ret;

	figure_lists(names, sizeof(names), params, sizeof(params), 4);
	snprintf(sql, sizeof(sql), "INSERT INTO samples (fs, time, read_policy, %s, "
		 SCRUB_COLUMNS ", " PLACEMENT_COLUMNS ") VALUES (?1, ?2, ?3, %s, ?%d, ?%d, ?%d,"
		 " ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d, ?%d)",
		 names, params, first_scrub, first_scrub + 1, first_scrub + 2, first_scrub + 3,
		 first_scrub + 4, first_scrub + 5, first_scrub + 6, first_placement,
		 first_placement + 1, first_placement + 2, first_placement + 3,
		 first_placement + 4);
	ret = prepare(db, sql, &st, "cannot store the sample");
	if (ret)
		return ret;
	sqlite3_bind_int64(st, 1, fs);
	sqlite3_bind_int64(st, 2, s->fig.time);
	sqlite3_bind_text(st, 3, s->read_policy, -1, SQLITE_STATIC);
	bind_figures(st, 4, &s->fig);
	bind_scrub(st, first_scrub, &s->scrub);
	bind_placement(st, first_placement, s);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db_error(db, rc, "cannot store the sample");
	*id = sqlite3_last_insert_rowid(db->sql);
	return 0;
}

static int insert_spaces(struct bx_mon_db *db, int64_t sample, const struct bx_mon_sample *s)
{
	sqlite3_stmt *st;
	int ret = prepare(db, "INSERT INTO sample_spaces (sample, flags, total, used)"
			      " VALUES (?1, ?2, ?3, ?4)", &st, "cannot store the sample");

	for (size_t i = 0; !ret && i < s->nr_spaces; i++) {
		sqlite3_bind_int64(st, 1, sample);
		sqlite3_bind_int64(st, 2, s64(s->spaces[i].flags));
		sqlite3_bind_int64(st, 3, s64(s->spaces[i].total));
		sqlite3_bind_int64(st, 4, s64(s->spaces[i].used));
		ret = run(db, st, "cannot store the sample");
	}
	sqlite3_finalize(st);
	return ret;
}

static int insert_devices(struct bx_mon_db *db, int64_t sample, const struct bx_mon_sample *s)
{
	sqlite3_stmt *st;
	int ret = prepare(db, "INSERT INTO sample_devices (sample, devid, path, missing, hint, size,"
			      " unallocated, data, metadata, system, write_io_errs, read_io_errs,"
			      " flush_io_errs, corruption_errs, generation_errs) VALUES (?1, ?2, ?3,"
			      " ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)", &st,
			  "cannot store the sample");

	for (size_t i = 0; !ret && i < s->nr_devices; i++) {
		const struct bx_mon_device *d = &s->devices[i];

		sqlite3_clear_bindings(st);
		sqlite3_bind_int64(st, 1, sample);
		sqlite3_bind_int64(st, 2, s64(d->devid));
		sqlite3_bind_text(st, 3, d->path, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, d->missing);
		sqlite3_bind_int64(st, 5, s64(d->hint));
		sqlite3_bind_int64(st, 6, s64(d->size));
		sqlite3_bind_int64(st, 7, s64(d->unallocated));
		sqlite3_bind_int64(st, 8, s64(d->data));
		sqlite3_bind_int64(st, 9, s64(d->metadata));
		sqlite3_bind_int64(st, 10, s64(d->system));
		for (int k = 0; d->have_errors && k < BX_DEV_STAT_COUNT; k++)
			sqlite3_bind_int64(st, 11 + k, s64(d->errors[k]));
		ret = run(db, st, "cannot store the sample");
	}
	sqlite3_finalize(st);
	return ret;
}

/* A statement of ?1 @fs, ?2 @time (and ?3 BX_MON_THIN_STEP) that returns no rows. */
static int run_fs_time(struct bx_mon_db *db, const char *sql, int64_t fs, int64_t time)
{
	sqlite3_stmt *st;
	int ret = prepare(db, sql, &st, "cannot apply the retention");

	if (ret)
		return ret;
	sqlite3_bind_int64(st, 1, fs);
	sqlite3_bind_int64(st, 2, time);
	if (sqlite3_bind_parameter_count(st) >= 3)
		sqlite3_bind_int64(st, 3, BX_MON_THIN_STEP);
	ret = run(db, st, "cannot apply the retention");
	sqlite3_finalize(st);
	return ret;
}

/*
 * Drops the samples older than @keep, and thins those between the last
 * thinning and BX_MON_THIN_AFTER ago to the first sample of every hour.
 */
static int retain(struct bx_mon_db *db, int64_t fs, int64_t now, int64_t keep)
{
	int64_t cutoff = now - BX_MON_THIN_AFTER;
	int ret;

	cutoff -= cutoff % BX_MON_THIN_STEP;
	ret = run_fs_time(db, "DELETE FROM samples WHERE fs = ?1 AND time < ?2", fs,
			  now - keep);
	if (!ret)
		ret = run_fs_time(db, "DELETE FROM samples WHERE fs = ?1 AND time < ?2 AND time >="
				  " (SELECT thinned_until FROM filesystems WHERE id = ?1) AND id NOT IN"
				  " (SELECT min(id) FROM samples WHERE fs = ?1 AND time < ?2 AND time >="
				  " (SELECT thinned_until FROM filesystems WHERE id = ?1) GROUP BY time / ?3)",
				  fs, cutoff);
	if (!ret)
		ret = run_fs_time(db, "UPDATE filesystems SET thinned_until = max(thinned_until, ?2)"
				  " WHERE id = ?1", fs, cutoff);
	return ret;
}

/*
 * A sample must not come before the newest one of its filesystem. Two
 * records at the same second (two timers at once) store one: -EEXIST. One
 * that lost the race for the lock to a record that read the clock a moment
 * later is stored (the fit takes samples in time order). A clock set back
 * further would interleave two timelines, and the fit would read the step
 * back as growth or shrinking: -ERANGE, nothing stored until the clock is
 * right again.
 */
static int in_time_order(struct bx_mon_db *db, int64_t fs, int64_t time)
{
	char behind[32], when[48];
	sqlite3_stmt *st;
	int64_t newest;
	time_t tt;
	struct tm tm;
	int rc, ret;

	ret = prepare(db, "SELECT max(time) FROM samples WHERE fs = ?1", &st,
		      "cannot store the sample");
	if (ret)
		return ret;
	sqlite3_bind_int64(st, 1, fs);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL) {
		sqlite3_finalize(st);
		return rc == SQLITE_ROW ? 0 : db_error(db, rc, "cannot store the sample");
	}
	newest = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (time == newest)
		return bx_error(-EEXIST, "%s: a sample of this second is already stored (another "
				"record at the same moment?)", db->path);
	if (time > newest - BX_MON_RACE_SECONDS)
		return 0;
	tt = (time_t)newest;
	gmtime_r(&tt, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	bx_format_duration(newest - time, behind, sizeof(behind));
	return bx_error(-ERANGE, "%s: the clock is %s behind the newest sample (%s): not "
			"stored; check the system clock", db->path, behind, when);
}

int bx_mon_db_add(struct bx_mon_db *db, const struct bx_mon_sample *s, int64_t keep)
{
	int64_t fs = 0, sample = 0;
	int ret;

	ret = exec(db, "BEGIN IMMEDIATE", "cannot store the sample");
	if (ret)
		return ret;
	ret = fs_row(db, s, &fs);
	if (!ret)
		ret = in_time_order(db, fs, s->fig.time);
	if (!ret)
		ret = insert_sample(db, fs, s, &sample);
	if (!ret)
		ret = insert_spaces(db, sample, s);
	if (!ret)
		ret = insert_devices(db, sample, s);
	if (!ret)
		ret = retain(db, fs, s->fig.time, keep);
	if (!ret)
		ret = exec(db, "COMMIT", "cannot store the sample");
	if (ret)
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	return ret;
}

/* ---- reading ---- */

static void column_text(sqlite3_stmt *st, int col, char *buf, size_t len)
{
	const unsigned char *text = sqlite3_column_text(st, col);

	snprintf(buf, len, "%s", text ? (const char *)text : "");
}

/* Steps through the rows of @st, calling @fn for each; finalizes @st. */
static int each_row(struct bx_mon_db *db, sqlite3_stmt *st, int (*fn)(void *, sqlite3_stmt *),
		    void *arg)
{
	int rc, ret = 0;

	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = fn(arg, st);
	if (!ret && rc != SQLITE_DONE)
		ret = db_error(db, rc, "cannot read the history");
	sqlite3_finalize(st);
	return ret;
}

/* A growing array of @size-byte elements. */
struct rows {
	void *items;
	size_t nr, cap, size;
};

static void *rows_next(struct rows *r)
{
	if (r->nr == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		void *items = realloc(r->items, cap * r->size);

		if (!items)
			return NULL;
		r->items = items;
		r->cap = cap;
	}
	return memset((char *)r->items + r->nr++ * r->size, 0, r->size);
}

static int fs_of_row(void *arg, sqlite3_stmt *st)
{
	struct bx_mon_fs *fs = rows_next(arg);
	char fsid[64];

	if (!fs)
		return bx_error(-ENOMEM, "out of memory");
	fs->id = sqlite3_column_int64(st, 0);
	column_text(st, 1, fsid, sizeof(fsid));
	if (uuid_parse(fsid, fs->fsid))
		memset(fs->fsid, 0, sizeof(fs->fsid));
	bx_fsid_unparse(fs->fsid, fs->fsid_str);
	column_text(st, 2, fs->label, sizeof(fs->label));
	column_text(st, 3, fs->mountpoint, sizeof(fs->mountpoint));
	fs->nr_samples = (size_t)sqlite3_column_int64(st, 4);
	fs->first = sqlite3_column_int64(st, 5);
	fs->last = sqlite3_column_int64(st, 6);
	return 0;
}

int bx_mon_find_fs(struct bx_mon_fs *list, size_t nr, const char *name, const char *db_path,
		   struct bx_mon_fs **found)
{
	struct bx_mounted_fs mfs;
	bool have_fsid;
	char real[PATH_MAX];
	uint8_t fsid[16];

	have_fsid = !uuid_parse(name, fsid);
	if (!have_fsid && realpath(name, real)) {
		for (size_t i = 0; i < nr; i++) {
			if (!strcmp(list[i].mountpoint, real)) {
				*found = &list[i];
				return 0;
			}
		}
		if (!bx_mounted_open(real, &mfs)) {
			memcpy(fsid, mfs.fsid, sizeof(fsid));
			have_fsid = true;
			bx_mounted_close(&mfs);
		}
		bx_error_clear();
	}
	for (size_t i = 0; have_fsid && i < nr; i++) {
		if (!memcmp(list[i].fsid, fsid, sizeof(fsid))) {
			*found = &list[i];
			return 0;
		}
	}
	return bx_error(-ENOENT, "%s: no such filesystem in the history %s", name, db_path);
}

int bx_mon_db_filesystems(struct bx_mon_db *db, struct bx_mon_fs **list, size_t *nr)
{
	struct rows rows = { .size = sizeof(**list) };
	sqlite3_stmt *st;
	int ret;

	ret = prepare(db, "SELECT f.id, f.fsid, f.label, f.mountpoint, count(s.id), min(s.time),"
			  " max(s.time) FROM filesystems f LEFT JOIN samples s ON s.fs = f.id"
			  " GROUP BY f.id ORDER BY f.fsid", &st, "cannot read the history");
	if (!ret)
		ret = each_row(db, st, fs_of_row, &rows);
	if (ret) {
		free(rows.items);
		return ret;
	}
	*list = rows.items;
	*nr = rows.nr;
	return 0;
}

/* The figures of a row whose columns start with time, then figure_columns. */
static void read_figures(sqlite3_stmt *st, int first, struct bx_mon_figures *f)
{
	f->time = sqlite3_column_int64(st, first);
	for (size_t i = 0; i < NR_FIGURES; i++) {
		const struct column *c = &figure_columns[i];
		int col = first + 1 + (int)i;

		*(uint64_t *)((char *)f + c->offset) = u64(st, col);
		if (c->present >= 0)
			*(bool *)((char *)f + c->present) = sqlite3_column_type(st, col) != SQLITE_NULL;
	}
}

static int figures_of_row(void *arg, sqlite3_stmt *st)
{
	struct bx_mon_figures *f = rows_next(arg);

	if (!f)
		return bx_error(-ENOMEM, "out of memory");
	read_figures(st, 0, f);
	return 0;
}

/* "SELECT time, <figures>@more FROM @from" */
static int prepare_figures(struct bx_mon_db *db, const char *more, const char *from,
			   sqlite3_stmt **st)
{
	char names[1024], params[512], sql[2048];

	figure_lists(names, sizeof(names), params, sizeof(params), 1);
	snprintf(sql, sizeof(sql), "SELECT time, %s%s FROM %s", names, more, from);
	return prepare(db, sql, st, "cannot read the history");
}

int bx_mon_db_figures(struct bx_mon_db *db, int64_t fs_id, int64_t since, int64_t until,
		      struct bx_mon_figures **figs, size_t *nr)
{
	struct rows rows = { .size = sizeof(**figs) };
	sqlite3_stmt *st;
	int ret;

	ret = prepare_figures(db, "", "samples WHERE fs = ?1 AND time >= ?2 AND time <= ?3"
			      " ORDER BY time, id", &st);
	if (ret)
		return ret;
	sqlite3_bind_int64(st, 1, fs_id);
	sqlite3_bind_int64(st, 2, since);
	sqlite3_bind_int64(st, 3, until);
	ret = each_row(db, st, figures_of_row, &rows);
	if (ret) {
		free(rows.items);
		return ret;
	}
	*figs = rows.items;
	*nr = rows.nr;
	return 0;
}

static int space_of_row(void *arg, sqlite3_stmt *st)
{
	struct bx_mon_space *sp = rows_next(arg);

	if (!sp)
		return bx_error(-ENOMEM, "out of memory");
	*sp = (struct bx_mon_space){ u64(st, 0), u64(st, 1), u64(st, 2) };
	return 0;
}

static int device_of_row(void *arg, sqlite3_stmt *st)
{
	struct bx_mon_device *d = rows_next(arg);

	if (!d)
		return bx_error(-ENOMEM, "out of memory");
	d->devid = u64(st, 0);
	column_text(st, 1, d->path, sizeof(d->path));
	d->missing = sqlite3_column_int(st, 2);
	d->hint = u64(st, 3);
	d->size = u64(st, 4);
	d->unallocated = u64(st, 5);
	d->data = u64(st, 6);
	d->metadata = u64(st, 7);
	d->system = u64(st, 8);
	d->have_errors = sqlite3_column_type(st, 9) != SQLITE_NULL;
	for (int k = 0; k < BX_DEV_STAT_COUNT; k++)
		d->errors[k] = u64(st, 9 + k);
	return 0;
}

/* The rows of a detail table of sample @id into *@items, *@nr. */
static int read_details(struct bx_mon_db *db, const char *sql, int64_t id,
			int (*fn)(void *, sqlite3_stmt *), size_t size, void **items, size_t *nr)
{
	struct rows rows = { .size = size };
	sqlite3_stmt *st;
	int ret = prepare(db, sql, &st, "cannot read the history");

	if (ret)
		return ret;
	sqlite3_bind_int64(st, 1, id);
	ret = each_row(db, st, fn, &rows);
	if (ret) {
		free(rows.items);
		return ret;
	}
	*items = rows.items;
	*nr = rows.nr;
	return 0;
}

/* The columns of PLACEMENT_COLUMNS from @col on. */
static void read_placement(sqlite3_stmt *st, int col, struct bx_mon_sample *s)
{
	struct bx_mon_misplaced *m = &s->misplaced;

	s->have_hints_effective = sqlite3_column_type(st, col) != SQLITE_NULL;
	s->hints_effective = sqlite3_column_int(st, col);
	m->known = sqlite3_column_type(st, col + 1) != SQLITE_NULL;
	m->forbidden_chunks = u64(st, col + 1);
	m->forbidden_used = u64(st, col + 2);
	m->off_preference_chunks = u64(st, col + 3);
	m->off_preference_used = u64(st, col + 4);
}

/* Everything of the sample row but its details; returns its id. */
static void read_sample_row(sqlite3_stmt *st, struct bx_mon_sample *s, int64_t *id)
{
	int col = 1 + (int)NR_FIGURES;
	struct bx_mon_scrub *sc = &s->scrub;
	char fsid[64];

	read_figures(st, 0, &s->fig);
	*id = sqlite3_column_int64(st, col);
	column_text(st, col + 1, s->read_policy, sizeof(s->read_policy));
	sc->known = sqlite3_column_type(st, col + 2) != SQLITE_NULL;
	column_text(st, col + 2, sc->status, sizeof(sc->status));
	sc->started = sqlite3_column_int64(st, col + 3);
	sc->duration = sqlite3_column_double(st, col + 4);
	sc->bytes_scrubbed = u64(st, col + 5);
	sc->errors = u64(st, col + 6);
	sc->corrected = u64(st, col + 7);
	sc->uncorrectable = u64(st, col + 8);
	column_text(st, col + 9, fsid, sizeof(fsid));
	if (uuid_parse(fsid, s->fsid))
		memset(s->fsid, 0, sizeof(s->fsid));
	column_text(st, col + 10, s->label, sizeof(s->label));
	column_text(st, col + 11, s->mountpoint, sizeof(s->mountpoint));
	read_placement(st, col + 12, s);
}

int bx_mon_db_latest(struct bx_mon_db *db, int64_t fs_id, int64_t until,
		     struct bx_mon_sample *s)
{
	sqlite3_stmt *st;
	int64_t id = 0;
	int rc, ret;

	memset(s, 0, sizeof(*s));
	ret = prepare_figures(db, ", samples.id, read_policy, " SCRUB_COLUMNS ", f.fsid, f.label,"
			      " f.mountpoint, " PLACEMENT_COLUMNS,
			      "samples JOIN filesystems f ON f.id = samples.fs"
			      " WHERE samples.fs = ?1 AND time <= ?2"
			      " ORDER BY time DESC, samples.id DESC LIMIT 1", &st);
	if (ret)
		return ret;
	sqlite3_bind_int64(st, 1, fs_id);
	sqlite3_bind_int64(st, 2, until);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		read_sample_row(st, s, &id);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return bx_error(-ENOENT, "%s: no sample of this filesystem", db->path);
	if (rc != SQLITE_ROW)
		return db_error(db, rc, "cannot read the history");
	ret = read_details(db, "SELECT flags, total, used FROM sample_spaces WHERE sample = ?1"
			   " ORDER BY flags", id, space_of_row, sizeof(*s->spaces),
			   (void **)&s->spaces, &s->nr_spaces);
	if (!ret)
		ret = read_details(db, "SELECT devid, path, missing, hint, size, unallocated, data,"
				   " metadata, system, write_io_errs, read_io_errs, flush_io_errs,"
				   " corruption_errs, generation_errs FROM sample_devices"
				   " WHERE sample = ?1 ORDER BY devid", id, device_of_row,
				   sizeof(*s->devices), (void **)&s->devices, &s->nr_devices);
	if (ret)
		bx_mon_sample_release(s);
	return ret;
}
