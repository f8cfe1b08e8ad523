"""The early warnings end to end: collectors on the rehearsed faults, a real Prometheus and a real Alertmanager.

One collector with --warnings and the flight recorder runs on each fault
scenario, once on the modelled GPUs (--sim) and once on the engine reading the
simulated NVML (--nvml); one Prometheus scrapes them all every second and
evaluates the shipped warnings group as shipped; Alertmanager sends what fires
to this test's webhook.  For each scenario and source, the precursor's alert
must fire on the faulty GPU before the failure does (the lead time, from the
alerts' own start times, is printed), no other GPU may warn, and the report of
the recording that holds the failure must name the planted cause first.

The healthy shipped scenarios run 10 minutes each, all at once, with the same
rules: not one warning.
"""

from __future__ import annotations

import json
import queue
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from support import (
    ALERTMANAGER,
    COLLECTOR,
    PROMETHEUS,
    close_and_print_logs,
    command,
    free_port,
    is_ready,
    launch,
    prometheus_query,
    start_alertmanager,
    start_prometheus,
    stop_process,
    wait_until,
    write_alerting_configs,
)
from test_faults import _env

from dcgm_collector.report.recording import iso_seconds

CHECKOUT = Path(__file__).resolve().parents[2]
RULES = CHECKOUT / "deploy" / "prometheus" / "gpu-alerts.yml"
SCENARIOS = CHECKOUT / "dcgm_collector" / "engine" / "scenarios"


@dataclass(frozen=True)
class Fault:
    gpu: str
    precursor: str                # the alert that must fire before the failure
    failure: int | str            # the XID that is the failure, or "slowdown" (the slowdown temperature reached)
    causes: tuple[str, ...]       # the reasons the report's first finding may name
    also: tuple[str, ...] = ()    # other warnings the fault may raise on the same GPU
    leading: tuple[str, ...] = ()  # of those, the ones that must also fire before the failure


FAULTS = {
    "ecc-storm": Fault("1", "GpuEccErrorStorm", 92, ("ecc_sbe_accelerating", "ecc_sbe_storm"),
                       ("GpuEccErrorsAccelerating", "GpuXidNeedsInspection", "GpuXidNeedsReset",
                        "GpuRowRemapPending"),   # the XID 48 at the end marks its row for a remap
                       ("GpuEccErrorsAccelerating",)),
    "row-remap-failure": Fault("1", "GpuRowRemapPending", 64, ("row_remap_pending",),
                               ("GpuRowRemapFailed", "GpuXidNeedsReset")),
    "pcie-replays": Fault("1", "GpuPcieReplaysHigh", 79, ("pcie_replays",), ("GpuXidNeedsReset",)),
    "nvlink-errors": Fault("1", "GpuNvlinkErrorRateHigh", 74, ("nvlink_errors",), ("GpuXidNeedsReset",)),
    "power-excursions": Fault("1", "GpuPowerOverLimit", 79, ("power_over_limit",),
                              ("GpuHardwareSlowdownRepeated", "GpuXidNeedsReset"),
                              ("GpuHardwareSlowdownRepeated",)),
    "thermal-runaway": Fault("1", "GpuThermalMarginLow", "slowdown", ("thermal_margin",),
                             ("GpuHardwareSlowdownRepeated",)),
}
SOURCES = ("sim", "nvml")
FAULT_DEADLINE_S = 330     # the latest failure is at 150 s; its recording is written 10 s after it
HEALTHY_RUN_S = 600        # every healthy scenario runs this long without a warning
# the shipped scenarios that are faults (the rest must stay quiet)
NOT_HEALTHY = {*FAULTS, "xid-burst", "gpu-lost"}


needs_prometheus_and_alertmanager = pytest.mark.skipif(
    PROMETHEUS is None or ALERTMANAGER is None,
    reason="needs prometheus and prometheus-alertmanager (Debian packages of those names)")


def _warning_alerts() -> list[str]:
    groups = {g["name"]: g["rules"] for g in yaml.safe_load(RULES.read_text())["groups"]}
    return [r["alert"] for r in groups["dcgm-collector-warnings"] if "alert" in r]


def _collector(tmp_path: Path, name: str, scenario: Path, source: str, port: int, log) -> subprocess.Popen:
    recordings = tmp_path / "recordings" / name.replace("/", "-")
    recordings.mkdir(parents=True)
    flags = ["--warnings", "-a", f"127.0.0.1:{port}", "--recorder-dir", str(recordings), "--recorder-after", "10"]
    if source == "sim":
        return launch(COLLECTOR, "--sim", str(scenario), *flags, cwd=tmp_path, env=_env(), stdout=log,
                      stderr=subprocess.STDOUT)
    libdir = subprocess.run(command("dcgm_collector.engine", "nvml-libdir"), capture_output=True, text=True,
                            check=True, cwd=tmp_path).stdout.strip()
    env = _env(DCGM_SIM_SCENARIO=str(scenario), DCGM_ENGINE_NVML_LIB=f"{libdir}/libnvidia-ml.so.1")
    return launch(COLLECTOR, "--nvml", *flags, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)


def _start_all(tmp_path: Path, hook: str, runs: dict[str, tuple[Path, str]], processes: list, logs: dict) -> str:
    ports = {name: free_port() for name in runs}
    am_port, prom_port = free_port(), free_port()
    (tmp_path / "rules.yml").write_text(RULES.read_text())   # as shipped
    labels = {ports[name]: dict(zip(("scenario", "source"), name.rsplit("/", 1))) for name in runs}
    write_alerting_configs(tmp_path, hook, am_port, labels, ("alertname", "scenario", "source", "gpu"))
    for name in ("alertmanager", "prometheus", *runs):   # a log file a run: scenario-source.log
        logs[name.replace("/", "-")] = open(tmp_path / f"{name.replace('/', '-')}.log", "wb")  # noqa: SIM115
    processes.append(start_alertmanager(tmp_path / "alertmanager.yml", tmp_path, am_port, logs["alertmanager"]))
    for name, (scenario, source) in runs.items():
        processes.append(_collector(tmp_path, name, scenario, source, ports[name], logs[name.replace("/", "-")]))
    prometheus = start_prometheus(tmp_path / "prometheus.yml", tmp_path, prom_port, logs["prometheus"],
                                  "--rules.alert.resend-delay=1s")
    processes.append(prometheus)
    url = f"http://127.0.0.1:{prom_port}"
    wait_until("prometheus", lambda: is_ready(f"{url}/-/ready"), prometheus, timeout=60)
    return url


def _starts(alert: dict) -> float:
    """An alert's start (Prometheus' time of its first firing evaluation), in seconds since the epoch."""
    whole, _, rest = alert["startsAt"].partition(".")
    fraction = "0." + "".join(c for c in rest if c.isdigit()) if rest else "0"
    return iso_seconds(whole.removesuffix("Z") + "Z") + float(fraction)


def _slowdown_at(prometheus: str, scenario: str, source: str, gpu: str) -> float | None:
    """When the GPU's temperature first reached its slowdown temperature, by Prometheus' samples."""
    found = prometheus_query(prometheus, f'min_over_time(timestamp(DCGM_FI_DEV_GPU_TEMP{{scenario="{scenario}",'
                                         f'source="{source}",gpu="{gpu}"}} >= 89)[15m:1s])')
    return float(found[0]["value"][1]) if found else None


def _sidecars(folder: Path) -> list[dict]:
    out = []
    for sidecar in sorted(folder.glob("*.parquet.json")):
        try:
            out.append({**json.loads(sidecar.read_text()), "path": str(sidecar)})
        except (OSError, ValueError):
            continue   # being written
    return out


def _xid_at(folder: Path, xid: int) -> float | None:
    """DCGM's time of the first XID ``xid`` the flight recorder was triggered by, from its sidecars."""
    times = [iso_seconds(t["time"]) for side in _sidecars(folder) for t in side.get("triggers", [])
             if t["kind"] == "xid" and t["detail"] == f"XID {xid}"]
    return min(times) if times else None


def _failure_recording(folder: Path, failure: int | str) -> Path | None:
    """The recording whose sidecar lists the failure's XID, or the first (the warning's) for a slowdown."""
    for side in _sidecars(folder):
        details = {t["detail"] for t in side.get("triggers", [])}
        if failure == "slowdown" or f"XID {failure}" in details:
            return Path(side["path"]).with_suffix("")
    return None


def _first_finding(recording: Path) -> str:
    result = subprocess.run(command(COLLECTOR, "report", str(recording), "--text"), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    first = lines.index("Findings (most telling first):") + 1
    return lines[first]


@pytest.mark.slow
@pytest.mark.timeout(FAULT_DEADLINE_S + 120)
@needs_prometheus_and_alertmanager
def test_each_warning_fires_before_its_failure_and_the_report_names_the_cause(tmp_path, webhook):
    hook, notices = webhook
    runs = {f"{name}/{source}": (SCENARIOS / f"{name}.toml", source) for name in FAULTS for source in SOURCES}
    processes: list[subprocess.Popen] = []
    logs: dict = {}
    try:
        prometheus = _start_all(tmp_path, hook, runs, processes, logs)
        fired: dict[tuple[str, str], dict] = {}   # (run, alert) -> the first firing notice's alert
        deadline = time.monotonic() + FAULT_DEADLINE_S
        waiting = {run for run in runs}
        failures: dict[str, float] = {}
        while waiting:
            assert time.monotonic() < deadline, f"never fired or failed: {sorted(waiting)}"
            for process in processes:
                assert process.poll() is None, f"{process.args} exited with {process.returncode}"
            for run in sorted(waiting):
                scenario, source = run.split("/")
                fault = FAULTS[scenario]
                if run not in failures:
                    failed = (_slowdown_at(prometheus, scenario, source, fault.gpu) if fault.failure == "slowdown"
                              else _xid_at(tmp_path / "recordings" / run.replace("/", "-"), int(fault.failure)))
                    if failed is not None:
                        failures[run] = failed
                if run in failures and all((run, a) in fired for a in (fault.precursor, *fault.leading)):
                    waiting.discard(run)
            try:
                notice = notices.get(timeout=0.5)
            except queue.Empty:
                continue
            for alert in notice["alerts"]:
                labels = alert["labels"]
                run = f"{labels.get('scenario')}/{labels.get('source')}"
                name = labels["alertname"]
                if name not in _warning_alerts() or alert["status"] != "firing":
                    continue
                fault = FAULTS[labels["scenario"]]
                assert labels.get("gpu") == fault.gpu, f"{run}: {name} on GPU {labels.get('gpu')}: {alert}"
                # a fault's GPU is its peers' outlier too, once its rate has stood out for 5 minutes
                assert name in (fault.precursor, *fault.also, "GpuErrorRateFleetOutlier"), \
                    f"{run}: unexpected {name}: {alert}"
                fired.setdefault((run, name), alert)
        time.sleep(15)   # the failure's recording is written 10 s after it
        report = []
        for run in runs:
            scenario, source = run.split("/")
            fault = FAULTS[scenario]
            what = "the slowdown temperature" if fault.failure == "slowdown" else f"XID {fault.failure}"
            for alert in (fault.precursor, *fault.leading):
                lead = failures[run] - _starts(fired[(run, alert)])
                report.append(f"{run}: {alert} {lead:.0f} s before {what}")
                assert lead > 0, report[-1]
            recording = _failure_recording(tmp_path / "recordings" / run.replace("/", "-"), fault.failure)
            assert recording is not None, f"{run}: no recording of the failure"
            first = _first_finding(recording)
            assert any(f"early warning {cause}" in first for cause in fault.causes), f"{run}: {first}"
        print("\nlead times:\n  " + "\n  ".join(report), flush=True)
    finally:
        for process in reversed(processes):
            stop_process(process)
        if logs:
            close_and_print_logs(tmp_path, logs)


@pytest.mark.slow
@pytest.mark.timeout(HEALTHY_RUN_S + 180)
@needs_prometheus_and_alertmanager
def test_no_healthy_scenario_warns_in_ten_minutes(tmp_path, webhook):
    hook, notices = webhook
    healthy = sorted(p for p in SCENARIOS.glob("*.toml") if p.stem not in NOT_HEALTHY)
    assert {"default", "h200-recorded-replay", "spikes", "mig"} <= {p.stem for p in healthy}
    runs = {f"{p.stem}/sim": (p, "sim") for p in healthy}
    processes: list[subprocess.Popen] = []
    logs: dict = {}
    warnings = set(_warning_alerts())
    try:
        prometheus = _start_all(tmp_path, hook, runs, processes, logs)
        end = time.monotonic() + HEALTHY_RUN_S
        while time.monotonic() < end:
            for process in processes:
                assert process.poll() is None, f"{process.args} exited with {process.returncode}"
            try:
                notice = notices.get(timeout=1.0)
            except queue.Empty:
                continue
            raised = [a for a in notice["alerts"] if a["labels"]["alertname"] in warnings]
            assert not raised, raised
        # every scenario served its warnings all along, and not one was ever 1
        for run in runs:
            scenario = run.split("/")[0]
            served = prometheus_query(prometheus, f'count(count_over_time(DCGM_EXP_GPU_WARNING{{scenario='
                                                  f'"{scenario}"}}[{HEALTHY_RUN_S}s]) > {HEALTHY_RUN_S // 2})')
            assert served and float(served[0]["value"][1]) >= 11, f"{scenario}: warnings not served all along"
        ever = prometheus_query(prometheus, f"max_over_time(DCGM_EXP_GPU_WARNING[{HEALTHY_RUN_S + 60}s]) > 0")
        assert ever == [], ever
    finally:
        for process in reversed(processes):
            stop_process(process)
        if logs:
            close_and_print_logs(tmp_path, logs)
