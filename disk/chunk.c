/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The chunk map: chunk items in, logical -> physical per profile out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "disk/chunk.h"
#include "disk/volumes.h"

static int raid56_parity(uint64_t type)
{
	if (type & BTRFS_BLOCK_GROUP_RAID5)
		return 1;
	if (type & BTRFS_BLOCK_GROUP_RAID6)
		return 2;
	return 0;
}

int bx_check_chunk_item(const struct btrfs_chunk *chunk, size_t size, uint32_t sectorsize)
{
	struct bx_raid_attr raid;
	uint64_t type, length, stripe_len;
	int num_stripes, sub_stripes;

	if (size < sizeof(*chunk))
		return bx_error(-EUCLEAN, "chunk item too small (%zu bytes)", size);
	num_stripes = le16toh(chunk->num_stripes);
	sub_stripes = le16toh(chunk->sub_stripes);
	type = le64toh(chunk->type);
	length = le64toh(chunk->length);
	stripe_len = le64toh(chunk->stripe_len);
	if (num_stripes < 1 || num_stripes > BX_MAX_STRIPES)
		return bx_error(-EUCLEAN, "chunk has %d stripes", num_stripes);
	if (size < btrfs_chunk_item_size(num_stripes))
		return bx_error(-EUCLEAN, "chunk item of %zu bytes cannot hold %d stripes",
				size, num_stripes);
	if (!length || (sectorsize && length % sectorsize))
		return bx_error(-EUCLEAN, "chunk length %llu is not a multiple of the sector size",
				(unsigned long long)length);
	if (stripe_len != BTRFS_STRIPE_LEN)
		return bx_error(-EUCLEAN, "chunk stripe length %llu is not 64KiB",
				(unsigned long long)stripe_len);
	if (type & ~(BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return bx_error(-EUCLEAN, "chunk type 0x%llx has unknown bits",
				(unsigned long long)type);
	if (!(type & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return bx_error(-EUCLEAN, "chunk type 0x%llx has no data/metadata/system bit",
				(unsigned long long)type);
	if (bx_raid_attr(type, &raid))
		return bx_error(-EUCLEAN, "chunk type 0x%llx has several profile bits",
				(unsigned long long)type);
	if (num_stripes < raid.devs_min * raid.dev_stripes)
		return bx_error(-EUCLEAN, "%s chunk with %d stripes", raid.name, num_stripes);
	if ((type & BTRFS_BLOCK_GROUP_RAID10) && (sub_stripes != 2 || num_stripes % 2))
		return bx_error(-EUCLEAN, "raid10 chunk with %d stripes and %d sub stripes",
				num_stripes, sub_stripes);
	if ((type & BTRFS_BLOCK_GROUP_DUP) && num_stripes != 2)
		return bx_error(-EUCLEAN, "dup chunk with %d stripes", num_stripes);
	if (!(type & BTRFS_BLOCK_GROUP_PROFILE_MASK) && num_stripes != 1)
		return bx_error(-EUCLEAN, "single chunk with %d stripes", num_stripes);
	if ((type & (BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID1C3 |
		     BTRFS_BLOCK_GROUP_RAID1C4)) && num_stripes != raid.ncopies)
		return bx_error(-EUCLEAN, "%s chunk with %d stripes", raid.name, num_stripes);
	return 0;
}

static size_t chunk_search(const struct bx_chunk_map *map, uint64_t logical)
{
	size_t lo = 0, hi = map->nr;

	/* First chunk whose start is above @logical. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->chunks[mid]->logical <= logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct bx_chunk *bx_chunk_lookup(const struct bx_fs *fs, uint64_t logical)
{
	size_t i = chunk_search(&fs->chunks, logical);
	const struct bx_chunk *chunk;

	if (i == 0)
		return NULL;
	chunk = fs->chunks.chunks[i - 1];
	if (logical - chunk->logical >= chunk->length)
		return NULL;
	return chunk;
}

static int chunk_overlaps(const struct bx_chunk_map *map, size_t pos, const struct bx_chunk *new)
{
	if (pos > 0) {
		const struct bx_chunk *prev = map->chunks[pos - 1];

		if (prev->logical + prev->length > new->logical)
			return 1;
	}
	if (pos < map->nr && new->logical + new->length > map->chunks[pos]->logical)
		return 1;
	return 0;
}

int bx_chunk_map_insert(struct bx_fs *fs, uint64_t logical, const struct btrfs_chunk *item)
{
	struct bx_chunk_map *map = &fs->chunks;
	int num_stripes = le16toh(item->num_stripes);
	const struct bx_chunk *existing = bx_chunk_lookup(fs, logical);
	struct bx_chunk *chunk;
	size_t pos;

	/* The system chunks appear in the superblock and again in the chunk tree. */
	if (existing && existing->logical == logical &&
	    existing->length == le64toh(item->length))
		return 0;
	if (fs->sectorsize && logical % fs->sectorsize)
		return bx_error(-EUCLEAN, "chunk at logical %llu is not sector aligned",
				(unsigned long long)logical);
	/* A range past 2^64 would wrap and defeat the overlap check below. */
	if (le64toh(item->length) > UINT64_MAX - logical)
		return bx_error(-EUCLEAN, "chunk at logical %llu with length %llu wraps around",
				(unsigned long long)logical,
				(unsigned long long)le64toh(item->length));
	chunk = calloc(1, sizeof(*chunk) + num_stripes * sizeof(chunk->stripes[0]));
	if (!chunk)
		return bx_error(-ENOMEM, "out of memory");
	chunk->logical = logical;
	chunk->length = le64toh(item->length);
	chunk->type = le64toh(item->type);
	chunk->stripe_len = le64toh(item->stripe_len);
	chunk->num_stripes = num_stripes;
	chunk->sub_stripes = le16toh(item->sub_stripes);
	for (int i = 0; i < num_stripes; i++) {
		chunk->stripes[i].devid = le64toh(item->stripe[i].devid);
		chunk->stripes[i].physical = le64toh(item->stripe[i].offset);
		chunk->stripes[i].dev = bx_fs_device(fs, chunk->stripes[i].devid);
	}
	pos = chunk_search(map, logical);
	if (chunk_overlaps(map, pos, chunk)) {
		free(chunk);
		return bx_error(-EUCLEAN, "chunk at logical %llu overlaps another chunk",
				(unsigned long long)logical);
	}
	if (map->nr == map->alloc) {
		size_t alloc = map->alloc ? map->alloc * 2 : 64;
		struct bx_chunk **chunks = realloc(map->chunks, alloc * sizeof(*chunks));

		if (!chunks) {
			free(chunk);
			return bx_error(-ENOMEM, "out of memory");
		}
		map->chunks = chunks;
		map->alloc = alloc;
	}
	memmove(map->chunks + pos + 1, map->chunks + pos, (map->nr - pos) * sizeof(chunk));
	map->chunks[pos] = chunk;
	map->nr++;
	return 0;
}

int bx_num_copies(const struct bx_fs *fs, uint64_t logical)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);

	if (!chunk)
		return 0;
	if (raid56_parity(chunk->type))
		return 1 + raid56_parity(chunk->type);
	return bx_profile_ncopies(chunk->type);
}

static void set_loc(struct bx_stripe_loc *loc, const struct bx_chunk *chunk, int index,
		    uint64_t offset_on_dev)
{
	loc->dev = chunk->stripes[index].dev;
	loc->devid = chunk->stripes[index].devid;
	loc->physical = chunk->stripes[index].physical + offset_on_dev;
}

/* RAID0 and RAID10: stripes rotate over the device groups every 64 KiB. */
static void map_striped(const struct bx_chunk *chunk, uint64_t offset, int mirror,
			uint64_t *len, struct bx_stripe_loc *loc)
{
	int sub = (chunk->type & BTRFS_BLOCK_GROUP_RAID10) ? chunk->sub_stripes : 1;
	uint64_t groups = (uint64_t)chunk->num_stripes / sub;
	uint64_t stripe_nr = offset / chunk->stripe_len;
	uint64_t in_stripe = offset % chunk->stripe_len;
	int index = (int)(stripe_nr % groups) * sub + (mirror - 1);

	set_loc(loc, chunk, index, (stripe_nr / groups) * chunk->stripe_len + in_stripe);
	if (*len > chunk->stripe_len - in_stripe)
		*len = chunk->stripe_len - in_stripe;
}

int bx_map_full_stripe(const struct bx_fs *fs, uint64_t logical, struct bx_full_stripe *fs_out)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);
	uint64_t offset, row, row_len;
	int nr_parity;

	if (!chunk)
		return bx_error(-ENOENT, "no chunk maps logical %llu", (unsigned long long)logical);
	nr_parity = raid56_parity(chunk->type);
	if (!nr_parity)
		return bx_error(-EINVAL, "logical %llu is not in a raid5/6 chunk",
				(unsigned long long)logical);
	fs_out->nr_parity = nr_parity;
	fs_out->nr_data = chunk->num_stripes - nr_parity;
	fs_out->stripe_len = chunk->stripe_len;
	row_len = chunk->stripe_len * fs_out->nr_data;
	offset = logical - chunk->logical;
	row = offset / row_len;
	fs_out->logical_start = chunk->logical + row * row_len;
	/* Parity rotates: row r puts logical stripe i on device (r + i) % n. */
	for (int i = 0; i < chunk->num_stripes; i++)
		set_loc(&fs_out->stripes[i], chunk, (int)((row + i) % chunk->num_stripes),
			row * chunk->stripe_len);
	return 0;
}

int bx_map_logical(const struct bx_fs *fs, uint64_t logical, uint64_t *len, int mirror,
		   struct bx_stripe_loc *loc)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);
	uint64_t offset, left;

	if (!chunk)
		return bx_error(-ENOENT, "no chunk maps logical %llu", (unsigned long long)logical);
	offset = logical - chunk->logical;
	left = chunk->length - offset;
	if (*len > left)
		*len = left;
	if (mirror < 1 || mirror > bx_num_copies(fs, logical))
		return bx_error(-EINVAL, "logical %llu has no mirror %d",
				(unsigned long long)logical, mirror);
	if (chunk->type & (BTRFS_BLOCK_GROUP_RAID0 | BTRFS_BLOCK_GROUP_RAID10)) {
		map_striped(chunk, offset, mirror, len, loc);
	} else if (raid56_parity(chunk->type)) {
		struct bx_full_stripe fstripe;
		uint64_t in_row, in_stripe;
		int data_index;

		if (mirror != 1)
			return bx_error(-EINVAL, "raid5/6 mirror %d of logical %llu is a rebuild",
					mirror, (unsigned long long)logical);
		bx_map_full_stripe(fs, logical, &fstripe);
		in_row = logical - fstripe.logical_start;
		data_index = (int)(in_row / chunk->stripe_len);
		in_stripe = in_row % chunk->stripe_len;
		*loc = fstripe.stripes[data_index];
		loc->physical += in_stripe;
		if (*len > chunk->stripe_len - in_stripe)
			*len = chunk->stripe_len - in_stripe;
	} else {
		/* single, dup, raid1*: each stripe is a whole copy. */
		set_loc(loc, chunk, mirror - 1, offset);
	}
	return 0;
}

int bx_parse_sys_chunk_array(const struct btrfs_super_block *sb,
			     int (*fn)(void *arg, const struct btrfs_key *key,
				       const struct btrfs_chunk *chunk, size_t size),
			     void *arg)
{
	uint32_t array_size = le32toh(sb->sys_chunk_array_size);
	const uint8_t *p = sb->sys_chunk_array;
	uint32_t pos = 0;

	if (array_size > BTRFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return bx_error(-EUCLEAN, "system chunk array size %u exceeds %d", array_size,
				BTRFS_SYSTEM_CHUNK_ARRAY_SIZE);
	while (pos < array_size) {
		const struct btrfs_chunk *chunk;
		struct btrfs_key key;
		size_t chunk_size;
		int ret;

		if (array_size - pos < sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk))
			return bx_error(-EUCLEAN, "system chunk array truncated at byte %u", pos);
		btrfs_disk_key_to_cpu(&key, (const struct btrfs_disk_key *)(p + pos));
		if (key.type != BTRFS_CHUNK_ITEM_KEY)
			return bx_error(-EUCLEAN, "system chunk array holds key type %u at byte %u",
					key.type, pos);
		pos += sizeof(struct btrfs_disk_key);
		chunk = (const struct btrfs_chunk *)(p + pos);
		chunk_size = btrfs_chunk_item_size(le16toh(chunk->num_stripes));
		if (!le16toh(chunk->num_stripes))
			return bx_error(-EUCLEAN, "system chunk at logical %llu has no stripes",
					(unsigned long long)key.offset);
		if (chunk_size > array_size - pos)
			return bx_error(-EUCLEAN, "system chunk at byte %u overruns the array", pos);
		ret = fn(arg, &key, chunk, chunk_size);
		if (ret)
			return ret;
		pos += (uint32_t)chunk_size;
	}
	return 0;
}
