"""The shipped fault-rehearsal scenarios, read through the real engine on both of its value sources.

Each scenario's precursor is read at chosen node times, in a child interpreter with the embedded engine
(libdcgm.so.4): once on the modelled GPUs (``dcgmSimGetValueAt`` asks the engine's source for the time), and
once with ``DCGM_ENGINE_SOURCE=nvml`` over the simulated libnvidia-ml.so.1, its clock frozen at that time
(``DCGM_SIM_NVML_TIME_US``).  Both must read the same, and what they read is what a user would see: the
SBE rate near the end of an ECC storm, PCIe replays past DCGM's limit, remap pending after XID 63, power
past the limit during an excursion.  No test waits for the node's clock, but the health check, which
watches the engine run for four seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_faults import _env

from dcgm_collector import engine

SCENARIOS = Path(engine.__file__).resolve().parent / "scenarios"

# reads [gpu, field, t_us] through the embedded engine; a blank reading is asked again for up to 5 s, as the
# NVML source serves its slow fields (the PCIe replay counter) once its reader thread has read them
_READ = textwrap.dedent("""
    import json, sys, time
    from dcgm_collector import dcgm, engine
    from dcgm_collector.ext._native import ffi, lib
    out = []
    with dcgm.Handle.embedded(library=engine.library_path()):
        record = ffi.new("dcgmFieldValue_v1 *")
        for gpu, field, t_us in json.loads(sys.argv[1]):
            deadline = time.monotonic() + 5
            while True:
                assert lib.dcgmSimGetValueAt(gpu, field, t_us, record) == 0
                value = record.value.dbl if record.fieldType == ord("d") else record.value.i64
                if abs(value) < 2**47 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            out.append(value)
    print(json.dumps(out))
""")


def _child(script: str, args: list[str], env: dict[str, str]) -> object:
    result = subprocess.run([sys.executable, "-I", "-c", script, *args], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _nvml_env(scenario: Path, **extra: str) -> dict[str, str]:
    return _env(DCGM_SIM_SCENARIO=str(scenario), DCGM_ENGINE_SOURCE="nvml", DCGM_SIM_NVML_COSTS="off",
                DCGM_ENGINE_NVML_LIB=str(engine.nvml_library_path()), DCGM_ENGINE_NVML_REPLAY_PERIOD_MS="50",
                **extra)


def read_both(name: str, at_s: list[float], fields: list[tuple[int, int]]) -> dict[float, dict[tuple[int, int], float]]:
    """{time: {(gpu, field): value}} of the shipped scenario, the same on both sources (asserted)."""
    scenario = SCENARIOS / name
    reads = [[gpu, field, round(t * 1e6)] for t in at_s for gpu, field in fields]
    models = _child(_READ, [json.dumps(reads)], _env(DCGM_SIM_SCENARIO=str(scenario)))
    out: dict[float, dict[tuple[int, int], float]] = {}
    for i, t in enumerate(at_s):
        got = dict(zip(fields, models[i * len(fields):(i + 1) * len(fields)], strict=True))
        frozen = _nvml_env(scenario, DCGM_SIM_NVML_TIME_US=str(round(t * 1e6)))
        nvml = _child(_READ, [json.dumps([[gpu, field, round(t * 1e6)] for gpu, field in fields])], frozen)
        for key, value in zip(fields, nvml, strict=True):
            assert value == pytest.approx(got[key], abs=1e-3), (name, t, key, value, got[key])
        out[t] = got
    return out


SBE_VOL, SBE_AGG, DBE_VOL = 310, 312, 311
PCIE_REPLAYS, PCIE_LINK_GEN, PCIE_LINK_WIDTH = 202, 237, 238
REMAP_UNC, REMAP_COR, REMAP_FAILED, REMAP_PENDING = 393, 394, 395, 396
NVLINK_FLIT_CRC = 409
REASONS, POWER, POWER_INSTANT, POWER_LIMIT = 112, 155, 157, 160
HW_SLOWDOWN, HW_POWER_BRAKE = 0x8, 0x80


def test_ecc_storm_reaches_17700_sbe_a_second_with_no_dbe_and_few_rows():
    fields = [(1, SBE_VOL), (1, SBE_AGG), (1, DBE_VOL), (1, REMAP_COR), (0, SBE_VOL)]
    got = read_both("ecc-storm.toml", [30.0, 119.0, 120.0], fields)
    early = got[30.0][(1, SBE_VOL)] - 0
    per_s = got[120.0][(1, SBE_VOL)] - got[119.0][(1, SBE_VOL)]
    # the seeded background noise adds at most one SBE a step on top of the storm's 17,700
    assert 17_700 <= per_s <= 17_710, per_s
    assert early > 10_000 and got[120.0][(1, SBE_VOL)] > 1_000_000
    assert got[120.0][(1, SBE_AGG)] >= got[120.0][(1, SBE_VOL)]
    assert got[120.0][(1, DBE_VOL)] == 0
    assert got[120.0][(1, REMAP_COR)] <= 10      # billions of SBEs would be billions of rows if they remapped
    assert got[120.0][(0, SBE_VOL)] < 100         # the neighbour stays quiet


def test_row_remaps_grow_then_xid_63_sets_pending_and_xid_64_failure():
    fields = [(1, REMAP_COR), (1, REMAP_UNC), (1, REMAP_PENDING), (1, REMAP_FAILED), (0, REMAP_PENDING)]
    got = read_both("row-remap-failure.toml", [99.0, 105.0, 135.0], fields)
    assert got[99.0][(1, REMAP_COR)] >= 20 and got[99.0][(1, REMAP_PENDING)] == 0
    assert (got[105.0][(1, REMAP_UNC)], got[105.0][(1, REMAP_PENDING)], got[105.0][(1, REMAP_FAILED)]) == (1, 1, 0)
    assert (got[135.0][(1, REMAP_PENDING)], got[135.0][(1, REMAP_FAILED)]) == (1, 1)
    assert got[135.0][(0, REMAP_PENDING)] == 0
    # and nvmlDeviceGetRemappedRows itself, as a program reading the simulated NVML sees it
    script = textwrap.dedent("""
        import json, pynvml
        pynvml.nvmlInit()
        print(json.dumps(list(pynvml.nvmlDeviceGetRemappedRows(pynvml.nvmlDeviceGetHandleByIndex(1)))))
        pynvml.nvmlShutdown()
    """)
    env = _nvml_env(SCENARIOS / "row-remap-failure.toml", DCGM_SIM_NVML_TIME_US="135000000")
    env["LD_LIBRARY_PATH"] = str(Path(env["DCGM_ENGINE_NVML_LIB"]).parent)
    corr, unc, pending, failure = _child(script, [], env)
    assert (corr, unc, pending, failure) == (got[135.0][(1, REMAP_COR)], 1, 1, 1)


def test_pcie_replays_pass_31_a_minute_after_the_ramp():
    fields = [(1, PCIE_REPLAYS), (0, PCIE_REPLAYS), (1, PCIE_LINK_GEN), (1, PCIE_LINK_WIDTH)]
    got = read_both("pcie-replays.toml", [70.0, 130.0], fields)
    # the link DCGM's limit is for, read on both sources
    assert (got[130.0][(1, PCIE_LINK_GEN)], got[130.0][(1, PCIE_LINK_WIDTH)]) == (5, 16)
    last_minute = got[130.0][(1, PCIE_REPLAYS)] - got[70.0][(1, PCIE_REPLAYS)]
    assert last_minute > 150, last_minute      # hundreds a minute: DCGM's Gen5 x16 limit is 31
    assert got[130.0][(0, PCIE_REPLAYS)] - got[70.0][(0, PCIE_REPLAYS)] <= 31


def test_nvlink_crc_errors_pass_100_a_second():
    got = read_both("nvlink-errors.toml", [100.0, 101.0], [(1, NVLINK_FLIT_CRC), (0, NVLINK_FLIT_CRC)])
    assert got[101.0][(1, NVLINK_FLIT_CRC)] - got[100.0][(1, NVLINK_FLIT_CRC)] > 100
    assert got[101.0][(0, NVLINK_FLIT_CRC)] - got[100.0][(0, NVLINK_FLIT_CRC)] <= 1


def test_power_excursions_break_the_cap_with_hardware_slowdown():
    fields = [(1, POWER), (1, POWER_INSTANT), (1, REASONS), (1, POWER_LIMIT), (0, POWER_INSTANT), (0, REASONS)]
    got = read_both("power-excursions.toml", [42.0, 50.0], fields)
    during, after = got[42.0], got[50.0]
    limit = during[(1, POWER_LIMIT)]
    assert limit == 700
    assert during[(1, POWER_INSTANT)] > 1.15 * limit and during[(1, POWER)] > 1.15 * limit
    assert int(during[(1, REASONS)]) & (HW_SLOWDOWN | HW_POWER_BRAKE) == HW_SLOWDOWN | HW_POWER_BRAKE
    assert int(after[(1, REASONS)]) & (HW_SLOWDOWN | HW_POWER_BRAKE) == 0
    assert after[(1, POWER_INSTANT)] <= 1.02 * limit
    assert during[(0, POWER_INSTANT)] <= 1.02 * limit and int(during[(0, REASONS)]) & HW_POWER_BRAKE == 0


# Health needs the engine to run: these scenarios bring each fault to the first seconds, so the check sees it
# soon; GPU 0 is the healthy neighbour in each.
TWO_H100 = 'seed = 5\n[[gpu]]\nmodel = "H100"\ncount = 2\n'
HEALTH_CASES = {
    # the ECC storm at its full rate from the start, XID 92 at 0.5 s: PASS; then a DBE (XID 48) fails it
    "sbe-storm": (TWO_H100 + textwrap.dedent("""\
        [[event]]
        at = 0
        gpu = 1
        kind = "errors"
        sbe_rate = 17700
        [[event]]
        at = 0.5
        gpu = 1
        kind = "xid"
        xid = 92
        [[event]]
        at = 3.0
        gpu = 1
        kind = "xid"
        xid = 48
    """), [(2.2, "PASS", None), (4.5, "FAIL", "GPU 1 reported XID 48: double-bit ECC error")]),
    # 50 PCIe replays a second: past the 31 a minute a Gen5 x16 link allows within a second
    "pcie-replays": (TWO_H100 + textwrap.dedent("""\
        [[event]]
        at = 0
        gpu = 1
        kind = "errors"
        pcie_replay_rate = 50
    """), [(3.0, "WARN", "PCIe replays in the last minute, over the 31 its link allows")]),
    # XID 63 leaves a remapping pending (WARN), XID 64 fails one (FAIL)
    "row-remap": (TWO_H100 + textwrap.dedent("""\
        [[event]]
        at = 0.5
        gpu = 1
        kind = "xid"
        xid = 63
        [[event]]
        at = 2.5
        gpu = 1
        kind = "xid"
        xid = 64
    """), [(1.5, "WARN", "GPU 1 reported XID 63: page retirement or row remapping pending"),
           (3.5, "FAIL", "GPU 1 reported XID 64: page retirement or row remapping failed")]),
}

# health checks of every GPU at the node times given (seconds after the engine started); with each, the
# volatile SBE count of GPU 1 then.  The watches sample every 100 ms (dcgmHealthSet_v2), not every 30 s as
# dcgmHealthSet's do, so the replays of the last minute are counted within seconds.  The NVML source serves the
# PCIe replay counter once its reader thread has read it (blank before, as DCGM's cache is before its first
# update), and the PCIe check gives up on a window whose first sample is blank: the watches are set once the
# counter reads.
_HEALTH = textwrap.dedent("""
    import json, sys, time
    from dcgm_collector import dcgm, engine
    from dcgm_collector.ext._native import ffi, lib
    out = []
    with dcgm.Handle.embedded(library=engine.library_path()) as handle:
        started = time.monotonic()
        gpus = handle.all_gpus()
        record = ffi.new("dcgmFieldValue_v1 *")
        while lib.dcgmSimGetValueAt(1, 202, 0, record) != 0 or record.value.i64 >= 2**47:
            assert time.monotonic() - started < 5, "no PCIe replay count"
            time.sleep(0.05)
        params = ffi.new("dcgmHealthSetParams_v2 *", {
            "version": lib.dcgmHealthSetParams_version2, "groupId": handle._group_id(gpus),
            "systems": lib.DCGM_HEALTH_WATCH_ALL, "updateInterval": 100_000, "maxKeepAge": 600.0})
        assert lib.dcgmHealthSet_v2(handle._h(), params) == 0
        for at_s in json.loads(sys.argv[1]):
            time.sleep(max(0.0, at_s - (time.monotonic() - started)))
            report = handle.health_check(gpus)
            assert lib.dcgmSimGetValueAt(1, 310, round((at_s - 0.2) * 1e6), record) == 0
            out.append([report.overall, [i.message for i in report.incidents], record.value.i64])
    print(json.dumps(out))
""")


@pytest.mark.parametrize("source", ["models", "nvml"])
@pytest.mark.parametrize("case", sorted(HEALTH_CASES))
def test_health_sees_the_faults_dcgm_checks_and_passes_an_sbe_storm(tmp_path, case, source):
    text, checks = HEALTH_CASES[case]
    scenario = tmp_path / f"{case}.toml"
    scenario.write_text(text)
    env = _nvml_env(scenario) if source == "nvml" else _env(DCGM_SIM_SCENARIO=str(scenario))
    got = _child(_HEALTH, [json.dumps([at_s for at_s, _, _ in checks])], env)
    for (at_s, overall, message), (found, incidents, sbe) in zip(checks, got, strict=True):
        assert found == overall, (case, at_s, found, incidents)
        if message is None:
            assert incidents == [], (case, at_s, incidents)
        else:
            assert any(message in incident for incident in incidents), (case, at_s, incidents)
        if case == "sbe-storm":
            assert sbe >= 17_700 * 2, sbe      # two seconds of the storm by the first check, and still PASS
