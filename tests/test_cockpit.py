# SPDX-License-Identifier: GPL-2.0-or-later
"""cockpit-btrfsx in a real web console and a real browser.

Debian's cockpit-ws serves the application, installed from the build tree
into a directory of this test's (XDG_DATA_DIRS), in its local-session mode
(cockpit-bridge as root, no login) on 127.0.0.1; Debian's Chromium, headless,
drives it through Selenium (tests/helpers/browser.py) over filesystems on
loop devices. The bridge runs the build's btrfsx (first in PATH) with this
test's state and configuration directories, and the monitor's clock set, so
the test's own runs of the same commands see what the page saw:

- every figure a page shows (each .bx-fig names its command and its path in
  the command's JSON) equals the CLI's, and its text is that value;
- the charts draw a bar per device with a segment per allocation, a point
  per monitor sample, the projection and its band where the report projects;
- a plan from the form is the CLI's plan; bad input (sizes, devids,
  profiles, shell metacharacters) gets the CLI's message and runs nothing
  but that one argument vector;
- actions change what the CLI shows afterwards, a refusal is the CLI's
  message, and balance misplaced shows its progress, pauses and cancels;
  maintain shows its plan as the CLI does, a target it cannot meet, what a
  read-only mount refuses, and its run pauses, resumes and meets the target;
- a filesystem unmounted while the page is open shows as not mounted, and
  once its devices are gone as gone, without an error loop;
- 1280x800 and a phone's 390x844; the keyboard alone.

Screenshots of each page go to $BTRFSX_SCREENSHOTS when set (the guide's
are made so: Documentation/guides/cockpit.md), else to the test's temporary
directory. cockpit-ws, Chromium, chromedriver, mounts and loop devices are
gone afterwards.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from helpers import aging, browser, fsutil
from helpers.fsutil import MiB

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parent.parent
COCKPIT_WS = "/usr/lib/cockpit/cockpit-ws"
DAY = 86400
T0 = 1_767_225_600
NOW = T0 + 4 * DAY + 600
HINTS = ["metadata_only", "metadata_preferred", "data_preferred", "data_preferred"]

# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """What the bridge's btrfsx and the test's own runs share."""
    top = tmp_path_factory.mktemp("cockpit-env")
    for d in ("state", "config", "bin", "shots"):
        (top / d).mkdir()
    (top / "bin" / "btrfsx").symlink_to(fsutil.btrfsx_path())
    return {"top": top, "BTRFSX_STATE_DIR": str(top / "state"),
            "BTRFSX_CONFIG_DIR": str(top / "config"), "BTRFSX_MONITOR_NOW": str(NOW)}

def btrfsx_env(env) -> dict:
    return {k: v for k, v in env.items() if k.startswith("BTRFSX_")}

def cli(env, *args, check=True):
    """btrfsx --format json ARGS as the page ran it -> the document."""
    rc, out, err = fsutil.run_btrfsx(*args, fmt="json", check=check, env=btrfsx_env(env))
    return json.loads(out)

@pytest.fixture(scope="module")
def arrays(tmp_path_factory, aged, env):
    """A: four devices, raid1, hints set so that data on devid 1 is forbidden
    and metadata on 3, 4 off-preference (test_balance's layout, where the
    host kernel forced places each chunk where the hints want it), mounted,
    with a monitor history (5 daily samples). B: two devices, raid1, not
    mounted, with a learning and stale history and an offline scrub's result.
    C: one device, mounted, to be unmounted and detached while the page is open."""
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    top = tmp_path_factory.mktemp("cockpit-fs")
    images = {"a": fsutil.make_images(top / "a", ["1G", "1040M", "1280M", "1320M"]),
              "b": fsutil.make_images(top / "b", ["1G", "1G"]),
              "c": fsutil.make_images(top / "c", ["512M"])}
    loops = {k: fsutil.LoopDevices(v) for k, v in images.items()}
    mounts = []
    try:
        for set_ in loops.values():
            set_.attach()
        a, b, c = loops["a"].devs, loops["b"].devs, loops["c"].devs
        fsutil.mkfs(a[:2], data="raid1", metadata="raid1", label="tank")
        with fsutil.mounted(a[:2]) as mnt:
            for i in range(3):
                (mnt / f"f{i}").write_bytes(os.urandom(20 * MiB))
            os.sync()
            fsutil.run(["btrfs", "device", "add", "-K", *a[2:], str(mnt)])
            fsutil.run(["btrfs", "balance", "start", "-m", str(mnt)])
        for dev, hint in zip(a, HINTS):
            fsutil.run_btrfsx("property", "set", dev, "allocation_hint", hint)
        fsutil.mkfs(b, data="raid1", metadata="raid1", label="spare")
        with fsutil.mounted(b) as mnt:
            (mnt / "g").write_bytes(os.urandom(8 * MiB))
            for day in (2, 3):
                record(env, mnt, day)
        fsutil.run_btrfsx("scrub", "start", "--offline", "-B", "-r", b[0],
                          env=btrfsx_env(env))
        fsutil.mkfs(c, data="single", metadata="dup", label="brief")
        mnt_a = fsutil.mount(a)
        mounts.append(mnt_a)
        aging.settle(mnt_a, aged.path_env)
        small = mnt_a / "small"
        small.mkdir()
        for day in range(5):
            for n in range(300 * day, 300 * (day + 1)):
                (small / f"{n:06d}").write_bytes(b"x" * 1500)
            record(env, mnt_a, day)
        mnt_c = fsutil.mount(c)
        mounts.append(mnt_c)
        yield {"a": (a, mnt_a), "b": (b, None), "c": (c, mnt_c), "loops": loops}
    finally:
        for m in mounts:
            if fsutil._findmnt_targets(str(m)) if hasattr(fsutil, "_findmnt_targets") else True:
                subprocess.run(["umount", str(m)], capture_output=True)
        for set_ in loops.values():
            set_.detach()

def record(env, mnt, day):
    fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])
    fsutil.run_btrfsx("monitor", "record", str(mnt),
                      env={**btrfsx_env(env), "BTRFSX_MONITOR_NOW": str(T0 + day * DAY)})

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

@pytest.fixture(scope="module")
def console(env, arrays):
    """cockpit-ws on 127.0.0.1 with the application installed from the build
    tree; yields the application's URL."""
    if not os.path.exists(COCKPIT_WS):
        pytest.skip("cockpit-ws is not installed (scripts/install-deps.sh)")
    why = browser.available()
    if why:
        pytest.skip(why)
    top = env["top"]
    build = os.environ.get("BTRFSX_BUILD_DIR") or str(REPO)
    p = subprocess.run(["make", "-s", "-C", build, "install-cockpitappDATA",
                        "install-cockpit-d3", f"cockpitdir={top / 'xdg' / 'cockpit'}"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    port = free_port()
    ws_env = dict(os.environ, **btrfsx_env(env), XDG_DATA_DIRS=f"{top / 'xdg'}:/usr/share",
                  PATH=f"{top / 'bin'}:{os.environ['PATH']}")
    log = open(top / "cockpit-ws.log", "w")
    ws = subprocess.Popen([COCKPIT_WS, "--no-tls", "--address", "127.0.0.1", "--port", str(port),
                           "--local-session=cockpit-bridge"], env=ws_env, stdout=log,
                          stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/cockpit/@localhost/btrfsx/index.html"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or ws.poll() is not None:
                    raise AssertionError("cockpit-ws did not answer: " +
                                         (top / "cockpit-ws.log").read_text())
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(ws.pid, signal.SIGTERM)
        try:
            ws.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(ws.pid, signal.SIGKILL)
            ws.wait()
        log.close()
        shutil.rmtree(top / "xdg", ignore_errors=True)

@pytest.fixture(scope="module")
def b(console):
    """The browser, at 1280x800."""
    br = browser.Browser()
    try:
        br.request("size", width=1280, height=800)
        br.url = console
        yield br
    finally:
        br.close()

# --------------------------------------------------------------------------- page helpers

def open_page(br, page: str):
    br.request("open", url="about:blank")     # a new page, also where only the hash differs
    br.request("open", url=f"{br.url}#/{page}")
    return settled(br, page, 0)

def settled(br, page: str, before: int) -> int:
    """Waits until @page is ready after having settled @before times."""
    return int(br.wait("var p = document.getElementById('page-' + arguments[0]);"
                       "return p.getAttribute('data-state') === 'ready' &&"
                       " Number(p.getAttribute('data-settled') || 0) > arguments[1] &&"
                       " p.getAttribute('data-settled');", page, before))

def settled_count(br, page: str) -> int:
    return int(br.js("return Number(document.getElementById('page-' + arguments[0])"
                     ".getAttribute('data-settled') || 0)", page))

def shoot(br, env, name: str):
    where = Path(os.environ.get("BTRFSX_SCREENSHOTS") or env["top"] / "shots")
    where.mkdir(parents=True, exist_ok=True)
    br.request("screenshot", path=str(where / f"{name}.png"))

FIGS = """
var root = arguments[0] ? document.querySelector(arguments[0]) : document;
return Array.prototype.map.call(root.querySelectorAll('.bx-fig'), function (e) {
    return [e.getAttribute('data-src'), e.getAttribute('data-path'),
            e.getAttribute('data-value'), e.getAttribute('data-kind'), e.textContent];
});
"""

def figures(br, scope: str | None = None) -> list:
    return br.js(FIGS, scope)

def lookup(doc, path: str):
    for part in path.split("/"):
        if isinstance(doc, list):
            if "=" in part:
                key, value = part.split("=", 1)
                doc = next(x for x in doc if str(x.get(key)) == value)
            else:
                doc = doc[int(part)]
        else:
            doc = doc[part]
    return doc

IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

def fixed(v: float, digits: int) -> str:
    """JavaScript's Number.toFixed: the exact binary value, rounded half up."""
    return str(Decimal(v).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))

def size_text(v) -> str:
    if v is None:
        return "-"
    sign, v, i = ("-" if v < 0 else ""), abs(v), 0
    while v >= 1024 and i < len(IEC) - 1:
        v /= 1024
        i += 1
    return sign + (fixed(v, 2) if i else str(v)) + IEC[i]

def shown(value, kind: str) -> str:
    if value is None:
        return "never" if kind == "days" else "-"
    if kind == "size":
        return size_text(value)
    if kind == "days":
        return f"{fixed(value, 1)} days"
    if kind == "pct":
        return f"{fixed(value, 2)} %"
    if kind == "list":
        return " ".join(value)
    if kind == "verdict":
        return "Possible" if value else "Impossible"
    if kind == "text" and isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

def check_figures(br, env, scope: str | None, skip=()) -> int:
    """Every figure in @scope against the CLI's run of its command; returns
    how many were compared."""
    docs, n = {}, 0
    for src, path, value, kind, text in figures(br, scope):
        if src in skip or src in ("progress", "balance"):
            continue
        if src not in docs:
            docs[src] = cli(env, *src.split(), check=False)
        want = lookup(docs[src], path)
        assert json.loads(value) == want, (src, path, value, want)
        if kind != "seconds":
            assert text == shown(want, kind), (src, path, text, want)
        n += 1
    return n

# --------------------------------------------------------------------------- the pages

def card(fsid: str) -> str:
    return f'#page-arrays .bx-card[data-fsid="{fsid}"]'

def test_arrays_figures_and_bars_are_the_clis(b, env, arrays):
    (a, mnt_a), (bdevs, _) = arrays["a"], arrays["b"]
    open_page(b, "arrays")
    fsids = {k: fsutil.read_fsid(arrays[k][0][0]) for k in ("a", "b", "c")}
    for key, fsid in fsids.items():
        n = check_figures(b, env, card(fsid))
        assert n > 20, (key, n)
    # per device a bar, a segment per allocation and one for what is unallocated
    usage = cli(env, "filesystem", "usage", str(mnt_a))
    bars = b.js("return Array.prototype.map.call(document.querySelectorAll(arguments[0] +"
                " ' svg.bx-bars g.bx-series'), function (g) { return [g.getAttribute("
                "'data-series'), Array.prototype.map.call(g.querySelectorAll('rect.bx-segment'),"
                " function (r) { return Number(r.getAttribute('data-bytes')); })]; });",
                card(fsids["a"]))
    assert [s for s, _ in bars] == [f"devid {d['devid']}" for d in usage["devices"]]
    for (_, segments), d in zip(bars, usage["devices"]):
        assert segments == [x["size"] for x in d["allocations"]] + [d["unallocated"]]
    text = b.js("return document.querySelector(arguments[0]).innerText", card(fsids["b"]))
    assert "not mounted" in text
    assert "metadata_only" in b.js("return document.querySelector(arguments[0]).innerText",
                                   card(fsids["a"]))
    b.js("document.querySelector(arguments[0]).scrollIntoView()", card(fsids["a"]))
    shoot(b, env, "arrays")

def test_trend_is_the_monitor_report(b, env, arrays):
    open_page(b, "trend")
    report = cli(env, "monitor", "report", "--samples")
    assert check_figures(b, env, "#page-trend") > 10
    fsid_a = fsutil.read_fsid(arrays["a"][0][0])
    fsid_b = fsutil.read_fsid(arrays["b"][0][0])
    by_fsid = {f["fsid"]: f for f in report["filesystems"]}
    assert by_fsid[fsid_a]["metadata_days_left"] is not None
    assert by_fsid[fsid_b]["learning"] and by_fsid[fsid_b]["stale"]
    for fsid in (fsid_a, fsid_b):
        f = by_fsid[fsid]
        for chart in ("metadata", "data"):
            drawn = b.js("var c = document.querySelector('#page-trend [data-fsid=\"' + arguments[0]"
                         " + '\"] [data-chart=\"' + arguments[1] + '\"]');"
                         "return {series: Array.prototype.map.call(c.querySelectorAll('.bx-series'),"
                         " function (s) { return s.getAttribute('data-series'); }),"
                         " points: Array.prototype.map.call(c.querySelectorAll('.bx-point'),"
                         " function (p) { return [Number(p.getAttribute('data-time')),"
                         " Number(p.getAttribute('data-value'))]; })};", fsid, chart)
            key = chart + "_left"
            assert drawn["points"] == [[s["time"], s[key]] for s in f["series"]]
            projected = fsid == fsid_a and f[f"{chart}_days_left"] is not None
            assert sorted(drawn["series"]) == (["band", "projection", "samples"] if projected
                                               else ["samples"]), (fsid, chart, drawn["series"])
    states = b.js("return Array.prototype.map.call(document.querySelectorAll('#page-trend"
                  " [data-trend-state]'), function (c) { return [c.getAttribute('data-fsid'),"
                  " c.getAttribute('data-trend-state')]; });")
    assert [fsid_a, "projected"] in states and [fsid_b, "stale"] in states
    days = b.js("return document.querySelector('#page-trend [data-fsid=\"' + arguments[0] +"
                " '\"] .bx-days .bx-fig').textContent", fsid_a)
    assert days == f"{fixed(by_fsid[fsid_a]['metadata_days_left'], 1)} days"
    b.js("document.querySelector('#page-trend [data-fsid=\"' + arguments[0] + '\"]')"
         ".scrollIntoView()", fsid_a)
    shoot(b, env, "trend")

def choose_fs(br, page: str, fsid: str):
    br.wait("var want = arguments[1]; return Array.prototype.some.call(document.querySelectorAll("
            "'#page-' + arguments[0] + ' .bx-fs-select option'), function (o) {"
            " return o.value === want; })", page, fsid)
    before = settled_count(br, page)
    br.js("var s = document.querySelector('#page-' + arguments[0] + ' .bx-fs-select');"
          "s.value = arguments[1]; s.dispatchEvent(new Event('change'));", page, fsid)
    return before

def add_change(br, kind: str, values: dict):
    br.request("click", css=f"#bx-whatif-add-{kind}")
    for field, value in values.items():
        css = f"#page-whatif .bx-change:last-child [data-field={field}]"
        if br.js("return document.querySelector(arguments[0]).tagName", css) == "SELECT":
            br.js("document.querySelector(arguments[0]).value = arguments[1]", css, value)
        else:
            br.request("type", css=css, keys=[value])

def plan(br) -> None:
    before = settled_count(br, "whatif")
    br.request("click", css="#bx-whatif-plan")
    settled(br, "whatif", before)

def clear_changes(br):
    br.js("document.querySelectorAll('#page-whatif .bx-change').forEach(function (r) {"
          " r.remove(); });")

def test_whatif_plan_is_the_clis(b, env, arrays):
    bdevs = arrays["b"][0]
    open_page(b, "whatif")
    choose_fs(b, "whatif", fsutil.read_fsid(bdevs[0]))
    add_change(b, "add", {"size": "1G", "hint": "metadata_only"})
    add_change(b, "resize", {"devid": "2", "size": "900M"})
    add_change(b, "convert", {"kind": "metadata", "profile": "dup"})
    plan(b)
    src = b.js("return document.getElementById('bx-whatif-result').getAttribute('data-src')")
    assert src.split() == ["filesystem", "plan", *bdevs, "--add", "1G:metadata_only",
                           "--resize", "2=900M", "--convert", "metadata=dup"]
    assert check_figures(b, env, "#bx-whatif-result") > 30
    doc = cli(env, *src.split(), check=False)
    commands = b.js("return Array.prototype.map.call(document.querySelectorAll("
                    "'#bx-whatif-result .bx-command'), function (e) { return e.textContent; })")
    assert commands == [c["command"] for c in doc["changes"]]
    shoot(b, env, "whatif")
    clear_changes(b)

BAD = [
    ("add", {"size": "; rm -rf /"}, "--add"),
    ("remove", {"devid": "$(id)"}, "--remove"),
    ("resize", {"devid": "1", "size": "`touch /tmp/btrfsx-cockpit-pwned`"}, "--resize"),
    ("convert", {"kind": "data", "profile": "raid7 && reboot"}, "--convert"),
    ("hint", {"devid": "1", "hint": ""}, "--hint"),
    ("add", {"size": "12Q"}, "--add"),
    ("remove", {"devid": "99"}, "--remove"),
]

def test_whatif_bad_input_gets_the_clis_message(b, env, arrays):
    bdevs = arrays["b"][0]
    open_page(b, "whatif")
    choose_fs(b, "whatif", fsutil.read_fsid(bdevs[0]))
    canary = Path("/tmp/btrfsx-cockpit-pwned")
    canary.unlink(missing_ok=True)
    for kind, values, option in BAD:
        ran = b.js("return BX.ran.length")
        add_change(b, kind, values)
        plan(b)
        argv = b.js("return BX.ran.slice(arguments[0])", ran)
        assert len(argv) == 1 and argv[0][:5] == ["btrfsx", "--format", "json", "filesystem",
                                                  "plan"], argv
        assert option in argv[0]
        doc = cli(env, *argv[0][3:], check=False)
        shown_msg = b.js("var e = document.querySelector('#bx-whatif-result .bx-error');"
                         "return e && e.textContent")
        if "error" in doc:
            assert shown_msg == doc["error"]["message"], (values, shown_msg, doc["error"])
        else:           # a devid the plan reports as impossible, not refused
            assert doc["possible"] is False and kind == "remove"
        clear_changes(b)
    assert not canary.exists()

def action(br, page: str, click: str, confirm: bool = True) -> int:
    before = settled_count(br, page)
    br.request("click", css=click)
    if confirm:
        br.wait("return document.getElementById('bx-confirm').open")
        br.request("click", css="#bx-confirm-yes")
    return before

def test_hint_refused_online_and_set_offline(b, env, arrays):
    (a, mnt_a), (bdevs, _) = arrays["a"], arrays["b"]
    open_page(b, "actions")
    settled(b, "actions", choose_fs(b, "actions", fsutil.read_fsid(a[0])))
    b.js("document.getElementById('bx-hint-2').value = 'data_only'")
    settled(b, "actions", action(b, "actions", "#bx-hint-set-2"))
    shown_msg = b.js("return document.querySelector('#bx-action-hints .bx-refusal').textContent")
    rc, out, err = fsutil.run_btrfsx("device", "property", "set", a[1], "allocation_hint",
                                     "data_only", fmt="json", check=1, env=btrfsx_env(env))
    assert shown_msg == json.loads(out)["error"]["message"]
    assert "no allocation hint support" in shown_msg
    shoot(b, env, "actions-refused")
    # unmounted: written offline, and filesystem show says so
    settled(b, "actions", choose_fs(b, "actions", fsutil.read_fsid(bdevs[0])))
    b.wait("return document.getElementById('bx-hint-2') !== null")
    b.js("document.getElementById('bx-hint-2').value = 'metadata_preferred'")
    settled(b, "actions", action(b, "actions", "#bx-hint-set-2"))
    assert "-> metadata_preferred" in b.js("return document.getElementById('bx-action-hints')"
                                  ".innerText")
    show = cli(env, "filesystem", "show", *bdevs)
    assert [d["hint"] for d in show["filesystems"][0]["devices"]] == ["data_preferred",
                                                                      "metadata_preferred"]

def test_read_policy_switched_and_persisted(b, env, arrays):
    a, mnt_a = arrays["a"]
    fsid = fsutil.read_fsid(a[0])
    open_page(b, "actions")
    settled(b, "actions", choose_fs(b, "actions", fsid))
    b.wait("return document.getElementById('bx-rp-set') !== null")
    settled(b, "actions", action(b, "actions", "#bx-rp-set"))
    assert "recorded" in b.js("return document.querySelector('#bx-action-read-policy"
                              " .bx-success').textContent")
    records = cli(env, "read-policy", "list")["records"]
    assert [(r["fsid"], r["policy"]) for r in records] == [(fsid, "pid")]
    assert cli(env, "read-policy", "get", str(mnt_a))["persistent"] == "pid"

def run_state(br) -> str:
    return br.js("var r = document.getElementById('bx-bal-run'); return r &&"
                 " r.getAttribute('data-run')")

def start_balance(br):
    settled(br, "actions", action(br, "actions", "#bx-bal-check", confirm=False))
    br.request("click", css="#bx-bal-start")
    br.wait("return document.getElementById('bx-confirm').open")
    br.request("click", css="#bx-confirm-yes")
    br.wait("var r = document.getElementById('bx-bal-run'); return r &&"
            " r.getAttribute('data-run') === 'running'")

def stop_between_chunks(br, button: str) -> None:
    br.wait("var r = document.getElementById('bx-bal-run');"
            "return r.getAttribute('data-pausing') === 'true' ||"
            " r.getAttribute('data-run') !== 'running'")
    if run_state(br) == "running":
        br.request("click", css=button)
    br.wait("return document.getElementById('bx-bal-run').getAttribute('data-run') !== 'running'")

def test_balance_misplaced_refused_then_forced_with_pause_and_cancel(b, env, arrays):
    a, mnt_a = arrays["a"]
    fsid = fsutil.read_fsid(a[0])
    before = cli(env, "filesystem", "misplaced", str(mnt_a), check=4)["misplaced"]
    assert before["forbidden"]["chunks"] + before["off_preference"]["chunks"] >= 2
    open_page(b, "actions")
    settled(b, "actions", choose_fs(b, "actions", fsid))
    # the host kernel ignores hints: the dry run says what a real run is refused for
    settled(b, "actions", action(b, "actions", "#bx-bal-check", confirm=False))
    refused = b.js("return document.querySelector('#bx-bal-out .bx-refusal').textContent")
    dry = cli(env, "balance", "misplaced", "--dry-run", str(mnt_a))["balance"]
    assert refused == dry["refused"] and "ignores allocation hints" in refused
    shoot(b, env, "actions")
    # forced, with a pause between chunks: cancelled after the first chunk
    b.js("document.getElementById('bx-bal-force').checked = true")
    b.request("type", css="#bx-bal-pause", keys=["3s"])
    start_balance(b)
    b.wait("var r = document.getElementById('bx-bal-run');"
           "return r.hasAttribute('data-chunks-done') || r.getAttribute('data-run') !== 'running'")
    b.js("document.getElementById('bx-action-balance').scrollIntoView()")
    shoot(b, env, "actions-progress")
    stop_between_chunks(b, "#bx-run-cancel")
    first = run_state(b)

    after_cancel = cli(env, "filesystem", "misplaced", str(mnt_a), check=False)["misplaced"]
    shown_left = b.js("return document.querySelector('#bx-bal-run .bx-fig[data-path="
                      "\"remaining_chunks\"]').textContent")
    assert int(shown_left) == after_cancel["forbidden"]["chunks"] + \
        after_cancel["off_preference"]["chunks"]
    assert first in ("cancelled", "finished"), first
    if first == "cancelled":
        assert int(shown_left) >= 1
        # again: paused between chunks, then resumed to the end
        start_balance(b)
        stop_between_chunks(b, "#bx-run-pause")
        if run_state(b) == "paused":
            assert b.js("return document.getElementById('bx-run-resume') !== null")
            before_resume = settled_count(b, "actions")
            b.request("click", css="#bx-run-resume")
            settled(b, "actions", before_resume)
            b.request("click", css="#bx-bal-start")
            b.wait("return document.getElementById('bx-confirm').open")
            b.request("click", css="#bx-confirm-yes")
        b.wait("var r = document.getElementById('bx-bal-run'); return r &&"
               " ['finished', 'paused', 'cancelled', 'failed'].indexOf(r.getAttribute('data-run'))"
               " >= 0 && r.getAttribute('data-run') !== 'running'")
        b.wait("var r = document.getElementById('bx-bal-run');"
               "return r.getAttribute('data-run') !== 'running'")
    done = cli(env, "filesystem", "misplaced", str(mnt_a), check=False)["misplaced"]
    assert done["forbidden"]["chunks"] + done["off_preference"]["chunks"] == 0
    assert run_state(b) == "finished"

def maintain_state(br) -> str:
    return br.js("var r = document.getElementById('bx-mnt-run'); return r &&"
                 " r.getAttribute('data-run')")

def maintain_check(br):
    settled(br, "actions", action(br, "actions", "#bx-mnt-check", confirm=False))

def maintain_start(br):
    br.request("click", css="#bx-mnt-start")
    br.wait("return document.getElementById('bx-confirm').open")
    br.request("click", css="#bx-confirm-yes")
    br.wait("var r = document.getElementById('bx-mnt-run'); return r &&"
            " r.getAttribute('data-run') !== null")

def maintain_ended(br) -> str:
    return br.wait("var r = document.getElementById('bx-mnt-run'); var s = r &&"
                   " r.getAttribute('data-run'); return s !== 'running' && s")

def test_maintain_plan_refusals_and_run(b, env, arrays):
    """C's data chunks half used: a target moving data cannot meet shows the
    CLI's reason and device; a smaller one plans chunks, which the page
    shows as the CLI does; read-only, the plan shows what a run is refused
    for, and a run started before the remount is refused with the CLI's
    message; the run pauses between chunks, resumes and meets the target,
    which the CLI then shows."""
    c, mnt_c = arrays["c"]
    fsutil.fill_then_thin(mnt_c, 4 * MiB, "m")
    conf = Path(env["BTRFSX_CONFIG_DIR"]) / "maintain.conf"
    # 2 MiB/s: the run waits between chunks, where Pause stops it
    policy = f"[{mnt_c}]\nbusy-pressure = 0\nbudget = 2\nmetadata-room = "
    conf.write_text(policy + "1G\n")
    try:
        open_page(b, "actions")
        settled(b, "actions", choose_fs(b, "actions", fsutil.read_fsid(c[0])))
        b.wait("return document.getElementById('bx-mnt-check') !== null")
        maintain_check(b)
        cannot = cli(env, "maintain", "plan", str(mnt_c), check=False)["maintain"]
        assert cannot["status"] == "cannot-meet" and cannot["device_needed"] > 0
        assert b.js("return document.getElementById('bx-mnt-cannot').textContent") == \
            cannot["reason"]
        assert check_figures(b, env, "#bx-mnt-plan") >= 12
        conf.write_text(policy + "60M\n")
        maintain_check(b)
        plan = cli(env, "maintain", "plan", str(mnt_c))["maintain"]
        assert plan["status"] == "planned" and len(plan["actions"]) >= 2, plan
        assert check_figures(b, env, "#bx-mnt-plan") >= 12 + 5 * len(plan["actions"])
        b.js("document.getElementById('bx-action-maintain').scrollIntoView()")
        shoot(b, env, "actions-maintain")
        # read-only: the plan says what a run would be refused for; a run
        # confirmed from the plan before the remount gets the CLI's refusal
        fsutil.run(["mount", "-o", "remount,ro", str(mnt_c)])
        try:
            maintain_start(b)
            assert maintain_ended(b) == "failed"
            shown_msg = b.js("return document.querySelector('#bx-mnt-run .bx-refusal')"
                             ".textContent")
            rc, out, err = fsutil.run_btrfsx("maintain", "run", str(mnt_c), fmt="json",
                                             check=1, env=btrfsx_env(env))
            assert shown_msg == json.loads(out)["error"]["message"]
            assert "read-only" in shown_msg
            maintain_check(b)
            refused = b.js("return document.querySelector('#bx-mnt-plan .bx-refusal')"
                           ".textContent")
            assert refused == cli(env, "maintain", "plan", str(mnt_c))["maintain"]["refused"]
            assert not b.js("return document.getElementById('bx-mnt-start')")
        finally:
            fsutil.run(["mount", "-o", "remount,rw", str(mnt_c)])
        # paused while it waits between chunks, then resumed to the target
        maintain_check(b)
        maintain_start(b)
        b.wait("var r = document.getElementById('bx-mnt-run');"
               "return r.getAttribute('data-pausing') === 'true' ||"
               " r.getAttribute('data-run') !== 'running'")
        if maintain_state(b) == "running":
            b.request("click", css="#bx-run-pause")
        first = maintain_ended(b)
        if first == "paused":
            moved = int(b.js("return document.querySelector('#bx-mnt-run .bx-fig[data-path="
                             "\"maintain/chunks_moved\"]').textContent"))
            assert moved >= 1
            before_resume = settled_count(b, "actions")
            b.request("click", css="#bx-run-resume")
            settled(b, "actions", before_resume)
            maintain_start(b)
            first = maintain_ended(b)
        assert first == "target-met", first
        after = cli(env, "maintain", "plan", str(mnt_c))["maintain"]
        assert after["status"] == "nothing-to-do"
        assert after["before"]["metadata_room"] >= after["target"] > \
            plan["before"]["metadata_room"]
        shown_room = b.js("return JSON.parse(document.querySelector('#bx-mnt-run .bx-fig"
                          "[data-path=\"maintain/final/metadata_room\"]')"
                          ".getAttribute('data-value'))")
        assert shown_room == after["before"]["metadata_room"]
    finally:
        conf.unlink()


def test_scrub_page(b, env, arrays):
    (a, mnt_a), (bdevs, _) = arrays["a"], arrays["b"]
    open_page(b, "scrub")
    settled(b, "scrub", choose_fs(b, "scrub", fsutil.read_fsid(bdevs[0])))
    assert check_figures(b, env, "#bx-scrub-last") > 20
    assert b.js("return document.getElementById('bx-scrub-command').textContent") == \
        "btrfsx scrub start --offline -B -d " + " ".join(bdevs)
    shoot(b, env, "scrub")
    settled(b, "scrub", choose_fs(b, "scrub", fsutil.read_fsid(a[0])))
    text = b.js("return document.getElementById('page-scrub').innerText")
    assert f"needs the filesystem unmounted" in text and f"Unmount {mnt_a}" in text

def test_unmounted_while_open_then_gone(b, env, arrays):
    c, mnt_c = arrays["c"]
    fsid = fsutil.read_fsid(c[0])
    open_page(b, "arrays")
    assert "mounted at" in b.js("return document.querySelector(arguments[0]).innerText",
                                card(fsid))
    fsutil.umount(mnt_c)
    before = settled_count(b, "arrays")
    b.request("click", css="#bx-arrays-refresh")
    settled(b, "arrays", before)
    text = b.js("return document.querySelector(arguments[0]).innerText", card(fsid))
    assert "not mounted" in text and not b.js(
        "return document.querySelector(arguments[0] + ' .bx-error')", card(fsid))
    arrays["loops"]["c"].detach()
    for _ in range(2):
        before = settled_count(b, "arrays")
        ran = b.js("return BX.ran.length")
        b.request("click", css="#bx-arrays-refresh")
        settled(b, "arrays", before)
        assert b.js("return document.querySelector(arguments[0]).getAttribute('data-gone')",
                    card(fsid)) == "true"
        later = b.js("return BX.ran.slice(arguments[0])", ran)
        # Another filesystem may have taken the freed loop device meanwhile
        # (a concurrent run's demo did once): commands on it are its own.
        if fsutil.run(["losetup", c[0]], check=False).returncode != 0:
            assert not [argv for argv in later if c[0] in argv], later
    assert not b.js("return document.querySelector(arguments[0] + ' .bx-error')", card(fsid))

def test_phone_width_and_keyboard(b, env, arrays):
    bdevs = arrays["b"][0]
    b.request("size", width=390, height=844)
    try:
        for page in ("arrays", "trend", "whatif", "actions", "scrub"):
            open_page(b, page)
            width = b.js("return [document.documentElement.scrollWidth,"
                         " document.documentElement.clientWidth]")
            wide = b.js("var w = document.documentElement.clientWidth;"
                        "return Array.prototype.filter.call(document.querySelectorAll("
                        "'#page-' + arguments[0] + ' *'), function (e) {"
                        " return e.getBoundingClientRect().right > w + 1 &&"
                        " !e.closest('.bx-scroll'); }).slice(0, 5).map(function (e) {"
                        " return e.tagName + '.' + e.className + ' ' + e.id; });", page)
            assert width[0] <= width[1], (page, width, wide)
            if page == "arrays":
                b.js("document.querySelector(arguments[0]).scrollIntoView()",
                     card(fsutil.read_fsid(arrays["a"][0][0])))
                shoot(b, env, "arrays-phone")
    finally:
        b.request("size", width=1280, height=800)
    # the keyboard alone: Tab reaches the tabs, the arrows move between pages,
    # Enter and Space press buttons, Enter in a field submits the plan
    open_page(b, "arrays")
    b.js("document.getElementById('bx-title').focus()")
    b.request("keys", keys=["@TAB"])
    assert b.js("return document.activeElement.id") == "tab-arrays"
    before = settled_count(b, "trend")
    b.request("keys", keys=["@ARROW_RIGHT"])
    settled(b, "trend", before)
    assert b.js("return document.activeElement.id") == "tab-trend"
    assert b.js("return location.hash") == "#/trend"
    b.request("keys", keys=["@ARROW_RIGHT"])
    settled(b, "whatif", 0)
    choose_fs(b, "whatif", fsutil.read_fsid(bdevs[0]))
    order = []
    for _ in range(12):
        b.request("keys", keys=["@TAB"])
        order.append(b.js("return document.activeElement.id"))
        if order[-1] == "bx-whatif-add-remove":
            break
    assert order[-1] == "bx-whatif-add-remove", order
    assert order.index("bx-whatif-add-add") < order.index("bx-whatif-add-remove")
    b.request("keys", keys=["@SPACE"])
    assert b.js("return document.activeElement.getAttribute('data-field')") == "devid"
    before = settled_count(b, "whatif")
    b.request("keys", keys=["2", "@ENTER"])
    settled(b, "whatif", before)
    src = b.js("return document.getElementById('bx-whatif-result').getAttribute('data-src')")
    assert src.split()[-2:] == ["--remove", "2"]
    # raid1 on two devices keeps both: the CLI refuses, and the page says its words
    doc = cli(env, *src.split(), check=False)
    assert b.js("return document.querySelector('#bx-whatif-result .bx-error').textContent") == \
        doc["error"]["message"]
    clear_changes(b)
    assert not [line for line in b.request("log") if "SEVERE" in line and "btrfsx" in line]
