/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Base images in memfds, logged changes, and the command line run in process. */
#include <blkid/blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cmds/commands.h"
#include "cmds/scrub.h"
#include "common/error.h"
#include "format/csum.h"
#include "scrub/scrub.h"
#include "tests/fuzz/fuzz-common.h"
#include "tests/fuzz/fuzz-image.h"

#ifndef FUZZ_IMAGE_DIR
#define FUZZ_IMAGE_DIR "tests/fuzz/images"
#endif

#define IMAGE_MAGIC "BXFZIMG1"
/* read-file output beyond this fails (EFBIG): a fuzzed i_size may be 2^63. */
#define READ_FILE_LIMIT (4u << 20)

/* The files make-corpus.py writes into every base image (READ_FILE_PATHS there). */
static const char *const base_files[] = {
	"data/inline", "data/regular", "data/compressible", "data/sparse",
	"data/prealloc", "data/dir/f3", "subvol/inside", "snap/changed",
};
#define NR_BASE_FILES (sizeof(base_files) / sizeof(base_files[0]))

struct fuzz_image *fuzz_images;
size_t fuzz_nr_images;

/* The base filesystems stay open: their chunk maps place every copy. */
static struct bx_fs **base_fs;

/*
 * The harness names every member itself, so the search for other members by
 * fsid (libblkid probing every block device of the host) would only cost
 * time and read other people's disks: it finds nothing here.
 */
int blkid_get_cache(blkid_cache *cache, const char *filename)
{
	(void)cache;
	(void)filename;
	return -1;
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz-image: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

/* ---- loading ---- */

struct reader {
	const uint8_t *p;
	size_t left;
	const char *file;
};

static uint64_t take(struct reader *r, size_t n)
{
	uint64_t v = 0;

	if (r->left < n)
		die("%s: truncated", r->file);
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	r->left -= n;
	return v;
}

static uint8_t *read_whole(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	long size;

	if (!fp || fseek(fp, 0, SEEK_END) || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET))
		die("%s: %m", path);
	buf = xrealloc(NULL, (size_t)size);
	if (fread(buf, 1, (size_t)size, fp) != (size_t)size)
		die("%s: short read", path);
	fclose(fp);
	*len = (size_t)size;
	return buf;
}

static void load_image(struct fuzz_image *img, const char *path)
{
	size_t file_len, nr_runs[FUZZ_MAX_DEVS];
	uint8_t *file = read_whole(path, &file_len);
	uLongf raw_len;
	uint8_t *raw;
	struct reader head, body;
	uint64_t *runs[FUZZ_MAX_DEVS];

	if (file_len < 12 || memcmp(file, IMAGE_MAGIC, 8))
		die("%s: not a base image", path);
	raw_len = file[8] | file[9] << 8 | file[10] << 16 | (uLongf)file[11] << 24;
	raw = xrealloc(NULL, raw_len);
	if (uncompress(raw, &raw_len, file + 12, file_len - 12) != Z_OK)
		die("%s: corrupt", path);
	free(file);
	head = (struct reader){ raw, raw_len, path };
	img->nr_devs = (int)take(&head, 4);
	if (img->nr_devs < 1 || img->nr_devs > FUZZ_MAX_DEVS)
		die("%s: %d devices", path, img->nr_devs);
	for (int d = 0; d < img->nr_devs; d++) {
		img->devs[d].size = take(&head, 8);
		nr_runs[d] = take(&head, 4);
		runs[d] = xrealloc(NULL, 2 * nr_runs[d] * sizeof(uint64_t));
		for (size_t i = 0; i < nr_runs[d]; i++) {
			runs[d][2 * i] = take(&head, 8);
			runs[d][2 * i + 1] = take(&head, 4);
		}
	}
	body = head;
	for (int d = 0; d < img->nr_devs; d++) {
		struct fuzz_dev *dev = &img->devs[d];

		dev->fd = memfd_create(img->name, 0);
		if (dev->fd < 0 || ftruncate(dev->fd, (off_t)dev->size))
			die("memfd: %m");
		snprintf(dev->path, sizeof(dev->path), "/proc/self/fd/%d", dev->fd);
		img->paths[d] = dev->path;
		for (size_t i = 0; i < nr_runs[d]; i++) {
			uint64_t off = runs[d][2 * i], len = runs[d][2 * i + 1];

			if (body.left < len || off + len > dev->size ||
			    pwrite(dev->fd, body.p, len, (off_t)off) != (ssize_t)len)
				die("%s: bad run at %llu", path, (unsigned long long)off);
			body.p += len;
			body.left -= len;
		}
		free(runs[d]);
	}
	free(raw);
}

/* ---- learning the base image ---- */

static int dev_index(const struct fuzz_image *img, const struct bx_device *dev)
{
	for (int d = 0; dev && d < img->nr_devs; d++)
		if (!strcmp(img->devs[d].path, dev->path))
			return d;
	return -1;
}

/*
 * The copies of @logical a reader verifies: every mirror, except RAID5/6
 * where only the data stripe is read (other mirrors are rebuilds).
 */
static void map_copies(struct bx_fs *fs, const struct fuzz_image *img, uint64_t logical,
		       struct fuzz_copies *out)
{
	const struct bx_chunk *chunk = bx_chunk_lookup(fs, logical);
	int copies = bx_num_copies(fs, logical);

	out->nr = 0;
	if (chunk && (chunk->type & BTRFS_BLOCK_GROUP_RAID56_MASK))
		copies = 1;
	for (int mirror = 1; mirror <= copies && out->nr < FUZZ_MAX_COPIES; mirror++) {
		struct bx_stripe_loc loc;
		uint64_t len = 1;
		int d;

		if (bx_map_logical(fs, logical, &len, mirror, &loc))
			continue;
		d = dev_index(img, loc.dev);
		if (d < 0)
			continue;
		out->at[out->nr].dev = d;
		out->at[out->nr].physical = loc.physical;
		out->nr++;
	}
	bx_error_clear();
}

void fuzz_map_copies(const struct fuzz_image *img, uint64_t logical, struct fuzz_copies *out)
{
	map_copies(base_fs[img - fuzz_images], img, logical, out);
}

struct learn {
	struct fuzz_image *img;
	struct bx_fs *fs;
	size_t blocks_cap, items_cap, extents_cap;
};

static bool have_block(const struct fuzz_image *img, uint64_t logical)
{
	for (size_t i = 0; i < img->nr_blocks; i++)
		if (img->blocks[i].logical == logical)
			return true;
	return false;
}

static void learn_leaf_items(struct learn *l, const struct bx_eb *eb, uint32_t block)
{
	struct fuzz_image *img = l->img;
	bool extent_tree = le64toh(bx_eb_header(eb)->owner) == BTRFS_EXTENT_TREE_OBJECTID;

	for (uint32_t slot = 0; slot < bx_eb_nritems(eb); slot++) {
		struct btrfs_key key;

		bx_item_key(eb, (int)slot, &key);
		if (img->nr_items == l->items_cap) {
			l->items_cap = l->items_cap ? 2 * l->items_cap : 256;
			img->items = xrealloc(img->items, l->items_cap * sizeof(*img->items));
		}
		img->items[img->nr_items++] = (struct fuzz_item_ref){ block, (uint16_t)slot, key.type };
		if (extent_tree && key.type == BTRFS_EXTENT_ITEM_KEY &&
		    bx_item_size(eb, (int)slot) >= sizeof(struct btrfs_extent_item)) {
			const struct btrfs_extent_item *ei = bx_item_ptr(eb, (int)slot);

			if (!(le64toh(ei->flags) & BTRFS_EXTENT_FLAG_DATA))
				continue;
			if (img->nr_extents == l->extents_cap) {
				l->extents_cap = l->extents_cap ? 2 * l->extents_cap : 16;
				img->extents = xrealloc(img->extents,
							l->extents_cap * sizeof(*img->extents));
			}
			img->extents[img->nr_extents++] = (struct fuzz_extent){ key.objectid, key.offset };
		}
	}
}

static int learn_block(void *arg, struct bx_eb *eb)
{
	struct learn *l = arg;
	struct fuzz_image *img = l->img;
	struct fuzz_block *b;

	if (have_block(img, eb->start))
		return 0;
	if (img->nr_blocks == l->blocks_cap) {
		l->blocks_cap = l->blocks_cap ? 2 * l->blocks_cap : 64;
		img->blocks = xrealloc(img->blocks, l->blocks_cap * sizeof(*img->blocks));
	}
	b = &img->blocks[img->nr_blocks];
	*b = (struct fuzz_block){ eb->start, le64toh(bx_eb_header(eb)->owner), bx_eb_level(eb),
				  bx_eb_nritems(eb) };
	map_copies(l->fs, img, eb->start, &b->copies);
	if (b->copies.nr == 0)
		die("%s: tree block %llu has no copy", img->name, (unsigned long long)eb->start);
	if (b->level == 0)
		learn_leaf_items(l, eb, (uint32_t)img->nr_blocks);
	img->nr_blocks++;
	return 0;
}

static void learn_tree(struct learn *l, uint64_t objectid)
{
	static const struct bx_walk_ops ops = { learn_block, NULL };
	struct bx_root root;

	if (bx_find_root(l->fs, objectid, &root) || bx_walk_tree(l->fs, &root, &ops, l))
		die("%s: tree %llu: %s", l->img->name, (unsigned long long)objectid,
		    bx_error_message(-EIO));
}

static void learn_image(struct fuzz_image *img, struct bx_fs **fsp)
{
	struct learn l = { .img = img };
	struct btrfs_key first = { 0, 0, 0 };
	uint64_t trees[256];
	size_t nr_trees = 0;
	struct bx_root root;
	struct bx_path path;
	int ret;

	if (bx_fs_open(&l.fs, img->paths, img->nr_devs, BX_OPEN_NO_SCAN))
		die("%s: %s", img->name, bx_error_message(-EIO));
	img->nodesize = l.fs->nodesize;
	img->sectorsize = l.fs->sectorsize;
	img->csum_type = l.fs->csum_type;
	learn_tree(&l, BTRFS_ROOT_TREE_OBJECTID);
	learn_tree(&l, BTRFS_CHUNK_TREE_OBJECTID);
	bx_find_root(l.fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	bx_path_init(&path, false);
	ret = bx_search(l.fs, &root, &first, &path);
	if (ret >= 0)
		ret = bx_path_settle(l.fs, &path);
	for (; ret == 0 && nr_trees < 256; ret = bx_next_item(l.fs, &path)) {
		struct btrfs_key key;

		bx_item_key(bx_path_leaf(&path), path.slots[0], &key);
		if (key.type == BTRFS_ROOT_ITEM_KEY)
			trees[nr_trees++] = key.objectid;
	}
	bx_path_release(&path);
	for (size_t i = 0; i < nr_trees; i++)
		learn_tree(&l, trees[i]);
	*fsp = l.fs;
}

static int is_image(const struct dirent *de)
{
	size_t len = strlen(de->d_name);

	return len > 5 && !strcmp(de->d_name + len - 5, ".bxfi");
}

static FILE *devnull;
static char state_dir[64];
static int out_fd = -1;
static char out_path[40];

void fuzz_images_init(void)
{
	const char *dir = getenv("BTRFSX_FUZZ_IMAGES");
	struct dirent **names;
	int n;

	if (!dir || !*dir)
		dir = FUZZ_IMAGE_DIR;
	n = scandir(dir, &names, is_image, alphasort);
	if (n <= 0)
		die("no base images (*.bxfi) in %s; set BTRFSX_FUZZ_IMAGES", dir);
	fuzz_images = xrealloc(NULL, (size_t)n * sizeof(*fuzz_images));
	base_fs = xrealloc(NULL, (size_t)n * sizeof(*base_fs));
	memset(fuzz_images, 0, (size_t)n * sizeof(*fuzz_images));
	for (int i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		snprintf(fuzz_images[i].name, sizeof(fuzz_images[i].name), "%s", names[i]->d_name);
		load_image(&fuzz_images[i], path);
		learn_image(&fuzz_images[i], &base_fs[i]);
		free(names[i]);
	}
	free(names);
	fuzz_nr_images = (size_t)n;
	fuzz_reset_messages();

	devnull = fopen("/dev/null", "w");
	if (!devnull)
		die("/dev/null: %m");
	/* Commands write nothing to stdout that matters; libFuzzer reports on stderr. */
	if (dup2(fileno(devnull), STDOUT_FILENO) < 0)
		die("dup2: %m");
	snprintf(state_dir, sizeof(state_dir), "/dev/shm/btrfsx-fuzz-XXXXXX");
	if (!mkdtemp(state_dir))
		die("mkdtemp: %m");
	out_fd = memfd_create("read-file", 0);
	if (out_fd < 0)
		die("memfd: %m");
	snprintf(out_path, sizeof(out_path), "/proc/self/fd/%d", out_fd);
}

/* ---- changes and their undo ---- */

struct undo {
	struct fuzz_image *img;
	int dev;
	uint64_t off;
	size_t len;
	uint8_t *old;
};

static struct undo *undo_log;
static size_t undo_nr, undo_cap;

void fuzz_dev_read(const struct fuzz_image *img, int dev, uint64_t off, void *buf, size_t len)
{
	ssize_t got = pread(img->devs[dev].fd, buf, len, (off_t)off);

	if (got < 0)
		die("pread: %m");
	memset((uint8_t *)buf + got, 0, len - (size_t)got);
}

void fuzz_dev_write(struct fuzz_image *img, int dev, uint64_t off, const void *buf, size_t len)
{
	struct undo *u;

	if (!len || off >= img->devs[dev].size)
		return;
	if (len > img->devs[dev].size - off)
		len = img->devs[dev].size - off;
	if (undo_nr == undo_cap) {
		undo_cap = undo_cap ? 2 * undo_cap : 64;
		undo_log = xrealloc(undo_log, undo_cap * sizeof(*undo_log));
	}
	u = &undo_log[undo_nr++];
	*u = (struct undo){ img, dev, off, len, xrealloc(NULL, len) };
	fuzz_dev_read(img, dev, off, u->old, len);
	if (pwrite(img->devs[dev].fd, buf, len, (off_t)off) != (ssize_t)len)
		die("pwrite: %m");
}

void fuzz_undo(void)
{
	while (undo_nr) {
		struct undo *u = &undo_log[--undo_nr];

		if (pwrite(u->img->devs[u->dev].fd, u->old, u->len, (off_t)u->off) != (ssize_t)u->len)
			die("pwrite: %m");
		free(u->old);
	}
}

static void fix_csum(struct fuzz_image *img, int dev, uint64_t off, size_t len,
		     unsigned int csum_type)
{
	uint8_t *buf = xrealloc(NULL, len);
	uint8_t csum[BTRFS_CSUM_SIZE];

	fuzz_dev_read(img, dev, off, buf, len);
	if (btrfsx_csum(csum_type, buf + BTRFS_CSUM_SIZE, len - BTRFS_CSUM_SIZE, csum) == 0)
		fuzz_dev_write(img, dev, off, csum, sizeof(csum));
	free(buf);
}

void fuzz_fix_tree_block_csum(struct fuzz_image *img, int dev, uint64_t off)
{
	fix_csum(img, dev, off, img->nodesize, img->csum_type);
}

void fuzz_fix_super_csum(struct fuzz_image *img, int dev, uint64_t off)
{
	uint16_t csum_type;

	/* The superblock names its own checksum type (perhaps a fuzzed one). */
	fuzz_dev_read(img, dev, off + offsetof(struct btrfs_super_block, csum_type), &csum_type,
		      sizeof(csum_type));
	fix_csum(img, dev, off, BTRFS_SUPER_INFO_SIZE, le16toh(csum_type));
}

/* ---- the command line, in process ---- */

static const struct bx_cmd *find_cmd(const struct bx_cmd_group *group, const char *name)
{
	for (const struct bx_cmd *cmd = group->cmds; cmd->name; cmd++)
		if (!strcmp(cmd->name, name))
			return cmd;
	die("no command '%s'", name);
}

/*
 * Runs one command as the dispatcher would (btrfsx.c run_cmd and report):
 * output to /dev/null, warnings and errors drained. A command may fail on a
 * damaged image, but only with a message; a usage error means the harness
 * built a wrong command line.
 */
static int run_cmd(const struct bx_cmd_group *group, enum bx_format format, int argc,
		   char **argv)
{
	const struct bx_cmd *cmd = find_cmd(group, argv[0]);
	struct bx_ctx ctx = { .format = (cmd->flags & BX_CMD_JSON) ? format : BX_FORMAT_TEXT,
			      .sysfs_root = "/sys", .config_dir = state_dir,
			      .state_dir = state_dir, .usage = cmd->usage, .cmd_path = argv[0] };
	int ret;

	ctx.out = bx_out_new(ctx.format, devnull);
	if (!ctx.out)
		abort();
	optind = 0;
	ret = cmd->fn(&ctx, argc, argv);
	for (size_t i = 0; i < bx_warnings_count(); i++)
		bx_out_str(ctx.out, NULL, bx_warning(i), 0);
	if (ret < 0) {
		const char *msg = bx_error_message(ret);

		if (!msg || !*msg)
			abort();   /* a failure must say what failed */
		bx_out_str(ctx.out, "error", msg, 0);
	}
	bx_out_finish(ctx.out);
	fuzz_reset_messages();
	if (ret == BX_EXIT_USAGE || (ret > 0 && ret != BX_EXIT_UNCORRECTABLE))
		abort();
	return ret;
}

static void run_argv(const struct bx_cmd_group *group, enum bx_format format, const char *name,
		     const char *const *opts, int nr_opts, struct fuzz_image *img, bool all_devs)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = (char *)name;
	for (int i = 0; i < nr_opts; i++)
		argv[argc++] = (char *)opts[i];
	for (int d = 0; d < (all_devs ? img->nr_devs : 0); d++)
		argv[argc++] = img->paths[d];
	argv[argc] = NULL;
	run_cmd(group, format, argc, argv);
}

/*
 * read-file writes the file to a memfd, at most READ_FILE_LIMIT bytes: past
 * it the write fails with EFBIG (SIGXFSZ ignored meanwhile; libFuzzer would
 * take the signal for a crash), which read-file must report like any failed
 * write. Only the soft limit moves: the hard one could not come back up.
 */
static void read_file(struct fuzz_image *img, enum bx_format format, const char *file, int mirror)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN }, old_action;
	struct rlimit old, limit;
	char mirror_arg[16];
	const char *opts[] = { "-o", out_path, "--mirror", mirror_arg, file };

	snprintf(mirror_arg, sizeof(mirror_arg), "%d", mirror);
	getrlimit(RLIMIT_FSIZE, &old);
	limit = (struct rlimit){ READ_FILE_LIMIT, old.rlim_max };
	if (limit.rlim_cur > limit.rlim_max)
		limit.rlim_cur = limit.rlim_max;
	sigaction(SIGXFSZ, &ignore, &old_action);
	setrlimit(RLIMIT_FSIZE, &limit);
	run_argv(&bx_inspect_group, format, "read-file", opts, 5, img, true);
	setrlimit(RLIMIT_FSIZE, &old);
	sigaction(SIGXFSZ, &old_action, NULL);
}

/*
 * What "scrub start --offline -r -B -d" does (cmds/scrub.c run_scrub), with
 * the engine's read buffers cut from 48 MiB to two 64 KiB reads per device:
 * allocating the default ones costs more than scrubbing a base image. Then
 * the result goes through the status file and back, as "scrub status" shows
 * it (file paths from fuzzed names included).
 */
static void scrub(struct fuzz_image *img, enum bx_format format)
{
	const struct bx_scrub_opts opts = { .readonly = true, .readahead = true,
					    .request_bytes = 64 * 1024, .requests_per_dev = 2 };
	const struct scrub_print_opts po = { .per_device = true };
	struct bx_scrub_result *res;
	struct bx_scrub_status *st;
	char status_path[128];
	struct bx_out *out;
	struct bx_fs *fs;

	/*
	 * bx_open_offline's checks (loop devices, mounts) do not read the image
	 * and cost more than the scrub (a path walk per loop device of the host).
	 */
	if (bx_fs_open(&fs, img->paths, img->nr_devs, BX_OPEN_DEGRADED)) {
		fuzz_reset_messages();
		return;
	}
	if (bx_scrub_run(fs, &opts, &res) == 0) {
		out = bx_out_new(format, devnull);
		if (!out)
			abort();
		scrub_print(out, res, "finished", &po);
		bx_scrub_status_path(state_dir, fs->fsid, status_path, sizeof(status_path));
		if (bx_scrub_status_save(status_path, res, "finished", getpid()) == 0 &&
		    bx_scrub_status_load(status_path, &st) == 0) {
			scrub_print(out, bx_scrub_status_result(st), bx_scrub_status_state(st), &po);
			bx_scrub_status_free(st);
		}
		unlink(status_path);
		bx_out_finish(out);
		bx_scrub_result_free(res);
	}
	bx_fs_close(fs);
	fuzz_reset_messages();
}

static void resolve_files(struct fuzz_image *img)
{
	struct bx_fs *fs;

	if (bx_fs_open(&fs, img->paths, img->nr_devs, BX_OPEN_NO_SCAN | BX_OPEN_DEGRADED)) {
		fuzz_reset_messages();
		return;
	}
	for (size_t i = 0; i < img->nr_extents; i++) {
		const struct fuzz_extent *e = &img->extents[i];
		struct bx_scrub_file *files = NULL;
		size_t nr = 0;

		bx_scrub_resolve_files(fs, e->start + e->len / 2, e->start, e->len, &files, &nr,
				       BX_SCRUB_MAX_FILES);
		for (size_t f = 0; f < nr; f++) {
			if (files[f].path)
				fuzz_touch(files[f].path, strlen(files[f].path));
			free(files[f].path);
		}
		free(files);
	}
	bx_fs_close(fs);
	fuzz_reset_messages();
}

void fuzz_run_commands(struct fuzz_image *img, const struct fuzz_run *run)
{
	const char *member = img->paths[run->member % img->nr_devs];
	enum bx_format fmt = run->format;

	if (run->cmds & FUZZ_CMD_DUMP_SUPER) {
		const char *opts[] = { "-a", "-f", member };

		run_argv(&bx_inspect_group, fmt, "dump-super", opts, 3, img, false);
	}
	if (run->cmds & FUZZ_CMD_DUMP_TREE) {
		char tree[24];
		const char *opts[] = { "-t", tree };

		snprintf(tree, sizeof(tree), "%llu", (unsigned long long)run->tree);
		run_argv(&bx_inspect_group, fmt, "dump-tree", opts, run->tree ? 2 : 0, img, true);
	}
	if (run->cmds & FUZZ_CMD_READ_FILE)
		read_file(img, fmt, base_files[run->file % NR_BASE_FILES],
			  1 + (int)(run->file / NR_BASE_FILES % 3));
	if (run->cmds & FUZZ_CMD_USAGE) {
		const char *opts[] = { "-T" };

		run_argv(&bx_filesystem_group, fmt, "usage", opts, run->member & 1, img, true);
	}
	if (run->cmds & FUZZ_CMD_PROPERTY) {
		const char *opts[] = { member };

		run_argv(&bx_device_property_group, fmt, "get", opts, 1, img, false);
	}
	if (run->cmds & FUZZ_CMD_SCRUB)
		scrub(img, fmt);
	if (run->cmds & FUZZ_CMD_RESOLVE)
		resolve_files(img);
}
