"""Fixtures of the VM tests: the harness is ready, or the tests skip saying why
(in CI, where the kernel patches are always beside the checkout, they fail
instead)."""

from __future__ import annotations

import os

import pytest

import vmharness


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/vm/" in str(item.fspath):
            item.add_marker(pytest.mark.vm)


@pytest.fixture(scope="session")
def vm_ready():
    """Everything every series needs, built or found in the cache."""
    reason = vmharness.unavailable_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"VM tests cannot run in CI: {reason}")
        pytest.skip(reason)
    for series in vmharness.SERIES:
        vmharness.prepare(series)
    return True
