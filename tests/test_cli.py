# SPDX-License-Identifier: GPL-2.0-or-later
"""The command line itself: help at every level, prefixes, global options,
exit codes, and --help synopses that match the man pages."""
from __future__ import annotations

import json
import subprocess
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
    assert re.fullmatch(r"btrfsx \d+\.\d+\.\d+( \(test build: fault injection\))?\n", out)


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
    assert doc["__header"]["version"] == "2"
    assert doc["error"]["code"] == 22 and doc["error"]["exit_code"] == 1
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


@pytest.mark.parametrize("args", [
    ["inspect", "dump-super", "--bogus", "x"],
    ["nosuchgroup"],
    ["inspect", "nosuch"],
    ["inspect"],
    ["mkfs", "-d", "foo", "x.img"],
])
def test_json_usage_errors_have_an_error_object(run_btrfsx, args):
    """A usage error in JSON mode is a JSON document with an error object, exit 2."""
    rc, out, err = run_btrfsx("--format", "json", *args, check=2)
    doc = json.loads(out)
    assert doc["error"]["code"] == 22 and doc["error"]["exit_code"] == 2
    assert doc["error"]["message"] and doc["error"]["message"] in err


@pytest.fixture(scope="module")
def small_image(tmp_path_factory):
    """A small btrfs image file; tests only read it (the bad-value test checks that)."""
    img = tmp_path_factory.mktemp("cli") / "fs.img"
    with open(img, "wb") as f:
        f.truncate(300 << 20)
    subprocess.run(["mkfs.btrfs", "-q", "-f", str(img)], check=True, capture_output=True)
    return img


def test_format_after_the_group_and_the_command(run_btrfsx, small_image):
    img = small_image
    want = json.loads(run_btrfsx("--format", "json", "inspect", "dump-super", img)[1])
    for args in (["inspect", "--format", "json", "dump-super", img],
                 ["inspect", "dump-super", "--format=json", img],
                 ["inspect", "dump-super", img, "--format", "json"]):
        assert json.loads(run_btrfsx(*args)[1]) == want, args
    rc, out, err = run_btrfsx("inspect", "dump-super", img, "--format", check=2)
    assert "'--format' needs a value" in err
    rc, out, err = run_btrfsx("inspect", "dump-super", "--format", "xml", img, check=2)
    assert "unknown format 'xml'" in err


def test_output_write_errors_fail(btrfsx, small_image):
    """util-linux's close_stdout: output lost to a full disk is a failure."""
    img = small_image
    for args in (["--format", "json", "inspect", "dump-tree", str(img)],
                 ["inspect", "dump-tree", str(img)], ["--help"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([btrfsx, *args], stdout=full, stderr=subprocess.PIPE, text=True)
        assert p.returncode == 1, args
        assert "write error on standard output" in p.stderr, args


@pytest.mark.parametrize("args, message", [
    (["mkfs", "-d", "foo", "IMG"], "unknown profile 'foo'"),
    (["mkfs", "-b", "xyz", "IMG"], "invalid byte count"),
    (["mkfs", "-O", "bogus", "IMG"], "unknown feature"),
    (["mkfs", "IMG:bogus"], "unknown allocation hint 'bogus'"),
    (["property", "set", "IMG", "allocation_hint", "bogus"], "unknown allocation hint"),
    (["property", "set", "IMG", "nosuchprop", "x"], "unknown property 'nosuchprop'"),
    (["property", "get", "IMG", "nosuchprop"], "unknown property 'nosuchprop'"),
    (["--verbose", "inspect"], "unknown global option '--verbose'"),
])
def test_bad_values_are_usage_errors(run_btrfsx, small_image, args, message):
    """Every value a command can refuse from its arguments alone exits 2 and writes nothing."""
    img = small_image
    before = img.read_bytes()
    args = [a.replace("IMG", str(img)) for a in args]
    rc, out, err = run_btrfsx(*args, check=2)
    assert message in err
    assert img.read_bytes() == before


SI_SIZES = [
    (["mkfs", "-b", "1GB", "IMG"], "1GB", "1000000000 (bytes) for 1 GB"),
    (["mkfs", "-n", "16kB", "IMG"], "16kB", "16000 (bytes) for 16 kB"),
    (["filesystem", "plan", "IMG", "--add", "4TB"], "4TB", "4000000000000 (bytes) for 4 TB"),
    (["filesystem", "plan", "IMG", "--replace", "1=2tb"], "2tb", "2000000000000"),
    (["balance", "misplaced", "--max-bytes", "20GB", "IMG"], "20GB", "20000000000"),
    (["scrub", "start", "--offline", "--memory", "64MB", "IMG"], "64MB", "64000000"),
    (["filesystem", "plan", "IMG", "--resize", "1=1PB"], "1PB", "1000000000000000 (bytes)"),
    (["filesystem", "plan", "IMG", "--add", "1EB"], "1EB", "1000000000000000000"),
]


@pytest.mark.parametrize("args, value, decimal", SI_SIZES)
def test_si_size_suffixes_are_refused_everywhere(run_btrfsx, small_image, args, value, decimal):
    """Issue 39, defect 2: an SI suffix (kB, MB, GB, TB, PB, EB) is refused by every
    command, as mkfs.btrfs refuses '-b 1GB', with what to write instead; never read as
    binary ('plan --add 4TB' planned 4 TiB)."""
    img = small_image
    before = img.read_bytes()
    args = [a.replace("IMG", str(img)) for a in args]
    rc, out, err = run_btrfsx(*args, check=2)
    assert f"'{value}' is not a size btrfsx takes" in err, err
    assert "decimal (SI) suffix" in err and decimal in err, err
    assert img.read_bytes() == before


def test_binary_size_suffixes_still_taken(run_btrfsx, small_image):
    """K, M, G, T with and without iB, in any case, are powers of 1024 (as before)."""
    img = small_image
    for add in ("1T", "1TiB", "1tib", "1024G", "1048576m"):
        doc = json.loads(run_btrfsx("--format", "json", "filesystem", "plan", str(img),
                                    "--add", add)[1])
        assert doc["after"]["devices"][-1]["size"] == 1 << 40, add


def test_top_man_page_names_every_group_and_variable(run_btrfsx):
    """btrfsx(8) lists every command group and every BTRFSX_* variable the code reads."""
    page = (DOC / "btrfsx.adoc").read_text()
    for group in groups(run_btrfsx):
        assert f"*{group}*::" in page, group
    src = Path(__file__).resolve().parent.parent
    names = set()
    for path in list(src.glob("*.c")) + list(src.glob("*/*.c")):
        names |= set(re.findall(r'getenv\("(BTRFSX_[A-Z_]+)"\)', path.read_text()))
    assert names
    for name in names:
        assert f"*{name}*" in page, name


def test_exit_status_lists_every_code():
    """Issue 39, defect 8: btrfsx(8)'s EXIT STATUS has every code the commands use,
    5 (a planned change would fail) included."""
    page = (DOC / "btrfsx.adoc").read_text()
    section = page.split("== EXIT STATUS", 1)[1].split("\n== ", 1)[0]
    src = (Path(__file__).resolve().parent.parent / "cmds" / "commands.h").read_text()
    codes = {int(c) for c in re.findall(r"#define BX_EXIT_\w+\s+(\d+)", src)}
    assert codes >= {2, 3, 4, 5}, codes
    for code in codes | {0, 1}:
        assert f"*{code}*::" in section, code


@pytest.mark.parametrize("args, hint", [
    (["filesytem", "show"], "unknown command 'filesytem'; did you mean 'filesystem'?"),
    (["filesystem", "plna", "IMG"], "unknown command 'filesystem plna'; did you mean 'plan'?"),
    (["scurb", "status"], "did you mean 'scrub'?"),
    (["balance", "misplaced", "--dry-rn", "IMG"],
     "unknown option '--dry-rn'; did you mean '--dry-run'?"),
    (["filesystem", "usage", "--stirct", "IMG"], "did you mean '--strict'?"),
    (["inspect", "dump-super", "--fulll", "IMG"], "did you mean '--full'?"),
    (["--formt", "json", "inspect"], "unknown global option '--formt'; did you mean '--format'?"),
    (["frobnicate"], "unknown command 'frobnicate'\n"),
    (["balance", "misplaced", "--zzzzzz", "IMG"], "unknown option '--zzzzzz'\n"),
])
def test_did_you_mean(run_btrfsx, small_image, args, hint):
    """Issue 39, defect 8: a mistyped command or long option gets a "did you mean" when
    one word is close enough (edit distance), and nothing when none is."""
    args = [a.replace("IMG", str(small_image)) for a in args]
    _, out, err = run_btrfsx(*args, check=2)
    assert hint in err, err


def test_man_pages_lose_no_plus_sign():
    """A line ending in ' +' is asciidoctor's hard line break: the '+' vanishes from the
    page (btrfsx-filesystem(8) printed 'data_free_in_chunks data_new_chunks')."""
    for page in DOC.glob("*.adoc"):
        for number, line in enumerate(page.read_text().splitlines(), 1):
            assert not line.endswith(" +"), f"{page.name}:{number}: {line}"
