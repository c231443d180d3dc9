# SPDX-License-Identifier: GPL-2.0-or-later
"""The JSON Schemas of Documentation/json/: one per command that writes JSON,
valid draft 2020-12, at the version btrfsx writes, and a contract that
changes only with a version bump.

Every JSON document the suite produces through fsutil.run_btrfsx is
validated against its schema there (fsutil.check_json_schema); these tests
check the schemas themselves, and that the validation catches a document
that breaks one.

The contract (tests/json-contract.json) lists every key path of each schema
with its type and whether it is optional, for one __header.version. A schema
that removes, renames or retypes a key, or makes one optional, without a
BX_JSON_VERSION bump fails test_contract_kept; so does an added key until
it is recorded (`python3 tests/helpers/json_schemas.py --record`), which needs no
bump (Documentation/dev/json.md: adding a key does not bump the version).
"""
from __future__ import annotations

import json

import jsonschema
import pytest

from helpers import json_schemas
from test_hostile import all_commands


def test_a_schema_per_json_command(run_btrfsx):
    text_only = {"inspect read-file"}
    want = sorted(c.replace(" ", "-") for c in all_commands(run_btrfsx) if c not in text_only)
    assert json_schemas.schema_names() == want


@pytest.mark.parametrize("name", json_schemas.schema_names())
def test_schema_is_valid_and_versioned(name):
    schema = json_schemas.load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert json_schemas.schema_version(name) == json_schemas.json_version()


def test_contract_kept():
    recorded = json.loads(json_schemas.CONTRACT.read_text())
    version = json_schemas.json_version()
    assert recorded["version"] == version, (
        f"BX_JSON_VERSION is {version}, the contract is of {recorded['version']}: "
        "record the new version's contract (python3 tests/helpers/json_schemas.py --record)")
    for name in json_schemas.schema_names():
        now, then = json_schemas.contract(name), recorded["schemas"].get(name, {})
        changed = {k: (v, now.get(k)) for k, v in then.items() if now.get(k) != v}
        assert not changed, (
            f"{name}.schema.json changed keys scripts rely on without a version bump "
            f"(was, now): {changed}; bump BX_JSON_VERSION and record the contract")
        added = sorted(set(now) - set(then))
        assert not added, (f"{name}.schema.json: new keys {added}; record them "
                           "(python3 tests/helpers/json_schemas.py --record; no bump needed)")


def test_contract_catches_a_retyped_key(monkeypatch):
    """The check above on a schema whose key changed type: it must notice."""
    schema = json.loads((json_schemas.SCHEMA_DIR / "device-usage.schema.json").read_text())
    fs = schema["properties"]["filesystems"]["items"]
    fs["properties"]["mounted"] = {"type": "string"}
    monkeypatch.setattr(json_schemas, "load", lambda name: schema if name == "device-usage"
                        else json.loads((json_schemas.SCHEMA_DIR / f"{name}.schema.json")
                                        .read_text()))
    recorded = json.loads(json_schemas.CONTRACT.read_text())["schemas"]["device-usage"]
    now = json_schemas.contract("device-usage")
    assert now["/filesystems/[]/mounted"] != recorded["/filesystems/[]/mounted"]


def test_validation_rejects_a_broken_document(run_btrfsx):
    rc, out, err = run_btrfsx("read-policy", "list", fmt="json")
    doc = json.loads(out)
    json_schemas.validate(["read-policy", "list"], doc)
    doc["records"] = [{"fsid": "not-a-uuid", "policy": 1}]
    with pytest.raises(AssertionError, match="read-policy-list.schema.json"):
        json_schemas.validate(["read-policy", "list"], doc)
    with pytest.raises(AssertionError):
        json_schemas.validate(["read-policy", "list"], {"__header": {"version": "1"}})


def test_error_documents_follow_the_schemas(run_btrfsx):
    """A usage error, a failure, and no command at all: each still a document
    its schema (or the common error shape) accepts; run_btrfsx validates."""
    run_btrfsx("device", "usage", "--bogus", fmt="json", check=2)
    run_btrfsx("filesystem", "usage", "/nonexistent", fmt="json", check=1)
    run_btrfsx("nosuchgroup", fmt="json", check=2)


@pytest.mark.parametrize("args, name", [
    (["--format", "json", "insp", "dump-s", "x"], "inspect-dump-super"),
    (["device", "prop", "get", "/dev/x"], "device-property-get"),
    (["read-policy", "set", "/mnt", "pid"], "read-policy-set"),
    (["mkfs", "-f", "a.img"], "mkfs"),
    (["filesystem", "us", "-T", "/mnt"], "filesystem-usage"),
    (["--bogus"], None),
])
def test_command_of(args, name):
    assert json_schemas.command_of(args) == name
