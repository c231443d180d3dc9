#include "config.h"

#include <errno.h>
#include <string.h>
#include <isa-l.h>
#include <xxhash.h>
#include <openssl/evp.h>
#ifdef HAVE_LIBSODIUM
#include <sodium.h>
#else
#include <blake2.h>
#endif

#include "kernel-shared/csum.h"
#include "kernel-shared/ctree.h"

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

static int csum_sha256(const void *data, size_t len, uint8_t *out)
{
	unsigned int outlen = 32;

	return EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL) == 1 ? 0 : -ENOMEM;
}

static int csum_blake2b(const void *data, size_t len, uint8_t *out)
{
#ifdef HAVE_LIBSODIUM
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
