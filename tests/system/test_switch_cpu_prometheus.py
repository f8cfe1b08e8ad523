"""A real Prometheus scrapes a collector on an NvSwitch node with a Grace CPU: every level's series
arrive in its database with dcgm-exporter's labels (the shipped ``nvswitch-grace`` scenario)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import (
    COLLECTOR,
    PROMETHEUS,
    close_and_print_logs,
    free_port,
    http_get,
    launch,
    prometheus_query,
    start_prometheus,
    stop_process,
    wait_until,
    write_scrape_config,
)

pytestmark = [
    pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')"),
    pytest.mark.slow,
]

COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_NVLINK_GET_STATE, gauge, NvLink state (1 up).
DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX, counter, NvSwitch port transmit throughput (in KiB).
DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS, gauge, NvSwitch temperature (in C).
DCGM_FI_DEV_CPU_POWER_WATTS, gauge, CPU power (in W).
DCGM_FI_DEV_CPU_UTIL_TOTAL, gauge, CPU utilization (ratio).
"""


@contextlib.contextmanager
def scraped_node(tmp_path: Path, sim: str, counters: str) -> Iterator[str]:
    """A collector on the simulated node ``sim`` with ``counters``, scraped by a real Prometheus;
    yields Prometheus' URL once the switches' series are in and a scrape or two more has landed."""
    collector_port, prometheus_port = free_port(), free_port()
    (tmp_path / "levels.csv").write_text(counters)
    collector_log = open(tmp_path / "collector.log", "wb")  # noqa: SIM115 - closed below
    collector = launch(COLLECTOR, "--sim", sim, "-f", str(tmp_path / "levels.csv"),
                       "-a", f"127.0.0.1:{collector_port}", "-c", "500", cwd=tmp_path, stdout=collector_log,
                       stderr=subprocess.STDOUT)
    config = write_scrape_config(tmp_path / "prometheus.yml", f"127.0.0.1:{collector_port}")
    prometheus_log = open(tmp_path / "prometheus.log", "wb")  # noqa: SIM115 - closed below
    prometheus = start_prometheus(config, tmp_path, prometheus_port, prometheus_log)
    url = f"http://127.0.0.1:{prometheus_port}"
    try:
        wait_until("collector /health", lambda: http_get(f"http://127.0.0.1:{collector_port}/health")[0] == 200,
                   collector, 30)
        wait_until("prometheus ready", lambda: http_get(f"{url}/-/ready")[0] == 200, prometheus, 30)
        wait_until("a scrape with the switches", lambda: len(prometheus_query(
            url, "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS")) == 4, prometheus, 30)
        time.sleep(1.5)   # a scrape or two more: every family is in
        yield url
    finally:
        stop_process(prometheus)
        stop_process(collector)
        close_and_print_logs(tmp_path, {"collector": collector_log, "prometheus": prometheus_log})


def test_prometheus_stores_every_level_with_its_labels(tmp_path):
    with scraped_node(tmp_path, "nvswitch-grace", COUNTERS) as url:
        links = prometheus_query(url, 'DCGM_FI_DEV_NVLINK_GET_STATE == 1')
        assert len(links) == 8 * 18
        assert {(r["metric"]["gpu"], r["metric"]["device"]) for r in links} == {
            (str(g), f"nvidia{g}") for g in range(8)}
        assert all(r["metric"]["gpu_uuid"].startswith("GPU-") and r["metric"]["model_name"] for r in links)
        ports = prometheus_query(url, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX")
        assert sorted((r["metric"]["nvswitch"], int(r["metric"]["nvlink"])) for r in ports) == [
            (f"nvswitch{s}", p) for s in range(4) for p in range(36)]
        switches = prometheus_query(url, "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS")
        assert sorted(r["metric"]["nvswitch"] for r in switches) == [f"nvswitch{s}" for s in range(4)]
        power = prometheus_query(url, "DCGM_FI_DEV_CPU_POWER_WATTS")
        assert [r["metric"]["cpu"] for r in power] == ["0"] and 100 < float(power[0]["value"][1]) < 300
        cores = prometheus_query(url, 'DCGM_FI_DEV_CPU_UTIL_TOTAL{cpucore!=""}')
        assert sorted(int(r["metric"]["cpucore"]) for r in cores) == list(range(72))
        assert {r["metric"]["cpu"] for r in cores} == {"0"}
        assert len(prometheus_query(url, 'DCGM_FI_DEV_CPU_UTIL_TOTAL{cpucore=""}')) == 1


# Every level at once: an HGX board whose first two H100s are split into MIG instances,
# its NvSwitches and a Grace host.
ALL_LEVELS_SCENARIO = """\
seed = 7
nvswitches = 4
grace_cpus = 1
cpu_cores = 8

[[gpu]]
model = "H100"
mig_profiles = ["3g.40gb", "2g.20gb", "1g.10gb"]
workload = "training"

[[gpu]]
model = "H100"
mig_instances = 7
workload = "training"

[[gpu]]
model = "H100"
count = 6
workload = "training"
"""
ALL_LEVELS_COUNTERS = COUNTERS + """\
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
"""


def test_prometheus_stores_mig_instances_links_switches_and_cpus_from_one_node(tmp_path):
    (tmp_path / "all-levels.toml").write_text(ALL_LEVELS_SCENARIO)
    with scraped_node(tmp_path, str(tmp_path / "all-levels.toml"), ALL_LEVELS_COUNTERS) as url:
        # MIG: GPUs 0 and 1 through their instances, with the parent GPU's labels and the instance's
        instances = prometheus_query(url, 'DCGM_FI_DEV_FB_USED{GPU_I_ID!=""}')
        assert sorted((r["metric"]["gpu"], r["metric"]["GPU_I_PROFILE"]) for r in instances) == sorted(
            [("0", "3g.40gb"), ("0", "2g.20gb"), ("0", "1g.10gb")] + [("1", "1g.10gb")] * 7)
        assert all(r["metric"]["modelName"] == "NVIDIA H100 80GB HBM3" for r in instances)
        assert len(prometheus_query(url, 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""}')) == 10
        # the six whole GPUs as GPUs
        whole = prometheus_query(url, 'DCGM_FI_DEV_FB_USED{GPU_I_ID=""}')
        assert sorted(r["metric"]["gpu"] for r in whole) == [str(g) for g in range(2, 8)]
        # the whole GPUs' NvLinks (a GPU in MIG mode has none, as DCGM reports it), the switches'
        # ports, the switches, the CPU and its cores
        links = prometheus_query(url, 'DCGM_FI_DEV_NVLINK_GET_STATE == 1')
        assert sorted({r["metric"]["gpu"] for r in links}) == [str(g) for g in range(2, 8)] and len(links) == 6 * 18
        ports = prometheus_query(url, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX")
        assert len(ports) == 4 * 36 and {r["metric"]["nvswitch"] for r in ports} == {f"nvswitch{s}" for s in range(4)}
        assert [r["metric"]["cpu"] for r in prometheus_query(url, "DCGM_FI_DEV_CPU_POWER_WATTS")] == ["0"]
        cores = prometheus_query(url, 'DCGM_FI_DEV_CPU_UTIL_TOTAL{cpucore!=""}')
        assert sorted(int(r["metric"]["cpucore"]) for r in cores) == list(range(8))
