"""What the generated Grafana dashboard shows for each kind of counters-file row.

This module is data: which section (dashboard row) a DCGM field belongs
to, the panel title, and how its value is best read (last value, rate of a
counter, a bitmask split into reasons...).  :mod:`dcgm_collector.dashboard`
turns it into panels.

Fields are named here by any name the field table accepts and matched by
field id, so a counters file that writes ``DCGM_FI_DEV_GPU_TEMP``,
``DCGM_FI_DEV_GPU_TEMP_CELSIUS`` or ``dcgm_gpu_temp`` gets the same panel
(querying the metric under the name the file gives it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CLOCK_EVENT_REASONS",
    "COLLECTOR",
    "ERRORS",
    "FRAMEBUFFER_USED_PERCENT",
    "HEALTH_RESULTS",
    "LEVELS",
    "MIG_FIELDS",
    "MIG_INSTANCES",
    "OTHER",
    "PROCESSES",
    "SECTIONS",
    "STYLES",
    "TEMPERATURE_ALERT_C",
    "Level",
    "Style",
    "UNITS",
    "grafana_unit",
]

OVERVIEW = "Overview"
UTILISATION = "Utilisation"
FRAMEBUFFER = "Framebuffer"
TEMPERATURE = "Temperature"
POWER = "Power"
CLOCKS = "Clocks and throttling"
ERRORS = "XID errors and health"
INTERCONNECT = "PCIe and NVLink"
MIG_INSTANCES = "MIG instances"
PROCESSES = "Processes and idle time"
NVLINK_LINKS = "NvLink links"
NVSWITCHES = "NvSwitches"
CPUS = "CPUs"
OTHER = "Other metrics"
COLLECTOR = "Collector"
SECTIONS = (OVERVIEW, UTILISATION, FRAMEBUFFER, MIG_INSTANCES, PROCESSES, TEMPERATURE, POWER, CLOCKS, ERRORS,
            INTERCONNECT, NVLINK_LINKS, NVSWITCHES, CPUS, OTHER, COLLECTOR)

# The alert rules page at this temperature (issue 7: above 85 C for 2 m), so
# the panel draws its threshold line at the same place.
TEMPERATURE_ALERT_C = 85
FRAMEBUFFER_USED_PERCENT = 90

# DCGM field unit -> (Grafana unit id, factor the query multiplies by).
# MHz becomes Hz so that Grafana scales the axis (MHz/GHz) itself: its only
# "MHz" unit, rotmhz, is a rotational speed.  MiB is Grafana's "mbytes"
# (mebibytes); "decmbytes" would be SI megabytes.
UNITS: dict[str, tuple[str, float]] = {
    "C": ("celsius", 1),
    "W": ("watt", 1),
    "MHz": ("hertz", 1e6),
    "MiB": ("mbytes", 1),
    "B": ("bytes", 1),
    "%": ("percent", 1),
    "ratio": ("percentunit", 1),
    "B/s": ("Bps", 1),
    "KB/s": ("KBs", 1),
    "MB/s": ("MBs", 1),
    "ns": ("ns", 1),
    "ms": ("ms", 1),
    "s": ("s", 1),
    "mJ": ("joule", 1e-3),
}
FALLBACK_UNIT = "short"


def grafana_unit(unit: str | None) -> tuple[str, float]:
    """(Grafana unit id, factor) for a DCGM field unit; unknown units stay unscaled numbers."""
    if unit is None:
        return FALLBACK_UNIT, 1
    return UNITS.get(unit, (FALLBACK_UNIT, 1))


@dataclass(frozen=True)
class Style:
    section: str
    title: str
    # how the series is read:
    #   "value"      the last value (plus window families beside it)
    #   "total"      a counter shown as its running total (error counts)
    #   "time_share" a counter of nanoseconds spent in a state, shown as the share of time
    #   "power"      an energy counter (mJ) shown as the power it implies (W)
    #   "reasons"    the clock-event bitmask split into one 0/1 series per reason
    #   "xid_last"   the last XID of each GPU, as a table
    view: str = "value"
    thresholds: tuple[tuple[float, str], ...] = ()   # (value, colour) steps above the green base
    threshold_line: bool = False                      # draw the thresholds as lines on the graph
    min: float | None = None
    max: float | None = None
    description: str = ""
    unit: str | None = None      # overrides the field table's unit where DCGM's metadata is off
    dips: bool = False           # also draw the _min window series: a short dip matters here


@dataclass(frozen=True)
class Level:
    """How the series of one kind of entity are selected and named on the dashboard.

    ``selector`` holds the label matchers after ``instance``; ``legend`` names
    one series.  The label names are those dcgm-exporter gives that level
    (link series carry ``nvlink``, switch series ``nvswitch``, CPU series
    ``cpu`` and ``cpucore``).
    """
    section: str
    selector: str
    legend: str


# MIG GPU instances: the series of a GPU split into instances, told apart by
# GPU_I_ID (absent on whole GPUs, hence GPU_I_ID!="").
MIG = Level(MIG_INSTANCES, 'gpu=~"$gpu", GPU_I_ID!="", GPU_I_ID=~"$gpu_instance"',
            "{{hostname}} GPU {{gpu}}/{{GPU_I_PROFILE}}/{{GPU_I_ID}}")

# Keyed by the entity level the field table gives a field: a row of such a
# field gets its panel in the level's section, with the level's selector and
# legend.  GPU-level rows keep the sections of STYLES.
LEVELS: dict[str, Level] = {
    "LINK": Level(NVLINK_LINKS, 'gpu=~"$gpu"', "{{hostname}} GPU {{gpu}} link {{nvlink}}"),
    "SWITCH": Level(NVSWITCHES, "", "{{hostname}} NvSwitch {{nvswitch}}"),
    "CPU": Level(CPUS, "", "{{hostname}} CPU {{cpu}}"),
    "CPU_CORE": Level(CPUS, "", "{{hostname}} CPU {{cpu}} core {{cpucore}}"),
}

# The rows a MIG instance serves of its own (its share of the framebuffer);
# profiling rows are per instance too.
MIG_FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")


def _pct(section: str, title: str, **kw) -> Style:
    return Style(section, title, min=0, max=100, **kw)


def _ratio(section: str, title: str, **kw) -> Style:
    return Style(section, title, min=0, max=1, **kw)


# Keyed by any accepted field name (the dashboard matches rows by field id)
# or by DCGM_EXP_* name; within a section, panels come in this order.
# DCGM_EXP_P2P_STATUS has no entry: the collector does not serve it, and a
# panel for it would only ever say "No data".
STYLES: dict[str, Style] = {
    # utilisation
    "DCGM_FI_DEV_GPU_UTIL": _pct(UTILISATION, "GPU utilisation",
                                 thresholds=((90, "orange"),), threshold_line=True),
    "DCGM_FI_DEV_MEM_COPY_UTIL": _pct(UTILISATION, "Memory copy utilisation"),
    "DCGM_FI_DEV_ENC_UTIL": _pct(UTILISATION, "Encoder utilisation"),
    "DCGM_FI_DEV_DEC_UTIL": _pct(UTILISATION, "Decoder utilisation"),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": _ratio(UTILISATION, "Graphics engine active"),
    "DCGM_FI_PROF_SM_ACTIVE": _ratio(UTILISATION, "SM active"),
    "DCGM_FI_PROF_SM_OCCUPANCY": _ratio(UTILISATION, "SM occupancy"),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": _ratio(UTILISATION, "Tensor pipe active"),
    "DCGM_FI_PROF_DRAM_ACTIVE": _ratio(UTILISATION, "DRAM active"),
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE": _ratio(UTILISATION, "FP64 pipe active"),
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": _ratio(UTILISATION, "FP32 pipe active"),
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": _ratio(UTILISATION, "FP16 pipe active"),
    # framebuffer
    "DCGM_FI_DEV_FB_USED": Style(FRAMEBUFFER, "Framebuffer used", min=0),
    "DCGM_FI_DEV_FB_FREE": Style(FRAMEBUFFER, "Framebuffer free", min=0),
    "DCGM_FI_DEV_FB_RESERVED": Style(FRAMEBUFFER, "Framebuffer reserved", min=0),
    "DCGM_FI_DEV_FB_TOTAL": Style(FRAMEBUFFER, "Framebuffer total", min=0),
    # temperature
    "DCGM_FI_DEV_GPU_TEMP": Style(TEMPERATURE, "GPU temperature",
                                  thresholds=((TEMPERATURE_ALERT_C, "red"),), threshold_line=True,
                                  description=f"The alert rules page above {TEMPERATURE_ALERT_C} °C (red line)."),
    "DCGM_FI_DEV_MEMORY_TEMP": Style(TEMPERATURE, "Memory (HBM) temperature"),
    # power
    "DCGM_FI_DEV_POWER_USAGE": Style(POWER, "Power draw", min=0),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": Style(
        POWER, "Power from the energy counter", view="power", min=0,
        description="Rate of the total-energy counter: the mean draw between scrapes, which catches "
                    "what a sampled power reading misses."),
    # clocks and throttling
    "DCGM_FI_DEV_SM_CLOCK": Style(CLOCKS, "SM clock", min=0, dips=True),
    "DCGM_FI_DEV_MEM_CLOCK": Style(CLOCKS, "Memory clock", min=0, dips=True),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": Style(
        CLOCKS, "Clock throttle reasons", view="reasons",
        description="Which throttling reasons DCGM reports for each GPU (1 = active)."),
    "DCGM_EXP_CLOCK_EVENTS_COUNT": Style(
        CLOCKS, "Clock events in the window", min=0,
        description="Samples with each clock event reason set during the collector's clock-events window."),
    "DCGM_FI_DEV_POWER_VIOLATION": Style(CLOCKS, "Throttled by power", view="time_share", min=0, max=1),
    "DCGM_FI_DEV_THERMAL_VIOLATION": Style(CLOCKS, "Throttled by temperature", view="time_share", min=0, max=1),
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION": Style(CLOCKS, "Throttled by sync boost", view="time_share", min=0, max=1),
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION": Style(CLOCKS, "Throttled by board limit", view="time_share", min=0, max=1),
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION": Style(CLOCKS, "Throttled by low utilisation", view="time_share", min=0, max=1),
    "DCGM_FI_DEV_RELIABILITY_VIOLATION": Style(CLOCKS, "Throttled for reliability", view="time_share", min=0, max=1),
    # XID errors and health
    "DCGM_FI_DEV_XID_ERRORS": Style(ERRORS, "Last XID error", view="xid_last",
                                    description="The most recent XID each GPU reported, however old."),
    "DCGM_EXP_XID_ERRORS_COUNT": Style(
        ERRORS, "XID errors in the window", min=0,
        description="XIDs each GPU reported during the collector's XID window (-x), by XID number."),
    "DCGM_EXP_GPU_HEALTH_STATUS": Style(
        ERRORS, "GPU health (worst watch)", min=0,
        description="The worst recent result of DCGM's health watches per GPU; the health_watch and "
                    "health_error_code labels of DCGM_EXP_GPU_HEALTH_STATUS say which."),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": Style(ERRORS, "ECC single-bit errors (volatile)", view="total"),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": Style(ERRORS, "ECC double-bit errors (volatile)", view="total"),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": Style(ERRORS, "ECC single-bit errors (lifetime)", view="total"),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": Style(ERRORS, "ECC double-bit errors (lifetime)", view="total"),
    "DCGM_FI_DEV_RETIRED_SBE": Style(ERRORS, "Pages retired (single-bit)", view="total"),
    "DCGM_FI_DEV_RETIRED_DBE": Style(ERRORS, "Pages retired (double-bit)", view="total"),
    "DCGM_FI_DEV_RETIRED_PENDING": Style(ERRORS, "Pages pending retirement", view="total"),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": Style(ERRORS, "Rows remapped (uncorrectable)", view="total"),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": Style(ERRORS, "Rows remapped (correctable)", view="total"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": Style(ERRORS, "Row remap failed", thresholds=((1, "red"),)),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": Style(ERRORS, "Row remap pending", thresholds=((1, "orange"),)),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": Style(ERRORS, "PCIe replays", view="total"),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL": Style(ERRORS, "NVLink flit CRC errors", view="total"),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL": Style(ERRORS, "NVLink data CRC errors", view="total"),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL": Style(ERRORS, "NVLink replays", view="total"),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL": Style(ERRORS, "NVLink recoveries", view="total"),
    # PCIe and NVLink traffic
    "DCGM_FI_PROF_PCIE_TX_BYTES": Style(INTERCONNECT, "PCIe transmit", min=0),
    "DCGM_FI_PROF_PCIE_RX_BYTES": Style(INTERCONNECT, "PCIe receive", min=0),
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": Style(INTERCONNECT, "PCIe transmit (NVML)", min=0),
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": Style(INTERCONNECT, "PCIe receive (NVML)", min=0),
    # the field table says B, but like 1009/1010 these are per-second rates
    "DCGM_FI_PROF_NVLINK_TX_BYTES": Style(INTERCONNECT, "NVLink transmit", min=0, unit="B/s"),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": Style(INTERCONNECT, "NVLink receive", min=0, unit="B/s"),
    # DCGM 4 gives this field a MB/s unit: it is a throughput, whatever type the row declares
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": Style(INTERCONNECT, "NVLink throughput (all links)", min=0),
    # NvLink, per link (the nvlink label)
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL": Style(NVLINK_LINKS, "Flit CRC errors per link",
                                                             view="total"),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_PER_LINK_TOTAL": Style(NVLINK_LINKS, "Data CRC errors per link",
                                                             view="total"),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL": Style(NVLINK_LINKS, "Replays per link", view="total"),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_PER_LINK_TOTAL": Style(NVLINK_LINKS, "Recoveries per link", view="total"),
    "DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK": Style(NVLINK_LINKS, "Throughput per link", min=0),
    "DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK": Style(NVLINK_LINKS, "Transmit per link", min=0),
    "DCGM_FI_DEV_NVLINK_RX_THROUGHPUT_PER_LINK": Style(NVLINK_LINKS, "Receive per link", min=0),
    "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK": Style(NVLINK_LINKS, "Transmit per link (profiling)", min=0,
                                                   unit="B/s"),
    "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK": Style(NVLINK_LINKS, "Receive per link (profiling)", min=0,
                                                   unit="B/s"),
    # NvSwitches and CPUs
    "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS": Style(NVSWITCHES, "NvSwitch temperature", unit="C"),
    "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX": Style(NVSWITCHES, "NvSwitch transmit", min=0),
    "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX": Style(NVSWITCHES, "NvSwitch receive", min=0),
    "DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS": Style(NVSWITCHES, "NvSwitch fatal link errors", view="total"),
    "DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS": Style(NVSWITCHES, "NvSwitch non-fatal link errors", view="total"),
    "DCGM_FI_DEV_CPU_TEMP_CELSIUS": Style(CPUS, "CPU temperature", unit="C"),
    "DCGM_FI_DEV_CPU_POWER_WATTS": Style(CPUS, "CPU power", min=0, unit="W"),
    "DCGM_FI_DEV_CPU_UTIL_TOTAL": Style(CPUS, "CPU core utilisation", min=0),
    "DCGM_FI_DEV_CPU_CLOCK_CURRENT": Style(CPUS, "CPU core clock", min=0),
}

# The clock-event reasons that mean the GPU is held back (DCGM's
# DCGM_CLOCKS_EVENT_REASON_* bits); idle, application clocks and display
# clocks are left out, being normal states rather than throttling.
CLOCK_EVENT_REASONS: tuple[tuple[str, int], ...] = (
    ("power cap", 0x4),
    ("HW slowdown", 0x8),
    ("SW thermal", 0x20),
    ("HW thermal", 0x40),
    ("power brake", 0x80),
)

# dcgmHealthWatchResult_t values, as DCGM_EXP_GPU_HEALTH_STATUS serves them.
HEALTH_RESULTS: tuple[tuple[int, str, str], ...] = (
    (0, "pass", "green"),
    (10, "warn", "orange"),
    (20, "fail", "red"),
)
