"""The dcgm-collector command: flags, env vars, errors, signals.

The collector itself runs as a subprocess (``python -m dcgm_collector`` with
a temporary directory as cwd, so the installed package with its compiled
extension is imported); parsing and small pieces are checked in-process.
Few subprocesses, short intervals: each run checks several flags at once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import COLLECTOR, SERVING, command, http_get, last_line, launch, samples, stop_process, wait_for

from dcgm_collector import __version__, app, cli, engine
from dcgm_collector.catalog.counters import default_counters_path
from dcgm_collector.config import OPTIONS, UNSUPPORTED, parse_config

# Every variable the CLI reads, so the caller's environment cannot leak into a test.
CLI_ENV = [o.env for o in OPTIONS if o.env] + [u.env for u in UNSUPPORTED if u.env] + [
    "NODE_NAME", "DCGM_SIM_SCENARIO"]

CUSTOM_COUNTERS = """\
# test counters: two values, a label, the exporter counters
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W)., min
DCGM_FI_DRIVER_VERSION, label, Driver version.
DCGM_EXP_XID_ERRORS_COUNT, gauge, Count of XID errors within the window.
DCGM_EXP_CLOCK_EVENTS_COUNT, gauge, Count of clock events within the window.
"""


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLI_ENV}
    env.update(extra)
    return env


def help_line(text: str, family: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"# HELP {family} "))


class Running:
    def __init__(self, proc: subprocess.Popen, log: Path) -> None:
        self.proc = proc
        self.log_path = log
        self.port = 0

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, pattern: str, timeout: float = 10.0, start: int = 0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.compile(pattern).search(self.log(), start)
            if match:
                return match
            if self.proc.poll() is not None:
                pytest.fail(f"collector exited ({self.proc.returncode}) before {pattern!r}:\n{self.log()}")
            time.sleep(0.05)
        pytest.fail(f"no {pattern!r} within {timeout} s:\n{self.log()}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str = "/metrics") -> tuple[int, str]:
        status, body = http_get(self.url(path), timeout=5)
        return status, body.decode()

    def metrics(self) -> str:
        status, body = self.get()
        assert status == 200, body
        return body

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        self.proc.send_signal(signum)
        return self.proc.wait(timeout)


@contextmanager
def collector(tmp_path: Path, *args: str, env: dict[str, str] | None = None, start_timeout: float = 10.0,
              clean_exit: bool = False):
    """The collector as a process until the block ends; ``clean_exit``: its stop must exit 0."""
    log = tmp_path / f"collector-{time.monotonic_ns()}.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, *args, cwd=tmp_path, env=env if env is not None else clean_env(), stdout=out,
                      stderr=subprocess.STDOUT)
    running = Running(proc, log)
    try:
        # logged once start-up is done
        running.port = int(running.wait_log(SERVING.pattern, timeout=start_timeout)[1])
        yield running
    finally:
        code = stop_process(proc)
        if clean_exit:
            assert code == 0, running.log()


def run_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 30):
    return subprocess.run(command(COLLECTOR, *args), cwd=tmp_path, capture_output=True,
                          text=True, env=env if env is not None else clean_env(), timeout=timeout)


def sample_value(text: str, name: str) -> float:
    return next(value for n, _, value in samples(text) if n == name)


def metrics_after_ticks(c: Running, ticks: int, timeout: float = 10.0) -> str:
    """The first /metrics body that reports at least ``ticks`` sampler ticks."""
    deadline = time.monotonic() + timeout
    while True:
        text = c.metrics()
        if sample_value(text, "dcgm_collector_ticks_total") >= ticks:
            return text
        if time.monotonic() > deadline:
            pytest.fail(f"fewer than {ticks} ticks after {timeout} s:\n{c.log()}")
        time.sleep(0.05)


# ---- the collector as a subprocess ------------------------------------------------------------

def test_flags_change_what_is_served(tmp_path):
    counters = tmp_path / "custom.csv"
    counters.write_text(CUSTOM_COUNTERS)
    with collector(tmp_path, "--sim", "4", "-a", "127.0.0.1:0", "-c", "200", "-n", "-d", "g:0,2",
                   "-f", str(counters), "--aggregations", "max", "--window", "30", "-x", "1234",
                   "--clock-events-count-window-size", "4321", "-rbmn", "--retention", "60",
                   "--watch-interval", "100") as c:
        started = time.monotonic()
        text = metrics_after_ticks(c, 6)
        elapsed = time.monotonic() - started
    parsed = samples(text)
    names = {name for name, _, _ in parsed}
    gpu_series = [(name, labels) for name, labels, _ in parsed if "gpu" in labels]
    # -c 200: six ticks come well within the time the 1000 ms default needs for three
    assert elapsed < 2.5
    # -d g:0,2 (and --sim 4 has 4 GPUs to choose from)
    assert {labels["gpu"] for _, labels in gpu_series} == {"0", "2"}
    # -n: no hostname label anywhere
    assert all("hostname" not in labels for _, labels in gpu_series)
    # -rbmn
    assert {labels["modelName"] for name, labels in gpu_series if "modelName" in labels} == {"NVIDIA-H100-80GB-HBM3"}
    # -f: only the custom file's rows (the default file's SM clock is absent)
    assert "DCGM_FI_DEV_GPU_TEMP" in names and "DCGM_FI_DEV_SM_CLOCK" not in names
    # --aggregations max adds _max everywhere; the file's 4th column adds POWER_USAGE_min
    assert {"DCGM_FI_DEV_GPU_TEMP_max", "DCGM_FI_DEV_POWER_USAGE_max", "DCGM_FI_DEV_POWER_USAGE_min"} <= names
    assert "DCGM_FI_DEV_GPU_TEMP_min" not in names and "DCGM_FI_DEV_GPU_TEMP_avg" not in names
    # --window 30: the window families say so
    assert "30 s" in help_line(text, "DCGM_FI_DEV_GPU_TEMP_max")
    # -x and --clock-events-count-window-size: the windows of the exporter counters
    xid = [labels for name, labels, _ in parsed if name == "DCGM_EXP_XID_ERRORS_COUNT"]
    clocks = [labels for name, labels, _ in parsed if name == "DCGM_EXP_CLOCK_EVENTS_COUNT"]
    assert xid and {labels["window_size_in_ms"] for labels in xid} == {"1234"}
    assert clocks and {labels["window_size_in_ms"] for labels in clocks} == {"4321"}


def test_env_vars_change_what_is_served_and_flags_beat_them(tmp_path):
    counters = tmp_path / "custom.csv"
    counters.write_text(CUSTOM_COUNTERS)
    env = clean_env(
        DCGM_COLLECTOR_SIM="3", DCGM_EXPORTER_LISTEN="127.0.0.1:0", DCGM_EXPORTER_INTERVAL="200",
        DCGM_EXPORTER_COLLECTORS=str(counters), DCGM_EXPORTER_DEVICES_STR="g:0",
        DCGM_EXPORTER_NO_HOSTNAME="True", DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME="1",
        DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE="999", DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE="888",
        DCGM_COLLECTOR_WINDOW="20", DCGM_COLLECTOR_AGGREGATIONS="avg", DCGM_COLLECTOR_RETENTION="40",
        DCGM_COLLECTOR_WATCH_INTERVAL="100", DCGM_EXPORTER_LOG_FORMAT="json", DCGM_EXPORTER_KUBERNETES="true",
        NODE_NAME="ignored-because-of-no-hostname",
    )
    with collector(tmp_path, "-d", "g:1,2", env=env) as c:
        text = metrics_after_ticks(c, 4)
        rc = c.stop(signal.SIGINT)
        log = c.log()
    assert rc == 0
    parsed = samples(text)
    names = {name for name, _, _ in parsed}
    gpu_series = [labels for _, labels, _ in parsed if "gpu" in labels]
    assert {labels["gpu"] for labels in gpu_series} == {"1", "2"}          # -d beats DCGM_EXPORTER_DEVICES_STR
    assert all("hostname" not in labels for labels in gpu_series)
    assert {labels["modelName"] for labels in gpu_series if "modelName" in labels} == {"NVIDIA-H100-80GB-HBM3"}
    assert "DCGM_FI_DEV_SM_CLOCK" not in names and "DCGM_FI_DEV_GPU_TEMP_avg" in names
    assert "20 s" in help_line(text, "DCGM_FI_DEV_GPU_TEMP_avg")
    assert {labels["window_size_in_ms"] for name, labels, _ in parsed if name == "DCGM_EXP_XID_ERRORS_COUNT"} == {"999"}
    assert {labels["window_size_in_ms"] for name, labels, _ in parsed
            if name == "DCGM_EXP_CLOCK_EVENTS_COUNT"} == {"888"}
    # json log lines, DCGM_EXPORTER_KUBERNETES turning pod attribution on, a clean SIGINT
    lines = [line for line in log.splitlines() if line.strip()]
    assert all(line.startswith("{") for line in lines), log
    assert "pod labels from the kubelet at" in log
    assert "Traceback" not in log


def test_reload_on_sighup_and_clean_sigterm(tmp_path, sim_lib):
    counters = tmp_path / "counters.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                        "DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n")
    # the library by env var, the node by the simulator's own variable, the hostname from NODE_NAME
    env = clean_env(DCGM_COLLECTOR_LIBDCGM=str(sim_lib), DCGM_SIM_SCENARIO="2", NODE_NAME="node-x")
    with collector(tmp_path, "-a", "127.0.0.1:0", "-c", "200", "-f", str(counters), env=env) as c:
        first = samples(c.metrics())
        assert {labels["hostname"] for _, labels, _ in first if "gpu" in labels} == {"node-x"}
        assert {labels["gpu"] for _, labels, _ in first if "gpu" in labels} == {"0", "1"}
        # a broken file: one line naming file:line, the old counters keep serving
        counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                            "DCGM_FI_DEV_NOT_A_FIELD, gauge, nope\n")
        mark = len(c.log())
        c.proc.send_signal(signal.SIGHUP)
        error = c.wait_log(rf"reload failed.*{re.escape(str(counters))}:2: unknown field name[^\n]*", start=mark)
        assert "DCGM_FI_DEV_NOT_A_FIELD" in error[0]
        assert "Traceback" not in c.log()[mark:]
        still = {name for name, _, _ in samples(c.metrics())}
        assert {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"} <= still
        status, _ = c.get("/health")
        assert status == 200
        # a good file: swapped in
        counters.write_text("DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\n")
        mark = len(c.log())
        c.proc.send_signal(signal.SIGHUP)
        c.wait_log(r"reloaded 1 metrics", start=mark)
        now = {name for name, _, _ in samples(c.metrics())}
        assert "DCGM_FI_DEV_SM_CLOCK" in now and "DCGM_FI_DEV_GPU_TEMP" not in now
        wait_for(lambda: c.get("/health")[0] == 200, what="health after the reload")
        started = time.monotonic()
        assert c.stop(signal.SIGTERM) == 0
        assert time.monotonic() - started < 5
        assert "Traceback" not in c.log()


# The collector with its embedded DCGM stuck as a hung driver leaves it: while the file "stuck"
# exists (at most DCGM's 60 s), every read of the sampler and the handle's final stop block.
STUCK_DCGM = """
import os, sys, time
from dcgm_collector.cli import main
from dcgm_collector.collect import drain
from dcgm_collector.dcgm import Handle

def stuck(call):
    def wrapper(*args, **kwargs):
        deadline = time.monotonic() + 60
        while os.path.exists("stuck") and time.monotonic() < deadline:
            time.sleep(0.05)
        return call(*args, **kwargs)
    return wrapper

drain.drain_into = stuck(drain.drain_into)
Handle.close = stuck(Handle.close)
sys.exit(main())
"""


def _stuck_collector(tmp_path: Path, *args: str) -> Running:
    """The collector started through STUCK_DCGM, serving, with two ticks done; the caller kills it."""
    (tmp_path / "stuck_dcgm.py").write_text(STUCK_DCGM)
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch("stuck_dcgm", "--sim", "2", "-a", "127.0.0.1:0", "-c", "200", *args, cwd=tmp_path,
                      env=clean_env(), stdout=out, stderr=subprocess.STDOUT)
    c = Running(proc, log)
    try:
        c.port = int(c.wait_log(SERVING.pattern)[1])
        metrics_after_ticks(c, 2)
    except BaseException:
        stop_process(proc, signal.SIGKILL)
        raise
    return c


def test_sigterm_while_embedded_dcgm_is_stuck_exits_within_2_s(tmp_path):
    c = _stuck_collector(tmp_path)
    proc = c.proc
    try:
        (tmp_path / "stuck").touch()
        time.sleep(0.5)   # the sampler waits inside a read now
        proc.send_signal(signal.SIGHUP)   # the reload waits for the sampler...
        time.sleep(0.3)
        assert c.get("/health")[0] in (200, 503)   # ...the server answers meanwhile...
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)   # ...and SIGTERM waits for neither, nor for the stuck stop
        code = proc.wait(70)
        seconds = time.monotonic() - started
        print(f"\nSIGTERM -> exit with embedded DCGM stuck: {seconds:.2f} s")
        assert code == 0, c.log()
        assert seconds < 2.0, c.log()
        assert "Traceback" not in c.log()
        assert c.log().rstrip().endswith('exiting without waiting for it"')   # the logs are flushed first
    finally:
        stop_process(proc, signal.SIGKILL)


def test_sighup_while_embedded_dcgm_is_stuck_reloads_once_it_answers(tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    c = _stuck_collector(tmp_path, "-f", str(counters))
    proc = c.proc
    try:
        (tmp_path / "stuck").touch()
        time.sleep(0.5)   # the sampler waits inside a read now
        counters.write_text("DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).\n")
        proc.send_signal(signal.SIGHUP)
        c.wait_log(r"sampler thread did not stop within")   # the reload waits for the stuck read...
        time.sleep(1.0)
        assert "DCGM_FI_DEV_GPU_TEMP" in {name for name, _, _ in samples(c.metrics())}   # ...serving meanwhile
        (tmp_path / "stuck").unlink()   # DCGM answers again
        c.wait_log(r"reloaded 1 metrics")
        ticks = sample_value(c.metrics(), "dcgm_collector_ticks_total")
        text = metrics_after_ticks(c, ticks + 2)   # the new sampler collects
        assert "DCGM_FI_DEV_SM_CLOCK" in {name for name, _, _ in samples(text)}
        assert c.stop() == 0
        assert "Traceback" not in c.log() and "reload failed" not in c.log()
    finally:
        stop_process(proc, signal.SIGKILL)


def test_landing_page_and_health_from_the_cli(tmp_path, sim_lib):
    # --dcgm-lib pointed at the simulator, which reads its node from DCGM_SIM_SCENARIO
    with collector(tmp_path, "--dcgm-lib", str(sim_lib), "-a", "127.0.0.1:0", "-c", "200",
                   env=clean_env(DCGM_SIM_SCENARIO="1")) as c:
        assert {labels["gpu"] for _, labels, _ in samples(c.metrics()) if "gpu" in labels} == {"0"}
        status, page = c.get("/")
        assert status == 200 and 'href="metrics"' in page and __version__ in page
        wait_for(lambda: c.get("/health") == (200, f"OK\nsource: sim, chosen by --dcgm-lib {sim_lib}"),
                 what="healthy")
        assert c.get("/nope")[0] == 404


# ---- one-line errors (subprocess: the real exit codes and stderr) -----------------------------

def test_unknown_flag_is_a_usage_error(tmp_path):
    result = run_cli(tmp_path, "--bogus")
    assert result.returncode == 2
    assert last_line(result.stderr) == "dcgm-collector: error: unrecognized arguments: --bogus"


def test_bad_counters_file_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("# comment\nDCGM_FI_DEV_GPU_TEMP, gauge, temp\nDCGM_FI_DEV_GPU_TEMPP, gauge, typo\n")
    result = run_cli(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-f", str(bad))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"dcgm-collector: error: {bad}:3: unknown field name")


def test_address_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(tmp_path, "--sim", "1", "-a", f"127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr == f"dcgm-collector: error: cannot listen on 127.0.0.1:{port}: address already in use\n"


def test_missing_library(tmp_path):
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", env=clean_env(DCGM_COLLECTOR_LIBDCGM="/nonexistent/libdcgm.so.4"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("dcgm-collector: error: /nonexistent/libdcgm.so.4 (from DCGM_COLLECTOR_LIBDCGM)")
    assert "--sim" in result.stderr


def test_missing_library_by_flag(tmp_path):
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", "--dcgm-lib", str(tmp_path / "nolib"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert str(tmp_path / "nolib") in result.stderr


def test_unknown_gpu_and_bad_scenario(tmp_path):
    result = run_cli(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "-d", "g:1,7")
    assert result.returncode == 1
    assert last_line(result.stderr) == "dcgm-collector: error: -d g:1,7: no GPU 7 on this node (it has 0-1)"
    result = run_cli(tmp_path, "--sim", str(tmp_path / "missing.toml"), "-a", "127.0.0.1:0")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "missing.toml" in result.stderr
    result = run_cli(tmp_path, "--sim", "nosuch", "-a", "127.0.0.1:0")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "dcgm-collector: error: --sim nosuch: no shipped scenario is named nosuch: give a shipped scenario (default, "
        "ecc-storm, gpu-lost, h200-recorded-load, h200-recorded-replay, idle-held, memory-leak, mig, mixed, "
        "nvlink-errors, nvswitch-grace, pcie-replays, power-excursions, processes, row-remap-failure, spikes, "
        "thermal-runaway, xid-burst), a number N (N simulated H100s), or the path of a scenario "
        "file (.toml) or of a flight recording (.parquet)\n")


def test_an_option_not_implemented_is_one_warning_saying_it_is_ignored_and_why(tmp_path):
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "--kubernetes-enable-pod-labels",
                   env=clean_env(DCGM_EXPORTER_ENABLE_PPROF="true")) as c:
        log = c.log()
    warnings = [line.partition(" msg=")[2] for line in log.splitlines() if "level=WARN" in line]
    assert warnings == [
        "\"--kubernetes-enable-pod-labels is ignored: the pods' own labels are not attached yet; pod, namespace and "
        "container are (with -k)\"",
        "\"DCGM_EXPORTER_ENABLE_PPROF=true is ignored: there is no pprof endpoint\""], log


def test_bad_env_value_names_the_variable(tmp_path):
    result = run_cli(tmp_path, env=clean_env(DCGM_EXPORTER_INTERVAL="fast"))
    assert result.returncode == 2
    assert result.stderr == ("dcgm-collector: error: environment variable DCGM_EXPORTER_INTERVAL: "
                             "'fast' is not a whole number of milliseconds (ASCII digits)\n")


def test_huge_device_ranges_are_one_line_usage_errors_at_once(tmp_path):
    started = time.monotonic()
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", "-d", "g:0-4294967296")
    by_env = run_cli(tmp_path, "-a", "127.0.0.1:0", env=clean_env(DCGM_EXPORTER_DEVICES_STR="g:0-50000000"))
    assert time.monotonic() - started < 10   # two interpreter start-ups, no expansion of the range
    assert (result.returncode, by_env.returncode) == (2, 2)
    assert last_line(result.stderr) == ("dcgm-collector: error: argument -d/--devices: 'g:0-4294967296': "
                                        "id 4294967296 is too large (ids go from 0 to 1023)")
    assert by_env.stderr == ("dcgm-collector: error: environment variable DCGM_EXPORTER_DEVICES_STR: "
                             "'g:0-50000000': id 50000000 is too large (ids go from 0 to 1023)\n")
    assert "Traceback" not in result.stderr + by_env.stderr


def test_version_and_help(tmp_path):
    result = run_cli(tmp_path, "--version")
    assert (result.returncode, result.stdout) == (0, f"dcgm-collector {__version__}\n")
    result = run_cli(tmp_path, "-h")
    assert result.returncode == 0
    for title in ("collection:", "source of the readings (", "devices:", "window aggregates", "web:"):
        assert title in result.stdout
    assert "simulator:" not in result.stdout and "connection to DCGM:" not in result.stdout
    # the flags that choose the source stand together in their group, and nowhere else
    source_group = result.stdout.split("\nsource of the readings (", 1)[1].split("\n\n", 1)[0]
    flags = re.findall(r"^  (-\S+)", source_group, re.MULTILINE)
    assert flags == ["-r", "--dcgm-lib", "--dcgm", "--sim", "--nvml"], source_group
    for env in ("DCGM_EXPORTER_INTERVAL", "DCGM_COLLECTOR_WINDOW", "DCGM_REMOTE_HOSTENGINE_INFO"):
        assert env in result.stdout
    assert "check-counters" in result.stdout and "not implemented yet" in result.stdout


# ---- check-counters (in-process: it never touches DCGM) -----------------------------------------

def test_check_counters_lists_the_rows(capsys):
    assert cli.main(["check-counters", default_counters_path()]) == 0
    out = capsys.readouterr().out
    header, *rows, summary = out.splitlines()
    assert header.split() == ["LINE", "NAME", "TYPE", "FIELD", "KIND", "AGGREGATIONS"]
    temp = next(row.split() for row in rows if " DCGM_FI_DEV_GPU_TEMP " in row)
    assert temp[2:5] == ["gauge", "150", "value"]
    assert any(row.split()[1:5] == ["DCGM_FI_DRIVER_VERSION", "label", "1", "label"] for row in rows)
    assert summary.startswith(f"{default_counters_path()}: {len(rows)} rows")


def test_check_counters_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("DCGM_FI_DEV_GPU_TEMP, gauge\n")
    assert cli.main(["check-counters", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"dcgm-collector: error: {bad}:1: expected 3 fields")
    assert cli.main(["check-counters", str(tmp_path / "absent.csv")]) == 1
    assert "cannot read counters file" in capsys.readouterr().err


def not_a_counters_file(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A path that is not a usable counters file, and the one-line problem the collector names."""
    path = tmp_path / f"counters-{kind}.csv"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "not a regular file (a FIFO)"
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
        return path, "not a regular file (a character device)"
    if kind == "directory":
        path.mkdir()
        return path, "not a regular file (a directory)"
    with open(path, "wb") as out:   # sparse: 4 GiB that take no disk
        out.write(b"DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n")
        out.truncate(4 << 30)
    return path, "larger than 1 MiB"


NOT_COUNTERS_FILES = ["fifo", "dev-zero", "directory", "huge"]


@pytest.mark.parametrize("kind", NOT_COUNTERS_FILES)
def test_check_counters_refuses_what_is_not_a_counters_file_in_one_line(tmp_path, kind):
    path, problem = not_a_counters_file(tmp_path, kind)
    result = run_cli(tmp_path, "check-counters", str(path), timeout=15)
    assert result.returncode == 1
    assert result.stderr == f"dcgm-collector: error: {path}: {problem}\n"
    assert result.stdout == ""


@pytest.mark.parametrize("kind", NOT_COUNTERS_FILES)
def test_start_refuses_what_is_not_a_counters_file_in_one_line(tmp_path, kind):
    path, problem = not_a_counters_file(tmp_path, kind)
    result = run_cli(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-f", str(path), timeout=15)
    assert result.returncode == 1
    assert result.stderr == f"dcgm-collector: error: {path}: {problem}\n"


def test_a_counters_fifo_on_reload_is_refused_and_sigterm_still_stops(tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-c", "200", "-f", str(counters)) as c:
        counters.unlink()
        os.mkfifo(counters)
        mark = len(c.log())
        c.proc.send_signal(signal.SIGHUP)
        c.wait_log(rf"reload failed, still serving the previous counters: {re.escape(str(counters))}: "
                   r"not a regular file \(a FIFO\)\"\n", start=mark)
        assert "DCGM_FI_DEV_GPU_TEMP" in {name for name, _, _ in samples(c.metrics())}
        started = time.monotonic()
        assert c.stop(signal.SIGTERM) == 0
        assert time.monotonic() - started < 2
        assert "Traceback" not in c.log()


# ---- parsing (in-process) ---------------------------------------------------------------------


def test_malformed_remote_address_exits_1_in_one_line(tmp_path):
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", "-r", "host:99999")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("dcgm-collector: error: -r: bad hostengine address 'host:99999': port")
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", env=clean_env(DCGM_REMOTE_HOSTENGINE_INFO="good:1,[::1"))
    assert result.returncode == 1
    assert result.stderr.startswith("dcgm-collector: error: DCGM_REMOTE_HOSTENGINE_INFO: bad hostengine address "
                                    "'[::1': no closing ']'")


def test_bad_web_config_file_stops_the_start_with_one_line(tmp_path):
    web = tmp_path / "web.yml"
    web.write_text("tls_server_config:\n  cert_file: /nonexistent/x.pem\n  key_file: /nonexistent/x.key\n")
    collector = app.Collector(parse_config(["--web-config-file", str(web), "-a", "127.0.0.1:0"], {}))
    with pytest.raises(app.StartupError) as info:
        collector.start()
    assert str(info.value) == f"{web}: tls_server_config.cert_file: no such file /nonexistent/x.pem"
    assert collector.server is None


def _mapped_libraries(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps") as maps:
        return {Path(line.split()[-1]).name for line in maps if line.rstrip().endswith(".so") or ".so." in line}


def test_optional_features_load_their_libraries_only_when_on(tmp_path):
    """gRPC (for -k), bcrypt and PyYAML (for --web-config-file), cramjam (for --remote-write-url), OpenSSL (for
    TLS or an https remote write) stay out of a collector that does not use them."""
    users = tmp_path / "web.yml"
    # a cheap bcrypt cost keeps start-up fast; the hash is of "secret"
    users.write_text("basic_auth_users:\n  prom: $2b$04$3CVng5Jo8ynM1x1CBGG8WOt3h3ypFaT1lOcmLtXfdqnUrbJFSbkEi\n")
    plain_flags = ("--sim", "1", "-a", "127.0.0.1:0")
    with collector(tmp_path, *plain_flags) as plain:
        plain_libraries = _mapped_libraries(plain.proc.pid)
    with collector(tmp_path, *plain_flags, "--web-config-file", str(users)) as web:
        web_libraries = _mapped_libraries(web.proc.pid)
    with collector(tmp_path, *plain_flags, "--remote-write-url", "http://127.0.0.1:9/api/v1/write") as pushing:
        pushing_libraries = _mapped_libraries(pushing.proc.pid)

    def has(libraries: set[str], prefix: str) -> bool:
        return any(name.startswith(prefix) for name in libraries)

    assert not has(plain_libraries, "cygrpc") and not has(plain_libraries, "_bcrypt")
    assert not has(plain_libraries, "_yaml") and not has(plain_libraries, "cramjam")
    assert not has(plain_libraries, "libssl") and not has(plain_libraries, "_ssl")
    assert not has(pushing_libraries, "libssl")   # a remote write over plain http needs no TLS either
    assert has(web_libraries, "_bcrypt")   # the check above can see a library when it is loaded
    assert has(pushing_libraries, "cramjam")


def test_start_up_says_what_it_runs_on(tmp_path):
    counters = tmp_path / "custom.csv"
    counters.write_text(CUSTOM_COUNTERS)
    with collector(tmp_path, "--sim", "3", "-a", "127.0.0.1:0", "-f", str(counters), "-c", "500",
                   "--watch-interval", "100", "--retention", "60", "--aggregations", "max") as c:
        log = c.log()
    messages = [json.loads(f'"{m}"') for m in re.findall(r'msg="((?:[^"\\]|\\.)*)"', log)]
    library = str(engine.library_path())
    first = f"dcgm-collector {__version__}; DCGM library {library} (dcgm-collector's simulated engine, version 4.6.0)"
    assert messages[messages.index(first) + 1] == "source: sim, chosen by --sim 3"
    assert "embedded DCGM: GPUs 0-2 (3 x NVIDIA H100 80GB HBM3)" in messages
    # temperature, power and the clock event reasons DCGM_EXP_CLOCK_EVENTS_COUNT reads, on 3 GPUs; window
    # families: power's _min from its own column, both gauges' _max from --aggregations
    assert f"counters {counters}: 5 rows, 9 sampled series, 3 window families over 15 s" in messages
    history = next(m for m in messages if m.startswith("draining DCGM every 500 ms, DCGM sampling every 100 ms; "
                                                       "60 s of history in "))
    assert float(history.split(" in ")[1].split(" MiB")[0]) > 0
    assert messages[messages.index(history) + 1] == f"serving http://127.0.0.1:{c.port}/metrics (no TLS, no auth)"


def test_a_node_name_that_is_not_utf8_is_refused_at_start(tmp_path):
    env = {os.fsencode(k): os.fsencode(v) for k, v in clean_env().items()}
    env[b"NODE_NAME"] = b"gpu-node-\xff"
    result = subprocess.run(command(COLLECTOR, "--sim", "1", "-a", "127.0.0.1:0"), cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert last_line(result.stderr) == (
        "dcgm-collector: error: NODE_NAME 'gpu-node-\\\\xff' is not UTF-8 text, so it cannot be the hostname label; "
        "set NODE_NAME to the node's name, or give -n to leave the label out")
    # -n leaves the label out, so the same node starts
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-n",
                   env={os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}) as c:
        wait_for(lambda: http_get(f"http://127.0.0.1:{c.port}/health")[0] == 200, what="a healthy collector")
        assert "hostname=" not in http_get(f"http://127.0.0.1:{c.port}/metrics")[1].decode()


def test_a_rate_typed_counter_is_served_as_a_gauge_with_one_warning(tmp_path):
    counters = tmp_path / "exporter-default.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, Total number of NVLink bandwidth counters.\n")
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "-f", str(counters)) as c:
        text = metrics_after_ticks(c, 2)
        log = c.log()
    assert "# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL gauge\n" in text
    assert log.count(f"{counters}:2: DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is typed counter, but DCGM's value is a rate "
                     "(MB/s) and can go down: served as a gauge") == 1


def test_use_old_namespace_writes_uuid_from_flag_or_environment(tmp_path):
    counters = tmp_path / "1x.csv"
    counters.write_text("dcgm_gpu_temp, gauge, GPU temperature (in C).\n"
                        "DCGM_EXP_XID_ERRORS_COUNT, gauge, Count of XID errors within the window.\n")
    for args, env in ((("-o",), clean_env()), ((), clean_env(DCGM_EXPORTER_USE_OLD_NAMESPACE="true"))):
        with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "-f", str(counters), *args, env=env) as c:
            text = metrics_after_ticks(c, 2)
        series = [(name, labels) for name, labels, _ in samples(text) if "gpu" in labels]
        assert {name for name, _ in series} == {"dcgm_gpu_temp", "DCGM_EXP_XID_ERRORS_COUNT"}
        assert all(list(labels)[:2] == ["gpu", "uuid"] and "UUID" not in labels for _, labels in series)


# a 1.x-style file with a repeated row, rows at levels not sampled, and P2P status
MIXED_ROWS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT, gauge, NvSwitch voltage.
dcgm_gpu_temp, gauge, GPU temperature again.
DCGM_FI_DEV_CPU_MODEL, label, CPU model.
DCGM_EXP_P2P_STATUS, gauge, P2P NvLink status.
"""


def mixed_rows_warnings(path: Path) -> list[str]:
    return [
        f"{path}:3: dcgm_gpu_temp is field 150, already listed at line 1 as DCGM_FI_DEV_GPU_TEMP: "
        "using line 1, skipping line 3",
    ]


# what only the node can tell: it has no NvSwitch (said at start, not by check-counters)
def no_switch_warning(path: Path) -> str:
    return f"{path}:2: not serving DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT: no NvSwitch on this node"


def test_rows_that_cannot_be_served_warn_once_each_and_p2p_is_served(tmp_path):
    counters = tmp_path / "mixed.csv"
    counters.write_text(MIXED_ROWS)
    with collector(tmp_path, "--sim", "3", "-a", "127.0.0.1:0", "-f", str(counters), "-n") as c:
        text = metrics_after_ticks(c, 2)
        log = c.log()
    for warning in [*mixed_rows_warnings(counters), no_switch_warning(counters)]:
        assert log.count(warning) == 1, log
    assert log.count("level=WARN") == 2, log
    p2p = [(labels["gpu"], labels["peer_gpu"], labels["link_status"], value)
           for name, labels, value in samples(text) if name == "DCGM_EXP_P2P_STATUS"]
    # three H100s, each with NvLinks: every ordered pair is OK
    assert p2p == [(gpu, peer, "OK", 0.0) for gpu in "012" for peer in "012" if peer != gpu]
    assert {name for name, _, _ in samples(text) if not name.startswith("dcgm_collector_")} == {
        "DCGM_FI_DEV_GPU_TEMP", "DCGM_EXP_P2P_STATUS"}


def test_check_counters_shows_the_same_warnings(tmp_path, capsys):
    counters = tmp_path / "mixed.csv"
    counters.write_text(MIXED_ROWS)
    assert cli.main(["check-counters", str(counters)]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"dcgm-collector: warning: {w}" for w in mixed_rows_warnings(counters)]
    assert captured.out.splitlines()[-1] == (f"{counters}: 4 rows: 2 metrics (0 with window aggregates), "
                                             "1 label rows, 1 DCGM_EXP_* counters")


def test_a_command_that_loaded_pyarrow_ends_with_its_own_status_after_the_exit_handlers(tmp_path):
    """With pyarrow loaded the command ends without the C++ runtime's destructors (Arrow's thread pools can abort
    the process there, after the work is done): the status, the error line and the exit handlers are as without."""
    pytest.importorskip("pyarrow")
    script = ("import atexit, sys\n"
              "if sys.argv[1] == 'pyarrow':\n"
              "    import pyarrow\n"
              "atexit.register(lambda: print('exit handler ran'))\n"
              "sys.argv = ['dcgm-collector', 'check-counters', 'missing.csv']\n"
              "from dcgm_collector.cli import run\n"
              "run()\n")
    answers = [subprocess.run([sys.executable, "-c", script, which], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60) for which in ("plain", "pyarrow")]
    for answer in answers:
        assert answer.returncode == 1
        assert answer.stdout == "exit handler ran\n"
        assert answer.stderr == ("dcgm-collector: error: missing.csv: cannot read counters file: "
                                 "No such file or directory\n")
