"""Cross-check of ``dcgm-collector --nvml`` against pynvml on a machine with real NVIDIA GPUs.

Runs ``dcgm-collector --nvml -c 100 --watch-interval 100`` (its default
counters) in two phases of --seconds-per-phase each: the GPUs idle, then
under a bf16 matmul load on every GPU (torch in a subprocess; the phase is
skipped with a note when torch or CUDA is missing, or with --no-load).  Every
second it GETs /metrics and, right after, reads the same fields with pynvml
(nvidia-ml-py): for each DCGM field, the NVML call and argument, DCGM's unit
conversion and the tolerance of the cross-check come from the field map
(``reference/nvml/fieldmap.tsv``; a copy of the columns it needs is held
below, so that this file runs alone).  Tolerance forms understood: exact,
``abs(d)<=N``, ``abs(d)<=max(N unit,P%)``, ``within P%``, ``<=N``, ``A==B``
(exact), ``monotonic`` (the served series never goes down), and the energy
rate form (dE/dt of the served counter against pynvml's mean power over at
least the given seconds); a clause prefixed ``idle:``, ``load:`` or
``steady load:`` holds for that phase.  Anything else is reported "not
compared", with the text that was not understood.

Also recorded: the per-field read cost the collector reports in its own
self-metrics (``dcgm_collector_field_*``; "n/a" when this collector has
none), the cost of each pynvml call made here (time.perf_counter and
time.thread_time around it, medians), the collector's CPU (utime + stime of
/proc/<pid>/stat) and RSS in each phase, and the time from its start to the
first /metrics answer holding DCGM_FI_DEV_GPU_TEMP for every GPU.  The report
is markdown, by default ``benchmarks/hardware/<date>-<gpu model>.md`` beside
this file.

With ``--processes`` the collector runs with ``--processes`` too, and the
report gains a section (the checks are in ``hardware_processes.py`` beside
this file, loaded only then: copy both): at every scrape the per-process
series against pynvml's process lists, usedGpuMemory and per-process
utilisation read right after, ``DCGM_EXP_PROCESS_COUNT`` and
``DCGM_EXP_PROCESS_QUERY_SUCCESS``, ``process_name`` against
/proc/<pid>/comm, the load's own process (served on each GPU it uses, busy,
its CPU seconds growing), the idle and busy seconds each phase added per
state and GPU, and the collector's CPU and RSS against short runs without
``--processes`` (one before the idle phase, one under the load after the
load phase).  A process call NVML refuses (NOT_SUPPORTED, NO_PERMISSION) is
reported as such.

Needs only the standard library, pynvml and the installed collector (torch
for the load phase).  ``--simulated`` runs it on a machine without GPUs: the
collector and pynvml both open the simulated libnvidia-ml.so.1 built into the
package (per-call costs off unless DCGM_SIM_NVML_COSTS says otherwise), and
there is no load phase (the simulated NVML runs one synthetic process, pid
4200000 + the GPU's index, on each GPU with a workload; no such pid is in
/proc, so process names are not compared).  Each process's simulated clock starts at its own
nvmlInit, so fast-moving fields differ by the two processes' start offset:
misses there are expected in a dry run.

    python hardware_check.py [--seconds-per-phase 60] [--no-load] [--processes] [--collector CMD] [--out PATH]
    python benchmarks/hardware_check.py --simulated --seconds-per-phase 10 [--processes]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_FIELDMAP = HERE.parent / "reference" / "nvml" / "fieldmap.tsv"
COLLECT_MS = 100
SCRAPE_EVERY_S = 1.0
FIRST_FAMILY = "DCGM_FI_DEV_GPU_TEMP"
READY_TIMEOUT_S = 60.0
LOAD_READY_TIMEOUT_S = 180.0
LOAD_SETTLE_S = 10.0
BASELINE_MAX_S = 20.0     # the runs without --processes, beside a --processes run: at most this long
MIB = 1024 * 1024
UINT_MAX = 0xFFFFFFFF
REEXEC_MARK = "DCGM_HARDWARE_CHECK_SIMULATED"   # set once the --simulated run has its library path
ENERGY_FIELD = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"

# ---- the field map ---------------------------------------------------------------------------------------
#
# The columns of reference/nvml/fieldmap.tsv this script needs, one tuple per row: field id, DCGM name,
# exporter metric names (the counters files' names for the field), on in the shipped default counters,
# nvml_call, nvml_arg_or_field, dcgm_conversion, xcheck_tolerance(proposed).  tests/system/
# test_benchmarks_smoke.py checks that it matches the file.

FIELDMAP_ROWS: tuple[tuple[int, str, tuple[str, ...], bool, str, str, str, str], ...] = (
    (1, "DCGM_FI_SYSTEM_DRIVER_VERSION", ("DCGM_FI_DRIVER_VERSION",), True, "nvmlSystemGetDriverVersion", "buf[80]",
     "none", "exact"),
    (2, "DCGM_FI_SYSTEM_NVML_VERSION", ("DCGM_FI_NVML_VERSION",), False, "nvmlSystemGetNVMLVersion", "buf[80]",
     "none", "exact"),
    (51, "DCGM_FI_DEV_GPU_BRAND", ("DCGM_FI_DEV_BRAND",), False, "nvmlDeviceGetBrand", "nvmlBrandType_t*",
     "enum->string table (Quadro,Tesla,NVS,Grid,...,NVIDIA,GeForce RTX,Titan RTX; else Unknown)", "exact string"),
    (53, "DCGM_FI_DEV_BOARD_SERIAL", ("DCGM_FI_DEV_SERIAL",), False, "nvmlDeviceGetSerial", "buf[30]", "none",
     "exact"),
    (56, "DCGM_FI_DEV_INFOROM_OEM_VERSION", ("DCGM_FI_DEV_OEM_INFOROM_VER",), False, "nvmlDeviceGetInforomVersion",
     "NVML_INFOROM_OEM=0, buf[16]", "none", "exact"),
    (80, "DCGM_FI_DEV_INFOROM_ECC_VERSION", ("DCGM_FI_DEV_ECC_INFOROM_VER",), False, "nvmlDeviceGetInforomVersion",
     "NVML_INFOROM_ECC=1, buf[16]", "none", "exact"),
    (81, "DCGM_FI_DEV_INFOROM_POWER_VERSION", ("DCGM_FI_DEV_POWER_INFOROM_VER",), False,
     "nvmlDeviceGetInforomVersion", "NVML_INFOROM_POWER=2, buf[16]", "none", "exact"),
    (82, "DCGM_FI_DEV_INFOROM_IMAGE_VERSION", ("DCGM_FI_DEV_INFOROM_IMAGE_VER",), False,
     "nvmlDeviceGetInforomImageVersion", "buf[16]", "none", "exact"),
    (85, "DCGM_FI_DEV_VBIOS_VERSION", ("DCGM_FI_DEV_VBIOS_VERSION",), False, "nvmlDeviceGetVbiosVersion", "buf[32]",
     "none", "exact"),
    (100, "DCGM_FI_DEV_SM_CLOCK", ("DCGM_FI_DEV_SM_CLOCK", "dcgm_sm_clock"), True, "nvmlDeviceGetClockInfo",
     "NVML_CLOCK_SM=1", "none", "idle: exact; load: abs(d)<=max(30 MHz,2%)"),
    (101, "DCGM_FI_DEV_MEM_CLOCK", ("DCGM_FI_DEV_MEM_CLOCK", "dcgm_memory_clock"), True, "nvmlDeviceGetClockInfo",
     "NVML_CLOCK_MEM=2", "none", "exact (HBM clock is fixed in P0)"),
    (140, "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", ("DCGM_FI_DEV_MEMORY_TEMP", "dcgm_memory_temp"), True,
     "nvmlDeviceGetFieldValues", "NVML_FI_DEV_MEMORY_TEMP=82 (read value.uiVal whatever valueType says)",
     "none; value>200 -> error/blank", "abs(d)<=2"),
    (150, "DCGM_FI_DEV_GPU_TEMP_CELSIUS", ("DCGM_FI_DEV_GPU_TEMP", "dcgm_gpu_temp"), True, "nvmlDeviceGetTemperature",
     "NVML_TEMPERATURE_GPU=0 (NVML 13: deprecated -> nvmlDeviceGetTemperatureV)", "none; value>200 -> sample dropped",
     "abs(d)<=2"),
    (155, "DCGM_FI_DEV_BOARD_POWER_WATTS", ("DCGM_FI_DEV_POWER_USAGE", "dcgm_power_usage"), True,
     "nvmlDeviceGetPowerUsage", "unsigned int mW", "/1000.0", "steady load: abs(d)<=max(5 W,3%)"),
    (156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
     ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "dcgm_total_energy_consumption"), True,
     "nvmlDeviceGetFieldValues (batched)",
     "NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION=83 (alt: nvmlDeviceGetTotalEnergyConsumption)",
     "none (NvmlFieldValueToInt64)", "dE[mJ]/dt[ms] within 5% of mean power.draw over >=10 s"),
    (202, "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "dcgm_pcie_replay_counter"), True,
     "nvmlDeviceGetPcieReplayCounter", "unsigned int*", "none", "exact (counter)"),
    (203, "DCGM_FI_DEV_GPU_UTIL_RATIO", ("DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization"), True,
     "nvmlDeviceGetUtilizationRates", "nvmlUtilization_t.gpu", "none", "idle: 0==0; steady load: abs(d)<=10 pp"),
    (204, "DCGM_FI_DEV_MEM_COPY_UTIL", ("DCGM_FI_DEV_MEM_COPY_UTIL", "dcgm_mem_copy_utilization"), True,
     "nvmlDeviceGetUtilizationRates", "nvmlUtilization_t.memory", "none", "steady load: abs(d)<=10 pp"),
    (206, "DCGM_FI_DEV_ENC_UTIL", ("DCGM_FI_DEV_ENC_UTIL", "dcgm_enc_utilization"), True,
     "nvmlDeviceGetEncoderUtilization", "utilization, samplingPeriodUs", "none", "abs(d)<=10 pp"),
    (207, "DCGM_FI_DEV_DEC_UTIL", ("DCGM_FI_DEV_DEC_UTIL", "dcgm_dec_utilization"), True,
     "nvmlDeviceGetDecoderUtilization", "utilization, samplingPeriodUs", "none", "abs(d)<=10 pp"),
    (230, "DCGM_FI_DEV_XID_ERROR", ("DCGM_FI_DEV_XID_ERRORS", "dcgm_xid_errors"), True,
     "nvmlEventSetCreate / nvmlDeviceRegisterEvents / nvmlEventSetWait_v2",
     "nvmlEventTypeXidCriticalError=0x8; value = nvmlEventData_t.eventData", "none (last value wins)",
     "event-driven; not comparable without XID injection"),
    (240, "DCGM_FI_DEV_POWER_VIOLATION", ("DCGM_FI_DEV_POWER_VIOLATION", "dcgm_power_violation"), False,
     "nvmlDeviceGetFieldValues (batched)",
     "NVML_FI_DEV_PERF_POLICY_POWER=74 (== NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP)", "none",
     "monotonic; ratio DCGM/smi must be ~1 or ~1000 (unit unresolved)"),
    (241, "DCGM_FI_DEV_THERMAL_VIOLATION", ("DCGM_FI_DEV_THERMAL_VIOLATION", "dcgm_thermal_violation"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_PERF_POLICY_THERMAL=75", "none",
     "monotonic; compare only if both move"),
    (242, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", ("DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "dcgm_sync_boost_violation"),
     False, "nvmlDeviceGetFieldValues (batched)",
     "NVML_FI_DEV_PERF_POLICY_SYNC_BOOST=76 (== ..._CLOCKS_EVENT_REASON_SYNC_BOOST)", "none", "as 240"),
    (243, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", ("DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "dcgm_board_limit_violation"),
     False, "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT=77", "none",
     "monotonic non-decreasing only"),
    (244, "DCGM_FI_DEV_LOW_UTIL_VIOLATION", ("DCGM_FI_DEV_LOW_UTIL_VIOLATION", "dcgm_low_util_violation"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION=78", "none",
     "monotonic non-decreasing only"),
    (245, "DCGM_FI_DEV_RELIABILITY_VIOLATION", ("DCGM_FI_DEV_RELIABILITY_VIOLATION", "dcgm_reliability_violation"),
     False, "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_PERF_POLICY_RELIABILITY=79", "none",
     "monotonic non-decreasing only"),
    (251, "DCGM_FI_DEV_FB_FREE", ("DCGM_FI_DEV_FB_FREE", "dcgm_fb_free"), True,
     "nvmlDeviceGetMemoryInfo_v2 (driver>=510; else nvmlDeviceGetMemoryInfo)",
     "nvmlMemory_v2_t{version=nvmlMemory_v2=0x02000028}.free", "/(1024*1024), integer floor", "idle: abs(d)<=1 MiB"),
    (252, "DCGM_FI_DEV_FB_USED", ("DCGM_FI_DEV_FB_USED", "dcgm_fb_used"), True, "nvmlDeviceGetMemoryInfo_v2",
     "nvmlMemory_v2_t.used (excludes reserved; v1 .used includes it)", "/(1024*1024), integer floor",
     "idle: abs(d)<=1 MiB"),
    (253, "DCGM_FI_DEV_FB_RESERVED", ("DCGM_FI_DEV_FB_RESERVED",), True, "nvmlDeviceGetMemoryInfo_v2",
     "nvmlMemory_v2_t.reserved", "/(1024*1024); NOT_SUPPORTED if driver<510", "exact"),
    (310, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "dcgm_ecc_sbe_volatile_total"), False,
     "nvmlDeviceGetFieldValues (batched)",
     "NVML_FI_DEV_ECC_SBE_VOL_TOTAL=3 (alt nvmlDeviceGetTotalEccErrors(CORRECTED,VOLATILE))",
     "none (valueType forced ULL, CM:6717)", "exact (counter)"),
    (311, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "dcgm_ecc_dbe_volatile_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_ECC_DBE_VOL_TOTAL=4", "none", "exact"),
    (312, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "dcgm_ecc_sbe_aggregate_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_ECC_SBE_AGG_TOTAL=5", "none", "exact"),
    (313, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "dcgm_ecc_dbe_aggregate_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_ECC_DBE_AGG_TOTAL=6", "none", "exact"),
    (390, "DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL", ("DCGM_FI_DEV_RETIRED_SBE", "dcgm_retired_pages_sbe"), False,
     "nvmlDeviceGetRetiredPages",
     "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS=0, *pageCount=0, addresses=NULL "
     "(INSUFFICIENT_SIZE accepted)",
     "none", "exact"),
    (391, "DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL", ("DCGM_FI_DEV_RETIRED_DBE", "dcgm_retired_pages_dbe"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_RETIRED_DBE=30", "none", "exact"),
    (392, "DCGM_FI_DEV_PAGE_RETIRED_PENDING", ("DCGM_FI_DEV_RETIRED_PENDING", "dcgm_retired_pages_pending"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_RETIRED_PENDING=31", "none", "Yes==1"),
    (393, "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",), True,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_REMAPPED_UNC=143 (alt nvmlDeviceGetRemappedRows uncRows)",
     "none", "exact"),
    (394, "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",), True,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_REMAPPED_COR=142", "none", "exact"),
    (395, "DCGM_FI_DEV_ROW_REMAP_FAILED", ("DCGM_FI_DEV_ROW_REMAP_FAILURE",), True,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_REMAPPED_FAILURE=145", "none", "Yes==1"),
    (409, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL",
     ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "dcgm_nvlink_flit_crc_error_count_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL=38", "none",
     "exact (sum over links)"),
    (419, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL",
     ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "dcgm_nvlink_data_crc_error_count_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL=45", "none", "exact"),
    (429, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL",
     ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "dcgm_nvlink_replay_error_count_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL=52", "none", "exact"),
    (439, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL",
     ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "dcgm_nvlink_recovery_error_count_total"), False,
     "nvmlDeviceGetFieldValues (batched)", "NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL=59", "none", "exact"),
    (440, "DCGM_FI_DEV_NVLINK_THROUGHPUT_L0", ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",), False, "nvmlDeviceGetFieldValues",
     "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX=139 + _DATA_TX=138, scopeId=0 (link 0)",
     "(sum_now-sum_prev)/dt_s/1000 ('KiB/s->MiB/s'); first sample 0", "rate from smi counter deltas within 10%"),
    (449, "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL",
     ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "dcgm_nvlink_bandwidth_total"), True, "nvmlDeviceGetFieldValues",
     "as 440 with scopeId=UINT_MAX (all links)", "as 440", "within 10%"),
    (526, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", ("DCGM_FI_DEV_VGPU_LICENSE_STATUS",), True,
     "nvmlDeviceGetGridLicensableFeatures (unversioned symbol; header macro -> _v4)",
     "featureState>0 of entry with featureCode==NVML_GRID_LICENSE_FEATURE_CODE_VGPU(1); 0 if "
     "!isGridLicenseSupported",
     "none", "Licensed==1"),
    (1001, "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "dcgm_fi_prof_gr_engine_active"),
     True, "GPM: nvmlGpmSampleGet x2 + nvmlGpmMetricsGet", "NVML_GPM_METRIC_GRAPHICS_UTIL=1", "/100",
     "abs(ratio - smi/100)<=0.05 (steady load)"),
    (1002, "DCGM_FI_PROF_SM_UTIL_RATIO", ("DCGM_FI_PROF_SM_ACTIVE", "dcgm_fi_prof_sm_active"), False, "GPM",
     "NVML_GPM_METRIC_SM_UTIL=2", "/100", "<=0.05"),
    (1003, "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", ("DCGM_FI_PROF_SM_OCCUPANCY", "dcgm_fi_prof_sm_occupancy"), False,
     "GPM", "NVML_GPM_METRIC_SM_OCCUPANCY=3", "/100", "<=0.05"),
    (1004, "DCGM_FI_PROF_TENSOR_UTIL_RATIO", ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "dcgm_fi_prof_pipe_tensor_active"),
     True, "GPM", "NVML_GPM_METRIC_ANY_TENSOR_UTIL=5", "/100", "<=0.05"),
    (1005, "DCGM_FI_PROF_DRAM_UTIL_RATIO", ("DCGM_FI_PROF_DRAM_ACTIVE", "dcgm_fi_prof_dram_active"), True, "GPM",
     "NVML_GPM_METRIC_DRAM_BW_UTIL=10", "/100", "<=0.05"),
    (1006, "DCGM_FI_PROF_FP64_UTIL_RATIO", ("DCGM_FI_PROF_PIPE_FP64_ACTIVE",), False, "GPM",
     "NVML_GPM_METRIC_FP64_UTIL=11", "/100", "<=0.05"),
    (1007, "DCGM_FI_PROF_FP32_UTIL_RATIO", ("DCGM_FI_PROF_PIPE_FP32_ACTIVE",), False, "GPM",
     "NVML_GPM_METRIC_FP32_UTIL=12", "/100", "<=0.05"),
    (1008, "DCGM_FI_PROF_FP16_UTIL_RATIO", ("DCGM_FI_PROF_PIPE_FP16_ACTIVE",), False, "GPM",
     "NVML_GPM_METRIC_FP16_UTIL=13", "/100", "<=0.05"),
    (1009, "DCGM_FI_PROF_PCIE_TX_BYTES", ("DCGM_FI_PROF_PCIE_TX_BYTES", "dcgm_fi_prof_pcie_tx_bytes"), True, "GPM",
     "NVML_GPM_METRIC_PCIE_TX_PER_SEC=20", "*1024*1024", "within 10% under steady copy load"),
    (1010, "DCGM_FI_PROF_PCIE_RX_BYTES", ("DCGM_FI_PROF_PCIE_RX_BYTES", "dcgm_fi_prof_pcie_rx_bytes"), True, "GPM",
     "NVML_GPM_METRIC_PCIE_RX_PER_SEC=21", "*1024*1024", "within 10%"),
)


@dataclass(frozen=True)
class FieldRow:
    field_id: int
    dcgm_name: str
    exporter_names: tuple[str, ...]
    default_on: bool
    nvml_call: str
    nvml_arg: str
    conversion: str
    tolerance: str

    @property
    def name(self) -> str:
        """The name the collector serves it under (the default counters' name), else DCGM's."""
        return self.exporter_names[0] if self.exporter_names else self.dcgm_name


def embedded_fieldmap() -> list[FieldRow]:
    return [FieldRow(*row) for row in FIELDMAP_ROWS]


def fieldmap_from_tsv(path: str | os.PathLike[str]) -> list[FieldRow]:
    """The rows of a fieldmap.tsv (tab separated, a header line), in the form this script uses."""
    lines = Path(path).read_text().splitlines()
    header = lines[0].split("\t")
    col = {name: i for i, name in enumerate(header)}
    exporter_col = next(i for name, i in col.items() if name.startswith("exporter_rows"))
    tolerance_col = next(i for name, i in col.items() if name.startswith("xcheck_tolerance"))
    rows = []
    for line in lines[1:]:
        if not line.strip():
            continue
        cells = line.split("\t")
        names: list[str] = []
        default_on = False
        for token in cells[exporter_col].split():
            source, name, enabled = token.rsplit(":", 2)
            if name not in names:
                names.append(name)
            default_on = default_on or (source == "default-counters" and enabled == "yes")
        rows.append(FieldRow(int(cells[col["field_id"]]), cells[col["dcgm_name"]], tuple(names), default_on,
                             cells[col["nvml_call"]], cells[col["nvml_arg_or_field"]], cells[col["dcgm_conversion"]],
                             cells[tolerance_col]))
    return rows


def load_fieldmap(path: str | None) -> tuple[list[FieldRow], str]:
    """(rows, where they came from): the file given, else the repository's file when this script sits in
    its checkout, else the copy above."""
    if path:
        return fieldmap_from_tsv(path), path
    if REPO_FIELDMAP.is_file():
        return fieldmap_from_tsv(REPO_FIELDMAP), str(REPO_FIELDMAP)
    return embedded_fieldmap(), "the copy held in hardware_check.py"


# ---- tolerances ------------------------------------------------------------------------------------------

VALUE_KINDS = ("exact", "abs", "abs_or_pct", "pct")


@dataclass(frozen=True)
class Rule:
    kind: str            # exact, abs, abs_or_pct, pct (one sample against one reading), energy_rate, monotonic
    text: str
    limit: float = 0.0   # abs: the largest |served - pynvml|
    pct: float = 0.0     # pct, abs_or_pct, energy_rate: percent of the pynvml value
    min_s: float = 0.0   # energy_rate: the shortest span the rate is taken over

    def allows(self, served: object, ref: object) -> tuple[bool, float | None]:
        """(within, |difference| or None for strings) of one served value against one pynvml value."""
        a, b = _number(served), _number(ref)
        if a is None or b is None:
            return str(served).strip() == str(ref).strip(), None
        d = abs(a - b)
        if self.kind == "exact":
            return d <= 1e-6 * max(1.0, abs(b)), d
        if self.kind == "abs":
            return d <= self.limit + 1e-9, d
        if self.kind == "abs_or_pct":
            return d <= max(self.limit, self.pct / 100 * abs(b)) + 1e-9, d
        return d <= self.pct / 100 * abs(b) + 1e-9, d


_PHASE_PREFIX = re.compile(r"^(idle|load|steady load)\s*:\s*(.*)$")
_TRAILING_NOTE = re.compile(r"\s+\([^()]*\)$|\s+under [a-z ]+$")
_CLAUSES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], str], Rule]], ...] = (
    (re.compile(r"^dE\b.*?within\s+([\d.]+)\s*%.*?>=\s*([\d.]+)\s*s\b"),
     lambda m, t: Rule("energy_rate", t, pct=float(m[1]), min_s=float(m[2]))),
    (re.compile(r"^exact\b"), lambda m, t: Rule("exact", t)),
    (re.compile(r"^\w+\s*==\s*\w+$"), lambda m, t: Rule("exact", t)),
    (re.compile(r"^abs\(d\)\s*<=\s*max\(\s*([\d.]+)\s*[A-Za-z]*\s*,\s*([\d.]+)\s*%\s*\)$"),
     lambda m, t: Rule("abs_or_pct", t, limit=float(m[1]), pct=float(m[2]))),
    (re.compile(r"^abs\([^)]*\)\s*<=\s*([\d.]+)\s*[A-Za-z]*$"), lambda m, t: Rule("abs", t, limit=float(m[1]))),
    (re.compile(r"^<=\s*([\d.]+)$"), lambda m, t: Rule("abs", t, limit=float(m[1]))),
    (re.compile(r"\bwithin\s+([\d.]+)\s*%"), lambda m, t: Rule("pct", t, pct=float(m[1]))),
    (re.compile(r"^monotonic\b"), lambda m, t: Rule("monotonic", t)),
)


def parse_clause(clause: str) -> Rule | None:
    text = clause.strip()
    body = text
    while (stripped := _TRAILING_NOTE.sub("", body)) != body:
        body = stripped
    for pattern, make in _CLAUSES:
        match = pattern.search(body)
        if match:
            return make(match, text)
    return None


@dataclass
class Tolerance:
    text: str
    rules: dict[str, Rule]            # "idle", "load" or "any" (no phase given)
    not_understood: list[str]

    def for_phase(self, phase: str) -> tuple[Rule | None, str]:
        """The rule for a phase, and a note when it was borrowed from the other phase."""
        rule = self.rules.get(phase) or self.rules.get("any")
        if rule is not None:
            return rule, ""
        other = "load" if phase == "idle" else "idle"
        if other in self.rules:
            return self.rules[other], f"{other} rule (none given for {phase})"
        return None, ""


def parse_tolerance(text: str) -> Tolerance:
    rules: dict[str, Rule] = {}
    not_understood = []
    for clause in text.split(";"):
        clause = clause.strip()
        if not clause:
            continue
        prefix = _PHASE_PREFIX.match(clause)
        phase = ("load" if "load" in prefix[1] else "idle") if prefix else "any"
        rule = parse_clause(prefix[2] if prefix else clause)
        if rule is None:
            not_understood.append(clause)
        else:
            rules.setdefault(phase, rule)
    return Tolerance(text, rules, not_understood)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


# ---- the exposition and the collector's self-metrics -------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Sample = tuple[str, dict[str, str], float]


def parse_exposition(text: str) -> list[Sample]:
    """(name, labels, value) of every sample line of a Prometheus text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        try:
            value = float(match[3])
        except ValueError:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL.findall(match[2] or "")}
        out.append((match[1], labels, value))
    return out


FIELD_READS = "dcgm_collector_field_reads_total"
FIELD_READ_SECONDS = "dcgm_collector_field_read_seconds_total"
FIELD_INTERVAL = "dcgm_collector_field_read_interval_seconds"
FIELD_CORRECTION = "dcgm_collector_field_estimate_correction"
FIELD_CORRECTION_MAX = "dcgm_collector_field_estimate_correction_max"
FIELD_LATE = "dcgm_collector_field_late_samples_total"


@dataclass
class SelfSnapshot:
    """The collector's self-metrics at one scrape; None where the family is absent."""
    ticks: float | None = None
    skipped: float | None = None
    late: float | None = None
    reads: dict[str, float] | None = None           # field -> reads, summed over the other labels
    read_seconds: dict[str, float] | None = None
    interval: dict[str, float] | None = None        # field -> median over the other labels
    correction: dict[str, float] | None = None      # field -> largest |value| over the other labels
    correction_max: dict[str, float] | None = None


def self_snapshot(samples: Iterable[Sample]) -> SelfSnapshot:
    sums: dict[str, float] = {}
    by_field: dict[str, dict[str, list[float]]] = {}
    for name, labels, value in samples:
        if not name.startswith("dcgm_collector_"):
            continue
        if name in (FIELD_READS, FIELD_READ_SECONDS, FIELD_INTERVAL, FIELD_CORRECTION, FIELD_CORRECTION_MAX):
            by_field.setdefault(name, {}).setdefault(labels.get("field", "?"), []).append(value)
        elif name in ("dcgm_collector_ticks_total", "dcgm_collector_skipped_ticks_total", FIELD_LATE):
            sums[name] = sums.get(name, 0.0) + value

    def per_field(name: str, how: Callable[[list[float]], float]) -> dict[str, float] | None:
        values = by_field.get(name)
        return None if values is None else {f: how(v) for f, v in values.items()}

    def largest(values: list[float]) -> float:
        return max(values, key=abs)

    return SelfSnapshot(sums.get("dcgm_collector_ticks_total"), sums.get("dcgm_collector_skipped_ticks_total"),
                        sums.get(FIELD_LATE), per_field(FIELD_READS, sum), per_field(FIELD_READ_SECONDS, sum),
                        per_field(FIELD_INTERVAL, statistics.median), per_field(FIELD_CORRECTION, largest),
                        per_field(FIELD_CORRECTION_MAX, largest))


@dataclass
class FieldCost:
    field: str
    reads_per_s: float
    us_per_read: float | None
    core_percent: float | None
    cadence_s: float | None


def field_costs(before: SelfSnapshot, after: SelfSnapshot, wall_s: float) -> list[FieldCost] | None:
    """Per-field read cost between two snapshots; None when the collector reports none."""
    if after.reads is None:
        return None
    out = []
    for name, reads in sorted(after.reads.items()):
        n = reads - (before.reads or {}).get(name, 0.0)
        seconds = None
        if after.read_seconds is not None and name in after.read_seconds:
            seconds = after.read_seconds[name] - (before.read_seconds or {}).get(name, 0.0)
        out.append(FieldCost(name, n / wall_s, seconds / n * 1e6 if seconds is not None and n else None,
                             100.0 * seconds / wall_s if seconds is not None else None,
                             (after.interval or {}).get(name)))
    return out


def delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def fmt(value: object, digits: int = 6) -> str:
    """A cell: "n/a" for None, numbers compact, "|" escaped."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        text = f"{value:.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.{digits}g}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


# ---- a process seen through /proc and HTTP ---------------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of the whole process so far (/proc/<pid>/stat fields 14 and 15)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0) -> str | None:
    """The body of a 200 answer; None for anything else."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read().decode(errors="replace")
    except (urllib.error.URLError, OSError):
        return None


class Child:
    """A subprocess in a session of its own, its output in a file; stop() ends its whole process group."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: str) -> None:
        self.command = command
        self.log = tempfile.TemporaryFile()
        self.started = time.monotonic()
        self.popen = subprocess.Popen(command, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            if self.popen.poll() is not None:
                break
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)   # anything it left behind in its group
        except (ProcessLookupError, PermissionError):
            pass
        if self.popen.poll() is None:
            self.popen.wait()
        self.log.close()


# ---- pynvml readers ----------------------------------------------------------------------------------------

_ENUM = re.compile(r"\b([A-Z_][A-Z0-9_]*)=(\d+)")
_MEMBER = re.compile(r"\b\w+_t(?:\{[^}]*\})?\.(\w+)")
_SCOPE = re.compile(r"scopeId=(\w+)")
_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def conversion(text: str) -> tuple[str, Callable[[float], object]] | str:
    """(kind, function) of a dcgm_conversion cell: kind "value" or "rate" (the function then takes the
    counter's change per second); a string says why it is not understood."""
    t = text.strip()
    if t.startswith("(sum_now-sum_prev)/dt_s/1000"):
        return "rate", lambda per_s: per_s / 1000.0
    if t.startswith("/(1024*1024)"):
        return "value", lambda x: int(x) // MIB
    if t.startswith("/1000"):
        return "value", lambda x: x / 1000.0
    if t.startswith("/100"):
        return "value", lambda x: x / 100.0
    if t.startswith("*1024*1024"):
        return "value", lambda x: x * MIB
    if t.startswith("none"):
        return "value", lambda x: x
    return f"conversion not implemented here: {t!r}"


class Reader:
    """How this script reads one DCGM field with pynvml."""

    def __init__(self, label: str, read: Callable[[object, int], object], kind: str,
                 convert: Callable[[float], object]) -> None:
        self.label, self._read, self.kind, self.convert = label, read, kind, convert

    def read(self, handle: object, gpu: int) -> object:
        return self._read(handle, gpu)


class GpmReader:
    """A GPM metric between this reading's sample and the previous one of the same GPU."""

    def __init__(self, nv, metric_id: int) -> None:
        self.nv, self.metric_id = nv, metric_id
        self.samples: dict[int, list] = {}
        self.taken: set[int] = set()

    def __call__(self, handle: object, gpu: int) -> object:
        nv = self.nv
        pair = self.samples.get(gpu)
        if pair is None:
            pair = self.samples[gpu] = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
        nv.nvmlGpmSampleGet(handle, pair[1])
        if gpu not in self.taken:
            self.taken.add(gpu)
            pair.reverse()
            return None
        request = nv.c_nvmlGpmMetricsGet_t()
        request.version = nv.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 1
        request.sample1, request.sample2 = pair[0], pair[1]
        request.metrics[0].metricId = self.metric_id
        nv.nvmlGpmMetricsGet(request)
        pair.reverse()
        if request.metrics[0].nvmlReturn != 0:
            raise nv.NVMLError(request.metrics[0].nvmlReturn)
        return request.metrics[0].value

    def free(self) -> None:
        for pair in self.samples.values():
            for sample in pair:
                try:
                    self.nv.nvmlGpmSampleFree(sample)
                except Exception:   # best effort at the end
                    pass


def make_reader(row: FieldRow, rows_by_id: dict[int, FieldRow], nv) -> Reader | str:
    """A pynvml reader for a field map row, or why there is none."""
    call = row.nvml_call.split()[0].rstrip(":") if row.nvml_call.strip() else ""
    arg, conv_text = row.nvml_arg, row.conversion
    ids_arg = arg
    if (same := re.match(r"^as (\d+)\b", arg)) and int(same[1]) in rows_by_id:
        ids_arg = rows_by_id[int(same[1])].nvml_arg
    if (same := re.match(r"^as (\d+)\b", conv_text)) and int(same[1]) in rows_by_id:
        conv_text = rows_by_id[int(same[1])].conversion
    converted = conversion(conv_text)
    if isinstance(converted, str):
        return converted
    kind, convert = converted
    enums = [(name, int(n)) for name, n in _ENUM.findall(ids_arg)]
    enum = enums[0][1] if enums else None
    member = _MEMBER.search(arg)

    def need_enum() -> int:
        if enum is None:
            raise ValueError(f"no NAME=N argument in {arg!r}")
        return enum

    simple: dict[str, Callable[[object, int], object]] = {
        "nvmlSystemGetDriverVersion": lambda h, g: _text(nv.nvmlSystemGetDriverVersion()),
        "nvmlSystemGetNVMLVersion": lambda h, g: _text(nv.nvmlSystemGetNVMLVersion()),
        "nvmlDeviceGetSerial": lambda h, g: _text(nv.nvmlDeviceGetSerial(h)),
        "nvmlDeviceGetVbiosVersion": lambda h, g: _text(nv.nvmlDeviceGetVbiosVersion(h)),
        "nvmlDeviceGetInforomImageVersion": lambda h, g: _text(nv.nvmlDeviceGetInforomImageVersion(h)),
        "nvmlDeviceGetInforomVersion": lambda h, g: _text(nv.nvmlDeviceGetInforomVersion(h, need_enum())),
        "nvmlDeviceGetClockInfo": lambda h, g: nv.nvmlDeviceGetClockInfo(h, need_enum()),
        "nvmlDeviceGetTemperature": lambda h, g: nv.nvmlDeviceGetTemperature(h, need_enum()),
        "nvmlDeviceGetPowerUsage": lambda h, g: nv.nvmlDeviceGetPowerUsage(h),
        "nvmlDeviceGetPcieReplayCounter": lambda h, g: nv.nvmlDeviceGetPcieReplayCounter(h),
        "nvmlDeviceGetEncoderUtilization": lambda h, g: nv.nvmlDeviceGetEncoderUtilization(h)[0],
        "nvmlDeviceGetDecoderUtilization": lambda h, g: nv.nvmlDeviceGetDecoderUtilization(h)[0],
        "nvmlDeviceGetRetiredPages": lambda h, g: len(nv.nvmlDeviceGetRetiredPages(h, need_enum())),
    }
    if call in simple:
        if call in ("nvmlDeviceGetInforomVersion", "nvmlDeviceGetClockInfo", "nvmlDeviceGetTemperature",
                    "nvmlDeviceGetRetiredPages") and enum is None:
            return f"no NAME=N argument in {arg!r}"
        label = f"{call}({enums[0][0]})" if enums and call != "nvmlSystemGetDriverVersion" else call
        return Reader(label, simple[call], kind, convert)
    if call == "nvmlDeviceGetUtilizationRates":
        if member is None:
            return f"no struct member in {arg!r}"
        name = member[1]
        return Reader(f"{call}().{name}", lambda h, g: getattr(nv.nvmlDeviceGetUtilizationRates(h), name), kind,
                      convert)
    if call.startswith("nvmlDeviceGetMemoryInfo"):
        if member is None:
            return f"no struct member in {arg!r}"
        name = member[1]
        v2 = getattr(nv, "nvmlMemory_v2", None)
        return Reader(f"nvmlDeviceGetMemoryInfo{'_v2' if v2 else ''}().{name}",
                      lambda h, g: getattr(nv.nvmlDeviceGetMemoryInfo(h, version=v2) if v2
                                           else nv.nvmlDeviceGetMemoryInfo(h), name), kind, convert)
    if call == "nvmlDeviceGetFieldValues":
        if not enums:
            return f"no field id in {arg!r}"
        scope_text = _SCOPE.search(arg)
        scope = None if scope_text is None else (UINT_MAX if scope_text[1] == "UINT_MAX" else int(scope_text[1]))
        wanted = [(n, scope) if scope is not None else n for _, n in enums]
        force_uint = "uiVal" in arg

        def read_fields(h: object, g: int) -> object:
            total = 0
            for fv in nv.nvmlDeviceGetFieldValues(h, wanted):
                if fv.nvmlReturn != 0:
                    raise nv.NVMLError(fv.nvmlReturn)
                total += fv.value.uiVal if force_uint else getattr(fv.value, _VALUE_MEMBERS.get(fv.valueType, "ullVal"))
            return total

        ids = "+".join(str(n) for _, n in enums)
        return Reader(f"{call}([{ids}]{'' if scope is None else f', scope {scope_text[1]}'})", read_fields, kind,
                      convert)
    if call == "GPM":
        if enum is None:
            return f"no GPM metric id in {arg!r}"
        if not hasattr(nv, "nvmlGpmMetricsGet"):
            return "this pynvml has no GPM calls"
        return Reader(f"nvmlGpmSampleGet+nvmlGpmMetricsGet({enums[0][0]})", GpmReader(nv, enum), "gpm", convert)
    return f"no pynvml reader here for {row.nvml_call!r}"


# ---- the run -----------------------------------------------------------------------------------------------

@dataclass
class Scrape:
    phase: str
    t: float                                   # monotonic, at the GET
    ok: bool
    duration_s: float
    served: dict[tuple[int, str], object]      # (field id, gpu label) -> served value
    refs: dict[tuple[int, str], object]        # (field id, gpu label) -> pynvml value, or NvmlFailure
    ref_t: dict[tuple[int, str], float]
    snapshot: SelfSnapshot | None


@dataclass(frozen=True)
class NvmlFailure:
    text: str


@dataclass
class PhaseStats:
    name: str
    seconds: float = 0.0
    cpu_percent: float | None = None
    rss_mib: float | None = None
    ticks: float | None = None
    skipped: float | None = None
    late: float | None = None
    note: str = ""


@dataclass
class Run:
    rows: list[FieldRow]
    fieldmap_source: str
    gpus: list[dict[str, str]]                 # index, name, uuid
    system: dict[str, str]
    simulated: bool
    command: list[str]
    gpu_labels: dict[str, int] = field(default_factory=dict)   # served gpu label -> pynvml index
    first_sample_s: float | None = None
    scrapes: list[Scrape] = field(default_factory=list)
    phases: list[PhaseStats] = field(default_factory=list)
    readers: dict[int, Reader | str] = field(default_factory=dict)
    costs: dict[str, list[tuple[float, float]]] = field(default_factory=dict)   # call -> [(wall s, cpu s)]
    notes: list[str] = field(default_factory=list)
    processes: object = None                   # the ProcessChecker, with --processes
    baselines: dict[str, PhaseStats] = field(default_factory=dict)   # phase -> the run without --processes


def served_values(samples: list[Sample], by_name: dict[str, FieldRow]) -> dict[tuple[int, str], object]:
    """(field id, gpu label) -> value, for the map's fields served as a family or as a label."""
    out: dict[tuple[int, str], object] = {}
    for name, labels, value in samples:
        gpu = labels.get("gpu")
        if gpu is None:
            continue
        row = by_name.get(name)
        if row is not None:
            out.setdefault((row.field_id, gpu), value)
        for key, text in labels.items():
            row = by_name.get(key)
            if row is not None:
                out.setdefault((row.field_id, gpu), text)
    return out


def gpus_serving(samples: list[Sample], family: str) -> dict[str, str]:
    """gpu label -> UUID label of the series of a family."""
    return {labels["gpu"]: labels.get("UUID", "") for name, labels, _ in samples if name == family and "gpu" in labels}


def wait_first_sample(collector: Child, url: str, gpus: int) -> tuple[float, list[Sample]]:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        body = http_get(url, timeout=2.0)
        if body is not None:
            samples = parse_exposition(body)
            if len(gpus_serving(samples, FIRST_FAMILY)) >= gpus:
                return time.monotonic() - collector.started, samples
        if not collector.alive():
            raise RuntimeError(f"the collector exited with {collector.popen.returncode}:\n{collector.output()}")
        time.sleep(0.02)
    raise TimeoutError(f"{url} had no {FIRST_FAMILY} for {gpus} GPUs after {READY_TIMEOUT_S:g} s:\n"
                       f"{collector.output()}")


LOAD_CODE = """
import sys, torch
n = torch.cuda.device_count()
if not torch.cuda.is_available() or n == 0:
    print("no CUDA device", flush=True)
    sys.exit(3)
pairs = [(torch.randn(8192, 8192, device=f"cuda:{i}", dtype=torch.bfloat16),
          torch.randn(8192, 8192, device=f"cuda:{i}", dtype=torch.bfloat16)) for i in range(n)]
print(f"ready on {n} GPUs", flush=True)
while True:
    for i, (a, b) in enumerate(pairs):
        with torch.cuda.device(i):
            for _ in range(16):
                torch.matmul(a, b)
    for i in range(n):
        torch.cuda.synchronize(i)
"""


def start_load(env: dict[str, str], cwd: str) -> tuple[Child | None, str]:
    """The bf16 matmul load on every GPU, once it runs; else None and why not."""
    if importlib.util.find_spec("torch") is None:
        return None, "torch is not importable here: no load phase"
    load = Child([sys.executable, "-c", LOAD_CODE], env, cwd)
    deadline = time.monotonic() + LOAD_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        out = load.output()
        if "ready" in out:
            time.sleep(LOAD_SETTLE_S)
            if load.alive():
                return load, f"torch bf16 8192x8192 matmuls, {out.strip().splitlines()[-1]}, after {LOAD_SETTLE_S:g} s"
        if not load.alive():
            load.stop()
            return None, f"the load did not start (exit {load.popen.returncode}): {out.strip()[-300:]}"
        time.sleep(0.2)
    load.stop()
    return None, f"the load was not ready after {LOAD_READY_TIMEOUT_S:g} s"


def baseline_run(command: list[str], cwd: str, gpus: int, seconds: float, name: str) -> PhaseStats:
    """The collector without --processes, on a port of its own, for ``seconds`` after its first sample:
    its CPU and RSS, with one GET of /metrics a second as in the phases."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    child = Child(command + ["-a", f"127.0.0.1:{port}"], dict(os.environ), cwd)
    try:
        wait_first_sample(child, url, gpus)
        stats = PhaseStats(name, note="the same command without --processes, from its first sample on")
        cpu0, t0 = cpu_seconds(child.pid), time.monotonic()
        while time.monotonic() < t0 + seconds:
            http_get(url)
            time.sleep(max(0.0, min(SCRAPE_EVERY_S, t0 + seconds - time.monotonic())))
        cpu1, t1 = cpu_seconds(child.pid), time.monotonic()
        stats.seconds = t1 - t0
        if cpu0 is not None and cpu1 is not None:
            stats.cpu_percent = 100.0 * (cpu1 - cpu0) / stats.seconds
        stats.rss_mib = rss_mib(child.pid)
        return stats
    finally:
        child.stop()


def load_process_checks():
    """hardware_processes.py from this file's folder (not a package, so by path)."""
    path = HERE / "hardware_processes.py"
    if not path.is_file():
        raise SystemExit(f"--processes needs hardware_processes.py beside this script: {path} is missing")
    spec = importlib.util.spec_from_file_location("hardware_processes", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("hardware_processes", module)   # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


class Checker:
    def __init__(self, nv, run: Run, url: str, collector: Child) -> None:
        self.nv, self.run, self.url, self.collector = nv, run, url, collector
        self.by_name = {name: row for row in run.rows for name in row.exporter_names}
        self.handles = {i: nv.nvmlDeviceGetHandleByIndex(i) for i in range(len(run.gpus))}
        self.rows_by_id = {row.field_id: row for row in run.rows}
        self.active: list[FieldRow] = []
        self.processes = None   # a hardware_processes.ProcessChecker with --processes: observes each scrape

    def map_gpus(self, first: list[Sample]) -> None:
        """The served gpu labels and the pynvml index of each (by UUID)."""
        uuids = {g["uuid"]: int(g["index"]) for g in self.run.gpus}
        for label, uuid in gpus_serving(first, FIRST_FAMILY).items():
            self.run.gpu_labels[label] = uuids.get(uuid, int(label) if label.isdigit() else -1)

    def add_fields(self, served: dict[tuple[int, str], object]) -> None:
        """Read with pynvml, from now on, each field served for the first time (a slow field such as energy
        has no value in the first answers), and power with energy, for its rate."""
        served_ids = {fid for fid, _ in served}
        if 156 in served_ids:
            served_ids.add(155)
        for row in self.run.rows:
            if row.field_id in served_ids and row.field_id not in self.run.readers:
                self.run.readers[row.field_id] = make_reader(row, self.rows_by_id, self.nv)
                self.active.append(row)

    def scrape(self, phase: str) -> Scrape:
        t = time.monotonic()
        body = http_get(self.url)
        duration = time.monotonic() - t
        samples = parse_exposition(body) if body is not None else []
        result = Scrape(phase, t, body is not None, duration, served_values(samples, self.by_name), {}, {},
                        self_snapshot(samples) if body is not None else None)
        self.add_fields(result.served)
        for row in self.active:
            reader = self.run.readers[row.field_id]
            if isinstance(reader, str):
                continue
            for label, index in self.run.gpu_labels.items():
                if index not in self.handles:
                    continue
                wall0, cpu0 = time.perf_counter(), time.thread_time()
                try:
                    value: object = reader.read(self.handles[index], index)
                except self.nv.NVMLError as error:
                    value = NvmlFailure(str(error))
                except Exception as error:   # one field's reader must not end the run
                    value = NvmlFailure(f"{type(error).__name__}: {error}")
                cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
                self.run.costs.setdefault(reader.label, []).append((wall, cpu))
                result.refs[(row.field_id, label)] = value
                result.ref_t[(row.field_id, label)] = time.monotonic()
        if self.processes is not None and body is not None:
            self.processes.observe(phase, t, samples)
        self.run.scrapes.append(result)
        return result

    def phase(self, name: str, seconds: float, note: str = "") -> PhaseStats:
        stats = PhaseStats(name, note=note)
        pid = self.collector.pid
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        first = self.scrape(name)
        last = first
        while (now := time.monotonic()) < t0 + seconds:
            time.sleep(max(0.0, min(SCRAPE_EVERY_S - (now - last.t), t0 + seconds - now)))
            if time.monotonic() >= t0 + seconds:
                break
            last = self.scrape(name)
            if not self.collector.alive():
                raise RuntimeError(f"the collector exited with {self.collector.popen.returncode}:\n"
                                   f"{self.collector.output()}")
        cpu1, t1 = cpu_seconds(pid), time.monotonic()
        stats.seconds = t1 - t0
        if cpu0 is not None and cpu1 is not None:
            stats.cpu_percent = 100.0 * (cpu1 - cpu0) / stats.seconds
        stats.rss_mib = rss_mib(pid)
        if first.snapshot and last.snapshot:
            stats.ticks = delta(first.snapshot.ticks, last.snapshot.ticks)
            stats.skipped = delta(first.snapshot.skipped, last.snapshot.skipped)
            stats.late = delta(first.snapshot.late, last.snapshot.late)
        self.run.phases.append(stats)
        return stats


# ---- comparison ----------------------------------------------------------------------------------------------

@dataclass
class Verdict:
    status: str        # within, outside, not compared
    detail: str


def _ref_series(run: Run, row: FieldRow, reader: Reader, phase: str, label: str) -> list[tuple[Scrape, object]]:
    """(scrape, pynvml value in DCGM's unit) of a phase; rates from the counter's change since the reading
    before (the first reading of the run has none)."""
    out = []
    previous: tuple[float, float] | None = None
    for scrape in run.scrapes:
        raw = scrape.refs.get((row.field_id, label))
        t = scrape.ref_t.get((row.field_id, label))
        value: object = raw
        if isinstance(raw, NvmlFailure) or raw is None:
            pass
        elif reader.kind == "rate":
            number = _number(raw)
            value = None
            if number is not None and t is not None:
                if previous is not None and t > previous[0]:
                    value = reader.convert((number - previous[1]) / (t - previous[0]))
                previous = (t, number)
        else:
            value = reader.convert(raw)
        if scrape.phase == phase:
            out.append((scrape, value))
    return out


def judge_phase(run: Run, row: FieldRow, rule: Rule, phase: str) -> Verdict:
    reader = run.readers.get(row.field_id)
    labels = sorted(run.gpu_labels, key=lambda g: (len(g), g))
    if rule.kind == "monotonic":
        drops = total = 0
        for label in labels:
            values = [_number(s.served.get((row.field_id, label))) for s in run.scrapes if s.phase == phase]
            values = [v for v in values if v is not None]
            total += len(values)
            drops += sum(1 for a, b in zip(values, values[1:]) if b < a)
        if not total:
            return Verdict("not compared", "no served values")
        return Verdict("within" if not drops else "outside",
                       f"served series never went down ({total} values)" if not drops else f"went down {drops} times")
    if rule.kind == "energy_rate":
        return judge_energy(run, row, rule, phase, labels)
    if not isinstance(reader, Reader):
        return Verdict("not compared", reader or "no pynvml reader")
    within = total = missing = 0
    failures: list[str] = []
    worst: float | None = None
    for label in labels:
        for scrape, ref in _ref_series(run, row, reader, phase, label):
            served = scrape.served.get((row.field_id, label))
            if isinstance(ref, NvmlFailure):
                failures.append(ref.text)
                continue
            if served is None or ref is None:
                missing += 1
                continue
            ok, d = rule.allows(served, ref)
            within += ok
            total += 1
            if d is not None:
                worst = d if worst is None else max(worst, d)
    if not total:
        why = f"pynvml: {failures[0]}" if failures else "no pair of served and pynvml values"
        return Verdict("not compared", why)
    detail = f"{within}/{total}" + (f", max abs(d) {fmt(worst, 4)}" if worst is not None else "")
    if failures:
        detail += f", pynvml failed {len(failures)}x ({failures[0]})"
    return Verdict("within" if within == total else "outside", detail)


def judge_energy(run: Run, row: FieldRow, rule: Rule, phase: str, labels: list[str]) -> Verdict:
    power_row = next((r for r in run.rows if r.field_id == 155), None)
    power_reader = run.readers.get(155)
    if power_row is None or not isinstance(power_reader, Reader):
        return Verdict("not compared", "no pynvml power reading")
    within = total = 0
    worst = 0.0
    short = None
    for label in labels:
        points = [(s.t, _number(s.served.get((row.field_id, label)))) for s in run.scrapes if s.phase == phase]
        points = [(t, e) for t, e in points if e is not None]
        powers = [_number(v) for _, v in _ref_series(run, power_row, power_reader, phase, label)]
        powers = [p for p in powers if p is not None]
        if len(points) < 2 or not powers:
            continue
        span = points[-1][0] - points[0][0]
        if span < rule.min_s:
            short = span
            continue
        rate_w = (points[-1][1] - points[0][1]) / (span * 1000.0)   # mJ per ms
        mean_w = statistics.fmean(powers)
        miss = abs(rate_w - mean_w) / mean_w * 100 if mean_w else math.inf
        worst = max(worst, miss)
        within += miss <= rule.pct
        total += 1
    if not total:
        if short is not None:
            return Verdict("not compared", f"phase spans {short:.1f} s of samples, the rule needs >= {rule.min_s:g} s")
        return Verdict("not compared", "no served energy or pynvml power")
    return Verdict("within" if within == total else "outside",
                   f"{within}/{total} GPUs, dE/dt vs mean power: worst {worst:.2f} % (limit {rule.pct:g} %)")


def judge(run: Run, row: FieldRow, phases: list[str]) -> tuple[Tolerance, dict[str, Verdict], Verdict]:
    tolerance = parse_tolerance(row.tolerance)
    verdicts: dict[str, Verdict] = {}
    for phase in phases:
        rule, note = tolerance.for_phase(phase)
        if rule is None:
            why = "tolerance not understood: " + "; ".join(repr(c) for c in tolerance.not_understood)
            verdicts[phase] = Verdict("not compared", why)
            continue
        verdict = judge_phase(run, row, rule, phase)
        if note:
            verdict.detail += f" ({note})"
        verdicts[phase] = verdict
    statuses = {v.status for v in verdicts.values()}
    overall = ("outside" if "outside" in statuses else "within" if "within" in statuses else "not compared")
    extra = ""
    if tolerance.not_understood and tolerance.rules:
        extra = "; not checked: " + "; ".join(repr(c) for c in tolerance.not_understood)
    reasons = [v.detail for v in verdicts.values() if v.status == "not compared"]
    return tolerance, verdicts, Verdict(overall, (reasons[0] if overall == "not compared" and reasons else "") + extra)


# ---- the report ------------------------------------------------------------------------------------------------

def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "gpu"


def last_values(run: Run, row: FieldRow) -> tuple[object, object]:
    """The last served and pynvml values of the first GPU."""
    if not run.gpu_labels:
        return None, None
    label = sorted(run.gpu_labels, key=lambda g: (len(g), g))[0]
    served = next((s.served[(row.field_id, label)] for s in reversed(run.scrapes)
                   if (row.field_id, label) in s.served), None)
    reader = run.readers.get(row.field_id)
    ref: object = None
    if isinstance(reader, Reader):
        for phase in reversed([p.name for p in run.phases]):
            series = [v for _, v in _ref_series(run, row, reader, phase, label) if v is not None]
            if series:
                ref = series[-1]
                break
    if isinstance(ref, NvmlFailure):
        ref = ref.text
    return served, ref


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def render_report(run: Run, args: argparse.Namespace) -> tuple[str, str]:
    """(markdown, summary line)."""
    phases = [p.name for p in run.phases]
    n = len(run.gpus)
    out: list[str] = []
    add = out.append
    add("# dcgm-collector --nvml against pynvml\n")
    add(f"Run {datetime.datetime.now().astimezone().isoformat(timespec='seconds')} on {platform.node()} "
        f"({platform.machine()}, Linux {platform.release()}, Python {platform.python_version()}), "
        f"by `benchmarks/hardware_check.py`.")
    if run.simulated:
        add("**Simulated**: the collector and pynvml both opened the simulated libnvidia-ml.so.1 "
            f"(`{os.environ.get('DCGM_ENGINE_NVML_LIB', '?')}`, DCGM_SIM_NVML_COSTS="
            f"`{os.environ.get('DCGM_SIM_NVML_COSTS', '(unset: H200 costs)')}`); each process's simulated clock "
            "starts at its own nvmlInit, so fast-moving fields differ by the start offset. A dry run of the "
            "script, not a measurement of hardware.")
    add("")
    add("## Machine\n")
    add("| GPUs | model (GPU 0) | driver | NVML | CUDA driver | collector |")
    add("| --- | --- | --- | --- | --- | --- |")
    model = run.gpus[0]["name"] if run.gpus else "none"
    add(f"| {n} | {fmt(model)} | {fmt(run.system.get('driver'))} | {fmt(run.system.get('nvml'))} | "
        f"{fmt(run.system.get('cuda'))} | `{fmt(shlex.join(run.command))}` |")
    add("")
    for g in run.gpus:
        add(f"- GPU {g['index']}: {g['name']}, {g['uuid']}")
    add("")
    add("## Fields\n")
    add(f"Field map: {run.fieldmap_source}. Each phase: one GET of /metrics every {SCRAPE_EVERY_S:g} s, then "
        "the same fields read with pynvml for every GPU; a cell counts the (GPU, scrape) pairs within the "
        "tolerance. Values shown: GPU 0, last scrape.\n")
    for p in run.phases:
        add(f"- phase **{p.name}**: {p.seconds:.1f} s, "
            f"{sum(1 for s in run.scrapes if s.phase == p.name)} scrapes" + (f"; {p.note}" if p.note else ""))
    for note in run.notes:
        add(f"- {note}")
    add("")
    add("| field | id | served | pynvml | pynvml call | tolerance | " + " | ".join(phases) + " | result |")
    add("| --- | --- | --- | --- | --- | --- | " + " | ".join("---" for _ in phases) + " | --- |")
    counts = {"within": 0, "outside": 0, "not compared": 0}
    served_ids = {fid for s in run.scrapes for fid, _ in s.served}
    for row in run.rows:
        if row.field_id not in served_ids:
            continue
        tolerance, verdicts, overall = judge(run, row, phases)
        counts[overall.status] += 1
        served, ref = last_values(run, row)
        reader = run.readers.get(row.field_id)
        call = reader.label if isinstance(reader, Reader) else f"none: {reader or 'not read'}"
        cells = [f"{v.status}: {v.detail}" if v.detail else v.status for v in verdicts.values()]
        result = f"**{overall.status}**" + (f" ({overall.detail})" if overall.detail else "")
        add(f"| {row.name} | {row.field_id} | {fmt(served)} | {fmt(ref)} | {fmt(call)} | {fmt(tolerance.text)} | "
            + " | ".join(fmt(c) for c in cells) + f" | {fmt(result)} |")
    unserved = [row for row in run.rows if row.default_on and row.field_id not in served_ids]
    if unserved:
        add("")
        add("Default counters with no series on /metrics (the engine's NVML source leaves them NOT_SUPPORTED or "
            "has no value yet): " + ", ".join(f"{r.name} ({r.field_id})" for r in unserved) + ".")
    add("")
    add("## Read costs\n")
    add("### Collector, its own self-metrics (whole run)\n")
    snaps = [s for s in run.scrapes if s.snapshot is not None]
    costs = None
    if len(snaps) >= 2:
        costs = field_costs(snaps[0].snapshot, snaps[-1].snapshot, snaps[-1].t - snaps[0].t)
    if costs is None:
        add(f"n/a: this collector serves no `{FIELD_READS}` family.")
    else:
        add("| field | reads/s | µs per read | share of a core | cadence |")
        add("| --- | --- | --- | --- | --- |")
        for c in costs:
            add(f"| {c.field} | {c.reads_per_s:.2f} | {fmt(c.us_per_read, 4)} | "
                + (f"{c.core_percent:.3f} %" if c.core_percent is not None else "n/a")
                + " | " + (f"{c.cadence_s * 1000:g} ms" if c.cadence_s is not None else "n/a") + " |")
    last = snaps[-1].snapshot if snaps else None
    correction = None
    if last is not None:
        for source in (last.correction_max, last.correction):
            if source and ENERGY_FIELD in source:
                correction = source[ENERGY_FIELD]
                break
    add("")
    shown = fmt(abs(correction), 4) if correction is not None else "n/a"
    add(f"Energy estimate's largest correction ({FIELD_CORRECTION_MAX}, else {FIELD_CORRECTION}): {shown} mJ.")
    add("")
    add("### pynvml, called by this script (median over the run, every GPU)\n")
    add("| call | calls | wall µs median | CPU µs median | wall µs p99 |")
    add("| --- | --- | --- | --- | --- |")
    for label, samples in sorted(run.costs.items()):
        walls = [w for w, _ in samples]
        cpus = [c for _, c in samples]
        add(f"| {fmt(label)} | {len(samples)} | {statistics.median(walls) * 1e6:.1f} | "
            f"{statistics.median(cpus) * 1e6:.1f} | {percentile(walls, 99) * 1e6:.1f} |")
    add("")
    add("## Collector process\n")
    add("| phase | CPU % of a core | per GPU | RSS MiB (end) | ticks | skipped ticks | late samples |")
    add("| --- | --- | --- | --- | --- | --- | --- |")
    for p in run.phases:
        per_gpu = p.cpu_percent / n if p.cpu_percent is not None and n else None
        add(f"| {p.name} | {fmt(p.cpu_percent, 3)} | {fmt(per_gpu, 3)} | {fmt(p.rss_mib, 4)} | {fmt(p.ticks)} | "
            f"{fmt(p.skipped)} | {fmt(p.late)} |")
    add("")
    durations = [s.duration_s for s in run.scrapes if s.ok]
    failed = sum(1 for s in run.scrapes if not s.ok)
    add(f"First sample: {fmt(run.first_sample_s, 3)} s from the collector's start to the first /metrics answer "
        f"holding {FIRST_FAMILY} for all {n} GPUs.")
    if durations:
        add(f"Scrapes: {len(durations)} answered (median {statistics.median(durations) * 1000:.2f} ms, "
            f"max {max(durations) * 1000:.2f} ms), {failed} failed.")
    add("")
    process_summary = ""
    if run.processes is not None:
        costs = []
        for p in run.phases:
            base = run.baselines.get(p.name)
            if base is not None:
                costs.append((p.name, p.cpu_percent, base.cpu_percent, p.rss_mib, base.rss_mib,
                              f"{base.seconds:.0f} s: {base.note}"))
        lines, process_summary = run.processes.render(phases, costs)
        out.extend(lines)
    cpu = [p.cpu_percent for p in run.phases if p.cpu_percent is not None]
    summary = (f"{model} x{n}{' (simulated)' if run.simulated else ''}: {counts['within']} fields within, "
               f"{counts['outside']} outside, {counts['not compared']} not compared; collector CPU "
               + ("/".join(f"{c:.2f}" for c in cpu) + " % of a core (" + "/".join(phases) + ")" if cpu else "n/a")
               + f", RSS {fmt(run.phases[-1].rss_mib if run.phases else None, 4)} MiB, "
               f"first sample {fmt(run.first_sample_s, 3)} s" + (f"; {process_summary}" if process_summary else ""))
    add("## Summary\n")
    add(summary)
    add("")
    return "\n".join(out), summary


# ---- main ----------------------------------------------------------------------------------------------------

def collector_command(text: str | None) -> list[str]:
    if text:
        return shlex.split(text)
    found = shutil.which("dcgm-collector")
    beside = Path(sys.executable).parent / "dcgm-collector"
    if found:
        return [found]
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "dcgm_collector"]


def simulated_library() -> Path:
    try:
        from dcgm_collector.engine import nvml_library_path
        return Path(nvml_library_path())
    except ImportError:
        out = subprocess.run([sys.executable, "-m", "dcgm_collector.engine", "nvml-libdir"], capture_output=True,
                             text=True, check=True, cwd=tempfile.gettempdir()).stdout.strip()
        return Path(out) / "libnvidia-ml.so.1"


def reexec_simulated(argv: list[str]) -> None:
    """Run this script again with the simulated library where both the collector and pynvml look: the
    dynamic linker reads LD_LIBRARY_PATH once, at the process's start."""
    library = simulated_library()
    env = dict(os.environ)
    env["DCGM_ENGINE_NVML_LIB"] = str(library)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, (str(library.parent), env.get("LD_LIBRARY_PATH"))))
    env.setdefault("DCGM_SIM_NVML_COSTS", "off")
    env[REEXEC_MARK] = "1"
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def machine(nv) -> tuple[list[dict[str, str]], dict[str, str]]:
    def attempt(call: Callable[[], object]) -> str | None:
        try:
            return _text(call())
        except Exception:   # an optional fact
            return None

    system = {"driver": attempt(nv.nvmlSystemGetDriverVersion), "nvml": attempt(nv.nvmlSystemGetNVMLVersion),
              "cuda": attempt(lambda: nv.nvmlSystemGetCudaDriverVersion())}
    gpus = []
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        gpus.append({"index": str(i), "name": attempt(lambda h=h: nv.nvmlDeviceGetName(h)) or "?",
                     "uuid": attempt(lambda h=h: nv.nvmlDeviceGetUUID(h)) or "?"})
    return gpus, {k: v for k, v in system.items() if v is not None}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds-per-phase", type=float,
                        help="length of each phase (default 60; 10 with --simulated)")
    parser.add_argument("--no-load", action="store_true", help="idle phase only")
    parser.add_argument("--collector", help="the collector command (default: dcgm-collector)")
    parser.add_argument("--out", help="the report (default benchmarks/hardware/<date>-<gpu model>.md beside this file)")
    parser.add_argument("--simulated", action="store_true",
                        help="dry run on the simulated libnvidia-ml.so.1 of the installed package; no load phase")
    parser.add_argument("--fieldmap", help="a fieldmap.tsv to use instead of the repository's or the held copy")
    parser.add_argument("--processes", action="store_true",
                        help="run the collector with --processes and check its per-process and idle series "
                             "against pynvml (needs hardware_processes.py beside this script)")
    args = parser.parse_args(argv)
    if args.simulated and os.environ.get(REEXEC_MARK) != "1":
        reexec_simulated(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even when started with SIGINT ignored
    try:
        import pynvml as nv
    except ImportError:
        print("hardware_check.py needs pynvml (pip install nvidia-ml-py)", file=sys.stderr)
        return 2
    if args.seconds_per_phase is None:
        args.seconds_per_phase = 10.0 if args.simulated else 60.0
    rows, source = load_fieldmap(args.fieldmap)
    process_checks = load_process_checks() if args.processes else None
    children: list[Child] = []
    workdir = tempfile.TemporaryDirectory(prefix="dcgm-hwcheck-")
    nv.nvmlInit()
    try:
        gpus, system = machine(nv)
        if not gpus:
            print("pynvml sees no GPU", file=sys.stderr)
            return 2
        command = collector_command(args.collector)
        port = free_port()
        plain = command + ["--nvml", "-c", str(COLLECT_MS), "--watch-interval", str(COLLECT_MS)]
        full = plain + (["--processes"] if args.processes else []) + ["-a", f"127.0.0.1:{port}"]
        run = Run(rows, source, gpus, system, args.simulated, full)
        baseline_s = min(args.seconds_per_phase, BASELINE_MAX_S)
        url = f"http://127.0.0.1:{port}/metrics"
        print(f"{len(gpus)} x {gpus[0]['name']}, driver {system.get('driver')}", flush=True)
        if args.processes:
            print(f"without --processes first, {baseline_s:g} s idle", flush=True)
            run.baselines["idle"] = baseline_run(plain, workdir.name, len(gpus), baseline_s, "idle")
        print(f"starting {shlex.join(full)}", flush=True)
        collector = Child(full, dict(os.environ), workdir.name)
        children.append(collector)
        run.first_sample_s, first = wait_first_sample(collector, url, len(gpus))
        print(f"first sample after {run.first_sample_s:.3f} s", flush=True)
        checker = Checker(nv, run, url, collector)
        checker.map_gpus(first)
        if process_checks is not None:
            run.processes = checker.processes = process_checks.ProcessChecker(nv, run.gpu_labels, checker.handles,
                                                                              run.costs)
            if args.simulated:
                run.processes.notes.append(
                    "Simulated: each GPU with a workload runs one synthetic process, pid 4200000 + its index, that "
                    "both the collector and pynvml list; no such pid is in /proc, so no process_name is served "
                    "and the names are not compared; the GPUs are busy in the idle phase too.")
        checker.phase("idle", args.seconds_per_phase)
        if args.simulated or args.no_load:
            run.notes.append("load phase skipped: " + ("--simulated" if args.simulated else "--no-load"))
        else:
            print("starting the load", flush=True)
            load, note = start_load(dict(os.environ), workdir.name)
            if load is None:
                run.notes.append(f"load phase skipped: {note}")
            else:
                children.append(load)
                if run.processes is not None:
                    run.processes.load_pid = load.pid
                checker.phase("load", args.seconds_per_phase, note)
                if args.processes:
                    collector.stop()   # its phases are over; the GPUs stay loaded for the run without it
                    print(f"without --processes, {baseline_s:g} s under the load", flush=True)
                    run.baselines["load"] = baseline_run(plain, workdir.name, len(gpus), baseline_s, "load")
                load.stop()
        for reader in run.readers.values():
            if isinstance(reader, Reader) and isinstance(reader._read, GpmReader):
                reader._read.free()
        report, summary = render_report(run, args)
        model = ("simulated-" if args.simulated else "") + slug(gpus[0]["name"])
        out = Path(args.out) if args.out else HERE / "hardware" / f"{datetime.date.today().isoformat()}-{model}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        print(summary)
        print(f"report: {out}")
        return 0
    except KeyboardInterrupt:
        print("interrupted: stopping the collector and the load", file=sys.stderr)
        return 130
    finally:
        for child in reversed(children):
            child.stop()
        try:
            nv.nvmlShutdown()
        except Exception:
            pass
        workdir.cleanup()


if __name__ == "__main__":
    sys.exit(main())
