"""Which DCGM field groups to create and how to watch them, from a counters file.

DCGM puts constraints on how fields are grouped, and getting them wrong costs
data, so the plan is made once, up front, and tested on its own:

- a field group holds at most 127 ids, so long lists are split;
- a profiling (DCP) field whose watch fails makes DCGM remove every watch of
  that same request (api-facts §4.3), so profiling fields get groups of their
  own and a DCP failure cannot take the ordinary fields down with it;
- event fields (an XID, ...) get a sample only when something happens, so they
  are drained into the event ring rather than into row-shaped value rings;
- string fields (label rows) carry identity (UUID, name, driver version), not
  time series; they are read with latest values now and then;
- fields are grouped by the entity level they are watched on: GPU fields
  (MIG instance and vGPU fields included) on GPUs; global fields (driver
  version, GPU count, ...), which DCGM keeps once for the node, in groups of
  their own (level 'NONE'), so readers know a value is the node's, not a GPU's.

Timing: DCGM samples every watch interval inside the hostengine and the
sampler drains its cache every collect interval, so the hostengine only has to
keep a few collect intervals of samples (enough to ride out slow or skipped
ticks); the retention lives in the rings, sized here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.catalog.fields import CLOCK_EVENT_REASONS, XID_FIELD, Field, field_table, watch_level
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.dcgm import MAX_FIELDS_PER_FIELD_GROUP

__all__ = [
    "EVENT_CAPACITY",
    "KINDS",
    "MIN_KEEP_AGE_S",
    "WatchGroup",
    "WatchPlan",
    "plan_watches",
    "watch_level",
]

KINDS = ("values", "profiling", "events", "labels")

# DCGM's own cache only has to bridge the gap between two drains; a few
# collect intervals survive a stalled or skipped tick without losing samples,
# and the floor covers short intervals on a busy host.
MIN_KEEP_AGE_S = 10.0
KEEP_AGE_INTERVALS = 4

# Rows a ring holds beyond retention / watch interval: a DCGM pass can be late,
# and a field another client watches faster is sampled in passes of its own, so
# a little more than one row per watch interval can arrive.
ROW_SLACK_FRACTION = 0.05
ROW_SLACK_ROWS = 2

# Events are rare (XIDs) but come in bursts; a fixed ring of this many entries
# (~26 bytes each) keeps any burst a node plausibly produces.
EVENT_CAPACITY = 8192

# What a DCGM_EXP_* row needs watched: the exporter derives these counters
# from DCGM fields.  Health status is read through the health API instead,
# and P2P status from link status, neither from a watch.
_EXPORTER_NEEDS: dict[str, tuple[int, ...]] = {
    "DCGM_EXP_XID_ERRORS_COUNT": (XID_FIELD,),
    "DCGM_EXP_CLOCK_EVENTS_COUNT": (CLOCK_EVENT_REASONS,),
}


@dataclass(frozen=True)
class WatchGroup:
    """One DCGM field group: what it holds and how the sampler reads it."""

    kind: str                    # 'values' | 'profiling' | 'events' | 'labels'
    entity_level: str            # the level it is watched on: 'GPU', 'NONE' (node-wide), 'SWITCH', ...
    field_ids: tuple[int, ...]   # at most 127, in counters-file order


@dataclass(frozen=True)
class WatchPlan:
    """The field groups to watch, and the watch parameters, all derived from the sampling options."""

    groups: tuple[WatchGroup, ...]
    options: SamplingOptions
    event_capacity: int = EVENT_CAPACITY

    def of_kind(self, kind: str) -> tuple[WatchGroup, ...]:
        return tuple(g for g in self.groups if g.kind == kind)

    @property
    def field_ids(self) -> tuple[int, ...]:
        """Every field id the plan watches, each once."""
        return tuple(dict.fromkeys(f for g in self.groups for f in g.field_ids))

    @property
    def update_freq_us(self) -> int:
        """The watch interval."""
        return self.options.update_freq_us

    @property
    def collect_interval_us(self) -> int:
        return self.options.collect_interval_us

    @property
    def retention_s(self) -> float:
        return float(self.options.retention_s)

    @property
    def max_keep_age_s(self) -> float:
        """How long the hostengine keeps samples: a few collect intervals, at least MIN_KEEP_AGE_S."""
        return max(MIN_KEEP_AGE_S, KEEP_AGE_INTERVALS * self.collect_interval_us / 1e6)

    @property
    def ring_capacity(self) -> int:
        """Rows per value ring: the retention at the watch interval, plus slack."""
        return ring_capacity(self.retention_s, self.update_freq_us)


def plan_watches(counters: CounterSet, options: SamplingOptions | None = None,
                 extra_fields: Iterable[int] = ()) -> WatchPlan:
    """Field groups and watch parameters for the fields ``counters`` needs, and ``extra_fields`` (ids).

    Extra fields are watched and kept in the rings for the readers that read them
    (the early warnings); no counters row serves them.

    The watch interval defaults to the collect interval; a faster one (e.g.
    100 ms watch, 1 s collect) lets the rings see what happens between two
    collects (SamplingOptions refuses a slower one).
    """
    return WatchPlan(groups=_groups(counters, tuple(extra_fields)),
                     options=options if options is not None else SamplingOptions())


def ring_capacity(retention_s: float, update_freq_us: int) -> int:
    """Rows that hold ``retention_s`` of samples taken every ``update_freq_us``."""
    rows = math.ceil(retention_s * 1e6 / update_freq_us)
    return rows + math.ceil(rows * ROW_SLACK_FRACTION) + ROW_SLACK_ROWS


def _groups(counters: CounterSet, extra_fields: tuple[int, ...] = ()) -> tuple[WatchGroup, ...]:
    by_kind: dict[str, list[Field]] = {kind: [] for kind in KINDS}
    for counter in counters.label_counters():
        by_kind["labels"].append(counter.field)
    for counter in counters.field_counters():
        by_kind[_kind(counter.field)].append(counter.field)
    table = field_table()
    for field_id in extra_fields:
        field = table.by_id(field_id)
        if field is None:
            raise RuntimeError(f"field {field_id} (a reader needs it) is not in the field table")
        if field.is_numeric and not field.is_profiling and not field.is_event:
            by_kind["values"].append(field)
    for counter in counters.exporter_counters():
        for field_id in _EXPORTER_NEEDS.get(counter.exporter or counter.name, ()):
            field = table.by_id(field_id)
            if field is None:  # the field table is generated with these ids in it
                raise RuntimeError(f"field {field_id} ({counter.name} needs it) is not in the field table")
            by_kind[_kind(field)].append(field)
    groups: list[WatchGroup] = []
    for kind in KINDS:
        groups.extend(_split(kind, by_kind[kind]))
    return tuple(groups)


def _kind(field: Field) -> str:
    """Where a non-label field is read from."""
    if field.is_event:
        return "events"
    if field.type in ("s", "b"):  # no number to put in a ring; the parser normally refuses these as gauges
        return "labels"
    if field.is_profiling:
        return "profiling"
    return "values"


def _split(kind: str, fields: Iterable[Field]) -> list[WatchGroup]:
    by_level: dict[str, list[int]] = {}
    for field in fields:
        ids = by_level.setdefault(watch_level(field), [])
        if field.id not in ids:
            ids.append(field.id)
    step = MAX_FIELDS_PER_FIELD_GROUP
    return [
        WatchGroup(kind, level, tuple(ids[i:i + step]))
        for level, ids in by_level.items()
        for i in range(0, len(ids), step)
    ]
