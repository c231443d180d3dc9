# SPDX-License-Identifier: GPL-2.0-or-later
"""The bash completion (completions/btrfsx): its word lists against what
`btrfsx ... --help` prints, its options against what the binary accepts, and
what it offers on a command line."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.bashcomp import SCRIPT, call, complete

HINTS = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"]
POLICIES = ["pid", "round-robin", "devid"]


def help_text(run_btrfsx, path: str) -> str:
    rc, out, _ = run_btrfsx(*path.split(), "--help")
    return out


def listed_commands(text: str) -> list[str]:
    if "Commands:" not in text:
        return []
    section = text.split("Commands:")[1]
    return [line.split()[0] for line in section.splitlines()
            if line.startswith("    ") and line.split()]


@pytest.fixture(scope="module")
def tree(run_btrfsx) -> dict[str, list[str]]:
    """Every path of the command tree ('' is the top level, 'device property' a
    nested group) with its subcommands; [] for a command."""
    found: dict[str, list[str]] = {}
    pending = [""]
    while pending:
        path = pending.pop()
        found[path] = listed_commands(help_text(run_btrfsx, path))
        pending += [f"{path} {cmd}".strip() for cmd in found[path]]
    return found


OPTION = re.compile(r"(?:^|(?<=[\s\[|,(]))(--?[A-Za-z][A-Za-z0-9-]*)")


def help_options(text: str) -> set[str]:
    """Every option the help names, in the synopsis, the option list or the
    prose; -h and --help work everywhere."""
    return set(OPTION.findall(text)) | {"-h", "--help"}


def test_commands_match_help(tree):
    assert tree[""] and tree["device property"], tree
    for path, commands in tree.items():
        assert call("_btrfsx_subcommands", path) == commands, path


def test_options_match_help(run_btrfsx, tree):
    for path in tree:
        offered = call("_btrfsx_options", path)
        assert len(offered) == len(set(offered)), f"{path}: {offered}"
        assert set(offered) == help_options(help_text(run_btrfsx, path)), path


def run_quietly(btrfsx, tmp_path, *args):
    """Runs btrfsx away from the system's configuration, state and sysfs."""
    env = dict(os.environ, BTRFSX_CONFIG_DIR=str(tmp_path / "etc"),
               BTRFSX_STATE_DIR=str(tmp_path / "state"),
               BTRFSX_SYSFS_ROOT=str(tmp_path / "sys"))
    return subprocess.run([btrfsx, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)


def test_option_arguments_match_binary(btrfsx, tree, tmp_path):
    """`btrfsx <cmd> <opt> --help` prints the help exactly when <opt> takes no
    argument; otherwise '--help' is taken as the option's argument."""
    checked = 0
    for path, commands in tree.items():
        if commands:
            continue
        words = path.split()
        usage = run_quietly(btrfsx, tmp_path, *words, "--help").stdout
        for opt in call("_btrfsx_options", path):
            run = run_quietly(btrfsx, tmp_path, *words, opt, "--help")
            takes_value = bool(call("_btrfsx_option_value", path, opt))
            assert (run.stdout != usage) == takes_value, (path, opt, run.stderr)
            if takes_value:
                assert run.returncode != 0, (path, opt)
            checked += 1
    assert checked > 50
    for opt in ["--format", "--version"]:
        run = run_quietly(btrfsx, tmp_path, opt, "--help")
        assert (run.returncode != 0) == bool(call("_btrfsx_option_value", "", opt)), opt


def test_arguments_cover_every_command(tree):
    for path, commands in tree.items():
        if not commands and path not in ("read-policy list", "inspect kernel-traits"):
            assert call("_btrfsx_arguments", path), f"no arguments for {path}"


def words_after(text: str, start: str, end: str) -> list[str]:
    """The comma-separated names between `start` and `end` in a help text."""
    part = text.split(start, 1)[1].split(end, 1)[0]
    part = re.sub(r"\((the )?default\)|\bor\b", ",", part)
    return [w.strip() for w in part.replace("\n", " ").split(",") if w.strip()]


def test_value_names_match_help(run_btrfsx, btrfsx_json):
    mkfs = help_text(run_btrfsx, "mkfs")
    assert call("_btrfsx_words", "profile") == words_after(mkfs, "data profile:", "-m|")
    assert call("_btrfsx_words", "csum") == words_after(mkfs, "<type>", "-n|")
    assert call("_btrfsx_words", "features") == words_after(mkfs, "<list>", ";")
    assert call("_btrfsx_words", "hint") == words_after(mkfs, "hint:", "(short:")
    assert call("_btrfsx_words", "tree") == \
        words_after(help_text(run_btrfsx, "inspect dump-tree"), "Tree names:", ", or a tree id")
    assert call("_btrfsx_words", "type") == \
        words_after(help_text(run_btrfsx, "property get"), "--type <type>", "\n")
    assert call("_btrfsx_words", "tunable") == \
        re.findall(r"roundrobin_\w+", help_text(run_btrfsx, "read-policy tunables"))
    assert call("_btrfsx_words", "format") == ["text", "json"]
    assert "--format text|json" in help_text(run_btrfsx, "")
    for kind in ("device", "filesystem"):
        props = btrfsx_json("property", "list", "-t", kind)["properties"]
        assert call("_btrfsx_words", f"{kind}-property") == [p["name"] for p in props]


def test_hint_and_policy_names_match_property_descriptions(btrfsx_json):
    props = {p["name"]: p["description"]
             for p in btrfsx_json("property", "list")["properties"]}
    named = re.search(r"\(([^)]*)\)$", props["allocation_hint"]).group(1)
    assert HINTS == call("_btrfsx_words", "hint") == named.split(", ")
    named = re.search(r"reads \((.*)\)$", props["read_policy"]).group(1)
    assert POLICIES == call("_btrfsx_words", "policy") == \
        [re.sub(r"\[.*\]", "", w) for w in named.split(", ")]


# ------------------------------------------------------------ what TAB offers

def test_groups_commands_and_prefixes():
    assert complete("btrfsx ") == \
        "filesystem inspect read-policy property device scrub monitor balance maintain mkfs".split()
    assert complete("btrfsx fi") == ["filesystem"]
    assert complete("btrfsx bal ") == ["misplaced"]
    assert complete("btrfsx mai ") == ["plan", "run"]
    assert complete("btrfsx fi mis") == ["misplaced"]
    assert complete("btrfsx inspect dump-") == ["dump-super", "dump-tree"]
    assert complete("btrfsx insp dump-s -") == ["-a", "--all", "-f", "--full", "-h", "--help"]
    assert complete("btrfsx device ") == ["io-stats", "usage", "property"]
    assert complete("btrfsx dev prop s") == ["set"]
    assert complete("btrfsx --format json scr ") == ["start", "status"]
    assert complete("btrfsx nosuch ") == []
    assert complete("btrfsx inspect dump ") == [], "ambiguous prefix"


def test_options():
    assert complete("btrfsx --") == ["--format", "--version", "--help"]
    assert complete("btrfsx scrub start --no-") == ["--no-progress", "--no-readahead"]
    assert complete("btrfsx filesystem usage --s") == ["--strict", "--si"]
    assert complete("btrfsx balance misplaced --f") == ["--forbidden-only", "--force"]
    assert complete("btrfsx balance misplaced --pause ") == []
    assert "--persistent" in complete("btrfsx read-policy set /mnt -")
    assert complete("btrfsx mkfs --cs") == ["--csum"]


def test_option_values():
    assert complete("btrfsx --format ") == ["text", "json"]
    assert complete("btrfsx --format=j") == ["json"], "bash replaces what follows '='"
    assert complete("btrfsx inspect dump-tree -t ch") == ["chunk"]
    assert complete("btrfsx inspect dump-tree --tree=free") == ["free-space"]
    assert complete("btrfsx mkfs -d raid1") == ["raid1", "raid1c3", "raid1c4", "raid10"]
    assert complete("btrfsx mkfs --csum ") == ["crc32c", "xxhash", "sha256", "blake2"]
    assert complete("btrfsx mkfs -O no-holes,^q") == ["no-holes,^quota"]
    assert complete("btrfsx property get -t ") == ["filesystem", "device"]
    assert complete("btrfsx inspect dump-tree -b ") == []


def test_hint_names_after_allocation_hint():
    assert complete("btrfsx device property set /dev/sdb allocation_hint ") == HINTS
    assert complete("btrfsx property set /dev/sdb allocation_hint meta") == \
        ["metadata_preferred", "metadata_only"]
    assert complete("btrfsx dev prop set -f /dev/sdb allocation_hint data_o") == ["data_only"]


def test_hint_names_after_mkfs_device_colon():
    # bash splits at ':' and replaces only what follows it
    assert complete("btrfsx mkfs /dev/sdb:") == HINTS
    assert complete("btrfsx mkfs -L x /dev/sda:data_only /dev/sdb:meta") == \
        ["metadata_preferred", "metadata_only"]


def test_read_policy_names():
    assert complete("btrfsx read-policy set /mnt ") == POLICIES
    assert complete("btrfsx read-policy set --persistent /mnt r") == ["round-robin"]
    assert complete("btrfsx property set /mnt read_policy ") == POLICIES
    assert complete("btrfsx prop set -t filesystem /mnt read_policy d") == ["devid"]


def test_property_names_by_object(tmp_path):
    image = tmp_path / "img"
    image.write_bytes(b"")
    assert complete(f"btrfsx property get {image} ") == ["allocation_hint"]
    assert complete(f"btrfsx property set {tmp_path} ") == ["read_policy"]
    assert complete(f"btrfsx property get -t device {tmp_path} ") == ["allocation_hint"]
    assert complete("btrfsx property get /nonexistent ") == ["allocation_hint", "read_policy"]
    assert complete("btrfsx device property get /dev/sdb ") == ["allocation_hint"]


def block_device() -> str:
    for name in sorted(os.listdir("/dev")):
        path = f"/dev/{name}"
        if Path(path).is_block_device():
            return path
    pytest.skip("no block device in /dev")


def test_devices_and_files(tmp_path):
    dev = block_device()
    (tmp_path / "disk.img").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    os.symlink("/dev/null", tmp_path / "null")
    for line in ("btrfsx scrub start --offline ", "btrfsx mkfs -f ",
                 "btrfsx inspect dump-super ", "btrfsx device property get "):
        offered = complete(line, cwd=tmp_path)
        assert dev in offered and "disk.img" in offered and "dir" in offered, line
        assert "null" not in offered, "character devices are no devices"
    assert dev in complete(f"btrfsx mkfs {dev[:-1]}", cwd=tmp_path)
    assert "/dev/null" not in complete("btrfsx inspect dump-super /dev/nu")
    assert sorted(complete("btrfsx mkfs d", cwd=tmp_path)) == ["dir", "disk.img"]
    assert complete("btrfsx inspect read-file ", cwd=tmp_path) == [], "a path inside the fs"
    assert "disk.img" in complete("btrfsx inspect read-file a/b ", cwd=tmp_path)


def test_directories_for_mount_points(tmp_path):
    (tmp_path / "mnt").mkdir()
    (tmp_path / "mnt.img").write_bytes(b"")
    for line in ("btrfsx read-policy get m", "btrfsx device io-stats -i 1 m",
                 "btrfsx read-policy set --persistent m"):
        assert complete(line, cwd=tmp_path) == ["mnt"], line
    assert complete("btrfsx read-policy tunables mnt ", cwd=tmp_path) == \
        call("_btrfsx_words", "tunable")
    assert complete("btrfsx read-policy list ", cwd=tmp_path) == []


def test_completion_is_registered():
    out = subprocess.run(["bash", "--norc", "-c", f"source {SCRIPT}; complete -p btrfsx"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "complete -F _btrfsx btrfsx"
