"""Which rows of a counters file the collector cannot serve, and why, before anything is sampled.

A row the file enables but the collector cannot turn into series must never
vanish quietly: the collector warns once per such row at start (and on each
reload), naming ``file:line``, and ``check-counters`` shows the same lines.
This module is the one place that knows which rows those are, so the start,
the reload and ``check-counters`` cannot disagree:

* a field row (value, profiling, event or label) whose field DCGM keeps at
  an entity level the sampler does not sample (see :data:`SAMPLED_LEVELS`),
  or an event row of a level whose events are not served
  (:data:`NO_EVENTS_LEVELS`: NvLink, NvSwitch, CPU, CPU core);
* a DCGM_EXP_* row the exposition has no family for
  (:data:`SERVED_EXPORTER_COUNTERS`).

:func:`load_warnings` gives every such line the file alone can tell, with
the rows typed counter whose DCGM value can go down (served as gauges).

What only the node can tell (profiling metrics the GPUs lack, fields DCGM
answers NOT_SUPPORTED for on every GPU) is warned about where it is found.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dcgm_collector.catalog.counters import EXPORTER_COUNTERS, Counter, CounterSet
from dcgm_collector.catalog.fields import watch_level

__all__ = ["NO_EVENTS_LEVELS", "SAMPLED_LEVELS", "SERVED_EXPORTER_COUNTERS", "UnservableRow", "load_warnings",
           "unservable_rows"]

# The entity levels the sampler watches fields on: GPUs, node-wide fields read through them,
# NvLinks, NvSwitches, CPUs and CPU cores.
SAMPLED_LEVELS = frozenset({"GPU", "NONE", "LINK", "SWITCH", "CPU", "CPU_CORE"})
# Levels whose values and labels are served, but not their events yet.
NO_EVENTS_LEVELS = frozenset({"LINK", "SWITCH", "CPU", "CPU_CORE"})
# The DCGM_EXP_* counters the exposition serves.
SERVED_EXPORTER_COUNTERS = frozenset(EXPORTER_COUNTERS)


@dataclass(frozen=True)
class UnservableRow:
    counter: Counter
    why: str

    @property
    def warning(self) -> str:
        """``path:line: not serving NAME: why``: the one line the user sees."""
        return f"{self.counter.path}:{self.counter.line}: not serving {self.counter.name}: {self.why}"


def load_warnings(counters: CounterSet) -> tuple[str, ...]:
    """Every ``path:line: ...`` warning about the file that needs no node: what the collector logs at start and on
    each reload, and what ``check-counters`` prints, in that order: repeated rows, rows not served, rows typed
    counter that are served as gauges."""
    return (*counters.warnings, *(row.warning for row in unservable_rows(counters)),
            *(_served_as_gauge(counter) for counter in counters.counters_served_as_gauges()))


def _served_as_gauge(counter: Counter) -> str:
    why = counter.field.not_a_running_total if counter.field is not None else None
    return (f"{counter.path}:{counter.line}: {counter.name} is typed counter, but DCGM's value is {why} and can go "
            "down: served as a gauge, so that rate() and increase() do not read its dips as resets")


def unservable_rows(counters: CounterSet) -> tuple[UnservableRow, ...]:
    """The rows of ``counters`` that cannot become series on any node, in file order."""
    return tuple(_unservable(counters))


def _unservable(counters: CounterSet) -> Iterator[UnservableRow]:
    for counter in counters:
        if counter.exporter is not None:
            if counter.exporter not in SERVED_EXPORTER_COUNTERS:
                yield UnservableRow(counter, f"{counter.exporter} is not served yet")
            continue
        field = counter.field
        if field is None:
            continue
        level = watch_level(field)
        if level in NO_EVENTS_LEVELS and field.is_event:
            yield UnservableRow(counter, f"{field.name} (field {field.id}) is an event kept per {_level_name(level)}, "
                                         "where events are not served yet (the row is left out)")
            continue
        if level not in SAMPLED_LEVELS:
            kind = "label row" if counter.is_label else "row"
            yield UnservableRow(counter, f"DCGM keeps {field.name} (field {field.id}) per "
                                         f"{_level_name(field.entity_level)}, and {_level_name(level)} entities "
                                         f"are not sampled yet (the {kind} is left out)")


_LEVEL_NAMES = {"LINK": "NvLink", "SWITCH": "NvSwitch", "CPU": "CPU", "CPU_CORE": "CPU core",
                "CONNECTX": "ConnectX", "VGPU": "vGPU", "GPU_I": "GPU instance", "GPU_CI": "compute instance"}


def _level_name(level: str) -> str:
    return _LEVEL_NAMES.get(level, level)
