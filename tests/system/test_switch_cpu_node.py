"""A collector on an NvSwitch node with a Grace CPU: every level's series arrive over HTTP, labelled
as dcgm-exporter labels them, and -s / -p choose the switches and cores."""

from __future__ import annotations

import re
from pathlib import Path

from support import samples
from test_cli import clean_env, collector, metrics_after_ticks

NODE = """\
# four H100s on an NvSwitch board, two switches, one Grace CPU of four cores
nvswitches = 2
grace_cpus = 1
cpu_cores = 4
[[gpu]]
model = "H100"
count = 4
"""
COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DRIVER_VERSION, label, Driver version.
DCGM_FI_DEV_NVLINK_GET_STATE, gauge, NvLink state (1 up).
DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX, counter, NvSwitch port transmit throughput (in KiB).
DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS, gauge, NvSwitch temperature (in C)., max
DCGM_FI_DEV_CPU_POWER_WATTS, gauge, CPU power (in W).
DCGM_FI_DEV_CPU_CLOCK_CURRENT, gauge, CPU core clock (in kHz).
DCGM_FI_DEV_CPU_UTIL_TOTAL, gauge, CPU utilization (ratio).
DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ, gauge, NvSwitch IDDQ current (the simulated switch has no reading).
DCGM_FI_DEV_CPU_MODEL, label, CPU model.
"""


def label_keys(text: str, name: str) -> set[tuple[str, ...]]:
    """The label names of each series of a family, in the order they are written."""
    return {tuple(re.findall(r'(\w+)="', line[len(name):])) for line in text.splitlines()
            if line.startswith(name + "{")}


def run(tmp_path: Path, *args: str, node_name: str = "node7") -> str:
    (tmp_path / "node.toml").write_text(NODE)
    (tmp_path / "levels.csv").write_text(COUNTERS)
    with collector(tmp_path, "--sim", str(tmp_path / "node.toml"), "-f", str(tmp_path / "levels.csv"),
                   "-a", "127.0.0.1:0", "-c", "200", *args, env=clean_env(NODE_NAME=node_name)) as c:
        text = metrics_after_ticks(c, 3)
        # every row but the one DCGM has no reading for is served
        warned = [line.split('msg="', 1)[1] for line in c.log().splitlines() if "not serving" in line]
        assert warned == [f'{tmp_path / "levels.csv"}:9: not serving DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ: embedded '
                          'DCGM answers NOT_SUPPORTED for it on every NvLink, NvSwitch, CPU or core it is kept for"']
    return text


def test_every_level_arrives_with_its_labels(tmp_path):
    text = run(tmp_path)
    parsed = samples(text)
    by_name: dict[str, list[dict[str, str]]] = {}
    for name, labels, _ in parsed:
        by_name.setdefault(name, []).append(labels)
    driver = ("DCGM_FI_DRIVER_VERSION",)
    assert label_keys(text, "DCGM_FI_DEV_GPU_TEMP") == {
        ("gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname") + driver}
    # a GPU's links: numbered 1..18 per GPU, gpu_uuid and model_name as the link template names them
    gpu_links = by_name["DCGM_FI_DEV_NVLINK_GET_STATE"]
    assert label_keys(text, "DCGM_FI_DEV_NVLINK_GET_STATE") == {
        ("nvlink", "gpu", "gpu_uuid", "pci_bus_id", "device", "model_name", "hostname") + driver}
    assert sorted((int(s["gpu"]), int(s["nvlink"])) for s in gpu_links) == [
        (g, n) for g in range(4) for n in range(1, 19)]
    # a switch's ports: 4 GPUs x 18 links over 2 switches, 36 ports up on each, by DCGM's port index
    ports = by_name["DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX"]
    assert label_keys(text, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX") == {("nvlink", "nvswitch", "hostname") + driver}
    assert sorted((s["nvswitch"], int(s["nvlink"])) for s in ports) == [
        (f"nvswitch{w}", p) for w in range(2) for p in range(36)]
    # switches, with their window family per switch
    for name in ("DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS", "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS_max"):
        assert label_keys(text, name) == {("nvswitch", "hostname") + driver}
        assert [s["nvswitch"] for s in by_name[name]] == ["nvswitch0", "nvswitch1"]
    # the CPU, its cores; a core field is served on the CPU too (the mean of its cores)
    assert label_keys(text, "DCGM_FI_DEV_CPU_POWER_WATTS") == {("cpu", "hostname", "DCGM_FI_DEV_CPU_MODEL") + driver}
    assert {s["DCGM_FI_DEV_CPU_MODEL"] for s in by_name["DCGM_FI_DEV_CPU_POWER_WATTS"]} == {"Grace"}
    assert label_keys(text, "DCGM_FI_DEV_CPU_CLOCK_CURRENT") == {("cpucore", "cpu", "hostname") + driver}
    assert [(s.get("cpucore"), s["cpu"]) for s in by_name["DCGM_FI_DEV_CPU_UTIL_TOTAL"]] == [
        (None, "0"), ("0", "0"), ("1", "0"), ("2", "0"), ("3", "0")]
    assert {s["hostname"] for labels in by_name.values() for s in labels if "hostname" in s} == {"node7"}


def test_switch_and_cpu_devices_select(tmp_path):
    text = run(tmp_path, "-s", "g:1", "-p", "i:2-3", "-d", "g:0", "-n")
    parsed = samples(text)
    assert {labels["nvswitch"] for name, labels, _ in parsed if name == "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS"} == {
        "nvswitch1"}
    assert {labels["nvswitch"] for name, labels, _ in parsed
            if name == "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX"} == {"nvswitch1"}
    assert {labels["gpu"] for name, labels, _ in parsed if name == "DCGM_FI_DEV_NVLINK_GET_STATE"} == {"0"}
    assert [labels["cpucore"] for name, labels, _ in parsed if name == "DCGM_FI_DEV_CPU_CLOCK_CURRENT"] == ["2", "3"]
    assert all("hostname" not in labels for _, labels, _ in parsed)
