/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash simulation for the tests (disk/write-plan.h), built only with
 * --enable-fault-injection: the write path (write.c) calls these hooks, which
 * are empty inline functions in a release build.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "disk/io.h"
#include "disk/write.h"
#include "disk/write-private.h"

static inline bool bx_fault_drops(const struct bx_write_plan *plan)
{
	return plan->drop_all || plan->drop_mask;
}

/* A write not yet flushed, and what it overwrote, so a simulated crash can lose it. */
struct bx_unflushed {
	struct bx_device *dev;
	uint64_t physical;
	size_t len;
	uint8_t *old;
};

static int parse_count(const char *name, const char *value, uint64_t *out)
{
	char *end;

	*out = 0;
	if (!value || !*value)
		return 0;
	errno = 0;
	*out = strtoull(value, &end, 10);
	if (errno || *end || *value == '-')
		return bx_error(-EINVAL, "%s=%s: not a number of writes (0: off)", name, value);
	return 0;
}

static int parse_drop_list(const char *value, struct bx_write_plan *plan)
{
	const char *p = value;

	if (!strcmp(value, "all")) {
		plan->drop_all = true;
		return 0;
	}
	while (*p) {
		char *end;
		unsigned long k;

		errno = 0;
		k = strtoul(p, &end, 10);
		if (errno || end == p || k < 1 || k > BX_FAULT_MAX_LISTED || (*end && *end != ','))
			return bx_error(-EINVAL, "BTRFSX_FAULT_DROP_UNFLUSHED=%s: 'all' or a list of "
					"numbers from 1 to %d", value, BX_FAULT_MAX_LISTED);
		plan->drop_mask |= 1ULL << (k - 1);
		p = *end ? end + 1 : end;
	}
	return 0;
}

int bx_fault_plan_parse(struct bx_write_plan *plan, const char *after_writes,
			const char *drop_unflushed, const char *pause_before_write)
{
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = parse_count("BTRFSX_FAULT_AFTER_WRITES", after_writes, &plan->after_writes);
	if (!ret)
		ret = parse_count("BTRFSX_FAULT_PAUSE_BEFORE_WRITE", pause_before_write,
				  &plan->pause_before_write);
	if (ret || !drop_unflushed || !*drop_unflushed)
		return ret;
	if (!plan->after_writes)
		return bx_error(-EINVAL, "BTRFSX_FAULT_DROP_UNFLUSHED needs "
				"BTRFSX_FAULT_AFTER_WRITES (the crash point)");
	return parse_drop_list(drop_unflushed, plan);
}

/* With a plan that drops unflushed writes: keeps what @len bytes at @physical hold now. */
int bx_fault_remember(struct bx_fs *fs, struct bx_device *dev, size_t len,
			      uint64_t physical)
{
	struct bx_unflushed *log, *rec;
	int ret;

	if (!bx_fault_drops(&fs->writes))
		return 0;
	log = realloc(fs->unflushed, (fs->nr_unflushed + 1) * sizeof(*log));
	if (!log)
		return bx_error(-ENOMEM, "out of memory");
	fs->unflushed = log;
	rec = &log[fs->nr_unflushed];
	*rec = (struct bx_unflushed){ dev, physical, len, malloc(len ? len : 1) };
	if (!rec->old)
		return bx_error(-ENOMEM, "out of memory");
	ret = bx_read_physical(dev, rec->old, len, physical);
	if (ret) {
		free(rec->old);
		return bx_error_wrap(ret, "keeping what the write at %llu overwrites",
				     (unsigned long long)physical);
	}
	if (!fs->nr_unflushed++)
		fs->first_unflushed_write = fs->nr_writes + 1;
	return 0;
}

/* Flushed writes of @dev (NULL: every device) can no longer be lost. */
void bx_fault_forget(struct bx_fs *fs, const struct bx_device *dev)
{
	size_t kept = 0;

	for (size_t i = 0; i < fs->nr_unflushed; i++) {
		if (!dev || fs->unflushed[i].dev == dev)
			free(fs->unflushed[i].old);
		else
			fs->unflushed[kept++] = fs->unflushed[i];
	}
	fs->nr_unflushed = kept;
	if (!kept) {
		free(fs->unflushed);
		fs->unflushed = NULL;
	}
}

static bool dropped(const struct bx_write_plan *plan, size_t index)
{
	return plan->drop_all || (index < BX_FAULT_MAX_LISTED && (plan->drop_mask >> index) & 1);
}

/*
 * The machine stops now: the chosen unflushed writes never reached the disk.
 * They were issued into disjoint ranges (a batch refuses overlaps), so putting
 * back what they overwrote, newest first, is the same as never writing them.
 */
static int simulate_crash(struct bx_fs *fs)
{
	size_t nr = fs->nr_unflushed, nr_dropped = 0;
	int ret = 0;

	for (size_t i = nr; i-- > 0 && !ret;) {
		const struct bx_unflushed *rec = &fs->unflushed[i];

		if (!dropped(&fs->writes, i))
			continue;
		ret = bx_pwrite_timed(rec->dev->fd, rec->old, rec->len, rec->physical,
				      rec->dev->io_timeout);
		if (!ret)
			ret = bx_fdatasync_timed(rec->dev->fd, rec->dev->io_timeout);
		nr_dropped++;
	}
	bx_fault_forget(fs, NULL);
	if (ret) {
		errno = -ret;
		return bx_error(ret, "fault injection: losing an unflushed write failed: %m");
	}
	return bx_error(-EIO, "write stopped by fault injection after %llu writes (writes "
			"%llu-%llu unflushed: %zu requests, %zu dropped)",
			(unsigned long long)fs->nr_writes,
			(unsigned long long)fs->first_unflushed_write,
			(unsigned long long)fs->nr_writes, nr, nr_dropped);
}

/* Before each write: the stop (once reached, every write fails) and the pause. */
int bx_fault_before_write(struct bx_fs *fs)
{
	const struct bx_write_plan *plan = &fs->writes;

	if (plan->after_writes && fs->nr_writes >= plan->after_writes)
		return bx_error(-EIO, "write stopped by fault injection after %llu writes",
				(unsigned long long)fs->nr_writes);
	if (plan->pause_before_write == fs->nr_writes + 1)
		raise(SIGSTOP);
	return 0;
}

/* After each write (counted), before its flush: the stop, when unflushed writes are lost. */
int bx_fault_after_write(struct bx_fs *fs)
{
	if (bx_fault_drops(&fs->writes) && fs->nr_writes == fs->writes.after_writes)
		return simulate_crash(fs);
	return 0;
}

