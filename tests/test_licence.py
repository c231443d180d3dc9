# SPDX-License-Identifier: GPL-2.0-or-later
"""Every source file names its licence, and it is the one debian/copyright gives.

debian/copyright (machine-readable, DEP-5) is the one table of which files
are under which licence: the tools, tests and packaging under GPL-2.0 or
later, the library's layers and its Python bindings under LGPL-2.1 or later.
Each source file carries an SPDX-License-Identifier line near its top; this
test holds every tracked one to the stanza that covers it (the last
matching Files stanza wins, as DEP-5 says).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parent.parent

# Debian's short names, as debian/copyright spells them, and their SPDX names.
SPDX_OF = {"GPL-2+": "GPL-2.0-or-later", "LGPL-2.1+": "LGPL-2.1-or-later"}

# What counts as a source file: code and build files by ending, and the
# scripts without one (a "#!" line). Prose (Markdown), data (JSON, images)
# and Debian's package lists are covered by debian/copyright alone.
SOURCE_ENDINGS = (".c", ".h", ".py", ".sh", ".am", ".ac", ".in", ".yml", ".toml",
                  ".ini", ".sym", ".adoc", ".js", ".css", ".html")
NOT_SOURCE = ("tests/fuzz/corpus/",)


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=TOP, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout (a release tarball): nothing to list")
    return [f for f in out.stdout.splitlines() if (TOP / f).is_file()]


def is_source(path: str) -> bool:
    if path.startswith(NOT_SOURCE):
        return False
    if path.endswith(SOURCE_ENDINGS) or path == "debian/rules":
        return True
    if "." in Path(path).name:
        return False
    with open(TOP / path, "rb") as f:
        return f.read(2) == b"#!"


def copyright_stanzas() -> list[tuple[list[str], str]]:
    """The Files stanzas of debian/copyright: (patterns, licence short name)."""
    text = (TOP / "debian/copyright").read_text()
    stanzas = []
    for para in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        name = None
        for line in para.splitlines():
            if line[:1] in (" ", "\t") and name:
                fields[name] += "\n" + line.strip()
            elif ":" in line:
                name, value = line.split(":", 1)
                fields[name] = value.strip()
        if "Files" in fields:
            stanzas.append((fields["Files"].split(), fields["License"].split("\n")[0]))
    return stanzas


def licence_of(path: str, stanzas) -> str:
    chosen = None
    for patterns, licence in stanzas:
        if any(fnmatch.fnmatchcase(path, p) for p in patterns):
            chosen = licence
    assert chosen, f"{path}: no Files stanza of debian/copyright covers it"
    return chosen


def declared(path: str) -> str | None:
    head = (TOP / path).read_text(errors="replace").splitlines()[:3]
    for line in head:
        m = re.search(r"SPDX-License-Identifier:\s*([A-Za-z0-9.+-]+)", line)
        if m:
            return m.group(1)
    return None


def test_copyright_is_machine_readable_and_names_known_licences():
    text = (TOP / "debian/copyright").read_text()
    assert text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
    stanzas = copyright_stanzas()
    assert stanzas and stanzas[0][0] == ["*"]
    for _, licence in stanzas:
        assert licence in SPDX_OF, licence
        assert re.search(rf"^License: {re.escape(licence)}\n ", text, re.M), \
            f"debian/copyright has no text for {licence}"


def test_licence_texts_are_shipped():
    assert "GNU GENERAL PUBLIC LICENSE" in (TOP / "COPYING").read_text()
    assert "Version 2, June 1991" in (TOP / "COPYING").read_text()
    lgpl = (TOP / "COPYING.LGPL").read_text()
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in lgpl and "Version 2.1" in lgpl


def test_every_source_file_names_its_licence():
    stanzas = copyright_stanzas()
    wrong = []
    for path in tracked():
        if not is_source(path):
            continue
        want = SPDX_OF[licence_of(path, stanzas)]
        have = declared(path)
        if have != want:
            wrong.append(f"{path}: {have or 'no SPDX-License-Identifier line'}, want {want}")
    assert not wrong, "\n".join(wrong)


def test_the_library_is_lgpl_and_the_tool_gpl():
    stanzas = copyright_stanzas()
    assert licence_of("libbtrfsx/btrfsx.h", stanzas) == "LGPL-2.1+"
    assert licence_of("libbtrfsx/python/btrfsx/__init__.py", stanzas) == "LGPL-2.1+"
    assert licence_of("disk/io.c", stanzas) == "LGPL-2.1+"
    assert licence_of("cmds/filesystem.c", stanzas) == "GPL-2+"
    assert licence_of("btrfsx.c", stanzas) == "GPL-2+"
