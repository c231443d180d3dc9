# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile input, table-driven: every command with wrong arguments,
nonexistent paths, directories, character devices, zero-length files,
images of other filesystems, huge and negative numbers and overlong strings.

Each must exit 1 (failure) or 2 (usage) with a message on stderr that names
what it refused (a monitoring plugin, `monitor report --check`: exit 3 with
its one status line on stdout saying it, and stderr empty), leave every
image as it was (and create no file), and give no sanitizer report. ROWS holds the arguments of each command with one slot
filled in turn by every input of its kind; test_every_command_has_rows fails
when a command appears in the help without rows here."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers import fsutil

pytestmark = pytest.mark.root

SANITIZER = ("Sanitizer", "runtime error:", "AddressSanitizer", "LeakSanitizer")

# Slot kinds: {P} a path to refuse, {N} a number, {S} a string. Fixed
# objects: {B} a btrfs image file, {M} the mount point of a btrfs, {NEW} a
# file name that must not come to exist, {DIR} a directory.
NUMBERS = ["18446744073709551616", "99999999999999999999999999", "-1", "-9223372036854775809",
           "0x10000000000000000", "1e999", "nan", "", "12abc"]
STRINGS = ["x" * 5000, "", "\t", "名前", "a b"]
# Where some of the inputs are valid, a row names its own: {L} a label, {O}
# a feature list (empty is the default), {Z} a size that parses but no file
# can have. {Ps} are the paths but the truncated btrfs, for commands that
# read only its (good) superblock; {Pp} the paths but the empty file, which
# is a policy file with no keys (maintain's defaults); {Q} the paths mkfs -b
# refuses (it creates a missing file, grows an empty one and takes one
# without a signature).
OWN = {
    "{L}": ["x" * 256, "x" * 5000],
    "{O}": ["x" * 5000, "\t", "名前", "a b", "^"],
    "{Z}": ["1P", "8E", "16E", "9223372036854775807", "17179869184G"],
}

ROWS: dict[str, list[tuple[str, ...]]] = {
    "filesystem show": [
        ("{P}",), ("--raw", "{P}"), ("--bogus",),
    ],
    "filesystem usage": [
        ("{P}",), ("-T", "--strict", "{P}"), (), ("--bogus", "{B}"), ("{B}", "{P}"),
    ],
    "filesystem plan": [
        ("{P}", "--add", "1G"), ("{B}", "--remove", "{N}"), ("{B}", "--resize", "{S}"),
        ("{B}", "--resize", "1={N}"), ("{B}", "--add", "{S}"), ("{B}", "--hint", "{S}"),
        ("{B}", "--convert", "{S}"), ("{B}", "--replace", "{S}"), ("{B}",),
        ("--relocate",), ("--bogus", "{B}"), ("{B}", "{P}", "--remove", "1"),
        ("{B}", "--balance", "{S}"), ("{B}", "--balance", "dusage={N}"), ("{B}", "--resume"),
    ],
    "inspect dump-super": [
        ("{Ps}",), ("-a", "{Ps}"), (), ("{B}", "{B}"),
    ],
    "inspect dump-tree": [
        ("{P}",), ("-t", "{S}", "{B}"), ("-t", "{N}", "{B}"), ("-b", "{N}", "{B}"),
        ("-b", "4096", "{B}"), ("{B}", "{P}"),
    ],
    "inspect read-file": [
        ("dir/file", "{P}"), ("{S}", "{B}"), ("--mirror", "{N}", "hello", "{B}"),
        ("--mirror", "9", "hello", "{B}"), ("-o", "{DIR}", "hello", "{B}"), ("hello",),
        ("sub", "{B}"),
    ],
    "inspect kernel-traits": [
        ("--kernel", "{S}"), ("--kernel", "{N}"), ("extra",),
    ],
    "maintain plan": [
        ("{P}",), ("--policy", "{Pp}", "{M}"), ("{M}", "extra"), (),
    ],
    "maintain run": [
        ("{P}",), ("--budget", "{N}", "{M}"), ("--window", "{S}", "{M}"),
        ("--policy", "{Pp}", "{M}"), ("--dry-run", "{P}"), ("{M}", "extra"), (),
    ],
    "read-policy get": [
        ("{P}",), (), ("{M}", "extra"),
    ],
    "read-policy set": [
        ("{P}", "pid"), ("{M}", "{S}"), ("{M}", "round-robin:{N}"), ("{M}", "devid:{N}"),
        ("{M}",),
    ],
    "read-policy apply": [
        ("{P}",), ("{M}", "extra"),
    ],
    "read-policy list": [
        ("extra",), ("--bogus",),
    ],
    "read-policy forget": [
        ("{P}",), ("{S}",), (),
    ],
    "read-policy tunables": [
        ("{P}",), ("{M}", "{S}"), ("{M}", "roundrobin_rot_nonlocal_inc", "{N}"),
    ],
    "read-policy recommend": [
        ("{P}",), ("--seconds", "{N}", "{M}"), ("--readers", "{N}", "{M}"),
        ("--pattern", "{S}", "{M}"), (), ("{M}", "extra"),
    ],
    "property get": [
        ("{P}",), ("{B}", "{S}"), ("-t", "{S}", "{B}"), ("{P}", "allocation_hint"),
    ],
    "property set": [
        ("{P}", "allocation_hint", "m"), ("{B}", "allocation_hint", "{S}"),
        ("{B}", "allocation_hint", "{N}"), ("-f", "{B}", "allocation_hint", "{N}"),
        ("{B}", "{S}", "m"), ("-t", "{S}", "{B}", "allocation_hint", "m"),
        ("{B}", "allocation_hint"),
    ],
    "property list": [
        ("{Ps}",), ("-t", "{S}"),
    ],
    "device io-stats": [
        ("{P}",), ("-i", "{N}", "{M}"), ("-c", "{N}", "{M}"), ("-i", "0", "{M}"),
        ("-c", "0", "{M}"),
    ],
    "device usage": [
        ("{P}",), ("-T", "{P}"), (), ("--bogus", "{B}"), ("{B}", "{P}"), ("{M}", "{P}"),
    ],
    "device property get": [
        ("{P}",), ("{B}", "{S}"), ("{P}", "allocation_hint"),
    ],
    "device property set": [
        ("{P}", "allocation_hint", "m"), ("{B}", "allocation_hint", "{S}"),
        ("-f", "{B}", "allocation_hint", "{N}"), ("{B}", "{S}", "m"),
    ],
    "device property list": [
        ("{Ps}",), ("{B}", "extra"),
    ],
    "scrub start": [
        ("--offline", "-B", "{P}"), ("--offline", "-B", "-r", "{P}"), ("-B", "{B}"),
        ("--offline", "-B", "{B}", "{P}"), ("--offline", "-B", "--io-timeout", "{N}", "{B}"),
    ],
    "scrub status": [
        ("--offline", "{P}"), ("{B}",), ("--offline",),
    ],
    "monitor record": [
        ("{P}",), ("--keep", "{S}", "{M}"), ("--keep", "{N}", "{M}"), ("--db", "{DIR}", "{M}"),
    ],
    "monitor report": [
        ("--db", "{P}"), ("--window", "{S}"), ("--window", "{N}"), ("--check", "-w", "{N}"),
        ("--check", "-c", "{S}"), ("--check", "--max-age", "{N}"), ("--min-history", "{S}"),
        ("--check", "--db", "{P}"),
    ],
    "monitor metrics": [
        ("--db", "{P}"), ("--window", "{S}"), ("--window", "{N}"), ("--min-history", "{N}"),
    ],
    "filesystem misplaced": [
        ("{P}",), ("--raw", "{P}"), (), ("--bogus", "{B}"), ("{B}", "{P}"),
    ],
    "balance misplaced": [
        ("{P}",), ("--dry-run", "{P}"), (), ("{M}", "extra"), ("--limit", "{N}", "{M}"),
        ("--max-bytes", "{N}", "{M}"), ("--max-bytes", "{S}", "{M}"), ("--pause", "{S}", "{M}"),
        ("--pause", "{N}", "{M}"),
    ],
    "mkfs": [
        ("{P}",), ("-q", "{P}:m"), ("-b", "{N}", "{NEW}"), ("-b", "{Z}", "{NEW}"), ("-n", "{N}", "-b", "256M", "{NEW}"),
        ("-s", "{N}", "-b", "256M", "{NEW}"), ("-L", "{L}", "-b", "256M", "{NEW}"),
        ("-U", "{S}", "-b", "256M", "{NEW}"), ("--csum", "{S}", "-b", "256M", "{NEW}"),
        ("-O", "{O}", "-b", "256M", "{NEW}"), ("-d", "{S}", "-b", "256M", "{NEW}"),
        ("-m", "{S}", "-b", "256M", "{NEW}"), ("-b", "256M", "{NEW}:{S}"),
        ("-b", "256M", "{NEW}", "{Q}"),
    ],
}


# --------------------------------------------------------------------------- the objects

class Objects:
    """The things the slots are filled with, in a scratch directory."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.btrfs = root / "btrfs.img"
        content = root / "content"
        (content / "sub").mkdir(parents=True)
        (content / "hello").write_text("hello\n")
        with open(self.btrfs, "wb") as f:
            f.truncate(256 << 20)
        fsutil.run(["mkfs.btrfs", "-q", "-f", "-K", "--rootdir", str(content), str(self.btrfs)])
        (root / "dir").mkdir()
        (root / "empty").touch()
        os.mkfifo(root / "fifo")
        os.symlink("loop", root / "loop")
        with open(self.btrfs, "rb") as src:
            head = src.read(1 << 20)
        (root / "truncated.img").write_bytes(head)       # superblock, no trees
        (root / "garbage.img").write_bytes(random.Random(7).randbytes(4 << 20))
        self.paths = {
            "missing": str(root / "does-not-exist"),
            "directory": str(root / "dir"),
            "/dev/null": "/dev/null",
            "/dev/zero": "/dev/zero",
            "empty": str(root / "empty"),
            "fifo": str(root / "fifo"),
            "symlink loop": str(root / "loop"),
            "truncated btrfs": str(root / "truncated.img"),
            "garbage": str(root / "garbage.img"),
            "overlong": "/" + "a" * 5000,
            "long name": str(root / ("n" * 300)),
        }
        self.images = [self.btrfs, root / "empty", root / "truncated.img", root / "garbage.img"]
        for fs, size, cmd in (("ext4", 64 << 20, ["mkfs.ext4", "-q", "-F"]),
                              ("xfs", 300 << 20, ["mkfs.xfs", "-q", "-f"])):
            if not shutil.which(cmd[0]):
                continue
            img = root / f"{fs}.img"
            with open(img, "wb") as f:
                f.truncate(size)
            fsutil.run([*cmd, str(img)])
            self.paths[fs] = str(img)
            self.images.append(img)
        self.new = root / "new.img"
        self.mount_image = root / "mounted.img"
        with open(self.mount_image, "wb") as f:
            f.truncate(256 << 20)
        self.loops = fsutil.LoopDevices([self.mount_image]).attach()
        fsutil.mkfs(self.loops.devs)
        self.mnt = fsutil.mount(self.loops.devs)

    def close(self):
        fsutil.umount(self.mnt)
        self.loops.detach()

    def fill(self, template: tuple[str, ...], kind: str | None, value: str | None):
        fixed = {"{B}": str(self.btrfs), "{M}": str(self.mnt), "{NEW}": str(self.new),
                 "{DIR}": self.paths["directory"]}
        out = []
        for arg in template:
            for k, v in fixed.items():
                arg = arg.replace(k, v)
            if kind:
                arg = arg.replace(kind, value)
            out.append(arg)
        return out


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    objs = Objects(tmp_path_factory.mktemp("hostile"))
    yield objs
    objs.close()


def cases(objects):
    """(command, args, the input, the option it is the value of) for every
    row and input."""
    for command, templates in ROWS.items():
        for template in templates:
            joined = " ".join(template)
            kinds = ("{P}", "{Ps}", "{Pp}", "{Q}", "{N}", "{S}", *OWN)
            kind = next((k for k in kinds if k in joined), None)
            paths = objects.paths
            values = {"{P}": list(paths.values()), "{N}": NUMBERS, "{S}": STRINGS,
                      "{Ps}": [v for k, v in paths.items() if k != "truncated btrfs"],
                      "{Pp}": [v for k, v in paths.items() if k != "empty"],
                      "{Q}": [v for k, v in paths.items()
                              if k not in ("missing", "empty", "garbage")],
                      **OWN}.get(kind, [None])
            slot = next((i for i, a in enumerate(template) if kind and kind in a), 0)
            option = template[slot - 1] if slot and template[slot - 1].startswith("-") else None
            for value in values:
                args = objects.fill(template, kind, value)
                yield command, args, value, option


def names_it(err: str, value: str | None, option: str | None, args: list[str]) -> bool:
    """The message names the refused input: the value (quoted when empty or
    blank; its start or its length when long) or the option it was given to,
    or for rows without a slot an argument, or it is a usage error pointing
    at the help."""
    if option and f"({option})" in err:
        return True
    if value is None:
        return any(a in err for a in args if a) or "Try 'btrfsx " in err
    if not value.strip():
        return "''" in err or "empty" in err or f"'{value}'" in err
    return value[:64] in err or (len(value) > 255 and str(len(value)) in err)


def run(btrfsx, command, args, env):
    p = subprocess.run([btrfsx, *command.split(), *args], capture_output=True, text=True,
                       errors="surrogateescape", env=env, timeout=60,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


# --------------------------------------------------------------------------- the tests

def all_commands(run_btrfsx, path=()):
    """Every command under @path, from the help of each group."""
    rc, out, _ = run_btrfsx(*path, "--help")
    if "Commands:" not in out:
        return [" ".join(path)]
    found = []
    for line in out.split("Commands:")[1].splitlines():
        if line.startswith("    ") and line.split():
            found += all_commands(run_btrfsx, (*path, line.split()[0]))
    return found


def test_every_command_has_rows(run_btrfsx):
    assert sorted(all_commands(run_btrfsx)) == sorted(ROWS)


def test_hostile_input(objects, btrfsx, tmp_path):
    env = dict(os.environ, BTRFSX_STATE_DIR=str(tmp_path / "state"),
               BTRFSX_CONFIG_DIR=str(tmp_path / "config"))
    (tmp_path / "config").mkdir()
    policy = Path(f"/sys/fs/btrfs/{fsutil.read_fsid(objects.loops.devs[0])}/read_policy")
    before = fsutil.images_state(objects.images)
    policy_before = policy.read_text() if policy.exists() else None
    failures, tried, slowest = [], 0, (0.0, "", [])
    listing = sorted(objects.root.iterdir())
    for command, args, value, option in cases(objects):
        tried += 1
        started = time.monotonic()
        try:
            rc, out, err = run(btrfsx, command, args, env)
        except subprocess.TimeoutExpired:
            rc, out, err = None, "", "(still running after a minute)"
        slowest = max(slowest, (time.monotonic() - started, command, args[:3]))
        # a monitoring plugin says every failure as UNKNOWN on its status line
        plugin = command == "monitor report" and "--check" in args
        said = (out.splitlines() or [""])[0] if plugin else err
        shown = f"btrfsx {command} {' '.join(repr(a[:60]) for a in args)}: exit {rc}\n{said[:400]}"
        created = set(objects.root.iterdir()) - set(listing)
        for path in created:
            path.unlink()
        if rc not in ((3,) if plugin else (1, 2)):
            failures.append(f"{shown}\n(exit {'3' if plugin else '1 or 2'} expected)")
        elif plugin and (err or not said.startswith("BTRFSX UNKNOWN - ")):
            failures.append(f"{shown}\n(one status line, nothing on stderr expected)")
        elif not said.strip() or not names_it(said, value, option, args):
            failures.append(f"{shown}\n(the message does not name {str(value)[:40]!r})")
        elif any(s in err + out for s in SANITIZER):
            failures.append(f"{shown}\n(sanitizer report)")
        elif created:
            failures.append(f"{shown}\n(created {', '.join(map(str, created))})")
        elif fsutil.images_state(objects.images) != before:
            failures.append(f"{shown}\n(an image changed)")
            break
        elif policy_before is not None and policy.read_text() != policy_before:
            failures.append(f"{shown}\n(the read policy changed)")
            break
    assert not any((tmp_path / "config").iterdir()), "a read policy was recorded"
    print(f"hostile inputs tried: {tried}; the slowest: {slowest}")
    assert not failures, f"{len(failures)} of {tried}:\n\n" + "\n\n".join(failures)
