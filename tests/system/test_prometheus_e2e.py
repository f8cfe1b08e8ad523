"""A real Prometheus server scrapes the collector on loopback every second.

The collector runs as an operator would run it (the console entry point, on
the simulator); Prometheus is Debian's package.  PromQL through Prometheus's
HTTP API must return the simulated values with dcgm-exporter's labels, and a
300 ms load spike that the last-value series mostly misses must show in every
scrape of the `_max` window family.
"""

from __future__ import annotations

import subprocess
import time

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

# 300 ms bursts every 2.7 s: the period is not a multiple of the 1 s scrape, so
# the scrape times drift across the burst phase instead of locking onto it
SPIKES = """seed = 11
[[gpu]]
model = "H100"
count = 4
workload = "spikes"
utilization = 0.05
spike_utilization = 1.0
spike_period = 2.7
spike_length = 0.3
"""
H100_FB_TOTAL_MIB = 81559


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    work = tmp_path_factory.mktemp("e2e")
    collector_port, prometheus_port = free_port(), free_port()
    scenario = work / "spikes.toml"
    scenario.write_text(SPIKES)
    collector_log = open(work / "collector.log", "wb")  # noqa: SIM115 - closed below
    collector = launch(COLLECTOR, "--sim", str(scenario), "-a", f"127.0.0.1:{collector_port}", "-c", "1000",
                       "--watch-interval", "100", "--window", "15", "--aggregations", "max",
                       cwd=work, stdout=collector_log, stderr=subprocess.STDOUT)
    collector_url = f"http://127.0.0.1:{collector_port}"
    config = write_scrape_config(work / "prometheus.yml", f"127.0.0.1:{collector_port}")
    prometheus_log = open(work / "prometheus.log", "wb")  # noqa: SIM115 - closed below
    prometheus = start_prometheus(config, work, prometheus_port, prometheus_log)
    prometheus_url = f"http://127.0.0.1:{prometheus_port}"
    try:
        wait_until("collector /health", lambda: http_get(f"{collector_url}/health")[0] == 200, collector, 30)
        wait_until("prometheus ready", lambda: http_get(f"{prometheus_url}/-/ready")[0] == 200, prometheus, 30)
        # 20 s of 1 s scrapes: several spikes (every 2 s) and a full 15 s window
        time.sleep(20)
        yield collector_url, prometheus_url
    finally:
        stop_process(prometheus)
        stop_process(collector)
        close_and_print_logs(work, {"collector": collector_log, "prometheus": prometheus_log})


def test_prometheus_scrapes_every_gpu_with_dcgm_exporter_labels(stack):
    _, prometheus_url = stack
    up = prometheus_query(prometheus_url, 'up{job="dcgm"}')
    assert [float(r["value"][1]) for r in up] == [1.0]
    temps = prometheus_query(prometheus_url, "DCGM_FI_DEV_GPU_TEMP")
    assert sorted(r["metric"]["gpu"] for r in temps) == ["0", "1", "2", "3"]
    for r in temps:
        labels = r["metric"]
        assert labels["modelName"] == "NVIDIA H100 80GB HBM3"
        assert labels["device"] == f"nvidia{labels['gpu']}"
        assert labels["UUID"].startswith("GPU-")
        assert labels["pci_bus_id"]
        assert labels["DCGM_FI_DRIVER_VERSION"]
        assert 20 <= float(r["value"][1]) <= 95


def test_promql_returns_the_simulated_framebuffer(stack):
    _, prometheus_url = stack
    total = prometheus_query(prometheus_url,
                   "DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_RESERVED")
    assert len(total) == 4
    assert {float(r["value"][1]) for r in total} == {H100_FB_TOTAL_MIB}


def test_promql_sees_the_same_values_the_collector_serves(stack):
    collector_url, prometheus_url = stack
    # energy only grows: what Prometheus stored last is at most what is served now
    served = {}
    for line in http_get(f"{collector_url}/metrics")[1].decode().splitlines():
        if line.startswith("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{"):
            gpu = line.split('gpu="')[1].split('"')[0]
            served[gpu] = float(line.rsplit(" ", 1)[1])
    stored = {r["metric"]["gpu"]: float(r["value"][1])
              for r in prometheus_query(prometheus_url, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")}
    assert stored.keys() == served.keys() == {"0", "1", "2", "3"}
    for gpu, value in stored.items():
        assert 0 < value <= served[gpu]
        # H100 at a 5 % floor with spikes draws under 700 W: within 5 s of energy
        assert served[gpu] - value < 700 * 5 * 1000


def test_a_sub_second_spike_the_last_value_misses_shows_in_max(stack):
    _, prometheus_url = stack
    # every scrape's 15 s _max window holds 100 % spikes (one every 2.7 s)...
    spiky = prometheus_query(prometheus_url, "min_over_time(DCGM_FI_DEV_GPU_UTIL_max[12s])")
    assert len(spiky) == 4
    assert {float(r["value"][1]) for r in spiky} == {100.0}
    # ...while the last value, scraped once a second, lands on one in about nine
    # scrapes: over 12 s (4+ spikes) it misses most of them
    share = prometheus_query(prometheus_url, "avg_over_time((DCGM_FI_DEV_GPU_UTIL >= bool 95)[12s:1s])")
    assert len(share) == 4
    assert all(float(r["value"][1]) <= 0.34 for r in share), share
