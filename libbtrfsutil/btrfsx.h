/*
 * libbtrfsx: btrfs allocation hints, usage, read policies and offline scrub
 * for programs. No global state, no printing, no exiting: every function
 * returns an enum btrfsx_error and fills caller-owned structures.
 */
#ifndef BTRFSX_H
#define BTRFSX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BTRFSX_VERSION_MAJOR 0
#define BTRFSX_VERSION_MINOR 1
#define BTRFSX_VERSION_PATCH 0

enum btrfsx_error {
	BTRFSX_OK = 0,
	BTRFSX_ERROR_NO_MEMORY,
	BTRFSX_ERROR_INVALID_ARGUMENT,
	BTRFSX_ERROR_NOT_BTRFS,
	BTRFSX_ERROR_CORRUPTED,
	BTRFSX_ERROR_IO,
	BTRFSX_ERROR_MISSING_DEVICE,
	BTRFSX_ERROR_BUSY,
	BTRFSX_ERROR_PERMISSION,
	BTRFSX_ERROR_NOT_FOUND,
	BTRFSX_ERROR_OTHER,
};

/**
 * btrfsx_strerror() - describe an error code.
 * @err: a value returned by a libbtrfsx function.
 *
 * Return: a static string, never NULL.
 * Since: 0.1
 */
const char *btrfsx_strerror(enum btrfsx_error err);

/**
 * btrfsx_last_error_message() - the detailed message of the calling thread's
 * last failure, naming the object and the reason.
 *
 * Return: a string valid until the thread's next libbtrfsx call.
 * Since: 0.1
 */
const char *btrfsx_last_error_message(void);

/* What the superblocks of an unmounted filesystem say. */
struct btrfsx_fs_info {
	uint8_t fsid[16];
	uint8_t metadata_uuid[16];
	char label[256];
	uint64_t generation;
	uint64_t num_devices;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint32_t nodesize;
	uint32_t sectorsize;
	uint16_t csum_type;
	char csum_name[16];
};

/**
 * btrfsx_fs_info_offline() - read the identity of an unmounted filesystem.
 * @paths: member devices or image files; other members are found by fsid.
 * @nr_paths: how many paths.
 * @info: filled on success.
 *
 * Opens the devices read-only, verifies the superblocks and the chunk tree.
 * Return: BTRFSX_OK or an error; see btrfsx_last_error_message().
 * Since: 0.1
 */
enum btrfsx_error btrfsx_fs_info_offline(const char *const *paths, size_t nr_paths,
					 struct btrfsx_fs_info *info);

#ifdef __cplusplus
}
#endif

#endif
