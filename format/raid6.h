/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RAID6's Q parity: Q = sum of g^i * D_i in GF(2^8) with the generator 2 and
 * the polynomial 0x11d (Linux's RAID6). Multiplication and inverses come from
 * ISA-L (gf_mul, gf_inv); these are the coefficients of the format.
 */
#ifndef BTRFSX_RAID6_H
#define BTRFSX_RAID6_H

#include <stdint.h>

/* The Q coefficient of data stripe @index: 2^@index in GF(2^8). */
uint8_t bx_raid6_coef(int index);

/* @x * 2 in GF(2^8): one step of Horner's rule for Q. */
static inline uint8_t bx_raid6_times2(uint8_t x)
{
	return (uint8_t)((x << 1) ^ ((x & 0x80) ? 0x1d : 0));
}

#endif
