# SPDX-License-Identifier: GPL-2.0-or-later
"""The Prometheus side of btrfsx monitor, with Debian's prometheus and
prometheus-node-exporter (scripts/install-deps.sh installs them):

- the shipped rules pass `promtool check rules` and their unit tests
  (`promtool test rules prometheus/btrfsx.rules.test.yml`);
- every metric the rules, the Grafana dashboard and the man page name is
  one `btrfsx monitor metrics` exports, and the man page lists them all;
- end to end on 127.0.0.1: node_exporter's textfile collector reads
  btrfsx.prom, prometheus scrapes it every second with the shipped rules;
  the HTTP API shows the btrfsx series, an alert pending on a leaking
  filesystem (firing with the rules' `for` taken out), none on a filesystem
  learning after a burst, and answers every dashboard query. Both daemons
  run on ports of their own with a data directory in the test's, bounded in
  time, and are stopped at the end.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from helpers import fsutil
from test_monitor import MiB, write_day

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "prometheus" / "btrfsx.rules.yml"
RULE_TESTS = REPO / "prometheus" / "btrfsx.rules.test.yml"
DASHBOARD = REPO / "examples" / "grafana-btrfsx-monitor.json"
MANPAGE = REPO / "Documentation" / "btrfsx-monitor.adoc"
NAME = re.compile(r"\b(btrfsx_[a-z0-9_]+|node_[a-z0-9_]+)")
DEADLINE = 60           # seconds any wait for the daemons may take


def tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (scripts/install-deps.sh installs Debian's "
                    "prometheus and prometheus-node-exporter)")
    return path


# --------------------------------------------------------------------------- the rules

def test_rules_check_and_unit_tests():
    promtool = tool("promtool")
    p = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert p.returncode == 0 and "SUCCESS: 8 rules found" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([promtool, "test", "rules", RULE_TESTS.name], cwd=RULE_TESTS.parent,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


def rule_exprs() -> list[str]:
    text = RULES.read_text()
    exprs = re.findall(r"^\s+expr: (?!>-)(.+)$", text, re.M)
    for block in re.findall(r"^\s+expr: >-\n((?:\s{10,}.+\n)+)", text, re.M):
        exprs.append(" ".join(line.strip() for line in block.splitlines()))
    return exprs


def dashboard_queries() -> list[str]:
    found = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("expr", "definition") and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for x in o:
                walk(x)
    walk(json.loads(DASHBOARD.read_text()))
    return found


def manpage_metrics() -> set[str]:
    """The names btrfsx-monitor(8)'s metrics section defines, one '*name*::' term each."""
    section = MANPAGE.read_text().split("=== metrics", 1)[1].split("\n== ", 1)[0]
    return set(re.findall(r"^\*(btrfsx_\w+)\*::", section, re.M))


# --------------------------------------------------------------------------- a filesystem in every state

@pytest.fixture(scope="module")
def full_history(tmp_path_factory, run_btrfsx):
    """Two filesystems recorded up to the real now (so Prometheus takes the
    samples as fresh), shared by the module's tests: 'leak' has 26 hours of
    data growing 20 MiB every 2 hours and an offline scrub's status; 'burst'
    four samples 5 seconds apart while 1500 small files are written, just
    now. Yields the state directory; the filesystems stay mounted."""
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("prometheus")
    state = tmp / "state"
    state.mkdir()
    loops = fsutil.LoopDevices(fsutil.make_images(tmp / "images", ["512M", "512M"]))
    loops.attach()
    try:
        fsutil.mkfs(loops[0], data="single", metadata="single", label="leak")
        fsutil.mkfs(loops[1], data="single", metadata="single", label="burst")
        run_btrfsx("scrub", "start", "--offline", "-B", "-r", loops[0],
                   env={"BTRFSX_STATE_DIR": str(state)})
        now = int(time.time())
        with fsutil.mounted(loops[0]) as leak, fsutil.mounted(loops[1]) as burst:
            for h in range(0, 28, 2):
                with open(leak / f"leak{h}", "wb") as f:
                    f.write(os.urandom(20 * MiB))
                at(run_btrfsx, state, leak, now - (26 - h) * 3600)
            small = burst / "small"
            small.mkdir()
            n = 0
            for i in range(4):
                if i:
                    n = write_day(small, n, 500)
                at(run_btrfsx, state, burst, now - 15 + 5 * i)
            yield state
    finally:
        loops.detach()
        shutil.rmtree(tmp / "images")


def at(run_btrfsx, state, mnt, t: int):
    fsutil.run(["btrfs", "filesystem", "sync", str(mnt)])
    run_btrfsx("monitor", "record", str(mnt),
               env={"BTRFSX_STATE_DIR": str(state), "BTRFSX_MONITOR_NOW": str(t)})


def exported(run_btrfsx, state) -> dict:
    rc, out, err = run_btrfsx("monitor", "metrics", fmt="json",
                              env={"BTRFSX_STATE_DIR": str(state)})
    return {m["name"]: m for m in json.loads(out)["metrics"]}


@pytest.mark.root
def test_names_of_rules_dashboard_and_manpage_exist(full_history, run_btrfsx):
    """With every kind of fact present (a projection, a learning filesystem,
    a scrub, placement), the names the rules, the dashboard and the man page
    use are exactly what metrics exports (node_exporter's own names apart)."""
    names = set(exported(run_btrfsx, full_history))
    in_rules = {n for e in rule_exprs() for n in NAME.findall(e)}
    in_dashboard = {n for q in dashboard_queries() for n in NAME.findall(q)}
    assert in_rules - names == {"node_textfile_mtime_seconds"}, in_rules - names
    assert in_dashboard and in_dashboard <= names, in_dashboard - names
    assert manpage_metrics() == names, (manpage_metrics() ^ names)


# --------------------------------------------------------------------------- end to end

def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def wait_for(what: str, probe, deadline: float):
    """probe() until it returns something true; fails at the deadline."""
    last = None
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            last = probe()
            if last:
                return last
        time.sleep(0.25)
    pytest.fail(f"{what}: not seen within {DEADLINE} s (last: {last})")


class Daemons:
    """node_exporter and prometheus on free 127.0.0.1 ports; stopped at exit."""

    def __init__(self, tmp: Path, textfile: Path, rule_files: list[Path]):
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.node_port, self.prom_port = free_port(), free_port()
        self.start(tmp / "node_exporter.log", [
            tool("prometheus-node-exporter"),
            f"--web.listen-address=127.0.0.1:{self.node_port}",
            "--collector.disable-defaults", "--collector.textfile",
            f"--collector.textfile.directory={textfile}"])
        config = tmp / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "rule_files:\n" + "".join(f"  - {r}\n" for r in rule_files) +
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{self.node_port}']\n")
        self.start(tmp / "prometheus.log", [
            tool("prometheus"), f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.prom_port}"])

    def start(self, log: Path, argv: list[str]):
        self.logs.append(log)
        with open(log, "w") as out:
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL))

    def api(self, path: str, **params) -> dict:
        query = urllib.parse.urlencode(params)
        doc = get(f"http://127.0.0.1:{self.prom_port}/api/v1/{path}" + (f"?{query}" if query
                                                                          else ""))
        assert doc["status"] == "success", doc
        return doc["data"]

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def log_tail(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()[-2000:]}" for log in self.logs
                         if log.exists())


def alerts_of(daemons: Daemons, fsid: str) -> dict[str, str]:
    return {a["labels"]["alertname"] + ("/now" if a["labels"].get("rules") == "now" else ""):
            a["state"] for a in daemons.api("alerts")["alerts"]
            if a["labels"].get("fsid") == fsid}


@pytest.mark.root
def test_end_to_end_with_node_exporter_and_prometheus(full_history, run_btrfsx, btrfsx_json,
                                                      tmp_path):
    state = full_history
    textfile = tmp_path / "node-exporter"
    textfile.mkdir()
    run_btrfsx("monitor", "metrics", "--textfile", str(textfile),
               env={"BTRFSX_STATE_DIR": str(state)})
    report = {f["label"]: f for f in btrfsx_json("monitor", "report",
                                                 env={"BTRFSX_STATE_DIR": str(state)})
              ["filesystems"]}
    leak, burst = report["leak"], report["burst"]
    assert not leak["learning"] and leak["data_days_left_high"] < 14, leak
    assert burst["learning"] and burst["burst"], burst
    # the shipped rules as they are, and a copy that fires at once
    now_rules = tmp_path / "btrfsx-now.rules.yml"
    now_rules.write_text(re.sub(r"(?m)^(\s+)for: \S+$", r"\1for: 0s",
                                RULES.read_text().replace("- name: btrfsx", "- name: btrfsx-now")
                                .replace("    labels:\n", "    labels:\n          rules: now\n")))
    daemons = Daemons(tmp_path, textfile, [RULES, now_rules])
    deadline = time.monotonic() + DEADLINE
    try:
        up = wait_for("the scrape target up",
                      lambda: [t for t in daemons.api("targets")["activeTargets"]
                               if t["health"] == "up"], deadline)
        assert up[0]["scrapeUrl"] == f"http://127.0.0.1:{daemons.node_port}/metrics"
        series = wait_for("btrfsx series in Prometheus",
                          lambda: daemons.api("query", query="btrfsx_sample_timestamp_seconds")
                          ["result"], deadline)
        assert {s["metric"]["label"] for s in series} == {"leak", "burst"}
        names = set(daemons.api("label/__name__/values"))
        assert {"btrfsx_data_days_left_upper", "btrfsx_trend_learning",
                "btrfsx_scrub_last_errors", "btrfsx_misplaced_chunks",
                "node_textfile_mtime_seconds"} <= names
        learning = {s["metric"]["label"]: s["value"][1] for s in
                    daemons.api("query", query="btrfsx_trend_learning")["result"]}
        assert learning == {"leak": "0", "burst": "1"}
        # the leak: pending with the shipped rule (for: 30m), firing without its wait
        states = wait_for("the leak's alerts", lambda: (
            lambda a: a if {"BtrfsxDataFullSoon", "BtrfsxDataFullSoon/now"} <= set(a) and
            a["BtrfsxDataFullSoon/now"] == "firing" else None)(alerts_of(daemons, leak["fsid"])),
            deadline)
        assert states["BtrfsxDataFullSoon"] == "pending", states
        # the burst while learning: nothing, in either set of rules; nothing stale either
        time.sleep(2)           # two more evaluations
        assert alerts_of(daemons, burst["fsid"]) == {}
        assert not [a for a in daemons.api("alerts")["alerts"]
                    if a["labels"]["alertname"] == "BtrfsxNoRecentSample"]
        # every dashboard query evaluates, and those of present facts have data
        for q in dashboard_queries():
            q = q.replace("$fsid", ".*")
            if q.startswith("label_values("):
                metric = re.match(r"label_values\((\w+),", q).group(1)
                assert metric in names, q
                continue
            result = daemons.api("query", query=q)["result"]
            if "days_left" not in q and "growth" not in q:
                assert result, q
    except BaseException:
        print(daemons.log_tail())
        raise
    finally:
        daemons.stop()
    assert all(p.returncode is not None for p in daemons.procs)
