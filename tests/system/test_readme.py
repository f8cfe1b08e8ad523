"""The README's test commands are the ones CI runs (tests/system/test_docs_blocks.py runs its other blocks)."""

from __future__ import annotations

import ctypes
import re
import shlex
import socket
import subprocess
from pathlib import Path

from support import COLLECTOR, command, last_line
from test_cli import clean_env

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
        for one in re.split(r"&&|;", line):
            if not re.match(r"\s*\S*pytest\s", one):
                continue
            words = shlex.split(one)
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


# -- the troubleshooting table's error lines are the ones the collector prints


def error_rows() -> list[str]:
    """The first column of the README's table of common errors, without its backticks."""
    text = (ROOT / "README.md").read_text()
    start = text.index("**Common errors**")
    table = text[start:text.index("\n\n", text.index("| --- |", start))]
    return [re.match(r"\| `(.*?)` \|", row).group(1) for row in table.splitlines() if row.startswith("| `")]


def row_pattern(row: str, **placeholders: str) -> re.Pattern[str]:
    """The row as a pattern: ``...`` stands for any text, each placeholder word for its value here."""
    pattern = re.escape(row).replace(re.escape("..."), ".*")
    for word, value in placeholders.items():
        pattern = pattern.replace(word, re.escape(value))
    return re.compile(pattern)


def nvml_loads() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def dcgm_loads() -> bool:
    try:
        ctypes.CDLL("libdcgm.so.4")
    except OSError:
        return False
    return True


def the_error(tmp_path: Path, *args: str, **env: str) -> str:
    run = subprocess.run(command(COLLECTOR, *args), cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env=clean_env(**env))
    assert run.returncode == 1, run.stderr
    return last_line(run.stderr)


def test_each_common_error_of_the_readme_is_the_line_the_collector_prints(tmp_path):
    rows = error_rows()
    assert len(rows) == 6
    seen = 0
    env = {"LD_LIBRARY_PATH": ""}
    for row in rows:
        if row.startswith("dcgm-collector: error: libdcgm.so.4 was not found"):
            if dcgm_loads() or nvml_loads():
                continue   # this machine has a library the collector would choose
            line = the_error(tmp_path, "-a", "127.0.0.1:0", **env)
            pattern = row_pattern(row)
        elif row.startswith("dcgm-collector: error: --nvml:"):
            if nvml_loads():
                continue
            line = the_error(tmp_path, "--nvml", "-a", "127.0.0.1:0", **env)
            pattern = row_pattern(row)
        elif "cannot listen" in row:
            # the README shows the default address (:9400); the test holds a loopback port in its place
            with socket.socket() as taken:
                taken.bind(("127.0.0.1", 0))
                taken.listen()
                address = f"127.0.0.1:{taken.getsockname()[1]}"
                line = the_error(tmp_path, "--sim", "1", "-a", address)
            pattern = row_pattern(row, **{":9400": address})
        elif "cannot read counters file" in row:
            missing = str(tmp_path / "missing.csv")
            line = the_error(tmp_path, "--sim", "1", "-f", missing)
            pattern = row_pattern(row, FILE=missing)
        elif row.startswith("dcgm-collector: error: FILE:LINE:"):
            bad = tmp_path / "bad.csv"
            bad.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\nDCGM_FI_NO_SUCH_FIELD, gauge, nothing\n")
            line = the_error(tmp_path, "--sim", "1", "-f", str(bad))
            pattern = row_pattern(row, FILE=str(bad), LINE="2")
        elif "--recorder-dir needs pyarrow" in row:
            hidden = tmp_path / "no-pyarrow"
            (hidden / "pyarrow").mkdir(parents=True, exist_ok=True)
            (hidden / "pyarrow" / "__init__.py").write_text("raise ImportError(\"No module named 'pyarrow'\")\n")
            line = the_error(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "--recorder-dir", str(tmp_path / "r"),
                             PYTHONPATH=str(hidden))
            pattern = row_pattern(row)
        else:
            raise AssertionError(f"the README's error row {row!r} has no case here")
        assert pattern.fullmatch(line), (row, line)
        seen += 1
    assert seen >= 4   # the rows that need no library missing from this machine
