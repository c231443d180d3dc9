# SPDX-License-Identifier: GPL-2.0-or-later
"""The results libbtrfsx publishes and the options it takes are described
once, by the field lists of the engines' headers (common/fields.h): a field
added to a list only must stop the build of the library and of the Python
module, until the public header (and from there Python) has it.

Each test copies the engine headers with one more field in every list,
puts the copies first on the include path and compiles one of the library's
converters, or the Python module, against them: the compiler must name
every added field it meets. (The Python classes' own check is in
test_python.py.)
"""
from __future__ import annotations

import re
import subprocess
import sysconfig
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parent.parent
LIST = re.compile(r"^#define (BX_\w+_FIELDS)\(X\)", re.M)
ENGINE_DIRS = ("common", "format", "disk", "model", "fsops", "mkfs", "scrub", "monitor",
               "relocate", "maintain", "plan", "recommend")


def field_lists() -> dict[str, Path]:
    """Every list macro and the header that defines it."""
    found = {}
    for folder in ENGINE_DIRS:
        for header in sorted((TOP / folder).glob("*.h")):
            for name in LIST.findall(header.read_text()):
                found[name] = header
    return found


def users(names, sources) -> list[Path]:
    return [s for s in sources if any(n in s.read_text() for n in names)]


def with_added_fields(lists: dict[str, Path], root: Path) -> dict[str, str]:
    """Copies of the headers under @root, each list with a field added:
    {list: the added field's name}."""
    added = {}
    for header in set(lists.values()):
        text = header.read_text()
        for name in LIST.findall(text):
            field = f"added_to_{name.lower()}"
            text = re.sub(rf"^(#define {name}\(X\)[^\n]*\n)",
                          rf"\1\tX(uint64_t, {field}, ) \\\n", text, flags=re.M)
            added[name] = field
        copy = root / header.relative_to(TOP)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text)
    return added


def compile_c(source: Path, *include_dirs) -> subprocess.CompletedProcess:
    flags = [f"-I{d}" for d in include_dirs]
    return subprocess.run(["cc", "-fsyntax-only", "-std=gnu11", "-D_GNU_SOURCE", *flags,
                           str(source)], capture_output=True, text=True)


CONVERTERS = sorted((TOP / "libbtrfsx").glob("*.c"))
# the Python module: its shared part and one file per area
MODULE = sorted((TOP / "libbtrfsx" / "python").glob("*.c"))


def test_every_list_has_a_converter_and_a_python_table():
    lists = field_lists()
    assert "BX_SCRUB_COUNTERS_FIELDS" in lists
    for name in lists:
        assert users([name], CONVERTERS), f"no libbtrfsx/*.c copies {name} (BX_FIELD_COPY)"
        assert users([name], MODULE), f"the Python module has no table from {name}"


@pytest.mark.parametrize("source", users(field_lists(), CONVERTERS + MODULE),
                         ids=lambda p: str(p.relative_to(TOP)))
def test_a_field_added_to_an_engine_list_only_stops_the_build(source, tmp_path):
    lists = field_lists()
    extra = [TOP / "libbtrfsx", sysconfig.get_path("include")] if source in MODULE else []
    added = with_added_fields(lists, tmp_path)
    p = compile_c(source, tmp_path, TOP, *extra)
    assert p.returncode != 0
    for name in lists:
        if name in source.read_text():
            assert added[name] in p.stderr, f"{source.name} builds with {added[name]}"
