"""A node of simulated H200s, seen from /metrics, against one real H200's readings.

The H200 model is built from what NVML answered on a real H200 SXM
(reference/hardware/h200-2026-11-30/attrs.json and fields.json, copied into the
repository from the project's shared facts folder).  The collector runs as a
subprocess on the embedded simulator (``--sim FILE``) with a scenario of H200s;
what it serves must be those readings, in DCGM's units, and what the card did
not have (a fan, NvLink on its single-GPU host) must not be served at all.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import samples
from test_cli import clean_env, collector, metrics_after_ticks

RECORDING = Path(__file__).resolve().parents[2] / "reference" / "hardware" / "h200-2026-11-30"
MIB = 1024 * 1024

# the recorded card sat alone in its host
SCENARIO = 'seed = 4\n[[gpu]]\nmodel = "H200"\nworkload = "idle"\n'

# What the recording has, by the DCGM field the collector serves it as.
PRESENT = """\
DCGM_FI_DEV_FB_TOTAL, gauge, Framebuffer total (in MiB).
DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS, gauge, Minimum power limit (in W).
DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS, gauge, Maximum power limit (in W).
DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS, gauge, Default power limit (in W).
DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS, gauge, Enforced power limit (in W).
DCGM_FI_DEV_MAX_SM_CLOCK, gauge, Maximum SM clock (in MHz).
DCGM_FI_DEV_MAX_MEM_CLOCK, gauge, Maximum memory clock (in MHz).
DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS, gauge, Slowdown temperature (in C).
DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS, gauge, Shutdown temperature (in C).
DCGM_FI_DEV_PCIE_MAX_LINK_GEN, gauge, PCIe generation.
DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH, gauge, PCIe width.
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
"""
# NOT_SUPPORTED on the recorded card: fan speed, NvLink counters and traffic, retired pages.
ABSENT = """\
DCGM_FI_DEV_FAN_SPEED, gauge, Fan speed (in %).
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, gauge, NvLink bandwidth.
DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, counter, NvLink flit CRC errors.
DCGM_FI_PROF_NVLINK_TX_BYTES, gauge, NvLink bytes sent.
DCGM_FI_DEV_RETIRED_SBE, counter, Pages retired for single-bit errors.
"""


def recorded() -> tuple[dict, dict]:
    attrs = json.loads((RECORDING / "attrs.json").read_text())
    fields = json.loads((RECORDING / "fields.json").read_text())
    return attrs, fields


def test_the_collector_serves_the_recorded_h200(tmp_path):
    attrs, fields = recorded()
    scenario = tmp_path / "h200.toml"
    scenario.write_text(SCENARIO)
    counters = tmp_path / "h200.csv"
    counters.write_text(PRESENT + ABSENT)
    with collector(tmp_path, "--sim", str(scenario), "-a", "127.0.0.1:0", "-c", "200",
                   "-f", str(counters), env=clean_env()) as c:
        text = metrics_after_ticks(c, 3)
        log = c.log()
    served = [(name, labels, value) for name, labels, value in samples(text) if "gpu" in labels]
    assert {labels["gpu"] for _, labels, _ in served} == {"0"}
    assert {labels["modelName"] for _, labels, _ in served} == {attrs["Name"]} == {"NVIDIA H200"}

    def value(name: str) -> float:
        values = {v for n, _, v in served if n == name}
        assert len(values) == 1, (name, values)
        return values.pop()

    low, high = attrs["PowerManagementLimitConstraints"]
    expected = {
        "DCGM_FI_DEV_FB_TOTAL": attrs["MemoryInfo"]["total"] / MIB,
        "DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS": low / 1000,
        "DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS": high / 1000,
        "DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS": attrs["PowerManagementDefaultLimit"] / 1000,
        "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS": attrs["EnforcedPowerLimit"] / 1000,
        "DCGM_FI_DEV_MAX_SM_CLOCK": attrs["MaxClockInfo"]["SM"],
        "DCGM_FI_DEV_MAX_MEM_CLOCK": attrs["MaxClockInfo"]["MEM"],
        "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS": attrs["TemperatureThresholds"]["1"],
        "DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS": attrs["TemperatureThresholds"]["0"],
        "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": attrs["MaxPcieLinkGeneration"],
        "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": attrs["MaxPcieLinkWidth"],
    }
    for name, want in expected.items():
        assert value(name) == want, name
    # memory temperature is a field the card answers (NVML field 82); at idle it read 41 C
    assert fields["82"]["ret"] == 0 and 25 <= value("DCGM_FI_DEV_MEMORY_TEMP") <= 60

    # what the card lacks is not served: no series, not even a blank one
    names = {name for name, _, _ in served}
    for line in ABSENT.splitlines():
        assert line.split(",")[0] not in names, line
    not_served = next(line for line in log.splitlines() if "not served, NOT_SUPPORTED on every GPU" in line)
    for line in ABSENT.splitlines():
        if line.startswith("DCGM_FI_DEV_"):     # profiling fields go through another module
            assert line.split(",")[0] in not_served, not_served
    assert "FanSpeed" in attrs and "error" in attrs["FanSpeed"]
    assert all("error" in link["state"] for link in attrs["NvLink"].values())


def test_h200s_sharing_a_node_sit_on_an_hgx_board_with_nvlinks(tmp_path):
    """Alone, the card had no NvLink; two or more H200s are an HGX baseboard: 18 links each."""
    scenario = tmp_path / "hgx.toml"
    scenario.write_text(SCENARIO.replace('workload = "idle"', 'count = 2\nworkload = "training"'))
    counters = tmp_path / "links.csv"
    counters.write_text(ABSENT)
    with collector(tmp_path, "--sim", str(scenario), "-a", "127.0.0.1:0", "-c", "200",
                   "-f", str(counters), env=clean_env()) as c:
        text = metrics_after_ticks(c, 3)
    bandwidth = {labels["gpu"]: v for n, labels, v in samples(text) if n == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"}
    assert set(bandwidth) == {"0", "1"} and min(bandwidth.values()) > 0, bandwidth
    assert not [n for n, _, _ in samples(text) if n == "DCGM_FI_DEV_FAN_SPEED"]     # still no fans


# The kernel workloads, fitted to the same card's load trace (reference/hardware/
# h200-2026-11-30/trace.csv): under dense bf16 matrix products the card sat at its 700 W
# cap with the SM clock pulled to ~1455 MHz and the SW power cap reason set; fp32 matrix
# products drew 687 W and kept 1980 MHz; device copies drew 475 W at 1980 MHz.
LOAD_SCENARIO = """\
seed = 4
[[gpu]]
model = "H200"
workload = "tensor"
[[gpu]]
model = "H200"
workload = "fp32"
[[gpu]]
model = "H200"
workload = "memory_bound"
[[gpu]]
model = "H200"
workload = "idle_context"
"""
LOAD_COUNTERS = """\
DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Clock event reasons.
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_PIPE_FP32_ACTIVE, gauge, Ratio of cycles the fp32 pipes are active.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles the device memory interface is active.
"""
SW_POWER_CAP = 0x4
GPU_IDLE = 0x1


def test_the_collector_serves_the_recorded_load_phases(tmp_path):
    scenario = tmp_path / "h200-load.toml"
    scenario.write_text(LOAD_SCENARIO)
    counters = tmp_path / "load.csv"
    counters.write_text(LOAD_COUNTERS)
    with collector(tmp_path, "--sim", str(scenario), "-a", "127.0.0.1:0", "-c", "200",
                   "-f", str(counters), env=clean_env()) as c:
        text = metrics_after_ticks(c, 3)
    got: dict[tuple[str, str], float] = {}
    for name, labels, value in samples(text):
        if "gpu" in labels:
            got[(labels["gpu"], name)] = value

    tensor, fp32, copies, context = "0", "1", "2", "3"
    reasons = int(got[(tensor, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")])
    assert reasons & SW_POWER_CAP, hex(reasons)
    assert 1215 <= got[(tensor, "DCGM_FI_DEV_SM_CLOCK")] < 1600
    assert 630 <= got[(tensor, "DCGM_FI_DEV_POWER_USAGE")] <= 707
    assert got[(tensor, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")] > 0.85
    assert got[(tensor, "DCGM_FI_PROF_PIPE_FP32_ACTIVE")] == 0

    assert got[(fp32, "DCGM_FI_DEV_SM_CLOCK")] == 1980
    assert not int(got[(fp32, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")]) & SW_POWER_CAP
    assert 618 <= got[(fp32, "DCGM_FI_DEV_POWER_USAGE")] < 700
    assert got[(fp32, "DCGM_FI_PROF_PIPE_FP32_ACTIVE")] > 0.65
    assert got[(fp32, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")] == 0

    assert got[(copies, "DCGM_FI_DEV_SM_CLOCK")] == 1980
    assert got[(copies, "DCGM_FI_DEV_MEM_COPY_UTIL")] >= 90
    assert 427 <= got[(copies, "DCGM_FI_DEV_POWER_USAGE")] <= 523
    assert got[(copies, "DCGM_FI_PROF_DRAM_ACTIVE")] > 0.75

    # a process holding a context, no kernel: clocks up, 121 W, no reason (not even idle)
    assert got[(context, "DCGM_FI_DEV_GPU_UTIL")] == 0
    assert got[(context, "DCGM_FI_DEV_SM_CLOCK")] == 1980
    assert int(got[(context, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")]) & GPU_IDLE == 0
    assert 109 <= got[(context, "DCGM_FI_DEV_POWER_USAGE")] <= 133


def test_the_phase_benchmark_finds_every_phase_within_ten_percent():
    """benchmarks/h200_phases.py replays the recorded schedule: every phase median within 10 %."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "h200_phases.py"
    env = clean_env()
    env.pop("DCGM_SIM_SCENARIO", None)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for phase in ("no context", "idle, context", "tensor", "spikes", "dram", "fp32"):
        assert any(line.startswith(phase + "  (") for line in lines), phase
    verdict = lines.index(next(line for line in lines if line.startswith("* more than 10 %")))
    assert lines[verdict + 1].strip() == "none", done.stdout
    # the cadence table: power, energy and clocks change every 100 ms, utilisation every 200 ms or more
    cadence = {line.split("  ")[1].strip(): line.split()[-5:] for line in lines[lines.index(next(
        line for line in lines if line.startswith("whole schedule"))) + 2:] if line.startswith("  ")}
    for reading in ("power (instant)", "energy", "SM clock"):
        assert cadence[reading][4] == "100", (reading, cadence[reading])
    assert int(cadence["utilisation"][4]) >= 200, cadence["utilisation"]


# Power as the card reported it: DCGM_FI_DEV_POWER_USAGE is NVML's 1 s average on Hopper,
# DCGM_FI_DEV_POWER_USAGE_INSTANT the instant.  In the recording's 300 ms bf16 bursts the
# instant read up to 958 W against the 700 W limit (the power controller had not reacted
# yet) while the 1 s average never passed 329 W.
SPIKE_SCENARIO = """\
seed = 5
[[gpu]]
model = "H200"
workload = "spikes"
utilization = 0.0
spike_period = 2.0
spike_length = 0.3
"""
POWER_COUNTERS = """\
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W)., max
DCGM_FI_DEV_POWER_USAGE_INSTANT, gauge, Instant power draw (in W)., max
DCGM_FI_DEV_POWER_MGMT_LIMIT, gauge, Power limit (in W).
"""


@pytest.mark.parametrize("source", ["dcgm", "nvml"])
def test_a_300ms_spike_shows_in_the_instant_power_max_above_the_limit(tmp_path, source):
    """Through the simulated libdcgm (--sim) and through the engine reading the simulated NVML (--nvml)."""
    scenario = tmp_path / "h200-spikes.toml"
    scenario.write_text(SPIKE_SCENARIO)
    counters = tmp_path / "power.csv"
    counters.write_text(POWER_COUNTERS)
    if source == "dcgm":
        args, env = ["--sim", str(scenario)], clean_env()
    else:
        from dcgm_collector.engine import nvml_library_path

        args = ["--nvml"]
        env = clean_env(DCGM_SIM_SCENARIO=str(scenario), DCGM_SIM_NVML_COSTS="off",
                        DCGM_ENGINE_NVML_LIB=str(nvml_library_path()))
    with collector(tmp_path, *args, "-a", "127.0.0.1:0", "-c", "1000", "--watch-interval", "100",
                   "-f", str(counters), env=env) as c:
        text = metrics_after_ticks(c, 7, timeout=20)   # three bursts or more
    got = {name: value for name, labels, value in samples(text) if labels.get("gpu") == "0"}
    limit = got["DCGM_FI_DEV_POWER_MGMT_LIMIT"]
    assert limit == 700
    assert got["DCGM_FI_DEV_POWER_USAGE_INSTANT_max"] > limit, got
    # the 1 s average smooths a 300 ms burst to well under the limit
    assert got["DCGM_FI_DEV_POWER_USAGE_max"] < 0.6 * limit, got
    assert got["DCGM_FI_DEV_POWER_USAGE_max"] > 1.5 * 121, got   # but it does rise above the floor


# The recording itself as a workload: dcgm_collector/engine/scenarios/h200-recorded-replay.toml
# plays traces/h200-2026-11-30.csv back on its timestamps.
REPLAY_COUNTERS = """\
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
"""


def test_the_shipped_replay_scenario_serves_the_recorded_readings(tmp_path):
    from dcgm_collector import engine

    shipped = Path(engine.__file__).parent / "scenarios"
    with open(shipped / "traces" / "h200-2026-11-30.csv", newline="") as f:
        trace = list(csv.DictReader(f))
    first = [r for r in trace if float(r["t"]) < float(trace[0]["t"]) + 8]   # the first 8 s of the recording
    counters = tmp_path / "replay.csv"
    counters.write_text(REPLAY_COUNTERS)
    with collector(tmp_path, "--sim", str(shipped / "h200-recorded-replay.toml"), "-a", "127.0.0.1:0",
                   "-c", "500", "-f", str(counters), env=clean_env()) as c:
        texts = [metrics_after_ticks(c, n) for n in (2, 4)]
    powers = {int(r["power_mw"]) / 1000 for r in first}
    for text in texts:
        got = {name: (labels, value) for name, labels, value in samples(text) if labels.get("gpu") == "0"}
        labels, power = got["DCGM_FI_DEV_POWER_USAGE"]
        assert labels["modelName"] == "NVIDIA H200"
        assert power in powers, (power, sorted(powers))
        assert got["DCGM_FI_DEV_GPU_TEMP"][1] in {int(r["temp"]) for r in first}
        assert got["DCGM_FI_DEV_SM_CLOCK"][1] in {int(r["sm_clock"]) for r in first}
    # the energy counter is the node's integral of the replayed power, rising with it
    energy = [dict((n, v) for n, lb, v in samples(t) if lb.get("gpu") == "0")["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
              for t in texts]
    assert energy[1] > energy[0]


def test_a_replay_trace_that_does_not_parse_stops_the_collector_naming_both_files(tmp_path):
    trace = tmp_path / "card.csv"
    trace.write_text("t,power_mw,temp\n0.0,82000,37\n0.1,oops,37\n")
    scenario = tmp_path / "replay.toml"
    scenario.write_text('[[gpu]]\nmodel = "H200"\nworkload = "replay"\ntrace = "card.csv"\n')
    done = subprocess.run([sys.executable, "-m", "dcgm_collector", "--sim", str(scenario), "-a", "127.0.0.1:0"],
                          capture_output=True, text=True, env=clean_env(), timeout=30, cwd=tmp_path)
    assert done.returncode != 0
    assert f"{scenario}:4: {trace}:3: column 2 (power_mw): 'oops' is not a number" in done.stderr, done.stderr
