# SPDX-License-Identifier: GPL-2.0-or-later
"""The README is the front door: its two set-up commands are the ones CI
runs, and every link in it and in the guides leads somewhere."""

import re
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PAGES = [TOP / "README.md"] + sorted((TOP / "Documentation").rglob("*.md"))


def test_the_readme_names_the_two_commands_and_ci_runs_the_tests():
    readme = (TOP / "README.md").read_text()
    assert "\n    bash scripts/demo.sh\n" in readme
    assert "\n    bash scripts/test.sh\n" in readme
    assert "bash scripts/test.sh" in (TOP / ".ci" / "run").read_text()


def test_every_guide_is_linked_from_the_readme():
    readme = (TOP / "README.md").read_text()
    for guide in sorted((TOP / "Documentation" / "guides").glob("*.md")):
        assert f"(Documentation/guides/{guide.name})" in readme, guide.name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(TOP)))
def test_relative_links_lead_to_files(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.relative_to(TOP)}: {target}"
