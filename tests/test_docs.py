# SPDX-License-Identifier: GPL-2.0-or-later
"""The README is the front door: its two set-up commands are the ones CI
runs, and every link in it and in the guides leads somewhere."""

import re
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PAGES = [TOP / "README.md"] + sorted((TOP / "Documentation").rglob("*.md"))


def test_the_readme_names_the_two_commands_and_ci_runs_the_tests():
    readme = (TOP / "README.md").read_text()
    assert "\n    bash scripts/demo.sh\n" in readme
    assert "\n    bash scripts/test.sh\n" in readme
    assert "bash scripts/test.sh" in (TOP / ".ci" / "run").read_text()


def test_every_guide_is_linked_from_the_readme():
    readme = (TOP / "README.md").read_text()
    for guide in sorted((TOP / "Documentation" / "guides").glob("*.md")):
        assert f"(Documentation/guides/{guide.name})" in readme, guide.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(TOP)))
def test_relative_links_lead_to_files(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.relative_to(TOP)}: {target}"


@pytest.mark.root
def test_demo_leaves_nothing_behind():
    """Issue 39, defect 5: scripts/demo.sh cleans up after itself, the state its
    scrubs record included (btrfsx's /var/lib/btrfsx/scrub/<fsid>.json, the kernel
    scrub's /var/lib/btrfs/scrub.status.<fsid>). Run on the suite's build."""
    import os
    import subprocess

    from helpers import fsutil
    from test_install import build_dir

    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    before = set(Path("/tmp").glob("btrfsx-demo.*"))
    p = subprocess.run(["bash", str(TOP / "scripts" / "demo.sh")], capture_output=True,
                       text=True, env=dict(os.environ, BTRFSX_DEMO_BUILD=str(build_dir())),
                       timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    fsid = re.search(r"uuid: ([0-9a-f-]{36})", p.stdout).group(1)
    assert "corrected" in p.stdout or "corrected" in p.stderr, p.stdout[-3000:]
    assert not Path(f"/var/lib/btrfsx/scrub/{fsid}.json").exists()
    assert not list(Path("/var/lib/btrfs").glob(f"scrub.*.{fsid}"))
    assert set(Path("/tmp").glob("btrfsx-demo.*")) == before


def built_man_pages():
    import os

    build = Path(os.environ.get("BTRFSX_BUILD_DIR", TOP / "build"))
    pages = sorted((build / "Documentation").glob("*.[38]"))
    if not pages:
        pytest.skip(f"no man pages built in {build}/Documentation (BTRFSX_BUILD_DIR)")
    return pages


def test_man_pages_fit_80_columns():
    """Issue 39: every man page renders within 80 columns (btrfsx-monitor(8)'s metrics
    table was 96 wide), and groff has nothing to say about it (lintian runs
    'man --warnings' the same way and warns about each line)."""
    import os
    import subprocess

    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANROFFSEQ="")
    wide, warned = {}, {}
    for page in built_man_pages():
        p = subprocess.run(["man", "-l", str(page)], capture_output=True, env=env)
        long = [line for line in p.stdout.decode().splitlines() if len(line) > 80]
        if long:
            wide[page.name] = long
        p = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", str(page)],
                           capture_output=True, env=env)
        if p.stderr.strip():
            warned[page.name] = p.stderr.decode()
    assert not wide, {name: (len(lines), lines[:3]) for name, lines in wide.items()}
    assert not warned, warned


@pytest.mark.parametrize("page", ["README.md", "Documentation/guides/install.md"])
def test_packaging_steps_work_after_the_demo(page, tmp_path):
    """Issue 39: the Debian packaging steps work as written after the demo: the
    tarball comes from the tree the demo configured (build/; the source tree
    itself is not configured), and 'dpkg -i' installs the four packages, not
    the -dbgsym ones dpkg-buildpackage makes beside them."""
    import glob
    import shlex

    text = (TOP / page).read_text()
    steps = text[text.index("dpkg-buildpackage -us -uc -b") - 400:]
    steps = steps[:steps.index("dpkg -i")] + steps[steps.index("dpkg -i"):].split("\n\n")[0]
    assert "make -C build dist" in steps and "tar -C /tmp -xf build/btrfsx-0.1.0.tar.gz" in steps
    assert "\n    make dist" not in steps
    dpkg = steps[steps.index("dpkg -i"):].replace("\\\n", " ").splitlines()[0]
    built = ["btrfsx", "btrfsx-dbgsym", "libbtrfsx0", "libbtrfsx0-dbgsym", "libbtrfsx-dev",
             "python3-btrfsx", "python3-btrfsx-dbgsym"]
    out = tmp_path / "out"
    (out / "btrfsx-0.1.0").mkdir(parents=True)
    for name in built:
        (out / f"{name}_0.1.0_amd64.deb").touch()
    (out / "btrfsx_0.1.0_amd64.buildinfo").touch()
    args = shlex.split(dpkg)[2:]
    matched = sorted(Path(m).name for a in args if a.startswith("../")
                     for m in glob.glob(str(out / "btrfsx-0.1.0" / a)))
    assert matched == sorted(f"{n}_0.1.0_amd64.deb" for n in
                             ("btrfsx", "libbtrfsx0", "libbtrfsx-dev", "python3-btrfsx")), dpkg
