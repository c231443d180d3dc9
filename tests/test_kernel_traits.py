# SPDX-License-Identifier: GPL-2.0-or-later
"""The register of kernel behaviour (model/kernel/register.c, issue 40) and
--kernel: the register, its unit tests, its developer document and the man
page's table hold to each other; `btrfsx inspect kernel-traits` lists it;
`filesystem usage`, `plan` and `misplaced` follow the kernel asked for
(--kernel, or BTRFSX_KERNEL) and say which; a version the register does not
know is a usage error.

Whether the traits are right for each kernel is what the aged plans and
the guests test (tests/test_plan.py, tests/vm/); here, that one kernel's
plan differs from another's where their traits differ, and equals the
running kernel's where it is the running kernel."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from helpers import fsutil

TOP = Path(__file__).resolve().parent.parent
DOC = TOP / "Documentation" / "dev" / "kernel-behaviour.md"


@pytest.fixture(scope="module")
def register(tmp_path_factory):
    return fsutil.btrfsx_json("inspect", "kernel-traits", "--kernel", "6.18")


def test_every_trait_names_its_test_its_model_and_its_paragraph(register):
    doc = DOC.read_text()
    for t in register["traits"]:
        path, _, function = t["test"].partition(":")
        source = (TOP / path).read_text()
        assert re.search(rf"^static void {function}\(void\)", source, re.M), t["test"]
        assert re.search(rf"^\s*{function}\(\);", source, re.M), f"{t['test']} is not run"
        assert (TOP / t["model"]).is_file(), t["model"]
        assert f"**{t['name']}**" in doc, f"{t['name']} has no paragraph in {DOC.name}"
        # a version, or the sentence that says why none is known
        assert (t["first"] is None) == (t["unversioned"] is not None), t["name"]


def test_the_man_page_table_is_the_register(register):
    """btrfsx-inspect(8) includes the table made from the register at build time."""
    build = Path(os.environ.get("BTRFSX_BUILD_DIR", Path(fsutil.btrfsx_path()).parent))
    table = build / "Documentation" / "kernel-traits.adoc"
    if not table.exists():
        pytest.skip("the manual was not built (no asciidoctor)")
    rows = re.findall(r"^\|(\w+) \|([^|]+) \|(.+)$", table.read_text(), re.M)
    assert [r[0] for r in rows[1:]] == [t["name"] for t in register["traits"]]
    assert "include::{kernel-traits}[]" in \
        (TOP / "Documentation" / "btrfsx-inspect.adoc").read_text()


def test_inspect_kernel_traits(run_btrfsx):
    rc, out, _ = run_btrfsx("inspect", "kernel-traits", "--kernel", "6.1")
    assert out.splitlines()[0].split(":", 1)[1].strip() == "6.1 (asked for)"
    table = {line.split()[0]: line.split()[-1] for line in out.splitlines()[4:] if line}
    assert table["sort_ties_pre_6_9"] == "yes" and table["size_classes"] == "no"
    assert table["cleans_new_block_groups"] == "no" and table["shrink_second_try"] == "yes"
    rc, verbose, _ = run_btrfsx("inspect", "kernel-traits", "-v", "--kernel", "7.3")
    assert "size_classes (6.3 on): active" in verbose
    assert "Test: tests/unit/test_plan.c:test_size_classes" in verbose
    running = fsutil.btrfsx_json("inspect", "kernel-traits")
    assert running["kernel"]["running"] is True
    assert running["kernel"]["release"] == os.uname().release


@pytest.mark.parametrize("args, words", [
    (["--kernel", "5.15"], "--kernel: 5.15 is not a kernel the model knows (6.1 to 7.3)"),
    (["--kernel", "6.20"], "--kernel: 6.20 is not a kernel the model knows"),
    (["--kernel", "7.4"], "not a kernel the model knows"),
    (["--kernel", "latest"], "--kernel: 'latest' is not a kernel version (MAJOR.MINOR"),
])
def test_bad_kernel_versions_exit_2(run_btrfsx, images, args, words):
    img = images(["256M"])[0]
    fsutil.mkfs(img)
    for cmd in (["filesystem", "usage"], ["filesystem", "misplaced"],
                ["filesystem", "plan", "--relocate"]):
        rc, out, err = run_btrfsx(*cmd, *args, img, check=2)
        assert words in err, err
    rc, out, err = run_btrfsx("inspect", "kernel-traits", *args, check=2)
    assert words in err


def test_btrfsx_kernel_is_the_default(run_btrfsx, btrfsx_json, images):
    img = images(["256M"])[0]
    fsutil.mkfs(img)
    doc = btrfsx_json("filesystem", "usage", img, env={"BTRFSX_KERNEL": "6.1"})
    assert doc["kernel"] == {"version": "6.1", "release": "6.1", "running": False}
    # --kernel wins over the variable
    doc = btrfsx_json("filesystem", "usage", "--kernel", "6.12", img,
                      env={"BTRFSX_KERNEL": "6.1"})
    assert doc["kernel"]["version"] == "6.12"
    rc, out, err = run_btrfsx("filesystem", "usage", img, env={"BTRFSX_KERNEL": "sid"},
                              check=2)
    assert "BTRFSX_KERNEL: 'sid' is not a kernel version" in err


def test_every_command_says_which_kernel(run_btrfsx, btrfsx_json, images):
    imgs = images(["512M", "512M"])
    fsutil.mkfs(imgs, data="raid1", metadata="raid1")
    release = os.uname().release
    version = ".".join(release.split(".")[:2])
    usage = btrfsx_json("filesystem", "usage", *imgs)
    assert usage["kernel"] == {"version": version, "release": release, "running": True}
    plan = btrfsx_json("filesystem", "plan", "--kernel", "6.1", *imgs, "--add", "1G")
    assert plan["kernel"]["version"] == "6.1" and plan["kernel"]["running"] is False
    mis = btrfsx_json("filesystem", "misplaced", "--kernel", "7.3", *imgs)
    assert mis["misplaced"]["kernel"]["version"] == "7.3"
    for cmd in (["filesystem", "usage"], ["filesystem", "misplaced"],
                ["filesystem", "plan", "--add", "1G"]):
        rc, out, _ = run_btrfsx(*cmd, "--kernel", "6.12", *imgs)
        assert re.search(r"^\s*Kernel behaviour:\s+6\.12 \(asked for\)$", out, re.M), out
        rc, out, _ = run_btrfsx(*cmd, *imgs)
        assert re.search(rf"^\s*Kernel behaviour:\s+{re.escape(version)} \(the running "
                         rf"kernel, {re.escape(release)}\)$", out, re.M), out


def test_the_running_kernel_asked_for_changes_nothing(btrfsx_json, images):
    """--kernel with the running kernel's version is the running kernel's plan."""
    imgs = images(["512M", "768M", "1G"])
    fsutil.mkfs(imgs, data="single", metadata="raid1")
    version = ".".join(os.uname().release.split(".")[:2])
    plain = btrfsx_json("filesystem", "plan", *imgs, "--remove", "1", check=False)
    asked = btrfsx_json("filesystem", "plan", "--kernel", version, *imgs, "--remove", "1",
                        check=False)
    plain.pop("kernel"), asked.pop("kernel")
    assert plain == asked


def test_kernels_differ_where_their_traits_do(images, btrfsx_json):
    """sort_ties_pre_6_9: raid10 on five equal fresh devices takes another
    set of four before 6.9 (tests/unit/test_allocator.c:test_ties); the
    model's first raid10 chunk shows it."""
    imgs = images(["1G"] * 5)
    fsutil.mkfs(imgs, data="single", metadata="raid1")
    old = btrfsx_json("filesystem", "plan", "--kernel", "6.8", *imgs, "--convert",
                      "data=raid10", check=False)
    new = btrfsx_json("filesystem", "plan", "--kernel", "6.9", *imgs, "--convert",
                      "data=raid10", check=False)
    assert old["created"] and new["created"]
    assert old["created"][0]["devids"] != new["created"][0]["devids"], \
        (old["created"][0], new["created"][0])
