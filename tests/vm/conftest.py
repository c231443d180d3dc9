# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the VM tests: the harness is ready, or the tests skip saying why
(in CI, where the kernel patches are always beside the checkout, they fail
instead). A series whose kernel cannot be had here (vmharness.VMUnavailable,
raised while a test or its fixture prepares the guest) skips the tests that
need it, with the reason; the other series' tests run."""

from __future__ import annotations

import os

import pytest

import vmharness


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/vm/" in str(item.fspath):
            item.add_marker(pytest.mark.vm)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None or not call.excinfo.errisinstance(vmharness.VMUnavailable) \
            or os.environ.get("CI"):
        return
    report.outcome = "skipped"
    report.longrepr = (str(item.fspath), item.location[1] or 0,
                       f"Skipped: {call.excinfo.value}")


@pytest.fixture(scope="session")
def vm_ready():
    """What every guest needs (root, the tools, the patches); each series' kernel
    and modules are built or found in the cache when a guest of it first runs."""
    reason = vmharness.unavailable_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"VM tests cannot run in CI: {reason}")
        pytest.skip(reason)
    return True
