# SPDX-License-Identifier: GPL-2.0-or-later
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
    ("disk/volumes.c", "fsops/offline.h", "disk/ may not include fsops/"),
    ("disk/io.c", "model/allocator.h", "disk/ may not include model/"),
    ("model/allocator.c", "disk/io.h", "model/ may not include disk/"),
    ("format/csum.c", "disk/io.h", "format/ may not include disk/"),
    ("common/error.c", "format/ctree.h", "common/ may not include format/"),
    ("mkfs/mkfs.c", "scrub/scrub.h", "mkfs/ may not include scrub/"),
    ("scrub/scrub.c", "mkfs/mkfs.h", "scrub/ may not include mkfs/"),
    ("fsops/usage.c", "cmds/commands.h", "fsops/ may not include cmds/"),
    ("libbtrfsx/hint.c", "cmds/property.h", "libbtrfsx/ may not include cmds/"),
    ("cmds/device.c", "libbtrfsx/libbtrfsx-private.h",
     "cmds/ may not include libbtrfsx/"),
    ("btrfsx.c", "libbtrfsx/btrfsx.h", "cmds/ may not include libbtrfsx/"),
    # the engines never include one another; what they share lives below them
    ("plan/plan.c", "relocate/relocate.h", "plan/ may not include relocate/"),
    ("relocate/relocate.c", "plan/plan.h", "relocate/ may not include plan/"),
    ("plan/plan-change.c", "mkfs/mkfs.h", "plan/ may not include mkfs/"),
    # the planner is pure: its caller reads the snapshot
    ("plan/plan.c", "disk/io.h", "plan/ may not include disk/"),
    # the register and the kernel's relocation are the model's: pure
    ("model/kernel/relocation.c", "fsops/usage.h", "model/ may not include fsops/"),
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
    write(tmp_path, "format/hints.c", '#include "../fsops/usage.h"\n')
    p = check(tmp_path)
    assert p.returncode == 1
    assert "format/ may not include fsops/" in p.stderr


def test_an_angle_bracket_include_of_ours_counts_too(tmp_path):
    write(tmp_path, "cmds/cli.h", "")
    write(tmp_path, "fsops/usage.c", "#include <stdio.h>\n#include <cmds/cli.h>\n")
    p = check(tmp_path)
    assert p.returncode == 1
    assert 'fsops/usage.c: fsops/ may not include cmds/ ("cmds/cli.h")' in p.stderr


@pytest.mark.parametrize("line, what", [
    ('printf("%d\\n", x);', "printf"),
    ('fprintf(stderr, "oops");', "stderr"),
    ("perror(path);", "perror"),
    ("exit(1);", "exit"),
    ("fputs(s, stdout);", "stdout"),
])
def test_printing_or_exiting_below_the_command_line_fails(tmp_path, line, what):
    write(tmp_path, "scrub/scrub.c", f"void f(int x, const char *s)\n{{\n\t{line}\n}}\n")
    p = check(tmp_path)
    assert p.returncode == 1
    assert f"scrub/scrub.c:3: scrub/ may not print or exit ({what})" in p.stderr, p.stderr


def test_the_command_line_prints_and_comments_strings_and_child_exits_pass(tmp_path):
    write(tmp_path, "cmds/scrub.c", 'void f(void) { printf("x"); exit(1); }\n')
    write(tmp_path, "disk/io.c", '/* we never printf( or exit( here */\n'
          'static const char *m = "exit(1) from stderr";\n'
          'void g(void) { if (fork() == 0) _exit(0); fprintf(file, "%s", m); }\n')
    p = check(tmp_path)
    assert p.returncode == 0, p.stderr


def test_downward_and_same_layer_includes_pass(tmp_path):
    write(tmp_path, "common/error.h", "")
    write(tmp_path, "format/ctree.h", "")
    write(tmp_path, "fsops/usage.h", "")
    write(tmp_path, "fsops/usage.c", '#include "config.h"\n#include "fsops/usage.h"\n'
          '#include "format/ctree.h"\n#include "common/error.h"\n')
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


# Folders whose files call one another in one direction only: no file is both
# the caller of another and a library that other calls back into (issue 40:
# scrub.c was the run and the library its workers called).
ACYCLIC_FOLDERS = ["scrub"]


def call_graph(objects):
    """{file: {files whose functions it calls}} from the objects' symbol tables."""
    defined, used = {}, {}
    for obj in objects:
        name = obj.name.split("-", 1)[-1].removesuffix(".o")
        nm = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
        for line in nm.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRB":
                defined[parts[2]] = name
            elif len(parts) == 2 and parts[0] == "U":
                used.setdefault(name, set()).add(parts[1])
    return {name: {defined[s] for s in syms if s in defined and defined[s] != name}
            for name, syms in used.items()}


def find_circle(graph):
    """One circle of @graph as a list of files, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


@pytest.mark.parametrize("folder", ACYCLIC_FOLDERS)
def test_files_call_one_another_without_a_circle(folder):
    import os

    build = Path(os.environ.get("BTRFSX_BUILD_DIR", TOP / "build"))
    objects = sorted((build / folder / ".libs").glob("*.o"))
    if not objects:
        pytest.skip(f"no objects of {folder}/ in {build} (build first, BTRFSX_BUILD_DIR)")
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    circle = find_circle(call_graph(objects))
    assert circle is None, f"{folder}/: " + " -> ".join(circle)
