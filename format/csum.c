/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <isa-l.h>
#include <xxhash.h>
#include <openssl/evp.h>
#ifdef HAVE_LIBSODIUM
#include <sodium.h>
#else
#include <blake2.h>
#endif

#include "format/csum.h"
#include "format/ctree.h"

static const struct {
	const char *name;
	size_t size;
} csum_algos[] = {
	[BTRFS_CSUM_TYPE_CRC32] = { "crc32c", 4 },
	[BTRFS_CSUM_TYPE_XXHASH] = { "xxhash64", 8 },
	[BTRFS_CSUM_TYPE_SHA256] = { "sha256", 32 },
	[BTRFS_CSUM_TYPE_BLAKE2] = { "blake2b", 32 },
};

size_t btrfsx_csum_size(unsigned int csum_type)
{
	if (csum_type >= sizeof(csum_algos) / sizeof(csum_algos[0]))
		return 0;
	return csum_algos[csum_type].size;
}

const char *btrfsx_csum_name(unsigned int csum_type)
{
	if (csum_type >= sizeof(csum_algos) / sizeof(csum_algos[0]))
		return NULL;
	return csum_algos[csum_type].name;
}

static void csum_crc32c(const void *data, size_t len, uint8_t *out)
{
	/* btrfs stores the inverted Castagnoli CRC seeded with ~0. */
	uint32_t crc = ~crc32_iscsi((unsigned char *)data, (int)len, ~0U);
	uint32_t le = htole32(crc);

	memcpy(out, &le, sizeof(le));
}

static void csum_xxhash(const void *data, size_t len, uint8_t *out)
{
	uint64_t le = htole64(XXH64(data, len, 0));

	memcpy(out, &le, sizeof(le));
}

/*
 * The hash libraries' fastest paths take setting up once: OpenSSL 3 looks
 * the digest up by name in its provider on every EVP_Digest call with the
 * legacy EVP_sha256() (a third of the time of hashing 4 KiB with the SHA
 * extensions), and libsodium runs its portable blake2b until sodium_init()
 * has picked the AVX2/SSE4.1 code for this CPU (twice as fast). Each thread
 * keeps a digest context of its own.
 */
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;
static pthread_key_t sha256_ctx_key;
static EVP_MD *sha256_md;

static void free_sha256_ctx(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void hash_setup(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
	/* Without a key of our own, no context per thread: EVP_Digest each time. */
	if (sha256_md && pthread_key_create(&sha256_ctx_key, free_sha256_ctx)) {
		EVP_MD_free(sha256_md);
		sha256_md = NULL;
	}
#ifdef HAVE_LIBSODIUM
	/* Fails only without a random source, which blake2b does not use. */
	if (sodium_init() < 0)
		return;
#endif
}

static EVP_MD_CTX *thread_sha256_ctx(void)
{
	EVP_MD_CTX *ctx;

	if (!sha256_md)
		return NULL;
	ctx = pthread_getspecific(sha256_ctx_key);
	if (ctx)
		return ctx;
	ctx = EVP_MD_CTX_new();
	if (ctx && pthread_setspecific(sha256_ctx_key, ctx)) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

static int csum_sha256(const void *data, size_t len, uint8_t *out)
{
	EVP_MD_CTX *ctx;
	unsigned int outlen = 32;

	pthread_once(&hash_once, hash_setup);
	ctx = thread_sha256_ctx();
	if (!ctx)
		return EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL) == 1 ? 0 : -ENOMEM;
	if (EVP_DigestInit_ex2(ctx, sha256_md, NULL) != 1 || EVP_DigestUpdate(ctx, data, len) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &outlen) != 1)
		return -ENOMEM;
	return 0;
}

static int csum_blake2b(const void *data, size_t len, uint8_t *out)
{
#ifdef HAVE_LIBSODIUM
	pthread_once(&hash_once, hash_setup);
	return crypto_generichash(out, 32, data, len, NULL, 0) == 0 ? 0 : -ENOMEM;
#else
	return blake2b(out, 32, data, len, NULL, 0) == 0 ? 0 : -ENOMEM;
#endif
}

int btrfsx_csum(unsigned int csum_type, const void *data, size_t len, uint8_t out[32])
{
	memset(out, 0, 32);
	switch (csum_type) {
	case BTRFS_CSUM_TYPE_CRC32:
		csum_crc32c(data, len, out);
		return 0;
	case BTRFS_CSUM_TYPE_XXHASH:
		csum_xxhash(data, len, out);
		return 0;
	case BTRFS_CSUM_TYPE_SHA256:
		return csum_sha256(data, len, out);
	case BTRFS_CSUM_TYPE_BLAKE2:
		return csum_blake2b(data, len, out);
	default:
		return -EINVAL;
	}
}
