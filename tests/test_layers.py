"""The include direction of Documentation/dev/architecture.md, kept true:
scripts/check-layers.py over the sources, and the script itself checked on
trees that break the rules."""

import subprocess
import sys
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parent.parent
SCRIPT = TOP / "scripts" / "check-layers.py"


def check(top: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(top)], capture_output=True,
                          text=True)


def test_sources_include_only_down():
    p = check(TOP)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""


def write(top: Path, rel: str, text: str):
    path = top / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize("rel, include, message", [
    ("kernel-shared/volumes.c", "fsops/offline.h", "kernel-shared/ may not include fsops/"),
    ("common/error.c", "kernel-shared/ctree.h", "common/ may not include kernel-shared/"),
    ("mkfs/mkfs.c", "scrub/scrub.h", "mkfs/ may not include scrub/"),
    ("scrub/scrub.c", "mkfs/mkfs.h", "scrub/ may not include mkfs/"),
    ("fsops/usage.c", "cmds/commands.h", "fsops/ may not include cmds/"),
    ("libbtrfsutil/hint.c", "cmds/property.h", "libbtrfsutil/ may not include cmds/"),
    ("cmds/device.c", "libbtrfsutil/libbtrfsx-private.h",
     "cmds/ may not include libbtrfsutil/"),
    ("btrfsx.c", "libbtrfsutil/btrfsx.h", "cmds/ may not include libbtrfsutil/"),
])
def test_an_upward_include_fails(tmp_path, rel, include, message):
    target = include.split("/")[0]
    write(tmp_path, include, "/* a header */\n")
    write(tmp_path, rel, f'#include <stdio.h>\n#include "{include}"\n')
    p = check(tmp_path)
    assert p.returncode == 1
    assert f'{rel}: {message} ("{include}")' in p.stderr, p.stderr
    assert target in p.stderr


def test_a_header_beside_the_file_counts_as_its_folder(tmp_path):
    write(tmp_path, "fsops/usage.h", "")
    write(tmp_path, "kernel-shared/hints.c", '#include "../fsops/usage.h"\n')
    p = check(tmp_path)
    assert p.returncode == 1
    assert "kernel-shared/ may not include fsops/" in p.stderr


def test_downward_and_same_layer_includes_pass(tmp_path):
    write(tmp_path, "common/error.h", "")
    write(tmp_path, "kernel-shared/ctree.h", "")
    write(tmp_path, "fsops/usage.h", "")
    write(tmp_path, "fsops/usage.c", '#include "config.h"\n#include "fsops/usage.h"\n'
          '#include "kernel-shared/ctree.h"\n#include "common/error.h"\n')
    write(tmp_path, "tests/unit/t.c", '#include "fsops/usage.h"\n')
    p = check(tmp_path)
    assert p.returncode == 0, p.stderr


def test_an_unknown_include_is_reported(tmp_path):
    write(tmp_path, "scrub/scrub.c", '#include "nowhere/thing.h"\n')
    p = check(tmp_path)
    assert p.returncode == 1
    assert 'includes "nowhere/thing.h", which is in no layer' in p.stderr


def test_every_layer_is_a_folder_and_in_the_architecture_document():
    doc = (TOP / "Documentation" / "dev" / "architecture.md").read_text()
    ns = {}
    exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), ns)
    for layer in ns["MAY_INCLUDE"]:
        assert (TOP / layer).is_dir(), layer
        assert f"`{layer}/`" in doc, layer
