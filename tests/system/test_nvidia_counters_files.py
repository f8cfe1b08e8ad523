"""NVIDIA's three shipped counters files load, and every enabled row is served on a node that has its hardware.

dcgm-exporter's etc/ ships default-counters.csv, dcp-metrics-included.csv and
1.x-compatibility-metrics.csv.  Their enabled rows are listed here as
(name, type) facts, in file order, and each file is rebuilt from them with
help text of our own; the 1.x file names its PCIe profiling rows twice and is
used with -o, as NVIDIA's is.  Each runs against a simulated node of two
H100s (NvLinks, profiling, HBM temperature, row remapping) that had an XID,
and the test asserts what a user sees: every row's series (or label) on
/metrics, and the warnings in the log.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support import samples
from test_cli import clean_env, collector, metrics_after_ticks

from dcgm_collector import cli

# the enabled rows of default-counters.csv and dcp-metrics-included.csv (the same rows in both)
DEFAULT_ROWS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge"), ("DCGM_FI_DEV_MEM_CLOCK", "gauge"), ("DCGM_FI_DEV_MEMORY_TEMP", "gauge"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge"), ("DCGM_FI_DEV_POWER_USAGE", "gauge"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"), ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge"), ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"), ("DCGM_FI_DEV_ENC_UTIL", "gauge"),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge"), ("DCGM_FI_DEV_XID_ERRORS", "gauge"), ("DCGM_FI_DEV_FB_FREE", "gauge"),
    ("DCGM_FI_DEV_FB_USED", "gauge"), ("DCGM_FI_DEV_FB_RESERVED", "gauge"),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter"), ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter"), ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge"), ("DCGM_FI_DRIVER_VERSION", "label"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge"), ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge"), ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge"),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge"),
)
# the enabled rows of 1.x-compatibility-metrics.csv: the two PCIe profiling rows come twice
ROWS_1X = (
    ("dcgm_sm_clock", "gauge"), ("dcgm_memory_clock", "gauge"), ("dcgm_memory_temp", "gauge"),
    ("dcgm_gpu_temp", "gauge"), ("dcgm_power_usage", "gauge"), ("dcgm_total_energy_consumption", "counter"),
    ("dcgm_fi_prof_pcie_tx_bytes", "counter"), ("dcgm_fi_prof_pcie_rx_bytes", "counter"),
    ("dcgm_pcie_replay_counter", "counter"), ("dcgm_gpu_utilization", "gauge"),
    ("dcgm_mem_copy_utilization", "gauge"), ("dcgm_enc_utilization", "gauge"), ("dcgm_dec_utilization", "gauge"),
    ("dcgm_xid_errors", "gauge"), ("dcgm_fb_free", "gauge"), ("dcgm_fb_used", "gauge"),
    ("dcgm_nvlink_bandwidth_total", "counter"), ("dcgm_fi_prof_gr_engine_active", "gauge"),
    ("dcgm_fi_prof_pipe_tensor_active", "gauge"), ("dcgm_fi_prof_dram_active", "gauge"),
    ("dcgm_fi_prof_pcie_tx_bytes", "counter"), ("dcgm_fi_prof_pcie_rx_bytes", "counter"),
)
FILES = {
    "default-counters.csv": (DEFAULT_ROWS, ()),
    "dcp-metrics-included.csv": (DEFAULT_ROWS, ()),
    "1.x-compatibility-metrics.csv": (ROWS_1X, ("-o",)),
}
# two H100s at work; an XID early on, so the XID row has a value
NODE = """\
seed = 5
[[gpu]]
model = "H100"
count = 2
workload = "training"

[[event]]
at = 0.5
gpu = 0
kind = "xid"
xid = 13
"""
HEADER = "# rebuilt from the enabled rows of NVIDIA's file of the same name\n# name, type, help\n"


def counters_text(rows: tuple[tuple[str, str], ...]) -> str:
    return HEADER + "".join(f"{name}, {prom_type}, {name} as a {prom_type}.\n" for name, prom_type in rows)


def row_lines(rows: tuple[tuple[str, str], ...]) -> dict[str, list[int]]:
    """Name -> the lines of the file it is on."""
    first = HEADER.count("\n") + 1
    lines: dict[str, list[int]] = {}
    for n, (name, _) in enumerate(rows, first):
        lines.setdefault(name, []).append(n)
    return lines


@pytest.mark.parametrize("file_name", list(FILES))
def test_nvidia_file_loads_and_every_enabled_row_is_served(tmp_path: Path, file_name: str, capsys) -> None:
    rows, flags = FILES[file_name]
    counters = tmp_path / file_name
    counters.write_text(counters_text(rows))
    node = tmp_path / "node.toml"
    node.write_text(NODE)
    label_rows = {name for name, prom_type in rows if prom_type == "label"}
    wanted = {name for name, _ in rows} - label_rows
    with collector(tmp_path, "--sim", str(node), "-a", "127.0.0.1:0", "-c", "200", "-f", str(counters), *flags,
                   env=clean_env()) as c:
        text = metrics_after_ticks(c, 3)
        deadline = time.monotonic() + 10
        while not wanted <= {name for name, _, _ in samples(text)} and time.monotonic() < deadline:
            time.sleep(0.2)
            text = c.metrics()
        log = c.log()
    served = samples(text)
    names = {name for name, _, _ in served}
    assert wanted - names == set(), log
    gpu_series = [labels for name, labels, _ in served if name in wanted]
    uuid = "uuid" if "-o" in flags else "UUID"
    assert all(list(labels)[:2] == ["gpu", uuid] for labels in gpu_series)
    for label in label_rows:
        assert all(label in labels for labels in gpu_series), label
    # bare-metal GPUs have no vGPU licence: 0, as DCGM stores it
    assert {value for name, _, value in served if name == "DCGM_FI_DEV_VGPU_LICENSE_STATUS"} <= {0.0}
    # what the log says about the rows: a repeated row once, each rate typed counter once, nothing unserved
    lines = row_lines(rows)
    repeated = [(name, at) for name, at in lines.items() if len(at) > 1]
    for name, (first, second) in repeated:
        assert log.count(f"{counters}:{second}: {name} is field ") == 1, log
        assert f"already listed at line {first}: using line {first}, skipping line {second}" in log
    assert len(repeated) == (2 if file_name.startswith("1.x") else 0)
    assert "not serving" not in log
    rate_counters = [name for name, prom_type in rows if prom_type == "counter"
                     and ("nvlink_bandwidth" in name.lower() or "pcie_tx" in name or "pcie_rx" in name)]
    for name in dict.fromkeys(rate_counters):
        assert log.count(f"{counters}:{lines[name][0]}: {name} is typed counter") == 1, log
    # check-counters says of the file what the collector's log says, line for line, and types the rows as served
    assert cli.main(["check-counters", str(counters)]) == 0
    checked = capsys.readouterr()
    warnings = [line.removeprefix("dcgm-collector: warning: ") for line in checked.err.splitlines()]
    assert len(warnings) == len(dict.fromkeys(rate_counters)) + len(repeated), checked.err
    for warning in warnings:
        assert log.count(f'msg="{warning}"') == 1, (warning, log)
    for name in dict.fromkeys(rate_counters):
        assert f"{counters}:{lines[name][0]}: {name} is typed counter, but DCGM's value is " in checked.err
        table_row = next(row.split() for row in checked.out.splitlines() if f" {name} " in row)
        assert table_row[2] == "gauge", table_row
