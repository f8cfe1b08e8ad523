"""benchmarks/hardware_check.py: its field map copy, its tolerance parser, and one short dry run;
benchmarks/history_load.py: one short run.

The script is meant to be copied alone to a machine with a GPU, so it holds
a copy of the field map's columns it needs: the copy must match
reference/nvml/fieldmap.tsv.  The dry run (--simulated, 3 s) reads the
simulated libnvidia-ml.so.1 from both the collector and pynvml and must
write a report with its field table; with --processes it must find the
simulated NVML's synthetic processes on /metrics and in pynvml's lists, and
report a process list NVML refuses as such.  Nothing here looks at a timing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "hardware_check.py"
FIELDMAP = ROOT / "reference" / "nvml" / "fieldmap.tsv"


def _module():
    spec = importlib.util.spec_from_file_location("hardware_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("hardware_check", module)
    spec.loader.exec_module(module)
    return module


hc = _module()


def test_the_held_field_map_matches_the_reference_file():
    assert hc.embedded_fieldmap() == hc.fieldmap_from_tsv(FIELDMAP)


@pytest.mark.parametrize("text, phase, kind, limit, pct", [
    ("exact", "idle", "exact", 0, 0),
    ("exact (HBM clock is fixed in P0)", "load", "exact", 0, 0),
    ("abs(d)<=2", "load", "abs", 2, 0),
    ("idle: exact; load: abs(d)<=max(30 MHz,2%)", "load", "abs_or_pct", 30, 2),
    ("idle: exact; load: abs(d)<=max(30 MHz,2%)", "idle", "exact", 0, 0),
    ("idle: 0==0; steady load: abs(d)<=10 pp", "load", "abs", 10, 0),
    ("abs(ratio - smi/100)<=0.05 (steady load)", "idle", "abs", 0.05, 0),
    ("within 10% under steady copy load", "idle", "pct", 0, 10),
    ("Yes==1", "idle", "exact", 0, 0),
    ("dE[mJ]/dt[ms] within 5% of mean power.draw over >=10 s", "idle", "energy_rate", 0, 5),
    ("monotonic non-decreasing only", "idle", "monotonic", 0, 0),
])
def test_tolerance_forms(text, phase, kind, limit, pct):
    rule, _ = hc.parse_tolerance(text).for_phase(phase)
    assert (rule.kind, rule.limit, rule.pct) == (kind, limit, pct)


def test_a_tolerance_it_cannot_read_is_not_compared():
    tolerance = hc.parse_tolerance("event-driven; not comparable without XID injection")
    assert tolerance.for_phase("idle") == (None, "")
    assert tolerance.not_understood == ["event-driven", "not comparable without XID injection"]


def test_rules_compare_values():
    assert hc.parse_clause("abs(d)<=max(5 W,3%)").allows(700.0, 690.0)[0]          # 3 % of 690 W = 20.7 W
    assert not hc.parse_clause("abs(d)<=max(5 W,3%)").allows(100.0, 90.0)[0]
    assert hc.parse_clause("exact").allows("550.54.15", "550.54.15")[0]
    assert not hc.parse_clause("exact").allows(1980.0, 1965)[0]


@pytest.mark.slow
def test_a_simulated_dry_run_writes_the_report(tmp_path):
    out = tmp_path / "report.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--simulated", "--seconds-per-phase", "3", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    report = out.read_text()
    assert "| field | id | served | pynvml |" in report
    assert "| DCGM_FI_DEV_GPU_TEMP | 150 |" in report
    assert "## Summary" in report and "(simulated)" in report
    assert "Traceback" not in done.stderr


def _dry_run(tmp_path, *extra, env=None):
    out = tmp_path / "report.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--simulated", "--seconds-per-phase", "3", "--processes",
                           "--out", str(out), *extra], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return out.read_text(), done.stdout


@pytest.mark.slow
def test_a_simulated_dry_run_with_processes_finds_the_synthetic_processes(tmp_path):
    # the simulated NVML runs pid 4200000 + g on each loaded GPU g; the collector serves it, pynvml lists it
    report, stdout = _dry_run(tmp_path)
    assert "## Processes (`--processes`)" in report
    assert re.search(r"\*\*Verdict\*\*: pass: the served pids are NVML's on (\d+) of \1 \(GPU, second\) pairs", report)
    assert "| idle | 0 | 4200000 |" in report and "| idle | 7 | 4200007 |" in report
    for check in ("Framebuffer per process", "Process count and query success", "Idle and busy seconds"):
        section = report.split(f"### {check}\n", 1)[1].split("###", 1)[0]
        assert "**Verdict**: pass" in section, section
    cost = report.split("### Collector cost of `--processes`\n", 1)[1]
    assert re.search(r"^\| idle \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|", cost, re.M), cost
    assert "processes: " in stdout.splitlines()[-2] and " 0 fail" in stdout.splitlines()[-2]


@pytest.mark.slow
def test_a_process_list_nvml_refuses_is_reported_not_raised(tmp_path):
    env = dict(os.environ, DCGM_SIM_NVML_NO_PERMISSION="nvmlDeviceGetComputeRunningProcesses")
    report, _ = _dry_run(tmp_path, env=env)
    assert re.search(r"^\| idle \| 0 \| \d+ \| n/a \| - \| NVML answers NO_PERMISSION \(Insufficient Permissions\) \|$",
                     report, re.M), report
    section = report.split("### Process count and query success\n", 1)[1].split("###", 1)[0]
    assert "**Verdict**: pass: no list to count (pynvml's failed); DCGM_EXP_PROCESS_QUERY_SUCCESS" in section


@pytest.mark.slow
def test_the_history_load_benchmark_runs_short(tmp_path):
    # a few clients for two seconds over rings three seconds deep: every line it prints, no figure checked
    script = ROOT / "benchmarks" / "history_load.py"
    done = subprocess.run([sys.executable, str(script), "--clients", "4", "--seconds", "2", "--baseline-s", "1",
                           "--fill-s", "3"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for start in ("machine: ", "one answer in process", "collector: 8 GPUs", "baseline: /metrics p50",
                  "load: 4 clients", "load: /metrics p50", "ratios to the baseline of this run"):
        assert any(line.startswith(start) for line in done.stdout.splitlines()), (start, done.stdout)
    assert "Traceback" not in done.stderr
