# SPDX-License-Identifier: GPL-2.0-or-later
"""The JSON Schemas of Documentation/json/ as the tests use them.

validate(args, doc) checks a `btrfsx --format json ARGS` document against the
schema of the command ARGS name (fsutil.run_btrfsx calls it for every JSON
output of the suite). contract(schema) flattens a schema into
{"/devices/[]/size": "integer", ...}: the keys and types scripts rely on,
which must not change while __header.version stays the same
(tests/json-contract.json records them; `python3 tests/helpers/json_schemas.py
--record` rewrites it after a deliberate change, see test_json_schema.py).
"""
from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SCHEMA_DIR = TOP / "Documentation" / "json"
CONTRACT = TOP / "tests" / "json-contract.json"
COMMON = "common.schema.json"


def schema_names() -> list[str]:
    return sorted(p.name[:-len(".schema.json")] for p in SCHEMA_DIR.glob("*.schema.json")
                  if p.name != COMMON)


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())


def json_version() -> str:
    """BX_JSON_VERSION of cmds/format-output.h."""
    text = (TOP / "cmds" / "format-output.h").read_text()
    return re.search(r'#define BX_JSON_VERSION "([^"]+)"', text).group(1)


def schema_version(name: str) -> str:
    """The __header.version a schema describes (of the schema it refers to, for an alias)."""
    schema = load(name)
    if "$ref" in schema:
        return schema_version(schema["$ref"][:-len(".schema.json")])
    return schema["properties"]["__header"]["properties"]["version"]["const"]


def command_of(args) -> str | None:
    """The schema name of the command in a btrfsx argument list, resolving
    unique prefixes as btrfsx does ("insp dump-s" -> "inspect-dump-super")."""
    words = [str(a) for a in args]
    cut = [w for i, w in enumerate(words)
           if w != "--format" and (i == 0 or words[i - 1] != "--format") and not w.startswith("-")]
    candidates = schema_names()
    path: list[str] = []
    for word in cut:
        options = {w for n in candidates for w in next_words(n, path)}
        matches = [word] if word in options else [o for o in options if o.startswith(word)]
        if len(matches) != 1:
            return None
        path.append(matches[0])
        name = "-".join(path)
        if name in candidates:
            return name
        candidates = [n for n in candidates if n.startswith(name + "-")]
    return None


# command words that hold a dash themselves
GROUP_WORDS = ["read-policy", "dump-super", "dump-tree", "io-stats", "kernel-traits"]


def split_name(name: str) -> list[str]:
    """"read-policy-get" -> ["read-policy", "get"]."""
    out, rest = [], name
    while rest:
        word = next((w for w in GROUP_WORDS if rest == w or rest.startswith(w + "-")),
                    rest.split("-", 1)[0])
        out.append(word)
        rest = rest[len(word) + 1:]
    return out


def next_words(name: str, path: list[str]) -> list[str]:
    words = split_name(name)
    return [words[len(path)]] if words[:len(path)] == path and len(words) > len(path) else []


@functools.lru_cache(maxsize=None)
def validator(name: str):
    """A validator whose relative $refs ("common.schema.json#/$defs/size")
    find the other files by name, with whichever reference API jsonschema has."""
    import jsonschema

    files = {p.name: json.loads(p.read_text()) for p in SCHEMA_DIR.glob("*.schema.json")}
    schema = files[f"{name}.schema.json"]
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:
        resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store=files)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)
    registry = Registry().with_resources(
        (file, Resource.from_contents(doc, default_specification=DRAFT202012))
        for file, doc in files.items())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate(args, doc) -> None:
    """Raises AssertionError when @doc does not follow its command's schema;
    a document of no command (a usage error before one is named) must be an
    error document."""
    name = command_of(args)
    if name is None:
        assert set(doc) <= {"__header", "error", "warnings"} and "error" in doc, doc
        return
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, (f"btrfsx {' '.join(map(str, args))}: not as {name}.schema.json says:\n" +
                        "\n".join(f"  /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
                                  for e in errors[:10]))


def validate_def(command: str, definition: str, doc) -> None:
    """Raises AssertionError when @doc is not the schema's $defs/@definition
    of @command ("balance misplaced"): what a command writes beside its
    document, such as the progress lines on stderr."""
    name = command_of(command.split())
    schema = validator(name).schema
    sub = validator(name).evolve(schema={**schema["$defs"][definition],
                                         "$defs": schema["$defs"]})
    errors = list(sub.iter_errors(doc))
    assert not errors, f"{name} $defs/{definition}: {[e.message[:300] for e in errors[:5]]}"


def contract(name: str) -> dict[str, str]:
    """Every key path of the schema with its type(s); $refs followed."""
    out: dict[str, str] = {}

    def resolve(node: dict, base: str) -> tuple[dict, str]:
        while "$ref" in node:
            target = node["$ref"]
            file, _, pointer = target.partition("#")
            base = file[:-len(".schema.json")] if file else base
            doc = load(base) if base != COMMON[:-len(".schema.json")] else \
                json.loads((SCHEMA_DIR / COMMON).read_text())
            extra = {k: v for k, v in node.items() if k != "$ref"}
            node = doc
            for part in filter(None, pointer.split("/")):
                node = node[part]
            node = {**node, **extra} if extra else node
        return node, base

    def walk(node: dict, path: str, base: str, optional: bool = False) -> None:
        node, base = resolve(node, base)
        kind = node.get("type") or ("enum" if "enum" in node else
                                    "const" if "const" in node else "any")
        kind = kind if isinstance(kind, str) else "|".join(kind)
        out[path or "/"] = kind + (" (optional)" if optional else "")
        required = set(node.get("required", [])) | set(node.get("else", {}).get("required", []))
        for key, sub in node.get("properties", {}).items():
            walk(sub, f"{path}/{key}", base, key not in required)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}/[]", base)
        for i, alternative in enumerate(node.get("anyOf", [])):
            walk(alternative, f"{path}/<{i}>", base)

    walk(load(name), "", name)
    return out


def record() -> None:
    CONTRACT.write_text(json.dumps({"version": json_version(),
                                    "schemas": {n: contract(n) for n in schema_names()}},
                                   indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record()
    else:
        sys.exit("usage: python3 tests/helpers/json_schemas.py --record")
