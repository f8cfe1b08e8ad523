"""The Grafana dashboard generator: a valid classic dashboard model, panels for
exactly the families the counters file exports, and PromQL that returns data
from a real Prometheus scraping the collector on the simulator."""

from __future__ import annotations

import io
import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from kubelet_standin import Container, KubeletStandIn, Pod
from support import (
    COLLECTOR,
    DASHBOARD,
    PROMETHEUS,
    close_and_print_logs,
    command,
    free_port,
    get_json,
    http_get,
    is_ready,
    launch,
    prometheus_query,
    samples,
    start_prometheus,
    stop_process,
    wait_until,
    write_scrape_config,
)

from dcgm_collector.catalog.counters import default_counters_path, load_counters, parse_counters
from dcgm_collector.dashboard import build_dashboard, dashboard_json, main
from dcgm_collector.dashboard import panels as dashboard_panels

REPO = Path(__file__).resolve().parents[2]
DEPLOYED = REPO / "deploy" / "grafana" / "dcgm-collector-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
COLLECTOR_METRICS = {"dcgm_collector_up", "dcgm_collector_last_sample_age_seconds"}
# a metric name right before its label matchers, e.g. DCGM_FI_DEV_GPU_TEMP{...}
METRIC_NAME = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{")


def _default_dashboard(**kwargs) -> dict:
    return build_dashboard(load_counters(default_counters_path()), **kwargs)


def _dashboard_of(text: str, **kwargs) -> dict:
    return build_dashboard(parse_counters(text, "custom.csv"), **kwargs)


def _panels(dashboard: dict) -> list[dict]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def _by_title(dashboard: dict) -> dict[str, dict]:
    return {p["title"]: p for p in _panels(dashboard)}


def _exprs(panel: dict) -> list[str]:
    return [t["expr"] for t in panel["targets"]]


def _rows(dashboard: dict) -> list[str]:
    return [p["title"] for p in dashboard["panels"] if p["type"] == "row"]


# ---- the classic JSON model ------------------------------------------------------------

def _check_classic_model(dashboard: dict) -> None:
    json.loads(dashboard_json(dashboard))  # plain JSON, nothing Python-only
    assert dashboard["id"] is None
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 30
    assert dashboard["uid"] and dashboard["title"]
    assert dashboard["time"] == {"from": "now-1h", "to": "now"}
    assert dashboard["annotations"] == {"list": []}
    ids = [p["id"] for p in dashboard["panels"]]
    assert all(isinstance(i, int) for i in ids) and len(ids) == len(set(ids))

    cells: dict[tuple[int, int], int] = {}
    bottom = 0
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert set(grid) == {"x", "y", "w", "h"}
        assert 0 <= grid["x"] and 1 <= grid["w"] and grid["x"] + grid["w"] <= 24 and grid["h"] >= 1
        # in reading order, so that Grafana's float-up changes nothing
        assert grid["y"] >= bottom or panel["type"] != "row"
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"panel {panel['id']} overlaps panel {cells[(x, y)]}"
                cells[(x, y)] = panel["id"]
        if panel["type"] == "row":
            assert grid == {"x": 0, "y": grid["y"], "w": 24, "h": 1} and panel["panels"] == []
            bottom = grid["y"] + 1
        else:
            bottom = max(bottom, grid["y"] + grid["h"])

    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    for panel in _panels(dashboard):
        assert panel["type"] in ("timeseries", "stat", "state-timeline", "table")
        assert panel["datasource"] == DATASOURCE
        defaults = panel["fieldConfig"]["defaults"]
        steps = defaults["thresholds"]["steps"]
        assert defaults["thresholds"]["mode"] == "absolute" and steps[0]["value"] is None
        assert all(isinstance(s["value"], (int, float)) for s in steps[1:])
        assert panel["targets"], panel["title"]
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)) and all(ref_ids)
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE
            for used in re.findall(r"\$(\w+)", target["expr"]):
                assert used.startswith("__") or used in variables, (used, target["expr"])
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("instance", "gpu"):
        variable = variables[name]
        assert variable["type"] == "query" and variable["datasource"] == DATASOURCE
        assert variable["multi"] is True and variable["includeAll"] is True and variable["allValue"] == ".*"
        assert variable["query"].startswith("label_values(") and variable["definition"] == variable["query"]


def test_default_dashboard_is_a_valid_classic_model():
    dashboard = _default_dashboard()
    _check_classic_model(dashboard)
    variables = {v["name"]: v["query"] for v in dashboard["templating"]["list"]}
    assert variables["instance"] == "label_values(dcgm_collector_up, instance)"
    assert variables["gpu"] == 'label_values(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance"}, gpu)'
    assert _rows(dashboard) == ["Overview", "Utilisation", "Framebuffer", "Temperature", "Power",
                                "Clocks and throttling", "XID errors and health", "PCIe and NVLink",
                                "Other metrics", "Collector"]


def test_dcp_dashboard_is_a_valid_classic_model():
    _check_classic_model(build_dashboard(load_counters(default_counters_path("dcp-metrics.csv")),
                                         aggregations=("min", "max", "avg")))


# ---- generated from the file -----------------------------------------------------------------

def _metric_names(dashboard: dict) -> set[str]:
    names = set()
    for panel in _panels(dashboard):
        for expr in _exprs(panel):
            names.update(METRIC_NAME.findall(expr))
    return names


def test_panels_only_for_what_the_file_exports():
    counters = load_counters(default_counters_path())
    exported = {c.name for c in counters if not c.is_label}
    windows = {f"{c.name}_{a}" for c in counters for a in c.aggregations}
    names = _metric_names(_default_dashboard())
    assert names <= exported | windows | COLLECTOR_METRICS
    # every numeric row has a panel (DCGM_EXP_P2P_STATUS aside: not served)
    assert exported <= names


MINIMAL = """\
dcgm_gpu_temp, gauge, GPU temperature (in C)., max
DCGM_FI_DEV_PSTATE, gauge, Performance state.
DCGM_FI_DRIVER_VERSION, label, Driver Version
"""


def test_a_minimal_file_gives_only_its_panels():
    dashboard = _dashboard_of(MINIMAL)
    _check_classic_model(dashboard)
    assert _rows(dashboard) == ["Overview", "Temperature", "Other metrics", "Collector"]
    panels = _by_title(dashboard)
    assert set(panels) == {"Collectors up", "GPUs reporting", "Hottest GPU", "GPU temperature",
                           "Performance state", "Collector up", "Age of the newest sample"}
    # a legacy name gets the panel of its field, querying the name as written
    assert _exprs(panels["GPU temperature"]) == [
        'dcgm_gpu_temp{instance=~"$instance", gpu=~"$gpu"}',
        'max_over_time(dcgm_gpu_temp_max{instance=~"$instance", gpu=~"$gpu"}[$__rate_interval])']
    assert _exprs(panels["Performance state"]) == ['DCGM_FI_DEV_PSTATE{instance=~"$instance", gpu=~"$gpu"}']
    assert panels["Performance state"]["fieldConfig"]["defaults"]["unit"] == "short"
    assert _metric_names(dashboard) == {"dcgm_gpu_temp", "dcgm_gpu_temp_max", "DCGM_FI_DEV_PSTATE"} | COLLECTOR_METRICS
    variables = {v["name"]: v["query"] for v in dashboard["templating"]["list"]}
    assert variables["gpu"] == 'label_values(dcgm_gpu_temp{instance=~"$instance"}, gpu)'


def test_window_series_follow_the_file_and_the_aggregations_option():
    text = ("DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n"
            "DCGM_FI_DEV_SM_CLOCK, gauge, SM clock (in MHz)., min|avg\n"
            "DCGM_FI_DEV_XID_ERRORS, gauge, Last XID.\n"
            "DCGM_EXP_XID_ERRORS_COUNT, counter, XIDs in the window.\n")
    plain = _by_title(_dashboard_of(text))
    assert len(plain["Power draw"]["targets"]) == 1
    # min shown for a clock (a dip is throttling); avg is never drawn
    assert [t["legendFormat"] for t in plain["SM clock"]["targets"]] == [
        "{{hostname}} GPU {{gpu}}", "{{hostname}} GPU {{gpu}} min"]
    assert "_min{" in plain["SM clock"]["targets"][1]["expr"]

    with_max = _dashboard_of(text, aggregations=("max",))
    panels = _by_title(with_max)
    assert _exprs(panels["Power draw"])[1] == (
        'max_over_time(DCGM_FI_DEV_POWER_USAGE_max{instance=~"$instance", gpu=~"$gpu"}[$__rate_interval])')
    assert len(panels["SM clock"]["targets"]) == 3
    # event fields and DCGM_EXP_* counters have no window families
    assert not any(name.endswith("_max") and "XID" in name for name in _metric_names(with_max))
    assert with_max["description"] == "Generated by dcgm-collector dashboard from custom.csv with --aggregations max."


def test_units_and_scaling():
    panels = _by_title(_default_dashboard())

    def unit(title: str) -> str:
        return panels[title]["fieldConfig"]["defaults"]["unit"]

    assert unit("GPU temperature") == "celsius"
    assert unit("Power draw") == unit("Power from the energy counter") == "watt"
    assert unit("Framebuffer used") == "mbytes"  # MiB
    assert unit("GPU utilisation") == "percent"
    assert unit("Tensor pipe active") == "percentunit"
    assert unit("PCIe transmit") == "Bps"
    assert unit("SM clock") == "hertz"
    assert all(expr.endswith(" * 1000000") for expr in _exprs(panels["SM clock"]))
    assert _exprs(panels["Power from the energy counter"]) == [
        'rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{instance=~"$instance", gpu=~"$gpu"}[$__rate_interval]) / 1000']
    util = panels["GPU utilisation"]["fieldConfig"]["defaults"]
    assert (util["min"], util["max"]) == (0, 100)


def test_temperature_panel_draws_the_alert_threshold():
    panel = _by_title(_default_dashboard())["GPU temperature"]
    defaults = panel["fieldConfig"]["defaults"]
    assert {"color": "red", "value": 85} in defaults["thresholds"]["steps"]
    assert defaults["custom"]["thresholdsStyle"] == {"mode": "line"}
    assert [t["legendFormat"] for t in panel["targets"]] == ["{{hostname}} GPU {{gpu}}",
                                                              "{{hostname}} GPU {{gpu}} max"]


def test_legends_name_host_and_gpu():
    checked = 0
    for panel in _panels(_dashboard_of(E2E_COUNTERS_EXTRA + _default_rows())):
        for target in panel["targets"]:
            if "gpu=~" in target["expr"] and panel["type"] in ("timeseries", "state-timeline"):
                checked += 1
                assert target["legendFormat"].startswith("{{hostname}} GPU {{gpu}}"), (panel["title"], target)
    assert checked >= 10, f"only {checked} per-GPU panel queries found"


# ---- entity levels: MIG instances, NvLink links, NvSwitches, CPUs ------------------------------

MIG_COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB)., max
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_DRIVER_VERSION, label, Driver Version
"""
MIG_SELECTOR = '{instance=~"$instance", gpu=~"$gpu", GPU_I_ID!="", GPU_I_ID=~"$gpu_instance"}'
MIG_LEGEND = "{{hostname}} GPU {{gpu}}/{{GPU_I_PROFILE}}/{{GPU_I_ID}}"


def test_mig_instances_get_their_own_panels_and_variable():
    dashboard = _dashboard_of(MIG_COUNTERS, mig=True)
    _check_classic_model(dashboard)
    assert _rows(dashboard) == ["Overview", "Utilisation", "Framebuffer", "MIG instances", "Temperature",
                                "Collector"]
    in_mig = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            section = panel["title"]
        elif section == "MIG instances":
            in_mig.append(panel["title"])
    # framebuffer and profiling rows per instance; GPU utilisation has no instance series
    assert in_mig == ["Framebuffer used per instance (% of usable)", "Graphics engine active per instance",
                      "Framebuffer used per instance", "Framebuffer free per instance"]
    panels = _by_title(dashboard)
    assert [(t["expr"], t["legendFormat"]) for t in panels["Framebuffer used per instance"]["targets"]] == [
        (f"DCGM_FI_DEV_FB_USED{MIG_SELECTOR}", MIG_LEGEND),
        (f"max_over_time(DCGM_FI_DEV_FB_USED_max{MIG_SELECTOR}[$__rate_interval])", f"{MIG_LEGEND} max")]
    assert _exprs(panels["Framebuffer used per instance (% of usable)"])[0] == (
        f"100 * DCGM_FI_DEV_FB_USED{MIG_SELECTOR} / (DCGM_FI_DEV_FB_USED{MIG_SELECTOR} + "
        f"DCGM_FI_DEV_FB_FREE{MIG_SELECTOR})")
    assert panels["Framebuffer free per instance"]["fieldConfig"]["defaults"]["unit"] == "mbytes"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["gpu_instance"]["query"] == (
        'label_values(DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu", GPU_I_ID!=""}, GPU_I_ID)')
    assert variables["gpu_instance"]["multi"] and variables["gpu_instance"]["allValue"] == ".*"
    assert dashboard["description"].endswith("with --mig.")
    # the whole-GPU panels stay as they were
    assert _by_title(dashboard)["Framebuffer used"] == _by_title(_dashboard_of(MIG_COUNTERS))["Framebuffer used"]


def test_mig_panels_only_when_asked_for_and_when_a_row_has_instance_series():
    plain = _dashboard_of(MIG_COUNTERS)
    assert "MIG instances" not in _rows(plain)
    assert "gpu_instance" not in {v["name"] for v in plain["templating"]["list"]}
    # no framebuffer or profiling row: nothing to show per instance
    only_gpu = _dashboard_of("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n", mig=True)
    assert "MIG instances" not in _rows(only_gpu)
    assert "gpu_instance" not in {v["name"] for v in only_gpu["templating"]["list"]}


LEVEL_COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL, counter, NVLink flit CRC errors per link.
DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK, gauge, NVLink transmit per link (in MB/s).
DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS, gauge, NvSwitch temperature (in C)., max
DCGM_FI_DEV_NVSWITCH_POWER_VDD_WATTS, gauge, NvSwitch VDD power.
DCGM_FI_DEV_CPU_POWER_WATTS, gauge, CPU power (in W).
DCGM_FI_DEV_CPU_UTIL_TOTAL, gauge, CPU core utilisation.
"""


def test_cli_mig_option(tmp_path):
    counters = tmp_path / "c.csv"
    counters.write_text(MIG_COUNTERS)
    code, out, _ = _run_main(["-f", str(counters), "--mig"])
    assert code == 0
    assert json.loads(out) == build_dashboard(load_counters(counters), mig=True)
    assert "MIG instances" in _rows(json.loads(out))


def test_link_switch_and_cpu_rows_get_their_level_panels():
    dashboard = _dashboard_of(LEVEL_COUNTERS)
    _check_classic_model(dashboard)
    assert _rows(dashboard) == ["Overview", "Temperature", "NvLink links", "NvSwitches", "CPUs", "Collector"]
    targets = {p["title"]: [(t["expr"], t["legendFormat"]) for t in p["targets"]] for p in _panels(dashboard)}
    assert targets["Flit CRC errors per link"] == [
        ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL{instance=~"$instance", gpu=~"$gpu"}',
         "{{hostname}} GPU {{gpu}} link {{nvlink}}")]
    assert targets["Transmit per link"] == [
        ('DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK{instance=~"$instance", gpu=~"$gpu"}',
         "{{hostname}} GPU {{gpu}} link {{nvlink}}")]
    assert targets["NvSwitch temperature"] == [
        ('DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS{instance=~"$instance"}', "{{hostname}} NvSwitch {{nvswitch}}"),
        ('max_over_time(DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS_max{instance=~"$instance"}[$__rate_interval])',
         "{{hostname}} NvSwitch {{nvswitch}} max")]
    # a field with no special panel still lands in its level's row
    assert targets["NvSwitch VDD power"] == [
        ('DCGM_FI_DEV_NVSWITCH_POWER_VDD_WATTS{instance=~"$instance"}', "{{hostname}} NvSwitch {{nvswitch}}")]
    assert targets["CPU power"] == [('DCGM_FI_DEV_CPU_POWER_WATTS{instance=~"$instance"}', "{{hostname}} CPU {{cpu}}")]
    assert targets["CPU core utilisation"] == [
        ('DCGM_FI_DEV_CPU_UTIL_TOTAL{instance=~"$instance"}', "{{hostname}} CPU {{cpu}} core {{cpucore}}")]
    units = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in _panels(dashboard)}
    assert (units["Transmit per link"], units["NvSwitch temperature"], units["CPU power"]) == (
        "MBs", "celsius", "watt")
    # none of it without such rows
    assert not {"NvLink links", "NvSwitches", "CPUs"} & set(_rows(_default_dashboard()))


def test_a_fixed_datasource_replaces_the_variable():
    dashboard = _default_dashboard(datasource_uid="prom-main", title="Cluster GPUs", uid="gpus")
    assert (dashboard["title"], dashboard["uid"]) == ("Cluster GPUs", "gpus")
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["instance", "gpu"]
    assert {json.dumps(p["datasource"]) for p in _panels(dashboard)} == {
        json.dumps({"type": "prometheus", "uid": "prom-main"})}
    assert "${datasource}" not in dashboard_json(dashboard)


def test_unknown_aggregation_is_refused():
    with pytest.raises(ValueError, match="median"):
        _default_dashboard(aggregations=("median",))


def test_clock_reasons_and_health_values_match_the_exposition():
    from dcgm_collector.expose import clock_events, health_status
    bits = dict(clock_events.CLOCK_EVENTS)
    wanted = {"power cap": "power_cap", "HW slowdown": "hw_slowdown", "SW thermal": "sw_thermal",
              "HW thermal": "hw_thermal", "power brake": "hw_power_brake"}
    assert {reason: bit for reason, bit in dashboard_panels.CLOCK_EVENT_REASONS} == {
        reason: bits[name] for reason, name in wanted.items()}
    assert {text.upper(): value for value, text, _ in dashboard_panels.HEALTH_RESULTS} == health_status.HEALTH_VALUES


# ---- the command line and the shipped example -------------------------------------------------

def _run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def test_cli_writes_the_dashboard(tmp_path):
    counters = tmp_path / "c.csv"
    counters.write_text(MINIMAL)
    code, out, _ = _run_main(["-f", str(counters), "--aggregations", "min|max"])
    assert code == 0
    assert json.loads(out) == build_dashboard(load_counters(counters), aggregations=("min", "max"))
    target = tmp_path / "d.json"
    assert _run_main(["-f", str(counters), "-o", str(target)])[0] == 0
    assert _run_main(["-f", str(counters), "--check", str(target)])[0] == 0
    code, _, err = _run_main(["-f", str(counters), "--aggregations", "max", "--check", str(target)])
    assert code == 1 and "out of date" in err


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("DCGM_FI_DEV_GPU_TEMPP, gauge, typo\n")
    code, out, err = _run_main(["-f", str(bad)])
    assert (code, out) == (1, "") and f"{bad}:1:" in err
    code, _, err = _run_main(["-f", str(tmp_path / "missing.csv")])
    assert code == 1 and "cannot read" in err
    code, _, err = _run_main(["--aggregations", "median"])
    assert code == 2 and "median" in err


# the shipped dashboard has the processes row: its panels say "No data" until the collector runs with --processes
SHIPPED_OPTIONS = ["--processes"]


def test_shipped_dashboard_is_up_to_date():
    code, _, err = _run_main([*SHIPPED_OPTIONS, "--check", str(DEPLOYED)])
    assert code == 0, (f"{err}regenerate with: python -m dcgm_collector.dashboard {' '.join(SHIPPED_OPTIONS)} "
                       f"-o deploy/grafana/dcgm-collector-dashboard.json")


def test_module_runs_as_a_command():
    result = subprocess.run(command(DASHBOARD, *SHIPPED_OPTIONS), capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == DEPLOYED.read_text()


# ---- end to end: every panel's PromQL against a real Prometheus ------------------------------

# every panel of the shipped default file, plus the rows that are off by
# default but have panels of their own (throttling, XID counts, health, ECC)
# and one field with no special panel.
E2E_COUNTERS_EXTRA = """\
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, gauge, Clock throttle reasons.
DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).
DCGM_FI_DEV_THERMAL_VIOLATION, counter, Throttling duration due to thermal constraints (in ns).
DCGM_EXP_CLOCK_EVENTS_COUNT, counter, reported clock events
DCGM_EXP_XID_ERRORS_COUNT, counter, reported XIDs during last window
DCGM_EXP_GPU_HEALTH_STATUS, counter, DCGM reported health status
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_PROF_SM_ACTIVE, gauge, The ratio of cycles an SM has at least 1 warp assigned., max
DCGM_FI_DEV_PSTATE, gauge, Performance state.
"""

# Two H100s capped at 200 W, so power capping (clock event, violation time)
# is on from the start; XIDs early on, one of them a double-bit ECC error.
E2E_SCENARIO = """\
seed = 5
[[gpu]]
model = "H100"
count = 2
workload = "training"
power_limit = 200

[[event]]
at = 2.0
gpu = 0
kind = "xid"
xid = 13
count = 3
interval = 0.1

[[event]]
at = 2.5
gpu = 1
kind = "xid"
xid = 48
"""
# what Grafana would put in, near enough for a 1 s scrape
MACROS = {"$__rate_interval": "5s", "$__interval": "5s", "$__range": "30s"}


def _default_rows() -> str:
    return Path(default_counters_path()).read_text()


def _substitute(expr: str) -> str:
    expr = expr.replace('"$instance"', '".*"').replace('"$gpu"', '".*"').replace('"$gpu_instance"', '".*"')
    for macro, value in MACROS.items():
        expr = expr.replace(macro, value)
    assert "$" not in expr, expr
    return expr


def _label_values(prometheus: str, query: str) -> list[str]:
    """What Grafana's label_values(selector, label) asks Prometheus for."""
    found = re.fullmatch(r"label_values\((.+), (\w+)\)", query)
    assert found, query
    selector, label = _substitute(found.group(1)), found.group(2)
    answer = get_json(f"{prometheus}/api/v1/label/{label}/values?" + urllib.parse.urlencode({"match[]": selector}))
    return answer["data"]


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
def test_every_panel_query_returns_data_from_prometheus(tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text(_default_rows() + E2E_COUNTERS_EXTRA)
    dashboard = build_dashboard(load_counters(counters), aggregations=("max",))
    _check_classic_model(dashboard)
    # the shipped dashboard's queries are all among those tested here, but for the processes row's
    # (test_process_panel_queries_return_data_from_prometheus)
    shipped = {e for p in _panels(json.loads(DEPLOYED.read_text())) for e in _exprs(p)}
    tested = {e for p in _panels(dashboard) for e in _exprs(p)}
    assert shipped - tested == _process_row_exprs()

    scenario = tmp_path / "scenario.toml"
    scenario.write_text(E2E_SCENARIO)
    collector_port, prometheus_port = free_port(), free_port()
    config = write_scrape_config(tmp_path / "prometheus.yml", f"127.0.0.1:{collector_port}")
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("collector", "prometheus")}  # noqa: SIM115
    collector = launch(COLLECTOR, "--sim", str(scenario), "-f", str(counters), "-a", f"127.0.0.1:{collector_port}",
                       "-c", "1000", "--watch-interval", "100", "--window", "5", "--aggregations", "max",
                       cwd=tmp_path, stdout=logs["collector"], stderr=subprocess.STDOUT)
    prometheus = start_prometheus(config, tmp_path, prometheus_port, logs["prometheus"])
    url = f"http://127.0.0.1:{prometheus_port}"
    queries = [(p["title"], t) for p in _panels(dashboard) for t in p["targets"]]
    try:
        wait_until("collector", lambda: is_ready(f"http://127.0.0.1:{collector_port}/health", timeout=1), collector)
        wait_until("prometheus", lambda: is_ready(f"{url}/-/ready", timeout=1), prometheus)
        results = _query_until_every_panel_has_data(url, queries)
        # legends can name what they name: the series carry hostname and gpu
        for title, target in queries:
            if "{{gpu}}" in target["legendFormat"]:
                for series in results[target["expr"]]:
                    assert {"hostname", "gpu"} <= series["metric"].keys(), (title, series["metric"])
        variables = {v["name"]: v["query"] for v in dashboard["templating"]["list"]}
        assert _label_values(url, variables["instance"]) == [f"127.0.0.1:{collector_port}"]
        assert _label_values(url, variables["gpu"]) == ["0", "1"]
    finally:
        stop_process(prometheus)
        stop_process(collector)
        close_and_print_logs(tmp_path, logs)


def _query_until_every_panel_has_data(url: str, queries: list[tuple[str, dict]], timeout_s: float = 30) -> dict:
    """Each panel query's result (expression -> series) once all have data; fails naming those still empty."""
    deadline = time.monotonic() + timeout_s
    while True:
        results = {t["expr"]: prometheus_query(url, _substitute(t["expr"])) for _, t in queries}
        empty = [f"{title}: {t['expr']}" for title, t in queries
                 if not results[t["expr"]]]
        if not empty or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert empty == [], "queries without data:\n" + "\n".join(empty)
    return results


def test_the_collector_cli_prints_the_dashboard(capsys):
    from dcgm_collector import cli
    from dcgm_collector.catalog.counters import default_counters_path

    assert cli.main(["dashboard", "-f", str(default_counters_path())]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["panels"]
    assert any(v["name"] == "gpu" for v in printed["templating"]["list"])


# An H100 split 3g + 1g (served through its instances) beside a whole H100.
MIG_SCENARIO = """\
seed = 5
[[gpu]]
model = "H100"
mig_profiles = ["3g.40gb", "1g.10gb"]
workload = "training"
[[gpu]]
model = "H100"
workload = "training"
"""


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
def test_mig_panel_queries_return_instance_series_from_prometheus(tmp_path):
    counters = tmp_path / "counters.csv"
    counters.write_text(MIG_COUNTERS)
    dashboard = build_dashboard(load_counters(counters), mig=True)
    _check_classic_model(dashboard)
    scenario = tmp_path / "mig.toml"
    scenario.write_text(MIG_SCENARIO)
    collector_port, prometheus_port = free_port(), free_port()
    config = write_scrape_config(tmp_path / "prometheus.yml", f"127.0.0.1:{collector_port}")
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("collector", "prometheus")}  # noqa: SIM115
    collector = launch(COLLECTOR, "--sim", str(scenario), "-f", str(counters), "-a", f"127.0.0.1:{collector_port}",
                       "-c", "1000", "--watch-interval", "100", cwd=tmp_path, stdout=logs["collector"],
                       stderr=subprocess.STDOUT)
    prometheus = start_prometheus(config, tmp_path, prometheus_port, logs["prometheus"])
    url = f"http://127.0.0.1:{prometheus_port}"
    queries = [(p["title"], t) for p in _panels(dashboard) for t in p["targets"]]
    try:
        wait_until("collector", lambda: is_ready(f"http://127.0.0.1:{collector_port}/health", timeout=1), collector)
        wait_until("prometheus", lambda: is_ready(f"{url}/-/ready", timeout=1), prometheus)
        results = _query_until_every_panel_has_data(url, queries)
        for title, target in queries:
            if "{{GPU_I_ID}}" in target["legendFormat"]:
                # the two instances of GPU 0, never the whole GPU 1
                found = sorted((s["metric"]["gpu"], s["metric"]["GPU_I_PROFILE"], s["metric"]["GPU_I_ID"])
                               for s in results[target["expr"]])
                assert found == [("0", "1g.10gb", "1"), ("0", "3g.40gb", "0")], (title, found)
        variables = {v["name"]: v["query"] for v in dashboard["templating"]["list"]}
        assert _label_values(url, variables["gpu_instance"]) == ["0", "1"]
        assert _label_values(url, variables["gpu"]) == ["0", "1"]
    finally:
        stop_process(prometheus)
        stop_process(collector)
        close_and_print_logs(tmp_path, logs)


# ---- the processes and idle time row (--processes) --------------------------------------------

PROCESS_ROW = "Processes and idle time"
PROCESS_PANELS = ["Top processes by framebuffer", "Top processes by SM share", "Framebuffer per process",
                  "SM share per process", "Processes per GPU", "Allocated but idle", "Idle GPU-hours per namespace",
                  "Idle GPU-hours per job"]
IDLE_FAMILY = "DCGM_EXP_GPU_IDLE_SECONDS_TOTAL"


def _section_titles(dashboard: dict, row: str) -> list[str]:
    titles, section = [], None
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            section = panel["title"]
        elif section == row:
            titles.append(panel["title"])
    return titles


def _process_row_exprs() -> set[str]:
    dashboard = _default_dashboard(processes=True)
    return {e for p in _panels(dashboard) if p["title"] in _section_titles(dashboard, PROCESS_ROW) for e in _exprs(p)}


def _needs_idle_counters(expr: str) -> bool:
    return IDLE_FAMILY in expr


def test_the_processes_row_only_when_asked_for():
    assert PROCESS_ROW not in _rows(_default_dashboard())
    dashboard = _default_dashboard(processes=True)
    _check_classic_model(dashboard)
    assert _rows(dashboard) == ["Overview", "Utilisation", "Framebuffer", PROCESS_ROW, "Temperature", "Power",
                                "Clocks and throttling", "XID errors and health", "PCIe and NVLink",
                                "Other metrics", "Collector"]
    assert _section_titles(dashboard, PROCESS_ROW) == PROCESS_PANELS
    assert dashboard["description"].endswith("with --processes.")
    # the rest of the dashboard stays as it was
    assert set(_by_title(dashboard)) - set(PROCESS_PANELS) == set(_by_title(_default_dashboard()))


def test_process_panels_name_the_process_and_its_owner():
    panels = _by_title(_default_dashboard(processes=True))
    selector = '{instance=~"$instance", gpu=~"$gpu", pid!="other"}'
    assert _exprs(panels["Top processes by framebuffer"]) == [f"topk(10, DCGM_EXP_PROCESS_FB_USED_BYTES{selector})"]
    assert _exprs(panels["Top processes by SM share"]) == [f"topk(10, DCGM_EXP_PROCESS_SM_UTIL{selector})"]
    for title in ("Top processes by framebuffer", "Top processes by SM share"):
        panel = panels[title]
        assert panel["targets"][0]["instant"] is True and panel["targets"][0]["format"] == "table"
        columns = panel["transformations"][0]["options"]["include"]["names"]
        assert columns[:4] == ["hostname", "gpu", "pid", "process_name"] and columns[-1] == "Value"
        assert {"namespace", "pod", "pod_namespace", "pod_name", "hpc_job"} <= set(columns)
        # the value column under its own name, largest first
        renamed = panel["transformations"][1]["options"]["renameByName"]["Value"]
        assert panel["options"]["sortBy"] == [{"displayName": renamed, "desc": True}]
    assert panels["Top processes by framebuffer"]["fieldConfig"]["defaults"]["unit"] == "bytes"
    for title in ("Framebuffer per process", "SM share per process"):
        [target] = panels[title]["targets"]
        assert target["legendFormat"] == "{{hostname}} GPU {{gpu}} pid {{pid}} {{process_name}} {{pod}} {{hpc_job}}"
    idle = panels["Allocated but idle"]
    assert _exprs(idle) == ['increase(DCGM_EXP_GPU_IDLE_SECONDS_TOTAL{instance=~"$instance", gpu=~"$gpu", '
                            'state=~"idle_held|allocated_no_process"}[$__range]) > 0']
    assert "state" in idle["transformations"][0]["options"]["include"]["names"]
    assert _exprs(panels["Idle GPU-hours per job"]) == [
        'sum by (hpc_job) (increase(DCGM_EXP_GPU_IDLE_SECONDS_TOTAL{instance=~"$instance", gpu=~"$gpu", '
        'state=~"idle_held|allocated_no_process", hpc_job!=""}[$__range])) / 3600']
    assert panels["Idle GPU-hours per namespace"]["fieldConfig"]["defaults"]["unit"] == "h"


def test_cli_processes_option(tmp_path):
    counters = tmp_path / "c.csv"
    counters.write_text(MINIMAL)
    code, out, _ = _run_main(["-f", str(counters), "--processes"])
    assert code == 0
    assert json.loads(out) == build_dashboard(load_counters(counters), processes=True)
    assert _rows(json.loads(out)) == ["Overview", PROCESS_ROW, "Temperature", "Other metrics", "Collector"]


# Four H200s: GPU 0 a trainer and a data loader that leaks (as in the shipped `processes` scenario), GPU 1
# a churn of short jobs, GPU 2 held idle by a process that holds 1 GiB and runs nothing, GPU 3 idle with no
# process.  GPUs 0 and 2 belong to pods (the kubelet stand-in), GPU 3 to an HPC job (a job mapping file).
PROCESS_SCENARIO = """\
seed = 3
[[gpu]]
model = "H200"
count = 2
workload = "training"
[[gpu]]
model = "H200"
workload = "idle_context"
[[gpu]]
model = "H200"
workload = "idle"

[[process]]
gpu = 0
pid = 4300001
fb_bytes = 1050673152
sm_share = 0.75
[[process]]
gpu = 0
pid = 4300002
fb_bytes = 268435456
fb_growth = 4194304
sm_share = 0.25
[[process]]
gpu = 1
pid = 4400000
churn = 5
lifetime = 2
fb_bytes = 134217728
[[process]]
gpu = 2
pid = 4500000
fb_bytes = 1073741824
sm_share = 0
"""
PODS = [Pod("train-0", "ml", [Container("main", {"nvidia.com/gpu": ["nvidia0"]})]),
        Pod("notebook-0", "ml", [Container("lab", {"nvidia.com/gpu": ["nvidia2"]})])]
HPC_JOB = "job-42"


@contextmanager
def _process_stack(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The collector with --processes on PROCESS_SCENARIO, its pods and job, scraped by Prometheus every second.

    Yields the collector's and Prometheus's URLs once both answer.
    """
    (tmp_path / "node.toml").write_text(PROCESS_SCENARIO)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "3").write_text(HPC_JOB + "\n")
    kubelet = KubeletStandIn(tmp_path / "kubelet.sock", pods=PODS).start()
    collector_port, prometheus_port = free_port(), free_port()
    config = write_scrape_config(tmp_path / "prometheus.yml", f"127.0.0.1:{collector_port}")
    logs = {name: open(tmp_path / f"{name}.log", "wb") for name in ("collector", "prometheus")}  # noqa: SIM115
    collector = launch(COLLECTOR, "--sim", str(tmp_path / "node.toml"), "--processes", "-a",
                       f"127.0.0.1:{collector_port}", "-c", "1000", "-k", "--pod-resources-kubelet-socket",
                       str(tmp_path / "kubelet.sock"), "--kubernetes-gpu-id-type", "device-name",
                       "--hpc-job-mapping-dir", str(tmp_path / "jobs"), cwd=tmp_path, stdout=logs["collector"],
                       stderr=subprocess.STDOUT)
    prometheus = start_prometheus(config, tmp_path, prometheus_port, logs["prometheus"])
    collector_url, url = f"http://127.0.0.1:{collector_port}", f"http://127.0.0.1:{prometheus_port}"
    try:
        wait_until("collector", lambda: is_ready(f"{collector_url}/health", timeout=1), collector)
        wait_until("prometheus", lambda: is_ready(f"{url}/-/ready", timeout=1), prometheus)
        yield collector_url, url
    finally:
        stop_process(prometheus)
        stop_process(collector)
        kubelet.stop()
        close_and_print_logs(tmp_path, logs)


def _process_row_queries() -> list[tuple[str, dict]]:
    dashboard = build_dashboard(load_counters(default_counters_path()), processes=True)
    _check_classic_model(dashboard)
    row = _section_titles(dashboard, PROCESS_ROW)
    assert row == PROCESS_PANELS
    return [(p["title"], t) for p in _panels(dashboard) if p["title"] in row for t in p["targets"]]


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
def test_process_panel_queries_return_data_from_prometheus(tmp_path):
    queries = _process_row_queries()
    assert [title for title, t in queries if _needs_idle_counters(t["expr"])] == [
        "Allocated but idle", "Idle GPU-hours per namespace", "Idle GPU-hours per job"]
    with _process_stack(tmp_path) as (_, url):
        results = _query_until_every_panel_has_data(url, queries)
        # the owners the idle panels will name: GPU 2's pod, GPU 3's job, on the GPU series already
        owners = {s["metric"]["gpu"]: (s["metric"].get("pod"), s["metric"].get("hpc_job"))
                  for s in prometheus_query(url, "DCGM_FI_DEV_GPU_UTIL")}
        assert owners == {"0": ("train-0", None), "1": (None, None), "2": ("notebook-0", None), "3": (None, HPC_JOB)}
    by_title = {title: results[t["expr"]] for title, t in queries}
    # the ten largest single processes, the trainer's 1 GiB and the held GPU's among them
    top = {s["metric"]["pid"]: (s["metric"]["gpu"], float(s["value"][1]))
           for s in by_title["Top processes by framebuffer"]}
    assert len(top) == 10 and "other" not in top
    assert top["4300001"] == ("0", 1050673152) and top["4500000"] == ("2", 1073741824)
    counts = {s["metric"]["gpu"]: float(s["value"][1]) for s in by_title["Processes per GPU"]}
    assert counts["0"] == 2 and counts["2"] == 1
    for title in ("Framebuffer per process", "SM share per process"):
        assert all({"hostname", "gpu", "pid"} <= s["metric"].keys() for s in by_title[title]), title


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package 'prometheus')")
def test_idle_panels_show_the_held_gpu_and_the_allocated_one(tmp_path):
    queries = [(title, t) for title, t in _process_row_queries() if _needs_idle_counters(t["expr"])]
    with _process_stack(tmp_path) as (collector_url, url):
        status, body = http_get(f"{collector_url}/metrics", timeout=5)
        assert status == 200
        assert any(name == IDLE_FAMILY for name, _, _ in samples(body.decode())), f"no {IDLE_FAMILY} served"
        results = _query_until_every_panel_has_data(url, queries)
    by_title = {title: results[t["expr"]] for title, t in queries}
    idle = {(s["metric"]["gpu"], s["metric"]["state"]): s["metric"] for s in by_title["Allocated but idle"]}
    # GPU 2 held idle by its pod's process, GPU 3 allocated to the job with no process; the busy GPUs not at all
    assert set(idle) == {("2", "idle_held"), ("3", "allocated_no_process")}
    assert (idle[("2", "idle_held")]["namespace"], idle[("2", "idle_held")]["pod"]) == ("ml", "notebook-0")
    assert idle[("3", "allocated_no_process")]["hpc_job"] == HPC_JOB
    assert [s["metric"]["namespace"] for s in by_title["Idle GPU-hours per namespace"]] == ["ml"]
    assert [s["metric"]["hpc_job"] for s in by_title["Idle GPU-hours per job"]] == [HPC_JOB]
