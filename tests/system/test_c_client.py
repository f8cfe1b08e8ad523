"""A plain C DCGM client runs unchanged against the installed simulator.

native/tests/client_example.c is written the way third-party clients are:
it dlopens libdcgm.so.4 from a directory, resolves entry points by name and
checks every answer against DCGM's documented behaviour (it exits non-zero
naming the first call that answered wrongly).  Here it is compiled with the
system C compiler and pointed at the directory the package installs the
simulator into, so the test covers the library users actually get.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SOURCE = ROOT / "native" / "tests" / "client_example.c"

# Sampling at 100 ms plus the client's own 1.5 s of waiting; generous for
# loaded CI machines.
RUN_TIMEOUT_S = 60


def _compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.skip("no C compiler on PATH (set CC) to build native/tests/client_example.c")


@pytest.fixture(scope="module")
def client_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = tmp_path_factory.mktemp("c_client") / "client_example"
    build = subprocess.run(
        [_compiler(), "-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Wno-unused-parameter",
         "-o", str(binary), str(CLIENT_SOURCE), "-ldl"],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, f"compiling {CLIENT_SOURCE} failed:\n{build.stderr}"
    return binary


@pytest.fixture(scope="module")
def sim_library_dir() -> Path:
    from dcgm_collector.engine import library_dir

    directory = Path(library_dir())
    assert (directory / "libdcgm.so.4").is_file(), f"no libdcgm.so.4 in {directory}"
    return directory


def _run_client(binary: Path, library_dir: Path, scenario: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DCGM_SIM_SCENARIO", None)
    if scenario is not None:
        env["DCGM_SIM_SCENARIO"] = scenario
    return subprocess.run(
        [str(binary), str(library_dir)],
        capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S,
    )


def _gpus_described(stdout: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"^gpu (\d+): name=", stdout, re.M)]


@pytest.mark.parametrize("scenario, gpu_count", [(None, 8), ("3", 3)], ids=["default-node", "scenario-3"])
def test_c_client_runs_unchanged(client_binary: Path, sim_library_dir: Path,
                                 scenario: str | None, gpu_count: int) -> None:
    result = _run_client(client_binary, sim_library_dir, scenario)
    report = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"

    assert result.returncode == 0, report
    assert f"found {gpu_count} GPUs" in result.stdout, report
    assert _gpus_described(result.stdout) == list(range(gpu_count)), report
    assert len(re.findall(r"^gpu \d+ latest:", result.stdout, re.M)) == gpu_count, report
    assert "client_example: OK" in result.stdout, report
    assert "FAIL" not in result.stderr, report
