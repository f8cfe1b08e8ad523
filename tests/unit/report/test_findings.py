"""The report's findings on synthetic series: what each rule finds, when, and the order they come in."""

from __future__ import annotations

import numpy as np

from dcgm_collector.report.findings import FIELDS, find
from dcgm_collector.report.recording import Series

T = np.arange(-120.0, 11.0, 1.0)   # two minutes before the trigger, ten seconds after, a sample a second


def flat(value: float) -> Series:
    return Series(T, np.full(len(T), value))


def quiet_gpu(gpu: int = 0) -> dict[tuple[int, int], Series]:
    """A busy GPU with nothing wrong: 300 W of a 400 W limit, steady temperatures, clock and counters."""
    return {
        (gpu, FIELDS["power"]): flat(300.0), (gpu, FIELDS["power_limit"]): flat(400.0),
        (gpu, FIELDS["gpu_temp"]): flat(60.0), (gpu, FIELDS["slowdown_temp"]): flat(90.0),
        (gpu, FIELDS["mem_temp"]): flat(70.0), (gpu, FIELDS["sm_clock"]): flat(1410.0),
        (gpu, FIELDS["clock_events"]): flat(0.0), (gpu, FIELDS["util"]): flat(95.0),
        (gpu, 310): flat(12.0), (gpu, 311): flat(0.0), (gpu, 202): flat(3.0), (gpu, 409): flat(0.0),
    }


def test_a_flat_window_has_no_findings():
    assert find(quiet_gpu(), [0]) == []


def test_a_power_cap_40_s_before_the_trigger_is_found_with_its_time():
    series = quiet_gpu()
    power = np.full(len(T), 300.0)
    power[T == -40.0] = 399.0
    series[(0, FIELDS["power"])] = Series(T, power)
    [finding] = find(series, [0])
    assert finding.kind == "power cap"
    assert finding.sentence() == "GPU 0: power at 100 % of its 400 W limit, 40 s before the trigger"


def test_the_sw_power_cap_reason_alone_is_a_power_cap():
    series = quiet_gpu()
    events = np.zeros(len(T))
    events[(T >= -25) & (T <= -5)] = 0x4
    series[(0, FIELDS["clock_events"])] = Series(T, events)
    [finding] = find(series, [0])
    assert finding.kind == "power cap" and finding.sentence().endswith("25 s before the trigger")


def test_what_comes_after_the_trigger_is_no_finding():
    series = quiet_gpu()
    power = np.full(len(T), 300.0)
    power[T == 5.0] = 400.0
    series[(0, FIELDS["power"])] = Series(T, power)
    assert find(series, [0]) == []


def test_thermal_memory_climb_errors_and_clock_each_found():
    series = quiet_gpu()
    events = np.zeros(len(T))
    events[T >= -10] = 0x40
    series[(0, FIELDS["clock_events"])] = Series(T, events)
    series[(0, FIELDS["mem_temp"])] = Series(T, 70.0 + (T + 120.0) / 20.0)   # 3 degC/min
    dbe = np.where(T >= -30, 2.0, 0.0)
    series[(0, 311)] = Series(T, dbe)
    clock = np.full(len(T), 1410.0)
    clock[T >= -15] = 1000.0
    series[(0, FIELDS["sm_clock"])] = Series(T, clock)
    found = {f.kind: f for f in find(series, [0])}
    assert set(found) == {"thermal slowdown", "memory temperature", "errors", "clock"}
    assert found["thermal slowdown"].sentence() == "GPU 0: HW thermal slowdown reason set, 10 s before the trigger"
    assert "climbing 3.0 °C/min" in found["memory temperature"].text
    assert found["errors"].text.startswith("uncorrectable (DBE) ECC errors accelerating: 2 in the last minute")
    assert found["errors"].before_s == 30.0
    assert "SM clock pulled down to 1000 MHz (71 % of its 1410 MHz" in found["clock"].text
    assert found["clock"].before_s == 15.0


def test_a_steady_error_rate_is_no_acceleration():
    series = quiet_gpu()
    series[(0, 310)] = Series(T, T + 120.0)   # one a second all along
    assert find(series, [0]) == []


def test_findings_are_ranked_by_closeness_and_strength():
    series = {**quiet_gpu(0), **quiet_gpu(1)}
    far = np.full(len(T), 300.0)
    far[T == -110.0] = 400.0                  # GPU 0: a power cap long before
    series[(0, FIELDS["power"])] = Series(T, far)
    events = np.zeros(len(T))
    events[T == -5.0] = 0x40                  # GPU 1: a HW thermal slowdown just before
    series[(1, FIELDS["clock_events"])] = Series(T, events)
    sbe = np.where(T >= -5, 20.0, 12.0)       # GPU 0: correctable errors, just before but weaker
    series[(0, 310)] = Series(T, sbe)
    ranked = find(series, [0, 1])
    assert [(f.gpu, f.kind) for f in ranked] == [(1, "thermal slowdown"), (0, "errors"), (0, "power cap")]


def test_early_warnings_before_the_trigger_lead_the_findings_earliest_first():
    from dcgm_collector.report.findings import early_warnings
    from dcgm_collector.report.recording import Trigger

    triggers = [
        Trigger("warning", -95.0, "", (1,), "early warning ecc_sbe_accelerating on GPU 1: 120 a second"),
        Trigger("warning", -60.0, "", (1,), "early warning ecc_sbe_storm on GPU 1: 9000 a second"),
        Trigger("xid", 0.0, "", (1,), "XID 92"),
        Trigger("warning", 5.0, "", (1,), "early warning xid_inspect on GPU 1: an XID"),   # after: not a cause
    ]
    found = early_warnings(triggers)
    assert [f.sentence() for f in found] == [
        "GPU 1: early warning ecc_sbe_accelerating (120 a second), 95 s before the trigger",
        "GPU 1: early warning ecc_sbe_storm (9000 a second), 60 s before the trigger",
    ]
