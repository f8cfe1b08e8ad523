"""The early-warning rules on samples alone: each warns on its precursor, and not on what a healthy GPU does."""

from __future__ import annotations

import pytest

from dcgm_collector.collect.readers.warning_rules import (
    CLOCK_EVENTS,
    ECC_SBE_VOL,
    GPU_TEMP,
    NVLINK_CRC,
    NVLINK_REPLAY,
    PCIE_GEN,
    PCIE_REPLAYS,
    PCIE_WIDTH,
    POWER,
    POWER_LIMIT,
    ROW_REMAP_FAILED,
    ROW_REMAP_PENDING,
    SLOWDOWN_TEMP,
    GpuWarnings,
    pcie_replays_allowed,
    xid_needs,
)
from dcgm_collector.series.warnings import REASON_NAMES, WarningThresholds

S = 1_000_000   # µs in a second
STEP = 100_000  # samples every 100 ms


def times(start_s: float, end_s: float) -> list[int]:
    return list(range(int(start_s * S), int(end_s * S), STEP))


def feed_counter(rules: GpuWarnings, field: int, rate_of, start_s: float, end_s: float, total: float = 0.0) -> float:
    """Feed a running total whose rate (per second) at time t is rate_of(t); the total at the end."""
    ts = times(start_s, end_s)
    values = []
    for t in ts:
        total += rate_of(t / S) * STEP / S
        values.append(float(int(total)))
    rules.feed(field, ts, values)
    return total


def test_dcgms_pcie_thresholds_for_the_common_links() -> None:
    assert pcie_replays_allowed(4, 16) == 16
    assert pcie_replays_allowed(5, 16) == 31
    assert pcie_replays_allowed(3, 16) == 8
    assert pcie_replays_allowed(1, 16) == 3
    assert pcie_replays_allowed(0, 16) is None


@pytest.mark.parametrize(("xid", "needs"), [(48, "reset"), (64, "reset"), (79, "reset"), (74, "reset"),
                                            (95, "reset"), (119, "reset"), (92, "inspect"), (13, None),
                                            (31, None), (43, None), (63, None), (94, None), (9999, None)])
def test_xids_warn_by_their_catalogue_action(xid: int, needs: str | None) -> None:
    assert xid_needs(xid) == needs


def test_a_healthy_gpu_holds_no_warning() -> None:
    rules = GpuWarnings(WarningThresholds())
    ts = times(0, 600)
    rules.feed(PCIE_GEN, ts, [5.0] * len(ts))
    rules.feed(PCIE_WIDTH, ts, [16.0] * len(ts))
    rules.feed(SLOWDOWN_TEMP, ts, [89.0] * len(ts))
    rules.feed(GPU_TEMP, ts, [70.0 + (i % 7) * 0.5 for i in range(len(ts))])
    rules.feed(POWER_LIMIT, ts, [700.0] * len(ts))
    rules.feed(POWER, ts, [690.0 + (i % 3) * 5 for i in range(len(ts))])   # a capped load: 690-700 W
    rules.feed(CLOCK_EVENTS, ts, [4.0] * len(ts))                          # SW power cap only
    feed_counter(rules, ECC_SBE_VOL, lambda t: 0.01, 0, 600)
    feed_counter(rules, PCIE_REPLAYS, lambda t: 0.005, 0, 600)
    for field in (*NVLINK_CRC, *NVLINK_REPLAY):
        feed_counter(rules, field, lambda t: 0.02, 0, 600)
    assert rules.holding(600 * S) == {}
    rates = rules.rates()
    assert rates["ecc_sbe"] == pytest.approx(0.0, abs=0.05)


def test_an_sbe_storm_warns_and_its_acceleration_first() -> None:
    rules = GpuWarnings(WarningThresholds())
    # quiet for 4 minutes, then from 100/s climbing to 17,700/s over 2 minutes (DCGM #313's GPU)
    total = feed_counter(rules, ECC_SBE_VOL, lambda t: 0.0, 0, 240)
    seen: dict[str, float] = {}
    for second in range(240, 360):
        total = feed_counter(rules, ECC_SBE_VOL, lambda t: 100 + (t - 240) / 120 * 17_600, second, second + 1, total)
        for reason in rules.holding((second + 1) * S):
            seen.setdefault(reason, second + 1)
    assert set(seen) == {"ecc_sbe_storm", "ecc_sbe_accelerating"}
    assert seen["ecc_sbe_accelerating"] <= seen["ecc_sbe_storm"] <= 252
    assert rules.rates()["ecc_sbe"] == pytest.approx(17_700 - 17_600 / 4, rel=0.05)   # the last minute's mean
    line = rules.holding(360 * S)["ecc_sbe_storm"]
    assert line.endswith("correctable ECC errors a second over the last minute")


def test_a_steady_storm_is_a_storm_not_an_acceleration() -> None:
    rules = GpuWarnings(WarningThresholds())
    feed_counter(rules, ECC_SBE_VOL, lambda t: 4647.0, 0, 400)
    assert set(rules.holding(400 * S)) == {"ecc_sbe_storm"}


def test_pcie_replays_over_the_links_allowance_warn() -> None:
    rules = GpuWarnings(WarningThresholds())
    ts = times(0, 200)
    rules.feed(PCIE_GEN, ts, [5.0] * len(ts))
    rules.feed(PCIE_WIDTH, ts, [16.0] * len(ts))
    total = feed_counter(rules, PCIE_REPLAYS, lambda t: 30 / 60, 0, 100)   # 30 a minute: allowed at Gen5 x16
    assert "pcie_replays" not in rules.holding(100 * S)
    feed_counter(rules, PCIE_REPLAYS, lambda t: 120 / 60, 100, 200, total)
    count, rest = rules.holding(200 * S)["pcie_replays"].split(" ", 1)
    assert 115 <= float(count) <= 120
    assert rest == "PCIe replays a minute, over the 31 a Gen5 x16 link allows"


def test_nvlink_crc_at_dcgms_rate_warns() -> None:
    rules = GpuWarnings(WarningThresholds())
    feed_counter(rules, NVLINK_CRC[0], lambda t: 60.0, 0, 120)
    feed_counter(rules, NVLINK_CRC[1], lambda t: 30.0, 0, 120)
    assert "nvlink_errors" not in rules.holding(120 * S)
    rules = GpuWarnings(WarningThresholds())
    feed_counter(rules, NVLINK_CRC[0], lambda t: 80.0, 0, 120)
    feed_counter(rules, NVLINK_CRC[1], lambda t: 30.0, 0, 120)
    assert rules.holding(120 * S)["nvlink_errors"] == "110 NvLink CRC errors a second over the last minute"


def test_row_remaps_pending_then_failed() -> None:
    rules = GpuWarnings(WarningThresholds())
    rules.feed(ROW_REMAP_PENDING, [S], [0.0])
    rules.feed(ROW_REMAP_FAILED, [S], [0.0])
    assert rules.holding(S) == {}
    rules.feed(ROW_REMAP_PENDING, [2 * S], [1.0])
    assert set(rules.holding(2 * S)) == {"row_remap_pending"}
    rules.feed(ROW_REMAP_FAILED, [3 * S], [1.0])
    assert set(rules.holding(3 * S)) == {"row_remap_pending", "row_remap_failed"}


def test_heating_toward_slowdown_warns_before_the_margin_is_gone() -> None:
    rules = GpuWarnings(WarningThresholds())
    ts = times(0, 60)
    rules.feed(SLOWDOWN_TEMP, ts, [89.0] * len(ts))
    rules.feed(GPU_TEMP, ts, [70.0 + 0.2 * t / S for t in ts])   # 0.2 C a second: 82 C after 60 s, 7 C to go
    line = rules.holding(60 * S)["thermal_margin"]
    assert line.startswith("82 C and rising 12 C a minute: the 89 C slowdown temperature in about")
    # the same heating far from slowdown (a GPU warming up from idle) is nothing
    rules = GpuWarnings(WarningThresholds())
    rules.feed(SLOWDOWN_TEMP, ts, [89.0] * len(ts))
    rules.feed(GPU_TEMP, ts, [40.0 + 0.5 * t / S for t in ts])
    assert rules.holding(60 * S) == {}


def test_power_over_the_limit_longer_than_a_spike() -> None:
    rules = GpuWarnings(WarningThresholds())
    rules.feed(POWER_LIMIT, [0], [700.0])
    spike = times(0, 1)   # a second over the limit, then back under: a spike the cap catches
    rules.feed(POWER, spike, [760.0] * len(spike))
    rules.feed(POWER, [S], [690.0])
    assert "power_over_limit" not in rules.holding(S)
    over = times(2, 8)
    rules.feed(POWER, over, [840.0] * len(over))
    assert rules.holding(8 * S)["power_over_limit"] == "power 840 W over the 700 W limit for 6 s"


def test_repeated_hardware_slowdowns() -> None:
    rules = GpuWarnings(WarningThresholds())
    for event in range(6):
        start = event * 60 * S
        rules.feed(CLOCK_EVENTS, [start, start + S, start + 2 * S], [0x80 | 0x8, 0x8, 0.0])
        if event < 5:
            assert "hw_slowdown_repeated" not in rules.holding(start + 2 * S)
    assert rules.holding(6 * 60 * S)["hw_slowdown_repeated"] == "6 hardware slowdowns began in the last 10 minutes"


def test_an_xid_needing_a_reset_warns_for_the_hold() -> None:
    rules = GpuWarnings(WarningThresholds(hold_s=600))
    rules.xid(13, S)
    assert rules.holding(2 * S) == {}
    rules.xid(79, 10 * S)
    assert set(rules.holding(11 * S)) == {"xid_reset"}
    assert rules.holding(611 * S) == {}


def test_every_reason_is_named_once() -> None:
    assert len(set(REASON_NAMES)) == len(REASON_NAMES) == 11
