/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The btrfs on-disk format: structures, key types and flags.
 *
 * Every multi-byte field is little-endian on disk; read them with the
 * le*toh() helpers. Structures are packed so they can be laid over a buffer.
 */
#ifndef BTRFSX_CTREE_H
#define BTRFSX_CTREE_H

#include <stdint.h>
#include <endian.h>

#define BTRFS_MAGIC 0x4D5F53665248425FULL /* "_BHRfS_M" */
#define BTRFS_SUPER_INFO_OFFSET 0x10000ULL
#define BTRFS_SUPER_INFO_SIZE 4096
#define BTRFS_SUPER_MIRROR_MAX 3
#define BTRFS_SUPER_MIRROR_SHIFT 12
#define BTRFS_CSUM_SIZE 32
#define BTRFS_FSID_SIZE 16
#define BTRFS_UUID_SIZE 16
#define BTRFS_LABEL_SIZE 256
#define BTRFS_SYSTEM_CHUNK_ARRAY_SIZE 2048
#define BTRFS_NUM_BACKUP_ROOTS 4
#define BTRFS_STRIPE_LEN (64 * 1024ULL)
#define BTRFS_MAX_LEVEL 8
#define BTRFS_MAX_MIRRORS 4

/* Superblock copy i lives at 64 KiB, then 64 MiB, then 256 GiB. */
static inline uint64_t btrfs_sb_offset(int mirror)
{
	if (mirror == 0)
		return BTRFS_SUPER_INFO_OFFSET;
	return 16 * 1024ULL << (BTRFS_SUPER_MIRROR_SHIFT * mirror);
}

/* Tree ids (root objectids). */
#define BTRFS_ROOT_TREE_OBJECTID 1ULL
#define BTRFS_EXTENT_TREE_OBJECTID 2ULL
#define BTRFS_CHUNK_TREE_OBJECTID 3ULL
#define BTRFS_DEV_TREE_OBJECTID 4ULL
#define BTRFS_FS_TREE_OBJECTID 5ULL
#define BTRFS_ROOT_TREE_DIR_OBJECTID 6ULL
#define BTRFS_CSUM_TREE_OBJECTID 7ULL
#define BTRFS_QUOTA_TREE_OBJECTID 8ULL
#define BTRFS_UUID_TREE_OBJECTID 9ULL
#define BTRFS_FREE_SPACE_TREE_OBJECTID 10ULL
#define BTRFS_BLOCK_GROUP_TREE_OBJECTID 11ULL
#define BTRFS_RAID_STRIPE_TREE_OBJECTID 12ULL
#define BTRFS_REMAP_TREE_OBJECTID 13ULL
#define BTRFS_DEV_STATS_OBJECTID 0ULL
#define BTRFS_BALANCE_OBJECTID (-4ULL)
#define BTRFS_ORPHAN_OBJECTID (-5ULL)
#define BTRFS_TREE_LOG_OBJECTID (-6ULL)
#define BTRFS_TREE_LOG_FIXUP_OBJECTID (-7ULL)
#define BTRFS_TREE_RELOC_OBJECTID (-8ULL)
#define BTRFS_DATA_RELOC_TREE_OBJECTID (-9ULL)
#define BTRFS_EXTENT_CSUM_OBJECTID (-10ULL)
#define BTRFS_FREE_SPACE_OBJECTID (-11ULL)
#define BTRFS_FREE_INO_OBJECTID (-12ULL)
#define BTRFS_CSUM_CHANGE_OBJECTID (-13ULL)
#define BTRFS_MULTIPLE_OBJECTIDS (-255ULL)
#define BTRFS_FIRST_FREE_OBJECTID 256ULL
#define BTRFS_LAST_FREE_OBJECTID (-256ULL)
#define BTRFS_FIRST_CHUNK_TREE_OBJECTID 256ULL
#define BTRFS_DEV_ITEMS_OBJECTID 1ULL

/* Key types. */
#define BTRFS_INODE_ITEM_KEY 1
#define BTRFS_INODE_REF_KEY 12
#define BTRFS_INODE_EXTREF_KEY 13
#define BTRFS_XATTR_ITEM_KEY 24
#define BTRFS_VERITY_DESC_ITEM_KEY 36
#define BTRFS_VERITY_MERKLE_ITEM_KEY 37
#define BTRFS_ORPHAN_ITEM_KEY 48
#define BTRFS_DIR_LOG_ITEM_KEY 60
#define BTRFS_DIR_LOG_INDEX_KEY 72
#define BTRFS_DIR_ITEM_KEY 84
#define BTRFS_DIR_INDEX_KEY 96
#define BTRFS_EXTENT_DATA_KEY 108
#define BTRFS_EXTENT_CSUM_KEY 128
#define BTRFS_ROOT_ITEM_KEY 132
#define BTRFS_ROOT_BACKREF_KEY 144
#define BTRFS_ROOT_REF_KEY 156
#define BTRFS_EXTENT_ITEM_KEY 168
#define BTRFS_METADATA_ITEM_KEY 169
#define BTRFS_EXTENT_OWNER_REF_KEY 172
#define BTRFS_TREE_BLOCK_REF_KEY 176
#define BTRFS_EXTENT_DATA_REF_KEY 178
#define BTRFS_SHARED_BLOCK_REF_KEY 182
#define BTRFS_SHARED_DATA_REF_KEY 184
#define BTRFS_BLOCK_GROUP_ITEM_KEY 192
#define BTRFS_FREE_SPACE_INFO_KEY 198
#define BTRFS_FREE_SPACE_EXTENT_KEY 199
#define BTRFS_FREE_SPACE_BITMAP_KEY 200
#define BTRFS_DEV_EXTENT_KEY 204
#define BTRFS_DEV_ITEM_KEY 216
#define BTRFS_CHUNK_ITEM_KEY 228
#define BTRFS_RAID_STRIPE_KEY 230
#define BTRFS_QGROUP_STATUS_KEY 240
#define BTRFS_QGROUP_INFO_KEY 242
#define BTRFS_QGROUP_LIMIT_KEY 244
#define BTRFS_QGROUP_RELATION_KEY 246
#define BTRFS_TEMPORARY_ITEM_KEY 248
#define BTRFS_PERSISTENT_ITEM_KEY 249
#define BTRFS_DEV_REPLACE_KEY 250
#define BTRFS_UUID_KEY_SUBVOL 251
#define BTRFS_UUID_KEY_RECEIVED_SUBVOL 252
#define BTRFS_STRING_ITEM_KEY 253

/* Block group / chunk type and profile bits. */
#define BTRFS_BLOCK_GROUP_DATA (1ULL << 0)
#define BTRFS_BLOCK_GROUP_SYSTEM (1ULL << 1)
#define BTRFS_BLOCK_GROUP_METADATA (1ULL << 2)
#define BTRFS_BLOCK_GROUP_RAID0 (1ULL << 3)
#define BTRFS_BLOCK_GROUP_RAID1 (1ULL << 4)
#define BTRFS_BLOCK_GROUP_DUP (1ULL << 5)
#define BTRFS_BLOCK_GROUP_RAID10 (1ULL << 6)
#define BTRFS_BLOCK_GROUP_RAID5 (1ULL << 7)
#define BTRFS_BLOCK_GROUP_RAID6 (1ULL << 8)
#define BTRFS_BLOCK_GROUP_RAID1C3 (1ULL << 9)
#define BTRFS_BLOCK_GROUP_RAID1C4 (1ULL << 10)
#define BTRFS_BLOCK_GROUP_TYPE_MASK \
	(BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_SYSTEM | BTRFS_BLOCK_GROUP_METADATA)
#define BTRFS_BLOCK_GROUP_PROFILE_MASK \
	(BTRFS_BLOCK_GROUP_RAID0 | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_DUP | \
	 BTRFS_BLOCK_GROUP_RAID10 | BTRFS_BLOCK_GROUP_RAID5 | BTRFS_BLOCK_GROUP_RAID6 | \
	 BTRFS_BLOCK_GROUP_RAID1C3 | BTRFS_BLOCK_GROUP_RAID1C4)
#define BTRFS_BLOCK_GROUP_RAID56_MASK (BTRFS_BLOCK_GROUP_RAID5 | BTRFS_BLOCK_GROUP_RAID6)

/* Superblock feature flags. */
#define BTRFS_SUPER_FLAG_SEEDING (1ULL << 32)
#define BTRFS_SUPER_FLAG_METADUMP (1ULL << 33)
#define BTRFS_SUPER_FLAG_CHANGING_FSID_V2 (1ULL << 36)  /* btrfstune -m/-M interrupted */
#define BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE (1ULL << 0)
#define BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID (1ULL << 1)
#define BTRFS_FEATURE_COMPAT_RO_VERITY (1ULL << 2)
#define BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE (1ULL << 3)
#define BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF (1ULL << 0)
#define BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL (1ULL << 1)
#define BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS (1ULL << 2)
#define BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO (1ULL << 3)
#define BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD (1ULL << 4)
#define BTRFS_FEATURE_INCOMPAT_BIG_METADATA (1ULL << 5)
#define BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF (1ULL << 6)
#define BTRFS_FEATURE_INCOMPAT_RAID56 (1ULL << 7)
#define BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA (1ULL << 8)
#define BTRFS_FEATURE_INCOMPAT_NO_HOLES (1ULL << 9)
#define BTRFS_FEATURE_INCOMPAT_METADATA_UUID (1ULL << 10)
#define BTRFS_FEATURE_INCOMPAT_RAID1C34 (1ULL << 11)
#define BTRFS_FEATURE_INCOMPAT_ZONED (1ULL << 12)
#define BTRFS_FEATURE_INCOMPAT_EXTENT_TREE_V2 (1ULL << 13)
#define BTRFS_FEATURE_INCOMPAT_RAID_STRIPE_TREE (1ULL << 14)
#define BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA (1ULL << 16)

/* Checksum algorithms (superblock csum_type). */
#define BTRFS_CSUM_TYPE_CRC32 0
#define BTRFS_CSUM_TYPE_XXHASH 1
#define BTRFS_CSUM_TYPE_SHA256 2
#define BTRFS_CSUM_TYPE_BLAKE2 3

/* Extent item flags. */
#define BTRFS_EXTENT_FLAG_DATA (1ULL << 0)
#define BTRFS_EXTENT_FLAG_TREE_BLOCK (1ULL << 1)
#define BTRFS_BLOCK_FLAG_FULL_BACKREF (1ULL << 8)

/* File extent types and compression. */
#define BTRFS_FILE_EXTENT_INLINE 0
#define BTRFS_FILE_EXTENT_REG 1
#define BTRFS_FILE_EXTENT_PREALLOC 2
#define BTRFS_COMPRESS_NONE 0

/* Inode flags we act on. */
#define BTRFS_INODE_NODATASUM (1ULL << 0)

/* Allocation hint: the low bits of btrfs_dev_item.type (format/hints.h). */
#define BTRFSX_HINT_V12_MASK 0x3ULL
#define BTRFSX_HINT_FIELD_MASK 0x7ULL

struct btrfs_disk_key {
	uint64_t objectid;
	uint8_t type;
	uint64_t offset;
} __attribute__((packed));

struct btrfs_timespec {
	uint64_t sec;
	uint32_t nsec;
} __attribute__((packed));

struct btrfs_dev_item {
	uint64_t devid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint32_t io_align;
	uint32_t io_width;
	uint32_t sector_size;
	uint64_t type;
	uint64_t generation;
	uint64_t start_offset;
	uint32_t dev_group;
	uint8_t seek_speed;
	uint8_t bandwidth;
	uint8_t uuid[BTRFS_UUID_SIZE];
	uint8_t fsid[BTRFS_FSID_SIZE];
} __attribute__((packed));

struct btrfs_root_backup {
	uint64_t tree_root;
	uint64_t tree_root_gen;
	uint64_t chunk_root;
	uint64_t chunk_root_gen;
	uint64_t extent_root;
	uint64_t extent_root_gen;
	uint64_t fs_root;
	uint64_t fs_root_gen;
	uint64_t dev_root;
	uint64_t dev_root_gen;
	uint64_t csum_root;
	uint64_t csum_root_gen;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint64_t num_devices;
	uint64_t unused_64[4];
	uint8_t tree_root_level;
	uint8_t chunk_root_level;
	uint8_t extent_root_level;
	uint8_t fs_root_level;
	uint8_t dev_root_level;
	uint8_t csum_root_level;
	uint8_t unused_8[10];
} __attribute__((packed));

struct btrfs_super_block {
	uint8_t csum[BTRFS_CSUM_SIZE];
	uint8_t fsid[BTRFS_FSID_SIZE];
	uint64_t bytenr;
	uint64_t flags;
	uint64_t magic;
	uint64_t generation;
	uint64_t root;
	uint64_t chunk_root;
	uint64_t log_root;
	uint64_t log_root_transid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint64_t root_dir_objectid;
	uint64_t num_devices;
	uint32_t sectorsize;
	uint32_t nodesize;
	uint32_t leafsize;
	uint32_t stripesize;
	uint32_t sys_chunk_array_size;
	uint64_t chunk_root_generation;
	uint64_t compat_flags;
	uint64_t compat_ro_flags;
	uint64_t incompat_flags;
	uint16_t csum_type;
	uint8_t root_level;
	uint8_t chunk_root_level;
	uint8_t log_root_level;
	struct btrfs_dev_item dev_item;
	char label[BTRFS_LABEL_SIZE];
	uint64_t cache_generation;
	uint64_t uuid_tree_generation;
	uint8_t metadata_uuid[BTRFS_FSID_SIZE];
	uint64_t nr_global_roots;
	uint64_t block_group_root;
	uint64_t block_group_root_generation;
	uint8_t block_group_root_level;
	uint8_t reserved8[7];
	uint64_t reserved[24];
	uint8_t sys_chunk_array[BTRFS_SYSTEM_CHUNK_ARRAY_SIZE];
	struct btrfs_root_backup super_roots[BTRFS_NUM_BACKUP_ROOTS];
	uint8_t padding[565];
} __attribute__((packed));

struct btrfs_header {
	uint8_t csum[BTRFS_CSUM_SIZE];
	uint8_t fsid[BTRFS_FSID_SIZE];
	uint64_t bytenr;
	uint64_t flags;
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
	uint64_t generation;
	uint64_t owner;
	uint32_t nritems;
	uint8_t level;
} __attribute__((packed));

struct btrfs_item {
	struct btrfs_disk_key key;
	uint32_t offset;
	uint32_t size;
} __attribute__((packed));

struct btrfs_key_ptr {
	struct btrfs_disk_key key;
	uint64_t blockptr;
	uint64_t generation;
} __attribute__((packed));

struct btrfs_stripe {
	uint64_t devid;
	uint64_t offset;
	uint8_t dev_uuid[BTRFS_UUID_SIZE];
} __attribute__((packed));

struct btrfs_chunk {
	uint64_t length;
	uint64_t owner;
	uint64_t stripe_len;
	uint64_t type;
	uint32_t io_align;
	uint32_t io_width;
	uint32_t sector_size;
	uint16_t num_stripes;
	uint16_t sub_stripes;
	struct btrfs_stripe stripe[];
} __attribute__((packed));

struct btrfs_inode_item {
	uint64_t generation;
	uint64_t transid;
	uint64_t size;
	uint64_t nbytes;
	uint64_t block_group;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;
	uint64_t rdev;
	uint64_t flags;
	uint64_t sequence;
	uint64_t reserved[4];
	struct btrfs_timespec atime;
	struct btrfs_timespec ctime;
	struct btrfs_timespec mtime;
	struct btrfs_timespec otime;
} __attribute__((packed));

struct btrfs_root_item {
	struct btrfs_inode_item inode;
	uint64_t generation;
	uint64_t root_dirid;
	uint64_t bytenr;
	uint64_t byte_limit;
	uint64_t bytes_used;
	uint64_t last_snapshot;
	uint64_t flags;
	uint32_t refs;
	struct btrfs_disk_key drop_progress;
	uint8_t drop_level;
	uint8_t level;
	uint64_t generation_v2;
	uint8_t uuid[BTRFS_UUID_SIZE];
	uint8_t parent_uuid[BTRFS_UUID_SIZE];
	uint8_t received_uuid[BTRFS_UUID_SIZE];
	uint64_t ctransid;
	uint64_t otransid;
	uint64_t stransid;
	uint64_t rtransid;
	struct btrfs_timespec ctime;
	struct btrfs_timespec otime;
	struct btrfs_timespec stime;
	struct btrfs_timespec rtime;
	uint64_t reserved[8];
} __attribute__((packed));

/* The root item grew; items written by old kernels end before generation_v2. */
#define BTRFS_ROOT_ITEM_V1_SIZE 239

struct btrfs_root_ref {
	uint64_t dirid;
	uint64_t sequence;
	uint16_t name_len;
} __attribute__((packed));

struct btrfs_inode_ref {
	uint64_t index;
	uint16_t name_len;
} __attribute__((packed));

struct btrfs_inode_extref {
	uint64_t parent_objectid;
	uint64_t index;
	uint16_t name_len;
} __attribute__((packed));

struct btrfs_dir_item {
	struct btrfs_disk_key location;
	uint64_t transid;
	uint16_t data_len;
	uint16_t name_len;
	uint8_t type;
} __attribute__((packed));

struct btrfs_file_extent_item {
	uint64_t generation;
	uint64_t ram_bytes;
	uint8_t compression;
	uint8_t encryption;
	uint16_t other_encoding;
	uint8_t type;
	/* The fields below are absent for inline extents; data starts here. */
	uint64_t disk_bytenr;
	uint64_t disk_num_bytes;
	uint64_t offset;
	uint64_t num_bytes;
} __attribute__((packed));

#define BTRFS_FILE_EXTENT_INLINE_DATA_START 21

struct btrfs_extent_item {
	uint64_t refs;
	uint64_t generation;
	uint64_t flags;
} __attribute__((packed));

struct btrfs_tree_block_info {
	struct btrfs_disk_key key;
	uint8_t level;
} __attribute__((packed));

struct btrfs_extent_data_ref {
	uint64_t root;
	uint64_t objectid;
	uint64_t offset;
	uint32_t count;
} __attribute__((packed));

struct btrfs_shared_data_ref {
	uint32_t count;
} __attribute__((packed));

struct btrfs_block_group_item {
	uint64_t used;
	uint64_t chunk_objectid;
	uint64_t flags;
} __attribute__((packed));

struct btrfs_free_space_info {
	uint32_t extent_count;
	uint32_t flags;
} __attribute__((packed));

struct btrfs_dev_extent {
	uint64_t chunk_tree;
	uint64_t chunk_objectid;
	uint64_t chunk_offset;
	uint64_t length;
	uint8_t chunk_tree_uuid[BTRFS_UUID_SIZE];
} __attribute__((packed));

struct btrfs_qgroup_status_item {
	uint64_t version;
	uint64_t generation;
	uint64_t flags;
	uint64_t rescan;
} __attribute__((packed));     /* simple quotas append a u64 enable_gen */

struct btrfs_qgroup_info_item {
	uint64_t generation;
	uint64_t rfer;
	uint64_t rfer_cmpr;
	uint64_t excl;
	uint64_t excl_cmpr;
} __attribute__((packed));

struct btrfs_qgroup_limit_item {
	uint64_t flags;
	uint64_t max_rfer;
	uint64_t max_excl;
	uint64_t rsv_rfer;
	uint64_t rsv_excl;
} __attribute__((packed));

_Static_assert(sizeof(struct btrfs_super_block) == BTRFS_SUPER_INFO_SIZE, "superblock size");
_Static_assert(sizeof(struct btrfs_dev_item) == 98, "dev item size");
_Static_assert(sizeof(struct btrfs_header) == 101, "header size");
_Static_assert(sizeof(struct btrfs_root_item) == 439, "root item size");
_Static_assert(sizeof(struct btrfs_inode_item) == 160, "inode item size");
_Static_assert(sizeof(struct btrfs_chunk) == 48, "chunk size");
_Static_assert(sizeof(struct btrfs_file_extent_item) == 53, "file extent size");

/* An unpacked key, in CPU byte order, ordered by (objectid, type, offset). */
struct btrfs_key {
	uint64_t objectid;
	uint8_t type;
	uint64_t offset;
};

static inline void btrfs_disk_key_to_cpu(struct btrfs_key *cpu, const struct btrfs_disk_key *disk)
{
	cpu->objectid = le64toh(disk->objectid);
	cpu->type = disk->type;
	cpu->offset = le64toh(disk->offset);
}

static inline int btrfs_key_cmp(const struct btrfs_key *a, const struct btrfs_key *b)
{
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

static inline uint64_t btrfs_chunk_item_size(int num_stripes)
{
	return sizeof(struct btrfs_chunk) + (uint64_t)num_stripes * sizeof(struct btrfs_stripe);
}

/* Appended for dump-tree's item decoders. */
struct btrfs_extent_inline_ref {
	uint8_t type;
	uint64_t offset;  /* EXTENT_DATA_REF: its btrfs_extent_data_ref starts here instead */
} __attribute__((packed));

struct btrfs_dev_replace_item {
	uint64_t src_devid;
	uint64_t cursor_left;
	uint64_t cursor_right;
	uint64_t cont_reading_from_srcdev_mode;
	uint64_t replace_state;
	uint64_t time_started;
	uint64_t time_stopped;
	uint64_t num_write_errors;
	uint64_t num_uncorrectable_read_errors;
} __attribute__((packed));

struct btrfs_dir_log_item {
	uint64_t end;
} __attribute__((packed));

/* Root tree item (FREE_SPACE UNTYPED <block group>) of the v1 free space cache. */
struct btrfs_free_space_header {
	struct btrfs_disk_key location;
	uint64_t generation;
	uint64_t num_entries;
	uint64_t num_bitmaps;
} __attribute__((packed));

/*
 * The balance item (key BALANCE_OBJECTID, TEMPORARY_ITEM_KEY, 0 in the root
 * tree): a balance that runs, is paused or was interrupted. While it exists
 * the kernel gives every new chunk of a kind it converts the target profile.
 * target holds profile bits, or BTRFS_AVAIL_ALLOC_BIT_SINGLE for single.
 */
#define BTRFS_DISK_BALANCE_ARGS_CONVERT (1ULL << 8)
#define BTRFS_AVAIL_ALLOC_BIT_SINGLE (1ULL << 48)

struct btrfs_disk_balance_args {
	uint64_t profiles;
	uint64_t usage;
	uint64_t devid;
	uint64_t pstart;
	uint64_t pend;
	uint64_t vstart;
	uint64_t vend;
	uint64_t target;
	uint64_t flags;
	uint64_t limit;
	uint32_t stripes_min;
	uint32_t stripes_max;
	uint64_t unused[6];
} __attribute__((packed));

struct btrfs_balance_item {
	uint64_t flags;
	struct btrfs_disk_balance_args data;
	struct btrfs_disk_balance_args meta;
	struct btrfs_disk_balance_args sys;
	uint64_t unused[4];
} __attribute__((packed));

_Static_assert(sizeof(struct btrfs_extent_inline_ref) == 9, "inline ref size");
_Static_assert(sizeof(struct btrfs_balance_item) == 448, "balance item size");
_Static_assert(sizeof(struct btrfs_dev_replace_item) == 72, "dev replace item size");

#endif
