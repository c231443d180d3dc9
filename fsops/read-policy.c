/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Read policies: kernel interface detection, validation, write and read-back, persistence. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "common/atomic-file.h"
#include "common/error.h"
#include "fsops/read-policy.h"
#include "common/units.h"
#include "format/profiles.h"

#define NEW_POLICIES_KERNEL "Linux 6.14 or later built with CONFIG_BTRFS_EXPERIMENTAL=y"

static const char *const kind_names[] = {
	[BX_RP_PID] = "pid",
	[BX_RP_ROUND_ROBIN] = "round-robin",
	[BX_RP_DEVID] = "devid",
};

const char *bx_rp_iface_name(enum bx_rp_iface iface)
{
	switch (iface) {
	case BX_RP_IFACE_MAINLINE:
		return "read_policy";
	case BX_RP_IFACE_EARLIER:
		return "read_policies";
	default:
		return "none";
	}
}

/* ---- small file helpers ---- */

static void fs_path(char *buf, size_t len, const char *sysfs_root, const char *fsid,
		    const char *rel)
{
	snprintf(buf, len, "%s/fs/btrfs/%s%s%s", sysfs_root, fsid, rel ? "/" : "", rel ? rel : "");
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Reads a small text file, trailing whitespace removed. Negative errno, no message. */
static int read_text(const char *path, char *buf, size_t len)
{
	ssize_t got;
	size_t used = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (used + 1 < len) {
		got = read(fd, buf + used, len - 1 - used);
		if (got < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	buf[used] = '\0';
	while (used && isspace((unsigned char)buf[used - 1]))
		buf[--used] = '\0';
	return 0;
}

/* Writes @str to a sysfs attribute in one write. Negative errno, no message. */
static int write_text(const char *path, const char *str)
{
	size_t len = strlen(str);
	ssize_t done;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	done = write(fd, str, len);
	if (done < 0 || (size_t)done != len) {
		int err = done < 0 ? -errno : -EIO;

		close(fd);
		return err;
	}
	if (close(fd) < 0)
		return -errno;
	return 0;
}

/* ---- values ---- */

static int kind_of(const char *name, enum bx_rp_kind *kind)
{
	if (!strcmp(name, "pid"))
		*kind = BX_RP_PID;
	else if (!strcmp(name, "round-robin") || !strcmp(name, "roundrobin"))
		*kind = BX_RP_ROUND_ROBIN;
	else if (!strcmp(name, "devid"))
		*kind = BX_RP_DEVID;
	else
		return -1;
	return 0;
}

static bool valid_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
			return false;
	return true;
}

int bx_rp_parse(const char *str, struct bx_rp_value *value)
{
	char name[32];
	const char *colon = strchr(str, ':');
	size_t name_len = colon ? (size_t)(colon - str) : strlen(str);
	int ret;

	memset(value, 0, sizeof(*value));
	if (name_len == 0 || name_len >= sizeof(name))
		return bx_error(-EINVAL, "invalid read policy '%s'", str);
	memcpy(name, str, name_len);
	name[name_len] = '\0';
	if (!valid_word(name))
		return bx_error(-EINVAL, "invalid read policy '%s'", str);
	if (kind_of(name, &value->kind)) {
		value->kind = BX_RP_OTHER;
		snprintf(value->name, sizeof(value->name), "%s", name);
	} else {
		snprintf(value->name, sizeof(value->name), "%s", kind_names[value->kind]);
	}
	if (!colon)
		return 0;
	value->has_arg = true;
	switch (value->kind) {
	case BX_RP_PID:
		return bx_error(-EINVAL, "invalid read policy '%s': pid takes no argument", str);
	case BX_RP_DEVID:
		ret = bx_parse_u64(colon + 1, &value->arg);
		if (ret || !value->arg)
			return bx_error(-EINVAL, "invalid read policy '%s': '%s' is not a device id",
					str, colon + 1);
		return 0;
	default:
		ret = bx_parse_size(colon + 1, &value->arg);
		if (ret)
			return bx_error_wrap(ret, "invalid read policy '%s'", str);
		if (!value->arg)
			return bx_error(-EINVAL, "invalid read policy '%s': the size must be greater than 0",
					str);
		return 0;
	}
}

void bx_rp_format(const struct bx_rp_value *value, char *buf, size_t len)
{
	if (value->has_arg)
		snprintf(buf, len, "%s:%llu", value->name, (unsigned long long)value->arg);
	else
		snprintf(buf, len, "%s", value->name);
}

/* One token of a policy file: "[round-robin:262144]", "devid:1", "pid". */
static int parse_token(const char *token, char *kernel_name, size_t name_len,
		       struct bx_rp_value *value, bool *active)
{
	char buf[64];
	size_t len = strlen(token);
	char *colon;

	*active = false;
	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, token, len + 1);
	if (buf[0] == '[' && len >= 2 && buf[len - 1] == ']') {
		*active = true;
		buf[len - 1] = '\0';
		memmove(buf, buf + 1, len - 1);
	}
	memset(value, 0, sizeof(*value));
	colon = strchr(buf, ':');
	if (colon) {
		char *end;

		*colon = '\0';
		errno = 0;
		value->arg = strtoull(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end)
			return -EINVAL;
		value->has_arg = true;
	}
	if (!valid_word(buf) || strlen(buf) >= name_len)
		return -EINVAL;
	snprintf(kernel_name, name_len, "%s", buf);
	if (kind_of(buf, &value->kind)) {
		value->kind = BX_RP_OTHER;
		snprintf(value->name, sizeof(value->name), "%s", buf);
	} else {
		snprintf(value->name, sizeof(value->name), "%s", kind_names[value->kind]);
	}
	return 0;
}

static void add_offer(struct bx_rp_state *st, const char *kernel_name,
		      const struct bx_rp_value *value)
{
	if (st->nr_offered == BX_RP_MAX_OFFERED)
		return;
	snprintf(st->offered[st->nr_offered].kernel_name,
		 sizeof(st->offered[0].kernel_name), "%s", kernel_name);
	st->offered[st->nr_offered].value = *value;
	st->nr_offered++;
}

/* Parses the policy file's text into @st: the choices, the active one in brackets. */
static int parse_policy_text(struct bx_rp_state *st, const char *path)
{
	char copy[sizeof(st->raw)], *save = NULL, *tok;
	int nr_active = 0;

	snprintf(copy, sizeof(copy), "%s", st->raw);
	for (tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		struct bx_rp_value value;
		char kernel_name[32];
		bool active;

		if (parse_token(tok, kernel_name, sizeof(kernel_name), &value, &active))
			return bx_error(-EPROTO, "%s: cannot parse '%s'", path, st->raw);
		if (active) {
			st->active = value;
			nr_active++;
		}
		add_offer(st, kernel_name, &value);
	}
	if (st->nr_offered == 0)
		return bx_error(-EPROTO, "%s: empty", path);
	/* A file that shows a single word without brackets shows just the active policy. */
	if (nr_active == 0 && st->nr_offered == 1) {
		st->active = st->offered[0].value;
		nr_active = 1;
	}
	if (nr_active != 1)
		return bx_error(-EPROTO, "%s: cannot tell the active policy from '%s'", path,
				st->raw);
	return 0;
}

int bx_rp_read(const char *sysfs_root, const char *fsid, struct bx_rp_state *st)
{
	char path[PATH_MAX];
	int ret;

	memset(st, 0, sizeof(*st));
	fs_path(path, sizeof(path), sysfs_root, fsid, NULL);
	if (!exists(path))
		return bx_error_as(-ENOENT, BX_ERROR_KIND_NOT_MOUNTED,
				   "%s: no such directory: is filesystem %s mounted?", path, fsid);
	fs_path(path, sizeof(path), sysfs_root, fsid, "read_policies/roundrobin_nonlocal_inc_mixed_only");
	st->has_tunables = exists(path);
	fs_path(path, sizeof(path), sysfs_root, fsid, "read_policy");
	if (exists(path)) {
		st->iface = BX_RP_IFACE_MAINLINE;
	} else {
		fs_path(path, sizeof(path), sysfs_root, fsid, "read_policies/policy");
		if (exists(path))
			st->iface = BX_RP_IFACE_EARLIER;
	}
	if (st->iface == BX_RP_IFACE_NONE) {
		/* Before 5.11 there was no choice: reads always went by pid. */
		snprintf(st->raw, sizeof(st->raw), "%s", "");
		st->active.kind = BX_RP_PID;
		snprintf(st->active.name, sizeof(st->active.name), "pid");
		add_offer(st, "pid", &st->active);
		return 0;
	}
	ret = read_text(path, st->raw, sizeof(st->raw));
	if (ret)
		return bx_error(ret, "%s: %s", path, strerror(-ret));
	ret = parse_policy_text(st, path);
	if (ret)
		return ret;
	/* The earlier patches' tunables exist only with their roundrobin policy. */
	if (st->iface == BX_RP_IFACE_EARLIER && st->has_tunables &&
	    !bx_rp_offers(st, BX_RP_ROUND_ROBIN, NULL)) {
		struct bx_rp_value rr = { .kind = BX_RP_ROUND_ROBIN, .name = "round-robin" };

		add_offer(st, "roundrobin", &rr);
	}
	return 0;
}

static int find_offer(const struct bx_rp_state *st, enum bx_rp_kind kind, const char *name)
{
	for (size_t i = 0; i < st->nr_offered; i++) {
		const struct bx_rp_value *v = &st->offered[i].value;

		if (v->kind != kind)
			continue;
		if (kind == BX_RP_OTHER && (!name || strcmp(v->name, name)))
			continue;
		return (int)i;
	}
	return -1;
}

bool bx_rp_offers(const struct bx_rp_state *st, enum bx_rp_kind kind, const char *name)
{
	return find_offer(st, kind, name) >= 0;
}

static void offered_list(const struct bx_rp_state *st, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < st->nr_offered; i++) {
		size_t used = strlen(buf);

		snprintf(buf + used, len - used, "%s%s", i ? ", " : "", st->offered[i].kernel_name);
	}
}

static void devid_list(const struct bx_mounted_fs *fs, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < fs->nr_devs; i++) {
		size_t used = strlen(buf);

		snprintf(buf + used, len - used, "%s%llu", i ? " " : "",
			 (unsigned long long)fs->devs[i].devid);
	}
}

int bx_rp_check(const struct bx_rp_state *st, const struct bx_mounted_fs *fs,
		const struct bx_rp_value *v)
{
	char req[64], offered[256], devids[256];

	bx_rp_format(v, req, sizeof(req));
	offered_list(st, offered, sizeof(offered));
	if (st->iface == BX_RP_IFACE_NONE && v->kind != BX_RP_PID)
		return bx_error(-EOPNOTSUPP,
				"this kernel has no read policy interface (it came with Linux 5.11) and always reads by pid; '%s' needs " NEW_POLICIES_KERNEL,
				v->name);
	if (!bx_rp_offers(st, v->kind, v->name)) {
		if (v->kind == BX_RP_OTHER)
			return bx_error(-EINVAL,
					"unknown read policy '%s' (this kernel offers: %s)",
					v->name, offered);
		if (st->nr_offered == 1 && st->offered[0].value.kind == BX_RP_PID)
			return bx_error(-EOPNOTSUPP,
					"this kernel offers only the 'pid' read policy; '%s' needs " NEW_POLICIES_KERNEL,
					v->name);
		return bx_error(-EOPNOTSUPP,
				"this kernel does not offer the '%s' read policy (it offers: %s); '%s' needs " NEW_POLICIES_KERNEL,
				v->name, offered, v->name);
	}
	if (!v->has_arg)
		return 0;
	if (st->iface != BX_RP_IFACE_MAINLINE)
		return bx_error(-EOPNOTSUPP,
				"the read_policies/ interface of this kernel takes no argument: use '%s' (and its roundrobin_* tunables)",
				v->name);
	switch (v->kind) {
	case BX_RP_ROUND_ROBIN:
		if (fs->sectorsize && v->arg % fs->sectorsize)
			return bx_error(-EINVAL,
					"invalid read policy '%s': %llu is not a multiple of the sector size %u",
					req, (unsigned long long)v->arg, fs->sectorsize);
		if (v->arg > UINT32_MAX)
			return bx_error(-EINVAL,
					"invalid read policy '%s': the size must be below 4GiB", req);
		return 0;
	case BX_RP_DEVID:
		if (!bx_mounted_has_devid(fs, v->arg)) {
			devid_list(fs, devids, sizeof(devids));
			return bx_error(-EINVAL,
					"invalid read policy '%s': device %llu is not part of filesystem %s (its devices: %s)",
					req, (unsigned long long)v->arg, fs->fsid_str, devids);
		}
		return 0;
	default:
		return 0;
	}
}

static bool same_policy(const struct bx_rp_value *want, const struct bx_rp_value *have)
{
	if (want->kind != have->kind)
		return false;
	if (want->kind == BX_RP_OTHER && strcmp(want->name, have->name))
		return false;
	if (want->has_arg && have->has_arg && want->arg != have->arg)
		return false;
	if (want->has_arg && !have->has_arg)
		return false;
	return true;
}

static bool exact_policy(const struct bx_rp_value *want, const struct bx_rp_value *have)
{
	return same_policy(want, have) && want->has_arg == have->has_arg;
}

int bx_rp_set(const char *sysfs_root, const struct bx_mounted_fs *fs,
	      const struct bx_rp_value *v, struct bx_rp_state *after, bool *changed)
{
	struct bx_rp_state st, local;
	char path[PATH_MAX], text[80];
	int ret, idx;

	if (changed)
		*changed = false;
	if (!after)
		after = &local;
	ret = bx_rp_read(sysfs_root, fs->fsid_str, &st);
	if (ret)
		return ret;
	ret = bx_rp_check(&st, fs, v);
	if (ret)
		return ret;
	*after = st;
	/*
	 * Nothing to write when exactly this is active. An argument-less request
	 * is written even over the same policy with an argument: the kernel then
	 * picks its default argument (256KiB, the latest device), as asked.
	 */
	if (st.iface == BX_RP_IFACE_NONE || exact_policy(v, &st.active))
		return 0;
	idx = find_offer(&st, v->kind, v->name);
	if (v->has_arg)
		snprintf(text, sizeof(text), "%s:%llu", st.offered[idx].kernel_name,
			 (unsigned long long)v->arg);
	else
		snprintf(text, sizeof(text), "%s", st.offered[idx].kernel_name);
	fs_path(path, sizeof(path), sysfs_root, fs->fsid_str,
		st.iface == BX_RP_IFACE_MAINLINE ? "read_policy" : "read_policies/policy");
	ret = write_text(path, text);
	if (ret == -EINVAL)
		return bx_error(ret, "%s: the kernel rejected read policy '%s' (EINVAL)", path, text);
	if (ret)
		return bx_error(ret, "%s: cannot write '%s': %s", path, text, strerror(-ret));
	if (changed)
		*changed = true;
	ret = bx_rp_read(sysfs_root, fs->fsid_str, after);
	if (ret)
		return bx_error_wrap(ret, "reading back the read policy");
	if (!same_policy(v, &after->active))
		return bx_error(-EIO, "%s: wrote '%s' but the kernel now shows '%s'", path, text,
				after->raw);
	return 0;
}

/* ---- RAID1-family block groups ---- */

/* The RAID1-family profiles, whose reads the policy spreads. */
static const uint64_t mirrored_profiles[] = {
	BTRFS_BLOCK_GROUP_RAID1, BTRFS_BLOCK_GROUP_RAID1C3, BTRFS_BLOCK_GROUP_RAID1C4,
	BTRFS_BLOCK_GROUP_RAID10,
};

static void add_mirrored(struct bx_rp_mirrored *m, const char *type, const char *profile)
{
	for (size_t i = 0; i < m->nr; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%s/%s", type, profile);
		if (!strcmp(m->names[i], name))
			return;
	}
	if (m->nr < BX_RP_MAX_MIRRORED)
		snprintf(m->names[m->nr++], sizeof(m->names[0]), "%s/%s", type, profile);
}

int bx_rp_mirrored(const char *sysfs_root, const struct bx_mounted_fs *fs,
		   struct bx_rp_mirrored *m)
{
	static const char *const types[] = { "data", "metadata", "system", "mixed" };
	char path[PATH_MAX];
	uint64_t flags[64];
	size_t nr;
	int ret;

	memset(m, 0, sizeof(*m));
	fs_path(path, sizeof(path), sysfs_root, fs->fsid_str, "allocation");
	if (exists(path)) {
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			for (size_t p = 0; p < sizeof(mirrored_profiles) / sizeof(mirrored_profiles[0]); p++) {
				char rel[64];

				const char *name = bx_profile_name(mirrored_profiles[p]);

				snprintf(rel, sizeof(rel), "allocation/%s/%s", types[t], name);
				fs_path(path, sizeof(path), sysfs_root, fs->fsid_str, rel);
				if (exists(path))
					add_mirrored(m, types[t], name);
			}
		}
		return 0;
	}
	ret = bx_mounted_space_flags(fs, flags, sizeof(flags) / sizeof(flags[0]), &nr);
	if (ret)
		return ret;
	for (size_t i = 0; i < nr; i++) {
		const char *type;

		if ((flags[i] & BTRFS_BLOCK_GROUP_DATA) && (flags[i] & BTRFS_BLOCK_GROUP_METADATA))
			type = "mixed";
		else if (flags[i] & BTRFS_BLOCK_GROUP_DATA)
			type = "data";
		else if (flags[i] & BTRFS_BLOCK_GROUP_METADATA)
			type = "metadata";
		else if (flags[i] & BTRFS_BLOCK_GROUP_SYSTEM)
			type = "system";
		else
			continue;
		if (bx_profile_is_mirrored(flags[i]))
			add_mirrored(m, type, bx_profile_name(flags[i]));
	}
	return 0;
}

/* ---- module parameter btrfs.read_policy= ---- */

static bool find_param(const char *text, const char *prefix, char *value, size_t len)
{
	const char *p = text;
	size_t plen = strlen(prefix);

	while ((p = strstr(p, prefix))) {
		if (p == text || isspace((unsigned char)p[-1])) {
			size_t n = strcspn(p + plen, " \t\n");

			snprintf(value, len, "%.*s", (int)n, p + plen);
			return true;
		}
		p += plen;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int bx_rp_module_default(const char *cmdline_path, const char *modprobe_dir, char *value,
			 size_t value_len, char *source, size_t source_len)
{
	char text[4096];
	char *names[256];
	size_t nr = 0;
	int found = 0;
	DIR *dir;
	struct dirent *de;

	if (cmdline_path && !read_text(cmdline_path, text, sizeof(text)) &&
	    find_param(text, "btrfs.read_policy=", value, value_len)) {
		snprintf(source, source_len, "%s", cmdline_path);
		return 1;
	}
	if (!modprobe_dir)
		return 0;
	dir = opendir(modprobe_dir);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && nr < 256) {
		size_t n = strlen(de->d_name);

		if (n > 5 && !strcmp(de->d_name + n - 5, ".conf"))
			names[nr++] = strdup(de->d_name);
	}
	closedir(dir);
	qsort(names, nr, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < nr; i++) {
		char path[PATH_MAX], line[1024];
		FILE *fp;

		if (!names[i] || found)
			goto next;
		snprintf(path, sizeof(path), "%s/%s", modprobe_dir, names[i]);
		fp = fopen(path, "re");
		if (!fp)
			goto next;
		while (!found && fgets(line, sizeof(line), fp)) {
			char *p = line + strspn(line, " \t");

			if (strncmp(p, "options", 7) || !isspace((unsigned char)p[7]))
				continue;
			p += 7 + strspn(p + 7, " \t");
			if (strncmp(p, "btrfs", 5) || !isspace((unsigned char)p[5]))
				continue;
			if (find_param(p + 5, "read_policy=", value, value_len)) {
				snprintf(source, source_len, "%s", path);
				found = 1;
			}
		}
		fclose(fp);
next:
		free(names[i]);
	}
	return found;
}

/*
 * The kernel's reading of read_policy= (memparse): a number in any base C
 * takes, an optional K, M, G, T, P or E (either case), trailing spaces.
 * False when the kernel would refuse it.
 */
static bool kernel_number(const char *str, uint64_t *value)
{
	static const char suffixes[] = "kmgtpe";
	const char *at;
	char *end;

	if (!isdigit((unsigned char)*str))
		return false;
	errno = 0;
	*value = strtoull(str, &end, 0);
	if (errno)
		return false;
	at = *end ? strchr(suffixes, tolower((unsigned char)*end)) : NULL;
	if (at) {
		unsigned int shift = 10 * (unsigned int)(at - suffixes + 1);

		if (*value > (UINT64_MAX >> shift))
			return false;
		*value <<= shift;
		end++;
	}
	while (isspace((unsigned char)*end))
		end++;
	return !*end && *value > 0 && *value <= INT64_MAX;
}

bool bx_rp_module_default_check(const char *value, const char *source,
				const struct bx_mounted_fs *fs)
{
	const char *colon = strchr(value, ':');
	size_t name_len = colon ? (size_t)(colon - value) : strlen(value);
	uint64_t arg = 0;
	enum bx_rp_kind kind;
	char name[32];

	snprintf(name, sizeof(name), "%.*s", (int)name_len, value);
	if (name_len >= sizeof(name) || kind_of(name, &kind) || !strcmp(name, "roundrobin") ||
	    (colon && !kernel_number(colon + 1, &arg))) {
		bx_warn("%s: btrfs.read_policy=%s: the kernel refuses to load the btrfs module with it (EINVAL; it takes pid, round-robin[:<bytes>], devid[:<devid>])",
			source, value);
		return true;
	}
	if (kind == BX_RP_ROUND_ROBIN && colon) {
		uint32_t kept = (uint32_t)arg;
		uint32_t sector = fs->sectorsize ? fs->sectorsize : 4096;

		if (arg > UINT32_MAX) {
			bx_warn("%s: btrfs.read_policy=%s: 4GiB or more; the kernel keeps it in 32 bits as %u%s",
				source, value, kept,
				kept < sector ? ", and the first RAID1 read of every filesystem divides by zero" :
				", not the size asked for");
			return true;
		}
		if (arg < sector) {
			bx_warn("%s: btrfs.read_policy=%s: below the sector size %u of %s; the kernel takes it unrounded, and the first RAID1 read divides by zero (use a multiple of %u)",
				source, value, sector, fs->path, sector);
			return true;
		}
	}
	if (kind == BX_RP_DEVID && colon && !bx_mounted_has_devid(fs, arg)) {
		bx_warn("%s: btrfs.read_policy=%s: no device %llu in filesystem %s; its reads fall back to each chunk's first copy",
			source, value, (unsigned long long)arg, fs->fsid_str);
		return true;
	}
	return false;
}

/* ---- tunables ---- */

const struct bx_rp_tunable bx_rp_tunables[] = {
	{ "roundrobin_nonlocal_inc_mixed_only", true, 1,
	  "add the non-local penalty only when rotational and non-rotational devices are mixed" },
	{ "roundrobin_nonrot_nonlocal_inc", false, 0,
	  "penalty added to a non-rotational device's load for a non-local read" },
	{ "roundrobin_rot_nonlocal_inc", false, 1,
	  "penalty added to a rotational device's load for a non-local read" },
	{ NULL },
};

const struct bx_rp_tunable *bx_rp_tunable_find(const char *name)
{
	for (const struct bx_rp_tunable *t = bx_rp_tunables; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	bx_error(-EINVAL,
		 "unknown tunable '%s' (roundrobin_nonlocal_inc_mixed_only, roundrobin_nonrot_nonlocal_inc, roundrobin_rot_nonlocal_inc)",
		 name);
	return NULL;
}

int bx_rp_tunable_parse(const struct bx_rp_tunable *t, const char *str, uint64_t *value)
{
	static const char *const yes[] = { "1", "y", "yes", "true", "on", NULL };
	static const char *const no[] = { "0", "n", "no", "false", "off", NULL };

	if (t->is_bool) {
		for (int i = 0; yes[i]; i++) {
			if (!strcasecmp(str, yes[i])) {
				*value = 1;
				return 0;
			}
			if (!strcasecmp(str, no[i])) {
				*value = 0;
				return 0;
			}
		}
		return bx_error(-EINVAL, "%s: invalid value '%s' (0 or 1)", t->name, str);
	}
	if (!isdigit((unsigned char)str[0]) || bx_parse_u64(str, value) || *value > UINT32_MAX)
		return bx_error(-EINVAL, "%s: invalid value '%s' (a number from 0 to 4294967295)",
				t->name, str);
	return 0;
}

static int tunable_path(const char *sysfs_root, const char *fsid, const struct bx_rp_tunable *t,
			char *path, size_t len)
{
	char rel[128];

	fs_path(path, len, sysfs_root, fsid, NULL);
	if (!exists(path))
		return bx_error_as(-ENOENT, BX_ERROR_KIND_NOT_MOUNTED,
				   "%s: no such directory: is filesystem %s mounted?", path, fsid);
	snprintf(rel, sizeof(rel), "read_policies/%s", t->name);
	fs_path(path, len, sysfs_root, fsid, rel);
	if (!exists(path))
		return bx_error(-EOPNOTSUPP,
				"this kernel has no %s tunable: the roundrobin_* tunables come only with the earlier round-robin patches (read_policies/), not with mainline Linux",
				t->name);
	return 0;
}

int bx_rp_tunable_get(const char *sysfs_root, const char *fsid, const struct bx_rp_tunable *t,
		      uint64_t *value)
{
	char path[PATH_MAX], text[64];
	char *end;
	int ret;

	ret = tunable_path(sysfs_root, fsid, t, path, sizeof(path));
	if (ret)
		return ret;
	ret = read_text(path, text, sizeof(text));
	if (ret)
		return bx_error(ret, "%s: %s", path, strerror(-ret));
	errno = 0;
	*value = strtoull(text, &end, 10);
	if (errno || end == text || *end)
		return bx_error(-EPROTO, "%s: cannot parse '%s'", path, text);
	return 0;
}

int bx_rp_tunable_set(const char *sysfs_root, const char *fsid, const struct bx_rp_tunable *t,
		      uint64_t value)
{
	char path[PATH_MAX], text[32];
	uint64_t back;
	int ret;

	if (value > (t->is_bool ? 1 : UINT32_MAX))
		return bx_error(-EINVAL, "%s: invalid value %llu", t->name,
				(unsigned long long)value);
	ret = tunable_path(sysfs_root, fsid, t, path, sizeof(path));
	if (ret)
		return ret;
	snprintf(text, sizeof(text), "%llu", (unsigned long long)value);
	ret = write_text(path, text);
	if (ret == -EINVAL)
		return bx_error(ret, "%s: the kernel rejected '%s' (EINVAL)", path, text);
	if (ret)
		return bx_error(ret, "%s: cannot write '%s': %s", path, text, strerror(-ret));
	ret = bx_rp_tunable_get(sysfs_root, fsid, t, &back);
	if (ret)
		return bx_error_wrap(ret, "reading back %s", t->name);
	if (back != value)
		return bx_error(-EIO, "%s: wrote %llu but the kernel now shows %llu", path,
				(unsigned long long)value, (unsigned long long)back);
	return 0;
}

/* ---- persistence ---- */

static int config_path(const char *config_dir, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", config_dir, BX_RP_CONFIG_FILE) >= len)
		return bx_error(-ENAMETOOLONG, "%s: path too long", config_dir);
	return 0;
}

static int append_record(struct bx_rp_config *cfg, const struct bx_rp_record *rec)
{
	struct bx_rp_record *grown = realloc(cfg->records, (cfg->nr + 1) * sizeof(*grown));

	if (!grown)
		return bx_error(-ENOMEM, "out of memory");
	cfg->records = grown;
	cfg->records[cfg->nr++] = *rec;
	return 0;
}

/* Parses "<fsid> <policy>"; 0 on success, otherwise a reason for the warning. */
static const char *parse_record(const char *line, struct bx_rp_record *rec)
{
	char fsid[64], policy[80], extra[2];
	struct bx_rp_value value;
	uuid_t uu;
	int n = sscanf(line, "%63s %79s %1s", fsid, policy, extra);

	if (n != 2)
		return "expected '<fsid> <policy>'";
	if (strlen(fsid) != 36 || uuid_parse(fsid, uu))
		return "not a filesystem UUID";
	n = bx_rp_parse(policy, &value);
	bx_error_clear();
	if (n)
		return "not a read policy";
	uuid_unparse_lower(uu, rec->fsid);
	bx_rp_format(&value, rec->policy, sizeof(rec->policy));
	return NULL;
}

int bx_rp_config_load(const char *config_dir, struct bx_rp_config *cfg)
{
	char path[PATH_MAX];
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	int lineno = 0, ret;
	FILE *fp;

	memset(cfg, 0, sizeof(*cfg));
	ret = config_path(config_dir, path, sizeof(path));
	if (ret)
		return ret;
	fp = fopen(path, "re");
	if (!fp) {
		if (errno == ENOENT)
			return 0;
		return bx_error(-errno, "%s: %m", path);
	}
	while ((got = getline(&line, &cap, fp)) > 0) {
		struct bx_rp_record rec;
		const char *p = line + strspn(line, " \t");
		const char *why;

		lineno++;
		while (got && (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		memset(&rec, 0, sizeof(rec));
		if (*p == '#' || *p == '\0') {
			why = NULL;
			rec.verbatim = strdup(line);
		} else if ((why = parse_record(p, &rec))) {
			bx_warn("%s:%d: ignored (%s): %s", path, lineno, why, line);
			rec.verbatim = strdup(line);
		} else if (bx_rp_config_find(cfg, rec.fsid)) {
			bx_warn("%s:%d: ignored (a second record for %s)", path, lineno, rec.fsid);
			rec.fsid[0] = '\0';
			rec.verbatim = strdup(line);
		}
		if ((!rec.fsid[0] && !rec.verbatim) || append_record(cfg, &rec)) {
			free(rec.verbatim);
			free(line);
			fclose(fp);
			bx_rp_config_free(cfg);
			return bx_error(-ENOMEM, "out of memory");
		}
	}
	free(line);
	if (ferror(fp)) {
		ret = bx_error(-EIO, "%s: read error", path);
		fclose(fp);
		bx_rp_config_free(cfg);
		return ret;
	}
	fclose(fp);
	return 0;
}

int bx_rp_config_save(const char *config_dir, const struct bx_rp_config *cfg)
{
	bool header = cfg->nr == 0 || !cfg->records[0].verbatim;
	struct bx_atomic_file af;
	char path[PATH_MAX];
	int ret;

	ret = config_path(config_dir, path, sizeof(path));
	if (!ret)
		ret = bx_mkdir_parents(config_dir);
	if (!ret)
		ret = bx_atomic_begin(&af, path, 0644);
	if (ret)
		return ret;
	if (header)
		fputs("# btrfsx read policies, applied on every mount: <fsid> <policy>\n"
		      "# Written by 'btrfsx read-policy set --persistent'; see btrfsx-read-policy(8).\n",
		      af.fp);
	for (size_t i = 0; i < cfg->nr; i++) {
		const struct bx_rp_record *rec = &cfg->records[i];

		if (rec->verbatim)
			fprintf(af.fp, "%s\n", rec->verbatim);
		else
			fprintf(af.fp, "%s %s\n", rec->fsid, rec->policy);
	}
	return bx_atomic_commit(&af);
}

const struct bx_rp_record *bx_rp_config_find(const struct bx_rp_config *cfg, const char *fsid)
{
	for (size_t i = 0; i < cfg->nr; i++)
		if (!cfg->records[i].verbatim && !strcasecmp(cfg->records[i].fsid, fsid))
			return &cfg->records[i];
	return NULL;
}

int bx_rp_config_put(struct bx_rp_config *cfg, const char *fsid, const char *policy)
{
	struct bx_rp_record rec;
	struct bx_rp_record *found = (struct bx_rp_record *)bx_rp_config_find(cfg, fsid);

	if (found) {
		snprintf(found->policy, sizeof(found->policy), "%s", policy);
		return 0;
	}
	memset(&rec, 0, sizeof(rec));
	snprintf(rec.fsid, sizeof(rec.fsid), "%s", fsid);
	snprintf(rec.policy, sizeof(rec.policy), "%s", policy);
	return append_record(cfg, &rec);
}

int bx_rp_config_remove(struct bx_rp_config *cfg, const char *fsid)
{
	const struct bx_rp_record *found = bx_rp_config_find(cfg, fsid);
	size_t i;

	if (!found)
		return 0;
	i = (size_t)(found - cfg->records);
	memmove(&cfg->records[i], &cfg->records[i + 1], (cfg->nr - i - 1) * sizeof(cfg->records[0]));
	cfg->nr--;
	return 1;
}

void bx_rp_config_free(struct bx_rp_config *cfg)
{
	for (size_t i = 0; i < cfg->nr; i++)
		free(cfg->records[i].verbatim);
	free(cfg->records);
	cfg->records = NULL;
	cfg->nr = 0;
}
