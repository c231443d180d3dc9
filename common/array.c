/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "common/array.h"
#include "common/error.h"

int bx_array_grow(void **array, size_t *cap, size_t want, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *grown;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	grown = realloc(*array, n * size);
	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	*array = grown;
	*cap = n;
	return 0;
}
