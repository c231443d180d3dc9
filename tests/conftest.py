# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest fixtures for btrfsx tests.  The helpers live in the package
tests/helpers/ (``from helpers import fsutil, oracle``; see its __init__.py).

Fixtures
--------
btrfsx            path of the binary: $BTRFSX or <repo>/btrfsx (fails if missing)
run_btrfsx        run_btrfsx(*args, fmt=None, check=True|False|rc, rc=None,
                  input=None, env=None) -> (rc, stdout, stderr)
btrfsx_json       btrfsx_json(*args, check=True) -> parsed JSON of
                  ``btrfsx --format json ARGS``
loopdevs          factory loopdevs(n=1, size='512M', sizes=None, read_only=False)
                  -> LoopDevices (list of /dev/loopN, .images); detached (and
                  unmounted) at teardown.  Skips when not root.
images            factory images(sizes) -> sparse image paths in tmp_path
mkfs / mounted / fill_files   the fsutil functions, as fixtures for convenience
fs_cache          session cache: fs_cache.get(data, metadata, csum, ndevs=None,
                  size, mkfs_extra=(), seed=0) -> CachedFs (filled, unmounted,
                  read-only loop devices; never write to it)
aged              session cache of aged filesystems (helpers/aging.py):
                  aged.get(seed, hinted=None) -> AgedFs (image files with a
                  past, unattached; work on aged.get(seed).copy(dir));
                  aged.path_env is a PATH with btrfsx, guest-age, guest-fill
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import aging, fsutil


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (deselect with -m 'not slow')")
    config.addinivalue_line("markers", "root: needs root, loop devices and the btrfs kernel module")
    config.addinivalue_line("markers", "maintain: the maintenance regimes of issue 37 "
                            "(tests/test_maintain_regimes.py; select with -m maintain)")


def pytest_collection_modifyitems(config, items):
    ok, why = fsutil.can_use_loop()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"root/loop tests: {why}")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Marks a test (and the session) that failed, so its images are kept."""
    report = (yield).get_result()
    if report.failed:
        item.btrfsx_failed = True
        item.session.btrfsx_failed = True


@pytest.fixture(autouse=True)
def _remove_images_of_passing_tests(request):
    """A passing test's tmp_path goes when it ends: its images are no longer
    needed, and pytest's own cleanup keeps three whole runs (14 GiB a suite
    run once). A failing test's stays, for a look at what went wrong."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is not None and not getattr(request.node, "btrfsx_failed", False):
        shutil.rmtree(tmp, ignore_errors=True)


def _remove_session_temp(session):
    """After a run where everything passed, the shared images (fs_cache, the
    module-scoped filesystems) go too."""
    if getattr(session, "btrfsx_failed", False) or session.testsfailed:
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        shutil.rmtree(factory.getbasetemp(), ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    left = fsutil.emergency_cleanup()
    _remove_session_temp(session)
    if left:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = "btrfsx tests left behind (cleaned up now): " + ", ".join(left)
        if tr is not None:
            tr.write_line(msg, yellow=True)
        else:
            print(msg)


def _require_loop():
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)


# --------------------------------------------------------------------------- btrfsx

@pytest.fixture(scope="session")
def btrfsx() -> str:
    path = fsutil.btrfsx_path()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"btrfsx binary not found at {path} (build it, or set BTRFSX=)")
    return path


@pytest.fixture(scope="session")
def run_btrfsx(btrfsx):
    def _run(*args, **kw):
        kw.setdefault("binary", btrfsx)
        return fsutil.run_btrfsx(*args, **kw)
    return _run


@pytest.fixture(scope="session")
def btrfsx_json(btrfsx):
    def _json(*args, **kw):
        kw.setdefault("binary", btrfsx)
        return fsutil.btrfsx_json(*args, **kw)
    return _json


# --------------------------------------------------------------------------- images / loops

@pytest.fixture
def images(tmp_path):
    """images(sizes, prefix='img') -> [Path] sparse files in tmp_path."""
    def _make(sizes, prefix="img"):
        return fsutil.make_images(tmp_path / "images", sizes, prefix=prefix)
    return _make


@pytest.fixture
def loopdevs(tmp_path, request):
    """loopdevs(n=1, size='512M', sizes=None, read_only=False) -> LoopDevices.

    Sparse images in tmp_path, attached with ``losetup -f --show``; every set
    is unmounted and detached at teardown, whatever the test did."""
    _require_loop()
    sets: list[fsutil.LoopDevices] = []
    counter = [0]

    def _make(n: int = 1, size=fsutil.DEFAULT_IMAGE_SIZE, sizes=None, read_only=False):
        if sizes is None:
            sizes = [size] * n
        counter[0] += 1
        imgs = fsutil.make_images(tmp_path / f"loops{counter[0]}", sizes)
        loops = fsutil.LoopDevices(imgs, read_only=read_only)
        sets.append(loops)
        loops.attach()
        return loops

    def _fin():
        errs = []
        for s in reversed(sets):
            try:
                s.detach()
            except Exception as e:
                errs.append(str(e))
        if errs:
            raise RuntimeError("; ".join(errs))

    request.addfinalizer(_fin)
    return _make


@pytest.fixture
def mkfs():
    return fsutil.mkfs


@pytest.fixture
def mounted():
    return fsutil.mounted


@pytest.fixture
def fill_files():
    return fsutil.fill_files


@pytest.fixture(scope="session")
def fs_cache(tmp_path_factory):
    _require_loop()
    cache = fsutil.FsCache(tmp_path_factory.mktemp("fscache"))
    yield cache
    cache.close()


@pytest.fixture(scope="session")
def aged(tmp_path_factory, btrfsx):
    """Aged filesystems, made on first use and deleted at the end of the session."""
    _require_loop()
    tools = aging.build_tools(tmp_path_factory.mktemp("aged-bin"), btrfsx)
    cache = aging.AgedCache(tmp_path_factory.mktemp("aged"), tools)
    yield cache
    cache.close()
