/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The progress and the end-of-input stop of the chunk-moving commands (move-progress.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "cmds/misplaced.h"
#include "cmds/move-progress.h"
#include "common/error.h"
#include "common/units.h"

/*
 * With --format json each report is a line of its own on stderr,
 * {"progress": {...}} with the engine's figures as they are, so nothing is
 * parsed out of the text line.
 */
static void progress_json(const struct bx_relocate_progress *p)
{
	fprintf(stderr, "{\"progress\": {\"chunks_done\": %llu, \"chunks_total\": %llu, "
		"\"bytes_done\": %llu, \"bytes_total\": %llu, \"elapsed\": %.3f, "
		"\"kernel_seconds\": %.3f, \"current\": %llu, \"current_used\": %llu, "
		"\"pausing\": %s}}\n",
		(unsigned long long)p->chunks_done, (unsigned long long)p->chunks_total,
		(unsigned long long)p->bytes_done, (unsigned long long)p->bytes_total, p->elapsed,
		p->kernel_seconds, (unsigned long long)p->current,
		(unsigned long long)p->current_used, p->pausing ? "true" : "false");
	fflush(stderr);
}

int bx_move_progress_show(void *arg, const struct bx_relocate_progress *p)
{
	struct bx_move_progress *ps = arg;
	char done[32], total[32], rate_text[32], eta_text[32], current[96] = "", line[256];
	double rate = p->elapsed > 0 ? (double)p->bytes_done / p->elapsed : 0;
	double pct = p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 100;
	int len;

	if (!ps->show)
		return 0;
	if (ps->json) {
		progress_json(p);
		return 0;
	}
	bx_pretty_size(p->bytes_done, 0, done, sizeof(done));
	bx_pretty_size(p->bytes_total, 0, total, sizeof(total));
	bx_pretty_size((uint64_t)rate, 0, rate_text, sizeof(rate_text));
	if (rate > 0 && p->bytes_total > p->bytes_done)
		misplaced_duration_text((double)(p->bytes_total - p->bytes_done) / rate, eta_text,
					sizeof(eta_text));
	else
		snprintf(eta_text, sizeof(eta_text), "-");
	if (p->current) {
		char used[32];

		bx_pretty_size(p->current_used, 0, used, sizeof(used));
		snprintf(current, sizeof(current), ", moving chunk %llu (%s)",
			 (unsigned long long)p->current, used);
	} else if (p->pausing) {
		snprintf(current, sizeof(current), ", pausing");
	}
	len = snprintf(line, sizeof(line), "moved %llu/%llu chunks, %s/%s (%.1f%%), %s/s, ETA %s%s",
		       (unsigned long long)p->chunks_done, (unsigned long long)p->chunks_total,
		       done, total, pct > 100 ? 100.0 : pct, rate_text, eta_text, current);
	fprintf(stderr, "\r%s%*s", line, ps->line_len > (size_t)len ? (int)(ps->line_len - len) : 0,
		"");
	fflush(stderr);
	ps->line_len = (size_t)len;
	return 0;
}

void bx_move_progress_end(struct bx_move_progress *ps)
{
	if (ps->show && !ps->json && ps->line_len)
		fprintf(stderr, "\r%*s\r", (int)ps->line_len, "");
}

/*
 * A program that runs a long command and cannot send it a signal
 * (Cockpit's spawn closes the channel, and with it the output it wanted to
 * read) closes our standard input instead. Whatever it sends before is
 * read and dropped.
 */
static void *stop_at_eof(void *arg)
{
	volatile int *stop = arg;
	char buf[256];

	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	if (*stop < 2)
		(*stop)++;
	return NULL;
}

int bx_stop_at_eof(volatile int *stop)
{
	pthread_t watcher;

	if (pthread_create(&watcher, NULL, stop_at_eof, (void *)stop))
		return bx_error(-EAGAIN, "--cancel-on-eof: no thread to watch standard input");
	pthread_detach(watcher);
	return 0;
}
