/* Known answers for every checksum type btrfs uses. */
#include <string.h>

#include "kernel-shared/csum.h"
#include "kernel-shared/ctree.h"
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

int main(void)
{
	uint8_t out[32];

	/* CRC32C("123456789") = 0xe3069283, stored little-endian. */
	CHECK(digest_is(BTRFS_CSUM_TYPE_CRC32, "123456789", "839206e3"));
	/* XXH64("", seed 0) = 0xef46db3751d8e999, stored little-endian. */
	CHECK(digest_is(BTRFS_CSUM_TYPE_XXHASH, "", "99e9d85137db46ef"));
	CHECK(digest_is(BTRFS_CSUM_TYPE_SHA256, "abc",
			"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	CHECK(digest_is(BTRFS_CSUM_TYPE_BLAKE2, "abc",
			"bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"));
	CHECK_EQ_U64(btrfsx_csum_size(BTRFS_CSUM_TYPE_CRC32), 4);
	CHECK_EQ_U64(btrfsx_csum_size(BTRFS_CSUM_TYPE_XXHASH), 8);
	CHECK_EQ_U64(btrfsx_csum_size(7), 0);
	CHECK(btrfsx_csum(7, "x", 1, out) < 0);
	CHECK(!strcmp(btrfsx_csum_name(BTRFS_CSUM_TYPE_BLAKE2), "blake2b"));
	return unit_summary();
}
