/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Replays a dm-log-writes log (every write a device saw, in the order it
 * became durable) onto image files, up to any entry: the state the device
 * would hold had the machine stopped there. Written from the log format the
 * kernel documents (Documentation/admin-guide/device-mapper/log-writes.rst):
 *
 *   block 0: magic (u64), version (u64), number of entries (u64), the
 *            logged device's sector size (u32), all little-endian;
 *   then per entry, one block holding sector (u64), sectors (u64), flags
 *   (u64), data length (u64) (marks: followed by the mark's name), and for
 *   a write its sectors of data in the blocks after it. Sectors and blocks
 *   are the sector size of block 0. Flags: 1 flush, 2 FUA, 4 discard (no
 *   data follows), 8 mark.
 *
 *   logwrites-replay list <log>
 *       "entries <n> sectorsize <s>", then one line per entry:
 *       "<index> <flags> <sector> <sectors> [<mark>]", flags as letters
 *       (F flush, U FUA, D discard, M mark, W a plain write) .
 *   logwrites-replay apply <log> <first> <end> <file>:<start>:<length>...
 *       Applies entries first .. end-1 (0-based) to the files: a write at
 *       byte b of the logged device goes to the file whose [start,
 *       start+length) holds b, at b - start. Discards write zeros (what a
 *       discarding device may read back). Writes outside every file fail.
 *
 * Built static, like guest-fill: it runs on the host and in the guests.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_MAGIC 0x6a736677736872ULL
#define FLAG_FLUSH 1
#define FLAG_FUA 2
#define FLAG_DISCARD 4
#define FLAG_MARK 8
#define MAX_TARGETS 64

struct log {
	int fd;
	uint64_t nr_entries;
	uint32_t sectorsize;
	uint64_t pos;                 /* byte offset of the next entry */
	uint64_t index;               /* its index */
};

struct entry {
	uint64_t sector;
	uint64_t nr_sectors;
	uint64_t flags;
	uint64_t data_len;
	uint64_t data_pos;            /* where its data starts in the log */
	char mark[256];
};

struct target {
	int fd;
	uint64_t start, len;
};

/* The whole of @len bytes at @off, read (@out NULL) into @in or written from @out. */
static int transfer(int fd, void *in, const void *out, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? pwrite(fd, (const char *)out + done, len - done, (off_t)(off + done))
				: pread(fd, (char *)in + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	return transfer(fd, buf, NULL, len, off);
}

static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	return transfer(fd, NULL, buf, len, off);
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static int log_open(const char *path, struct log *log)
{
	uint8_t super[28];

	log->fd = open(path, O_RDONLY);
	if (log->fd < 0 || read_at(log->fd, super, sizeof(super), 0)) {
		fprintf(stderr, "%s: cannot read the log: %s\n", path, strerror(errno));
		return -1;
	}
	if (le64_at(super) != LOG_MAGIC || le64_at(super + 8) != 1) {
		fprintf(stderr, "%s: not a dm-log-writes log (version 1)\n", path);
		return -1;
	}
	log->nr_entries = le64_at(super + 16);
	memcpy(&log->sectorsize, super + 24, sizeof(log->sectorsize));
	log->sectorsize = le32toh(log->sectorsize);
	if (log->sectorsize < 512 || log->sectorsize > 65536 ||
	    (log->sectorsize & (log->sectorsize - 1))) {
		fprintf(stderr, "%s: bad sector size %u\n", path, log->sectorsize);
		return -1;
	}
	log->pos = log->sectorsize;
	log->index = 0;
	return 0;
}

/* The next entry; 1, 0 after the last, -1 on a read error. */
static int log_next(struct log *log, struct entry *e)
{
	uint8_t head[32 + sizeof(e->mark)];
	size_t name_len;

	if (log->index >= log->nr_entries)
		return 0;
	if (read_at(log->fd, head, sizeof(head) < log->sectorsize ? sizeof(head) : log->sectorsize,
		    log->pos)) {
		fprintf(stderr, "entry %llu: cannot read it\n", (unsigned long long)log->index);
		return -1;
	}
	e->sector = le64_at(head);
	e->nr_sectors = le64_at(head + 8);
	e->flags = le64_at(head + 16);
	e->data_len = le64_at(head + 24);
	e->data_pos = log->pos + log->sectorsize;
	e->mark[0] = 0;
	if (e->flags & FLAG_MARK) {
		name_len = e->data_len < sizeof(e->mark) - 1 ? e->data_len : sizeof(e->mark) - 1;
		if (name_len > log->sectorsize - 32)
			name_len = log->sectorsize - 32;
		memcpy(e->mark, head + 32, name_len);
		e->mark[name_len] = 0;
	}
	log->pos += log->sectorsize;
	if (!(e->flags & FLAG_DISCARD))
		log->pos += e->nr_sectors * log->sectorsize;
	log->index++;
	return 1;
}

static void flag_letters(uint64_t flags, char *out)
{
	char *p = out;

	if (flags & FLAG_FLUSH)
		*p++ = 'F';
	if (flags & FLAG_FUA)
		*p++ = 'U';
	if (flags & FLAG_DISCARD)
		*p++ = 'D';
	if (flags & FLAG_MARK)
		*p++ = 'M';
	if (p == out)
		*p++ = 'W';
	*p = 0;
}

static int cmd_list(const char *path)
{
	struct log log;
	struct entry e;
	int ret;

	if (log_open(path, &log))
		return 1;
	printf("entries %llu sectorsize %u\n", (unsigned long long)log.nr_entries, log.sectorsize);
	while ((ret = log_next(&log, &e)) > 0) {
		char flags[8];

		flag_letters(e.flags, flags);
		printf("%llu %s %llu %llu%s%s\n", (unsigned long long)(log.index - 1), flags,
		       (unsigned long long)e.sector, (unsigned long long)e.nr_sectors,
		       e.mark[0] ? " " : "", e.mark);
	}
	return ret < 0;
}

/* Writes @len bytes of @buf at byte @at of the logged device. */
static int put(const struct target *t, int nr, const uint8_t *buf, uint64_t len, uint64_t at)
{
	while (len) {
		const struct target *hit = NULL;
		uint64_t piece;

		for (int i = 0; i < nr && !hit; i++)
			if (at >= t[i].start && at < t[i].start + t[i].len)
				hit = &t[i];
		if (!hit) {
			fprintf(stderr, "a write at byte %llu is outside every target\n",
				(unsigned long long)at);
			return -1;
		}
		piece = hit->start + hit->len - at;
		if (piece > len)
			piece = len;
		if (write_at(hit->fd, buf, piece, at - hit->start)) {
			perror("write");
			return -1;
		}
		buf += piece;
		at += piece;
		len -= piece;
	}
	return 0;
}

static int apply_entry(const struct log *log, const struct entry *e, const struct target *t,
		       int nr)
{
	uint64_t len = e->nr_sectors * log->sectorsize;
	uint64_t at = e->sector * log->sectorsize;
	uint8_t *buf;
	int ret;

	if (!len || (e->flags & FLAG_MARK))
		return 0;
	buf = calloc(1, len);
	if (!buf) {
		perror("calloc");
		return -1;
	}
	ret = 0;
	if (!(e->flags & FLAG_DISCARD) && read_at(log->fd, buf, len, e->data_pos)) {
		fprintf(stderr, "entry %llu: cannot read its data\n",
			(unsigned long long)(log->index - 1));
		ret = -1;
	}
	if (!ret)
		ret = put(t, nr, buf, len, at);
	free(buf);
	return ret;
}

static int parse_target(char *spec, struct target *t)
{
	char *b = strrchr(spec, ':'), *a;

	if (!b)
		return -1;
	*b++ = 0;
	a = strrchr(spec, ':');
	if (!a)
		return -1;
	*a++ = 0;
	t->start = strtoull(a, NULL, 0);
	t->len = strtoull(b, NULL, 0);
	t->fd = open(spec, O_WRONLY);
	if (t->fd < 0) {
		fprintf(stderr, "%s: %s\n", spec, strerror(errno));
		return -1;
	}
	return 0;
}

static int cmd_apply(int argc, char **argv)
{
	uint64_t first = strtoull(argv[1], NULL, 0), end = strtoull(argv[2], NULL, 0);
	struct target t[MAX_TARGETS];
	int nr = argc - 3, ret = 0;
	struct log log;
	struct entry e;

	if (nr < 1 || nr > MAX_TARGETS || log_open(argv[0], &log))
		return 2;
	for (int i = 0; i < nr; i++)
		if (parse_target(argv[3 + i], &t[i])) {
			fprintf(stderr, "bad target '%s' (<file>:<start>:<length>)\n", argv[3 + i]);
			return 2;
		}
	if (end > log.nr_entries) {
		fprintf(stderr, "the log has %llu entries\n", (unsigned long long)log.nr_entries);
		return 1;
	}
	while (!ret && log.index < end) {
		ret = log_next(&log, &e);
		if (ret > 0)
			ret = log.index - 1 >= first ? apply_entry(&log, &e, t, nr) : 0;
		else
			ret = -1;
	}
	for (int i = 0; i < nr; i++)
		if (close(t[i].fd))
			ret = -1;
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "list"))
		return cmd_list(argv[2]);
	if (argc >= 6 && !strcmp(argv[1], "apply"))
		return cmd_apply(argc - 2, argv + 2);
	fprintf(stderr, "usage: logwrites-replay list <log>\n"
		"       logwrites-replay apply <log> <first> <end> <file>:<start>:<length>...\n");
	return 2;
}
