/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A new filesystem: options and devices checked, the first chunks placed by
 * the allocator model, the trees laid out in memory, then written in the
 * crash-safe order described in mkfs.h. The tree contents are in
 * mkfs-items.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <blkid/blkid.h>
#include <isa-l.h>
#include <uuid/uuid.h>

#include "common/error.h"
#include "disk/device-claim.h"
#include "model/allocator.h"
#include "format/csum.h"
#include "format/hints.h"
#include "mkfs/mkfs-private.h"
#include "disk/write.h"

static const struct {
	const char *name;
	uint32_t bit;
	bool settable;          /* may be asked for or turned off with -O */
} feature_table[] = {
	{ "mixed-backref", BX_MKFS_F_MIXED_BACKREF, false },
	{ "extref", BX_MKFS_F_EXTREF, true },
	{ "skinny-metadata", BX_MKFS_F_SKINNY_METADATA, true },
	{ "no-holes", BX_MKFS_F_NO_HOLES, true },
	{ "free-space-tree", BX_MKFS_F_FREE_SPACE_TREE, true },
	{ "raid56", BX_MKFS_F_RAID56, true },
	{ "raid1c34", BX_MKFS_F_RAID1C34, true },
	{ "quota", BX_MKFS_F_QUOTA, true },
	{ "block-group-tree", BX_MKFS_F_BLOCK_GROUP_TREE, true },
	{ "squota", BX_MKFS_F_SQUOTA, true },
};

/* mkfs.btrfs's short names. */
static const struct {
	const char *alias, *name;
} feature_aliases[] = {
	{ "bgt", "block-group-tree" },
	{ "fst", "free-space-tree" },
};

/* Features of mkfs.btrfs that btrfsx mkfs does not make. */
static const char *const unsupported_features[] = {
	"mixed-bg", "zoned", "extent-tree-v2", "raid-stripe-tree", "metadata-uuid",
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *canonical_feature(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(feature_aliases); i++)
		if (!strcasecmp(name, feature_aliases[i].alias))
			return feature_aliases[i].name;
	return name;
}

int bx_mkfs_parse_features(const char *list, uint32_t *features, uint32_t *asked)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return bx_error(-ENOMEM, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		bool off = *tok == '^';
		const char *name = tok + off;
		size_t i;

		/* mkfs.btrfs spells some with underscores in places; take both. */
		for (char *p = (char *)name; *p; p++)
			if (*p == '_')
				*p = '-';
		name = canonical_feature(name);
		for (i = 0; i < ARRAY_SIZE(feature_table); i++)
			if (!strcasecmp(name, feature_table[i].name))
				break;
		if (i < ARRAY_SIZE(feature_table) && feature_table[i].settable) {
			if (off)
				*features &= ~feature_table[i].bit;
			else
				*features |= feature_table[i].bit;
			*asked |= feature_table[i].bit;
			continue;
		}
		if (i < ARRAY_SIZE(feature_table)) {
			ret = bx_error(-EINVAL, "feature '%s' is always on", name);
			break;
		}
		for (i = 0; i < ARRAY_SIZE(unsupported_features); i++)
			if (!strcasecmp(name, unsupported_features[i]))
				break;
		if (i < ARRAY_SIZE(unsupported_features))
			ret = bx_error(-EOPNOTSUPP, "feature '%s' is not supported by btrfsx mkfs; "
				       "use mkfs.btrfs for it", name);
		else
			ret = bx_error(-EINVAL, "unknown feature '%s' (extref, skinny-metadata, "
				       "no-holes, free-space-tree, block-group-tree, raid56, "
				       "raid1c34, quota, squota; ^name turns one off)", name);
	}
	free(copy);
	return ret;
}

int bx_mkfs_settle_features(uint32_t *features, uint32_t asked)
{
	const uint32_t needs = BX_MKFS_F_NO_HOLES | BX_MKFS_F_FREE_SPACE_TREE;

	if ((*features & BX_MKFS_F_SQUOTA) && (*features & BX_MKFS_F_QUOTA))
		*features &= ~BX_MKFS_F_QUOTA;
	if (!(*features & BX_MKFS_F_BLOCK_GROUP_TREE) || (*features & needs) == needs)
		return 0;
	if (asked & BX_MKFS_F_BLOCK_GROUP_TREE)
		return bx_error(-EINVAL, "block-group-tree needs no-holes and free-space-tree");
	*features &= ~BX_MKFS_F_BLOCK_GROUP_TREE;
	bx_warn("block-group-tree is off: it needs no-holes and free-space-tree");
	return 0;
}

void bx_mkfs_feature_names(uint32_t features, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		*buf = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(feature_table); i++) {
		if (!(features & feature_table[i].bit) || used >= len)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
					 feature_table[i].name);
	}
}

static size_t count_allowing(const struct bx_mkfs_device *devs, size_t nr, bool data)
{
	size_t n = 0;

	for (size_t i = 0; i < nr; i++)
		n += data ? bx_hint_allows_data(devs[i].hint) : bx_hint_allows_metadata(devs[i].hint);
	return n;
}

void bx_mkfs_default_profiles(struct bx_mkfs_options *opts)
{
	if (!opts->metadata_profile_default)
		return;
	opts->metadata_profile = count_allowing(opts->devs, opts->nr_devs, false) > 1 ?
				 BTRFS_BLOCK_GROUP_RAID1 : BTRFS_BLOCK_GROUP_DUP;
}

/* ---- options ---- */

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static int check_profile_devices(const struct bx_mkfs_options *opts, uint64_t profile, bool data)
{
	const char *kind = data ? "data" : "metadata";
	struct bx_raid_attr attr;
	size_t allowing;
	int ret = bx_raid_attr(profile | (data ? BTRFS_BLOCK_GROUP_DATA :
							  BTRFS_BLOCK_GROUP_METADATA), &attr);

	if (ret)
		return bx_error(-EINVAL, "invalid %s profile bits 0x%llx", kind,
				(unsigned long long)profile);
	if (opts->nr_devs < (size_t)attr.devs_min)
		return bx_error(-EINVAL, "%s %s needs at least %d devices, %zu given", attr.name,
				kind, attr.devs_min, opts->nr_devs);
	allowing = count_allowing(opts->devs, opts->nr_devs, data);
	if (allowing < (size_t)attr.devs_min)
		return bx_error(-EINVAL, "%s %s needs %d device%s that allow%s %s, but the hints "
				"leave %zu (%s excludes %s)", attr.name, kind, attr.devs_min,
				attr.devs_min == 1 ? "" : "s", attr.devs_min == 1 ? "s" : "", kind,
				allowing, data ? "metadata_only" : "data_only", kind);
	return 0;
}

int bx_mkfs_check_profiles(const struct bx_mkfs_options *opts)
{
	int ret = check_profile_devices(opts, opts->metadata_profile, false);

	return ret ? ret : check_profile_devices(opts, opts->data_profile, true);
}

static uint32_t default_sectorsize(uint32_t sectorsize)
{
	return sectorsize ? sectorsize : 4096;
}

/* 16 KiB, or the sector size when that is larger. */
static uint32_t default_nodesize(uint32_t sectorsize, uint32_t nodesize)
{
	return nodesize ? nodesize : (sectorsize > 16384 ? sectorsize : 16384);
}

int bx_mkfs_check_sizes(uint32_t sectorsize, uint32_t nodesize)
{
	sectorsize = default_sectorsize(sectorsize);
	if (!is_pow2(sectorsize) || sectorsize < 4096 || sectorsize > 65536)
		return bx_error(-EINVAL, "invalid sector size %u (a power of two from 4096 to 65536)",
				sectorsize);
	nodesize = default_nodesize(sectorsize, nodesize);
	if (!is_pow2(nodesize) || nodesize < sectorsize || nodesize > 65536)
		return bx_error(-EINVAL, "invalid node size %u (a power of two from the sector size "
				"%u to 65536)", nodesize, sectorsize);
	return 0;
}

static int check_options(struct mkfs *mk)
{
	const struct bx_mkfs_options *opts = mk->opts;
	long page = sysconf(_SC_PAGESIZE);
	uint32_t features = opts->features;
	int ret;

	if (!opts->nr_devs)
		return bx_error(-EINVAL, "no device given");
	ret = bx_mkfs_check_sizes(opts->sectorsize, opts->nodesize);
	/* Settled already by the command line; a library caller's are refused, not changed. */
	if (!ret)
		ret = bx_mkfs_settle_features(&features, BX_MKFS_F_BLOCK_GROUP_TREE);
	if (ret)
		return ret;
	mk->sectorsize = default_sectorsize(opts->sectorsize);
	if (page > 0 && mk->sectorsize > (uint32_t)page)
		bx_warn("sector size %u is larger than the page size %ld: this kernel may not mount "
			"it", mk->sectorsize, page);
	mk->nodesize = default_nodesize(mk->sectorsize, opts->nodesize);
	if (!btrfsx_csum_size(opts->csum_type))
		return bx_error(-EINVAL, "unknown checksum type %u", opts->csum_type);
	if (opts->label && strlen(opts->label) >= BTRFS_LABEL_SIZE)
		return bx_error(-EINVAL, "label is %zu bytes long; at most %d fit",
				strlen(opts->label), BTRFS_LABEL_SIZE - 1);
	for (size_t i = 0; i < opts->nr_devs; i++) {
		if (opts->devs[i].hint > BX_HINT_MAX_KNOWN)
			return bx_error(-EINVAL, "%s: unknown allocation hint value %llu",
					opts->devs[i].path, (unsigned long long)opts->devs[i].hint);
		if (opts->devs[i].hint == BX_HINT_NONE)
			bx_warn("%s: hint none is understood by kakra's kernel fork only; V12 "
				"kernels read it as data_preferred", opts->devs[i].path);
	}
	ret = bx_mkfs_check_profiles(opts);
	if (ret)
		return ret;

	mk->features = features | BX_MKFS_F_MIXED_BACKREF;
	if ((opts->data_profile | opts->metadata_profile) & BTRFS_BLOCK_GROUP_RAID56_MASK) {
		mk->features |= BX_MKFS_F_RAID56;
		bx_warn("RAID5/6 support has known problems; it is strongly discouraged besides "
			"testing or evaluation");
	}
	if ((opts->data_profile | opts->metadata_profile) &
	    (BTRFS_BLOCK_GROUP_RAID1C3 | BTRFS_BLOCK_GROUP_RAID1C4))
		mk->features |= BX_MKFS_F_RAID1C34;
	mk->incompat = BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF;
	/* Meaningless today, but mkfs.btrfs sets it (and the kernel at mount) for such nodes. */
	if (page > 0 && mk->nodesize > (uint32_t)page)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_BIG_METADATA;
	if (mk->features & BX_MKFS_F_EXTREF)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF;
	if (mk->features & BX_MKFS_F_SKINNY_METADATA)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA;
	if (mk->features & BX_MKFS_F_NO_HOLES)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_NO_HOLES;
	if (mk->features & BX_MKFS_F_RAID56)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_RAID56;
	if (mk->features & BX_MKFS_F_RAID1C34)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_RAID1C34;
	if (mk->features & BX_MKFS_F_SQUOTA)
		mk->incompat |= BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA;
	if (mk->features & BX_MKFS_F_FREE_SPACE_TREE)
		mk->compat_ro = BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE |
				BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID;
	if (mk->features & BX_MKFS_F_BLOCK_GROUP_TREE)
		mk->compat_ro |= BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	return 0;
}

/* ---- devices ---- */

static int add_wipe(struct mk_dev *d, uint64_t offset, uint64_t len)
{
	if (offset >= d->real_size)
		return 0;
	if (offset + len > d->real_size)
		len = d->real_size - offset;
	if (d->nr_wipes == ARRAY_SIZE(d->wipes))
		return bx_error(-E2BIG, "%s: too many signatures to wipe", d->dev->path);
	d->wipes[d->nr_wipes][0] = offset;
	d->wipes[d->nr_wipes][1] = len;
	d->nr_wipes++;
	return 0;
}

/* Finds signatures (filesystems, RAID members, partition tables) libblkid knows. */
static int probe_signatures(struct mk_dev *d)
{
	blkid_probe pr = blkid_new_probe();
	int ret = 0;

	if (!pr)
		return bx_error(-ENOMEM, "out of memory");
	if (blkid_probe_set_device(pr, d->dev->fd, 0, (blkid_loff_t)d->real_size)) {
		blkid_free_probe(pr);
		return bx_error(-EIO, "%s: cannot probe for signatures", d->dev->path);
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_MAGIC);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	while (!ret && blkid_do_probe(pr) == 0) {
		const char *type = NULL, *off = NULL, *magic = NULL;
		size_t magic_len = 0;
		bool table = false;

		if (blkid_probe_lookup_value(pr, "TYPE", &type, NULL)) {
			table = true;
			blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL);
		}
		blkid_probe_lookup_value(pr, table ? "PTMAGIC_OFFSET" : "SBMAGIC_OFFSET", &off,
					 NULL);
		blkid_probe_lookup_value(pr, table ? "PTMAGIC" : "SBMAGIC", &magic, &magic_len);
		if (type && !*d->old_type)
			snprintf(d->old_type, sizeof(d->old_type), "%s%s", type,
				 table ? " partition table" : "");
		if (off && magic_len)
			ret = add_wipe(d, strtoull(off, NULL, 10), magic_len);
	}
	blkid_free_probe(pr);
	return ret;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) || S_ISBLK(b->st_mode))
		return S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode) && a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int open_one(struct mkfs *mk, size_t index)
{
	const struct bx_mkfs_options *opts = mk->opts;
	struct mk_dev *d = &mk->devs[index];
	const char *path = opts->devs[index].path;
	struct btrfs_super_block old;
	char mnt[4096];
	int ret;

	d->dev = calloc(1, sizeof(*d->dev));
	if (!d->dev)
		return bx_error(-ENOMEM, "out of memory");
	d->dev->fd = -1;
	d->dev->devid = index + 1;
	d->dev->path = strdup(path);
	d->hint = opts->devs[index].hint;
	if (!d->dev->path)
		return bx_error(-ENOMEM, "out of memory");
	if (stat(path, &d->st) < 0) {
		if (errno != ENOENT || !opts->byte_count)
			return bx_error(-errno, "%s: %m%s", path, errno == ENOENT ?
					" (-b creates an image file of that size)" : "");
		/* An image file to be: created now, removed again if mkfs is refused. */
		d->dev->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (d->dev->fd < 0)
			return bx_error(-errno, "%s: cannot create: %m", path);
		d->created = true;
		if (fstat(d->dev->fd, &d->st) < 0)
			return bx_error(-errno, "%s: %m", path);
	}
	ret = bx_check_member_type(&d->st, path);
	if (ret)
		return ret;
	for (size_t i = 0; i < index; i++)
		if (same_file(&mk->devs[i].st, &d->st))
			return bx_error(-EINVAL, "%s: named twice (also as %s)", path,
					mk->devs[i].dev->path);
	d->is_file = !S_ISBLK(d->st.st_mode);
	ret = d->created ? bx_claim_image_file(d->dev->fd, path) :
			   bx_open_claimed(path, &d->st, true, &d->dev->fd);
	if (ret)
		return ret;
	d->dev->writable = true;
	if (S_ISBLK(d->st.st_mode)) {
		if (ioctl(d->dev->fd, BLKGETSIZE64, &d->real_size) < 0)
			return bx_error(-errno, "%s: cannot get the device size: %m", path);
	} else {
		d->real_size = (uint64_t)d->st.st_size;
	}
	d->size = d->real_size;
	if (opts->byte_count) {
		if (opts->byte_count > d->real_size && !d->is_file)
			return bx_error(-ENOSPC, "%s: -b %llu is larger than the device (%llu bytes)",
					path, (unsigned long long)opts->byte_count,
					(unsigned long long)d->real_size);
		d->size = opts->byte_count;
	}
	d->size -= d->size % mk->sectorsize;
	if (d->size < BX_MKFS_MIN_DEV_SIZE)
		return bx_error(-ENOSPC, "%s: too small (%llu bytes); btrfsx mkfs needs at least "
				"%llu MiB per device", path, (unsigned long long)d->size,
				BX_MKFS_MIN_DEV_SIZE >> 20);
	/* An old btrfs that the kernel has mounted through another member. */
	if (bx_read_super_copy(d->dev->fd, d->real_size, 0, &old, d->dev->io_timeout) == BX_SB_OK &&
	    bx_fs_is_mounted("/sys", old.fsid, mnt, sizeof(mnt)))
		return bx_error(-EBUSY, "%s: holds a btrfs filesystem that is mounted at %s; "
				"unmount it first", path, mnt);
	d->dev->size = d->real_size > d->size ? d->real_size : d->size;
	return probe_signatures(d);
}

static int open_devices(struct mkfs *mk)
{
	int ret;

	mk->nr_devs = mk->opts->nr_devs;
	mk->devs = calloc(mk->nr_devs, sizeof(*mk->devs));
	mk->fs = calloc(1, sizeof(*mk->fs));
	if (mk->fs)
		mk->fs->devs = calloc(mk->nr_devs, sizeof(*mk->fs->devs));
	if (!mk->devs || !mk->fs || !mk->fs->devs)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < mk->nr_devs; i++) {
		ret = open_one(mk, i);
		/* The fs owns the device from here on, opened or not. */
		if (mk->devs[i].dev)
			mk->fs->devs[mk->fs->nr_devs++] = mk->devs[i].dev;
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < mk->nr_devs; i++) {
		struct mk_dev *d = &mk->devs[i];

		if (*d->old_type && !mk->opts->force)
			return bx_error(-EEXIST, "%s: holds %s%s signature; use -f to overwrite it",
					d->dev->path, strchr("aeiou", d->old_type[0]) ? "an " : "a ",
					d->old_type);
	}
	return 0;
}

/* ---- chunks ---- */

static const char *chunk_kind(uint64_t type)
{
	if (type & BTRFS_BLOCK_GROUP_DATA)
		return "data";
	if (type & BTRFS_BLOCK_GROUP_SYSTEM)
		return "system";
	return "metadata";
}

/* Why no chunk of @type fits: the hints, or the sizes. */
static int explain_enospc(struct mkfs *mk, const struct bx_alloc_device *adevs, uint64_t type,
			  const struct bx_alloc_params *params)
{
	struct bx_alloc_params plain = *params;
	struct bx_alloc_chunk probe;
	bool data = type & BTRFS_BLOCK_GROUP_DATA;
	int ret;

	plain.flags |= BX_ALLOC_IGNORE_HINTS;
	ret = bx_alloc_decide(adevs, mk->nr_devs, type, &plain, &probe);
	bx_alloc_chunk_release(&probe);
	if (!ret)
		return bx_error(-ENOSPC, "no %s %s chunk fits on the devices whose hints allow %s: "
				"the hints make the profile unsatisfiable", bx_profile_name(type),
				chunk_kind(type), data ? "data" : "metadata");
	return bx_error(-ENOSPC, "no %s %s chunk fits: the devices are too small for the profile",
			bx_profile_name(type), chunk_kind(type));
}

/*
 * What a chunk that fell back to devices the hints prefer less (@ac) did,
 * said as it is: how many of the preferred devices it uses (often none),
 * and why. The allocator takes whole preference tiers, in order, until it
 * has the devices the profile needs, and then picks among all it took by
 * free space alone: devices of the next tier that are larger win over the
 * preferred ones.
 */
static void warn_fallback(const struct mkfs *mk, const struct bx_alloc_chunk *ac)
{
	int best = INT_MAX, next = INT_MAX;
	size_t nr_best = 0, nr_next = 0, used = 0;
	uint64_t best_hint = 0, next_hint = 0;
	struct bx_raid_attr attr;
	char why[256], uses[48];

	for (size_t i = 0; i < mk->nr_devs; i++) {
		int tier = bx_alloc_hint_tier(mk->devs[i].hint, ac->type, 0, NULL);

		if (tier == BX_TIER_NEVER)
			continue;
		if (tier < best) {
			next = best;
			best = tier;
		} else if (tier > best && tier < next) {
			next = tier;
		}
	}
	for (size_t i = 0; i < mk->nr_devs; i++) {
		int tier = bx_alloc_hint_tier(mk->devs[i].hint, ac->type, 0, NULL);

		if (tier == best) {
			nr_best++;
			best_hint = mk->devs[i].hint;
			for (uint32_t s = 0; s < ac->num_stripes; s++)
				if (ac->stripes[s].dev_index == i) {
					used++;
					break;
				}
		} else if (tier == next) {
			nr_next++;
			next_hint = mk->devs[i].hint;
		}
	}
	if (bx_raid_attr(ac->type, &attr) == 0 && nr_best < (size_t)attr.devs_min)
		snprintf(why, sizeof(why), "they are %zu and %s needs %d devices; the allocator takes "
			 "whole preference tiers until it has enough (here the %zu %s devices too) "
			 "and then picks among them by free space alone", nr_best,
			 bx_profile_name(ac->type), attr.devs_min, nr_next, bx_hint_name(next_hint));
	else
		snprintf(why, sizeof(why), "they are too small for a chunk of it");
	if (used)
		snprintf(uses, sizeof(uses), "only %zu of the", used);
	bx_warn("the %s %s chunk uses %s %zu %s device%s: %s", bx_profile_name(ac->type),
		chunk_kind(ac->type), used ? uses : "none of the", nr_best, bx_hint_name(best_hint),
		nr_best == 1 ? "" : "s", why);
}

static int place_chunks(struct mkfs *mk)
{
	const uint64_t types[3] = {
		BTRFS_BLOCK_GROUP_SYSTEM | mk->opts->metadata_profile,
		BTRFS_BLOCK_GROUP_METADATA | mk->opts->metadata_profile,
		BTRFS_BLOCK_GROUP_DATA | mk->opts->data_profile,
	};
	struct bx_alloc_params params = { .nodesize = mk->nodesize };
	struct bx_alloc_device *adevs = calloc(mk->nr_devs, sizeof(*adevs));
	uint64_t logical = BX_MKFS_FIRST_LOGICAL;
	int ret = 0;

	if (!adevs)
		return bx_error(-ENOMEM, "out of memory");
	for (size_t i = 0; i < mk->nr_devs && !ret; i++) {
		ret = bx_alloc_device_init(&adevs[i], i + 1, mk->devs[i].size, mk->devs[i].hint);
		params.fs_total_bytes += mk->devs[i].size;
	}
	if (ret)
		ret = bx_error(ret, "out of memory");
	for (int c = 0; c < 3 && !ret; c++) {
		struct bx_alloc_chunk ac;
		struct bx_mkfs_chunk *mc;

		ret = bx_alloc_decide(adevs, mk->nr_devs, types[c], &params, &ac);
		if (ret == -ENOSPC) {
			ret = explain_enospc(mk, adevs, types[c], &params);
			break;
		}
		if (ret) {
			ret = bx_error(ret, "placing the %s chunk: %s", chunk_kind(types[c]),
				       strerror(-ret));
			break;
		}
		ret = bx_alloc_apply(adevs, mk->nr_devs, &ac);
		mc = ret ? NULL : calloc(1, sizeof(*mc) + ac.num_stripes * sizeof(mc->stripes[0]));
		if (mc) {
			mc->type = ac.type;
			mc->logical = logical;
			mc->length = ac.length;
			mc->stripe_size = ac.stripe_size;
			mc->num_stripes = ac.num_stripes;
			mc->alloc_flags = ac.flags;
			for (uint32_t s = 0; s < ac.num_stripes; s++) {
				mc->stripes[s].devid = ac.stripes[s].devid;
				mc->stripes[s].physical = ac.stripes[s].physical;
				mk->devs[ac.stripes[s].dev_index].bytes_used += ac.stripe_size;
			}
			mk->chunks[c] = mc;
			/* The next chunk starts where this one ends, on a 64 KiB boundary. */
			logical += (ac.length + BTRFS_STRIPE_LEN - 1) & ~(BTRFS_STRIPE_LEN - 1);
		} else if (!ret) {
			ret = bx_error(-ENOMEM, "out of memory");
		} else {
			ret = bx_error(ret, "recording the %s chunk: %s", chunk_kind(types[c]),
				       strerror(-ret));
		}
		if (!ret && (ac.flags & BX_ALLOC_F_FALLBACK))
			warn_fallback(mk, &ac);
		bx_alloc_chunk_release(&ac);
	}
	for (size_t i = 0; i < mk->nr_devs; i++)
		bx_alloc_device_release(&adevs[i]);
	free(adevs);
	return ret;
}

/* The in-memory filesystem the write path maps through: devices and the three chunks. */
static int build_chunk_map(struct mkfs *mk)
{
	struct bx_fs *fs = mk->fs;

	fs->nodesize = mk->nodesize;
	fs->sectorsize = mk->sectorsize;
	fs->csum_type = mk->opts->csum_type;
	fs->csum_size = btrfsx_csum_size(fs->csum_type);
	memcpy(fs->fsid, mk->fsid, BTRFS_FSID_SIZE);
	memcpy(fs->metadata_uuid, mk->fsid, BTRFS_FSID_SIZE);
	for (int c = 0; c < 3; c++) {
		uint8_t item[BX_MKFS_CHUNK_ITEM_MAX];
		int ret;

		bx_mkfs_chunk_item(mk, mk->chunks[c], item);
		ret = bx_chunk_map_insert(fs, mk->chunks[c]->logical, (struct btrfs_chunk *)item);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- block placement inside the chunks ---- */

/* True when a copy of the block (or its RAID5/6 row) comes near a superblock copy. */
static bool near_super(uint64_t physical, uint64_t len)
{
	for (int i = 0; i < BTRFS_SUPER_MIRROR_MAX; i++) {
		uint64_t sb = btrfs_sb_offset(i);

		/* The kernel keeps the 64 KiB stripe unit around each copy out of use. */
		if (physical < sb + BTRFS_STRIPE_LEN && physical + len > sb - BTRFS_STRIPE_LEN)
			return true;
	}
	return false;
}

static bool block_hits_super(struct mkfs *mk, uint64_t logical)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(mk->fs, logical);

	if (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK) {
		struct bx_full_stripe row;

		bx_map_full_stripe(mk->fs, logical, &row);
		for (int i = 0; i < row.nr_data + row.nr_parity; i++)
			if (near_super(row.stripes[i].physical, row.stripe_len))
				return true;
		return false;
	}
	for (int m = 1; m <= bx_num_copies(mk->fs, logical); m++) {
		uint64_t at = logical, left = mk->nodesize;

		while (left) {
			struct bx_stripe_loc loc;
			uint64_t piece = left;

			if (bx_map_logical(mk->fs, at, &piece, m, &loc) ||
			    near_super(loc.physical, piece))
				return true;
			at += piece;
			left -= piece;
		}
	}
	return false;
}

int bx_mkfs_next_block(struct mkfs *mk, int chunk_index, uint64_t *cursor, uint64_t *bytenr)
{
	const struct bx_mkfs_chunk *c = mk->chunks[chunk_index];

	if (!*cursor)
		*cursor = c->logical;
	while (*cursor + mk->nodesize <= c->logical + c->length) {
		uint64_t at = *cursor;

		*cursor += mk->nodesize;
		if (!block_hits_super(mk, at)) {
			*bytenr = at;
			return 0;
		}
	}
	return bx_error(-ENOSPC, "the %s chunk (%llu bytes) is too small for the trees; the "
			"devices are too small for the profile", chunk_kind(c->type),
			(unsigned long long)c->length);
}

/* ---- writing ---- */

static void *aligned_zalloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int keep_buffer(struct mkfs *mk, void *buf)
{
	void **bufs = realloc(mk->bufs, (mk->nr_bufs + 1) * sizeof(*bufs));

	if (!bufs) {
		free(buf);
		return bx_error(-ENOMEM, "out of memory");
	}
	mk->bufs = bufs;
	mk->bufs[mk->nr_bufs++] = buf;
	return 0;
}

static int queue_wipes(struct mkfs *mk, struct bx_write_batch *batch)
{
	uint8_t *zeros = aligned_zalloc(BX_MKFS_FIRST_LOGICAL);
	int ret;

	if (!zeros)
		return bx_error(-ENOMEM, "out of memory");
	ret = keep_buffer(mk, zeros);
	for (size_t i = 0; i < mk->nr_devs && !ret; i++) {
		struct mk_dev *d = &mk->devs[i];
		uint64_t regions[ARRAY_SIZE(d->wipes) + 4][2];
		size_t n = 0, merged = 0;

		/* The first MiB (an old primary superblock, partition tables, most signatures). */
		regions[n][0] = 0;
		regions[n++][1] = d->real_size < BX_MKFS_FIRST_LOGICAL ? d->real_size :
				  BX_MKFS_FIRST_LOGICAL;
		for (int m = 1; m < BTRFS_SUPER_MIRROR_MAX; m++) {
			if (btrfs_sb_offset(m) + BTRFS_SUPER_INFO_SIZE <= d->real_size) {
				regions[n][0] = btrfs_sb_offset(m);
				regions[n++][1] = BTRFS_SUPER_INFO_SIZE;
			}
		}
		for (size_t w = 0; w < d->nr_wipes; w++) {
			regions[n][0] = d->wipes[w][0];
			regions[n++][1] = d->wipes[w][1];
		}
		/* Sort and merge so no two writes overlap. */
		for (size_t a = 1; a < n; a++)
			for (size_t b = a; b > 0 && regions[b][0] < regions[b - 1][0]; b--) {
				uint64_t t0 = regions[b][0], t1 = regions[b][1];

				regions[b][0] = regions[b - 1][0];
				regions[b][1] = regions[b - 1][1];
				regions[b - 1][0] = t0;
				regions[b - 1][1] = t1;
			}
		for (size_t r = 1; r < n; r++) {
			uint64_t end = regions[merged][0] + regions[merged][1];

			if (regions[r][0] <= end) {
				if (regions[r][0] + regions[r][1] > end)
					regions[merged][1] = regions[r][0] + regions[r][1] -
							     regions[merged][0];
			} else {
				merged++;
				regions[merged][0] = regions[r][0];
				regions[merged][1] = regions[r][1];
			}
		}
		for (size_t r = 0; r <= merged && !ret; r++) {
			uint64_t off = regions[r][0], left = regions[r][1];

			while (left && !ret) {
				uint64_t piece = left < BX_MKFS_FIRST_LOGICAL ? left :
						 BX_MKFS_FIRST_LOGICAL;

				ret = bx_batch_add(batch, d->dev, zeros, piece, off);
				off += piece;
				left -= piece;
			}
		}
	}
	return ret;
}

/* A RAID5/6 row holding tree blocks: written whole, with P (and Q) from its data. */
static int queue_row(struct mkfs *mk, struct bx_write_batch *batch, uint64_t logical,
		     size_t *next_block)
{
	struct bx_full_stripe row;
	size_t stripe = BTRFS_STRIPE_LEN, nr;
	uint8_t *buf;
	void *ptrs[BX_MAX_STRIPES];
	int ret = bx_map_full_stripe(mk->fs, logical, &row);

	if (ret)
		return ret;
	nr = (size_t)(row.nr_data + row.nr_parity);
	buf = aligned_zalloc(nr * stripe);
	if (!buf)
		return bx_error(-ENOMEM, "out of memory");
	ret = keep_buffer(mk, buf);
	if (ret)
		return ret;
	/* Every rendered block inside this row goes to its place in the data. */
	while (*next_block < mk->nr_rendered) {
		const struct bx_mkfs_rendered *rb = &mk->rendered[*next_block];

		if (rb->bytenr < row.logical_start ||
		    rb->bytenr >= row.logical_start + (uint64_t)row.nr_data * stripe)
			break;
		memcpy(buf + (rb->bytenr - row.logical_start), rb->data, mk->nodesize);
		(*next_block)++;
	}
	for (size_t i = 0; i < nr; i++)
		ptrs[i] = buf + i * stripe;
	if (row.nr_data == 1) {
		/* One data stripe: P is a copy, and so is Q (g^0 * D). */
		for (size_t i = 1; i < nr; i++)
			memcpy(ptrs[i], ptrs[0], stripe);
	} else if (row.nr_parity == 1) {
		ret = xor_gen((int)nr, (int)stripe, ptrs);
	} else {
		ret = pq_gen((int)nr, (int)stripe, ptrs);
	}
	if (ret)
		return bx_error(-EIO, "computing RAID5/6 parity failed");
	for (size_t i = 0; i < nr && !ret; i++) {
		if (!row.stripes[i].dev)
			return bx_error(-ENODEV, "devid %llu has no device",
					(unsigned long long)row.stripes[i].devid);
		ret = bx_batch_add(batch, row.stripes[i].dev, ptrs[i], stripe,
				   row.stripes[i].physical);
	}
	return ret;
}

static int rendered_cmp(const void *a, const void *b)
{
	const struct bx_mkfs_rendered *x = a, *y = b;

	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

static int queue_tree_blocks(struct mkfs *mk, struct bx_write_batch *batch)
{
	size_t i = 0;
	int ret = 0;

	qsort(mk->rendered, mk->nr_rendered, sizeof(*mk->rendered), rendered_cmp);
	while (i < mk->nr_rendered && !ret) {
		const struct bx_mkfs_rendered *rb = &mk->rendered[i];
		const struct bx_chunk *chunk = bx_chunk_lookup(mk->fs, rb->bytenr);

		if (chunk && (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK)) {
			ret = queue_row(mk, batch, rb->bytenr, &i);
		} else {
			ret = bx_batch_add_logical(mk->fs, batch, rb->data, mk->nodesize,
						   rb->bytenr);
			i++;
		}
	}
	return ret;
}

static int queue_supers(struct mkfs *mk, struct bx_write_batch *batch, enum bx_mkfs_sb_kind kind)
{
	for (size_t i = 0; i < mk->nr_devs; i++) {
		struct mk_dev *d = &mk->devs[i];

		for (int m = 0; m < BTRFS_SUPER_MIRROR_MAX; m++) {
			struct btrfs_super_block *sb;
			int ret;

			if ((kind == BX_MKFS_SB_BACKUPS) != (m > 0))
				continue;
			/* Copies live only inside the size the filesystem uses, as the kernel does. */
			if (btrfs_sb_offset(m) + BTRFS_SUPER_INFO_SIZE > d->size)
				continue;
			sb = aligned_zalloc(BTRFS_SUPER_INFO_SIZE);
			if (!sb)
				return bx_error(-ENOMEM, "out of memory");
			ret = keep_buffer(mk, sb);
			if (!ret)
				ret = bx_mkfs_super(mk, d, m, kind, sb);
			if (!ret)
				ret = bx_batch_add(batch, d->dev, sb, BTRFS_SUPER_INFO_SIZE,
						   btrfs_sb_offset(m));
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Image files grow to the asked size before anything is written; back again if one cannot. */
static int grow_image_files(struct mkfs *mk)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < mk->nr_devs && !ret; i++) {
		struct mk_dev *d = &mk->devs[i];

		if (d->is_file && d->size > d->real_size && ftruncate(d->dev->fd, (off_t)d->size) < 0)
			ret = bx_error(-errno, "%s: cannot grow to %llu bytes (-b): %m", d->dev->path,
				       (unsigned long long)d->size);
	}
	while (i-- > 0) {
		struct mk_dev *d = &mk->devs[i];

		if (!d->is_file || d->size <= d->real_size)
			continue;
		if (!ret)
			d->real_size = d->size;
		else if (ftruncate(d->dev->fd, (off_t)d->real_size) < 0)
			bx_warn("%s: cannot shrink back to %llu bytes: %s", d->dev->path,
				(unsigned long long)d->real_size, strerror(errno));
	}
	return ret;
}

static int write_everything(struct mkfs *mk)
{
	static const enum bx_mkfs_sb_kind sb_steps[] = {
		BX_MKFS_SB_UNFINISHED, BX_MKFS_SB_BACKUPS, BX_MKFS_SB_FINAL,
	};
	struct bx_write_batch batch;
	int ret = 0;

	bx_batch_init(&batch);
	ret = grow_image_files(mk);
	if (ret)
		goto out;
	mk->fs->writes = mk->opts->writes;
	ret = queue_wipes(mk, &batch);
	if (!ret)
		ret = bx_batch_submit(mk->fs, &batch);
	if (ret) {
		ret = bx_error_wrap(ret, "wiping old signatures");
		goto out;
	}
	ret = queue_tree_blocks(mk, &batch);
	if (!ret)
		ret = bx_batch_submit(mk->fs, &batch);
	if (ret) {
		ret = bx_error_wrap(ret, "writing the trees");
		goto out;
	}
	for (size_t s = 0; s < ARRAY_SIZE(sb_steps) && !ret; s++) {
		ret = queue_supers(mk, &batch, sb_steps[s]);
		if (!ret)
			ret = bx_batch_submit(mk->fs, &batch);
		if (ret)
			ret = bx_error_wrap(ret, "writing the superblocks");
	}
out:
	bx_batch_release(&batch);
	return ret;
}

/*
 * Tells the kernel about the new members, as 'btrfs device scan' would, so a
 * multi-device filesystem mounts without a scan. Image files are skipped.
 */
static void register_devices(struct mkfs *mk)
{
	int fd = -1;

	for (size_t i = 0; i < mk->nr_devs; i++) {
		struct btrfs_ioctl_vol_args args;

		if (mk->devs[i].is_file)
			continue;
		if (fd < 0)
			fd = open("/dev/btrfs-control", O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			bx_warn("cannot open /dev/btrfs-control (%s): run 'btrfs device scan' before "
				"mounting", strerror(errno));
			return;
		}
		memset(&args, 0, sizeof(args));
		snprintf(args.name, sizeof(args.name), "%s", mk->devs[i].dev->path);
		if (ioctl(fd, BTRFS_IOC_SCAN_DEV, &args) < 0)
			bx_warn("%s: the kernel did not register the device (%s): run 'btrfs device "
				"scan' before mounting", mk->devs[i].dev->path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

/* A UUID given with -U must not be one that a filesystem out there already has. */
static int check_fsid_unused(struct mkfs *mk)
{
	char uuid[37], mnt[4096];
	blkid_dev_iterate iter;
	blkid_cache cache;
	blkid_dev bdev;
	int ret = 0;

	uuid_unparse_lower(mk->fsid, uuid);
	if (bx_fs_is_mounted("/sys", mk->fsid, mnt, sizeof(mnt)))
		return bx_error(-EEXIST, "UUID %s belongs to the filesystem mounted at %s", uuid,
				mnt);
	if (blkid_get_cache(&cache, "/dev/null") < 0)
		return 0;
	blkid_probe_all(cache);
	iter = blkid_dev_iterate_begin(cache);
	blkid_dev_set_search(iter, "UUID", uuid);
	while (!ret && blkid_dev_next(iter, &bdev) == 0) {
		const char *name = blkid_dev_devname(bdev);
		struct stat st;
		bool ours = false;

		if (stat(name, &st) < 0)
			continue;
		for (size_t i = 0; i < mk->nr_devs; i++)
			ours |= same_file(&st, &mk->devs[i].st);
		if (!ours)
			ret = bx_error(-EEXIST, "UUID %s is already used by %s; filesystem UUIDs "
				       "must be unique", uuid, name);
	}
	blkid_dev_iterate_end(iter);
	blkid_put_cache(cache);
	return ret;
}

/* ---- result ---- */

static int make_result(struct mkfs *mk, struct bx_mkfs_result **out)
{
	struct bx_mkfs_result *res = calloc(1, sizeof(*res));

	if (!res)
		return bx_error(-ENOMEM, "out of memory");
	memcpy(res->fsid, mk->fsid, BTRFS_FSID_SIZE);
	memcpy(res->chunk_tree_uuid, mk->chunk_uuid, BTRFS_UUID_SIZE);
	if (mk->opts->label)
		snprintf(res->label, sizeof(res->label), "%s", mk->opts->label);
	res->nodesize = mk->nodesize;
	res->sectorsize = mk->sectorsize;
	res->csum_type = mk->opts->csum_type;
	res->features = mk->features;
	res->generation = BX_MKFS_GENERATION;
	res->total_bytes = mk->total_bytes;
	res->bytes_used = mk->bytes_used;
	res->nr_writes = mk->fs->nr_writes;
	res->devs = calloc(mk->nr_devs, sizeof(*res->devs));
	if (!res->devs) {
		bx_mkfs_result_free(res);
		return bx_error(-ENOMEM, "out of memory");
	}
	res->nr_devs = mk->nr_devs;
	for (size_t i = 0; i < mk->nr_devs; i++) {
		struct bx_mkfs_dev_result *r = &res->devs[i];

		r->devid = i + 1;
		r->path = strdup(mk->devs[i].dev->path);
		r->size = mk->devs[i].size;
		r->bytes_used = mk->devs[i].bytes_used;
		r->hint = mk->devs[i].hint;
		memcpy(r->uuid, mk->devs[i].uuid, BTRFS_UUID_SIZE);
	}
	for (int c = 0; c < 3; c++) {
		res->chunks[c] = mk->chunks[c];
		mk->chunks[c] = NULL;
	}
	for (int t = 0; t < BX_MKFS_NR_TREES; t++) {
		const struct bx_tree_build *tb = &mk->trees[t];

		if (!mk->present[t])
			continue;
		res->trees[res->nr_trees++] = (struct bx_mkfs_tree){
			.objectid = tb->owner,
			.bytenr = bx_tb_root(tb)->bytenr,
			.level = tb->level,
			.nr_blocks = tb->nr_blocks,
			.nr_items = tb->nr_items,
		};
	}
	*out = res;
	return 0;
}

void bx_mkfs_result_free(struct bx_mkfs_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; res->devs && i < res->nr_devs; i++)
		free(res->devs[i].path);
	free(res->devs);
	for (int c = 0; c < 3; c++)
		free(res->chunks[c]);
	free(res);
}

static void mkfs_release(struct mkfs *mk, bool failed)
{
	for (size_t i = 0; mk->devs && i < mk->nr_devs; i++)
		if (failed && mk->devs[i].created && mk->devs[i].dev)
			unlink(mk->devs[i].dev->path);
	bx_fs_close(mk->fs);
	free(mk->devs);
	for (int c = 0; c < 3; c++)
		free(mk->chunks[c]);
	for (int t = 0; t < BX_MKFS_NR_TREES; t++) {
		bx_tb_release(&mk->trees[t]);
		free(mk->placed[t].blocks);
	}
	free(mk->render_buf);
	free(mk->rendered);
	for (size_t i = 0; i < mk->nr_bufs; i++)
		free(mk->bufs[i]);
	free(mk->bufs);
}

int bx_mkfs(const struct bx_mkfs_options *opts, struct bx_mkfs_result **result)
{
	struct mkfs mk = { .opts = opts };
	int ret;

	*result = NULL;
	ret = check_options(&mk);
	if (!ret)
		ret = open_devices(&mk);
	if (ret)
		goto out;
	if (opts->fsid) {
		memcpy(mk.fsid, opts->fsid, BTRFS_FSID_SIZE);
		ret = check_fsid_unused(&mk);
		if (ret)
			goto out;
	} else {
		uuid_generate(mk.fsid);
	}
	uuid_generate(mk.chunk_uuid);
	uuid_generate(mk.subvol_uuid);
	for (size_t i = 0; i < mk.nr_devs; i++) {
		uuid_generate(mk.devs[i].uuid);
		mk.total_bytes += mk.devs[i].size;
	}
	mk.now = (uint64_t)time(NULL);
	ret = place_chunks(&mk);
	if (!ret)
		ret = build_chunk_map(&mk);
	if (!ret)
		ret = bx_mkfs_plan_trees(&mk);
	if (!ret)
		ret = bx_mkfs_render_trees(&mk);
	if (!ret)
		ret = write_everything(&mk);
	if (!ret) {
		register_devices(&mk);
		ret = make_result(&mk, result);
	}
out:
	mkfs_release(&mk, ret != 0 && !(mk.fs && mk.fs->nr_writes));
	return ret;
}
