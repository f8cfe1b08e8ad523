"""The shipped alert rules (deploy/prometheus/gpu-alerts.yml).

promtool checks the file and runs its unit tests (gpu-alerts.test.yml); the
structure checks keep every alert routable and readable; and an end-to-end
run sends a simulated thermal runaway through the real collector, a real
Prometheus evaluating the shipped temperature expression, and a real
Alertmanager, to a webhook in this test; a second one does the same with a
MIG GPU instance whose framebuffer fills up.
"""

from __future__ import annotations

import queue
import re
import shutil
import subprocess
import time
from collections.abc import Callable
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
)

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "gpu-alerts.yml"
RULE_TESTS = RULES_DIR / "gpu-alerts.test.yml"

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package 'prometheus')")

GPU_LABELS = ("hostname", "gpu", "UUID", "modelName")
SEVERITIES = {"critical", "warning", "info"}


def _rules() -> list[dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _alerts() -> dict[str, dict]:
    return {rule["alert"]: rule for rule in _rules() if "alert" in rule}


@needs_promtool
def test_promtool_check_rules():
    result = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_pass():
    result = subprocess.run([PROMTOOL, "test", "rules", RULE_TESTS.name], cwd=RULES_DIR,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_alerts_the_issue_asks_for_are_there():
    assert set(_alerts()) == {
        "GpuTemperatureHigh", "GpuFramebufferFull", "GpuIdle", "GpuUtilizationHigh", "GpuXidError",
        "GpuLost", "GpuThermalThrottling", "GpuPowerThrottling", "DcgmCollectorDown", "DcgmCollectorStale",
        "GpuMigInstanceFramebufferFull", "GpuNvlinkErrors",
        "GpuHeldIdle", "GpuLowEfficiencyJob", "GpuProcessMemoryLeak", "GpuStarved",
        "GpuEccErrorStorm", "GpuEccErrorsAccelerating", "GpuRowRemapPending", "GpuRowRemapFailed",
        "GpuPcieReplaysHigh", "GpuNvlinkErrorRateHigh", "GpuThermalMarginLow", "GpuHardwareSlowdownRepeated",
        "GpuPowerOverLimit", "GpuXidNeedsReset", "GpuXidNeedsInspection", "GpuErrorRateFleetOutlier",
    }


def test_every_warning_reason_has_its_alert_with_a_runbook_line():
    from dcgm_collector.series.warnings import REASON_NAMES
    groups = {group["name"]: group["rules"] for group in yaml.safe_load(RULES.read_text())["groups"]}
    alerts = [rule for rule in groups["dcgm-collector-warnings"] if "alert" in rule]
    reasons = [re.search(r'reason="([a-z_]+)"', rule["expr"]) for rule in alerts]
    assert sorted(m.group(1) for m in reasons if m) == sorted(REASON_NAMES)
    for rule in alerts:
        assert len(rule["annotations"].get("runbook", "")) > 40, rule["alert"]


def test_the_process_and_idle_rules_are_a_group_of_their_own():
    groups = {group["name"]: group["rules"] for group in yaml.safe_load(RULES.read_text())["groups"]}
    assert [rule.get("alert") or rule.get("record") for rule in groups["dcgm-collector-processes"]] == [
        "namespace:dcgm_gpu_idle_hours:increase1d", "hpc_job:dcgm_gpu_idle_hours:increase1d",
        "GpuHeldIdle", "GpuLowEfficiencyJob", "GpuProcessMemoryLeak", "GpuStarved"]


def test_every_recording_rule_has_a_unit_test_of_its_value():
    evaluated = {check["expr"] for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]
                 for check in group.get("promql_expr_test", []) if check.get("exp_samples")}
    records = [rule["record"] for rule in _rules() if "record" in rule]
    assert "hpc_job:dcgm_gpu_idle_hours:increase1d" in records
    # the clock ratio is checked through the throttling alerts built on it
    for name in records:
        if name != "gpu:sm_clock:ratio_to_1h_peak":
            assert name in evaluated, f"no unit test evaluates {name}"


def test_every_rule_of_the_processes_group_is_documented():
    page = (RULES_DIR.parents[1] / "docs" / "alerts-and-dashboards.md").read_text()
    groups = {group["name"]: group["rules"] for group in yaml.safe_load(RULES.read_text())["groups"]}
    for rule in groups["dcgm-collector-processes"]:
        name = rule.get("alert") or rule["record"]
        assert f"| `{name}` |" in page, f"docs/alerts-and-dashboards.md has no row for {name}"


def test_the_process_alerts_keep_their_duration_in_for():
    # an end-to-end test shortens `for` only: the inner windows stay short,
    # so a shortened rule fires within seconds of its condition
    for name in ("GpuHeldIdle", "GpuLowEfficiencyJob", "GpuProcessMemoryLeak", "GpuStarved"):
        rule = _alerts()[name]
        assert rule["for"] in ("5m", "10m"), name
        windows = re.findall(r"\[(\d+)m\]", rule["expr"])
        assert windows and all(int(w) <= 2 for w in windows), (name, windows)


def test_every_alert_has_a_severity_and_names_host_and_gpu():
    alerts = _alerts()
    assert len(alerts) >= 10, f"only {len(alerts)} alerts read from {RULES}"
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in SEVERITIES, name
        annotations = rule["annotations"]
        assert annotations.get("summary") and annotations.get("description"), name
        text = annotations["summary"] + annotations["description"]
        wanted = ("instance", "job") if name.startswith("DcgmCollector") else GPU_LABELS
        for label in wanted:
            assert f"$labels.{label}" in text, f"{name} does not name {label}"


def test_every_alert_has_a_unit_test_where_it_fires_and_one_where_it_does_not():
    checks: dict[str, list[bool]] = {}
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in group.get("alert_rule_test", []):
            checks.setdefault(check["alertname"], []).append(bool(check["exp_alerts"]))
    alerts = _alerts()
    assert len(alerts) >= 10 and checks, f"{len(alerts)} alerts, {len(checks)} alert tests read"
    for name in alerts:
        assert True in checks.get(name, []), f"no unit test where {name} fires"
        assert False in checks.get(name, []), f"no unit test where {name} stays quiet"


def test_spiky_readings_use_the_window_families_with_a_fallback():
    # the window maximum catches what the last value misses; "X_max or X"
    # keeps the rule working with a dcgm-exporter counters file
    alerts = _alerts()
    assert "DCGM_FI_DEV_GPU_TEMP_max or DCGM_FI_DEV_GPU_TEMP" in alerts["GpuTemperatureHigh"]["expr"]
    assert ('DCGM_FI_DEV_FB_USED_max{GPU_I_ID=""} or DCGM_FI_DEV_FB_USED{GPU_I_ID=""}'
            in alerts["GpuFramebufferFull"]["expr"])
    assert ('DCGM_FI_DEV_FB_USED_max{GPU_I_ID!=""} or DCGM_FI_DEV_FB_USED{GPU_I_ID!=""}'
            in alerts["GpuMigInstanceFramebufferFull"]["expr"])
    assert "DCGM_FI_DEV_GPU_UTIL_max or DCGM_FI_DEV_GPU_UTIL" in alerts["GpuIdle"]["expr"]


# --- end to end -------------------------------------------------------------------------------------------

# GPU 1's cooling fails fast: 4 C/s on the temperature target, so that with
# the simulator's 20 s thermal lag it passes 85 C about 15 s after the start
# (the shipped thermal-runaway.toml heats at 0.5 C/s: over a minute)
RUNAWAY = """seed = 3
[[gpu]]
model = "H100"
workload = "training"

[[gpu]]
model = "H100"
workload = "thermal_runaway"
heat_rate = 4.0
"""
ALERT_DEADLINE_S = 60
E2E_FOR = "3s"


def _temperature_rule_for_e2e(path: Path) -> str:
    """The shipped GpuTemperatureHigh rule, expression and all, with a `for` short enough for a test."""
    return _rule_for_e2e(path, "GpuTemperatureHigh")


def _rule_for_e2e(path: Path, alertname: str) -> str:
    """The shipped rule, expression and all, with a `for` short enough for a test."""
    rule = dict(_alerts()[alertname])
    rule["for"] = E2E_FOR
    path.write_text(yaml.safe_dump({"groups": [{"name": "e2e", "rules": [rule]}]}, sort_keys=False))
    return rule["expr"]


def _write_alerting_configs(tmp_path: Path, hook_url: str, collector_port: int, alertmanager_port: int) -> None:
    """Alertmanager to the webhook at once, Prometheus scraping the collector every second with rules.yml."""
    (tmp_path / "alertmanager.yml").write_text(
        "route:\n  receiver: hook\n  group_by: [alertname, hostname, gpu]\n"
        "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: '{hook_url}'\n"
    )
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
        "rule_files: [rules.yml]\n"
        f"alerting:\n  alertmanagers:\n    - static_configs: [{{targets: ['127.0.0.1:{alertmanager_port}']}}]\n"
        "scrape_configs:\n  - job_name: dcgm-collector\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{collector_port}']\n"
    )


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
@pytest.mark.skipif(ALERTMANAGER is None,
                    reason="prometheus-alertmanager is not installed (Debian package 'prometheus-alertmanager')")
def test_thermal_runaway_reaches_the_webhook(tmp_path, webhook):
    hook_url, notices = webhook
    collector_port, prometheus_port, alertmanager_port = free_port(), free_port(), free_port()
    (tmp_path / "runaway.toml").write_text(RUNAWAY)
    expr = _temperature_rule_for_e2e(tmp_path / "rules.yml")
    assert "_max" in expr
    _write_alerting_configs(tmp_path, hook_url, collector_port, alertmanager_port)
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("alertmanager", "collector", "prometheus")}  # noqa: SIM115
    processes: list[subprocess.Popen] = []
    started = time.monotonic()
    try:
        _start_alerting(tmp_path, "runaway.toml", (collector_port, prometheus_port, alertmanager_port), logs,
                        processes)
        alert = _first_firing(notices, "GpuTemperatureHigh", started + ALERT_DEADLINE_S, processes)
        labels = alert["labels"]
        assert labels["gpu"] == "1", alert
        assert labels["severity"] == "critical"
        assert labels["modelName"] == "NVIDIA H100 80GB HBM3"
        assert labels["UUID"].startswith("GPU-") and labels["hostname"]
        assert alert["annotations"]["summary"].startswith(f"GPU 1 on {labels['hostname']} is at ")
        assert labels["UUID"] in alert["annotations"]["description"]
        # the healthy neighbour stays quiet
        while True:
            try:
                notice = notices.get_nowait()
            except queue.Empty:
                break
            assert all(a["labels"].get("gpu") != "0" for a in notice["alerts"]), notice
    finally:
        for process in reversed(processes):
            stop_process(process)
        close_and_print_logs(tmp_path, logs)


def _start_alerting(tmp_path: Path, scenario: str, ports: tuple[int, int, int], logs: dict,
                    processes: list[subprocess.Popen], *collector_args: str) -> None:
    """Alertmanager, the collector on ``scenario`` and Prometheus, each appended to ``processes`` once started."""
    collector_port, prometheus_port, alertmanager_port = ports
    alertmanager = start_alertmanager(tmp_path / "alertmanager.yml", tmp_path, alertmanager_port,
                                      logs["alertmanager"])
    processes.append(alertmanager)
    # cwd=tmp_path: `python -m` puts the cwd on sys.path, and the checkout
    # may lack the compiled extension the installed package has
    collector = launch(COLLECTOR, "--sim", str(tmp_path / scenario), "-a", f"127.0.0.1:{collector_port}",
                       "-c", "500", *collector_args, cwd=tmp_path, stdout=logs["collector"], stderr=subprocess.STDOUT)
    processes.append(collector)
    prometheus = start_prometheus(tmp_path / "prometheus.yml", tmp_path, prometheus_port, logs["prometheus"],
                                  "--rules.alert.resend-delay=1s")
    processes.append(prometheus)


# An H100 split 3g + 1g whose memory leaks from 80 % at 1 GiB/s: each
# instance holds its share of the GPU's memory, so both pass 90 % of what
# they can use within about ten seconds.  GPU 1 is whole and steady.
MIG_LEAK = """seed = 3
[[gpu]]
model = "H100"
mig_profiles = ["3g.40gb", "1g.10gb"]
workload = "memory_leak"
fb_used = 0.80
leak_rate = 1024.0

[[gpu]]
model = "H100"
workload = "training"
"""
MIG_COUNTERS = """\
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB)., max
"""


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
@pytest.mark.skipif(ALERTMANAGER is None,
                    reason="prometheus-alertmanager is not installed (Debian package 'prometheus-alertmanager')")
def test_a_filling_mig_instance_reaches_the_webhook(tmp_path, webhook):
    hook_url, notices = webhook
    ports = free_port(), free_port(), free_port()
    (tmp_path / "mig-leak.toml").write_text(MIG_LEAK)
    (tmp_path / "counters.csv").write_text(MIG_COUNTERS)
    _rule_for_e2e(tmp_path / "rules.yml", "GpuMigInstanceFramebufferFull")
    _write_alerting_configs(tmp_path, hook_url, ports[0], ports[2])
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("alertmanager", "collector", "prometheus")}  # noqa: SIM115
    processes: list[subprocess.Popen] = []
    deadline = time.monotonic() + ALERT_DEADLINE_S
    try:
        _start_alerting(tmp_path, "mig-leak.toml", ports, logs, processes, "-f", str(tmp_path / "counters.csv"))
        firing: dict[str, dict] = {}
        for alert in _alerts_until(notices, deadline, processes, lambda: f"only {sorted(firing)} of the two "
                                   "instances fired"):
            labels = alert["labels"]
            assert labels["alertname"] == "GpuMigInstanceFramebufferFull" and labels["gpu"] == "0", alert
            if alert["status"] == "firing":
                firing[labels["GPU_I_ID"]] = alert
            if len(firing) == 2:
                break
        assert {i: a["labels"]["GPU_I_PROFILE"] for i, a in firing.items()} == {"0": "3g.40gb", "1": "1g.10gb"}
        alert = firing["1"]
        labels = alert["labels"]
        assert labels["severity"] == "warning" and labels["modelName"] == "NVIDIA H100 80GB HBM3"
        assert labels["UUID"].startswith("GPU-") and labels["hostname"]
        assert alert["annotations"]["summary"].startswith(f"MIG instance 1 (1g.10gb) of GPU 0 on {labels['hostname']} ")
    finally:
        for process in reversed(processes):
            stop_process(process)
        close_and_print_logs(tmp_path, logs)


def _alerts_until(notices: queue.Queue, deadline: float, processes: list[subprocess.Popen],
                  missing: Callable[[], str]):
    """Each alert the webhook hears, while every process runs; fails with ``missing()`` past the deadline."""
    while True:
        assert time.monotonic() < deadline, missing()
        for process in processes:
            assert process.poll() is None, f"{process.args[0]} exited with {process.returncode}"
        try:
            notice = notices.get(timeout=0.5)
        except queue.Empty:
            continue
        yield from notice["alerts"]


def _first_firing(notices: queue.Queue, alertname: str, deadline: float, processes: list[subprocess.Popen]) -> dict:
    missing = f"no firing {alertname} reached the webhook within {ALERT_DEADLINE_S} s"
    for alert in _alerts_until(notices, deadline, processes, lambda: missing):
        assert alert["labels"].get("gpu") != "0", f"the healthy GPU 0 alerted: {alert}"
        if alert["labels"].get("alertname") == alertname and alert["status"] == "firing":
            return alert
    raise AssertionError("unreachable: _alerts_until fails at the deadline")
