#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A headless Chromium driven through Selenium, for the web console's test
(tests/test_cockpit.py).

Debian's selenium is a module of Debian's Python (/usr/bin/python3), which
the suite's interpreter may not be; so this file runs as a process of its
own and takes one JSON request a line on stdin, answering one JSON line on
stdout ({"ok": value} or {"error": message}). Browser() below is the
suite's side. Chromium runs as root here: --no-sandbox, and a fresh profile
with every background connection off (the machine has no network).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

DRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-extensions", "--disable-default-apps"]


# ---------------------------------------------------------------- the driver process

def serve() -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    profile = tempfile.mkdtemp(prefix="btrfsx-chromium-")
    options = webdriver.ChromeOptions()
    for arg in ARGS + [f"--user-data-dir={profile}"]:
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)

    def keys(names):
        return [getattr(Keys, n[1:]) if n.startswith("@") else n for n in names]

    def wait(script, timeout, args):
        end = time.monotonic() + timeout
        while True:
            value = driver.execute_script(script, *args)
            if value:
                return value
            if time.monotonic() > end:
                raise TimeoutError(f"not true within {timeout}s: {script}")
            time.sleep(0.1)

    ops = {
        "open": lambda r: driver.get(r["url"]),
        "size": lambda r: driver.set_window_size(r["width"], r["height"]),
        "viewport": lambda r: driver.execute_script(
            "return [window.innerWidth, window.innerHeight]"),
        "js": lambda r: driver.execute_script(r["script"], *r.get("args", [])),
        "wait": lambda r: wait(r["script"], r.get("timeout", 600), r.get("args", [])),
        "click": lambda r: driver.find_element(By.CSS_SELECTOR, r["css"]).click(),
        "type": lambda r: driver.find_element(By.CSS_SELECTOR, r["css"]).send_keys(
            *keys(r["keys"])),
        "keys": lambda r: driver.switch_to.active_element.send_keys(*keys(r["keys"])),
        "screenshot": lambda r: driver.save_screenshot(r["path"]),
        "log": lambda r: [e["message"] for e in driver.get_log("browser")],
    }
    try:
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "quit":
                break
            try:
                answer = {"ok": ops[request["op"]](request)}
            except Exception as e:  # the suite's side raises it
                answer = {"error": f"{type(e).__name__}: {e}"}
            print(json.dumps(answer, default=str), flush=True)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# ---------------------------------------------------------------- the suite's side

class BrowserError(AssertionError):
    pass


class Browser:
    """The driver process; each method is one request. close() ends Chromium,
    chromedriver and the process."""

    def __init__(self):
        self.proc = subprocess.Popen(["/usr/bin/python3", os.path.abspath(__file__)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, start_new_session=True)

    def request(self, op: str, **kw):
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise BrowserError(f"the browser driver ended (exit {self.proc.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise BrowserError(f"{op} {kw}: {answer['error']}")
        return answer["ok"]

    def js(self, script: str, *args):
        return self.request("js", script=script, args=list(args))

    def wait(self, script: str, *args, timeout: float = 600):
        return self.request("wait", script=script, args=list(args), timeout=timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=60)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()


def available() -> str | None:
    """Why the browser cannot run here, or None."""
    for path in (DRIVER, CHROMIUM, "/usr/bin/python3"):
        if not os.path.exists(path):
            return f"{path} is missing (scripts/install-deps.sh installs chromium, chromium-driver)"
    p = subprocess.run(["/usr/bin/python3", "-c", "import selenium"], capture_output=True)
    if p.returncode:
        return "Debian's python3-selenium is not installed (scripts/install-deps.sh)"
    return None


if __name__ == "__main__":
    serve()
