# SPDX-License-Identifier: GPL-2.0-or-later
"""Fuzzing in the suite: a short libFuzzer run of every harness in tests/fuzz/
and a short run of the structure-aware image mutator (see tests/fuzz/README.md).

test_fuzz_short_run builds the harnesses with clang-14 in $BTRFSX_FUZZ_BUILD
(default <repo>/build-fuzz, kept between runs so later builds are
incremental) and runs each for BTRFSX_FUZZ_SECONDS (default 5) seconds from
its seed corpus, which replays every regress-* input of a fixed bug first.
It fails on any crash, sanitizer report, leak or timeout, printing the report
and the crash input's path; it skips when clang-14 or libFuzzer is missing.

test_mutated_images_short_run damages BTRFSX_MUTATE_ROUNDS (default 16) base
images and runs the read-only commands of the suite's btrfsx (the sanitizer
build) on each: exit 0, 1 or 3 with a message, never a crash, hang or
sanitizer report, and the images unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FUZZ = REPO / "tests" / "fuzz"
HARNESSES = ("fuzz_superblock", "fuzz_sys_chunk_array", "fuzz_tree_node", "fuzz_item",
             "fuzz_image", "fuzz_plan")
SKIP = 77   # run-fuzzers.sh: no usable clang/libFuzzer
PROFILES = ("single", "dup", "mixed", "raid0", "raid1", "raid1c3", "raid1c4", "raid10",
            "raid5", "raid6")
CSUMS = ("crc32c", "xxhash", "sha256", "blake2")


def test_fuzz_corpus_is_small_and_present():
    total = 0
    for h in HARNESSES:
        files = [p for p in (FUZZ / "corpus" / h).iterdir() if p.is_file()]
        assert files, f"no seeds for {h}"
        total += sum(p.stat().st_size for p in files)
    images = list((FUZZ / "images").glob("*.bxfi"))
    total += sum(p.stat().st_size for p in images)
    assert total < 3 * 1024 * 1024, f"seeds and images are {total} bytes; keep them under 3 MiB"


def test_fuzz_base_images_cover_every_profile_and_checksum():
    names = {p.stem.split("-", 1)[1] for p in (FUZZ / "images").glob("*.bxfi")}
    missing = {f"{p}-{c}" for p in PROFILES for c in CSUMS} - names
    assert not missing, f"no base image for {sorted(missing)} (tests/fuzz/make-corpus.py)"


def test_fuzz_short_run():
    cc = os.environ.get("BTRFSX_FUZZ_CC", "clang-14")
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed (apt-get install clang-14 libclang-rt-14-dev)")
    seconds = int(os.environ.get("BTRFSX_FUZZ_SECONDS", "5"))
    build = os.environ.get("BTRFSX_FUZZ_BUILD", str(REPO / "build-fuzz"))
    try:
        proc = subprocess.run(
            ["bash", str(FUZZ / "run-fuzzers.sh"), "--cc", cc, "-B", build, str(seconds)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=900)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"run-fuzzers.sh did not finish in {exc.timeout} s:\n{exc.output}")
    if proc.returncode == SKIP:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, f"fuzzing found a problem or failed to build:\n{proc.stdout}"
    for h in HARNESSES:
        assert f"run-fuzzers: {h} " in proc.stdout, proc.stdout


def test_mutated_images_short_run(btrfsx, tmp_path):
    rounds = os.environ.get("BTRFSX_MUTATE_ROUNDS", "16")
    proc = subprocess.run(
        [sys.executable, str(FUZZ / "mutate-images.py"), "--btrfsx", btrfsx,
         "--rounds", rounds, "--quiet", "--failures", str(tmp_path / "failures"),
         "--workdir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    assert proc.returncode == 0, f"a mutated image broke a command:\n{proc.stdout}"
    assert f"{rounds} mutated images" in proc.stdout, proc.stdout
