"""NVIDIA's own Grafana dashboard for dcgm-exporter (grafana.com 12239) shows data for every panel.

Users who replace dcgm-exporter keep that dashboard.  Its panel queries and
its two template variable queries are facts in tests/data/grafana_12239_queries.json.
Two collectors run on the simulator, one with the shipped default counters
file and one with NVIDIA's default-counters.csv (rebuilt from its enabled
rows, as tests/system/test_nvidia_counters_files.py does), and a real
Prometheus scrapes both.  Each query is run the way Grafana runs it: the
variable queries through the series API, each panel as a range query over
the dashboard's 15 minutes (and as an instant query), with ``$instance`` and
``$gpu`` set to ``.*`` (All) and to one value of each variable, escaped and
wrapped as Grafana does for a multi-value variable.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from support import (
    COLLECTOR,
    PROMETHEUS,
    close_and_print_logs,
    free_port,
    get_json,
    http_get,
    launch,
    prometheus_query,
    start_prometheus,
    stop_process,
    wait_until,
    write_scrape_config,
)
from test_cli import clean_env
from test_nvidia_counters_files import DEFAULT_ROWS, counters_text

from dcgm_collector.catalog.counters import default_counters_path, load_counters

DASHBOARD = json.loads((Path(__file__).resolve().parents[1] / "data" / "grafana_12239_queries.json").read_text())
PANELS = DASHBOARD["panels"]
VARIABLES = {v["name"]: v["query"] for v in DASHBOARD["variables"]}
# Grafana's label_values(METRIC, LABEL)
LABEL_VALUES = re.compile(r"label_values\(\s*([^,]+?)\s*,\s*(\w+)\s*\)")
# a metric name right before its label matchers
METRIC_NAME = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{")
# the characters Grafana puts a backslash before in a value of a multi-value variable in a regex matcher
REGEX_SPECIAL = set("$^*{}[]'+?.()|")
NODE = """seed = 7
[[gpu]]
model = "H100"
count = 2
workload = "training"
"""
GPUS = ["0", "1"]
COUNTERS_FILES = ["shipped default-counters.csv", "NVIDIA's default-counters.csv"]


def panel_metric(panel: dict) -> str:
    [name] = set(METRIC_NAME.findall(panel["expr"]))
    return name


def grafana_value(*values: str) -> str:
    """The text Grafana puts in place of a multi-value variable holding ``values`` inside a =~"..." matcher:
    each value with its regex characters escaped (a backslash, doubled for the PromQL string), or-ed."""
    def escape(value: str) -> str:
        return "".join("\\\\" + c if c in REGEX_SPECIAL else "\\\\\\\\" if c == "\\" else c for c in value)
    return "(" + "|".join(escape(v) for v in values) + ")"


def panel_query(panel: dict, instance: str, gpu: str) -> str:
    return panel["expr"].replace("$instance", instance).replace("$gpu", gpu)


def variable_values(prometheus_url: str, name: str) -> list[str]:
    """The values of a template variable, found as Grafana 6.7 finds label_values(METRIC, LABEL): the label of
    each series the series API lists for METRIC over the dashboard's time range."""
    metric, label = LABEL_VALUES.fullmatch(VARIABLES[name]).groups()
    now = time.time()
    answer = get_json(f"{prometheus_url}/api/v1/series?" + urllib.parse.urlencode(
        {"match[]": metric, "start": f"{now - 15 * 60:.3f}", "end": f"{now:.3f}"}))
    assert answer["status"] == "success", answer
    return sorted({series[label] for series in answer["data"] if label in series})


def range_query(prometheus_url: str, promql: str) -> list[dict]:
    """The result matrix of a range query over the last 15 minutes, a point every 5 s, as a graph panel asks."""
    now = time.time()
    answer = get_json(f"{prometheus_url}/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": promql, "start": f"{now - 15 * 60:.3f}", "end": f"{now:.3f}", "step": "5"}))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def finite_values(result: list[dict]) -> list[float]:
    """Every finite number in an instant vector or a range matrix."""
    points = [p for series in result for p in (series["values"] if "values" in series else [series["value"]])]
    return [float(v) for _, v in points if math.isfinite(float(v))]


def panels_with_data(prometheus_url: str, instance: str, gpu: str) -> dict[str, tuple[int, int]]:
    """Each panel's title -> (series of its range query, series of its instant query) with a finite value."""
    out = {}
    for panel in PANELS:
        promql = panel_query(panel, instance, gpu)
        ranged = [s for s in range_query(prometheus_url, promql) if finite_values([s])]
        instant = [s for s in prometheus_query(prometheus_url, promql) if finite_values([s])]
        out[panel["title"]] = (len(ranged), len(instant))
    return out


def test_the_dashboard_facts_name_every_panel_once():
    assert (DASHBOARD["title"], DASHBOARD["uid"], DASHBOARD["gnetId"]) == (
        "NVIDIA DCGM Exporter Dashboard", "Oxed_c6Wz", 12239)
    assert len(PANELS) == 8 and len({p["title"] for p in PANELS}) == 8
    for panel in PANELS:
        assert '{instance=~"$instance", gpu=~"$gpu"}' in panel["expr"], panel
    assert VARIABLES == {"instance": "label_values(DCGM_FI_DEV_GPU_TEMP, instance)",
                         "gpu": "label_values(DCGM_FI_DEV_GPU_TEMP, gpu)"}


@pytest.mark.parametrize("counters", ["shipped", "nvidia"])
def test_both_default_counters_files_export_every_panel_s_metric(tmp_path, counters):
    if counters == "shipped":
        path = default_counters_path()
    else:
        path = tmp_path / "default-counters.csv"
        path.write_text(counters_text(DEFAULT_ROWS))
    exported = {c.name for c in load_counters(path).counters if c.prom_type != "label"}
    missing = [(p["title"], panel_metric(p)) for p in PANELS if panel_metric(p) not in exported]
    assert missing == [], f"{path} lacks the metric of panels {missing}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """Prometheus scraping two collectors: {counters file: instance}, and Prometheus's URL."""
    if PROMETHEUS is None:
        pytest.skip("prometheus is not installed (Debian package 'prometheus')")
    work = tmp_path_factory.mktemp("grafana")
    (work / "node.toml").write_text(NODE)
    nvidia = work / "default-counters.csv"
    nvidia.write_text(counters_text(DEFAULT_ROWS))
    logs, procs, instances = {}, [], {}
    try:
        # no -f: the file the collector uses by default, as an operator runs it
        for name, flags in zip(COUNTERS_FILES, ([], ["-f", str(nvidia)])):
            port = free_port()
            log_name = f"collector-{len(procs)}"
            logs[log_name] = open(work / f"{log_name}.log", "wb")  # noqa: SIM115 - closed below
            procs.append(launch(COLLECTOR, "--sim", str(work / "node.toml"), "-a", f"127.0.0.1:{port}", *flags,
                                cwd=work, env=clean_env(), stdout=logs[log_name], stderr=subprocess.STDOUT))
            instances[name] = f"127.0.0.1:{port}"
            wait_until(f"{name}: collector /health", lambda p=port: http_get(f"http://127.0.0.1:{p}/health")[0] == 200,
                       procs[-1], 30)
        prometheus_port = free_port()
        config = write_scrape_config(work / "prometheus.yml", *instances.values())
        logs["prometheus"] = open(work / "prometheus.log", "wb")  # noqa: SIM115 - closed below
        procs.append(start_prometheus(config, work, prometheus_port, logs["prometheus"]))
        prometheus_url = f"http://127.0.0.1:{prometheus_port}"
        wait_until("prometheus ready", lambda: http_get(f"{prometheus_url}/-/ready")[0] == 200, procs[-1], 30)
        # until every panel has data for both collectors (profiling fields come a few seconds after the
        # others), for at most a minute: past that the tests below say which panel is empty
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                min(counts) > 0 for instance in instances.values()
                for counts in panels_with_data(prometheus_url, grafana_value(instance), ".*").values()):
            time.sleep(1)
        yield instances, prometheus_url
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        close_and_print_logs(work, logs)


@pytest.mark.slow
def test_the_variable_queries_list_both_collectors_and_their_gpus(stack):
    instances, prometheus_url = stack
    assert variable_values(prometheus_url, "instance") == sorted(instances.values())
    assert variable_values(prometheus_url, "gpu") == GPUS


@pytest.mark.slow
def test_every_panel_has_data_with_all_instances_and_all_gpus(stack):
    _, prometheus_url = stack
    counts = panels_with_data(prometheus_url, ".*", ".*")
    # two collectors of two GPUs: four series, or one for a panel that aggregates them
    expected = {p["title"]: (1, 1) if p["expr"].startswith(("avg(", "sum(")) else (4, 4) for p in PANELS}
    assert counts == expected


@pytest.mark.slow
@pytest.mark.parametrize("counters", COUNTERS_FILES)
def test_every_panel_has_data_for_one_instance_and_one_gpu(stack, counters):
    instances, prometheus_url = stack
    # one of the values the variable queries offer: this collector's instance, and each GPU in turn
    instance = instances[counters]
    assert instance in variable_values(prometheus_url, "instance")
    for gpu in variable_values(prometheus_url, "gpu"):
        counts = panels_with_data(prometheus_url, grafana_value(instance), grafana_value(gpu))
        assert counts == {p["title"]: (1, 1) for p in PANELS}, (counters, gpu)
        for panel in PANELS:
            [series] = prometheus_query(prometheus_url, panel_query(panel, grafana_value(instance), grafana_value(gpu)))
            if not panel["expr"].startswith(("avg(", "sum(")):
                assert (series["metric"]["instance"], series["metric"]["gpu"]) == (instance, gpu), panel["title"]


@pytest.mark.slow
def test_the_panels_show_the_simulated_values_in_the_dashboard_s_units(stack):
    _, prometheus_url = stack

    def values(title: str) -> list[float]:
        [panel] = [p for p in PANELS if p["title"] == title]
        return finite_values(prometheus_query(prometheus_url, panel_query(panel, ".*", ".*")))

    # celsius, watts (H100 SXM: up to 700 W), MHz times 10^6 as hertz, percent, a 0-1 ratio, MiB of 80 GB
    assert all(20 <= v <= 95 for v in values("GPU Temperature"))
    assert all(0 < v <= 700 for v in values("GPU Power Usage"))
    [total] = values("GPU Power Total")
    assert total == pytest.approx(sum(values("GPU Power Usage")), rel=0.2)
    assert all(1e8 <= v <= 2.1e9 for v in values("GPU SM Clocks"))
    assert all(0 <= v <= 100 for v in values("GPU Utilization"))
    assert all(0 <= v <= 1 for v in values("Tensor Core Utilization"))
    assert all(0 < v <= 81559 for v in values("GPU Framebuffer Mem Used"))
