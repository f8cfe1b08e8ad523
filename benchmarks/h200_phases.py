"""The H200 recording's load schedule on a simulated H200: real against simulated, phase by phase.

dcgm_collector/engine/scenarios/traces/h200-2026-11-30.csv is a 10 Hz NVML trace of
one real H200 (reference/hardware/h200-2026-11-30/) while a PyTorch load ran the
schedule in phases.json (idle with a CUDA context, bf16 matrix products, idle, 300 ms
spikes, device-to-device copies, fp32 matrix products, idle).  This script writes a
scenario that switches a simulated H200's workload at the same times (`tensor`,
`memory_bound`, `fp32`, `spikes`, `idle_context`; plain `idle` before the recording's
process opened its context), reads the simulated libdcgm at every trace row's time
(dcgmSimGetValueAt: the simulated node's values are a pure function of time, so nothing
waits), and prints the median of each signal over each phase, real and simulated, with
their ratio, and the peaks of the instant and the averaged power.

Then the change cadence: changes.csv there is a ~2 ms poll of eight readings on the
card, every change noted.  The script polls the simulated H200 every 2 ms over the same
schedule and prints, per reading, how long a value lasted (median and 10th percentile
of the intervals between changes), real and simulated.

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

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "reference" / "hardware" / "h200-2026-11-30"
TRACE = ROOT / "dcgm_collector" / "engine" / "scenarios" / "traces" / "h200-2026-11-30.csv"

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
# peaks per phase: (label, trace column in mW, simulated field)
PEAKS = [
    ("instant max W", "NVML_FI_DEV_POWER_INSTANT", 157),
    ("1 s avg max W", "power_mw", 155),
]
# changes.csv signal -> simulated field
CADENCE = [
    ("power_mw", "power (1 s average)", 155),
    ("NVML_FI_DEV_POWER_INSTANT", "power (instant)", 157),
    ("NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "energy", 156),
    ("sm_clock", "SM clock", 100),
    ("temp", "GPU temperature", 150),
    ("NVML_FI_DEV_MEMORY_TEMP", "memory temperature", 140),
    ("util_gpu", "utilisation", 203),
    ("util_mem", "memory utilisation", 204),
]
POLL_US = 2000


def load_trace() -> tuple[list[dict[str, float]], list[tuple[str, float, float]]]:
    with open(TRACE, newline="") as f:
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


def simulate(scenario: Path, times_us: list[int], fields: list[int]) -> list[dict[int, float]]:
    """Each field of the simulated H200 at each time (the library reads the scenario once)."""
    os.environ["DCGM_SIM_SCENARIO"] = str(scenario)
    from dcgm_collector.ext._native import ffi, lib

    from dcgm_collector import dcgm, engine

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


def change_intervals(times: list[float], values: list[float]) -> list[float]:
    """Seconds between successive changes of a polled value."""
    changes = [t for t, v, before in zip(times[1:], values[1:], values) if v != before]
    return [b - a for a, b in zip(changes, changes[1:])]


def real_cadence(t_from: float, t_to: float) -> dict[str, list[float]]:
    by_signal: dict[str, list[float]] = {}
    with open(RECORDING / "changes.csv", newline="") as f:
        for row in csv.DictReader(f):
            by_signal.setdefault(row["signal"], []).append(float(row["t"]))
    return {s: [b - a for a, b in zip(ts, ts[1:]) if t_from <= a < t_to] for s, ts in by_signal.items()}


def print_cadence(scenario: Path, t0: float, phases: list[tuple[str, float, float]]) -> None:
    spans = [("tensor phase", *next((s, e) for n, s, e in phases if n == "tensor")),
             ("whole schedule", phases[0][1], phases[-1][2])]
    start, end = spans[1][1], spans[1][2]
    times_us = list(range(round((start - t0) * 1e6), round((end - t0) * 1e6), POLL_US))
    sim = simulate(scenario, times_us, [c[2] for c in CADENCE])
    times = [t0 + t / 1e6 for t in times_us]
    print(f"\nchange cadence: how long a value lasted, in ms (real: changes.csv, a ~2 ms poll of the card; "
          f"simulated: a {POLL_US // 1000} ms poll of the same schedule)")
    for span, t_from, t_to in spans:
        real = real_cadence(t_from, t_to)
        print(f"\n{span}  (t {t_from:.1f}-{t_to:.1f} s)")
        heads = ("real median", "sim median", "real p10", "sim p10", "sim shortest")
        print(f"  {'reading':<20} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, (11, 10, 9, 8, 12))))
        for signal, label, field in CADENCE:
            idx = [i for i, t in enumerate(times) if t_from <= t < t_to]
            gaps = change_intervals([times[i] for i in idx], [sim[i][field] for i in idx])
            r = sorted(real.get(signal, []))
            g = sorted(gaps)
            cells = [f"{1000 * statistics.median(x):.0f}" if x else "-" for x in (r, g)]
            cells += [f"{1000 * x[len(x) // 10]:.0f}" if x else "-" for x in (r, g)]
            cells.append(f"{1000 * g[0]:.0f}" if g else "-")
            print(f"  {label:<20} {cells[0]:>11} {cells[1]:>10} {cells[2]:>9} {cells[3]:>8} {cells[4]:>12}")


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
        fields = [s[2] for s in SIGNALS] + [REASONS[2]] + [p[2] for p in PEAKS]
        sim = simulate(scenario, [round((r["t"] - t0) * 1e6) for r in rows], fields)
    print(f"real: {TRACE.relative_to(ROOT)}, {len(rows)} rows at 10 Hz; "
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
        for label, column, field in PEAKS:
            real = max(rows[i][column] for i in idx) / 1000.0
            got = max(sim[i][field] for i in idx)
            print(f"  {label:<12} {fmt(real):>7} {fmt(got):>7} {ratio(got, real):>8}")
    print("\n* more than 10 % (and more than 1 unit) from the real median, or another most common reason mask:")
    print("  " + (", ".join(outside) if outside else "none"))
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "h200-phases.toml"
        scenario.write_text(scenario_text(t0, phases))
        print_cadence(scenario, t0, phases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
