"""The dcgm-collector command: flags, env vars, errors, signals.

The collector itself runs as a subprocess (``python -m dcgm_collector`` with
a temporary directory as cwd, so the installed package with its compiled
extension is imported); parsing and small pieces are checked in-process.
Few subprocesses, short intervals: each run checks several flags at once.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import COLLECTOR, SERVING, command, http_get, launch, samples, stop_process, wait_for

from dcgm_collector import __version__, app, cli, logs
from dcgm_collector.collect import discovery
from dcgm_collector.collect.counters import default_counters_path
from dcgm_collector.config import (
    OPTIONS,
    REMOTE_FORMS,
    UNSUPPORTED,
    AddressError,
    ConfigError,
    DeviceSelection,
    build_parser,
    go_style_argv,
    hostname_label,
    parse_bool,
    parse_config,
    parse_devices,
    remote_host,
)

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

    def get(self, path: str = "/metrics") -> tuple[int, str]:
        status, body = http_get(f"http://127.0.0.1:{self.port}{path}", timeout=5)
        return status, body.decode()

    def metrics(self) -> str:
        status, body = self.get()
        assert status == 200, body
        return body

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        self.proc.send_signal(signum)
        return self.proc.wait(timeout)


@contextmanager
def collector(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    log = tmp_path / f"collector-{time.monotonic_ns()}.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, *args, cwd=tmp_path, env=env if env is not None else clean_env(), stdout=out,
                      stderr=subprocess.STDOUT)
    running = Running(proc, log)
    try:
        running.port = int(running.wait_log(SERVING.pattern)[1])   # logged once start-up is done
        yield running
    finally:
        stop_process(proc)


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


def test_landing_page_and_health_from_the_cli(tmp_path, sim_lib):
    # --dcgm-lib pointed at the simulator, which reads its node from DCGM_SIM_SCENARIO
    with collector(tmp_path, "--dcgm-lib", str(sim_lib), "-a", "127.0.0.1:0", "-c", "200",
                   env=clean_env(DCGM_SIM_SCENARIO="1")) as c:
        assert {labels["gpu"] for _, labels, _ in samples(c.metrics()) if "gpu" in labels} == {"0"}
        status, page = c.get("/")
        assert status == 200 and 'href="metrics"' in page and __version__ in page
        wait_for(lambda: c.get("/health") == (200, "OK"), what="healthy")
        assert c.get("/nope")[0] == 404


# ---- one-line errors (subprocess: the real exit codes and stderr) -----------------------------

def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


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


def test_bad_env_value_names_the_variable(tmp_path):
    result = run_cli(tmp_path, env=clean_env(DCGM_EXPORTER_INTERVAL="fast"))
    assert result.returncode == 2
    assert result.stderr == ("dcgm-collector: error: environment variable DCGM_EXPORTER_INTERVAL: "
                             "'fast' is not a whole number of milliseconds\n")


def test_version_and_help(tmp_path):
    result = run_cli(tmp_path, "--version")
    assert (result.returncode, result.stdout) == (0, f"dcgm-collector {__version__}\n")
    result = run_cli(tmp_path, "-h")
    assert result.returncode == 0
    for title in ("collection:", "connection to DCGM:", "devices:", "window aggregates", "simulator:", "web:"):
        assert title in result.stdout
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


# ---- parsing (in-process) ---------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("f", DeviceSelection("f")), ("g", DeviceSelection("g")), ("i", DeviceSelection("i")),
    ("g:0,1", DeviceSelection("g", (0, 1))), ("g:0-3", DeviceSelection("g", (0, 1, 2, 3))),
    ("g:0,2-4", DeviceSelection("g", (0, 2, 3, 4))), ("i:1", DeviceSelection("i", (1,))),
    ("g:3,3,1", DeviceSelection("g", (3, 1))),
])
def test_device_grammar(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize("text, message", [
    ("f:0", "takes no range"), ("g:0:1", "only one"), ("x", "expected f, g"), ("g:0,i:1", "only one"),
    ("g+i", "expected f, g"), ("g:", "empty item"), ("g:0,,1", "empty item"), ("g:a", "'a' is not N or N-M"),
    ("g:1-2-3", "is not N or N-M"), ("g:-1", "is not N or N-M"), ("g:3-1", "runs backwards"),
])
def test_device_grammar_errors(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_devices(text)


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_true(text):
    assert parse_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_go_false(text):
    assert parse_bool(text) is False


@pytest.mark.parametrize("text", ["yes", "on", "tRuE", "2", " true"])
def test_not_go_booleans(text):
    with pytest.raises(argparse.ArgumentTypeError, match="not a boolean"):
        parse_bool(text)


def test_defaults():
    config = parse_config([], {})
    assert config.collectors == default_counters_path()
    assert config.address == ":9400"
    assert config.collect_interval_ms == 1000
    assert config.devices == DeviceSelection("f")
    assert config.window_s == 15.0 and config.retention_s == 900.0 and config.watch_interval_ms is None
    assert config.aggregations == ()
    assert config.xid_count_window_ms == config.clock_events_count_window_ms == 300_000
    assert config.remote is None and config.sim is None and config.dcgm_lib is None
    assert config.hostname == socket.gethostname()
    assert not config.no_hostname and not config.replace_blanks_in_model_name and not config.debug
    assert config.log_format == "text" and config.warnings == ()


# (flags, env var, its value, config attribute, value from the env, value from the flag)
FLAG_ENV_CASES = [
    (["-f", "a.csv"], "DCGM_EXPORTER_COLLECTORS", "b.csv", "collectors", "b.csv", "a.csv"),
    (["-a", "127.0.0.1:1"], "DCGM_EXPORTER_LISTEN", "[::1]:2", "address", "[::1]:2", "127.0.0.1:1"),
    (["-c", "250"], "DCGM_EXPORTER_INTERVAL", "500", "collect_interval_ms", 500, 250),
    (["-r", "node7:5555"], "DCGM_REMOTE_HOSTENGINE_INFO", "node8:5555", "remote", "node8:5555", "node7:5555"),
    (["-d", "g:1"], "DCGM_EXPORTER_DEVICES_STR", "g:0-1", "devices", DeviceSelection("g", (0, 1)),
     DeviceSelection("g", (1,))),
    (["-n=false"], "DCGM_EXPORTER_NO_HOSTNAME", "true", "no_hostname", True, False),
    (["-rbmn=0"], "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", "T", "replace_blanks_in_model_name", True, False),
    (["-x", "100"], "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", "200", "xid_count_window_ms", 200, 100),
    (["--clock-events-count-window-size", "300"], "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", "400",
     "clock_events_count_window_ms", 400, 300),
    (["--sim", "2"], "DCGM_COLLECTOR_SIM", "mixed", "sim", "mixed", "2"),
    # the variable is left to dcgm.load_library, which reads it itself (and names it in its error)
    (["--dcgm-lib", "/x/libdcgm.so.4"], "DCGM_COLLECTOR_LIBDCGM", "/y", "dcgm_lib", None, "/x/libdcgm.so.4"),
    (["--window", "5"], "DCGM_COLLECTOR_WINDOW", "7.5", "window_s", 7.5, 5.0),
    (["--aggregations", "max"], "DCGM_COLLECTOR_AGGREGATIONS", "avg,min", "aggregations", ("min", "avg"), ("max",)),
    (["--retention", "60"], "DCGM_COLLECTOR_RETENTION", "120", "retention_s", 120.0, 60.0),
    (["--watch-interval", "50"], "DCGM_COLLECTOR_WATCH_INTERVAL", "100", "watch_interval_ms", 100.0, 50.0),
    (["--debug=false"], "DCGM_EXPORTER_DEBUG", "1", "debug", True, False),
    (["--log-format", "text"], "DCGM_EXPORTER_LOG_FORMAT", "json", "log_format", "json", "text"),
    (["-k=false"], "DCGM_EXPORTER_KUBERNETES", "true", "kubernetes", True, False),
    (["--kubernetes-gpu-id-type", "uid"], "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "device-name",
     "kubernetes_gpu_id_type", "device-name", "uid"),
    (["--pod-resources-kubelet-socket", "/a.sock"], "DCGM_POD_RESOURCES_KUBELET_SOCKET", "/b.sock",
     "pod_resources_kubelet_socket", "/b.sock", "/a.sock"),
    (["--nvidia-resource-names", "nvidia.com/a100", "--nvidia-resource-names", "nvidia.com/h100"],
     "NVIDIA_RESOURCE_NAMES", "nvidia.com/x, nvidia.com/y", "nvidia_resource_names",
     ("nvidia.com/x", "nvidia.com/y"), ("nvidia.com/a100", "nvidia.com/h100")),
    (["--hpc-job-mapping-dir", "/run/jobs"], "DCGM_HPC_JOB_MAPPING_DIR", "/var/jobs", "hpc_job_mapping_dir",
     "/var/jobs", "/run/jobs"),
    (["--web-config-file", "w.yml"], "DCGM_EXPORTER_WEB_CONFIG_FILE", "/etc/w.yml", "web_config_file",
     "/etc/w.yml", "w.yml"),
]


@pytest.mark.parametrize("flags, env, value, attribute, from_env, from_flag", FLAG_ENV_CASES,
                         ids=[case[1] for case in FLAG_ENV_CASES])
def test_env_var_and_flag_beats_it(flags, env, value, attribute, from_env, from_flag):
    assert getattr(parse_config([], {env: value}), attribute) == from_env
    assert getattr(parse_config(flags, {env: value}), attribute) == from_flag


def test_every_option_is_covered_by_the_table():
    assert {case[1] for case in FLAG_ENV_CASES} == {o.env for o in OPTIONS if o.env}


def test_empty_env_value_counts_as_unset():
    assert parse_config([], {"DCGM_EXPORTER_INTERVAL": "", "DCGM_EXPORTER_NO_HOSTNAME": ""}).collect_interval_ms == 1000


@pytest.mark.parametrize("env, value, message", [
    ("DCGM_EXPORTER_NO_HOSTNAME", "yes", "DCGM_EXPORTER_NO_HOSTNAME: 'yes' is not a boolean"),
    ("DCGM_EXPORTER_INTERVAL", "0", "DCGM_EXPORTER_INTERVAL: '0': must be more than 0"),
    ("DCGM_EXPORTER_DEVICES_STR", "g:x", "DCGM_EXPORTER_DEVICES_STR: 'g:x'"),
    ("DCGM_EXPORTER_LISTEN", "9400", "DCGM_EXPORTER_LISTEN: bad listen address"),
    ("DCGM_COLLECTOR_AGGREGATIONS", "p99", "DCGM_COLLECTOR_AGGREGATIONS: unknown aggregation 'p99'"),
    ("DCGM_COLLECTOR_WINDOW", "nan", "DCGM_COLLECTOR_WINDOW: 'nan': must be a positive number"),
    ("DCGM_EXPORTER_LOG_FORMAT", "xml", "DCGM_EXPORTER_LOG_FORMAT: 'xml': choose text or json"),
])
def test_bad_env_values(env, value, message):
    with pytest.raises(ConfigError) as info:
        parse_config([], {env: value})
    assert str(info.value).startswith(f"environment variable {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("argv, message", [
    (["-c", "abc"], "argument -c/--collect-interval: 'abc' is not a whole number of milliseconds"),
    (["-d", "g:0:1"], "argument -d/--devices: 'g:0:1': only one ':<range>' is allowed"),
    (["-a", "nohost"], "argument -a/--address: bad listen address 'nohost'"),
    (["--aggregations", "median"], "argument --aggregations: unknown aggregation 'median'"),
    (["-n=maybe"], "argument -n/--no-hostname: 'maybe' is not a boolean"),
])
def test_bad_flag_values_are_one_line_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse_config(argv, {})
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert last_line(err).startswith(f"dcgm-collector: error: {message}")


@pytest.mark.parametrize("argv, message", [
    (["--watch-interval", "300", "-c", "200"], "--watch-interval 300 ms must not be longer than"),
    (["--window", "100", "--retention", "50"], "--window 100 s is longer than --retention 50 s"),
    (["--sim", "2", "--dcgm-lib", "/x"], "give --sim or --dcgm-lib, not both"),
])
def test_inconsistent_options(argv, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(argv, {})


def test_go_style_spellings():
    parser = build_parser()
    assert go_style_argv(["-collectors", "x", "--f=y", "-rbmn", "--n", "--", "-collectors"], parser) == [
        "--collectors", "x", "-f=y", "-rbmn", "-n", "--", "-collectors"]
    config = parse_config(["-collect-interval", "300", "--d", "g:1", "-no-hostname"], {})
    assert (config.collect_interval_ms, config.devices, config.no_hostname) == (300, DeviceSelection("g", (1,)), True)


def test_unsupported_options_warn_or_refuse():
    env = {"DCGM_EXPORTER_ENABLE_PPROF": "true", "DCGM_EXPORTER_DUMP_DIRECTORY": "/tmp/dcgm-exporter-debug"}
    config = parse_config(["--kubernetes-enable-pod-uid", "--dump-enabled", "-s", "f"], env)
    text = "\n".join(config.warnings)
    assert "--kubernetes-enable-pod-uid is not supported yet" in text
    assert "--dump-enabled is not supported yet" in text
    assert "DCGM_EXPORTER_ENABLE_PPROF=true" in text
    assert "switch-devices" not in text and "DUMP_DIRECTORY" not in text   # dcgm-exporter's defaults: nothing to warn
    refused = ((["-o"], {}), (["-m", "ns:cm"], {}), ([], {"DCGM_EXPORTER_SYSTEMD_SOCKET": "1"}))
    for argv, env in refused:
        with pytest.raises(ConfigError, match="is not supported yet"):
            parse_config(argv, env)
    assert parse_config(["-o=false", "-m", "none"], {}).warnings == ()


def test_debug_and_log_format_set_up_logging():
    import logging

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        debug = parse_config(["--debug"], {})
        logs.setup_logging(debug.log_format, debug.debug)
        assert root.level == logging.DEBUG
        json_logs = parse_config([], {"DCGM_EXPORTER_LOG_FORMAT": "json"})
        logs.setup_logging(json_logs.log_format, json_logs.debug)
        assert root.level == logging.INFO
        assert isinstance(root.handlers[0].formatter, logs.JsonFormatter)
        record = logging.LogRecord("x", logging.WARNING, __file__, 1, "hello %s", ("there",), None)
        assert '"msg": "hello there"' in root.handlers[0].format(record)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


def test_hostname_label():
    assert hostname_label(None, {"NODE_NAME": "node-a"}) == "node-a"
    assert hostname_label(None, {}) == socket.gethostname()
    assert hostname_label("gpu-host-3:5555", {"NODE_NAME": "node-a"}) == "gpu-host-3"    # as dcgm-exporter
    assert hostname_label("unix:///run/he.sock", {"NODE_NAME": "node-a"}) == "node-a"
    assert parse_config(["-n"], {"NODE_NAME": "node-a"}).hostname is None
    assert parse_config(["-r", "10.0.0.7:5555"], {}).hostname == "10.0.0.7"


@pytest.mark.parametrize("address, host", [
    ("node7", "node7"), ("node7:5555", "node7"), ("[::1]:5555", "::1"), ("tcp://node8:5555", "node8"),
    ("/run/nv-hostengine.sock", None), ("unix:///run/he.sock", None), ("::1", "::1"),
])
def test_remote_host(address, host):
    assert remote_host(address) == host


@pytest.mark.parametrize("value, why", [
    ("host:99999", "port '99999' is not a number from 1 to 65535"),
    ("host:0", "port '0' is not a number from 1 to 65535"),
    ("host:", "port '' is not a number"),
    ("host:http", "port 'http' is not a number"),
    ("[::1", "no closing ']'"),
    ("[::1]x", "'x' after ']'"),
    ("[nothost]:5555", "'nothost' is not an IPv6 address"),
    ("1:2:3:zz", "an IPv6 address with a port is written [ADDRESS]:PORT"),
    ("tcp://", "no host after tcp://"),
    ("unix://", "no socket path after unix://"),
    ("http://node:5555", "unknown scheme http://"),
    ("", "empty"),
    ("  ", "empty"),
    (":5555", "no host"),
    ("a b:5555", "'a b' is not a host name"),
])
def test_malformed_remote_addresses(value, why):
    with pytest.raises(AddressError) as info:
        parse_config(["-r", value], {})
    message = str(info.value)
    assert message.startswith(f"-r: bad hostengine address {value!r}: {why}")
    assert message.endswith(f"; expected {REMOTE_FORMS}") and "\n" not in message


def test_malformed_remote_address_exits_1_in_one_line(tmp_path):
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", "-r", "host:99999")
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("dcgm-collector: error: -r: bad hostengine address 'host:99999': port")
    result = run_cli(tmp_path, "-a", "127.0.0.1:0", env=clean_env(DCGM_REMOTE_HOSTENGINE_INFO="good:1,[::1"))
    assert result.returncode == 1
    assert result.stderr.startswith("dcgm-collector: error: DCGM_REMOTE_HOSTENGINE_INFO: bad hostengine address "
                                    "'[::1': no closing ']'")


def test_several_remotes_each_named_by_its_host():
    env = {"NODE_NAME": "here"}
    config = parse_config(["-r", "gpu1:5555", "-r", "[fe80::1%eth0]:5555,unix:///run/he.sock", "-r", "/run/b.sock"],
                          env)
    assert config.remotes == ("gpu1:5555", "[fe80::1%eth0]:5555", "unix:///run/he.sock", "/run/b.sock")
    assert config.remote == ",".join(config.remotes)
    # two unix sockets on this host would share a name: each is then named by its address
    assert config.target_names == ("gpu1", "fe80::1%eth0", "unix:///run/he.sock", "/run/b.sock")
    assert config.hostname == "gpu1"
    config = parse_config([], {"DCGM_REMOTE_HOSTENGINE_INFO": "a:1, b:2", **env})
    assert (config.remotes, config.target_names) == (("a:1", "b:2"), ("a", "b"))
    assert parse_config(["-r", "node:1", "-r", "node:2"], env).target_names == ("node:1", "node:2")
    assert parse_config(["-r", "::1"], env).target_names == ("::1",)
    assert parse_config(["-r", "tcp://node9:7"], env).target_names == ("node9",)
    with pytest.raises(AddressError, match="hostengine address 'a:1' is given twice"):
        parse_config(["-r", "a:1", "-r", "a:1"], env)


def test_sim_takes_shipped_scenario_names():
    assert app._scenario_spec("4") == "4"
    spikes = Path(app._scenario_spec("spikes"))
    assert spikes.name == "spikes.toml" and spikes.is_file()
    assert app._scenario_spec("no-such-scenario") == "no-such-scenario"


# ---- the collector object in-process (the test process's simulator) ---------------------------

def test_remote_flag_makes_a_target_that_keeps_trying(monkeypatch):
    from dcgm_collector import dcgm
    from dcgm_collector.collect.counters import parse_counters

    calls = []

    def fake_connect(address, **kwargs):
        calls.append(address)
        raise dcgm.DcgmError(-21, where=f"dcgmConnect_v2({address})")

    monkeypatch.setattr(dcgm.Handle, "connect", staticmethod(fake_connect))
    collector = app.Collector(parse_config(["-r", "node7:5555"], {}))
    [target] = collector._make_targets(parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n"))
    assert (target.name, target.address, target.remote) == ("node7", "node7:5555", True)
    target.start()   # not fatal: the supervisor keeps trying
    try:
        wait_for(lambda: target.state.value == "down", what="the first failed connect")
        ok, reason = target.health()
        assert not ok
        assert reason.startswith("cannot reach hostengine at node7:5555: DCGM_ST_CONNECTION_NOT_VALID (-21)")
    finally:
        target.stop()
    assert calls[0] == "node7:5555"


def test_mig_instances_on_a_node_without_mig(handle):
    from dcgm_collector.collect.target import TargetError

    with pytest.raises(TargetError, match=r"-d i:0: no GPU has MIG instances on this node"):
        discovery.select_gpus(handle, parse_devices("i:0"))


def test_intervals_and_retention_reach_the_sampler(handle, tmp_path):
    counters_file = tmp_path / "c.csv"
    counters_file.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n")
    collector = app.Collector(parse_config(["-c", "400", "--watch-interval", "100", "--retention", "30",
                                            "-d", "g:1", "-f", str(counters_file)], {}))
    collector._open_embedded = lambda library: handle
    [target] = collector._make_targets(collector._read_counters())
    target.start()
    try:
        sampler, exposition = target.generation.sampler, target.exposition
        assert sampler.plan.collect_interval_us == 400_000
        assert sampler.plan.update_freq_us == 100_000
        assert sampler.plan.retention_s == 30.0
        assert sampler.gpu_ids == (1,)
        assert exposition.options.window_s == 15.0
    finally:
        target.stop()


def test_profiling_rows_the_gpus_lack_are_dropped_with_a_warning(handle, tmp_path, caplog):
    supported = handle.supported_profiling_fields(0)
    assert 1001 in supported and 1024 not in supported   # the simulated H100 has no 8th NVDEC
    counters_file = tmp_path / "c.csv"
    counters_file.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n"
                             "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, graphics engine active\n"
                             "DCGM_FI_PROF_NVDEC_UTIL_7_RATIO, gauge, NVDEC 7\n")
    collector = app.Collector(parse_config(["-f", str(counters_file)], {}))
    with caplog.at_level("WARNING"):
        kept = discovery.drop_unsupported_profiling(handle, collector._read_counters(), None)
    assert [c.name for c in kept] == ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
    assert any(f"{counters_file}:3: skipping DCGM_FI_PROF_NVDEC_UTIL_7_RATIO" in r.getMessage()
               for r in caplog.records)


def test_kubernetes_gpu_id_type_is_checked():
    with pytest.raises(ConfigError, match="not a GPU id type"):
        parse_config([], {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "index"})


def test_bad_web_config_file_stops_the_start_with_one_line(tmp_path):
    web = tmp_path / "web.yml"
    web.write_text("tls_server_config:\n  cert_file: /nonexistent/x.pem\n  key_file: /nonexistent/x.key\n")
    collector = app.Collector(parse_config(["--web-config-file", str(web), "-a", "127.0.0.1:0"], {}))
    with pytest.raises(app.StartupError) as info:
        collector.start()
    assert str(info.value) == f"{web}: tls_server_config.cert_file: no such file /nonexistent/x.pem"
    assert collector.server is None
