"""Early warnings (--warnings): their reasons, the thresholds' defaults and sources, the families they are served as.

The warning reader (collect.readers.warnings) reads every sample of a GPU's
error counters, temperatures, power and clock-event reasons from the rings
and raises a warning while a precursor of a failure is present.  Each GPU
has one ``DCGM_EXP_GPU_WARNING`` series per reason, 1 while it holds and 0
otherwise (so an alert and a fleet rule see every GPU), and one
``DCGM_EXP_GPU_ERROR_RATE`` series per error counter (per second over the
last minute), which the shipped fleet rules compare across GPUs.  Their field
ids sit beside the idle families' in the store's private range.

Where each default comes from (facts kept in docs/warnings.md):

- correctable ECC errors: NVIDIA publishes no rate threshold; DCGM's own
  header carries 10 as a placeholder SBE rate, and the driver's signal is
  XID 92.  A GPU on NVIDIA's DCGM issue #313 read ~17,700 a second while its
  peers read 0 and DCGM called it Healthy.
- PCIe replays: DCGM's health watch allows a bit error rate of 1e-12 at the
  link's lane rate and width, a minute at a time (16/min at Gen4 x16, 31/min
  at Gen5 x16).
- NvLink: DCGM's limit for CRC errors is 100 a second; replay and recovery
  errors are counted at any rate by DCGM's health check (which the health
  series report); here they warn at 1 a second.
- hardware slowdown: GPUd calls a GPU unhealthy at 0.6 events a minute over
  10 minutes, i.e. 6 events in 10 minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from dcgm_collector.series.idle import IDLE_FAMILIES
from dcgm_collector.series.processes import PROCESS_FAMILIES, ProcessFamily

__all__ = ["ERROR_COUNTERS", "ERROR_RATE_FAMILY", "REASON_LABEL", "REASONS", "WARNING_FAMILIES",
           "WARNING_FAMILY", "COUNTER_LABEL", "Reason", "WarningThresholds"]

REASON_LABEL = "reason"
COUNTER_LABEL = "counter"


class Reason(NamedTuple):
    """One kind of warning: its label value and what it means, as the docs and the alerts say it."""

    name: str
    summary: str


REASONS: tuple[Reason, ...] = (
    Reason("ecc_sbe_storm", "correctable ECC errors at or over --warn-sbe-rate a second over the last minute"),
    Reason("ecc_sbe_accelerating", "the correctable ECC error rate of the last minute is --warn-sbe-acceleration "
                                   "times or more that of the minutes before (and at least 1 a second)"),
    Reason("row_remap_pending", "a memory row (or page) waits for a GPU reset to be remapped (retired)"),
    Reason("row_remap_failed", "the GPU could not remap a memory row: a bank is out of spares"),
    Reason("pcie_replays", "PCIe replays in the last minute above DCGM's threshold for the link's "
                           "generation and width"),
    Reason("nvlink_errors", "NvLink CRC errors at or over --warn-nvlink-crc-rate a second, or replay and "
                            "recovery errors at 1 a second or more, over the last minute"),
    Reason("thermal_margin", "the GPU is within --warn-thermal-margin C of its slowdown temperature, or heating "
                             "toward it fast enough to reach it within --warn-thermal-lead seconds"),
    Reason("hw_slowdown_repeated", "--warn-hw-slowdown-events or more hardware slowdowns (thermal, power brake) "
                                   "began in the last 10 minutes"),
    Reason("power_over_limit", "the power draw stayed over the power limit for --warn-power-over-limit seconds "
                               "or longer: longer than a spike the cap catches"),
    Reason("xid_reset", "an XID whose catalogue action is a GPU reset or a reboot came in --warn-hold seconds ago "
                        "or less"),
    Reason("xid_inspect", "an XID whose catalogue action is an inspection or a call to support came in "
                          "--warn-hold seconds ago or less"),
)
REASON_NAMES = tuple(r.name for r in REASONS)

# the error counters whose rates are served, and compared across a fleet by the shipped rules
ERROR_COUNTERS = ("ecc_sbe", "pcie_replay", "nvlink_crc", "nvlink_replay")

_BASE = 65020
WARNING_FAMILY = ProcessFamily(
    "warning", "DCGM_EXP_GPU_WARNING", _BASE + 1,
    "1 while an early warning holds for the GPU, 0 otherwise, by reason (see docs/warnings.md).", "gauge", True)
ERROR_RATE_FAMILY = ProcessFamily(
    "error_rate", "DCGM_EXP_GPU_ERROR_RATE", _BASE + 2,
    "The GPU's error counters' rate over the last minute of samples, per second, by counter: ecc_sbe "
    "(volatile correctable ECC), pcie_replay, nvlink_crc (flit and data CRC), nvlink_replay (replay and "
    "recovery).", "gauge", False)
WARNING_FAMILIES: tuple[ProcessFamily, ...] = (WARNING_FAMILY, ERROR_RATE_FAMILY)

assert not {f.field_id for f in WARNING_FAMILIES} & {f.field_id for f in (*PROCESS_FAMILIES, *IDLE_FAMILIES)}


@dataclass(frozen=True)
class WarningThresholds:
    """The thresholds of the warnings, one flag each (the defaults' sources are in the module's text)."""

    sbe_rate: float = 10.0              # --warn-sbe-rate: correctable ECC errors a second
    sbe_acceleration: float = 3.0       # --warn-sbe-acceleration: last minute's rate over the minutes before
    pcie_ber: float = 1e-12             # --warn-pcie-ber: DCGM's allowed bit error rate
    nvlink_crc_rate: float = 100.0      # --warn-nvlink-crc-rate: CRC errors a second
    thermal_margin_c: float = 5.0       # --warn-thermal-margin: degrees below slowdown
    thermal_lead_s: float = 120.0       # --warn-thermal-lead: seconds to slowdown at the current heating rate
    hw_slowdown_events: int = 6         # --warn-hw-slowdown-events: in 10 minutes
    power_over_limit_s: float = 5.0     # --warn-power-over-limit: seconds over the limit
    hold_s: float = 600.0               # --warn-hold: how long an XID warning stays up

    # not flags: the window of the rates, the baseline the acceleration compares with, the slowdown count's span,
    # and how near slowdown the heating rate starts to count (a GPU warming up from idle is far from it)
    rate_window_s: float = 60.0
    baseline_window_s: float = 240.0
    slowdown_window_s: float = 600.0
    thermal_trend_margin_c: float = 15.0
    nvlink_replay_rate: float = 1.0
