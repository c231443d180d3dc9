# SPDX-License-Identifier: GPL-2.0-or-later
"""The maintenance regimes of issue 37 at the suite's scale (bench/maintain
runs them large; the harness is tests/helpers/regimes.py).

The metadata ENOSPC trap must show where nothing is done and where
btrfsmaintenance's filters are all that runs: writes refused while the data
side still has room. `btrfsx maintain` must keep the filesystem out of it,
moving at most a tenth of what btrfsmaintenance moves where that also avoids
ENOSPC and fewer bytes than the kernel's reclaim. The fsync target (the
99th percentile during maintenance within twice the idle one) is a timing:
bench/maintain measures it, the suite does not assert it. The byte targets
are asked where the peer avoids ENOSPC: at this scale neither does (the
kernel's reclaim, as
the issue names it, relocates chunks 78 to 99 % used and meets the trap all
the same), so the suite runs btrfsmaintenance's regime for the trap and
leaves the kernel's reclaim to bench/maintain churn, which prints the
targets against every peer.

Select with ``-m maintain``; needs root, loop devices, gcc and Debian's
btrfsmaintenance package (its regime is skipped without it)."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from helpers import fsutil, regimes

pytestmark = pytest.mark.maintain

MiB = 1 << 20


def test_the_plan_is_fixed_in_advance():
    spec = regimes.ChurnSpec.small()
    assert [spec.season(d) for d in range(spec.days)] == (
        ["growth"] * 3 + ["cleanup"] * 2 + ["quiet"])
    assert spec.start_days == 3             # the growth is in the start image
    assert regimes.ChurnSpec().season(21) == "growth"
    assert regimes.ChurnSpec.small(3) == regimes.ChurnSpec.small(3)


def test_enospc_kinds():
    usage = {"size": 1000, "data_size": 800, "data_used": 700, "unallocated": 0}
    assert regimes.enospc_kind(usage) == "metadata"
    assert regimes.enospc_kind(dict(usage, data_used=790)) == "full"


def test_fsync_samples_by_what_ran():
    windows = [regimes.Window("churn", 10.0, 20.0), regimes.Window("maint", 30.0, 40.0)]
    samples = [(5.0, 1.0, 0), (15.0, 9.0, 0), (19.999, 5.0, 0), (35.0, 4.0, 0), (39.9, 500.0, 0),
               (50.0, 2.0, 0), (51.0, 0.5, 28)]
    out = regimes.fsync_summary(samples, windows)
    assert out["errors"] == 1
    assert (out["idle"]["n"], out["churn"]["n"], out["maint"]["n"]) == (2, 2, 2)
    assert out["maint"]["max"] == 500.0 and out["idle"]["max"] == 2.0


def test_results_lines():
    text = "noise\n@@R small 12 28 4096\n@@R small 3 0 1\n"
    assert regimes.results(text) == {"small": [["12", "28", "4096"], ["3", "0", "1"]]}


def test_the_load_refuses_bad_input(tmp_path):
    load = regimes.build_load(tmp_path)
    for args in ([], ["nonsense"], ["small", "/nonexistent"], ["bgs"]):
        p = fsutil.run([str(load), *args], check=False)
        assert p.returncode == 2 and "usage: maintain-load" in p.stderr
    p = fsutil.run([str(load), "bgs", str(tmp_path / "missing")], check=False)
    assert p.returncode == 1 and "missing" in p.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    base = regimes.scratch_dir(None)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def load(work):
    return regimes.build_load(work / "bin")


@pytest.fixture(scope="module")
def churn_runs(work, load):
    """Each regime's churn on a copy of one start image, run on first use."""
    spec = regimes.ChurnSpec.small()
    start = regimes.make_start(spec, work / "start", load, log=lambda _: None)
    # a peer's run has shown the trap once it meets it: its further days
    # would only add the kernel's slow ENOSPC flushing to the suite's time
    peer_spec = dataclasses.replace(spec, stop_after=1)
    runs: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in runs:
            if name == "btrfsmaintenance" and not regimes.BTRFSMAINTENANCE.is_dir():
                pytest.skip("btrfsmaintenance is not installed (apt-get install btrfsmaintenance)")
            if name == "btrfsx":
                why = regimes.btrfsx_maintain_missing(fsutil.btrfsx_path())
                if why:
                    pytest.skip(why)
            period = spec.bm_period if name == "btrfsmaintenance" else 1
            regime = regimes.Regime(name, period_days=period, btrfsx=fsutil.btrfsx_path())
            runs[name] = regimes.churn(spec if name == "btrfsx" else peer_spec, start, regime,
                                       work / name, load, log=lambda _: None)
        return runs[name]

    yield get
    start.unlink(missing_ok=True)


def metadata_enospc(run: dict) -> list[dict]:
    return [e for e in run["enospc"] if e["kind"] == "metadata"]


def describe(run: dict) -> str:
    return (f"{run['regime']}: ENOSPC {run['enospc_by_kind']}, relocated "
            f"{run['relocated']}, per day " +
            "; ".join(f"{d['day']}: data {d['data_used'] // MiB}/{d['data_size'] // MiB} "
                      f"meta {d['metadata_used'] // MiB}/{d['metadata_size'] // MiB} "
                      f"unalloc {d['unallocated'] // MiB}" for d in run["per_day"]))


@pytest.mark.root
@pytest.mark.slow
def test_btrfsmaintenance_meets_metadata_enospc(churn_runs):
    """The churn is one where a peer meets the trap: btrfsmaintenance's
    fixed filters (data 5 and 10 %, metadata 5 %) leave the half-full
    chunks alone, and writes are refused while the data side shows room
    (at least 5 % of the device, in its chunks or unallocated). Doing
    nothing meets it the same way (bench/maintain churn shows both)."""
    run = churn_runs("btrfsmaintenance")
    assert run["actions"], "its timer never fired"
    events = metadata_enospc(run)
    assert events, describe(run)
    first = events[0]
    assert first["data_size"] - first["data_used"] + first["unallocated"] >= first["size"] // 20
    assert first["avail"] >= first["size"] // 20, first     # what df shows free
    assert run["relocated"]["data_block_groups"] == 0, describe(run)


@pytest.mark.root
@pytest.mark.slow
def test_trap_nothing(work, load):
    """The issue's trap, on a smaller device: 1,800-byte files meet ENOSPC
    with a quarter of the device and more free (bench/maintain trap runs it
    at 3 GiB beside every regime)."""
    spec = regimes.TrapSpec(size=512 * MiB, batch=10000)
    run = regimes.trap(spec, regimes.Regime("nothing"), work / "trap", load, log=lambda _: None)
    assert run["errno"] == 28 and run["kind"] == "metadata", run
    assert run["at_enospc"]["avail"] > spec.size // 4, run


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason=(
    "issue 37 is open: in this 1 GiB churn maintain still meets metadata ENOSPC (each "
    "move's freed space goes to the next data chunk, or the relocation makes one of it; "
    "later runs fail inside the kernel's balance); figures in Documentation/guides/maintain.md"))
def test_btrfsx_keeps_out_of_enospc(churn_runs):
    run = churn_runs("btrfsx")
    assert not metadata_enospc(run), describe(run)
    assert not run["readonly"]


@pytest.mark.root
@pytest.mark.slow
def test_btrfsx_moves_a_tenth_of_btrfsmaintenance(churn_runs):
    ours = churn_runs("btrfsx")
    peer = churn_runs("btrfsmaintenance")
    if metadata_enospc(peer):
        pytest.skip("btrfsmaintenance met ENOSPC here: the tenth is asked where it avoids it")
    assert ours["relocated"]["used"] <= peer["relocated"]["used"] / 10, (ours["relocated"],
                                                                        peer["relocated"])


def test_greedy_frees_the_emptiest_first():
    chunks = [(100, 90), (100, 10), (100, 50), (100, 30)]
    steps = regimes.greedy_frees(chunks, 150)
    assert [(s["used"], s["moved"], s["freed"]) for s in steps] == [(10, 10, 100), (30, 40, 200)]
    # the data has to fit in what stays
    assert regimes.greedy_frees([(100, 60), (100, 60)], 100) == []
