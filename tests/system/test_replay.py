"""A flight recording replayed through the real collector: ``--sim RECORDING.parquet``.

The collector runs as a process on the simulated engine replaying a small
recording, and /metrics serves the recorded readings as they change (a power
step), the model's values for what was not recorded, a recorded XID with its
code and count, and a GPU that fell off the bus dropping out.  An unreadable
recording is one line naming the file and the problem.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support import (
    COLLECTOR,
    PROMETHEUS,
    close_and_print_logs,
    free_port,
    launch,
    log_messages,
    prometheus_query,
    samples,
    start_prometheus,
    stop_process,
    wait_for,
    write_recording,
)
from test_fault_scenarios import Collector, last_xids, temps, xid_counts
from test_faults import _env

pytestmark = pytest.mark.slow
pytest.importorskip("pyarrow")

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "gpu-alerts.yml"

GPU_TEMP, POWER, XID = 150, 155, 230
STEP_AT_S = 8.0          # GPU 0's power goes from 100 W to 500 W
LOST_AT_S = 9.0          # GPU 1's readings go blank, after an XID 79
END_S = 12.0
RECORDED = {0: ("GPU-5c1e0a7b-0d2f-4e88-9a61-3b7c2d1e0f42", "00000000:C1:00.0"),
            1: ("GPU-9f3b2a10-77c4-4d0e-8b2a-6e5d4c3b2a19", "00000000:C2:00.0")}
COUNTERS = ("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
            "DCGM_FI_DEV_POWER_USAGE, gauge, power\n"
            "DCGM_FI_DEV_MEM_CLOCK, gauge, memory clock (not recorded)\n"
            "DCGM_FI_DEV_XID_ERRORS, gauge, last XID\n"
            "DCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs in the window\n")


def recording(folder: Path) -> Path:
    rows = []
    for i in range(round(END_S * 10)):
        t = i / 10
        rows += [(t, 0, POWER, 100.0 if t < STEP_AT_S else 500.0), (t, 0, GPU_TEMP, 47.0)]
        lost = t >= LOST_AT_S
        rows += [(t, 1, POWER, None if lost else 250.0), (t, 1, GPU_TEMP, None if lost else 52.0)]
    rows += [(2.0, 0, XID, 48.0), (LOST_AT_S - 0.05, 1, XID, 79.0)]
    gpus = [{"gpu": i, "model": "NVIDIA H200", "uuid": uuid, "pci_bus_id": bus} for i, (uuid, bus) in RECORDED.items()]
    return write_recording(folder / "fault.parquet", rows, {
        "format_version": 1, "host": "node-7", "gpus": gpus, "counters": "default-counters.csv",
        "trigger": {"kind": "xid", "time": "2027-01-15T08:00:09Z", "gpus": [1], "detail": "XID 79"}})


def power(text: str) -> dict[str, float]:
    return {labels["gpu"]: v for name, labels, v in samples(text) if name == "DCGM_FI_DEV_POWER_USAGE"}


def test_a_recording_replays_through_the_collector(tmp_path):
    recording(tmp_path)
    collector = Collector(tmp_path, "--sim", "fault.parquet", "--window", "1", counters=COUNTERS)
    try:
        first = collector.metrics()
        assert power(first) == {"0": 100.0, "1": 250.0}
        assert temps(first) == {"0": 47.0, "1": 52.0}
        # the series carry the recorded GPUs' identity, as the alerts name them
        identity = {int(labels["gpu"]): (labels["UUID"], labels["pci_bus_id"]) for name, labels, _ in samples(first)
                    if name == "DCGM_FI_DEV_GPU_TEMP"}
        assert identity == RECORDED
        # not recorded: the recorded model's own memory clock, under the recorded model's name
        clocks = {(labels["gpu"], labels["modelName"]): v for name, labels, v in samples(first)
                  if name == "DCGM_FI_DEV_MEM_CLOCK"}
        assert clocks == {("0", "NVIDIA H200"): 3201.0, ("1", "NVIDIA H200"): 3201.0}

        text = wait_for(lambda: (t := collector.metrics()) and 0 in last_xids(t) and t, timeout=30,
                        what="the recorded XID 48", log=collector.log)
        assert last_xids(text)[0][0] == "48" and last_xids(text)[0][2] == 48.0
        assert xid_counts(text)[(0, 48)] == 1.0

        text = wait_for(lambda: (t := collector.metrics()) and power(t).get("0") == 500.0 and t, timeout=30,
                        what="the recorded power step", log=collector.log)
        # GPU 1 fell off the bus: its XID 79, then its series stop while GPU 0 carries on
        text = wait_for(lambda: (t := collector.metrics()) and 1 in last_xids(t) and t, timeout=30,
                        what="the recorded XID 79", log=collector.log)
        assert last_xids(text)[1][0] == "79"
        text = wait_for(lambda: (t := collector.metrics()) and "1" not in temps(t) and t, timeout=30,
                        what="GPU 1 lost", log=collector.log)
        assert temps(text) == {"0": 47.0}
        assert power(text) == {"0": 500.0}
        wait_for(lambda: "GPU 1 is lost" in collector.log(), timeout=30, what="the lost GPU's log line",
                 log=collector.log)
    finally:
        collector.end()


def test_an_unreadable_recording_is_one_line_and_exit_1(tmp_path):
    write_recording(tmp_path / "short.parquet", [(0.0, 0, POWER, 1.0, "FINE")])
    (tmp_path / "notes.parquet").write_text("not a recording\n")
    runs = {name: launch(COLLECTOR, "-a", "127.0.0.1:0", "--sim", name, cwd=tmp_path, env=_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name in ("short.parquet", "notes.parquet", "gone.parquet")}
    errors = {}
    for name, proc in runs.items():
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, (name, err)
        assert err.count("\n") == 1, err
        errors[name] = err.strip()
    assert errors["short.parquet"] == ("dcgm-collector: error: --sim short.parquet: row 1: status 'FINE' is not "
                                       "OK, BLANK, NOT_SUPPORTED")
    assert errors["notes.parquet"].startswith("dcgm-collector: error: --sim notes.parquet: not a Parquet file (")
    assert errors["gone.parquet"] == "dcgm-collector: error: --sim gone.parquet: cannot read recording: no such file"


def test_what_a_replay_cannot_keep_is_a_warning_in_the_log(tmp_path):
    write_recording(tmp_path / "bare.parquet", [(t / 10, 0, POWER, 123.0) for t in range(20)])
    collector = Collector(tmp_path, "--sim", "bare.parquet", counters=COUNTERS)
    try:
        assert ("WARNING", "--sim bare.parquet: no sidecar bare.parquet.json: the GPUs are the recorded rows' and "
                "their model is taken to be the H100") in log_messages(collector.log())
        assert power(collector.metrics()) == {"0": 123.0}
    finally:
        collector.end()


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
def test_the_shipped_alerts_fire_on_a_replayed_recording(tmp_path):
    """The recorded XID and the GPU that fell off the bus, through a real Prometheus and the shipped rules."""
    recording(tmp_path)
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "GpuLost":
                rule["for"] = "1s"      # the shipped 1m, shortened for a test
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    collector = Collector(tmp_path, "--sim", "fault.parquet", "--window", "1", counters=COUNTERS)
    port = free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
        "rule_files: [rules.yml]\nscrape_configs:\n  - job_name: dcgm\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{collector.port}']\n")
    logs = {"prometheus": (tmp_path / "prometheus.log").open("wb")}
    prometheus = start_prometheus(tmp_path / "prometheus.yml", tmp_path, port, logs["prometheus"])
    url = f"http://127.0.0.1:{port}"

    def firing(alertname: str) -> set[tuple[str, str, str | None]]:
        """(gpu, UUID, XID) of each firing alert; the XID rule names it err_code or xid, by the family."""
        try:
            found = prometheus_query(url, f'ALERTS{{alertname="{alertname}", alertstate="firing"}}')
        except OSError:
            return set()
        return {(a["metric"]["gpu"], a["metric"]["UUID"], a["metric"].get("err_code") or a["metric"].get("xid"))
                for a in found}

    try:
        deadline = time.monotonic() + 60
        while not (xid := firing("GpuXidError")) or not (lost := firing("GpuLost")):
            assert time.monotonic() < deadline, "the replayed faults did not fire their alerts"
            assert prometheus.poll() is None, "prometheus exited"
            time.sleep(0.5)
        assert ("0", RECORDED[0][0], "48") in xid
        assert lost == {("1", RECORDED[1][0], None)}
    finally:
        stop_process(prometheus)
        collector.end()
        close_and_print_logs(tmp_path, logs)
