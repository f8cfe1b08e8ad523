"""The process and idle-time alerts end to end: collectors, a real Prometheus and a real Alertmanager.

One collector runs with --processes on each shipped scenario, and one on a
node this test makes: GPU 0 runs a real process that keeps a CPU core busy
while the GPU does little (a starved GPU), GPU 1 is allocated to an HPC job
(a job mapping file) and runs at 15 % (a low-efficiency job).  One
Prometheus scrapes them all every second, each under a ``scenario`` label,
and evaluates the shipped process alerts, their expressions as shipped and
only their ``for`` shortened to 30 s (the promtool tests hold the durations);
Alertmanager sends what fires to a webhook in this test.  Each alert must
reach the webhook from the scenario that has its fault, and no other
scenario's GPU may raise any of them.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from support import (
    ALERTMANAGER,
    COLLECTOR,
    PROMETHEUS,
    close_and_print_logs,
    free_port,
    launch,
    start_alertmanager,
    start_prometheus,
    stop_process,
    write_alerting_configs,
)

CHECKOUT = Path(__file__).resolve().parents[2]
RULES = CHECKOUT / "deploy" / "prometheus" / "gpu-alerts.yml"
SCENARIOS = CHECKOUT / "dcgm_collector" / "engine" / "scenarios"
PROCESS_ALERTS = ("GpuHeldIdle", "GpuLowEfficiencyJob", "GpuProcessMemoryLeak", "GpuStarved")
# the scenario and GPU each alert must come from
EXPECTED = {"GpuHeldIdle": ("idle-held", "1"), "GpuProcessMemoryLeak": ("processes", "0"),
            "GpuStarved": ("made", "0"), "GpuLowEfficiencyJob": ("made", "1")}
# and the only others that may raise them: the memory-leak scenario's leaking GPU, whose one process holds
# the memory its workload uses
ALSO = {("GpuProcessMemoryLeak", "memory-leak", "0")}
# a condition must hold this long to fire: shorter than the shipped 5 and 10 minutes, but longer than what
# the scenarios do for a few seconds and is no fault (the recorded H200 replay makes its CUDA context, a step of
# its framebuffer, while its GPU is still at 0 %)
E2E_FOR = "30s"
# the rules' rates are over 2 minutes, so an alert can fire once 2 minutes of samples are in
DEADLINE_S = 240
QUIET_AFTER_S = 20   # once all have fired, how much longer the other scenarios must stay quiet

# a data loader that cannot keep its GPU fed: three threads hashing (hashlib lets go of the GIL), so that it
# keeps at least a core busy on a machine busy with this test's other processes
SPIN = ("import hashlib, threading\nblock = bytes(1 << 20)\n"
        "def spin():\n    while True: hashlib.sha256(block).digest()\n"
        "for _ in range(3): threading.Thread(target=spin, daemon=True).start()\n"
        "print('ready', flush=True)\nthreading.Event().wait()")


def _made_scenario(spinner_pid: int) -> str:
    return f"""\
seed = 5
[[gpu]]
model = "H100"
workload = "training"
utilization = 0.15

[[gpu]]
model = "H100"
workload = "training"
utilization = 0.15

[[process]]
gpu = 0
pid = {spinner_pid}
fb_bytes = 8589934592
"""


def _process_rules(path: Path) -> None:
    """The shipped process alerts, expressions as they are, with a ``for`` short enough for a test."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rules = []
    for group in groups:
        for rule in group["rules"]:
            if rule.get("alert") in PROCESS_ALERTS:
                rules.append({**rule, "for": E2E_FOR})
    assert sorted(rule["alert"] for rule in rules) == sorted(PROCESS_ALERTS)
    path.write_text(yaml.safe_dump({"groups": [{"name": "e2e", "rules": rules}]}, sort_keys=False))


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE_S + QUIET_AFTER_S + 60)
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
@pytest.mark.skipif(ALERTMANAGER is None,
                    reason="prometheus-alertmanager is not installed (Debian package 'prometheus-alertmanager')")
def test_each_process_alert_fires_on_its_scenario_and_no_other_scenario_raises_one(tmp_path, webhook):
    hook, notices = webhook
    spinner = subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
    processes: list[subprocess.Popen] = []
    logs: dict = {}
    try:
        assert spinner.stdout is not None and spinner.stdout.readline().strip() == "ready"
        (tmp_path / "made.toml").write_text(_made_scenario(spinner.pid))
        (tmp_path / "jobs").mkdir()
        (tmp_path / "jobs" / "1").write_text("job-77\n")
        shipped = {path.stem: str(path) for path in sorted(SCENARIOS.glob("*.toml"))}
        assert {"idle-held", "processes"} <= shipped.keys()
        runs = {**shipped, "made": str(tmp_path / "made.toml")}
        ports = {name: free_port() for name in runs}
        am_port, prom_port = free_port(), free_port()
        _process_rules(tmp_path / "rules.yml")
        write_alerting_configs(tmp_path, hook, am_port, {port: {"scenario": name} for name, port in ports.items()},
                               ("alertname", "scenario", "gpu"))
        logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("alertmanager", "prometheus", *runs)}  # noqa: SIM115
        processes.append(start_alertmanager(tmp_path / "alertmanager.yml", tmp_path, am_port, logs["alertmanager"]))
        for name, scenario in runs.items():
            extra = ("--hpc-job-mapping-dir", str(tmp_path / "jobs")) if name == "made" else ()
            processes.append(launch(COLLECTOR, "--sim", scenario, "--processes", "-c", "500",
                                    "-a", f"127.0.0.1:{ports[name]}", *extra, cwd=tmp_path,
                                    stdout=logs[name], stderr=subprocess.STDOUT))
        processes.append(start_prometheus(tmp_path / "prometheus.yml", tmp_path, prom_port, logs["prometheus"],
                                          "--rules.alert.resend-delay=1s"))
        firing: dict[str, dict] = {}
        deadline = time.monotonic() + DEADLINE_S
        quiet_until: float | None = None
        while quiet_until is None or time.monotonic() < quiet_until:
            assert time.monotonic() < deadline, f"only {sorted(firing)} of {sorted(EXPECTED)} fired"
            for process in processes:
                assert process.poll() is None, f"{process.args} exited with {process.returncode}"
            try:
                notice = notices.get(timeout=0.5)
            except queue.Empty:
                continue
            for alert in notice["alerts"]:
                labels = alert["labels"]
                name = labels["alertname"]
                where = (labels.get("scenario"), labels.get("gpu"))
                assert where == EXPECTED[name] or (name, *where) in ALSO, alert
                if alert["status"] == "firing" and where == EXPECTED[name] and name not in firing:
                    print(f"{time.monotonic() - deadline + DEADLINE_S:.0f} s: {name} fired", flush=True)
                    firing[name] = alert
            if quiet_until is None and firing.keys() == EXPECTED.keys():
                quiet_until = time.monotonic() + QUIET_AFTER_S
        starved = firing["GpuStarved"]["labels"]
        assert starved["pid"] == str(spinner.pid), starved
        assert firing["GpuLowEfficiencyJob"]["labels"]["hpc_job"] == "job-77"
        for alert in firing.values():
            assert alert["labels"]["severity"] in ("warning", "info")
            assert alert["labels"]["hostname"] in alert["annotations"]["summary"], alert
    finally:
        for process in reversed(processes):
            stop_process(process)
        spinner.kill()
        spinner.wait()
        if logs:
            close_and_print_logs(tmp_path, logs)
