/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The scrub's hashing queue (scrub/scrub-hash.c): which read the hashing
 * threads take next. Slices come from the oldest read of the device with
 * the most still to read, a read leaves the queue with its last slice, and
 * the queue stays a valid list (new reads go to its end) after reads leave
 * from its middle and its end.
 */
#include "scrub/scrub-internal.h"
#include "tests/unit/unit.h"

static void job_of(struct scrub_hash_job *job, struct scrub_hash_client *client,
		   uint32_t nr_sectors)
{
	*job = (struct scrub_hash_job){ .client = client, .nr_sectors = nr_sectors };
}

/* Claims the next slice and checks which job and sectors it is. */
static void expect(struct scrub_hash_queue *q, uint32_t slice, const struct scrub_hash_job *job,
		   uint32_t from, uint32_t to)
{
	uint32_t f = 0, t = 0;

	CHECK(scrub_hash_queue_claim(q, slice, &f, &t) == job);
	CHECK_EQ_U64(f, from);
	CHECK_EQ_U64(t, to);
}

int main(void)
{
	struct scrub_hash_client small = { .left = 100 }, big = { .left = 300 }, mid = { .left = 200 };
	struct scrub_hash_job s1, b1, m1, b2, s2;
	struct scrub_hash_queue q = { 0 };
	uint32_t f, t;

	CHECK(scrub_hash_queue_claim(&q, 8, &f, &t) == NULL);

	/* Queued in this order; the big device's reads come first, oldest first. */
	job_of(&s1, &small, 8);
	job_of(&b1, &big, 20);
	job_of(&m1, &mid, 8);
	job_of(&b2, &big, 8);
	scrub_hash_queue_add(&q, &s1);
	scrub_hash_queue_add(&q, &b1);
	scrub_hash_queue_add(&q, &m1);
	scrub_hash_queue_add(&q, &b2);
	expect(&q, 8, &b1, 0, 8);
	expect(&q, 8, &b1, 8, 16);
	expect(&q, 8, &b1, 16, 20);
	expect(&q, 8, &b2, 0, 8);

	/* The big device has read on: the middle one is now the most behind. */
	big.left = 50;
	job_of(&s2, &small, 4);
	scrub_hash_queue_add(&q, &s2);
	expect(&q, 8, &m1, 0, 8);
	/* Equal: the older read first. */
	expect(&q, 3, &s1, 0, 3);
	expect(&q, 3, &s1, 3, 6);
	expect(&q, 3, &s1, 6, 8);
	/* The last job left was the tail: adding after it starts a valid list. */
	CHECK(q.head == &s2 && q.tail == &s2);
	expect(&q, 8, &s2, 0, 4);
	CHECK(q.head == NULL && q.tail == NULL);
	scrub_hash_queue_add(&q, &b2);
	CHECK(q.head == &b2 && q.tail == &b2);
	/* A slice of 0 sectors (a huge sector size) still moves on. */
	expect(&q, 0, &b2, 0, 1);
	return unit_summary();
}
