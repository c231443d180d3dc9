/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the C helpers of the tests and benchmarks that give a filesystem a
 * past share (tests/vm/guest-age.c, bench/maintain-load.c): a seeded random
 * sequence, a directory's files in name order, and one tree search through
 * the kernel (BTRFS_IOC_TREE_SEARCH_V2) of a mounted filesystem.
 */
#ifndef BTRFSX_TESTS_HELPER_COMMON_H
#define BTRFSX_TESTS_HELPER_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static uint64_t rng_state;

/* splitmix64: small, and the same sequence on every libc. */
static inline uint64_t next_random(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The sequence of @what (a step's name) under @seed. */
static inline void seed_with(const char *what, uint64_t seed)
{
	rng_state = seed * 0x2545f4914f6cdd1dULL;
	for (const char *c = what; *c; c++)
		rng_state = rng_state * 131 + (unsigned char)*c;
}

/* One tree search of the keys from @min to @max of @tree into @args; its item count or -errno. */
static inline int search(int fd, struct btrfs_ioctl_search_args_v2 *args, size_t size,
			 uint64_t tree, const struct btrfs_disk_key *min,
			 const struct btrfs_disk_key *max)
{
	struct btrfs_ioctl_search_key *sk = &args->key;

	memset(args, 0, sizeof(*args));
	sk->tree_id = tree;
	sk->min_objectid = min->objectid;
	sk->min_type = min->type;
	sk->min_offset = min->offset;
	sk->max_objectid = max->objectid;
	sk->max_type = max->type;
	sk->max_offset = max->offset;
	sk->max_transid = UINT64_MAX;
	sk->nr_items = UINT32_MAX;
	args->buf_size = size - sizeof(*args);
	return ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2, args) ? -errno : (int)sk->nr_items;
}

struct names {
	char **v;
	size_t nr;
};

static inline int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of @dir (their paths), in name order; 0 or an errno. */
static inline int list_files(const char *dir, struct names *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;

	out->v = NULL;
	out->nr = 0;
	if (!d)
		return errno;
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (out->nr == cap) {
			char **grown;

			cap = cap ? 2 * cap : 256;
			grown = realloc(out->v, cap * sizeof(*grown));
			if (!grown) {
				closedir(d);
				return ENOMEM;
			}
			out->v = grown;
		}
		out->v[out->nr] = strdup(path);
		if (!out->v[out->nr]) {
			closedir(d);
			return ENOMEM;
		}
		out->nr++;
	}
	closedir(d);
	qsort(out->v, out->nr, sizeof(*out->v), name_cmp);
	return 0;
}

static inline void free_names(struct names *n)
{
	for (size_t i = 0; i < n->nr; i++)
		free(n->v[i]);
	free(n->v);
}

#endif
