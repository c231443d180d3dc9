/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Growing arrays: the one doubling realloc the layers share. */
#ifndef BTRFSX_ARRAY_H
#define BTRFSX_ARRAY_H

#include <stddef.h>

/*
 * Makes *@array (of *@cap elements of @size bytes) hold at least @want,
 * doubling from 16; 0 or -ENOMEM with the message. The contents stay.
 */
int bx_array_grow(void **array, size_t *cap, size_t want, size_t size);

#endif
