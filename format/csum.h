/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Checksums of tree blocks, superblocks and data sectors. */
#ifndef BTRFSX_CSUM_H
#define BTRFSX_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* Returns the digest size in bytes for a csum_type, or 0 if unknown. */
size_t btrfsx_csum_size(unsigned int csum_type);

/* Returns the algorithm's name ("crc32c", "xxhash64", ...) or NULL if unknown. */
const char *btrfsx_csum_name(unsigned int csum_type);

/*
 * Computes the checksum of @data into @out (32 bytes, zero padded past the
 * digest size, which is how btrfs stores it). Returns 0 or -EINVAL for an
 * unknown type, -ENOMEM if the hash library fails.
 */
int btrfsx_csum(unsigned int csum_type, const void *data, size_t len, uint8_t out[32]);

#endif
