/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Known answers for every checksum type btrfs uses. */
#include <pthread.h>
#include <string.h>

#include "format/csum.h"
#include "format/ctree.h"
#include "tests/unit/unit.h"

static int digest_is(unsigned int type, const char *input, const char *hex)
{
	uint8_t out[32];
	char got[65] = "";
	size_t size = btrfsx_csum_size(type);

	if (btrfsx_csum(type, input, strlen(input), out))
		return 0;
	for (size_t i = 0; i < size; i++)
		sprintf(got + 2 * i, "%02x", out[i]);
	if (strcmp(got, hex))
		fprintf(stderr, "type %u: got %s expected %s\n", type, got, hex);
	return !strcmp(got, hex);
}

#define SHA256_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define BLAKE2_ABC "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"

/* The scrub hashes on several threads; sha256 keeps a digest context per thread. */
static void *hash_repeatedly(void *arg)
{
	int *ok = arg;

	for (int i = 0; i < 200; i++)
		*ok &= digest_is(BTRFS_CSUM_TYPE_SHA256, "abc", SHA256_ABC) &&
		       digest_is(BTRFS_CSUM_TYPE_BLAKE2, "abc", BLAKE2_ABC);
	return NULL;
}

static int threads_agree(void)
{
	pthread_t tid[4];
	int ok[4] = { 1, 1, 1, 1 }, all = 1;

	for (int i = 0; i < 4; i++)
		if (pthread_create(&tid[i], NULL, hash_repeatedly, &ok[i]))
			return 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		all &= ok[i];
	}
	return all;
}

int main(void)
{
	uint8_t out[32];

	/* CRC32C("123456789") = 0xe3069283, stored little-endian. */
	CHECK(digest_is(BTRFS_CSUM_TYPE_CRC32, "123456789", "839206e3"));
	/* XXH64("", seed 0) = 0xef46db3751d8e999, stored little-endian. */
	CHECK(digest_is(BTRFS_CSUM_TYPE_XXHASH, "", "99e9d85137db46ef"));
	CHECK(digest_is(BTRFS_CSUM_TYPE_SHA256, "abc", SHA256_ABC));
	CHECK(digest_is(BTRFS_CSUM_TYPE_BLAKE2, "abc", BLAKE2_ABC));
	/* Again: the second call reuses the thread's context. */
	CHECK(digest_is(BTRFS_CSUM_TYPE_SHA256, "abc", SHA256_ABC));
	CHECK(threads_agree());
	CHECK_EQ_U64(btrfsx_csum_size(BTRFS_CSUM_TYPE_CRC32), 4);
	CHECK_EQ_U64(btrfsx_csum_size(BTRFS_CSUM_TYPE_XXHASH), 8);
	CHECK_EQ_U64(btrfsx_csum_size(7), 0);
	CHECK(btrfsx_csum(7, "x", 1, out) < 0);
	CHECK(!strcmp(btrfsx_csum_name(BTRFS_CSUM_TYPE_BLAKE2), "blake2b"));
	return unit_summary();
}
