# SPDX-License-Identifier: GPL-2.0-or-later
"""Query a bash completion script the way bash does: source it, set
COMP_LINE, COMP_POINT, COMP_WORDS and COMP_CWORD for a command line, call the
completion function and read COMPREPLY."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "completions" / "btrfsx"

# bash's default COMP_WORDBREAKS minus the blanks and quotes: it splits
# '/dev/sdb:monly' and '--format=json' into three words each.
WORDBREAKS = "><=;|&(:"


def split_words(line: str) -> list[str]:
    """COMP_WORDS for a line typed up to the cursor at its end."""
    words: list[str] = []
    for token in line.split():
        words += [w for w in re.split(f"([{re.escape(WORDBREAKS)}]+)", token) if w]
    if not line or line[-1].isspace():
        words.append("")
    return words


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def complete(line: str, script: Path = SCRIPT, cwd: Path | None = None) -> list[str]:
    """COMPREPLY of the btrfsx completion for `line` (cursor at the end)."""
    words = split_words(line)
    program = "\n".join([
        f"source {_quote(str(script))} || exit 1",
        f"COMP_LINE={_quote(line)}",
        f"COMP_POINT={len(line)}",
        "COMP_WORDS=(" + " ".join(_quote(w) for w in words) + ")",
        f"COMP_CWORD={len(words) - 1}",
        "_btrfsx",
        "printf '%s\\0' \"${COMPREPLY[@]}\"",
    ])
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd,
                         capture_output=True, text=True, check=True)
    assert out.stderr == "", out.stderr
    return [w for w in out.stdout.split("\0") if w]


def call(function: str, *args: str, script: Path = SCRIPT) -> list[str]:
    """The words a helper function of the script prints."""
    program = f"source {_quote(str(script))} || exit 1\n" + \
        " ".join([function] + [_quote(a) for a in args])
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", program],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()
