# SPDX-License-Identifier: GPL-2.0-or-later
"""The README is the front door: its two set-up commands are the ones CI
runs, and every link in it and in the guides leads somewhere."""

import os
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
    """... and a link to a section ('monitor.md#alerts-you-can-trust', '#python')
    to a heading of that page: moving text to Documentation/dev must not
    leave links to sections that are gone."""
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, section = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.exists(), f"{page.relative_to(TOP)}: {target}"
        if section and path.suffix == ".md":
            assert section in heading_anchors(path), f"{page.relative_to(TOP)}: {target}"


def heading_anchors(page):
    """The anchors a Markdown renderer gives the headings of @page, as GitHub
    makes them: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


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


def schema_fields(schema, found=None):
    """The property names a JSON Schema defines, at every depth (the names
    of "properties", not the schema's own keywords)."""
    found = set() if found is None else found
    if isinstance(schema, list):
        for sub in schema:
            schema_fields(sub, found)
    elif isinstance(schema, dict):
        for keyword, value in schema.items():
            if keyword == "properties":
                found.update(name for name in value if not name.startswith("__"))
                schema_fields(list(value.values()), found)
            elif keyword == "$defs":
                schema_fields(list(value.values()), found)
            elif isinstance(value, (dict, list)):
                schema_fields(value, found)
    return found


def man_page_of(document, pages):
    """The command group's page of a JSON document ("read-policy-get" is
    btrfsx-read-policy(8)); None for what several commands share."""
    groups = [g for g in pages if document == g or document.startswith(g + "-")]
    return max(groups, key=len) if groups else None


def test_every_json_field_is_named_in_its_man_page():
    """Issue 39: every term a command prints is explained in its man page.
    Mechanically: each field of each command's JSON document (its schema in
    Documentation/json) appears in that command group's page, or in
    btrfsx(8), which explains what every command shares (warnings, error,
    the TERMS). The shared definitions (common.schema.json) appear in some
    page. A word the page only lists is found too: read the pages for that."""
    import json

    doc = TOP / "Documentation"
    general = (doc / "btrfsx.adoc").read_text()
    pages = {p.name[len("btrfsx-"):-len(".adoc")]: p.read_text()
             for p in doc.glob("btrfsx-*.adoc")}
    missing = {}
    for schema in sorted((doc / "json").glob("*.schema.json")):
        document = schema.name[:-len(".schema.json")]
        group = man_page_of(document, pages)
        text = general + (pages[group] if group else "".join(pages.values()))
        absent = sorted(field for field in schema_fields(json.loads(schema.read_text()))
                        if not re.search(rf"(?<![\w-]){re.escape(field)}(?![\w-])", text))
        if absent:
            missing[f"{document} (btrfsx-{group or '*'}.adoc)"] = absent
    assert not missing, missing


# What each command of a first session prints on an unmounted filesystem of
# image files (no root, no loop device): the group whose page explains it,
# and the arguments after 'btrfsx' ("*": every member). inspect is left out:
# dump-super and dump-tree print the on-disk structures' fields by
# btrfs-progs' names.
SESSION = [
    ("mkfs", ["mkfs", "-f", "-m", "raid1", "-d", "raid1", "ssd1.img:monly",
              "ssd2.img:monly", "hdd1.img:donly", "hdd2.img:donly"]),
    ("filesystem", ["filesystem", "show", "ssd1.img"]),
    ("filesystem", ["filesystem", "usage", "*"]),
    ("filesystem", ["filesystem", "usage", "-T", "*"]),
    ("filesystem", ["filesystem", "misplaced", "*"]),
    ("filesystem", ["filesystem", "plan", "*", "--remove", "3"]),
    ("filesystem", ["filesystem", "plan", "*", "--add", "4G:donly", "--hint", "1=m"]),
    ("device", ["device", "usage", "*"]),
    ("scrub", ["scrub", "start", "--offline", "-B", "-r", "*"]),
    ("scrub", ["scrub", "status", "--offline", "-d", "ssd1.img"]),
]
# The same on a mounted filesystem ("MNT"), where the kernel's figures come
# in (global reserve, df, read policy, error counters) and the commands that
# need a mount run. read-policy recommend is left out: it measures for
# seconds; its words are checked by hand.
MOUNTED_SESSION = [
    ("filesystem", ["filesystem", "usage", "MNT"]),
    ("filesystem", ["filesystem", "show", "MNT"]),
    ("filesystem", ["filesystem", "misplaced", "MNT"]),
    ("filesystem", ["filesystem", "plan", "MNT", "--remove", "2"]),
    ("device", ["device", "usage", "MNT"]),
    ("device", ["device", "io-stats", "-i", "0.1", "-c", "1", "MNT"]),
    ("read-policy", ["read-policy", "get", "MNT"]),
    ("monitor", ["monitor", "record", "--db", "DB", "MNT"]),
    ("monitor", ["monitor", "report", "--db", "DB", "MNT"]),
    ("balance", ["balance", "misplaced", "--dry-run", "MNT"]),
]
# "Device size:   1.00GiB" (btrfs-progs' layout) and "hints_effective   yes".
LABEL = re.compile(r"^\s*([A-Za-z][\w ()/,.-]*?):\s{2,}\S|^\s*([a-z][a-z_ ]*[a-z])\s{2,}\S")
TYPE_PROFILE = re.compile(r"^(Data|Metadata|System),[A-Z0-9]+$")


def labels_not_in_man_pages(btrfsx, session, cwd, expand):
    """Runs each command of @session in @cwd, its words replaced by
    @expand's lists, and returns {command: labels its page does not have}."""
    import os
    import subprocess

    doc = TOP / "Documentation"
    general = (doc / "btrfsx.adoc").read_text()
    env = dict(os.environ, BTRFSX_STATE_DIR=str(cwd / "state"))
    missing = {}
    for group, args in session:
        args = [a for arg in args for a in expand.get(arg, [arg])]
        p = subprocess.run([os.path.abspath(btrfsx)] + args, cwd=cwd, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode in (0, 4, 5), (args, p.stdout + p.stderr)
        text = general + (doc / f"btrfsx-{group}.adoc").read_text()
        for line in p.stdout.splitlines():
            match = LABEL.match(line)
            if not match:
                continue
            label = match.group(1) or match.group(2)
            if TYPE_PROFILE.match(label):
                label = "Data,RAID1"
            if label not in text:
                missing.setdefault(" ".join(args[:2]), set()).add(label)
    return missing


def test_every_text_label_of_a_session_is_in_its_man_page(btrfsx, tmp_path):
    """Issue 39, the text side of the test above: every label a first
    session's commands print ('Free (model):', 'kernel_honours_hints', ...)
    appears in the command group's page or in btrfsx(8). A line per type
    and profile ('Metadata,RAID1:') counts as the page's 'Data,RAID1'."""
    for name, size in (("ssd1", 1), ("ssd2", 1), ("hdd1", 3), ("hdd2", 4)):
        with open(tmp_path / f"{name}.img", "wb") as image:
            image.truncate(size << 30)
    members = sorted(p.name for p in tmp_path.glob("*.img"))
    assert not labels_not_in_man_pages(btrfsx, SESSION, tmp_path, {"*": members})


@pytest.mark.root
def test_every_text_label_of_a_mounted_session_is_in_its_man_page(btrfsx, tmp_path,
                                                                  loopdevs):
    """The same for the commands on a mounted raid1 with a file in it."""
    from helpers import fsutil

    loops = loopdevs(3, size="1G")
    fsutil.mkfs(loops.devs, data="raid1", metadata="raid1")
    with fsutil.mounted(loops.devs) as mnt:
        (mnt / "file").write_bytes(os.urandom(8 << 20))
        os.sync()
        missing = labels_not_in_man_pages(btrfsx, MOUNTED_SESSION, tmp_path,
                                          {"MNT": [str(mnt)],
                                           "DB": [str(tmp_path / "monitor.db")]})
    assert not missing
