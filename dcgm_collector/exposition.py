"""The /metrics text: the sampler's rings rendered as dcgm-exporter 4.8 writes them.

A scrape never calls DCGM.  It reads the rings (one window read per ring),
the event ring, and what the sampler thread refreshed (labels, health).

Compatibility with dcgm-exporter 4.8 (reference §2.2-2.6):

* Metric names are the counters file's first column as written; families
  come in counters-file order, the series of a family in GPU order.
* GPU labels, in this order: ``gpu, UUID, pci_bus_id, device, modelName,
  hostname`` (hostname left out with -n), then the values of the file's
  ``label`` rows keyed by the row's name together with the DCGM_EXP_*
  counters' own labels, sorted by key, then ``err_code, err_msg`` on
  DCGM_FI_DEV_XID_ERRORS.  Global (node-wide) fields are served on every GPU.
* Integer fields print as ``%d``, doubles as ``%f``; blank and
  not-supported values are left out, and so is a family with no series.
* The family of a field row carries the last value (within the trailing
  ``max(window, stale_after)``, so a GPU that stopped reporting drops out).

Differences, on purpose:

* Label values and HELP are escaped as the text format requires; HELP and
  TYPE come once per family.
* Rows typed histogram or summary are typed ``untyped`` (``unknown`` in
  OpenMetrics): one plain sample is neither.  DCGM_EXP_* rows whose type is
  not gauge or counter are gauges (their values are windowed counts).
* OpenMetrics: a counter family whose name ends in ``_total`` is declared
  without that suffix, as the format wants; any other counter is declared
  ``unknown`` so its series keeps the name it has in the text format
  (Prometheus prefers OpenMetrics, and a renamed series would break queries).
* Extra families: ``<name>_min``, ``_max``, ``_avg`` (gauges) over the
  trailing window for rows that ask (4th column or --aggregations), and the
  collector's own ``dcgm_collector_*`` metrics.
* DCGM_EXP_P2P_STATUS is not served yet.

Several targets (one collector, several hostengines): :class:`MultiExposition`
writes each family's HELP and TYPE once, then the series of every target, in
target order and GPU order within a target (each target's series carry its
own ``hostname``).  The collector's per-target metrics (up, sample age,
samples, ticks, errors, reconnects) are then labelled ``hostname`` with the
target's name; with a single target they stay unlabelled, as before.
"""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dcgm_collector._native import lib
from dcgm_collector.attribution import NO_COPIES, AttributeCopies, GpuAttribution
from dcgm_collector.counters import AGGREGATIONS, Counter
from dcgm_collector.dcgm import DcgmError, EntityType, GpuInfo
from dcgm_collector.errors import status_name
from dcgm_collector.ring import SAMPLE_OK, EventRows, RingBuffer
from dcgm_collector.sampler import Sampler, SamplerStats
from dcgm_collector.watches import CLOCK_EVENT_REASONS, XID_FIELD
from dcgm_collector.xid_errors import xid_message

__all__ = [
    "CLOCK_EVENTS",
    "HEALTH_SYSTEMS",
    "Exposition",
    "ExpositionOptions",
    "MultiExposition",
    "health_error_name",
    "library_version",
]

FE_GPU = int(EntityType.GPU)
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
CLOCK_EVENTS_COUNT = "DCGM_EXP_CLOCK_EVENTS_COUNT"
HEALTH_STATUS = "DCGM_EXP_GPU_HEALTH_STATUS"

# DCGM_CLOCKS_EVENT_REASON_* bits of field 112, with dcgm-exporter's clock_event names.
CLOCK_EVENTS: tuple[tuple[str, int], ...] = (
    ("gpu_idle", 0x1),
    ("clocks_setting", 0x2),
    ("power_cap", 0x4),
    ("hw_slowdown", 0x8),
    ("sync_boost", 0x10),
    ("sw_thermal", 0x20),
    ("hw_thermal", 0x40),
    ("hw_power_brake", 0x80),
    ("display_clocks", 0x100),
)

HEALTH_SYSTEMS: tuple[tuple[str, int], ...] = tuple(
    (name, int(getattr(lib, f"DCGM_HEALTH_WATCH_{name}")))
    for name in ("PCIE", "NVLINK", "PMU", "MCU", "MEM", "SM", "INFOROM", "THERMAL", "POWER", "DRIVER", "ALL")
)
HEALTH_VALUES = {"PASS": int(lib.DCGM_HEALTH_RESULT_PASS), "WARN": int(lib.DCGM_HEALTH_RESULT_WARN),
                 "FAIL": int(lib.DCGM_HEALTH_RESULT_FAIL)}

# dcgmError_t names (dcgm_errors.h), index = code; health_error_code shows them.
_HEALTH_ERROR_NAMES = (
    "OK UNKNOWN UNRECOGNIZED PCI_REPLAY_RATE VOLATILE_DBE_DETECTED VOLATILE_SBE_DETECTED "
    "PENDING_PAGE_RETIREMENTS RETIRED_PAGES_LIMIT RETIRED_PAGES_DBE_LIMIT CORRUPT_INFOROM "
    "CLOCK_THROTTLE_THERMAL POWER_UNREADABLE CLOCK_THROTTLE_POWER NVLINK_ERROR_THRESHOLD NVLINK_DOWN "
    "NVSWITCH_FATAL_ERROR NVSWITCH_NON_FATAL_ERROR NVSWITCH_DOWN NO_ACCESS_TO_FILE NVML_API "
    "DEVICE_COUNT_MISMATCH BAD_PARAMETER CANNOT_OPEN_LIB DENYLISTED_DRIVER NVML_LIB_BAD GRAPHICS_PROCESSES "
    "HOSTENGINE_CONN FIELD_QUERY BAD_CUDA_ENV PERSISTENCE_MODE LOW_BANDWIDTH HIGH_LATENCY CANNOT_GET_FIELD_TAG "
    "FIELD_VIOLATION FIELD_THRESHOLD FIELD_VIOLATION_DBL FIELD_THRESHOLD_DBL UNSUPPORTED_FIELD_TYPE "
    "FIELD_THRESHOLD_TS FIELD_THRESHOLD_TS_DBL THERMAL_VIOLATIONS THERMAL_VIOLATIONS_TS TEMP_VIOLATION "
    "THROTTLING_VIOLATION INTERNAL PCIE_GENERATION PCIE_WIDTH ABORTED TEST_DISABLED CANNOT_GET_STAT "
    "STRESS_LEVEL CUDA_API FAULTY_MEMORY CANNOT_SET_WATCHES CUDA_UNBOUND ECC_DISABLED MEMORY_ALLOC CUDA_DBE "
    "MEMORY_MISMATCH CUDA_DEVICE ECC_UNSUPPORTED ECC_PENDING MEMORY_BANDWIDTH TARGET_POWER API_FAIL "
    "API_FAIL_GPU CUDA_CONTEXT DCGM_API CONCURRENT_GPUS TOO_MANY_ERRORS NVLINK_CRC_ERROR_THRESHOLD "
    "NVLINK_ERROR_CRITICAL ENFORCED_POWER_LIMIT MEMORY_ALLOC_HOST GPU_OP_MODE NO_MEMORY_CLOCKS "
    "NO_GRAPHICS_CLOCKS HAD_TO_RESTORE_STATE L1TAG_UNSUPPORTED L1TAG_MISCOMPARE ROW_REMAP_FAILURE "
    "UNCONTAINED_ERROR EMPTY_GPU_LIST DBE_PENDING_PAGE_RETIREMENTS UNCORRECTABLE_ROW_REMAP PENDING_ROW_REMAP "
    "BROKEN_P2P_MEMORY_DEVICE BROKEN_P2P_WRITER_DEVICE NVSWITCH_NVLINK_DOWN EUD_BINARY_PERMISSIONS "
    "EUD_NON_ROOT_USER EUD_SPAWN_FAILURE EUD_TIMEOUT EUD_ZOMBIE EUD_NON_ZERO_EXIT_CODE EUD_TEST_FAILED "
    "FILE_CREATE_PERMISSIONS PAUSE_RESUME_FAILED PCIE_H_REPLAY_VIOLATION GPU_EXPECTED_NVLINKS_UP "
    "NVSWITCH_EXPECTED_NVLINKS_UP XID_ERROR SBE_VIOLATION DBE_VIOLATION PCIE_REPLAY_VIOLATION "
    "SBE_THRESHOLD_VIOLATION DBE_THRESHOLD_VIOLATION PCIE_REPLAY_THRESHOLD_VIOLATION CUDA_FM_NOT_INITIALIZED "
    "SXID_ERROR ERROR_SENTINEL"
).split()

MIN_STALE_AFTER_S = 5.0
STALE_AFTER_INTERVALS = 3


def health_error_name(code: int) -> str:
    """``DCGM_FR_*`` name of a dcgmError_t; "" for a code outside the table, as dcgm-exporter shows it."""
    return f"DCGM_FR_{_HEALTH_ERROR_NAMES[code]}" if 0 <= code < len(_HEALTH_ERROR_NAMES) else ""


@dataclass(frozen=True)
class ExpositionOptions:
    window_s: float = 15.0                       # --window: span of the _min/_max/_avg families
    aggregations: tuple[str, ...] = ()           # --aggregations: added to every numeric row
    hostname: str | None = field(default_factory=socket.gethostname)  # None or "": no hostname label (-n)
    replace_blanks_in_model_name: bool = False   # -rbmn
    xid_count_window_ms: int = 300_000           # -x
    clock_events_count_window_ms: int = 300_000  # --clock-events-count-window-size
    # samples older than this are stale (health, dcgm_collector_up, last values);
    # None: STALE_AFTER_INTERVALS collect intervals, at least MIN_STALE_AFTER_S
    stale_after_s: float | None = None
    # pod labels and HPC job copies (-k, --hpc-job-mapping-dir); None: neither
    attribution: GpuAttribution | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _positive(self.window_s, "window_s (--window, seconds)")
        if self.stale_after_s is not None:
            _positive(self.stale_after_s, "stale_after_s (seconds)")
        for value, what in ((self.xid_count_window_ms, "xid_count_window_ms (-x/--xid-count-window-size)"),
                            (self.clock_events_count_window_ms,
                             "clock_events_count_window_ms (--clock-events-count-window-size)")):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{what} must be a positive number of milliseconds, not {value!r}")
        if isinstance(self.aggregations, str):
            raise TypeError("aggregations must be a tuple of names, not a str")
        unknown = [a for a in self.aggregations if a not in AGGREGATIONS]
        if unknown:
            raise ValueError(f"unknown aggregation {unknown[0]!r} (--aggregations); expected {', '.join(AGGREGATIONS)}")
        if self.hostname is not None and not isinstance(self.hostname, str):
            raise TypeError(f"hostname must be a str or None, not {type(self.hostname).__name__}")


def _positive(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive number, not {value!r}")


# ---- text format pieces ------------------------------------------------------------

def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str, openmetrics: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if openmetrics else text


def _labels(pairs: Sequence[tuple[str, str]]) -> str:
    return ",".join(f'{key}="{escape_label_value(value)}"' for key, value in pairs)


def _types(prom_type: str, name: str, exporter: bool = False) -> tuple[str, str]:
    """(text format type, OpenMetrics type) of a counters-file row."""
    if prom_type == "counter":
        return "counter", "counter" if name.endswith("_total") else "unknown"
    if prom_type == "gauge" or exporter:
        return "gauge", "gauge"
    return "untyped", "unknown"


@dataclass(frozen=True)
class _Header:
    text: str
    openmetrics: str

    @classmethod
    def of(cls, name: str, help_text: str, text_type: str, om_type: str) -> _Header:
        om_name = name[: -len("_total")] if om_type == "counter" else name
        return cls(f"# HELP {name} {escape_help(help_text)}\n# TYPE {name} {text_type}\n",
                   f"# HELP {om_name} {escape_help(help_text, True)}\n# TYPE {om_name} {om_type}\n")

    def get(self, openmetrics: bool) -> str:
        return self.openmetrics if openmetrics else self.text


# ---- one GPU's labels ---------------------------------------------------------------

@dataclass(frozen=True)
class _GpuLabels:
    """One GPU's label text: one text per copy of its series (one copy unless HPC jobs share the GPU)."""

    gpu_id: int
    identity: tuple[tuple[str, str], ...]   # gpu, UUID, pci_bus_id, device, modelName, hostname
    labels: tuple[tuple[str, str], ...]     # label rows, sorted by key
    copies: AttributeCopies                 # attributes (pod, namespace, container, hpc_job) of each copy
    commons: tuple[str, ...]                # identity + labels + each copy's attributes, rendered

    @classmethod
    def of(cls, info: GpuInfo, options: ExpositionOptions, labels: Mapping[str, str],
           copies: AttributeCopies = NO_COPIES) -> _GpuLabels:
        model = info.name.replace(" ", "-") if options.replace_blanks_in_model_name else info.name
        identity = [("gpu", str(info.gpu_id)), ("UUID", info.uuid), ("pci_bus_id", info.pci_bus_id),
                    ("device", f"nvidia{info.gpu_id}"), ("modelName", model)]
        if options.hostname:
            identity.append(("hostname", options.hostname))
        rows = tuple(sorted(labels.items()))
        commons = tuple(_labels(identity + list(rows) + list(attributes)) for attributes in copies)
        return cls(info.gpu_id, tuple(identity), rows, copies, commons)

    def render(self, extra: Mapping[str, str] | None = None,
               attributes: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """Label text of each copy: exporter labels merged into the sorted label rows, then all attributes sorted."""
        if not extra and not attributes:
            return self.commons
        merged = dict(self.labels)
        merged.update(extra or {})
        head = list(self.identity) + sorted(merged.items())
        return tuple(_labels(head + sorted({**dict(copy), **(attributes or {})}.items())) for copy in self.copies)


# ---- one scrape -----------------------------------------------------------------------

class _RingView:
    """One ring's window statistics as Python lists, read once per scrape."""

    def __init__(self, ring: RingBuffer, now_us: int, window_us: int, lookback_us: int) -> None:
        self._ring, self._now_us, self._window_us = ring, now_us, window_us
        stats = ring.window(lookback_us, now_us)
        self.ok: list[bool] = (stats.last_status == SAMPLE_OK).tolist()
        self.last: list[float] = stats.last.tolist()
        self._window_stats = stats if lookback_us == window_us else None
        self._aggregates: tuple[list[int], dict[str, list[float]]] | None = None

    def aggregates(self) -> tuple[list[int], dict[str, list[float]]]:
        """(OK sample count, {min, max, avg}) per series over the window."""
        if self._aggregates is None:
            stats = self._window_stats or self._ring.window(self._window_us, self._now_us)
            self._aggregates = (stats.count.tolist(),
                                {"min": stats.min.tolist(), "max": stats.max.tolist(), "avg": stats.avg.tolist()})
        return self._aggregates


class _Scrape:
    def __init__(self, exposition: Exposition, now_us: int) -> None:
        self.exposition = exposition
        self.now_us = now_us
        self._views: dict[int, _RingView] = {}
        self._events: EventRows | None = None

    def view(self, ring: RingBuffer) -> _RingView:
        view = self._views.get(id(ring))
        if view is None:
            e = self.exposition
            view = self._views[id(ring)] = _RingView(ring, self.now_us, e.window_us, e.lookback_us)
        return view

    def events(self) -> EventRows:
        if self._events is None:
            self._events = self.exposition._event_rows()
        return self._events


# ---- families -------------------------------------------------------------------------

class _Family:
    """One metric family: a header per format and the sample lines of one scrape (none: left out)."""

    name: str
    header: _Header
    _prefixes: dict[tuple, tuple[str, ...]]   # label text of a labelled series, per key (GPU, label values)

    def lines(self, scrape: _Scrape) -> list[str]:
        raise NotImplementedError

    def _cached_prefixes(self, key: tuple, gpu: _GpuLabels, extra: Mapping[str, str] | None = None,
                         attributes: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """``name{labels} `` of each copy of one GPU's series, rendered once per key."""
        prefixes = self._prefixes.get(key)
        if prefixes is None:
            texts = gpu.render(extra, attributes)
            prefixes = self._prefixes[key] = tuple(f"{self.name}{{{text}}} " for text in texts)
        return prefixes


class _FieldFamily(_Family):
    """A numeric field row: the last value of each GPU (or one window aggregate of it)."""

    def __init__(self, name: str, header: _Header, ring: RingBuffer, columns: list[int],
                 prefixes: list[tuple[str, ...]], fmt: str, aggregate: str | None = None) -> None:
        self.name, self.header, self.ring = name, header, ring
        self.series = [(column, prefix) for column, copies in zip(columns, prefixes) for prefix in copies]
        self.fmt = fmt + "\n"
        self.aggregate = aggregate

    def lines(self, scrape: _Scrape) -> list[str]:
        view = scrape.view(self.ring)
        fmt = self.fmt
        if self.aggregate is None:
            ok, last = view.ok, view.last
            return [prefix + fmt % last[c] for c, prefix in self.series if ok[c]]
        count, values = view.aggregates()
        chosen = values[self.aggregate]
        return [prefix + fmt % chosen[c] for c, prefix in self.series if count[c]]


class _EventFamily(_Family):
    """An event field row (XID): the last event of each GPU, kept however old."""

    def __init__(self, name: str, header: _Header, field_id: int, gpus: Sequence[_GpuLabels]) -> None:
        self.name, self.header, self.field_id = name, header, field_id
        self.gpus = {g.gpu_id: g for g in gpus}
        self.order = [g.gpu_id for g in gpus]
        self._prefixes = {}

    def prefix(self, gpu: int, value: int) -> tuple[str, ...]:
        attributes = {"err_code": str(value), "err_msg": xid_message(value)} if self.field_id == XID_FIELD else {}
        return self._cached_prefixes((gpu, value), self.gpus[gpu], attributes=attributes)

    def lines(self, scrape: _Scrape) -> list[str]:
        events = scrape.events()
        if len(events.ts) == 0:
            return []
        mask = (events.field_id == self.field_id) & (events.entity_group == FE_GPU) & (events.ts <= scrape.now_us)
        found: dict[int, int] = {}
        entities, values = events.entity_id, events.value
        for i in np.flatnonzero(mask)[::-1].tolist():  # newest first: stop once every GPU has its last
            gpu = int(entities[i])
            if gpu in self.gpus and gpu not in found:
                found[gpu] = int(values[i])
                if len(found) == len(self.gpus):
                    break
        return [f"{prefix}{found[gpu]}\n" for gpu in self.order if gpu in found
                for prefix in self.prefix(gpu, found[gpu])]


class _XidCountFamily(_Family):
    """DCGM_EXP_XID_ERRORS_COUNT: XIDs per GPU and number over the -x window."""

    def __init__(self, name: str, header: _Header, window_ms: int, gpus: Sequence[_GpuLabels]) -> None:
        self.name, self.header, self.window_us = name, header, window_ms * 1000
        window = str(window_ms)
        self.gpus = list(gpus)
        self.empty = {g.gpu_id: [f"{name}{{{text}}} 0\n" for text in g.render({'window_size_in_ms': window})]
                      for g in gpus}
        self._window = window
        self._prefixes = {}

    def prefix(self, gpu: _GpuLabels, xid: int) -> tuple[str, ...]:
        return self._cached_prefixes((gpu.gpu_id, xid), gpu, {"window_size_in_ms": self._window, "xid": str(xid)})

    def lines(self, scrape: _Scrape) -> list[str]:
        events = scrape.events()
        now = scrape.now_us
        counts: dict[int, dict[int, int]] = {}
        if len(events.ts):
            mask = ((events.field_id == XID_FIELD) & (events.entity_group == FE_GPU)
                    & (events.ts >= now - self.window_us) & (events.ts <= now))
            for gpu, xid in zip(events.entity_id[mask].tolist(), events.value[mask].tolist()):
                per_gpu = counts.setdefault(gpu, {})
                per_gpu[xid] = per_gpu.get(xid, 0) + 1
        out = []
        for gpu in self.gpus:
            per_gpu = counts.get(gpu.gpu_id)
            if not per_gpu:
                out.extend(self.empty[gpu.gpu_id])
                continue
            out.extend(f"{prefix}{n}\n" for xid, n in sorted(per_gpu.items()) for prefix in self.prefix(gpu, xid))
        return out


class _ClockEventCounter:
    """Per GPU and clock event: samples of field 112 with that bit set over the window.

    The window is long (5 min by default) and field 112 shares its ring with
    every other value field, so rather than copy the whole window each
    scrape, only rows newer than those already read are copied, and running
    totals are kept: a scrape costs what arrived since the previous one.
    """

    def __init__(self, ring: RingBuffer, columns: list[int], window_ms: int) -> None:
        self.ring = ring
        self.columns = np.asarray(columns, dtype=np.intp)
        self.window_us = window_ms * 1000
        self.masks = np.array([bit for _, bit in CLOCK_EVENTS], dtype=np.int64)
        self._lock = threading.Lock()
        shape = (len(columns), len(CLOCK_EVENTS))
        self._ts = np.empty(0, dtype=np.int64)
        self._hits = np.empty((0, *shape), dtype=bool)   # [row, GPU, clock event]
        self._totals = np.zeros(shape, dtype=np.int64)
        self._until: int | None = None  # newest ts read so far

    def counts(self, now_us: int) -> list[list[int]]:
        """[GPU][clock event] sample counts over [now - window, now]."""
        since = now_us - self.window_us
        with self._lock:
            restart = self._until is None or now_us < self._until or self._until < since
            if restart:
                self._ts = self._ts[:0]
                self._hits = self._hits[:0]
                self._totals[:] = 0
            ts, hits = self._read(since if restart else self._until + 1, now_us)
            old = self._ts < since
            if old.any():
                self._totals -= self._hits[old].sum(axis=0)
                self._ts, self._hits = self._ts[~old], self._hits[~old]
            if len(ts):
                self._totals += hits.sum(axis=0)
                self._ts = np.concatenate((self._ts, ts))
                self._hits = np.concatenate((self._hits, hits))
                self._until = int(ts.max()) if restart else max(self._until, int(ts.max()))
            elif restart:
                self._until = since - 1
            return self._totals.tolist()

    def _read(self, since: int, now_us: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.ring.rows_since(since)
        # rows newer than now are left for a later scrape (a caller may render the past)
        new = (rows.ts <= now_us) & (rows.ts >= since)
        values = rows.values[new][:, self.columns]
        ok = rows.status[new][:, self.columns] == SAMPLE_OK
        bits = np.where(ok, values, 0).astype(np.int64)
        return rows.ts[new], (bits[:, :, None] & self.masks) != 0


class _ClockEventsFamily(_Family):
    def __init__(self, name: str, header: _Header, counter: _ClockEventCounter, window_ms: int,
                 gpus: Sequence[_GpuLabels]) -> None:
        self.name, self.header, self.counter = name, header, counter
        window = str(window_ms)
        self.prefixes = [[tuple(f"{name}{{{text}}} "
                                for text in g.render({'clock_event': event, 'window_size_in_ms': window}))
                          for event, _ in CLOCK_EVENTS] for g in gpus]

    def lines(self, scrape: _Scrape) -> list[str]:
        counts = self.counter.counts(scrape.now_us)
        return [f"{prefix}{n}\n" for prefixes, row in zip(self.prefixes, counts)
                for copies, n in zip(prefixes, row) for prefix in copies]


class _HealthFamily(_Family):
    """DCGM_EXP_GPU_HEALTH_STATUS: the worst recent result per GPU and health system.

    "Recent" is what the sampler holds (incidents of the last HEALTH_HOLD_S),
    since DCGM reports an incident in one check only.  ALL shows the incidents
    DCGM files under ALL, as dcgm-exporter does, not a summary of the others.
    """

    def __init__(self, name: str, header: _Header, sampler: Sampler, gpus: Sequence[_GpuLabels]) -> None:
        self.name, self.header, self.sampler, self.gpus = name, header, sampler, list(gpus)
        self._prefixes = {}

    def prefix(self, gpu: _GpuLabels, system: str, code_name: str) -> tuple[str, ...]:
        return self._cached_prefixes((gpu.gpu_id, system, code_name), gpu,
                                     {"health_watch": system, "health_error_code": code_name})

    def lines(self, scrape: _Scrape) -> list[str]:
        state = self.sampler.health
        if state is None:
            return []
        worst: dict[tuple[int, int], tuple[int, int]] = {}  # (gpu, system bit) -> (result, error code)
        for _, incident in state.recent:
            if incident.entity_group != FE_GPU:
                continue
            key = (incident.entity_id, incident.system)
            result = HEALTH_VALUES.get(incident.health, HEALTH_VALUES["FAIL"])
            if key not in worst or result >= worst[key][0]:
                worst[key] = (result, incident.code)
        out = []
        for gpu in self.gpus:
            for system, bit in HEALTH_SYSTEMS:
                result, code = worst.get((gpu.gpu_id, bit), (0, 0))
                out.extend(f"{prefix}{result}\n" for prefix in self.prefix(gpu, system, health_error_name(code)))
        return out


# ---- the exposition ---------------------------------------------------------------------

class Exposition:
    """Renders a started sampler's state as the Prometheus text format (or OpenMetrics).

    Safe to call from several server threads at once.  Built once per
    sampler (a reload makes a new one); label text is rebuilt only when the
    values of the label rows change.
    """

    def __init__(self, sampler: Sampler, gpus: Sequence[GpuInfo], options: ExpositionOptions | None = None,
                 *, version: str) -> None:
        if not isinstance(sampler, Sampler):
            raise TypeError(f"sampler must be a Sampler, not {type(sampler).__name__}")
        self.sampler = sampler
        self.options = options = options if options is not None else ExpositionOptions()
        self.version = version
        by_id = {g.gpu_id: g for g in gpus}
        self.gpus = tuple(by_id.get(i) or GpuInfo(i, "", "", "", "", "", "", "Unknown") for i in sampler.gpu_ids)
        self.window_us = round(options.window_s * 1e6)
        stale = options.stale_after_s
        if stale is None:
            stale = max(MIN_STALE_AFTER_S, STALE_AFTER_INTERVALS * sampler.interval_s)
        self.stale_after_s = float(stale)
        self.lookback_us = max(self.window_us, round(self.stale_after_s * 1e6))
        self._columns = self._index_columns()
        self._clock = self._clock_counter()
        self._lock = threading.Lock()
        self._labels_seen: object = None
        self._attribution_seen: object = None
        self._label_values: dict[tuple[int, int], dict[str, str]] | None = None
        self._families: tuple[_Family, ...] = ()
        self._events_cache: tuple[int, EventRows] | None = None
        self._last_scrape_s: float | None = None
        self._build_info = _labels([("version", version), ("dcgm_library", library_version(sampler.handle.library))])
        self._refresh_families()

    # -- public
    def render(self, openmetrics: bool = False, now_us: int | None = None) -> bytes:
        """The whole /metrics body; ``now_us`` (µs since the epoch) defaults to now."""
        now_us = time.time_ns() // 1000 if now_us is None else int(now_us)
        self._refresh_families()
        scrape = _Scrape(self, now_us)
        parts: list[str] = []
        for family in self._families:
            lines = family.lines(scrape)
            if lines:
                parts.append(family.header.get(openmetrics))
                parts.extend(lines)
        self._self_metrics(parts, openmetrics, now_us / 1e6)
        if openmetrics:
            parts.append("# EOF\n")
        return "".join(parts).encode()

    def health(self, now_s: float | None = None) -> tuple[bool, str]:
        """(ok, reason): ok only while DCGM answers and the newest sample is fresh."""
        return self._state(time.time() if now_s is None else now_s)

    def observe_scrape(self, seconds: float) -> None:
        """How long the previous scrape took (served as dcgm_collector_scrape_duration_seconds)."""
        self._last_scrape_s = float(seconds)

    # -- health / up
    def _state(self, now_s: float) -> tuple[bool, str]:
        sampler, stats = self.sampler, self.sampler.stats
        if sampler.handle.closed:
            return False, "the DCGM handle is closed"
        if stats.last_sample_time is None:
            return False, "no sample from DCGM yet"
        age = max(0.0, now_s - stats.last_sample_time)
        if age > self.stale_after_s:
            return False, f"no sample for {age:.1f} s (stale after {self.stale_after_s:g} s)"
        if not stats.last_tick_ok:
            errors = ", ".join(f"{status_name(code)} x{n}" for code, n in sorted(stats.errors_by_code.items()))
            return False, f"the last read from DCGM failed (errors so far: {errors or 'none counted'})"
        return True, "OK"

    # -- set-up
    def _index_columns(self) -> dict[int, tuple[RingBuffer, list[int]]]:
        """Field id -> (ring, column of each GPU in GPU order), for fields every GPU has in one ring."""
        where: dict[tuple[int, int], tuple[RingBuffer, int]] = {}
        for ring in self.sampler.rings.values():
            for column, key in enumerate(ring.series):
                if key.entity_group == FE_GPU:
                    where[(key.entity_id, key.field_id)] = (ring, column)
        columns: dict[int, tuple[RingBuffer, list[int]]] = {}
        for field_id in {key[1] for key in where}:
            cells = [where.get((g.gpu_id, field_id)) for g in self.gpus]
            rings = {id(c[0]) for c in cells if c is not None}
            if len(rings) == 1 and all(c is not None for c in cells):
                columns[field_id] = (cells[0][0], [c[1] for c in cells])  # type: ignore[index]
        return columns

    def _clock_counter(self) -> _ClockEventCounter | None:
        if not any(c.exporter == CLOCK_EVENTS_COUNT for c in self.sampler.counters):
            return None
        found = self._columns.get(CLOCK_EVENT_REASONS)
        if found is None:
            return None
        return _ClockEventCounter(found[0], found[1], self.options.clock_events_count_window_ms)

    def _refresh_families(self) -> None:
        """Rebuild the families' label text when the label rows' values or the attribution changed."""
        labels = self.sampler.labels
        attribution = self.options.attribution
        generation = attribution.generation if attribution is not None else None
        if labels is self._labels_seen and generation == self._attribution_seen:
            return
        values = {key: dict(names) for key, names in labels.items()}
        with self._lock:
            if values != self._label_values or generation != self._attribution_seen:
                gpus = [_GpuLabels.of(info, self.options, values.get((FE_GPU, info.gpu_id), {}),
                                      attribution.copies(info.gpu_id, info.uuid) if attribution is not None
                                      else NO_COPIES)
                        for info in self.gpus]
                self._families = self._build_families(gpus)
                self._label_values = values
            self._labels_seen = labels
            self._attribution_seen = generation

    def _build_families(self, gpus: list[_GpuLabels]) -> tuple[_Family, ...]:
        families: list[_Family] = []
        names: set[str] = set()

        def add(family: _Family | None) -> None:
            if family is not None and family.name not in names:
                names.add(family.name)
                families.append(family)

        for counter in self.sampler.counters:
            if counter.exporter is not None:
                add(self._exporter_family(counter, gpus))
            elif counter.field is not None and counter.prom_type != "label" and counter.field.is_numeric:
                for family in self._field_families(counter, gpus):
                    add(family)
        return tuple(families)

    def _field_families(self, counter: Counter, gpus: list[_GpuLabels]) -> list[_Family]:
        field = counter.field
        assert field is not None
        name = counter.name
        header = _Header.of(name, counter.help, *_types(counter.prom_type, name))
        if field.is_event:
            return [_EventFamily(name, header, field.id, gpus)]
        found = self._columns.get(field.id)
        if found is None:
            return []  # not sampled (a refused profiling watch, an entity level not sampled)
        ring, columns = found
        fmt = "%d" if field.type == "i" else "%f"
        families: list[_Family] = [
            _FieldFamily(name, header, ring, columns, [tuple(f"{name}{{{t}}} " for t in g.commons) for g in gpus],
                         fmt)]
        wanted = set(counter.aggregations) | set(self.options.aggregations)
        for aggregate in (a for a in AGGREGATIONS if a in wanted):
            window_name = f"{name}_{aggregate}"
            help_text = f"{counter.help} ({aggregate} over the last {self.options.window_s:g} s window)"
            families.append(_FieldFamily(
                window_name, _Header.of(window_name, help_text, "gauge", "gauge"), ring, columns,
                [tuple(f"{window_name}{{{t}}} " for t in g.commons) for g in gpus],
                "%f" if aggregate == "avg" else fmt, aggregate))
        return families

    def _exporter_family(self, counter: Counter, gpus: list[_GpuLabels]) -> _Family | None:
        name = counter.name
        header = _Header.of(name, counter.help, *_types(counter.prom_type, name, exporter=True))
        if counter.exporter == XID_COUNT:
            return _XidCountFamily(name, header, self.options.xid_count_window_ms, gpus)
        if counter.exporter == CLOCK_EVENTS_COUNT and self._clock is not None:
            return _ClockEventsFamily(name, header, self._clock, self.options.clock_events_count_window_ms, gpus)
        if counter.exporter == HEALTH_STATUS:
            return _HealthFamily(name, header, self.sampler, gpus)
        return None

    # -- per scrape
    def _event_rows(self) -> EventRows:
        """Every event the ring holds; copied again only when new ones arrived."""
        events = self.sampler.events
        written = events.rows_written
        cached = self._events_cache
        if cached is None or cached[0] != written:
            cached = self._events_cache = (written, events.since(0))
        return cached[1]

    def _self_metrics(self, parts: list[str], openmetrics: bool, now_s: float) -> None:
        up, _ = self._state(now_s)
        _self_metrics(parts, openmetrics, now_s, [_SelfRow("", self.sampler.stats, up)], self._last_scrape_s,
                      self._build_info)


# ---- several targets ----------------------------------------------------------------------

class TargetView(Protocol):
    """What MultiExposition reads of a target (dcgm_collector.target.Target)."""

    name: str
    remote: bool
    stats: SamplerStats
    reconnects: int

    @property
    def exposition(self) -> Exposition | None: ...

    def health(self, now_s: float | None = None) -> tuple[bool, str]: ...


class MultiExposition:
    """The /metrics body and /health of one collector and its targets (one or several).

    Reads each target's current exposition at every scrape, so a target
    that reconnects or changes its GPUs shows up without a rebuild here.  A
    target that never connected contributes its own metrics only.
    """

    def __init__(self, targets: Sequence[TargetView], *, version: str, library_version: str = "unknown",
                 labelled: bool | None = None) -> None:
        if not targets:
            raise ValueError("no targets")
        self.targets = tuple(targets)
        # with one target the collector's own series keep the names they always had
        self.labelled = len(self.targets) > 1 if labelled is None else labelled
        self._target_labels = [_labels([("hostname", t.name)]) if self.labelled else "" for t in self.targets]
        self._build_info = _labels([("version", version), ("dcgm_library", library_version)])
        self._last_scrape_s: float | None = None
        self._plan_lock = threading.Lock()
        self._plan: tuple[tuple, list[tuple[str, _Header, list[tuple[int, _Family]]]]] | None = None
        self._families_text: dict[bool, tuple[tuple, str]] = {}   # per format: (data version, text)

    def render(self, openmetrics: bool = False, now_us: int | None = None) -> bytes:
        reuse = now_us is None
        now_us = time.time_ns() // 1000 if now_us is None else int(now_us)
        expositions = [t.exposition for t in self.targets]
        for exposition in expositions:
            if exposition is not None:
                exposition._refresh_families()
        # The rings change once per tick: between ticks every scrape would render the same
        # DCGM families, so the text is kept per format until a target ticks again (the
        # windows are then as of the scrape that rendered them, at most one tick earlier).
        # Self-metrics (sample age, scrape duration) are always rendered afresh.
        version = tuple((id(e), id(e._families) if e is not None else None, t.stats.ticks)
                        for e, t in zip(expositions, self.targets))
        cached = self._families_text.get(openmetrics)
        if reuse and cached is not None and cached[0] == version:
            parts = [cached[1]]
        else:
            parts = [self._render_families(expositions, openmetrics, now_us)]
            if reuse:
                self._families_text[openmetrics] = (version, parts[0])
        now_s = now_us / 1e6
        rows = [_SelfRow(labels, t.stats, t.health(now_s)[0], t.reconnects if t.remote else None)
                for labels, t in zip(self._target_labels, self.targets)]
        _self_metrics(parts, openmetrics, now_s, rows, self._last_scrape_s, self._build_info)
        if openmetrics:
            parts.append("# EOF\n")
        return "".join(parts).encode()

    def _render_families(self, expositions: Sequence[Exposition | None], openmetrics: bool, now_us: int) -> str:
        scrapes = [_Scrape(e, now_us) if e is not None else None for e in expositions]
        parts: list[str] = []
        for _, header, members in self._family_plan(expositions):
            lines: list[str] = []
            for index, family in members:
                lines.extend(family.lines(scrapes[index]))  # type: ignore[arg-type]
            if lines:
                parts.append(header.get(openmetrics))
                parts.extend(lines)
        return "".join(parts)

    def health(self) -> tuple[bool, str]:
        """OK when every target is up and fresh; else one line per target that is not."""
        now_s = time.time()
        bad = [(t, reason) for t in self.targets for ok, reason in (t.health(now_s),) if not ok]
        if not bad:
            return True, "OK"
        if len(self.targets) == 1:
            return False, bad[0][1]
        return False, "\n".join(f"{t.name}: {reason}" for t, reason in bad)

    def observe_scrape(self, seconds: float) -> None:
        self._last_scrape_s = float(seconds)

    def _family_plan(self, expositions: Sequence[Exposition | None]) -> list[tuple[str, _Header, list]]:
        """Families by name in a merged order, each with (target index, family) of the targets that have it.

        Cached until a target's family tuple changes (new labels, a reconnect, a reload).
        """
        key = tuple(None if e is None else e._families for e in expositions)
        plan = self._plan
        if plan is not None and len(plan[0]) == len(key) and all(a is b for a, b in zip(plan[0], key)):
            return plan[1]
        order: list[str] = []
        entries: dict[str, tuple[str, _Header, list[tuple[int, _Family]]]] = {}
        for index, families in enumerate(key):
            at = 0   # a family new to the plan goes after the previous family of the same target
            for family in families or ():
                entry = entries.get(family.name)
                if entry is None:
                    entry = entries[family.name] = (family.name, family.header, [])
                    order.insert(at, family.name)
                at = order.index(family.name) + 1
                entry[2].append((index, family))
        merged = [entries[name] for name in order]
        with self._plan_lock:
            self._plan = (key, merged)
        return merged


# ---- the collector's own metrics ------------------------------------------------------------

@dataclass(frozen=True)
class _SelfRow:
    labels: str                    # the target's label pairs, rendered ("" when unlabelled)
    stats: SamplerStats
    up: bool
    reconnects: int | None = None  # None: not a remote target, no reconnects series


def _series(name: str, labels: str, value: object) -> str:
    return f"{name}{{{labels}}} {value}\n" if labels else f"{name} {value}\n"


def _self_metrics(parts: list[str], openmetrics: bool, now_s: float, rows: Sequence[_SelfRow],
                  scrape_s: float | None, build_info: str) -> None:
    def family(name: str, lines: list[str]) -> None:
        if lines:
            parts.append(_SELF_HEADERS[name].get(openmetrics))
            parts.extend(lines)

    family("dcgm_collector_up", [_series("dcgm_collector_up", r.labels, int(r.up)) for r in rows])
    family("dcgm_collector_last_sample_age_seconds", [
        _series("dcgm_collector_last_sample_age_seconds", r.labels,
                f"{max(0.0, now_s - r.stats.last_sample_time):f}")
        for r in rows if r.stats.last_sample_time is not None])
    family("dcgm_collector_samples_total",
           [_series("dcgm_collector_samples_total", r.labels, r.stats.samples) for r in rows])
    family("dcgm_collector_ticks_total",
           [_series("dcgm_collector_ticks_total", r.labels, r.stats.ticks) for r in rows])
    family("dcgm_collector_skipped_ticks_total",
           [_series("dcgm_collector_skipped_ticks_total", r.labels, r.stats.skipped_ticks) for r in rows])
    family("dcgm_collector_dcgm_errors_total", [
        _series("dcgm_collector_dcgm_errors_total", ",".join(filter(None, (
            r.labels, f'code="{code}",name="{status_name(code)}"'))), n)
        for r in rows for code, n in sorted(r.stats.errors_by_code.items())])
    family("dcgm_collector_reconnects_total", [
        _series("dcgm_collector_reconnects_total", r.labels, r.reconnects) for r in rows if r.reconnects is not None])
    if scrape_s is not None:
        family("dcgm_collector_scrape_duration_seconds",
               [f"dcgm_collector_scrape_duration_seconds {scrape_s:f}\n"])
    family("dcgm_collector_build_info", [f"dcgm_collector_build_info{{{build_info}}} 1\n"])


_UP_HELP = "1 when the last read from DCGM succeeded and the newest sample is fresh, else 0."
_AGE_HELP = "Seconds since the newest sample DCGM took (its own timestamp)."
_SAMPLES_HELP = "Samples stored in the rings, blank ones included."
_TICKS_HELP = "Sampler ticks run (one read of DCGM's sample cache each)."
_SKIPPED_HELP = "Sampler ticks skipped because an earlier tick overran them."
_ERRORS_HELP = "Failed DCGM calls, by DCGM status code."
_RECONNECTS_HELP = "Connections to the hostengine made again after one was lost."
_SCRAPE_HELP = "How long the previous scrape of this endpoint took to render and send, in seconds."
_BUILD_HELP = "Version of dcgm-collector and of the DCGM library it loaded; always 1."


def _self_headers() -> dict[str, _Header]:
    specs = (
        ("dcgm_collector_up", "gauge", _UP_HELP),
        ("dcgm_collector_last_sample_age_seconds", "gauge", _AGE_HELP),
        ("dcgm_collector_samples_total", "counter", _SAMPLES_HELP),
        ("dcgm_collector_ticks_total", "counter", _TICKS_HELP),
        ("dcgm_collector_skipped_ticks_total", "counter", _SKIPPED_HELP),
        ("dcgm_collector_dcgm_errors_total", "counter", _ERRORS_HELP),
        ("dcgm_collector_reconnects_total", "counter", _RECONNECTS_HELP),
        ("dcgm_collector_scrape_duration_seconds", "gauge", _SCRAPE_HELP),
        ("dcgm_collector_build_info", "gauge", _BUILD_HELP),
    )
    return {name: _Header.of(name, text, *_types(kind, name)) for name, kind, text in specs}


_SELF_HEADERS = _self_headers()


def library_version(library: object) -> str:
    """The version a loaded DCGM library reports, for dcgm_collector_build_info; "unknown" when it cannot say."""
    try:
        return library.version_info().get("version", "unknown")  # type: ignore[attr-defined]
    except (DcgmError, AttributeError):
        return "unknown"

