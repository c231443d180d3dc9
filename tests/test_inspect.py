# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx inspect: our reader against btrfs-progs and the kernel, on real
filesystems made by mkfs.btrfs and filled through the kernel, for every
profile and checksum type; then bad input."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from helpers import fsutil
from helpers import oracle

pytestmark = pytest.mark.root

PROFILES = ["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"]
CSUMS = ["crc32c", "xxhash", "sha256", "blake2"]
TREES = ["root", "chunk", "dev", "extent", "csum", "fs"]
MIRRORS = {"single": 1, "dup": 2, "raid0": 1, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
           "raid10": 2, "raid5": 2, "raid6": 3}


def profile_fs(fs_cache, profile, csum):
    """Data and metadata in @profile (dup on one device, the rest on four)."""
    return fs_cache.get(data=profile, metadata=profile, csum=csum,
                        ndevs=1 if profile == "dup" else 4)


def our_keys(btrfsx_json, devs, tree):
    doc = btrfsx_json("inspect", "dump-tree", "-t", tree, *devs)
    return [(i["key"]["objectid"], i["key"]["type"], i["key"]["offset"])
            for t in doc["trees"] for b in t["blocks"] for i in b.get("items", [])]


@pytest.mark.parametrize("csum", CSUMS)
@pytest.mark.parametrize("profile", PROFILES)
def test_dump_tree_keys_equal_progs(fs_cache, btrfsx_json, profile, csum):
    fs = profile_fs(fs_cache, profile, csum)
    for tree in TREES:
        ours = our_keys(btrfsx_json, fs.devs, tree)
        theirs = oracle.progs_dump_tree_keys(fs.devs, tree)
        assert ours == theirs, f"{tree} tree differs"
        assert ours, f"{tree} tree is empty"


@pytest.mark.parametrize("csum", CSUMS)
@pytest.mark.parametrize("profile", ["single", "raid1", "raid5"])
def test_dump_super_fields_equal_progs(fs_cache, btrfsx_json, profile, csum):
    fs = profile_fs(fs_cache, profile, csum)
    for dev in fs.devs:
        ours = btrfsx_json("inspect", "dump-super", dev)["superblock"]
        compared, differ = oracle.super_fields_differ(ours, oracle.progs_dump_super(dev))
        assert not differ, f"{dev}: {differ}"
        assert compared >= 40


def test_dump_super_all_copies(fs_cache, btrfsx_json):
    fs = profile_fs(fs_cache, "single", "crc32c")
    doc = btrfsx_json("inspect", "dump-super", "-a", fs.dev)
    copies = doc["superblocks"]
    assert [c["offset"] for c in copies] == [65536, 64 << 20, 256 << 30]
    assert [c["status"] for c in copies] == ["ok", "ok", "beyond the end of the device"]
    assert copies[0]["generation"] == copies[1]["generation"]


def read_file(run_btrfsx, devs, path, mirror, tmp_path):
    out = tmp_path / "read-file.out"
    run_btrfsx("inspect", "read-file", "--mirror", str(mirror), "-o", out, path, *devs)
    return fsutil.sha256_file(out), out.stat().st_size


@pytest.mark.parametrize("csum", ["crc32c", "blake2"])
@pytest.mark.parametrize("profile", PROFILES)
def test_read_file_every_mirror(fs_cache, run_btrfsx, profile, csum, tmp_path):
    """File contents read through our chunk mapping, from each copy (raid5/6:
    rebuilt from P and Q), equal what was written through the kernel."""
    fs = profile_fs(fs_cache, profile, csum)
    kinds_seen = set()
    picked = [(p, m) for p, m in fs.manifest.items()
              if m["kind"] not in kinds_seen and not kinds_seen.add(m["kind"])]
    picked += [(p, m) for p, m in fs.manifest.items() if m["kind"] == "big"]
    for mirror in range(1, MIRRORS[profile] + 1):
        for path, meta in picked:
            digest, size = read_file(run_btrfsx, fs.devs, path, mirror, tmp_path)
            assert (size, digest) == (meta["size"], meta["sha256"]), f"{path} mirror {mirror}"


def test_read_file_matches_mounted_kernel(loopdevs, run_btrfsx, tmp_path):
    """The same bytes as the kernel reads from the mounted filesystem."""
    loops = loopdevs(3)
    fsutil.mkfs(loops.devs, data="raid5", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        fsutil.fill_files(mnt, seed=7, small_files=4)
        kernel = {p: fsutil.sha256_file(os.path.join(mnt, p))
                  for p in ("big/big0.bin", "big/big2.bin", "sparse.bin", "dir/sub/deep.txt")}
    for path, digest in kernel.items():
        for mirror in (1, 2):
            assert read_file(run_btrfsx, loops.devs, path, mirror, tmp_path)[0] == digest


# ---- bad input ----

def expect_failure(run_btrfsx, args, message, rc=1):
    code, out, err = run_btrfsx(*args, check=False)
    assert code == rc, err
    assert message in err, err
    assert "Sanitizer" not in err and "runtime error" not in err
    return err


@pytest.fixture
def image_fs(tmp_path):
    """mkfs(images, **opts) -> image files (not attached) holding a new filesystem."""
    def make(n=1, size="512M", **opts):
        imgs = fsutil.make_images(tmp_path / f"fs{len(os.listdir(tmp_path))}", [size] * n)
        fsutil.mkfs([str(i) for i in imgs], **opts)
        return [str(i) for i in imgs]
    return make


def test_not_btrfs(run_btrfsx, tmp_path):
    img = tmp_path / "zero.img"
    img.write_bytes(bytes(1 << 20))
    for cmd in (["inspect", "dump-super"], ["inspect", "dump-tree"]):
        expect_failure(run_btrfsx, cmd + [str(img)], "not a btrfs filesystem")


def test_other_filesystem_type(run_btrfsx, tmp_path):
    img = tmp_path / "ext4.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    expect_failure(run_btrfsx, ["inspect", "dump-tree", str(img)], "not a btrfs filesystem")


def test_zero_length_and_directory(run_btrfsx, tmp_path):
    empty = tmp_path / "empty.img"
    empty.touch()
    expect_failure(run_btrfsx, ["inspect", "dump-super", str(empty)], "not a btrfs filesystem")
    expect_failure(run_btrfsx, ["inspect", "dump-super", str(tmp_path)], "is a directory")
    expect_failure(run_btrfsx, ["inspect", "dump-super", str(tmp_path / "nope")],
                   "No such file")


def test_truncated_image(run_btrfsx, image_fs):
    img, = image_fs()
    os.truncate(img, 24 << 20)   # superblock stays, chunks beyond the end are gone
    err = expect_failure(run_btrfsx, ["inspect", "dump-tree", img], "")
    assert "beyond the end" in err or "no good copy" in err


def corrupt(path, offset, length=16):
    with open(path, "r+b") as f:
        f.seek(offset)
        data = bytearray(f.read(length))
        f.seek(offset)
        f.write(bytes(b ^ 0xff for b in data))


def test_primary_superblock_corrupted_falls_back(run_btrfsx, btrfsx_json, image_fs):
    img, = image_fs()
    keys_before = our_keys(btrfsx_json, [img], "chunk")
    corrupt(img, 0x10000 + 0x200)
    code, out, err = run_btrfsx("inspect", "dump-tree", "-t", "chunk", img, check=False)
    assert code == 0, err
    assert "primary superblock checksum mismatch, using copy 1" in err
    assert our_keys(btrfsx_json, [img], "chunk") == keys_before
    copies = btrfsx_json("inspect", "dump-super", "-a", img)["superblocks"]
    assert copies[0]["status"] == "checksum mismatch" and copies[1]["status"] == "ok"


def metadata_copies(img, bytenr):
    """Physical offsets of both DUP copies of a metadata block."""
    for chunk in oracle.progs_chunks([img]):
        if chunk["logical"] <= bytenr < chunk["logical"] + chunk["length"]:
            return [phys + bytenr - chunk["logical"] for _, phys, _ in chunk["stripes"]]
    raise AssertionError(f"no chunk for {bytenr}")


def test_one_tree_block_mirror_corrupted(run_btrfsx, btrfsx_json, image_fs):
    img, = image_fs(metadata="dup")
    root = btrfsx_json("inspect", "dump-super", img)["superblock"]["root"]
    keys_before = our_keys(btrfsx_json, [img], "root")
    first, second = metadata_copies(img, root)
    corrupt(img, first + 200)
    code, out, err = run_btrfsx("inspect", "dump-tree", "-t", "root", img, check=False)
    assert code == 0, err
    assert f"tree block {root}: mirror 1 bad" in err
    assert our_keys(btrfsx_json, [img], "root") == keys_before


def test_all_tree_block_mirrors_corrupted(run_btrfsx, btrfsx_json, image_fs):
    img, = image_fs(metadata="dup")
    root = btrfsx_json("inspect", "dump-super", img)["superblock"]["root"]
    for phys in metadata_copies(img, root):
        corrupt(img, phys + 200)
    expect_failure(run_btrfsx, ["inspect", "dump-tree", "-t", "fs", img],
                   f"tree block {root}: no good copy")


def test_missing_device(run_btrfsx, image_fs):
    """An image set's member beside the ones named is found by fsid; one
    that is gone leaves it degraded: dump-tree reads the copies left, with
    one warning naming it (issue 30)."""
    imgs = image_fs(n=3, data="raid1", metadata="raid1")
    code, out, err = run_btrfsx("inspect", "dump-tree", "-t", "chunk", imgs[0], imgs[2])
    assert "warning" not in err, err
    os.mkdir(os.path.dirname(imgs[1]) + ".away")
    os.rename(imgs[1], os.path.dirname(imgs[1]) + ".away/member")
    code, degraded, err = run_btrfsx("inspect", "dump-tree", "-t", "chunk", imgs[0], imgs[2])
    assert err.splitlines() == ["btrfsx: warning: filesystem is degraded: devid 2 missing"], err
    assert degraded == out


def test_device_of_another_filesystem(run_btrfsx, image_fs):
    a = image_fs(n=2, data="raid1", metadata="raid1")
    b, = image_fs()
    expect_failure(run_btrfsx, ["inspect", "dump-tree", a[0], b], "belongs to filesystem")


def test_same_device_twice(run_btrfsx, image_fs):
    img, = image_fs()
    expect_failure(run_btrfsx, ["inspect", "dump-tree", img, img], "named twice")


def test_bad_arguments(run_btrfsx, image_fs):
    img, = image_fs()
    expect_failure(run_btrfsx, ["inspect", "dump-tree", "-t", "nosuch", img], "unknown tree", 2)
    expect_failure(run_btrfsx, ["inspect", "dump-tree"], "not enough arguments", 2)
    expect_failure(run_btrfsx, ["inspect", "dump-super", img, img], "too many arguments", 2)
    expect_failure(run_btrfsx, ["inspect", "read-file", "--mirror", "9", "x", img],
                   "invalid mirror", 2)
    expect_failure(run_btrfsx, ["inspect", "read-file", "no/such/file", img], "not found")
    expect_failure(run_btrfsx, ["inspect", "read-file", "--mirror", "3", "x", img], "not found")
    expect_failure(run_btrfsx, ["inspect", "dump-tree", "-t", "12345", img], "not found")


def test_members_found_by_fsid(fs_cache, btrfsx_json):
    """Naming one attached member is enough: libblkid finds the others."""
    fs = profile_fs(fs_cache, "raid1c3", "crc32c")
    assert our_keys(btrfsx_json, [fs.dev], "chunk") == oracle.progs_dump_tree_keys(fs.devs, "chunk")


def test_metadata_uuid(loopdevs, btrfsx_json):
    """After btrfstune -m the tree blocks carry metadata_uuid, not the fsid."""
    loops = loopdevs(2)
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    subprocess.run(["btrfstune", "-f", "-m", loops.devs[0]], check=True, capture_output=True)
    sb = btrfsx_json("inspect", "dump-super", loops.devs[1])["superblock"]
    assert sb["fsid"] != sb["metadata_uuid"]
    assert sb["incompat_flags"] & (1 << 10)
    for tree in ("chunk", "root", "extent"):
        assert our_keys(btrfsx_json, [loops.devs[0]], tree) == \
            oracle.progs_dump_tree_keys(loops.devs, tree)


def test_libbtrfsx_reads_identity(image_fs, tmp_path):
    """The shared library answers for the same filesystem (a tiny C client)."""
    build = os.environ.get("BTRFSX_BUILD_DIR", str(Path(fsutil.btrfsx_path()).parent))
    lib = Path(build) / ".libs" / "libbtrfsx.so"
    if not lib.exists():
        pytest.skip("libbtrfsx.so not built")
    img, = image_fs(label="libtest")
    src = tmp_path / "client.c"
    src.write_text(r'''
#include <stdio.h>
#include "btrfsx.h"
int main(int argc, char **argv)
{
	struct btrfsx_fs_info info;
	const char *paths[] = { argv[1] };
	enum btrfsx_error err = btrfsx_fs_info_offline(paths, 1, &info);
	if (err) {
		printf("error %d %s: %s\n", err, btrfsx_strerror(err), btrfsx_last_error_message());
		return 1;
	}
	printf("%s %s %u\n", info.label, info.csum_name, info.nodesize);
	return 0;
}
''')
    top = Path(__file__).resolve().parent.parent
    exe = tmp_path / "client"
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)],
                               capture_output=True, text=True).stdout
    # A sanitizer build of the library needs a client that brings the runtime.
    cc = ["clang-14", "-fsanitize=address,undefined"] if "__asan" in undefined else ["cc"]
    subprocess.run(cc + ["-o", str(exe), str(src), f"-I{top}/libbtrfsx", f"-L{lib.parent}",
                         "-lbtrfsx", f"-Wl,-rpath,{lib.parent}"], check=True)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    out = subprocess.run([str(exe), img], capture_output=True, text=True, env=env)
    assert out.stdout == "libtest crc32c 16384\n", out.stdout + out.stderr
    zero = tmp_path / "zero.img"
    zero.write_bytes(bytes(1 << 20))
    out = subprocess.run([str(exe), str(zero)], capture_output=True, text=True, env=env)
    assert out.returncode == 1 and "error 3 not a btrfs filesystem" in out.stdout


def test_all_trees_with_log_tree(loopdevs, btrfsx_json, tmp_path):
    """A filesystem caught between an fsync and its commit has a log tree:
    the all-trees dump shows it, and every key equals btrfs-progs'."""
    loops = loopdevs(1)
    fsutil.mkfs(loops.devs, data="single", metadata="dup")
    copy = tmp_path / "with-log.img"
    with fsutil.mounted(loops.devs, options="commit=300") as mnt:
        fsutil.fill_files(mnt, small_files=8, big_files=1)
        subprocess.run(["sync"], check=True)
        with open(os.path.join(mnt, "fsynced"), "wb") as f:
            f.write(b"x" * 5000)
            f.flush()
            os.fsync(f.fileno())
        subprocess.run(["cp", "--sparse=always", str(loops.images[0]), str(copy)], check=True)
    sb = btrfsx_json("inspect", "dump-super", copy)["superblock"]
    if not sb["log_root"]:
        pytest.skip("the kernel committed before the copy; no log tree to look at")
    doc = btrfsx_json("inspect", "dump-tree", copy)
    assert "log" in [t["tree"] for t in doc["trees"]]
    ours = [(i["key"]["objectid"], i["key"]["type"], i["key"]["offset"])
            for t in doc["trees"] for b in t["blocks"] for i in b.get("items", [])]
    assert sorted(ours) == sorted(oracle.progs_dump_tree_keys([str(copy)], None))


# ---- item values: every decoded field against btrfs-progs ----

FICLONE = 0x40049409          # ioctl: reflink a whole file


def _write(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _reflink(src, dst) -> None:
    import fcntl
    with open(src, "rb") as s, open(dst, "wb") as d:
        fcntl.ioctl(d.fileno(), FICLONE, s.fileno())


def populate_rich(mnt, seed: int = 0, compressed_name: str = "comp") -> None:
    """Fill a mounted filesystem with one of everything dump-tree decodes
    (quota must be enabled already for the qgroup items).

    Inline, regular, sparse (explicit holes without no-holes), preallocated,
    compressed (``chattr +c``, and anything the mount's compress= option
    compresses) and NOCOW files; a symlink, a fifo, a char device, odd modes,
    owners, flags and nanosecond times; hardlinks in one and in several
    directories, and 120 links with 200-byte names in one directory (their
    INODE_REF overflows, so the rest become INODE_EXTREFs); names with invalid
    UTF-8, a newline, a tab, a backslash, control bytes, emoji; xattrs with
    text, binary (NUL first), empty, multi-line and 300-byte values and a
    non-UTF-8 name; 60 reflinks of one extent (keyed EXTENT_DATA_REFs);
    600 small files for several leaves; a subvolume, a snapshot of the top
    level and a read-only one of the subvolume, then changes that unshare
    leaves (FULL_BACKREF, SHARED_DATA_REF); a qgroup 1/100 holding the
    subvolume, with limits."""
    import random
    import stat
    rng = random.Random(seed)
    m = Path(mnt)
    run = fsutil.run
    (m / "dir1/sub").mkdir(parents=True)
    _write(m / "small", b"hello inline\n")
    _write(m / "dir1/big", rng.randbytes(300 * 1024))
    _write(m / "dir1/sub/zeros", bytes(200000))
    with open(m / "sparse", "wb") as f:
        f.seek(1 << 20)
        f.write(b"x" * 8192)
        f.seek(3 << 20)
        f.write(b"y" * 4096)
    fd = os.open(m / "prealloc", os.O_CREAT | os.O_WRONLY)
    os.posix_fallocate(fd, 0, 1 << 20)
    os.close(fd)
    (m / compressed_name).touch()
    run(["chattr", "+c", m / compressed_name])
    _write(m / compressed_name, b"compress me " * 20000)
    _write(m / "comp-inline", b"a" * 2000)
    (m / "nocow").touch()
    run(["chattr", "+C", m / "nocow"])
    _write(m / "nocow", rng.randbytes(64 * 1024))

    # special files, modes, owners, flags, times
    os.symlink("dir1/sub/zeros", m / "symlink")
    os.mkfifo(m / "fifo")
    os.mknod(m / "chardev", stat.S_IFCHR | 0o640, os.makedev(1, 3))
    _write(m / "setuid", b"#!/bin/sh\n")
    os.chmod(m / "setuid", 0o4755)
    os.chown(m / "setuid", 1234, 5678)
    (m / "sticky").mkdir()
    os.chmod(m / "sticky", 0o1777)
    _write(m / "flagged", b"flags")
    run(["chattr", "+dA", m / "flagged"])
    os.utime(m / "flagged", ns=(1_000_000_123, 2_000_000_456))

    # hardlinks; long names overflow the INODE_REF into INODE_EXTREFs
    os.link(m / "small", m / "dir1/small-link")
    os.link(m / "small", m / "small-link2")
    (m / "links").mkdir()
    _write(m / "links/target", b"t" * 10)
    for i in range(120):
        os.link(m / "links/target", m / "links" / (("L%03d" % i) * 50))

    # odd names and xattrs
    for name in (b"bad\xff\xfe name", b"new\nline", b"back\\slash", b"quote\"tab\t",
                 b"ctl\x01\x7f", "utf8-\u00e9\u4e2d\U0001F600".encode(), b"trailing space "):
        _write(os.path.join(bytes(m), name), b"n")
    os.setxattr(m / "small", "user.text", b"value one")
    os.setxattr(m / "small", "user.bin", b"\x00\x01\xff\xfe\\x")
    os.setxattr(m / "small", "user.empty", b"")
    os.setxattr(m / "small", "user.lines", b"first\nsecond\n")
    os.setxattr(m / "small", "user.long", bytes(range(32, 127)) * 3 + b"tail")
    os.setxattr(m / "dir1", b"user.bad\xffname", b"\xc3\xa9ok")

    # reflinks: more refs than fit in the extent item
    _write(m / "refsrc", rng.randbytes(128 * 1024))
    (m / "reflinks").mkdir()
    for i in range(60):
        _reflink(m / "refsrc", m / "reflinks" / f"r{i}")

    # several leaves, so snapshots share some and changes unshare them
    (m / "many").mkdir()
    for i in range(600):
        _write(m / "many" / f"f{i}", b"z" * (i % 50 + 1))
    for i in range(0, 600, 50):
        _write(m / "many" / f"e{i}", rng.randbytes(8192 + i))

    # subvolumes, snapshots, quota groups
    run(["btrfs", "-q", "subvolume", "create", m / "subv"])
    _write(m / "subv/inside", rng.randbytes(20000))
    run(["btrfs", "-q", "subvolume", "snapshot", m, m / "snap"])
    run(["btrfs", "-q", "subvolume", "snapshot", "-r", m / "subv", m / "subv-ro"])
    run(["btrfs", "qgroup", "create", "1/100", m])
    subvolid = run(["btrfs", "inspect-internal", "rootid", m / "subv"]).stdout.strip()
    run(["btrfs", "qgroup", "assign", f"0/{subvolid}", "1/100", m])
    run(["btrfs", "qgroup", "limit", "100M", m / "subv"])
    run(["btrfs", "qgroup", "limit", "-e", "50M", m / "subv"])

    # changes after the snapshot
    for i in range(0, 600, 7):
        _write(m / "many" / f"f{i}", b"changed" * 3)
    _write(m / "dir1/big", rng.randbytes(100 * 1024))
    for i in range(1, 600, 2):
        os.unlink(m / "many" / f"f{i}")
    run(["sync"])


def rich_fs(loops, mount_options=None, **mkfs_opts) -> None:
    """mkfs on the loop devices, mount, enable quota, populate_rich, unmount."""
    fsutil.mkfs(loops.devs, **mkfs_opts)
    with fsutil.mounted(loops.devs, options=mount_options) as mnt:
        fsutil.run(["btrfs", "quota", "enable", mnt])
        populate_rich(mnt)


#: item kinds every rich filesystem must have had compared
RICH_KINDS = [
    "INODE_ITEM", "INODE_REF", "INODE_EXTREF", "DIR_ITEM", "DIR_INDEX", "XATTR_ITEM",
    "XATTR_ITEM with data", "EXTENT_DATA inline", "EXTENT_DATA regular",
    "EXTENT_DATA prealloc", "EXTENT_DATA compressed", "EXTENT_CSUM", "ROOT_ITEM",
    "ROOT_ITEM v2", "ROOT_REF", "ROOT_BACKREF", "EXTENT_ITEM", "EXTENT_DATA_REF",
    "inline EXTENT_DATA_REF", "inline TREE_BLOCK_REF", "BLOCK_GROUP_ITEM", "CHUNK_ITEM",
    "DEV_ITEM", "DEV_EXTENT", "PERSISTENT_ITEM", "QGROUP_STATUS", "QGROUP_INFO",
    "QGROUP_LIMIT", "QGROUP_LIMIT with a limit", "skipped:QGROUP_RELATION",
    "UUID_KEY_SUBVOL",
]


def assert_item_values(devs, kinds=RICH_KINDS):
    """compare_dump finds no difference, and compared each of ``kinds``."""
    from helpers import item_values
    stats, failures = item_values.compare_dump(devs)
    assert not failures, (f"{len(failures)} item values differ from btrfs-progs:\n"
                          + "\n".join(failures[:40]))
    not_seen = [k for k in kinds if not stats[k]]
    assert not not_seen, f"never compared: {not_seen}; stats: {dict(stats)}"
    assert stats["SHARED_DATA_REF"] + stats["inline SHARED_DATA_REF"] > 0, dict(stats)
    return stats


def test_item_values_crc32c_compression_snapshots_quota(loopdevs):
    """Default features (skinny metadata, free space tree, no-holes), 4 KiB
    nodes for deeper trees and more shared leaves, zstd compression."""
    loops = loopdevs(1)
    rich_fs(loops, mount_options="compress=zstd", csum="crc32c", extra=["-n", "4096"])
    stats = assert_item_values(loops.devs)
    assert stats["METADATA_ITEM"] and stats["FREE_SPACE_INFO"]
    assert stats["EXTENT_DATA compressed"] > 2        # the mount option, not only chattr +c


def test_item_values_xxhash_old_formats(loopdevs):
    """No skinny metadata (EXTENT_ITEMs of tree blocks carry key and level),
    no no-holes (explicit hole extents), no free space tree but the v1 space
    cache (FREE_SPACE UNTYPED headers; the kernel writes them only for block
    groups of 100 MiB or more, hence the 2 GiB device)."""
    loops = loopdevs(1, size="2G")
    rich_fs(loops, mount_options="space_cache=v1", csum="xxhash",
            extra=["-O", "^no-holes,^skinny-metadata", "-R", "^free-space-tree"])
    stats = assert_item_values(loops.devs)
    assert stats["EXTENT_ITEM tree block info"] and stats["EXTENT_DATA hole"]
    assert stats["UNTYPED"]
    assert not stats["METADATA_ITEM"] and not stats["FREE_SPACE_INFO"]


def test_item_values_raid1_blake2(loopdevs):
    """Two devices, raid1 data and metadata, blake2 checksums, zlib."""
    loops = loopdevs(2)
    rich_fs(loops, mount_options="compress=zlib", data="raid1", metadata="raid1",
            csum="blake2")
    stats = assert_item_values(loops.devs)
    assert stats["DEV_ITEM"] == 2 and stats["PERSISTENT_ITEM"] == 2


def test_read_file_verifies_checksums(tmp_path, run_btrfsx, btrfsx_json):
    """A data sector bad on one copy is read from the other (with a warning);
    bad on every copy, or on the copy --mirror asks for, is an error, not
    zeros or garbage with exit 0; --no-verify writes what the copy holds."""
    import test_scrub  # its filesystems and layouts
    images, manifest = test_scrub.fresh_fs(tmp_path, "raid1", "raid1", 2, small_files=2)
    lay = test_scrub.Layout(images, btrfsx_json)
    one_bad = lay.extent_of("big0.bin")[0] + 3 * test_scrub.SECTOR
    both_bad = lay.extent_of("big1.bin")[0] + 5 * test_scrub.SECTOR
    for devid, img, phys in lay.copies(one_bad):
        if devid == 1:
            test_scrub.corrupt(img, phys + 100)
    for devid, img, phys in lay.copies(both_bad):
        test_scrub.corrupt(img, phys + 7)
    out = tmp_path / "out"

    def digest():
        return hashlib.sha256(out.read_bytes()).hexdigest()

    mirror1_bad = [m for m in (1, 2)
                   if run_btrfsx("inspect", "read-file", "--mirror", str(m), "-o", out,
                                 "big/big0.bin", *images, check=False)[0] != 0]
    assert len(mirror1_bad) == 1, "exactly the damaged copy fails when asked for"
    rc, _, err = run_btrfsx("inspect", "read-file", "-o", out, "big/big0.bin", *images)
    assert digest() == manifest["big/big0.bin"]["sha256"]
    assert "fails its checksum, read copy" in err
    rc, _, err = run_btrfsx("inspect", "read-file", "-o", out, "big/big1.bin", *images,
                            check=1)
    assert f"file offset {5 * test_scrub.SECTOR}" in err and "no copy matches" in err
    rc, _, err = run_btrfsx("inspect", "read-file", "--no-verify", "-o", out, "big/big1.bin",
                            *images)
    assert digest() != manifest["big/big1.bin"]["sha256"] and not err
    # a file without checksums (nodatasum) is read as it is
    run_btrfsx("inspect", "read-file", "-o", out, "nodatasum.bin", *images)
    assert digest() == manifest["nodatasum.bin"]["sha256"]
