"""SIGTERM ends the collector with status 0 within 2 s, whatever a library load or a late signal does.

The collector runs as a process (``python -m dcgm_collector``).  A library
whose load blocks is a real shared object, compiled here, whose constructor
waits: the dynamic linker runs it inside dlopen, as it would sit on a file
of a hung NFS or FUSE mount.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import COLLECTOR, command, free_port, http_get, launch, stop_process
from test_cli import clean_env, collector

CC = shutil.which("cc") or shutil.which("gcc")

HANGING_CONSTRUCTOR = """\
#include <unistd.h>
__attribute__((constructor)) static void wait_like_a_hung_mount(void) { sleep(120); }
int nothing_here(void) { return 0; }
"""


@pytest.fixture(scope="module")
def hanging_library(tmp_path_factory) -> Path:
    if CC is None:
        pytest.skip("needs a C compiler to build the library whose load blocks")
    folder = tmp_path_factory.mktemp("hanging")
    source = folder / "hang.c"
    source.write_text(HANGING_CONSTRUCTOR)
    library = folder / "libhang.so"
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=60)
    return library


def _library_cases(path: Path) -> dict[str, tuple[list[str], dict[str, str], str]]:
    """How each library path reaches the collector: (flags, environment, the name the error gives it)."""
    return {
        "--dcgm-lib": (["--dcgm-lib", str(path)], {}, f"{path} (from --dcgm-lib)"),
        "DCGM_COLLECTOR_LIBDCGM": ([], {"DCGM_COLLECTOR_LIBDCGM": str(path)}, f"{path} (from DCGM_COLLECTOR_LIBDCGM)"),
        "DCGM_ENGINE_NVML_LIB": (["--nvml"], {"DCGM_ENGINE_NVML_LIB": str(path)}, f"DCGM_ENGINE_NVML_LIB={path}"),
    }


@pytest.mark.parametrize("given_by", ["--dcgm-lib", "DCGM_COLLECTOR_LIBDCGM", "DCGM_ENGINE_NVML_LIB"])
def test_a_library_path_that_is_a_fifo_is_refused_at_once_in_one_line(tmp_path, given_by):
    fifo = tmp_path / "libdcgm.so.4"
    os.mkfifo(fifo)
    flags, env, named = _library_cases(fifo)[given_by]
    started = time.monotonic()
    try:
        result = subprocess.run([*command(COLLECTOR), *flags, "-a", "127.0.0.1:0"], cwd=tmp_path, capture_output=True,
                                text=True, env=clean_env(**env), timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the collector still waits on the FIFO given by {given_by} after 20 s")
    seconds = time.monotonic() - started
    print(f"\n{given_by} on a FIFO: exit {result.returncode} after {seconds:.2f} s")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("dcgm-collector: error: ")
    assert named in lines[0] and "not a regular file (a FIFO)" in lines[0], lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("given_by", ["--dcgm-lib", "DCGM_ENGINE_NVML_LIB"])
def test_sigterm_while_a_library_load_blocks_exits_0_within_2_s(tmp_path, hanging_library, given_by):
    flags, env, _ = _library_cases(hanging_library)[given_by]
    port = free_port()
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, *flags, "-a", f"127.0.0.1:{port}", cwd=tmp_path, env=clean_env(**env), stdout=out,
                      stderr=subprocess.STDOUT)
    try:
        # the listener comes before the library: once it answers "starting", the load is under way
        deadline = time.monotonic() + 20
        while True:
            try:
                status, body = http_get(f"http://127.0.0.1:{port}/health", timeout=1)
                if status == 503 and b"starting" in body:
                    break
            except OSError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        time.sleep(0.5)   # well inside the load's constructor now
        assert http_get(f"http://127.0.0.1:{port}/metrics", timeout=2)[0] == 503   # a scrape meanwhile is answered
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"SIGTERM during a blocked load ({given_by}): still running after 30 s\n{log.read_text()}")
        seconds = time.monotonic() - started
        print(f"\nSIGTERM -> exit during a blocked library load ({given_by}): {seconds:.2f} s")
        text = log.read_text()
        assert code == 0, text
        assert seconds < 2.0, text
        assert "SIGTERM: shutting down" in text
        assert "Traceback" not in text
    finally:
        stop_process(proc, signal.SIGKILL)


def test_signals_racing_the_stop_leave_the_exit_status_0(tmp_path):
    """SIGHUP and SIGUSR2 every 10 ms after SIGTERM (a reload racing a stop) change neither the status nor the time."""
    for attempt in range(3):   # the window they race for is the interpreter's last moments: try it more than once
        with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-c", "200") as c:
            proc = c.proc
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            late = (signal.SIGHUP, signal.SIGUSR2)
            sent = 0
            while proc.poll() is None and time.monotonic() - started < 5:
                try:
                    proc.send_signal(late[sent % 2])
                except ProcessLookupError:
                    break
                sent += 1
                time.sleep(0.01)
            code = proc.wait(10)
            seconds = time.monotonic() - started
            print(f"\nattempt {attempt}: {sent} late signals, exit {code} after {seconds:.2f} s")
            assert code == 0, f"exit status {code} after {sent} late signals\n{c.log()}"
            assert seconds < 2.0, c.log()
            assert "Traceback" not in c.log()
