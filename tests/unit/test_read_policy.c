/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fsops/read-policy.c without a mounted filesystem: parsing, validation, config files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "fsops/read-policy.h"
#include "unit.h"

#define FSID "3f7b59c9-cee2-429c-a9e2-9e3ac21096a0"

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/fs/btrfs/%s/%s", root, FSID, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(cmd))
		abort();
	fp = fopen(path, "w");
	if (!fp)
		abort();
	fputs(text, fp);
	fclose(fp);
}

static void test_parse(void)
{
	struct bx_rp_value v;
	char buf[64];

	CHECK(bx_rp_parse("pid", &v) == 0 && v.kind == BX_RP_PID && !v.has_arg);
	CHECK(bx_rp_parse("roundrobin", &v) == 0 && v.kind == BX_RP_ROUND_ROBIN);
	bx_rp_format(&v, buf, sizeof(buf));
	CHECK(!strcmp(buf, "round-robin"));
	CHECK(bx_rp_parse("round-robin:256K", &v) == 0 && v.has_arg);
	CHECK_EQ_U64(v.arg, 262144);
	bx_rp_format(&v, buf, sizeof(buf));
	CHECK(!strcmp(buf, "round-robin:262144"));
	CHECK(bx_rp_parse("devid:2", &v) == 0 && v.kind == BX_RP_DEVID);
	CHECK_EQ_U64(v.arg, 2);
	CHECK(bx_rp_parse("latency", &v) == 0 && v.kind == BX_RP_OTHER && !strcmp(v.name, "latency"));
	CHECK(bx_rp_parse("pid:1", &v) == -EINVAL);
	CHECK(bx_rp_parse("round-robin:0", &v) == -EINVAL);
	CHECK(bx_rp_parse("round-robin:", &v) == -EINVAL);
	CHECK(bx_rp_parse("devid:0", &v) == -EINVAL);
	CHECK(bx_rp_parse("", &v) == -EINVAL);
	CHECK(bx_rp_parse("a b", &v) == -EINVAL);
	CHECK(bx_rp_parse("[pid]", &v) == -EINVAL);
	bx_error_clear();
}

static void test_read_and_check(void)
{
	struct bx_mounted_dev devs[2] = { { .devid = 1 }, { .devid = 3 } };
	struct bx_mounted_fs fs = { .fd = -1, .sectorsize = 4096, .nr_devs = 2, .devs = devs };
	struct bx_rp_state st;
	struct bx_rp_value v;

	snprintf(fs.fsid_str, sizeof(fs.fsid_str), "%s", FSID);
	CHECK(bx_rp_read(root, FSID, &st) == -ENOENT);

	put("read_policy", "pid [round-robin:65536] devid:1\n");
	CHECK(bx_rp_read(root, FSID, &st) == 0);
	CHECK(st.iface == BX_RP_IFACE_MAINLINE && st.nr_offered == 3);
	CHECK(st.active.kind == BX_RP_ROUND_ROBIN && st.active.has_arg);
	CHECK_EQ_U64(st.active.arg, 65536);
	bx_rp_parse("round-robin:8K", &v);
	CHECK(bx_rp_check(&st, &fs, &v) == 0);
	bx_rp_parse("round-robin:6000", &v);
	CHECK(bx_rp_check(&st, &fs, &v) == -EINVAL);
	bx_rp_parse("devid:3", &v);
	CHECK(bx_rp_check(&st, &fs, &v) == 0);
	bx_rp_parse("devid:2", &v);
	CHECK(bx_rp_check(&st, &fs, &v) == -EINVAL);
	CHECK(strstr(bx_error_message(-EINVAL), "its devices: 1 3") != NULL);

	put("read_policy", "[pid]\n");
	CHECK(bx_rp_read(root, FSID, &st) == 0 && st.nr_offered == 1);
	bx_rp_parse("devid", &v);
	CHECK(bx_rp_check(&st, &fs, &v) == -EOPNOTSUPP);
	CHECK(strstr(bx_error_message(-EOPNOTSUPP), "offers only the 'pid'") != NULL);

	put("read_policy", "pid devid\n");
	CHECK(bx_rp_read(root, FSID, &st) == -EPROTO);

	bx_error_clear();
}

static void test_config(void)
{
	struct bx_rp_config cfg;
	char dir[300], path[400];
	FILE *fp;

	snprintf(dir, sizeof(dir), "%s/etc/sub", root);
	CHECK(bx_rp_config_load(dir, &cfg) == 0 && cfg.nr == 0);
	CHECK(bx_rp_config_put(&cfg, FSID, "devid:2") == 0);
	CHECK(bx_rp_config_put(&cfg, "12345678-1234-1234-1234-123456789abc", "pid") == 0);
	CHECK(bx_rp_config_put(&cfg, FSID, "round-robin") == 0);
	CHECK(cfg.nr == 2);
	CHECK(bx_rp_config_save(dir, &cfg) == 0);
	bx_rp_config_free(&cfg);

	snprintf(path, sizeof(path), "%s/read-policy.conf", dir);
	fp = fopen(path, "a");
	fputs("garbage here\n" FSID " pid\n", fp);
	fclose(fp);
	CHECK(bx_rp_config_load(dir, &cfg) == 0);
	CHECK(bx_warnings_count() == 2);
	bx_warnings_clear();
	CHECK(bx_rp_config_find(&cfg, FSID) && !strcmp(bx_rp_config_find(&cfg, FSID)->policy,
							"round-robin"));
	CHECK(bx_rp_config_remove(&cfg, FSID) == 1);
	CHECK(bx_rp_config_remove(&cfg, FSID) == 0);
	CHECK(bx_rp_config_find(&cfg, "12345678-1234-1234-1234-123456789ABC") != NULL);
	bx_rp_config_free(&cfg);
}

int main(void)
{
	char cmd[300];

	snprintf(root, sizeof(root), "/tmp/btrfsx-unit-rp.XXXXXX");
	if (!mkdtemp(root))
		return 1;
	test_parse();
	test_read_and_check();
	test_config();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		return 1;
	return unit_summary();
}
