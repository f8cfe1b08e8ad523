"""The README's commands work as written on a machine without DCGM."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import http_get, samples, stop_process, wait_for

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


def port_in_use(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_remote_hostengine_demo_runs_as_written(tmp_path):
    [block] = shell_blocks("Remote hostengines and failures")
    if port_in_use(5555) or port_in_use(9400):
        pytest.skip("the demo's ports 5555 and 9400 are taken on this machine")
    # the block as written, with the environment's `python` and console scripts first on PATH, as after
    # activating the venv the quick start makes
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("DCGM_COLLECTOR_LIBDCGM", None)
    demo = subprocess.Popen(["bash", "-c", block], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def four_gpus() -> bool:
            status, body = http_get("http://127.0.0.1:9400/metrics")
            if status != 200:   # 503 "starting: no sampler yet" until the hostengine's GPUs are sampled
                return False
            gpus = {labels.get("gpu") for name, labels, _ in samples(body.decode()) if name == "DCGM_FI_DEV_GPU_TEMP"}
            return gpus == {"0", "1", "2", "3"}

        wait_for(lambda: port_in_use(9400) and four_gpus(), timeout=30, what="the demo's 4 GPUs on :9400/metrics")
    finally:
        os.killpg(demo.pid, signal.SIGTERM)   # the collector and the backgrounded hostengine
        stop_process(demo)
