"""A short libFuzzer run of every harness in tests/fuzz/ (see its README.md).

Builds the harnesses with clang-14 in $BTRFSX_FUZZ_BUILD (default
<repo>/build-fuzz, kept between runs so later builds are incremental) and runs
each for BTRFSX_FUZZ_SECONDS (default 10) seconds from the seed corpus. Fails
on any crash, sanitizer report or leak, printing the report and the crash
input's path. Skips when clang-14 or libFuzzer is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FUZZ = REPO / "tests" / "fuzz"
HARNESSES = ("fuzz_superblock", "fuzz_sys_chunk_array", "fuzz_tree_node")
SKIP = 77   # run-fuzzers.sh: no usable clang/libFuzzer


def test_fuzz_corpus_is_small_and_present():
    total = 0
    for h in HARNESSES:
        files = [p for p in (FUZZ / "corpus" / h).iterdir() if p.is_file()]
        assert files, f"no seeds for {h}"
        total += sum(p.stat().st_size for p in files)
    assert total < 2 * 1024 * 1024, f"seed corpus is {total} bytes; keep it under 2 MiB"


def test_fuzz_short_run():
    cc = os.environ.get("BTRFSX_FUZZ_CC", "clang-14")
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed (apt-get install clang-14 libclang-rt-14-dev)")
    seconds = int(os.environ.get("BTRFSX_FUZZ_SECONDS", "10"))
    build = os.environ.get("BTRFSX_FUZZ_BUILD", str(REPO / "build-fuzz"))
    try:
        proc = subprocess.run(
            ["bash", str(FUZZ / "run-fuzzers.sh"), "--cc", cc, "-B", build, str(seconds)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=600)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"run-fuzzers.sh did not finish in {exc.timeout} s:\n{exc.output}")
    if proc.returncode == SKIP:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, f"fuzzing found a problem or failed to build:\n{proc.stdout}"
    for h in HARNESSES:
        assert f"run-fuzzers: {h} " in proc.stdout, proc.stdout
