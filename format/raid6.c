/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* RAID6 Q coefficients (see raid6.h). */
#include "format/raid6.h"

uint8_t bx_raid6_coef(int index)
{
	uint8_t v = 1;

	while (index-- > 0)
		v = bx_raid6_times2(v);
	return v;
}
