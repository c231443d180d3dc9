# SPDX-License-Identifier: LGPL-2.1-or-later
"""Builds the btrfsx package for pip: ``pip install libbtrfsx/python``.

libbtrfsx is found with pkg-config (the btrfsx.pc of an installed btrfsx),
or, for an uninstalled tree, in the build directory BTRFSX_BUILD_DIR names;
the module then loads libbtrfsx.so from that directory. Either way the
module builds in its btrfsx source tree: its tables come from the engines'
field lists (common/fields.h).
"""
import os
import re
import shlex
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def from_build_tree(build_dir):
    lib_dir = os.path.join(os.path.abspath(build_dir), ".libs")
    if not os.path.exists(os.path.join(lib_dir, "libbtrfsx.so")):
        raise SystemExit(f"BTRFSX_BUILD_DIR={build_dir}: no .libs/libbtrfsx.so there; "
                         "build btrfsx first")
    return {"include_dirs": [os.path.dirname(HERE), TOP], "library_dirs": [lib_dir],
            "runtime_library_dirs": [lib_dir], "libraries": ["btrfsx"]}


def from_pkg_config():
    try:
        words = shlex.split(subprocess.run(["pkg-config", "--cflags", "--libs", "btrfsx"],
                                           check=True, capture_output=True, text=True).stdout)
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit("libbtrfsx not found by pkg-config (btrfsx.pc): install btrfsx, set "
                         "PKG_CONFIG_PATH, or set BTRFSX_BUILD_DIR=<build directory>")
    flags = {"include_dirs": [TOP], "library_dirs": [], "libraries": [], "extra_compile_args": []}
    for word in words:
        for prefix, key in (("-I", "include_dirs"), ("-L", "library_dirs"), ("-l", "libraries")):
            if word.startswith(prefix):
                flags[key].append(word[2:])
                break
        else:
            flags["extra_compile_args"].append(word)
    return flags


def header_version(include_dirs):
    for directory in include_dirs + ["/usr/include", "/usr/local/include"]:
        header = os.path.join(directory, "btrfsx.h")
        if os.path.exists(header):
            with open(header) as f:
                text = f.read()
            return ".".join(re.search(rf"#define BTRFSX_VERSION_{part} (\d+)", text).group(1)
                            for part in ("MAJOR", "MINOR", "PATCH"))
    raise SystemExit(f"btrfsx.h not found in {include_dirs}")


# the C module: the shared part and one file per area
SOURCES = ["btrfsx_module.c", "hints.c", "usage.c", "read-policy.c", "scrub.c", "monitor.c",
           "misplaced.c", "plan.c", "kernel.c", "maintain.c"]

build_dir = os.environ.get("BTRFSX_BUILD_DIR")
flags = from_build_tree(build_dir) if build_dir else from_pkg_config()

setup(
    version=header_version(flags["include_dirs"]),
    packages=["btrfsx"],
    ext_modules=[Extension("btrfsx._btrfsx", SOURCES, **flags)],
)
