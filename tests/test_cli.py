"""The command line itself: help at every level, prefixes, global options,
exit codes, and --help synopses that match the man pages."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "Documentation"


def groups(run_btrfsx):
    rc, out, _ = run_btrfsx("--help")
    section = out.split("Commands:")[1]
    return [line.split()[0] for line in section.splitlines()
            if line.startswith("    ") and line.split()]


def commands(run_btrfsx, group):
    """The subcommands of a group; [] for a top-level command (btrfsx mkfs)."""
    rc, out, _ = run_btrfsx(group, "--help")
    if "Commands:" not in out:
        return []
    section = out.split("Commands:")[1]
    return [line.split()[0] for line in section.splitlines()
            if line.startswith("    ") and line.split()]


def test_top_level_help_and_version(run_btrfsx):
    rc, out, err = run_btrfsx("--help")
    assert out.startswith("usage: btrfsx ")
    assert "inspect" in groups(run_btrfsx)
    rc, out, err = run_btrfsx("--version")
    assert re.fullmatch(r"btrfsx \d+\.\d+\.\d+\n", out)


def test_no_arguments_is_usage_error(run_btrfsx):
    rc, out, err = run_btrfsx(check=2)
    assert "usage: btrfsx" in out


def test_every_command_has_help(run_btrfsx):
    for group in groups(run_btrfsx):
        if not commands(run_btrfsx, group):
            rc, out, err = run_btrfsx(group, "--help")
            assert out.startswith(f"usage: btrfsx {group} "), group
            rc, out2, err = run_btrfsx(group, "-h")
            assert out2 == out
        for cmd in commands(run_btrfsx, group):
            rc, out, err = run_btrfsx(group, cmd, "--help")
            assert out.startswith(f"usage: btrfsx {group} "), (group, cmd)
            if "-h|--human-readable" in out:
                continue  # -h is a unit option there, as in btrfs-progs
            rc, out2, err = run_btrfsx(group, cmd, "-h")
            assert out2 == out


def synopsis_lines(adoc: Path) -> list[str]:
    text = adoc.read_text()
    section = text.split("== SYNOPSIS", 1)[1].split("\n== ", 1)[0]
    lines = [re.sub(r"[*_]", "", line).strip() for line in section.splitlines()]
    return [line for line in lines if line.startswith("btrfsx ")]


def test_help_synopsis_matches_man_page(run_btrfsx):
    checked = 0
    for group in groups(run_btrfsx):
        page = DOC / f"btrfsx-{group}.adoc"
        assert page.exists(), f"no man page for {group}"
        documented = synopsis_lines(page)
        if not commands(run_btrfsx, group):
            rc, out, err = run_btrfsx(group, "--help")
            synopsis = out.splitlines()[0].removeprefix("usage: ")
            assert synopsis in documented, f"{synopsis!r} not in {page.name} SYNOPSIS"
            checked += 1
        for cmd in commands(run_btrfsx, group):
            rc, out, err = run_btrfsx(group, cmd, "--help")
            synopsis = out.splitlines()[0].removeprefix("usage: ")
            assert synopsis in documented, f"{synopsis!r} not in {page.name} SYNOPSIS"
            checked += 1
    assert checked >= 3


def test_unique_prefixes(run_btrfsx):
    rc, full, _ = run_btrfsx("inspect", "dump-super", "--help")
    rc, short, _ = run_btrfsx("insp", "dump-s", "--help")
    assert full == short


def test_ambiguous_and_unknown_commands(run_btrfsx):
    rc, out, err = run_btrfsx("inspect", "dump", check=2)
    assert "ambiguous" in err and "dump-super" in err and "dump-tree" in err
    rc, out, err = run_btrfsx("nosuchgroup", check=2)
    assert "unknown command 'nosuchgroup'" in err
    rc, out, err = run_btrfsx("inspect", "nosuch", check=2)
    assert "unknown command 'inspect nosuch'" in err


def test_bad_global_and_command_options(run_btrfsx):
    rc, out, err = run_btrfsx("--format", "xml", "inspect", check=2)
    assert "unknown format 'xml'" in err
    rc, out, err = run_btrfsx("--bogus", check=2)
    assert "unknown global option" in err
    rc, out, err = run_btrfsx("inspect", "dump-super", "--bogus", "/dev/null", check=2)
    assert "unknown option '--bogus'" in err and "Try 'btrfsx inspect dump-super --help'" in err


def test_json_refused_where_unsupported(run_btrfsx):
    rc, out, err = run_btrfsx("--format", "json", "inspect", "read-file", "x", "/dev/null",
                              check=2)
    assert "does not support --format json" in err


def test_json_error_object(run_btrfsx, tmp_path):
    img = tmp_path / "zero.img"
    img.write_bytes(bytes(1 << 20))
    rc, out, err = run_btrfsx("--format", "json", "inspect", "dump-super", str(img), check=1)
    doc = json.loads(out)
    assert doc["__header"] == {"version": "1"}
    assert doc["error"]["code"] == 22
    assert "not a btrfs filesystem" in doc["error"]["message"]
    assert "not a btrfs filesystem" in err


def test_h_is_human_readable_where_progs_says_so(run_btrfsx):
    """-h prints help, except in the commands where btrfs-progs means --human-readable;
    -H is accepted there; --help works everywhere."""
    rc, out, err = run_btrfsx("filesystem", "usage", "-h", check=2)
    assert "not enough arguments" in err and not out
    rc, out, err = run_btrfsx("filesystem", "usage", "-H", "--iec", "-T", check=2)
    assert "not enough arguments" in err
    rc, out, err = run_btrfsx("filesystem", "usage", "--help")
    assert out.startswith("usage: btrfsx filesystem usage")
    rc, out, err = run_btrfsx("filesystem", "show", "-h")
    assert out.startswith("usage: btrfsx filesystem show")
    rc, out, err = run_btrfsx("filesystem", "show", "-k", check=2)
    assert "unknown option" in err
