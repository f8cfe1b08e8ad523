"""Rows the collector cannot serve are named, with file and line, before anything is sampled."""

from __future__ import annotations

from dcgm_collector.catalog.counters import EXPORTER_COUNTERS, parse_counters
from dcgm_collector.collect.servable import unservable_rows

PATH = "f.csv"


def warnings(text: str) -> list[str]:
    return [row.warning for row in unservable_rows(parse_counters(text, PATH))]


def test_rows_at_levels_not_sampled_each_warn_with_file_and_line() -> None:
    text = ("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
            "# a comment\n"
            "DCGM_FI_DEV_CONNECTX_HEALTH, gauge, nic\n")
    assert warnings(text) == [(
        "f.csv:3: not serving DCGM_FI_DEV_CONNECTX_HEALTH: DCGM keeps DCGM_FI_DEV_CONNECTX_HEALTH (field 1300) "
        "per ConnectX, and ConnectX entities are not sampled yet (the row is left out)")]


def test_link_switch_and_cpu_rows_are_served() -> None:
    text = ("DCGM_FI_DEV_NVLINK_PPRM_OPER_RECOVERY, gauge, link\n"
            "DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT, gauge, switch\n"
            "DCGM_FI_DEV_CPU_TEMP_CELSIUS, gauge, cpu\n"
            "DCGM_FI_DEV_CPU_UTIL_TOTAL, gauge, core\n"
            "DCGM_FI_DEV_CPU_MODEL, label, cpu model\n")
    assert warnings(text) == []


def test_gpu_node_and_exporter_rows_are_all_served() -> None:
    text = ("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"            # GPU
            "DCGM_FI_DRIVER_VERSION, label, d\n"           # node-wide, read through the GPUs
            "DCGM_FI_CUDA_DRIVER_VERSION, gauge, c\n"
            "DCGM_FI_DEV_XID_ERRORS, gauge, x\n"           # an event field
            "DCGM_FI_PROF_SM_ACTIVE, gauge, sm\n"          # profiling
            "DCGM_FI_DEV_FB_USED, gauge, fb\n"
            + "".join(f"{name}, gauge, e\n" for name in EXPORTER_COUNTERS))
    assert warnings(text) == []
