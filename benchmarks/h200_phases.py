"""The H200 recording's load schedule on a simulated H200: real against simulated, phase by phase.

reference/hardware/h200-2026-11-30/trace.csv is a 10 Hz NVML trace of one real H200
while a PyTorch load ran the schedule in phases.json (idle with a CUDA context, bf16
matrix products, idle, 300 ms spikes, device-to-device copies, fp32 matrix products,
idle).  This script writes a scenario that switches a simulated H200's workload at
the same times (`tensor`, `memory_bound`, `fp32`, `spikes`, `idle_context`; plain
`idle` before the recording's process opened its context), reads the
simulated libdcgm at every trace row's time (dcgmSimGetValueAt: the simulated node's
values are a pure function of time, so nothing waits), and prints the median of each
signal over each phase, real and simulated, with their ratio.

    python benchmarks/h200_phases.py

Nothing is asserted; the tests pin what the simulator must keep.
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

RECORDING = Path(__file__).resolve().parents[1] / "reference" / "hardware" / "h200-2026-11-30"

# phase name in phases.json -> the simulated workload that stands for it
WORKLOADS = {
    "idle": 'workload = "idle_context"',  # the load's process kept its CUDA context open
    "tensor": 'workload = "tensor"',
    "spikes": 'workload = "spikes"\nutilization = 0.0\nspike_period = 2.7\nspike_length = 0.3',
    "dram": 'workload = "memory_bound"',
    "fp32": 'workload = "fp32"',
}

# (label, trace column, simulated DCGM field, scale from the DCGM value to the trace's unit)
SIGNALS = [
    ("power W", "power_mw", 155, 1.0),
    ("GPU C", "temp", 150, 1.0),
    ("mem C", "NVML_FI_DEV_MEMORY_TEMP", 140, 1.0),
    ("SM MHz", "sm_clock", 100, 1.0),
    ("util %", "util_gpu", 203, 1.0),
    ("mem util %", "util_mem", 204, 1.0),
    ("SM active %", "gpm_sm_util", 1002, 100.0),
    ("occupancy %", "gpm_sm_occupancy", 1003, 100.0),
    ("tensor %", "gpm_any_tensor_util", 1004, 100.0),
    ("DRAM %", "gpm_dram_bw_util", 1005, 100.0),
    ("FP32 %", "gpm_fp32_util", 1007, 100.0),
]
REASONS = ("reasons", "event_reasons", 112)


def load_trace() -> tuple[list[dict[str, float]], list[tuple[str, float, float]]]:
    with open(RECORDING / "trace.csv", newline="") as f:
        rows = [{k: float(v) for k, v in r.items() if k and v not in ("", None)} for r in csv.DictReader(f)]
    marks = [p for p in json.loads((RECORDING / "phases.json").read_text())["phases"]
             if "phase" in p and p["phase"] not in ("ready",)]
    t0 = rows[0]["t"]
    # before the first mark the process had not opened its CUDA context yet
    phases = [("no context", t0, marks[0]["t"])]
    for mark, nxt in zip(marks, marks[1:]):
        if mark["phase"] == "done":
            break
        name = "idle, context" if mark["phase"] == "idle" and not phases[1:] else mark["phase"]
        phases.append((name, mark["t"], nxt["t"]))
    return rows, phases


def scenario_text(t0: float, phases: list[tuple[str, float, float]]) -> str:
    lines = ['name = "h200 recording schedule"', "", "[[gpu]]", 'model = "H200"', 'workload = "idle"', ""]
    for name, start, _ in phases[1:]:
        key = "idle" if name.startswith("idle") else name
        lines += ["[[event]]", f"at = {start - t0:.3f}", "gpu = 0", 'kind = "workload"', WORKLOADS[key], ""]
    return "\n".join(lines)


def simulate(scenario: Path, times_us: list[int]) -> list[dict[int, float]]:
    os.environ["DCGM_SIM_SCENARIO"] = str(scenario)
    from dcgm_collector.dcgm._native import ffi, lib

    from dcgm_collector import dcgm, engine

    fields = [s[2] for s in SIGNALS] + [REASONS[2]]
    out = []
    with dcgm.Handle.embedded(library=engine.library_path()):
        record = ffi.new("dcgmFieldValue_v1 *")
        for t_us in times_us:
            row: dict[int, float] = {}
            for field in fields:
                if lib.dcgmSimGetValueAt(0, field, t_us, record) != 0:
                    raise SystemExit(f"dcgmSimGetValueAt({field}, {t_us}) failed")
                row[field] = record.value.dbl if record.fieldType == ord("d") else float(record.value.i64)
            out.append(row)
    return out


def fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or v == 0 else f"{v:.1f}"


def ratio(sim: float, real: float) -> str:
    if real == 0:
        return "  =" if sim == 0 else "  -"
    return f"{sim / real:.2f}"


def main() -> int:
    rows, phases = load_trace()
    t0 = rows[0]["t"]
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "h200-phases.toml"
        scenario.write_text(scenario_text(t0, phases))
        sim = simulate(scenario, [round((r["t"] - t0) * 1e6) for r in rows])
    print(f"real: {RECORDING.relative_to(RECORDING.parents[2])}/trace.csv, {len(rows)} rows at 10 Hz; "
          f"simulated: H200, the same schedule, read at the same times")
    outside = []
    for name, start, end in phases:
        idx = [i for i, r in enumerate(rows) if start <= r["t"] < end]
        print(f"\n{name}  (t {start:.1f}-{end:.1f} s, {len(idx)} rows)")
        print(f"  {'signal':<12} {'real':>7} {'sim':>7} {'sim/real':>8}")
        for label, column, field, scale in SIGNALS:
            real = statistics.median(v for i in idx if not math.isnan(v := rows[i].get(column, math.nan)))
            if column == "power_mw":
                real /= 1000.0
            got = statistics.median(sim[i][field] * scale for i in idx)
            r = ratio(got, real)
            mark = ""
            if abs(got - real) > max(0.10 * abs(real), 1.0):
                mark = "  *"
                outside.append(f"{name}: {label}")
            print(f"  {label:<12} {fmt(real):>7} {fmt(got):>7} {r:>8}{mark}")
        real_r = Counter(int(rows[i][REASONS[1]]) for i in idx).most_common(1)[0][0]
        sim_r = Counter(int(sim[i][REASONS[2]]) for i in idx).most_common(1)[0][0]
        mark = "" if real_r == sim_r else "  *"
        if mark:
            outside.append(f"{name}: reasons")
        print(f"  {'reasons':<12} {real_r:>#7x} {sim_r:>#7x} {'(mode)':>8}{mark}")
    print("\n* more than 10 % (and more than 1 unit) from the real median, or another most common reason mask:")
    print("  " + (", ".join(outside) if outside else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
