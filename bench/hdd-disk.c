/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A disk that seeks, for bench/hdd's guests: serves an image file over NBD
 * (a unix socket; qemu attaches it as a virtio disk) at the pace of a
 * hard disk. qemu's throttling and dm-delay give bandwidth and a fixed
 * latency per request, but no seeks: a read far from the last one costs
 * the same as the next one, so what an HDD punishes (tree reads between
 * data reads, small scattered requests) showed nothing there.
 *
 *   hdd-disk [options] SOCKET IMAGE
 *
 * The model: one actuator over a platter turning at --rpm. The image's
 * bytes lie track after track, a track holding one revolution of
 * --mib-s. A request on the track under the head waits for its first byte
 * to come round; one elsewhere first seeks (--settle-ms for the next track,
 * growing with the square root of the distance to a full stroke, so that a
 * random seek takes --seek-ms on average) and then waits for it. Then its
 * bytes pass at --mib-s. After a read the drive reads on into its cache
 * while it is idle (--cache-mib, as drives do); a read the cache holds
 * costs only the interface. The drive's command queue serves the request
 * it can reach first, or the oldest once one has waited --max-wait-ms.
 * --slow multiplies every time (the emulated guest is slow; the disk is
 * played in slow motion with it, keeping the ratio of seek to transfer
 * time of the real disk).
 *
 * Fixed newstyle NBD, simple replies, one client; a connection that ends
 * ends the program. --log FILE: a line per request ("end type offset
 * length seek rotation transfer cached queued arrived": times in seconds
 * of the monotonic clock; the bytes the cache served; the requests left
 * waiting when it started). At exit, the totals on stderr.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NBD_MAGIC 0x4e42444d41474943ULL         /* "NBDMAGIC" */
#define NBD_OPTS_MAGIC 0x49484156454f5054ULL    /* "IHAVEOPT" */
#define NBD_REP_MAGIC 0x0003e889045565a9ULL
#define NBD_REQUEST_MAGIC 0x25609513u
#define NBD_SIMPLE_REPLY_MAGIC 0x67446698u

#define NBD_FLAG_FIXED_NEWSTYLE 1u
#define NBD_FLAG_NO_ZEROES 2u
#define NBD_FLAG_HAS_FLAGS 1u
#define NBD_FLAG_SEND_FLUSH 4u
#define NBD_FLAG_ROTATIONAL 16u

#define NBD_OPT_EXPORT_NAME 1u
#define NBD_OPT_ABORT 2u
#define NBD_OPT_INFO 6u
#define NBD_OPT_GO 7u
#define NBD_REP_ACK 1u
#define NBD_REP_INFO 3u
#define NBD_REP_ERR_UNSUP 0x80000001u
#define NBD_REP_ERR_INVALID 0x80000003u
#define NBD_INFO_EXPORT 0u

#define NBD_CMD_READ 0u
#define NBD_CMD_WRITE 1u
#define NBD_CMD_DISC 2u
#define NBD_CMD_FLUSH 3u
#define NBD_EIO 5u
#define NBD_EINVAL 22u

#define MAX_REQUEST (64u << 20)
/* The drive's command queue (NCQ holds 32). */
#define QUEUE_MAX 32
/* A random seek's distance is |x - y| for uniform x, y: E[sqrt] = 8/15. */
#define MEAN_SQRT_DISTANCE (8.0 / 15.0)

struct params {
	double mib_s, rpm, seek_ms, settle_ms, cache_mib, max_wait_ms, slow, iface_mib_s;
};

/* The drive: its geometry and timing (seconds, bytes, slow motion applied) and its state. */
struct disk {
	double bw;                 /* bytes a second under the head */
	double iface_bw;           /* bytes a second from the cache */
	double rev;                /* a revolution */
	double settle;             /* seek to the next track */
	double stroke;             /* seek across the whole platter */
	double max_wait;
	uint64_t track_bytes;
	uint64_t tracks;
	uint64_t cache_bytes;
	double epoch;              /* time of angle 0 */
	double free_at;            /* when the last command ended */
	uint64_t head_track;
	/* The cache: [cache_lo, read_end) read, then read-ahead from read_end since ra_from. */
	uint64_t cache_lo, read_end;
	double ra_from;
	bool ra_on;
};

struct request {
	uint16_t type;
	uint64_t handle, offset;
	uint32_t length;
	double arrived;
	void *data;                /* the write's payload */
};

/* How a request is served: when its first byte can be read and what it costs. */
struct service {
	double seek, rotation, transfer;
	uint64_t cached;           /* bytes the cache served */
	uint64_t end_track;
	bool from_cache;           /* all of it */
};

struct totals {
	uint64_t reads, writes, flushes, read_bytes, write_bytes, cached_bytes, seeks;
	double seek, rotation, transfer, busy;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void disk_init(struct disk *d, const struct params *p, uint64_t capacity, double t)
{
	double avg_seek = p->seek_ms * p->slow / 1e3;

	d->bw = p->mib_s * (1 << 20) / p->slow;
	d->iface_bw = p->iface_mib_s * (1 << 20) / p->slow;
	d->rev = 60.0 / p->rpm * p->slow;
	d->settle = p->settle_ms * p->slow / 1e3;
	d->stroke = d->settle + (avg_seek - d->settle) / MEAN_SQRT_DISTANCE;
	d->max_wait = p->max_wait_ms * p->slow / 1e3;
	d->track_bytes = (uint64_t)(d->bw * d->rev) / 4096 * 4096;
	d->tracks = capacity / d->track_bytes + 1;
	d->cache_bytes = (uint64_t)(p->cache_mib * (1 << 20));
	d->epoch = t;
	d->head_track = 0;
	d->ra_on = false;
}

/* What the cache holds at @t: [cache_lo, *hi). */
static uint64_t cache_hi(const struct disk *d, double t)
{
	uint64_t ahead;

	if (!d->ra_on)
		return d->read_end;
	ahead = t > d->ra_from ? (uint64_t)((t - d->ra_from) * d->bw) : 0;
	if (ahead > d->cache_bytes)
		ahead = d->cache_bytes;
	return d->read_end + ahead / 4096 * 4096;
}

/* The track under the head at @t: reading ahead moves it on. */
static uint64_t head_at(const struct disk *d, double t)
{
	uint64_t hi = cache_hi(d, t);

	return d->ra_on && hi > d->read_end ? (hi - 1) / d->track_bytes : d->head_track;
}

static double seek_time(const struct disk *d, uint64_t from, uint64_t to)
{
	uint64_t dist = from > to ? from - to : to - from;

	if (!dist)
		return 0;
	return d->settle + (d->stroke - d->settle) * sqrt((double)dist / (double)d->tracks);
}

/* The wait at time @t until byte @offset of its track comes under the head. */
static double rotation_wait(const struct disk *d, double t, uint64_t offset)
{
	double at = fmod((t - d->epoch) / d->rev, 1.0);
	double want = (double)(offset % d->track_bytes) / (double)d->track_bytes;
	double wait = want - at;

	if (wait < 0)
		wait += 1.0;
	/* The next byte of a stream is due now, not a revolution later. */
	if (wait > 1.0 - 1e-9)
		wait = 0;
	return wait * d->rev;
}

/* The cost of @r if the drive takes it at @t. */
static struct service plan(const struct disk *d, const struct request *r, double t)
{
	struct service s = { 0 };
	uint64_t start = r->offset, end = r->offset + r->length;
	uint64_t track;

	if (r->type == NBD_CMD_FLUSH) {
		s.end_track = d->head_track;
		return s;
	}
	if (r->type == NBD_CMD_READ && d->read_end > d->cache_lo && start >= d->cache_lo) {
		uint64_t hi = cache_hi(d, t);

		if (start <= hi) {
			s.cached = (end < hi ? end : hi) - start;
			start += s.cached;
			s.transfer = (double)s.cached / d->iface_bw;
			if (start == end) {
				s.from_cache = true;
				s.end_track = d->head_track;
				return s;
			}
			/* Still reading ahead: the head is at @hi now and goes on. */
			if (d->ra_on && hi - d->read_end < d->cache_bytes) {
				s.transfer += (double)(end - start) / d->bw;
				s.end_track = (end - 1) / d->track_bytes;
				return s;
			}
		}
	}
	track = start / d->track_bytes;
	s.seek = seek_time(d, head_at(d, t), track);
	s.rotation = rotation_wait(d, t + s.seek, start);
	s.transfer += (double)(end - start) / d->bw;
	s.end_track = (end - 1) / d->track_bytes;
	return s;
}

static double cost(const struct service *s)
{
	return s->seek + s->rotation + s->transfer;
}

/* The drive's state once @r, served as @s, has ended at @t. */
static void commit(struct disk *d, const struct request *r, const struct service *s, double t)
{
	if (r->type == NBD_CMD_FLUSH || s->from_cache)
		return;
	d->head_track = s->end_track;
	if (r->type == NBD_CMD_WRITE) {
		d->ra_on = false;
		d->cache_lo = d->read_end = 0;
		return;
	}
	d->cache_lo = r->offset;
	d->read_end = r->offset + r->length;
	d->ra_from = t;
	d->ra_on = d->cache_bytes > 0;
}

/* Stops the read-ahead at @t: the head leaves for another request. */
static void stop_readahead(struct disk *d, double t)
{
	if (!d->ra_on)
		return;
	d->head_track = head_at(d, t);
	d->read_end = cache_hi(d, t);
	if (d->read_end - d->cache_lo > d->cache_bytes)
		d->cache_lo = d->read_end - d->cache_bytes;
	d->ra_on = false;
}

/*
 * The queued request to serve next at @t: the oldest when it has waited
 * too long (and a flush only when it is the oldest: it follows every write
 * before it), else of those there by @t the one that starts soonest.
 */
static int pick(const struct disk *d, const struct request *q, int n, double t)
{
	int best = -1;
	double best_cost = 0;

	if (q[0].type == NBD_CMD_FLUSH || t - q[0].arrived >= d->max_wait)
		return 0;
	for (int i = 0; i < n; i++) {
		struct service s;
		double c;

		if (q[i].type == NBD_CMD_FLUSH)
			break;
		if (q[i].arrived > t)
			continue;
		s = plan(d, &q[i], t);
		c = s.from_cache ? -1 : s.seek + s.rotation;
		if (best < 0 || c < best_cost) {
			best = i;
			best_cost = c;
		}
	}
	return best;
}

/* All @len bytes of @buf to (@out) or from the socket; -EPIPE when the peer has gone. */
static int transfer_full(int fd, void *buf, size_t len, bool out)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = out ? write(fd, (char *)buf + done, len - done) :
				  read(fd, (char *)buf + done, len - done);

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
	return transfer_full(fd, buf, len, false);
}

static int write_full(int fd, const void *buf, size_t len)
{
	return transfer_full(fd, (void *)buf, len, true);
}

static int send_option_reply(int fd, uint32_t option, uint32_t type, const void *data,
			     uint32_t len)
{
	struct __attribute__((packed)) {
		uint64_t magic;
		uint32_t option, type, len;
	} h = { htobe64(NBD_REP_MAGIC), htobe32(option), htobe32(type), htobe32(len) };
	int ret = write_full(fd, &h, sizeof(h));

	return ret ? ret : write_full(fd, data, len);
}

/* The export's size and flags, as NBD_OPT_GO/INFO and EXPORT_NAME give them. */
static int send_export_info(int fd, uint32_t option, uint64_t size, uint16_t flags)
{
	struct __attribute__((packed)) {
		uint16_t type;
		uint64_t size;
		uint16_t flags;
	} info = { htobe16(NBD_INFO_EXPORT), htobe64(size), htobe16(flags) };
	int ret = send_option_reply(fd, option, NBD_REP_INFO, &info, sizeof(info));

	return ret ? ret : send_option_reply(fd, option, NBD_REP_ACK, NULL, 0);
}

/* Fixed newstyle negotiation; 1 when the client went on to transmission, 0 when it left. */
static int negotiate(int fd, uint64_t size)
{
	uint16_t tflags = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_ROTATIONAL;
	struct __attribute__((packed)) {
		uint64_t magic, opts;
		uint16_t flags;
	} hello = { htobe64(NBD_MAGIC), htobe64(NBD_OPTS_MAGIC),
		    htobe16(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES) };
	uint32_t cflags;
	int ret = write_full(fd, &hello, sizeof(hello));

	if (!ret)
		ret = read_full(fd, &cflags, sizeof(cflags));
	while (!ret) {
		struct __attribute__((packed)) {
			uint64_t magic;
			uint32_t option, len;
		} h;
		char data[4096 + 64];
		uint32_t option, len;

		ret = read_full(fd, &h, sizeof(h));
		if (ret)
			break;
		option = be32toh(h.option);
		len = be32toh(h.len);
		if (be64toh(h.magic) != NBD_OPTS_MAGIC || len > sizeof(data))
			return -EPROTO;
		ret = read_full(fd, data, len);
		if (ret)
			break;
		switch (option) {
		case NBD_OPT_EXPORT_NAME: {
			struct __attribute__((packed)) {
				uint64_t size;
				uint16_t flags;
			} reply = { htobe64(size), htobe16(tflags) };
			char zeroes[124] = { 0 };

			ret = write_full(fd, &reply, sizeof(reply));
			if (!ret && !(be32toh(cflags) & NBD_FLAG_NO_ZEROES))
				ret = write_full(fd, zeroes, sizeof(zeroes));
			return ret ? ret : 1;
		}
		case NBD_OPT_GO:
		case NBD_OPT_INFO:
			ret = send_export_info(fd, option, size, tflags);
			if (!ret && option == NBD_OPT_GO)
				return 1;
			break;
		case NBD_OPT_ABORT:
			send_option_reply(fd, option, NBD_REP_ACK, NULL, 0);
			return 0;
		default:
			ret = send_option_reply(fd, option, NBD_REP_ERR_UNSUP, NULL, 0);
		}
	}
	return ret;
}

struct server {
	int sock, image;
	uint64_t size;
	struct disk disk;
	struct request queue[QUEUE_MAX];
	int queued;
	bool busy;
	struct request cur;
	struct service cur_service;
	double cur_end;
	int cur_queued;               /* requests left waiting when it started */
	uint32_t cur_error;
	void *buf;
	FILE *log;
	struct totals totals;
	bool disconnect;
};

/* Reads one request off the socket into the queue. */
static int receive(struct server *s)
{
	struct __attribute__((packed)) {
		uint32_t magic;
		uint16_t flags, type;
		uint64_t handle, offset;
		uint32_t length;
	} h;
	struct request *r = &s->queue[s->queued];
	int ret = read_full(s->sock, &h, sizeof(h));

	if (ret)
		return ret;
	if (be32toh(h.magic) != NBD_REQUEST_MAGIC)
		return -EPROTO;
	*r = (struct request){ be16toh(h.type), h.handle, be64toh(h.offset), be32toh(h.length),
			       now(), NULL };
	if (r->type == NBD_CMD_DISC) {
		s->disconnect = true;
		return 0;
	}
	if (r->length > MAX_REQUEST)
		return -EPROTO;
	if (r->type == NBD_CMD_WRITE) {
		r->data = malloc(r->length ? r->length : 1);
		if (!r->data)
			return -ENOMEM;
		ret = read_full(s->sock, r->data, r->length);
		if (ret) {
			free(r->data);
			return ret;
		}
	}
	s->queued++;
	return 0;
}

static bool readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
}

/* The data moves when the drive takes the request; the reply waits for the model's end. */
static void start(struct server *s, double t)
{
	int i = pick(&s->disk, s->queue, s->queued, t);
	struct request *r = &s->queue[i];

	s->cur = *r;
	memmove(r, r + 1, (size_t)(s->queued - i - 1) * sizeof(*r));
	s->queued--;
	r = &s->cur;
	s->cur_service = plan(&s->disk, r, t);
	if (!s->cur_service.from_cache && r->type != NBD_CMD_FLUSH)
		stop_readahead(&s->disk, t);
	s->cur_end = t + cost(&s->cur_service);
	s->cur_queued = s->queued;
	s->cur_error = 0;
	if (r->type == NBD_CMD_READ || r->type == NBD_CMD_WRITE) {
		ssize_t n;

		if (r->offset > s->size || r->length > s->size - r->offset) {
			s->cur_error = NBD_EINVAL;
		} else {
			n = r->type == NBD_CMD_READ ? pread(s->image, s->buf, r->length, (off_t)r->offset)
						    : pwrite(s->image, r->data, r->length, (off_t)r->offset);
			if (n != (ssize_t)r->length)
				s->cur_error = NBD_EIO;
		}
	} else if (r->type == NBD_CMD_FLUSH) {
		if (fdatasync(s->image))
			s->cur_error = NBD_EIO;
	} else {
		s->cur_error = NBD_EINVAL;
	}
	s->busy = true;
}

static void account(struct server *s)
{
	const struct request *r = &s->cur;
	const struct service *sv = &s->cur_service;
	struct totals *t = &s->totals;

	if (r->type == NBD_CMD_READ) {
		t->reads++;
		t->read_bytes += r->length;
	} else if (r->type == NBD_CMD_WRITE) {
		t->writes++;
		t->write_bytes += r->length;
	} else {
		t->flushes++;
	}
	t->cached_bytes += sv->cached;
	t->seeks += sv->seek > 0;
	t->seek += sv->seek;
	t->rotation += sv->rotation;
	t->transfer += sv->transfer;
	t->busy += cost(sv);
	if (s->log)
		fprintf(s->log, "%.6f %c %" PRIu64 " %u %.6f %.6f %.6f %" PRIu64 " %d %.6f\n",
			s->cur_end, "RWDF"[r->type < 4 ? r->type : 2], r->offset, r->length,
			sv->seek, sv->rotation, sv->transfer, sv->cached, s->cur_queued,
			r->arrived);
}

static int finish(struct server *s)
{
	struct __attribute__((packed)) {
		uint32_t magic, error;
		uint64_t handle;
	} reply = { htobe32(NBD_SIMPLE_REPLY_MAGIC), htobe32(s->cur_error), s->cur.handle };
	int ret = write_full(s->sock, &reply, sizeof(reply));

	if (!ret && s->cur.type == NBD_CMD_READ && !s->cur_error)
		ret = write_full(s->sock, s->buf, s->cur.length);
	commit(&s->disk, &s->cur, &s->cur_service, s->cur_end);
	s->disk.free_at = s->cur_end;
	account(s);
	free(s->cur.data);
	s->busy = false;
	return ret;
}

static int serve(struct server *s)
{
	for (;;) {
		double t = now();
		struct pollfd p = { s->sock, POLLIN, 0 };
		struct timespec ts;
		int ret;

		if (s->busy && t >= s->cur_end) {
			ret = finish(s);
			if (ret)
				return ret;
		}
		/*
		 * The drive's own clock: a command queued while the last one
		 * ran starts when that one ended, however late this loop got
		 * round to it (a stream must not miss a revolution for it).
		 */
		if (!s->busy && s->queued)
			start(s, fmax(s->disk.free_at, s->queue[0].arrived));
		if (!s->busy && s->disconnect)
			return 0;
		if (s->busy) {
			/* It may have ended already: it started on the drive's clock. */
			double wait = fmax(s->cur_end - t, 0);

			ts.tv_sec = (time_t)wait;
			ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
		}
		/* A full queue, or a client gone: only the drive's clock moves. */
		ret = ppoll(&p, s->queued == QUEUE_MAX || s->disconnect ? 0 : 1,
			    s->busy ? &ts : NULL, NULL);
		if (ret < 0 && errno != EINTR)
			return -errno;
		while (ret > 0 && s->queued < QUEUE_MAX && !s->disconnect && readable(s->sock)) {
			int err = receive(s);

			if (err == -EPIPE)
				s->disconnect = true;
			else if (err)
				return err;
		}
	}
}

static int listen_on(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 1)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void print_totals(const struct server *s, const char *image)
{
	const struct totals *t = &s->totals;

	fprintf(stderr,
		"hdd-disk: %s: reads=%" PRIu64 " read_mib=%.1f writes=%" PRIu64
		" write_mib=%.1f flushes=%" PRIu64 " cached_mib=%.1f seeks=%" PRIu64
		" seek_s=%.2f rotation_s=%.2f transfer_s=%.2f busy_s=%.2f\n",
		image, t->reads, (double)t->read_bytes / (1 << 20), t->writes,
		(double)t->write_bytes / (1 << 20), t->flushes, (double)t->cached_bytes / (1 << 20),
		t->seeks, t->seek, t->rotation, t->transfer, t->busy);
}

static void usage(FILE *f)
{
	fputs("usage: hdd-disk [--mib-s N] [--rpm N] [--seek-ms N] [--settle-ms N] [--cache-mib N]\n"
	      "                [--max-wait-ms N] [--iface-mib-s N] [--slow N] [--log FILE]\n"
	      "                SOCKET IMAGE\n"
	      "Serves IMAGE over NBD on the unix socket SOCKET at the pace of a disk that seeks.\n"
	      "Defaults: a 7200 rpm disk: 150 MiB/s, 8.5 ms average seek, 1 ms to the next\n"
	      "track, 2 MiB read-ahead cache, 100 ms before the oldest request goes first,\n"
	      "550 MiB/s interface; --slow 1 (times as given).\n",
	      f);
}

static bool parse_number(const char *arg, double min, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= min) || !isfinite(v))
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mib-s", required_argument, NULL, 'b' },
		{ "rpm", required_argument, NULL, 'r' },
		{ "seek-ms", required_argument, NULL, 's' },
		{ "settle-ms", required_argument, NULL, 't' },
		{ "cache-mib", required_argument, NULL, 'c' },
		{ "max-wait-ms", required_argument, NULL, 'w' },
		{ "iface-mib-s", required_argument, NULL, 'i' },
		{ "slow", required_argument, NULL, 'x' },
		{ "log", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct params p = { 150, 7200, 8.5, 1, 2, 100, 1, 550 };
	static struct server s;
	const char *log_path = NULL;
	struct stat st;
	int opt, listener, ret;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		double *field = opt == 'b' ? &p.mib_s : opt == 'r' ? &p.rpm : opt == 's' ? &p.seek_ms :
				opt == 't' ? &p.settle_ms : opt == 'c' ? &p.cache_mib :
				opt == 'w' ? &p.max_wait_ms : opt == 'i' ? &p.iface_mib_s :
				opt == 'x' ? &p.slow : NULL;

		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'l') {
			log_path = optarg;
			continue;
		}
		if (!field || !parse_number(optarg, opt == 'c' ? 0 : 1e-3, field)) {
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2 || p.settle_ms > p.seek_ms) {
		usage(stderr);
		return 2;
	}
	/* A reply to a client that has gone is an error to return, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	s.image = open(argv[optind + 1], O_RDWR | O_CLOEXEC);
	if (s.image < 0 || fstat(s.image, &st)) {
		fprintf(stderr, "hdd-disk: %s: %s\n", argv[optind + 1], strerror(errno));
		return 1;
	}
	s.size = (uint64_t)st.st_size;
	s.buf = malloc(MAX_REQUEST);
	if (log_path) {
		s.log = fopen(log_path, "w");
		if (!s.log) {
			fprintf(stderr, "hdd-disk: %s: %s\n", log_path, strerror(errno));
			return 1;
		}
		/* Whole lines, so a log read while the disk runs ends in one. */
		setvbuf(s.log, NULL, _IOLBF, 0);
	}
	listener = listen_on(argv[optind]);
	if (listener < 0 || !s.buf) {
		fprintf(stderr, "hdd-disk: %s: %s\n", argv[optind],
			strerror(listener < 0 ? -listener : ENOMEM));
		return 1;
	}
	s.sock = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	close(listener);
	unlink(argv[optind]);
	if (s.sock < 0) {
		fprintf(stderr, "hdd-disk: accept: %s\n", strerror(errno));
		return 1;
	}
	ret = negotiate(s.sock, s.size);
	if (ret > 0) {
		disk_init(&s.disk, &p, s.size, now());
		ret = serve(&s);
	}
	print_totals(&s, argv[optind + 1]);
	if (s.log)
		fclose(s.log);
	if (ret < 0) {
		fprintf(stderr, "hdd-disk: %s: %s\n", argv[optind], strerror(-ret));
		return 1;
	}
	return 0;
}
