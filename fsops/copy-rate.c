/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The copy rate of relocations, per filesystem: what relocate/ measured,
 * what the misplaced report's estimate divides by.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <uuid/uuid.h>

#include "common/atomic-file.h"
#include "common/error.h"
#include "fsops/copy-rate.h"

static void rate_path(const char *state_dir, const uint8_t fsid[16], char *buf, size_t len)
{
	char uuid[37];

	uuid_unparse_lower(fsid, uuid);
	snprintf(buf, len, "%s/relocate/%s.json", state_dir, uuid);
}

int bx_copy_rate_load(const char *state_dir, const uint8_t fsid[16], uint64_t *bytes,
		      double *seconds)
{
	struct json_object *root, *jb, *js;
	char path[PATH_MAX];
	FILE *fp;

	*bytes = 0;
	*seconds = 0;
	rate_path(state_dir, fsid, path, sizeof(path));
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? 0 : bx_error(-errno, "%s: %m", path);
	fclose(fp);
	root = json_object_from_file(path);
	if (!root || !json_object_object_get_ex(root, "bytes", &jb) ||
	    !json_object_object_get_ex(root, "seconds", &js) ||
	    !json_object_is_type(jb, json_type_int) ||
	    (!json_object_is_type(js, json_type_double) && !json_object_is_type(js, json_type_int)) ||
	    json_object_get_int64(jb) < 0 || json_object_get_double(js) < 0) {
		json_object_put(root);
		return bx_error(-EUCLEAN, "%s: not a relocation record", path);
	}
	*bytes = (uint64_t)json_object_get_int64(jb);
	*seconds = json_object_get_double(js);
	json_object_put(root);
	return 0;
}

struct rate_record {
	uint64_t bytes;
	double seconds;
};

static int write_rate(FILE *fp, const struct rate_record *r)
{
	struct json_object *root = json_object_new_object();

	if (!root || json_object_object_add(root, "bytes", json_object_new_int64((int64_t)r->bytes)) ||
	    json_object_object_add(root, "seconds", json_object_new_double(r->seconds))) {
		json_object_put(root);
		return bx_error(-ENOMEM, "out of memory");
	}
	fprintf(fp, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	json_object_put(root);
	return 0;
}

int bx_copy_rate_add(const char *state_dir, const uint8_t fsid[16], uint64_t bytes,
		     double seconds)
{
	struct bx_atomic_file af;
	struct rate_record r;
	char path[PATH_MAX];
	int ret;

	ret = bx_copy_rate_load(state_dir, fsid, &r.bytes, &r.seconds);
	if (ret) {
		/* A damaged record is replaced by this run's figures. */
		bx_error_clear();
		r.bytes = 0;
		r.seconds = 0;
	}
	r.bytes += bytes;
	r.seconds += seconds;
	snprintf(path, sizeof(path), "%s/relocate", state_dir);
	ret = bx_mkdir_parents(path);
	if (!ret) {
		rate_path(state_dir, fsid, path, sizeof(path));
		ret = bx_atomic_begin(&af, path, 0644);
	}
	if (ret)
		return ret;
	ret = write_rate(af.fp, &r);
	if (ret) {
		bx_atomic_abort(&af);
		return ret;
	}
	return bx_atomic_commit(&af);
}
