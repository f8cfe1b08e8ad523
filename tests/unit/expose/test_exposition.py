"""The /metrics text, rendered from a real sampler on the simulated hostengine.

The golden tests drive a MANUAL-mode node: values are injected through
DCGM's own injection API (with timestamps a few seconds back), drained by
the sampler into the rings like any sample, and rendered at a fixed time
just after them, so the text is the same on every run.  Regenerate the
golden files after an intended change with::

    UPDATE_GOLDEN=1 pytest tests/unit/expose/test_exposition.py
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from types import MappingProxyType

import pytest
from dcgm_collector.ext._native import lib
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

import dcgm_collector.engine
from dcgm_collector.catalog.counters import default_counters_path, parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.dcgm import EntityType, GpuInfo
from dcgm_collector.expose.clock_events import CLOCK_EVENTS
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.expose.health_status import HEALTH_SYSTEMS, health_error_name
from dcgm_collector.expose.xid_messages import xid_message

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("UPDATE_GOLDEN") == "1"
SCENARIOS = Path(dcgm_collector.engine.__file__).parent / "scenarios"
FE_GPU = int(EntityType.GPU)
TEMP, MEM_TEMP, POWER, ENERGY, CUDA_VERSION, CLOCKS, XID = 150, 140, 155, 156, 5, 112, 230
INT64_NOT_SUPPORTED = int(lib.DCGM_INT64_BLANK) + 2
IDENTITY = ["gpu", "UUID", "pci_bus_id", "device", "modelName"]

H100_T4 = 'seed = 3\n[[gpu]]\nmodel = "H100"\n[[gpu]]\nmodel = "T4"\n'
GOLDEN_COUNTERS = '''\
# The golden scenario: one row of each kind the exposition handles.
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C)., max|avg
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W)., min|max|avg
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
DCGM_FI_CUDA_DRIVER_VERSION, gauge, CUDA driver version (node-wide).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, gauge,"Clock event reasons: ""DCGM_CLOCKS_EVENT_REASON_*"" bits \\ see
dcgm_structs.h"
DCGM_FI_NVML_VERSION, label, NVML version
DCGM_FI_DRIVER_VERSION, label, Driver Version
DCGM_EXP_XID_ERRORS_COUNT, gauge, Count of XID Errors within user-specified time window.
DCGM_EXP_CLOCK_EVENTS_COUNT, gauge, Count of clock events within the user-specified time window.
DCGM_EXP_GPU_HEALTH_STATUS, gauge, GPU health status (0 pass; 10 warn; 20 fail).
'''
# Three rows a second apart, per GPU (H100, T4): what DCGM is made to have sampled.
INJECTED = {
    TEMP: ([61, 64, 62], [45, 47, 46]),
    MEM_TEMP: ([70, 71, 73], [INT64_NOT_SUPPORTED] * 3),
    POWER: ([650.25, 700.0, 512.125], [35.5, 70.0, 41.75]),
    ENERGY: ([123456789000, 123456790000, 123456791000], [9876543210, 9876543260, 9876543330]),
    CLOCKS: ([0x4, 0x4 | 0x20, 0x0], [0x1, 0x1, 0x1]),
}
XIDS = ((1, 13, -2_800_000), (1, 48, -1_500_000))  # (GPU, XID, µs before T0)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _manual_sampler(open_node, tmp_path, counters_text: str, node: str = H100_T4) -> tuple:
    handle = open_node(_write(tmp_path, "node.toml", node), mode="manual")
    sampler = Sampler(handle, parse_counters(counters_text), SamplingOptions(collect_interval_ms=1000))
    sampler.start(thread=False)
    return handle, sampler


def _inject_golden(handle) -> int:
    """Inject the golden rows and events; returns T0 (µs), the time they are relative to."""
    t0 = time.time_ns() // 1000
    for k in range(3):
        ts = t0 - 3_000_000 + k * 1_000_000
        for field_id, per_gpu in INJECTED.items():
            for gpu, values in enumerate(per_gpu):
                handle.inject(FE_GPU, gpu, field_id, values[k], ts)
        handle.inject(FE_GPU, 0, CUDA_VERSION, 12040, ts)  # a global field: DCGM keeps it once
    for gpu, xid, before in XIDS:
        handle.inject(FE_GPU, gpu, XID, xid, t0 + before)
    return t0


@pytest.fixture
def golden_run(open_node, tmp_path):
    """(sampler, exposition, render time) of the golden scenario."""
    handle, sampler = _manual_sampler(open_node, tmp_path, GOLDEN_COUNTERS)
    try:
        t0 = _inject_golden(handle)
        sampler.tick_once()
        exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(hostname="golden-host"),
                                version="test", library_version=handle.library.version_info()["version"])
        yield sampler, exposition, t0 - 500_000
    finally:
        sampler.stop()


@pytest.fixture
def golden(golden_run):
    """(exposition, render time) of the golden scenario."""
    _, exposition, now = golden_run
    return exposition, now


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; create it with UPDATE_GOLDEN=1"
    expected = path.read_text()
    assert text.splitlines() == expected.splitlines(), f"differs from {path} (UPDATE_GOLDEN=1 to accept)"
    assert text == expected


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Metric name -> [(labels, value)], from prometheus_client's text parser."""
    out: dict[str, list] = {}
    for family in parse_text(text):
        for sample in family.samples:
            out.setdefault(family.name if family.type != "counter" else sample.name.removesuffix("_total"), []
                           ).append((sample.labels, sample.value))
    return out


def _label_keys(text: str, metric: str) -> list[list[str]]:
    """The label names of each series of a metric, in the order written."""
    keys = []
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            inner = line[len(metric) + 1:line.rindex("}")]
            keys.append(re.findall(r'(?:^|,)([A-Za-z_][A-Za-z0-9_]*)="', inner))
    return keys


# ---- golden files -----------------------------------------------------------------------------

def test_golden_text_exposition(golden):
    exposition, now = golden
    text = exposition.render(now_us=now).decode()
    _check_golden("h100-t4.prom", text)
    samples = _samples(text)
    by_gpu = {labels["gpu"]: value for labels, value in samples["DCGM_FI_DEV_GPU_TEMP"]}
    assert by_gpu == {"0": 62, "1": 46}  # the last row
    assert {labels["gpu"]: v for labels, v in samples["DCGM_FI_DEV_POWER_USAGE_max"]} == {"0": 700.0, "1": 70.0}
    # the T4 answers NOT_SUPPORTED for memory temperature: no series, not a sentinel
    assert [labels["gpu"] for labels, _ in samples["DCGM_FI_DEV_MEMORY_TEMP"]] == ["0"]
    # a global field is served on every GPU
    assert [(labels["gpu"], v) for labels, v in samples["DCGM_FI_CUDA_DRIVER_VERSION"]] == [("0", 12040), ("1", 12040)]
    # label rows become labels, never families
    assert "DCGM_FI_DRIVER_VERSION" not in samples and "DCGM_FI_NVML_VERSION" not in samples
    assert "DCGM_FI_DEV_POWER_USAGE 650.250000" not in text and '"} 700.000000\n' in text  # %f


def test_golden_openmetrics_exposition(golden):
    exposition, now = golden
    text = exposition.render(openmetrics=True, now_us=now).decode()
    _check_golden("h100-t4.openmetrics.prom", text)
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in parse_openmetrics(text)}
    # a counter without the _total suffix keeps its name: declared unknown
    assert families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].type == "unknown"
    assert families["dcgm_collector_samples"].type == "counter"
    assert families["dcgm_collector_samples"].samples[0].name == "dcgm_collector_samples_total"
    text_names = {s.name for f in parse_text(exposition.render(now_us=now).decode()) for s in f.samples}
    om_names = {s.name for f in families.values() for s in f.samples}
    assert {n.removesuffix("_total") for n in om_names} == {n.removesuffix("_total") for n in text_names}


def test_golden_scenario_content(golden):
    exposition, now = golden
    text = exposition.render(now_us=now).decode()
    samples = _samples(text)
    xid_last = samples["DCGM_FI_DEV_XID_ERRORS"]
    assert [(labels["gpu"], labels["err_code"], labels["err_msg"], value) for labels, value in xid_last] == [
        ("1", "48", xid_message(48), 48)]
    counts = {(labels["gpu"], labels.get("xid")): value for labels, value in samples["DCGM_EXP_XID_ERRORS_COUNT"]}
    assert counts == {("0", None): 0, ("1", "13"): 1, ("1", "48"): 1}
    clocks = {(labels["gpu"], labels["clock_event"]): value for labels, value in samples["DCGM_EXP_CLOCK_EVENTS_COUNT"]}
    assert len(clocks) == 2 * len(CLOCK_EVENTS)
    assert {k: v for k, v in clocks.items() if v} == {("0", "power_cap"): 2, ("0", "sw_thermal"): 1,
                                                      ("1", "gpu_idle"): 3}
    health = samples["DCGM_EXP_GPU_HEALTH_STATUS"]
    assert len(health) == 2 * len(HEALTH_SYSTEMS) == 22
    assert {(labels["health_watch"], labels["health_error_code"], value) for labels, value in health} == {
        (name, "DCGM_FR_OK", 0) for name, _ in HEALTH_SYSTEMS}
    assert samples["dcgm_collector_up"] == [({}, 1.0)]


# ---- format --------------------------------------------------------------------------------------

def test_help_and_type_once_per_family_in_counters_file_order(golden):
    exposition, now = golden
    text = exposition.render(now_us=now).decode()
    types = re.findall(r"^# TYPE (\S+) ", text, re.M)
    helps = re.findall(r"^# HELP (\S+) ", text, re.M)
    assert types == helps and len(types) == len(set(types))
    assert types[:12] == [
        "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_max", "DCGM_FI_DEV_GPU_TEMP_avg", "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE_min", "DCGM_FI_DEV_POWER_USAGE_max",
        "DCGM_FI_DEV_POWER_USAGE_avg", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_CUDA_DRIVER_VERSION",
        "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    ]
    # every sample line sits right under its own family's HELP/TYPE
    current = None
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            current = line.split()[2]
        elif not line.startswith("#"):
            assert re.split(r"[{ ]", line, maxsplit=1)[0] == current


def test_label_names_and_order(golden):
    exposition, now = golden
    text = exposition.render(now_us=now).decode()
    gpu_labels = IDENTITY + ["hostname", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_NVML_VERSION"]
    assert _label_keys(text, "DCGM_FI_DEV_GPU_TEMP") == [gpu_labels] * 2
    assert _label_keys(text, "DCGM_FI_DEV_POWER_USAGE_avg") == [gpu_labels] * 2
    assert _label_keys(text, "DCGM_FI_DEV_XID_ERRORS") == [gpu_labels + ["err_code", "err_msg"]]
    assert _label_keys(text, "DCGM_EXP_XID_ERRORS_COUNT") == [
        gpu_labels + ["window_size_in_ms"], gpu_labels + ["window_size_in_ms", "xid"],
        gpu_labels + ["window_size_in_ms", "xid"]]
    assert set(map(tuple, _label_keys(text, "DCGM_EXP_CLOCK_EVENTS_COUNT"))) == {
        tuple(gpu_labels + ["clock_event", "window_size_in_ms"])}
    assert set(map(tuple, _label_keys(text, "DCGM_EXP_GPU_HEALTH_STATUS"))) == {
        tuple(gpu_labels + ["health_error_code", "health_watch"])}
    first = text.splitlines()[2]
    assert first.startswith('DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-')
    assert ',device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="golden-host",' in first


def test_no_hostname_and_blanks_in_model_name(golden):
    exposition, now = golden
    options = ExpositionOptions(hostname=None, replace_blanks_in_model_name=True)
    other = Exposition(exposition.view, exposition.gpus, options, version="test",
                       library_version=exposition.library_version)
    text = other.render(now_us=now).decode()
    assert "hostname=" not in text
    assert _label_keys(text, "DCGM_FI_DEV_GPU_TEMP")[0] == IDENTITY + ["DCGM_FI_DRIVER_VERSION", "DCGM_FI_NVML_VERSION"]
    assert 'modelName="NVIDIA-H100-80GB-HBM3"' in text and 'modelName="Tesla-T4"' in text
    assert "NVIDIA H100" not in text


def test_label_values_and_help_are_escaped(open_node, tmp_path):
    counters = ('DCGM_FI_DEV_GPU_TEMP, gauge,"a ""quoted"" help with a \\ backslash\nand a second line"\n'
                "DCGM_FI_DRIVER_VERSION, label, Driver Version\n")
    handle, sampler = _manual_sampler(open_node, tmp_path, counters)
    try:
        sampler.tick_once()
        tricky = 'Model "X" \\ beta\nrev'
        gpus = [GpuInfo(g.gpu_id, tricky, g.uuid, g.pci_bus_id, g.serial, g.driver_version, g.brand, g.status)
                for g in handle.gpus()]
        exposition = Exposition(target_view(sampler), gpus, ExpositionOptions(hostname='host"1'), version="test")
        text = exposition.render().decode()
        om = exposition.render(openmetrics=True).decode()
    finally:
        sampler.stop()
    assert '# HELP DCGM_FI_DEV_GPU_TEMP a "quoted" help with a \\\\ backslash\\nand a second line\n' in text
    assert '# HELP DCGM_FI_DEV_GPU_TEMP a \\"quoted\\" help with a \\\\ backslash\\nand a second line\n' in om
    assert 'modelName="Model \\"X\\" \\\\ beta\\nrev",hostname="host\\"1"' in text
    for parse, body in ((parse_text, text), (parse_openmetrics, om)):
        family = next(f for f in parse(body) if f.name == "DCGM_FI_DEV_GPU_TEMP")
        assert family.documentation == 'a "quoted" help with a \\ backslash\nand a second line'
        assert {s.labels["modelName"] for s in family.samples} == {tricky}
        assert {s.labels["hostname"] for s in family.samples} == {'host"1'}


def test_default_counters_on_eight_gpus_parse_in_both_formats(handle):
    text = open(default_counters_path()).read()
    text += "DCGM_EXP_XID_ERRORS_COUNT, gauge, x\nDCGM_EXP_CLOCK_EVENTS_COUNT, gauge, c\n" \
            "DCGM_EXP_GPU_HEALTH_STATUS, gauge, h\n"
    with Sampler(handle, parse_counters(text), SamplingOptions(collect_interval_ms=100)) as sampler:
        deadline = time.monotonic() + 5
        while sampler.stats.ticks < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        exposition = Exposition(target_view(sampler), handle.gpus(),
                                ExpositionOptions(aggregations=("min", "max", "avg")), version="test")
        body = exposition.render().decode()
        om = exposition.render(openmetrics=True).decode()
    families = list(parse_text(body))
    names = [f.name for f in families]
    assert len(names) == len(set(names))
    gpu_temp = next(f for f in families if f.name == "DCGM_FI_DEV_GPU_TEMP")
    assert [s.labels["gpu"] for s in gpu_temp.samples] == [str(i) for i in range(8)]
    assert "DCGM_FI_DEV_GPU_TEMP_avg" in names and "DCGM_FI_DRIVER_VERSION" not in names
    # counters (energy since boot, XID count) get no window families: their min or max means nothing
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" in names
    assert not any(name.startswith(("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_", "DCGM_FI_DEV_XID_ERRORS_"))
                   for name in names)
    assert "DCGM_FI_DEV_FAN_SPEED" not in body  # not a default row; blanks elsewhere dropped
    om_families = list(parse_openmetrics(om))
    assert sum(len(f.samples) for f in om_families) == sum(len(f.samples) for f in families)
    assert "9223372036854775" not in body and "140737488355328" not in body  # no blank sentinel printed


# ---- values ----------------------------------------------------------------------------------------

def test_not_supported_and_blank_values_are_dropped_live(open_node, tmp_path):
    handle = open_node(_write(tmp_path, "node.toml", H100_T4))
    counters = "DCGM_FI_DEV_MEMORY_TEMP, gauge, m, max\nDCGM_FI_DEV_GPU_TEMP, gauge, t\n"
    with Sampler(handle, parse_counters(counters), SamplingOptions(collect_interval_ms=100)) as sampler:
        deadline = time.monotonic() + 5
        while sampler.stats.rows < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        text = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(), version="t").render().decode()
    samples = _samples(text)
    assert [labels["gpu"] for labels, _ in samples["DCGM_FI_DEV_MEMORY_TEMP"]] == ["0"]
    assert [labels["gpu"] for labels, _ in samples["DCGM_FI_DEV_MEMORY_TEMP_max"]] == ["0"]
    assert [labels["gpu"] for labels, _ in samples["DCGM_FI_DEV_GPU_TEMP"]] == ["0", "1"]


def test_window_max_catches_a_spike_the_last_value_misses(open_node):
    handle = open_node(str(SCENARIOS / "spikes.toml"))
    counters = parse_counters("DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)., max\n")
    with Sampler(handle, counters, SamplingOptions(collect_interval_ms=1000, watch_interval_ms=100)) as sampler:
        ring = next(iter(sampler.rings.values()))
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            rows = ring.rows_since(0)
            # a row 2.2 s into the samples where no GPU is in a spike: a scrape then reads no spike
            calm = [i for i, ts in enumerate(rows.ts) if ts - rows.ts[0] >= 2_200_000 and rows.values[i].max() <= 10]
            if calm:
                break
            time.sleep(0.2)
        assert calm, "no spike-free row after 2.2 s of samples"
        exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(window_s=2.1), version="t")
        text = exposition.render(now_us=int(rows.ts[calm[0]])).decode()
    samples = _samples(text)
    last = [value for _, value in samples["DCGM_FI_DEV_GPU_UTIL"]]
    peak = [value for _, value in samples["DCGM_FI_DEV_GPU_UTIL_max"]]
    assert len(last) == len(peak) == 4
    assert all(v <= 10 for v in last)     # the value a dcgm-exporter scrape would report: the floor
    # every GPU spiked (300 ms every 2 s) within the window; utilisation is the busy share of
    # a 200 ms period, so the burst reads at least half busy
    assert all(v >= 50 for v in peak), peak
    assert "# HELP DCGM_FI_DEV_GPU_UTIL_max GPU utilization (in %). (max over the last 2.1 s window)" in text


def test_xid_and_clock_event_windows(open_node, tmp_path):
    counters = "DCGM_EXP_XID_ERRORS_COUNT, gauge, x\nDCGM_EXP_CLOCK_EVENTS_COUNT, gauge, c\n" \
               "DCGM_FI_DEV_XID_ERRORS, gauge, last xid\n"
    handle, sampler = _manual_sampler(open_node, tmp_path, counters)
    try:
        t0 = _inject_golden(handle)
        sampler.tick_once()
        options = ExpositionOptions(xid_count_window_ms=2000, clock_events_count_window_ms=1600)
        exposition = Exposition(target_view(sampler), handle.gpus(), options, version="t")
        first = _samples(exposition.render(now_us=t0 - 500_000).decode())
        # the window moves on: later scrapes read only the new rows, old ones leave the counts
        later = _samples(exposition.render(now_us=t0 - 200_000).decode())
        back = _samples(exposition.render(now_us=t0 - 1_900_000).decode())
    finally:
        sampler.stop()
    xids = {(labels["gpu"], labels.get("xid"), labels["window_size_in_ms"]): v
            for labels, v in first["DCGM_EXP_XID_ERRORS_COUNT"]}
    assert xids == {("0", None, "2000"): 0, ("1", "48", "2000"): 1}  # XID 13 is 2.3 s old
    assert [(labels["gpu"], v) for labels, v in first["DCGM_FI_DEV_XID_ERRORS"]] == [("1", 48)]  # sticky

    def clock(samples):
        return {(labels["gpu"], labels["clock_event"]): v
                for labels, v in samples["DCGM_EXP_CLOCK_EVENTS_COUNT"] if v}

    assert clock(first) == {("0", "power_cap"): 1, ("0", "sw_thermal"): 1, ("1", "gpu_idle"): 2}  # rows -2 s, -1 s
    assert clock(later) == {("1", "gpu_idle"): 1}  # only the row at -1 s is left
    # rendering the past starts over: rows -3 s and -2 s
    assert clock(back) == {("0", "power_cap"): 2, ("0", "sw_thermal"): 1, ("1", "gpu_idle"): 2}
    assert [(labels["gpu"], v) for labels, v in back["DCGM_FI_DEV_XID_ERRORS"]] == [("1", 13)]


def test_health_status_shows_an_incident(open_node, tmp_path):
    node = H100_T4 + '[[event]]\nat = 1.0\ngpu = 1\nkind = "xid"\nxid = 48\n'
    handle = open_node(_write(tmp_path, "node.toml", node))
    counters = parse_counters("DCGM_EXP_GPU_HEALTH_STATUS, gauge, health\nDCGM_EXP_XID_ERRORS_COUNT, gauge, x\n")
    owned_before = dict(handle._owned)
    sampler = Sampler(handle, counters, SamplingOptions(collect_interval_ms=100))
    sampler.health_interval_s = 0.2
    with sampler:
        deadline = time.monotonic() + 5
        while not (sampler.health and sampler.health.recent) and time.monotonic() < deadline:
            time.sleep(0.05)
        text = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(), version="t").render().decode()
    assert handle._owned == owned_before  # the health group went with the sampler
    samples = _samples(text)
    bad = {(labels["gpu"], labels["health_watch"], labels["health_error_code"], v)
           for labels, v in samples["DCGM_EXP_GPU_HEALTH_STATUS"] if v}
    # as DCGM's health module: XID 48 after the health watches began is a failure under ALL,
    # in every check from then on; had the sampler started after it, the MEM watch's first
    # reading of the volatile DBE count would have found it instead
    assert bad in ({("1", "ALL", "DCGM_FR_XID_ERROR", 20)}, {("1", "MEM", "DCGM_FR_VOLATILE_DBE_DETECTED", 20)})
    assert ({"1": "48"}, 1) in [({labels["gpu"]: labels.get("xid")}, v) for labels, v in
                                samples["DCGM_EXP_XID_ERRORS_COUNT"]]
    assert health_error_name(0) == "DCGM_FR_OK" and health_error_name(101) == "DCGM_FR_XID_ERROR"
    assert health_error_name(999) == ""


def test_label_rows_that_change_relabel_every_series(golden_run):
    sampler, exposition, now = golden_run
    labels = {key: dict(values) for key, values in sampler.labels.items()}
    labels[(FE_GPU, 1)]["DCGM_FI_DRIVER_VERSION"] = "560.1"
    sampler.labels = MappingProxyType({k: MappingProxyType(v) for k, v in labels.items()})
    text = exposition.render(now_us=now).decode()
    versions = {s.labels["gpu"]: s.labels["DCGM_FI_DRIVER_VERSION"]
                for f in parse_text(text) for s in f.samples if "gpu" in s.labels}
    assert versions == {"0": "550.54.15", "1": "560.1"}


# ---- the collector's own metrics and health ------------------------------------------------------

def test_self_metrics(golden):
    exposition, now = golden
    stats = exposition.view.stats   # the live counts the sampler writes into
    stats.errors_by_code = {-16: 2, int(lib.DCGM_ST_NOT_SUPPORTED): 1}
    exposition.observe_scrape(0.0125)
    samples = _samples(exposition.render(now_us=now).decode())
    assert samples["dcgm_collector_dcgm_errors"] == [({"code": "-16", "name": "DCGM_ST_NOT_WATCHED"}, 2),
                                                      ({"code": str(lib.DCGM_ST_NOT_SUPPORTED),
                                                        "name": "DCGM_ST_NOT_SUPPORTED"}, 1)]
    assert samples["dcgm_collector_scrape_duration_seconds"] == [({}, 0.0125)]
    assert samples["dcgm_collector_ticks"] == [({}, stats.ticks)]
    assert samples["dcgm_collector_samples"] == [({}, stats.samples)]
    assert samples["dcgm_collector_skipped_ticks"] == [({}, 0)]
    assert samples["dcgm_collector_build_info"] == [({"version": "test", "dcgm_library": "4.6.0"}, 1)]


def test_up_and_health_follow_sample_freshness(open_node, tmp_path):
    handle, sampler = _manual_sampler(open_node, tmp_path, "DCGM_FI_DEV_GPU_TEMP, gauge, t\n")
    try:
        sampler.tick_once()
        exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(stale_after_s=0.3), version="t")
        assert exposition.health() == (True, "OK")
        newest = sampler.stats.last_sample_time
        stale_at = int((newest + 1.5) * 1e6)
        samples = _samples(exposition.render(now_us=stale_at).decode())
        assert samples["dcgm_collector_up"] == [({}, 0.0)]
        assert samples["dcgm_collector_last_sample_age_seconds"][0][1] == pytest.approx(1.5, abs=1e-3)
        assert "DCGM_FI_DEV_GPU_TEMP{" in exposition.render(now_us=stale_at).decode()  # up 0 flags it
        gone_at = int((newest + 15.1) * 1e6)  # older than the window (and stale): the series goes
        assert "DCGM_FI_DEV_GPU_TEMP{" not in exposition.render(now_us=gone_at).decode()
        time.sleep(0.4)
        ok, reason = exposition.health()
        assert not ok and reason.startswith("no sample for ") and reason.endswith("s (stale after 0.3 s)")
        sampler.stats.last_sample_time = time.time()
        sampler.stats.last_tick_ok = False
        sampler.stats.errors_by_code = {int(lib.DCGM_ST_TIMEOUT): 3}
        ok, reason = exposition.health()
        assert not ok and "DCGM_ST_TIMEOUT x3" in reason
        sampler.stats.last_tick_ok = True
        sampler.stats.reader_failures = {"processes": 2}
        assert exposition.health() == (True, "OK; sampler readers failed: processes x2")
    finally:
        sampler.stop()
    handle.close()
    assert exposition.health() == (False, "the DCGM handle is closed")


def test_stale_after_defaults_to_three_collect_intervals(golden):
    exposition, _ = golden
    assert exposition.stale_after_s == 5.0  # 3 x 1 s, at least 5 s
    assert exposition.lookback_us == 15_000_000  # the window is longer


@pytest.mark.parametrize("kwargs", [
    {"window_s": 0}, {"window_s": float("nan")}, {"aggregations": ("median",)}, {"aggregations": "max"},
    {"xid_count_window_ms": 0}, {"clock_events_count_window_ms": 1.5}, {"stale_after_s": -1},
])
def test_bad_options_are_refused(kwargs):
    with pytest.raises((ValueError, TypeError)):
        ExpositionOptions(**kwargs)


# ---- pod and HPC job attribution (-k, --hpc-job-mapping-dir) --------------------------------------

class _Pods:
    """A PodMapper stand-in: labels per GPU index, a generation bumped on change."""

    def __init__(self, by_gpu: dict[int, dict[str, str]]) -> None:
        self.by_gpu, self.generation = by_gpu, 1

    def labels_for(self, gpu_index: int, uuid: str) -> dict[str, str]:
        return dict(self.by_gpu.get(gpu_index, {}))


def test_pod_labels_and_job_copies(golden, tmp_path):
    from dcgm_collector.attribution.copies import GpuAttribution
    from dcgm_collector.attribution.hpc import HpcJobMapper

    exposition, now = golden
    jobs_dir = tmp_path / "jobs"
    jobs_dir.mkdir()
    (jobs_dir / "1").write_text("slurm-17\nslurm-18\n")
    pods = _Pods({0: {"pod": "train-0", "namespace": "ml", "container": "main"}})
    jobs = HpcJobMapper(jobs_dir, refresh_s=0)
    options = ExpositionOptions(hostname="golden-host", attribution=GpuAttribution(pods, jobs))
    other = Exposition(exposition.view, exposition.gpus, options, version="test",
                       library_version=exposition.library_version)
    text = other.render(now_us=now).decode()
    gpu_labels = IDENTITY + ["hostname", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_NVML_VERSION"]
    # attributes come after the label rows, sorted together with err_code/err_msg
    assert _label_keys(text, "DCGM_FI_DEV_GPU_TEMP") == [
        gpu_labels + ["container", "namespace", "pod"], gpu_labels + ["hpc_job"], gpu_labels + ["hpc_job"]]
    assert _label_keys(text, "DCGM_FI_DEV_XID_ERRORS") == [gpu_labels + ["err_code", "err_msg", "hpc_job"]] * 2
    samples = _samples(text)
    temps = [(labels["gpu"], labels.get("pod"), labels.get("hpc_job"), v)
             for labels, v in samples["DCGM_FI_DEV_GPU_TEMP"]]
    assert temps == [("0", "train-0", None, 62), ("1", None, "slurm-17", 46), ("1", None, "slurm-18", 46)]
    assert len(samples["DCGM_EXP_GPU_HEALTH_STATUS"]) == 3 * len(HEALTH_SYSTEMS)
    assert len(samples["DCGM_EXP_CLOCK_EVENTS_COUNT"]) == 3 * len(CLOCK_EVENTS)
    counts = {(labels["gpu"], labels.get("xid"), labels.get("hpc_job")): v
              for labels, v in samples["DCGM_EXP_XID_ERRORS_COUNT"]}
    assert counts == {("0", None, None): 0, ("1", "13", "slurm-17"): 1, ("1", "13", "slurm-18"): 1,
                      ("1", "48", "slurm-17"): 1, ("1", "48", "slurm-18"): 1}
    # both formats still parse (no duplicate series)
    list(parse_openmetrics(other.render(openmetrics=True, now_us=now).decode()))
    # a change is picked up at the next scrape; nothing changes without one
    families = other._families
    other.render(now_us=now)
    assert other._families is families
    (jobs_dir / "1").unlink()
    pods.by_gpu = {}
    pods.generation += 1
    text = other.render(now_us=now).decode()
    assert _label_keys(text, "DCGM_FI_DEV_GPU_TEMP") == [gpu_labels] * 2
    assert text == exposition.render(now_us=now).decode()   # back to the plain series


def test_the_outputs_read_each_target_through_its_exposition(golden):
    """The registry's sources are the targets: a sampling one gives its exposition's view and sample model (what
    the history API, remote write and the recorder read), one that does not sample yet gives nothing."""
    from types import SimpleNamespace

    from dcgm_collector.expose.multi import MultiExposition
    from dcgm_collector.series.registry import Registry

    exposition, _ = golden
    up = SimpleNamespace(name="golden-host", remote=False, stats=exposition.view.stats, reconnects=0,
                         exposition=exposition, health=exposition.health)
    down = SimpleNamespace(name="other", remote=True, stats=exposition.view.stats, reconnects=0, exposition=None,
                           health=lambda now_s=None: (False, "connecting"))
    registry = Registry()
    for source in MultiExposition([up, down], version="test").sources():
        registry.add_source(source)
    assert [source.name for source in registry.sources()] == ["golden-host", "other"]
    [found] = registry.series()
    assert found.name == "golden-host" and found.view is exposition.view
    assert found.model is exposition.sample_model("golden-host")
    assert registry.sample_models() == [found.model]


def test_scrapes_between_two_ticks_reuse_the_families_text(monkeypatch):
    from types import SimpleNamespace

    from dcgm_collector.expose.multi import MultiExposition
    from dcgm_collector.series.stats import SamplerStats

    target = SimpleNamespace(name="a", remote=False, stats=SamplerStats(), reconnects=0, exposition=None,
                             health=lambda now_s=None: (True, "OK"))
    exposition = MultiExposition([target], version="test")
    renders = []
    real = MultiExposition._render_families

    def counting(self, expositions, openmetrics, now_us):
        renders.append(openmetrics)
        return real(self, expositions, openmetrics, now_us)

    monkeypatch.setattr(MultiExposition, "_render_families", counting)
    first = exposition.render()
    exposition.observe_scrape(0.25)
    second = exposition.render()
    assert renders == [False]
    # the self-metrics are not cached: the scrape duration just observed shows
    assert b"dcgm_collector_scrape_duration_seconds 0.250000" in second and first != second
    exposition.render(openmetrics=True)
    target.stats.ticks += 1
    exposition.render()
    exposition.render(now_us=1_000_000)     # an explicit time always renders, and is not kept
    exposition.render()
    assert renders == [False, True, False, False]


def test_build_info_names_the_source_and_why_when_it_is_known():
    from types import SimpleNamespace

    from dcgm_collector.expose.multi import MultiExposition
    from dcgm_collector.series.stats import SamplerStats

    target = SimpleNamespace(name="a", remote=False, stats=SamplerStats(), reconnects=0, exposition=None,
                             health=lambda now_s=None: (True, "OK"))
    known = MultiExposition([target], version="test", library_version="4.6.0", source="nvml",
                            source_reason="auto: no libdcgm, NVML loaded").render().decode()
    assert ('dcgm_collector_build_info{version="test",dcgm_library="4.6.0",source="nvml",'
            'source_reason="auto: no libdcgm, NVML loaded"} 1\n') in known
    assert "source is dcgm (NVIDIA DCGM embedded), hostengine (nv-hostengines, -r), nvml" in known   # the HELP
    unknown = MultiExposition([target], version="test", library_version="4.6.0").render().decode()
    assert 'dcgm_collector_build_info{version="test",dcgm_library="4.6.0"} 1\n' in unknown


def test_a_scrape_makes_no_call_into_libdcgm(golden_run):
    """Rendering reads the rings: the loader's count of calls into the library does not move."""
    from types import SimpleNamespace

    from dcgm_collector.expose.multi import MultiExposition

    sampler, exposition, now = golden_run
    target = SimpleNamespace(name="node", remote=False, stats=exposition.view.stats, reconnects=0,
                             exposition=exposition, health=exposition.health)
    collector = MultiExposition([target], version="test")
    before = lib.dcgmc_call_count()
    for _ in range(20):
        assert b"DCGM_FI_DEV_GPU_TEMP{" in exposition.render(now_us=now)
        assert b"DCGM_FI_DEV_GPU_TEMP{" in collector.render(openmetrics=True)
        exposition.health()
        collector.health()
    assert lib.dcgmc_call_count() == before
    sampler.tick_once()   # the sampler's reads do go through the same count
    assert lib.dcgmc_call_count() > before


def _model_lines(exposition, now_us: int) -> dict[str, float]:
    """What the sample model says each served series' last value is, as /metrics text keys (name{labels})."""
    from dcgm_collector.series.text import label_text

    out: dict[str, float] = {}
    model = exposition.sample_model("golden-host")
    for ring in model.rings:
        rows = ring.rows_since(now_us - exposition.lookback_us)
        for series in ring.series:
            ok = [i for i in range(len(rows.ts)) if rows.ts[i] <= now_us and rows.status[i, series.column] == 0]
            if ok:
                out[f"{series.name}{{{label_text(series.labels)}}}"] = float(rows.values[ok[-1], series.column])
    events = model.events_since(0)
    for family in model.event_series:
        last: dict[tuple[int, int], int] = {}   # an event row serves each entity's newest event
        for i in range(len(events.ts)):
            if events.field_id[i] == family.field_id and events.ts[i] <= now_us:
                last[(int(events.entity_group[i]), int(events.entity_id[i]))] = int(events.value[i])
        for entity, value in last.items():
            for labels in family.labels(entity, value):
                out[f"{family.name}{{{label_text(labels)}}}"] = float(value)
    return out


def test_the_sample_model_names_every_series_as_metrics_does(golden, tmp_path):
    """Remote write, the recorder and the history API name a sample by the sample model: its series must be
    exactly the /metrics field series, with the same labels (pods and job copies too) and the same last value."""
    from dcgm_collector.attribution.copies import GpuAttribution
    from dcgm_collector.attribution.hpc import HpcJobMapper

    exposition, now = golden
    jobs_dir = tmp_path / "jobs"
    jobs_dir.mkdir()
    (jobs_dir / "1").write_text("slurm-17\nslurm-18\n")
    pods = _Pods({0: {"pod": "train-0", "namespace": "ml", "container": "main"}})
    options = ExpositionOptions(hostname="golden-host", attribution=GpuAttribution(pods, HpcJobMapper(jobs_dir)))
    for served in (exposition, Exposition(exposition.view, exposition.gpus, options, version="test")):
        text = served.render(now_us=now).decode()
        field_rows = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_CUDA_DRIVER_VERSION", "DCGM_FI_DEV_XID_ERRORS",
                      "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}
        lines = {}
        for line in text.splitlines():
            if line and not line.startswith("#") and line.split("{")[0] in field_rows:
                key, _, value = line.rpartition(" ")
                lines[key] = float(value)
        assert lines, text
        assert _model_lines(served, now) == lines
    model = exposition.sample_model("golden-host")
    assert model.target == "golden-host" and [g.gpu_id for g in model.gpus] == [0, 1]
    by_name = {(s.name, s.gpu): s for s in model.series()}
    assert (by_name[("DCGM_FI_DEV_GPU_TEMP", 1)].field_id, by_name[("DCGM_FI_DEV_GPU_TEMP", 1)].field_name) == (
        TEMP, "DCGM_FI_DEV_GPU_TEMP_CELSIUS")   # DCGM 4.6's own name of field 150
    assert by_name[("DCGM_FI_DEV_POWER_USAGE", 0)].integer is False
    assert by_name[("DCGM_FI_DEV_GPU_TEMP", 0)].integer is True
    assert exposition.sample_model("golden-host") is model   # kept until the families change
