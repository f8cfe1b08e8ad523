"""The README's test commands are the ones CI runs (tests/system/test_docs_blocks.py runs its other blocks)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def shell_blocks(section: str) -> list[str]:
    """The ```sh blocks of one README section (## heading)."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```sh\n(.*?)```", text[start:end if end > 0 else None], re.S)


def pytest_runs(lines: list[str]) -> list[list[str]]:
    """What each pytest command in ``lines`` selects: its paths and --ignore options, without output flags."""
    runs = []
    for line in lines:
        for command in re.split(r"&&|;", line):
            if not re.match(r"\s*\S*pytest\s", command):
                continue
            words = shlex.split(command)
            picked, skip = [], False
            for word in words[1:]:
                if skip:
                    skip = False
                elif word == "-p":
                    skip = True   # a plugin option's value
                elif not word.startswith("-") or word.startswith("--ignore"):
                    picked.append(word)
            runs.append(picked)
    return runs


def test_ci_runs_the_test_commands_the_readme_gives_in_the_same_order():
    readme = pytest_runs("".join(shell_blocks("Quick start")).splitlines())
    ci = pytest_runs((ROOT / ".ci" / "run").read_text().splitlines())
    assert readme == [["tests/unit"], ["tests", "--ignore=tests/unit"]]   # the unit tests first
    assert ci == readme
