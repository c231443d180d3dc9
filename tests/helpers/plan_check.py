# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeded random plans checked against the kernel: shared by
tests/test_plan.py (host loop devices, the mainline kernel, no hints) and
tests/vm/test_vm_plan.py (qemu guests with the hint kernels).

A case is a small filesystem (profiles, device sizes, hints), some content
(``guest-fill part``: partly used data chunks and metadata) and one to three
changes. ``script()`` turns it into a shell script that runs the same way in
a guest (busybox sh) and on the host (bash): make the filesystem, run
``btrfsx filesystem plan`` (JSON), record every chunk and its used bytes
(btrfs-progs' dump-tree, the oracle), make each change for real (``btrfs
device add/remove``, ``btrfs filesystem resize``, ``btrfs balance start
-dconvert`` or ``-dusage= -musage=``, ``btrfs balance resume``, ``btrfs
replace``, hint sets, ``btrfsx balance misplaced``),
stop at the first that fails, record the chunks again, and fill the result
to ENOSPC: data (fallocate), metadata (xattrs), or data with every
preference made strict. Results come back as ``@@R`` lines and ``@@BEGIN``
blocks (tests/vm/vmharness.parse_console reads both).

``compare()`` checks one case: the plan's verdict per change against what
the kernel did (an impossible change really fails, at that change, with
ENOSPC where the kernel relocates; a possible one succeeds), the moved
bytes (the used bytes of the chunks that really went away) within 1 %, and
free_estimated / free_strict / metadata_room within 1 % of the fill.
"""

from __future__ import annotations

import json
import random
import re
import shlex
from dataclasses import dataclass, field

# The aging's mount (the kernel's timers out: see aging.script) and hint names.
from helpers.aging import HINT_NAMES, MOUNT_OPTIONS

MiB = 1 << 20
PROFILE_MIN = {"single": 1, "dup": 1, "raid0": 2, "raid1": 2, "raid10": 2, "raid1c3": 3,
               "raid5": 2, "raid6": 3}
COPIES = {"single": 1, "dup": 2, "raid0": 1, "raid1": 2, "raid10": 2, "raid1c3": 3,
          "raid5": 1, "raid6": 1}
DATA_PROFILES = ["single", "raid0", "raid1", "raid10", "raid1c3"]
META_PROFILES = ["dup", "raid1", "raid1c3"]
STRICT = {0: 3, 1: 2, 2: 2, 3: 3, 4: 4}
TOLERANCE = 0.01
#: below this many bytes a difference is noise whatever its share (a fill that
#: stops at 4 KiB, the last partial stripe): figures near 0 are not 1 % exact
SLACK = 1 << 20


def allows(hint: int, data: bool) -> bool:
    return hint != (2 if data else 3)


@dataclass
class Case:
    seed: int
    series: str                     # "host", "v12" or "kakra"
    sizes: list[int]                # bytes of devids 1..n
    hints: list[int]
    data: str
    metadata: str
    shrunk: dict = field(default_factory=dict)   # devid -> filesystem size below the disk
    prefill: int = 0                # data bytes preallocated before the plan
    small_files: int = 0            # small files with an xattr (metadata)
    changes: list = field(default_factory=list)  # [(op, value or None)]
    spares: list = field(default_factory=list)   # disk sizes the adds and replaces use
    measure: str = "data"           # data | meta | strict
    final: dict = field(default_factory=dict)    # devid -> (disk name, hint) if all succeed
    #: an aged filesystem (tests/helpers/aging.py): the members' devids, in
    #: disk order ("dev0"..), and its description; none for a fresh one
    devids: list = field(default_factory=list)
    past: str = ""
    #: compare the after-state with `usage` as for an aged one (a young one
    #: is held to the fill alone unless this is set)
    after_state: bool = False
    #: read every block group in before the plan (fstrim waits for each): the
    #: kernel's allocator then finds free space by address, as the plan does,
    #: not only in the block groups it happened to have read (a balance's
    #: usage filter sees the difference)
    cache_first: bool = False

    def describe(self) -> str:
        ch = " ".join(f"--{op}" + (f" {v}" if v is not None else "") for op, v in self.changes)
        if self.past:
            return f"{self.past}\n    plan ({self.series}): {ch}"
        sizes = [s // MiB for s in self.sizes]
        return (f"seed {self.seed} ({self.series}): {self.data}/{self.metadata} {sizes} MiB "
                f"hints {self.hints} prefill {self.prefill // MiB} MiB, measure "
                f"{self.measure}: {ch}")


class _Fs:
    """What the generator knows of the filesystem while it picks changes."""

    def __init__(self, case: Case):
        self.case = case
        self.devs = {i + 1: {"disk": f"dev{i}", "size": s, "fs": case.shrunk.get(i + 1, s),
                             "hint": case.hints[i]} for i, s in enumerate(case.sizes)}
        self.profiles = {"data": case.data, "metadata": case.metadata}

    def need(self) -> int:
        return max(PROFILE_MIN[p] for p in self.profiles.values())

    def guard_ok(self, devs=None) -> bool:
        hints = [d["hint"] for d in (devs or self.devs).values()]
        return (sum(allows(h, True) for h in hints) >= PROFILE_MIN[self.profiles["data"]] and
                sum(allows(h, False) for h in hints) >= PROFILE_MIN[self.profiles["metadata"]])


def _pick_change(rng: random.Random, fs: _Fs, ops: list[str], sizes: list[int],
                 hint_choices: list[int]) -> tuple[str, str | None] | None:
    case = fs.case
    op = rng.choice(ops)
    devid = rng.choice(sorted(fs.devs))
    dev = fs.devs[devid]
    if op == "add":
        size = rng.choice(sizes)
        hint = rng.choice(hint_choices)
        case.spares.append(size)
        new = max(fs.devs) + 1
        fs.devs[new] = {"disk": f"spare{len(case.spares) - 1}", "size": size, "fs": size,
                        "hint": hint}
        return "add", f"{size // MiB}M" + (f":{hint}" if hint_choices != [0] else "")
    if op == "remove":
        if len(fs.devs) - 1 < fs.need():
            return None
        del fs.devs[devid]
        return "remove", str(devid)
    if op == "resize":
        if dev["fs"] < dev["size"] and rng.random() < 0.5:
            dev["fs"] = dev["size"]
            return "resize", f"{devid}={dev['size'] // MiB}M"
        low = 256 * MiB
        if dev["fs"] <= low + 64 * MiB:
            return None
        new = rng.randrange(low, dev["fs"] - 32 * MiB, 16 * MiB)
        dev["fs"] = new
        return "resize", f"{devid}={new // MiB}M"
    if op == "convert":
        kind = rng.choice(["data", "metadata"])
        choices = DATA_PROFILES if kind == "data" else META_PROFILES
        profile = rng.choice([p for p in choices if PROFILE_MIN[p] <= len(fs.devs)])
        if any(op_ == "convert" and v.startswith(kind + "=") for op_, v in case.changes):
            return None
        fs.profiles[kind] = profile
        return "convert", f"{kind}={profile}"
    if op == "replace":
        size = rng.choice([s for s in sizes if s >= dev["fs"]] or [dev["fs"]])
        case.spares.append(size)
        hint = rng.choice(hint_choices)
        fs.devs[devid] = {"disk": f"spare{len(case.spares) - 1}", "size": size,
                          "fs": dev["fs"], "hint": hint}
        return "replace", f"{devid}={size // MiB}M" + (f":{hint}" if hint_choices != [0] else "")
    if op == "hint":
        trial = {k: dict(v) for k, v in fs.devs.items()}
        trial[devid]["hint"] = rng.choice(hint_choices)
        if not fs.guard_ok(trial):
            return None
        dev["hint"] = trial[devid]["hint"]
        return "hint", f"{devid}={dev['hint']}"
    if op == "relocate":
        if not any(v["hint"] for v in fs.devs.values()):
            return None
        return "relocate", None
    if op == "balance":
        return "balance", balance_filters(rng)
    return None


def balance_filters(rng: random.Random, gentle: bool = False) -> str:
    """A usage-filtered balance's value (``--balance``): data, metadata or
    both, a percent or a range each; @gentle: the low percentages sysadmins
    give a nearly full filesystem (most of the aged ones are)."""
    def usage(choices):
        low, high = sorted(rng.sample(choices, 2))
        return f"{low}..{high}" if rng.random() < 0.25 else str(high)

    kinds = rng.choice(["d", "m", "dm", "dm"])
    out = []
    if "d" in kinds:
        data = [0, 5, 10, 20, 30, 50] if gentle else [0, 10, 30, 50, 70, 80, 95]
        out.append(f"dusage={usage(data)}")
    if "m" in kinds:
        out.append(f"musage={usage([0, 5, 10, 30] if gentle else [0, 5, 30, 60, 90])}")
    return ",".join(out)


def make_case(series: str, seed: int, sizes: list[int], ops: list[str],
              hint_choices: list[int], measures: list[str], fill=(0.1, 0.7),
              small_files=(0, 200, 1000)) -> Case:
    """A random case of @series; the same seed gives the same case. @fill:
    the range of the share of the data capacity filled before the plan;
    @small_files: the choices of small files with an xattr (metadata)."""
    rng = random.Random(f"plan-{series}-{seed}")
    while True:
        n = rng.randint(2, 4)
        data = rng.choice([p for p in DATA_PROFILES if PROFILE_MIN[p] <= n])
        meta = rng.choice([p for p in META_PROFILES if PROFILE_MIN[p] <= n])
        case = Case(seed, series, [rng.choice(sizes) for _ in range(n)],
                    [rng.choice(hint_choices) for _ in range(n)], data, meta)
        if not _Fs(case).guard_ok():
            continue
        if rng.random() < 0.3:
            devid = rng.randint(1, n)
            if case.sizes[devid - 1] > 384 * MiB:
                case.shrunk[devid] = case.sizes[devid - 1] - 128 * MiB
        capacity = sum(case.shrunk.get(i + 1, s) for i, s in enumerate(case.sizes))
        capacity //= COPIES[data]
        case.prefill = int(capacity * rng.uniform(*fill)) // MiB * MiB
        case.small_files = rng.choice(small_files)
        case.measure = measures[seed % len(measures)]
        fs = _Fs(case)
        for _ in range(rng.randint(1, 3)):
            for _try in range(10):
                change = _pick_change(rng, fs, ops, sizes, hint_choices)
                if change:
                    case.changes.append(change)
                    break
        if not case.changes:
            continue
        case.final = {devid: (d["disk"], d["hint"]) for devid, d in fs.devs.items()}
        return case


# ----------------------------------------------------------------- the script

FUNCTIONS = r"""
capture() {
	name=$1; shift
	echo "@@BEGIN $name"
	"$@" 2>&1
	rc=$?
	echo ""
	echo "@@END $name $rc"
	return $rc
}
# A change of case $seed, unless an earlier one failed.
step() {
	n=$1; shift
	if [ "$failed" = 1 ]; then echo "@@R skipped $seed $n"; return 0; fi
	capture step_${seed}_$n "$@" || { failed=1; echo "@@R failed $seed $n"; }
	return 0
}
member() {
	btrfs filesystem show "$mnt" | awk '/ path /{print $NF; exit}'
}
chunks() {
	sync
	dev=$(member)
	echo "@@BEGIN $1"
	btrfs inspect-internal dump-tree -t chunk $dev | grep -E 'CHUNK_ITEM|stripe [0-9]+ devid'
	btrfs inspect-internal dump-tree -t extent $dev | grep -A1 BLOCK_GROUP_ITEM
	echo "@@END $1 0"
}
# At rest: committed, and the empty block groups the cleaner deletes deleted.
settle() {
	guest-age settle "$mnt" >/dev/null
}
# JSON alone: messages on stderr would interleave (they are in it as "warnings").
quiet() {
	"$@" 2>/dev/null
}
# The kernel's own record of what it relocated since "mark": its log lines.
mark() {
	token="btrfsx-plan-$seed-$$-$(date +%s)-$RANDOM"
	echo "$token" > /dev/kmsg
}
relocated() {
	echo "@@BEGIN $1"
	dmesg | sed -n "/$token/,\$p" | grep -E "\(device ($2)\)" |
		grep -o "relocating block group [0-9]*"
	echo "@@END $1 0"
}
"""


def _set_hint(dev: str, hint: str) -> str:
    return f"btrfsx device property set {dev} allocation_hint {HINT_NAMES[int(hint)]}"


def _with_hint(cmd: str, dev: str, hint: str) -> str:
    """@cmd, then the new device @dev gets @hint (a change's SIZE:HINT)."""
    return f"sh -c '{cmd} && {_set_hint(dev, hint)}'" if hint and hint != "0" else cmd


def _change_cmds(case: Case, disks: dict[str, str], mnt: str) -> list[str]:
    """Shell commands that make the changes of @case for real, one per change."""
    devids = case.devids or range(1, len(case.sizes) + 1)
    paths = {devid: disks[f"dev{i}"] for i, devid in enumerate(devids)}
    spares = iter(disks[f"spare{i}"] for i in range(len(case.spares)))
    cmds = []
    for op, value in case.changes:
        if op == "add":
            dev, hint = next(spares), value.partition(":")[2]
            paths[max(paths) + 1] = dev
            cmds.append(_with_hint(f"btrfs device add -f {dev} {mnt}", dev, hint))
        elif op == "remove":
            cmds.append(f"btrfs device remove {value} {mnt}")
            del paths[int(value)]
        elif op == "resize":
            devid, size = value.split("=")
            cmds.append(f"btrfs filesystem resize {devid}:{size} {mnt}")
        elif op == "convert":
            kind, profile = value.split("=")
            cmds.append(f"btrfs balance start -f -{kind[0]}convert={profile} {mnt}")
        elif op == "replace":
            devid, rest = value.split("=")
            dev, hint = next(spares), rest.partition(":")[2]
            paths[int(devid)] = dev
            cmds.append(_with_hint(f"btrfs replace start -B -f {devid} {dev} {mnt}", dev, hint))
        elif op == "hint":
            devid, hint = value.split("=")
            cmds.append(_set_hint(paths[int(devid)], hint))
        elif op == "relocate":
            cmds.append(f"btrfsx balance misplaced {mnt}")
        elif op == "balance":
            filters = " ".join("-" + f.lstrip("-") for f in value.split(","))
            cmds.append(f"btrfs balance start {filters} {mnt}")
        elif op == "resume":
            cmds.append(f"btrfs balance resume {mnt}")
    return cmds


def script(case: Case, disks: dict[str, str], mnt: str = "/mnt") -> str:
    """The shell lines of @case; @disks names the device of each disk
    ("dev0".., "spare0.."), @mnt where it is mounted. A fresh filesystem is
    made and given some content first; an aged one (case.devids) is mounted
    as it is."""
    devs = [disks[f"dev{i}"] for i in range(len(case.devids or case.sizes))]
    s = case.seed
    lines = [f"seed={s}; failed=0; mnt={mnt}"]
    opts = MOUNT_OPTIONS + "," + ",".join(f"device={d}" for d in devs)
    if case.devids:
        lines.append(f"mount -o {opts} {devs[0]} {mnt} || echo '@@R setup_failed {s}'")
    else:
        lines.append(f"mkfs.btrfs -q -f -d {case.data} -m {case.metadata} {' '.join(devs)} "
                     f">/dev/null 2>&1 || echo '@@R setup_failed {s}'")
        for dev, hint in zip(devs, case.hints):
            if hint:
                lines.append(f"btrfsx property set -f {dev} allocation_hint {hint} >/dev/null")
        lines.append(f"mount -o {opts} {devs[0]} {mnt}")
        for devid, size in case.shrunk.items():
            lines.append(f"btrfs filesystem resize {devid}:{size // MiB}M {mnt} >/dev/null")
        lines.append(f"guest-fill part {mnt} {case.prefill} {case.small_files} | "
                     f"sed 's/^@@R fill_part/@@R part {s}/'")
    if case.cache_first:
        lines.append(f"fstrim {mnt}")
    # The cleaner done: the plan and the kernel start from the same state at
    # rest, which the script settles to again after each change (the mount's
    # MOUNT_OPTIONS keep the kernel's timers from doing it at times of their own).
    lines.append("settle")
    return "\n".join(lines) + "\n" + _plan_and_change(case, disks, mnt)


def _plan_and_change(case: Case, disks: dict[str, str], mnt: str) -> str:
    """The plan, the changes for real, and the measures of the result."""
    s = case.seed
    plan_args = " ".join(f"--{op}" + (f" {shlex.quote(v)}" if v is not None else "")
                         for op, v in case.changes)
    lines = [f"capture plan_{s} quiet btrfsx --format json filesystem plan {mnt} {plan_args}",
             f"chunks before_{s}", "mark"]
    for i, cmd in enumerate(_change_cmds(case, disks, mnt)):
        lines.append(f"step {i} {cmd}")
        lines.append("settle")
    # The kernel names the filesystem after one of its devices (a replace changes which).
    names = "|".join(sorted({d.rsplit("/", 1)[-1] for d in disks.values()}))
    lines.append(f"relocated relocated_{s} '{names}'")
    lines.append('if [ "$failed" = 0 ]; then')
    lines.append(f"  chunks after_{s}")
    # The result at rest, read as `filesystem usage` reads it (exact at rest).
    lines.append(f"  capture usage_{s} quiet btrfsx --format json filesystem usage {mnt}")
    if case.measure == "meta":
        lines.append(f"  capture premeta_{s} btrfs filesystem usage -b {mnt}")
        lines.append(f"  guest-fill meta {mnt} 8000000000 | sed 's/^@@R fill_meta/@@R meta {s}/'")
        lines.append("  sync")
        lines.append(f"  capture postmeta_{s} btrfs filesystem usage -b {mnt}")
    else:
        if case.measure == "strict":
            for devid, (disk, hint) in sorted(case.final.items()):
                lines.append(f"  {_set_hint(disks[disk], str(STRICT[hint]))} >/dev/null")
        # As writers of moderate files fill it: a first request larger than
        # the data can take would leave metadata no device space (guest-fill.c).
        lines.append(f"  guest-fill steady {mnt} | sed 's/^@@R fill_data/@@R fill {s}/'")
    lines.append("fi")
    lines.append(f"umount {mnt}")
    return "\n".join(lines) + "\n"


def aged_case(fs, series: str, kinds: list[str]) -> Case:
    """One change on the aged filesystem @fs (an aging.AgedFs), of the kind
    the seed picks from @kinds ("remove", "resize", "replace", "convert", "relocate",
    "add", "balance"); the same seed gives the same change."""
    spec = fs.spec
    rng = random.Random(f"aged-plan-{series}-{spec.seed}")
    sizes = spec.sizes + ([spec.spare] if spec.spare else [])
    size_of = {devid: sizes[devid - 1] for devid in fs.devids}
    hints = {devid: (spec.hints[devid - 1] if devid <= len(spec.hints) else 0)
             for devid in fs.devids}
    case = Case(spec.seed, series, [size_of[d] for d in fs.devids],
                [hints[d] for d in fs.devids], spec.data, spec.metadata,
                devids=list(fs.devids), past=spec.describe(), measure="data")
    need = max(PROFILE_MIN.get(spec.data, 1), PROFILE_MIN.get(spec.metadata, 1))
    order = kinds[spec.seed % len(kinds):] + kinds[:spec.seed % len(kinds)]
    for kind in order:
        devid = rng.choice(fs.devids)
        if kind == "remove" and len(fs.devids) > need:
            case.changes = [("remove", str(devid))]
        elif kind == "resize" and size_of[devid] >= 384 * MiB:
            new = rng.randrange(256 * MiB, size_of[devid] - 64 * MiB, 16 * MiB)
            case.changes = [("resize", f"{devid}={new // MiB}M")]
        elif kind == "replace":
            size = rng.choice([size_of[devid], size_of[devid] + 256 * MiB])
            case.spares.append(size)
            case.changes = [("replace", f"{devid}={size // MiB}M")]
        elif kind == "convert":
            what = rng.choice(["data", "metadata"])
            choices = DATA_PROFILES if what == "data" else META_PROFILES
            current = spec.data if what == "data" else spec.metadata
            profiles = [p for p in choices if PROFILE_MIN[p] <= len(fs.devids) and p != current]
            if not profiles:
                continue
            case.changes = [("convert", f"{what}={rng.choice(profiles)}")]
        elif kind == "add":
            size = rng.choice([256 * MiB, 512 * MiB])
            case.spares.append(size)
            case.changes = [("add", f"{size // MiB}M"), ("remove", str(devid))]
        elif kind == "balance":
            case.changes = [("balance", balance_filters(rng, gentle=True))]
        elif kind == "relocate" and any(hints.values()):
            case.changes = [("relocate", None)]
        else:
            continue
        break
    final = {d: (f"dev{i}", hints[d]) for i, d in enumerate(fs.devids)}
    case.final = final
    return case


# ----------------------------------------------------------------- the results

def parse_chunks(text: str) -> dict[int, dict]:
    """logical -> {"type", "used", "devids"} from the ``chunks`` block."""
    out: dict[int, dict] = {}
    lines = text.splitlines()
    chunk = None
    for i, line in enumerate(lines):
        m = re.search(r"CHUNK_ITEM (\d+)\)", line)
        if m:
            chunk = out.setdefault(int(m.group(1)), {"used": None, "devids": []})
        m = re.search(r"stripe \d+ devid (\d+)", line)
        if m and chunk is not None:
            chunk["devids"].append(int(m.group(1)))
        m = re.search(r"key \((\d+) BLOCK_GROUP_ITEM (\d+)\)", line)
        if m and i + 1 < len(lines):
            used = re.search(r"used (\d+)", lines[i + 1])
            flags = re.search(r"flags (\S+)", lines[i + 1])
            out.setdefault(int(m.group(1)), {})
            out[int(m.group(1))]["used"] = int(used.group(1)) if used else None
            out[int(m.group(1))]["type"] = flags.group(1) if flags else "?"
    return out


def _chunks_note(before: dict, after: dict, plan: dict) -> str:
    """The block groups behind an allocated-bytes mismatch: the kernel's that
    came and went, and the plan's new ones."""
    def listed(chunks):
        return ", ".join(f"{lg} {c.get('type', '?')} used {c['used']} on {c.get('devids')}"
                         for lg, c in sorted(chunks.items())) or "none"
    came = {lg: c for lg, c in after.items() if lg not in before}
    went = {lg: c for lg, c in before.items() if lg not in after}
    made = ", ".join(f"{c['logical']} {c['type']} used {c['used']} on {c['devids']}"
                     for c in plan["created"]) or "none"
    return (f"the kernel's block groups: new {listed(came)}; gone {listed(went)}; "
            f"the plan's new ones: {made}")


def parse_relocated(text: str) -> list[int]:
    """The block groups the kernel relocated, in order, each once."""
    out: list[int] = []
    for m in re.finditer(r"relocating block group (\d+)", text):
        if int(m.group(1)) not in out:
            out.append(int(m.group(1)))
    return out


def progs_metadata(text: str) -> tuple[int, int]:
    """Size and Used of the Metadata line of ``btrfs filesystem usage -b``."""
    for line in text.splitlines():
        if line.startswith("Metadata,"):
            return (int(line.split("Size:")[1].split(",")[0]),
                    int(line.split("Used:")[1].split()[0]))
    raise AssertionError(f"no Metadata line in:\n{text}")


def err(figure: int, truth: int) -> float:
    return (figure - truth) / truth if truth else float(figure != 0)


def share(figure: int, truth: int) -> float:
    """The error for the table: |err|, or 0 within the absolute slack."""
    return abs(err(figure, truth)) if abs(figure - truth) > SLACK else 0.0


def off(figure: int, truth: int) -> bool:
    """Outside the 1 % (and the small absolute slack near 0)."""
    return abs(err(figure, truth)) > TOLERANCE and abs(figure - truth) > SLACK


@dataclass
class Outcome:
    case: Case
    plan: dict | None = None
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    tolerated: bool = False         # a change the plan flagged tight failed
    #: relative errors of the after-state (aged cases): "allocated" (the worst
    #: device), "free_estimated", "free_strict", "metadata_room"
    errors: dict = field(default_factory=dict)
    kernel_failed: bool = False     # a change failed in the kernel (ENOSPC or abort)

    def line(self) -> str:
        verdict = "MISMATCH " + "; ".join(self.problems) if self.problems else \
            "tolerated (flagged tight, or a kernel transaction abort)" if self.tolerated else "ok"
        return f"{self.case.describe()}\n    {'; '.join(self.notes)}\n    {verdict}"


def _json_doc(text: str) -> dict | None:
    start = text.find('{"__header"')
    return json.JSONDecoder().raw_decode(text, start)[0] if start >= 0 else None


def compare(case: Case, res) -> Outcome:
    """@res: a vmharness.GuestResult (results and outputs of the script)."""
    out = Outcome(case)
    s = case.seed
    if "setup_failed" in res.results and any(int(w[0]) == s for w in res.results["setup_failed"]):
        out.problems.append("the filesystem could not be made")
        return out
    rc, text = res.output(f"plan_{s}")
    out.plan = plan = _json_doc(text)
    if rc not in (0, 5) or not plan:
        out.problems.append(f"plan exit {rc}: {text[-600:]}")
        return out
    steps = plan["changes"]
    impossible = [i for i, st in enumerate(steps) if st["status"] == "impossible"]
    failed = [int(w[1]) for w in res.results.get("failed", []) if int(w[0]) == s]
    real_fail = failed[0] if failed else None
    plan_fail = impossible[0] if impossible else None
    out.notes.append(f"plan {'possible' if plan['possible'] else f'impossible at {plan_fail}'}, "
                     f"kernel {'done' if real_fail is None else f'failed at {real_fail}'}")
    out.kernel_failed = real_fail is not None
    if real_fail is not None and (plan_fail is None or real_fail < plan_fail):
        text = res.output(f"step_{s}_{real_fail}")[1]
        if ("Read-only file system" in text or "Input/output error" in text) and \
                not steps[real_fail]["tight"] and not case.devids:
            # ENOSPC inside a transaction: the kernel aborted it (its own failure mode).
            out.notes.append(f"change {real_fail}: the kernel aborted a transaction and made "
                             f"the filesystem read-only: {text[-200:]}")
            out.tolerated = True
            return out
    if (real_fail is not None and (plan_fail is None or real_fail < plan_fail) and
            steps[real_fail]["tight"]):
        # The plan warned: the kernel's reservations may fail this change.
        out.notes.append(f"change {real_fail} was flagged tight and failed: "
                         f"{res.output(f'step_{s}_{real_fail}')[1][-200:]}")
        out.tolerated = True
        return out
    if real_fail != plan_fail:
        detail = ""
        if real_fail is not None:
            detail = res.output(f"step_{s}_{real_fail}")[1][-300:]
        elif plan_fail is not None:
            detail = steps[plan_fail]["reason"]
        out.problems.append(f"the plan says change {plan_fail} fails, the kernel failed at "
                            f"{real_fail}: {detail}")
        return out
    if real_fail is not None:
        text = res.output(f"step_{s}_{real_fail}")[1]
        op = case.changes[real_fail][0]
        # An ENOSPC inside a transaction aborts it: the filesystem goes read-only.
        if op in ("remove", "resize", "convert", "balance", "resume") and not any(
                why in text for why in ("No space left", "Read-only file system",
                                        "Input/output error")):
            out.problems.append(f"change {real_fail} failed, but not with ENOSPC: {text[-300:]}")
        return out
    before = parse_chunks(res.output(f"before_{s}")[1])
    moved = [lg for lg in parse_relocated(res.output(f"relocated_{s}")[1]) if lg in before]
    real_moved = sum(before[lg]["used"] or 0 for lg in moved)
    planned = [c for c in plan["moved"] if c["existed"]]
    plan_moved = sum(c["used_before"] for c in planned)
    out.notes.append(f"moved {plan_moved // MiB} MiB planned, {real_moved // MiB} MiB real "
                     f"({len(planned)}/{len(moved)} chunks)")
    if sorted(c["logical"] for c in planned) != sorted(moved):
        out.problems.append(f"moved chunks differ: plan {sorted(c['logical'] for c in planned)}, "
                            f"kernel {sorted(moved)}")
    if off(plan_moved, real_moved):
        out.problems.append(f"moved bytes {plan_moved} vs {real_moved} "
                            f"({err(plan_moved, real_moved):+.2%})")
    after_fig = plan["after"]
    if case.devids or case.after_state:
        _after_state(out, after_fig, res.json(f"usage_{s}")[1])
        if any(p.startswith("allocated") for p in out.problems):
            out.notes.append(_chunks_note(before, parse_chunks(res.output(f"after_{s}")[1]),
                                          plan))
    if case.measure == "meta":
        used_before = progs_metadata(res.output(f"premeta_{s}")[1])[1]
        size_after = progs_metadata(res.output(f"postmeta_{s}")[1])[0]
        taken = size_after - used_before
        e = err(after_fig["metadata_room"], taken)
        out.notes.append(f"metadata_room {after_fig['metadata_room'] // MiB} MiB, filled "
                         f"{taken // MiB} MiB ({e:+.2%})")
        if off(after_fig["metadata_room"], taken):
            out.problems.append(f"metadata_room {e:+.2%}")
    else:
        written = [int(w[1]) for w in res.results.get("fill", []) if int(w[0]) == s][0]
        key = "free_strict" if case.measure == "strict" else "free_estimated"
        e = err(after_fig[key], written)
        out.errors[key] = share(after_fig[key], written)
        out.notes.append(f"{key} {after_fig[key] // MiB} MiB, filled {written // MiB} MiB "
                         f"({e:+.2%})")
        if off(after_fig[key], written):
            out.problems.append(f"{key} {e:+.2%}")
    if out.problems and any(st["tight"] for st in steps) and not case.devids:
        # The plan said its figures are uncertain here.
        out.tolerated = True
        out.notes.extend(f"(tight) {p}" for p in out.problems)
        out.problems = []
    return out


def _after_state(out: Outcome, planned: dict, real: dict | None) -> None:
    """The plan's after-state against `filesystem usage` of the real result
    (exact at rest): every device's allocated bytes, free_strict and
    metadata_room, each within 1 %."""
    if not real:
        out.problems.append("no usage after the change")
        return
    allocated = {d["devid"]: d["size"] - d["unallocated"] for d in real["devices"]}
    notes = []
    for dev in planned["devices"]:
        truth = allocated.get(dev["devid"])
        if truth is None:
            out.problems.append(f"devid {dev['devid']} planned, not in the filesystem")
            continue
        figure = dev["size"] - dev["unallocated"]
        e = err(figure, truth)
        if off(figure, truth):
            notes.append(f"devid {dev['devid']} {figure // MiB}/{truth // MiB} MiB ({e:+.1%})")
    if set(allocated) != {d["devid"] for d in planned["devices"]}:
        out.problems.append(f"devices differ: planned {[d['devid'] for d in planned['devices']]}, "
                            f"real {sorted(allocated)}")
    out.errors["allocated"] = max((share(d["size"] - d["unallocated"],
                                         allocated.get(d["devid"], 0))
                                   for d in planned["devices"]), default=0.0)
    if notes:
        out.problems.append("allocated " + ", ".join(notes))
    for key in ("free_strict", "metadata_room"):
        e = err(planned[key], real[key])
        out.errors[key] = share(planned[key], real[key])
        out.notes.append(f"{key} {planned[key] // MiB}/{real[key] // MiB} MiB ({e:+.2%})")
        if off(planned[key], real[key]):
            out.problems.append(f"{key} {e:+.2%} against usage after the change")


#: the moved-chunk checks of compare(): where the kernel puts a usage-filtered
#: balance's relocated extents is not the same twice on the same aged layout
#: (into the free space of lower block groups in one run, new chunks in the
#: next), and a lower block group filled past the filter is then skipped
MOVED = ("moved chunks differ", "moved bytes")


def settle_moves(o: Outcome) -> None:
    """A balance whose after-state is the kernel's (every figure within 1 %)
    but whose moved chunks differ: a note, not a mismatch (see MOVED)."""
    if o.problems and all(p.startswith(MOVED) for p in o.problems) and o.errors:
        o.notes.extend(f"(the kernel placed extents elsewhere, the same after-state) {p}"
                       for p in o.problems)
        o.problems = []


def report(outcomes: list[Outcome]) -> str:
    return "\n".join(o.line() for o in outcomes)


def table(outcomes: list[Outcome]) -> str:
    """Per change kind: cases, verdicts that agree, and the worst and median
    error of each after-state figure (the issue's table)."""
    import statistics

    rows = ["kind       cases  verdict  figure          worst    median"]
    kinds: dict[str, list[Outcome]] = {}
    for o in outcomes:
        kinds.setdefault("+".join(op for op, _ in o.case.changes), []).append(o)
    for kind, group in sorted(kinds.items()):
        agree = sum(1 for o in group if not any("the plan says" in p for p in o.problems))
        first = True
        for key in ("allocated", "free_estimated", "free_strict", "metadata_room"):
            values = [o.errors[key] for o in group if key in o.errors]
            if not values:
                continue
            rows.append(f"{kind if first else '':10} {len(group) if first else '':>5}  "
                        f"{f'{agree}/{len(group)}' if first else '':>7}  {key:14} "
                        f"{max(values):7.2%}  {statistics.median(values):7.2%}")
            first = False
        if first:
            rows.append(f"{kind:10} {len(group):>5}  {agree}/{len(group):<5}  (no after-state: "
                        f"the change failed)")
    return "\n".join(rows)
