"""Which NvLinks, NvSwitches, CPUs and CPU cores a target samples, as dcgm-exporter enumerates them.

dcgm-exporter builds one collector per entity level the counters have fields
for, and enumerates that level's entities once, at start:

* NvLinks (``DCGM_FE_LINK``): every link of each GPU ``-d`` selects that
  DCGM reports Up (none with ``-d i:...``, which names MIG instances),
  labelled ``nvlink`` with its position among the GPU's ports counted
  from 1 (dcgm-exporter renumbers a GPU's links 1, 2, ...),
  then every Up port of each switch ``-s`` selects, labelled with DCGM's
  port index;
* NvSwitches (``DCGM_FE_SWITCH``): the switches ``-s`` selects;
* CPUs and CPU cores (``DCGM_FE_CPU``, ``DCGM_FE_CPU_CORE``): the CPUs of
  DCGM's CPU hierarchy ``-p`` selects, and their cores.

``-s`` and ``-p`` take ``-d``'s grammar: ``f`` (all), ``g``/``g:0,2-3``
(switches or CPUs), ``i``/``i:...`` (switch ports or CPU cores by id).  A
listed id the node lacks stops the start, as in dcgm-exporter.  One
difference: dcgm-exporter keeps a switch's ports (a CPU's cores) only when
the minor range names them, and the major range the switch, so ``g:1`` gives
switch 1 without its ports and ``i:...`` nothing at all (its newest releases
take ``g:1+i:0-3`` for both); here ``g:...`` keeps the switches or CPUs named
with all their ports or cores, and ``i:...`` the ports or cores named on
every switch or CPU.

A level the node has no entities of (no switches, no CPU that DCGM
monitors) has no series: each of its rows is then a warning naming its file
and line, so that no enabled row vanishes quietly (dcgm-exporter logs one
"Not collecting ... metrics" line).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from dcgm_collector.catalog.counters import Counter, CounterSet
from dcgm_collector.catalog.fields import watch_level
from dcgm_collector.dcgm import DcgmError, Handle
from dcgm_collector.ext._native import lib
from dcgm_collector.model import DeviceSelection, EntityType, LevelEntity

__all__ = ["LEVELS", "LINK_UP", "MEMBERS", "LevelSelectionError", "discover_levels", "levels_wanted", "link_entity_id"]

log = logging.getLogger("dcgm_collector")

# The levels sampled beside the GPUs, by the name the watch plan gives them.
LEVELS: dict[str, EntityType] = {"LINK": EntityType.LINK, "SWITCH": EntityType.SWITCH,
                                 "CPU": EntityType.CPU, "CPU_CORE": EntityType.CPU_CORE}
LINK_UP = 3   # DcgmNvLinkLinkStateUp
MODULE_NOT_LOADED: int = lib.DCGM_ST_MODULE_NOT_LOADED
# The entities a watch level's fields are watched on: a CPU core field also on the CPUs (DCGM
# answers the mean of their cores there), as dcgm-exporter's CPU collector watches it.
MEMBERS: dict[str, tuple[EntityType, ...]] = {"LINK": (EntityType.LINK,), "SWITCH": (EntityType.SWITCH,),
                                              "CPU": (EntityType.CPU,),
                                              "CPU_CORE": (EntityType.CPU, EntityType.CPU_CORE)}


ALL = DeviceSelection("f")


class LevelSelectionError(Exception):
    """-s or -p names a switch, port, CPU or core the node lacks; str() is one line."""


def link_entity_id(owner_level: EntityType, owner: int, port: int) -> int:
    """DCGM's entity id of a GPU's or switch's NvLink port (a dcgm_link_t: owner level in bits 0-7,
    port in bits 8-23, owner id in bits 24-31)."""
    return int(owner_level) | port << 8 | owner << 24


def _level_rows(counters: CounterSet) -> list[tuple[str, Counter]]:
    """(level, row) of each numeric field row of a level beyond the GPUs (the rows that become series there;
    label and event rows of these levels are warned about with the counters, collect.servable)."""
    rows = []
    for counter in counters.field_counters():
        field = counter.field
        if field is None or counter.is_label or field.is_event or field.type in ("s", "b"):
            continue
        level = watch_level(field)
        if level in LEVELS:
            rows.append((level, counter))
    return rows


def levels_wanted(counters: CounterSet) -> frozenset[str]:
    """The levels beyond the GPUs the counters have field rows for ('LINK', 'SWITCH', 'CPU', 'CPU_CORE')."""
    return frozenset(level for level, _ in _level_rows(counters))


def discover_levels(handle: Handle, counters: CounterSet, gpu_ids: Sequence[int],
                    switches: DeviceSelection = ALL, cpus: DeviceSelection = ALL) -> tuple[LevelEntity, ...]:
    """The link, switch, CPU and core entities to sample on this handle's node, in series order."""
    wanted = levels_wanted(counters)
    found: list[LevelEntity] = []
    why: dict[str, str] = {}    # why a level has no entity, when DCGM could not list them
    if "LINK" in wanted or "SWITCH" in wanted:
        found += _switch_and_link_entities(handle, wanted, gpu_ids, switches, why)
    if "CPU" in wanted or "CPU_CORE" in wanted:
        found += _cpu_entities(handle, wanted, cpus, why)
    present = {e.level for e in found}
    for level, row in _level_rows(counters):
        if not present & set(MEMBERS[level]):
            where = "is selected" if _selective(level, switches, cpus) else "on this node"
            reason = why.get(level) or f"no {_NAMES[level]} {where}"
            log.warning("%s:%d: not serving %s: %s", row.path, row.line, row.name, reason)
    return tuple(found)


_NAMES = {"LINK": "NvLink", "SWITCH": "NvSwitch", "CPU": "CPU", "CPU_CORE": "CPU or CPU core"}


def _selective(level: str, switches: DeviceSelection, cpus: DeviceSelection) -> bool:
    selection = switches if level in ("LINK", "SWITCH") else cpus
    return selection.ids is not None


def _switch_and_link_entities(handle: Handle, wanted: frozenset[str], gpu_ids: Sequence[int],
                              selection: DeviceSelection, why: dict[str, str]) -> list[LevelEntity]:
    try:
        gpu_ports, switch_ports = handle.nvlink_link_states()
        switch_ids = handle.entities(int(EntityType.SWITCH))
    except DcgmError as error:
        why["LINK"] = why["SWITCH"] = f"DCGM cannot list the NvLinks and NvSwitches ({error})"
        return []
    switch_ids = _selected("-s", selection, "switch", switch_ids, "g")
    found: list[LevelEntity] = []
    if "LINK" in wanted:
        for gpu in gpu_ids:
            for position, state in enumerate(gpu_ports.get(gpu, ()), start=1):
                if state == LINK_UP:
                    found.append(LevelEntity(EntityType.LINK, link_entity_id(EntityType.GPU, gpu, position - 1),
                                             position, EntityType.GPU, gpu))
        up_ports = {switch: [port for port, state in enumerate(switch_ports.get(switch, ())) if state == LINK_UP]
                    for switch in switch_ids}
        ports = _selected("-s", selection, "NvSwitch port", sorted({p for ps in up_ports.values() for p in ps}), "i")
        for switch in switch_ids:
            found += [LevelEntity(EntityType.LINK, link_entity_id(EntityType.SWITCH, switch, port), port,
                                  EntityType.SWITCH, switch) for port in up_ports[switch] if port in ports]
    if "SWITCH" in wanted:
        found += [LevelEntity(EntityType.SWITCH, switch, switch) for switch in switch_ids]
    return found


def _cpu_entities(handle: Handle, wanted: frozenset[str], selection: DeviceSelection,
                  why: dict[str, str]) -> list[LevelEntity]:
    try:
        hierarchy = handle.cpu_hierarchy()
    except DcgmError as error:
        if error.code != MODULE_NOT_LOADED:   # DCGM's answer when it monitors no CPU
            why["CPU"] = why["CPU_CORE"] = f"DCGM cannot list the CPUs ({error})"
        return []
    cpu_ids = _selected("-p", selection, "CPU", sorted(hierarchy), "g")
    cores = _selected("-p", selection, "CPU core", sorted(c for cpu in cpu_ids for c in hierarchy[cpu]), "i")
    # the CPUs serve their own fields and, as the mean of their cores, the cores' fields
    found = [LevelEntity(EntityType.CPU, cpu, cpu) for cpu in cpu_ids]
    if "CPU_CORE" in wanted:
        found += [LevelEntity(EntityType.CPU_CORE, core, core, EntityType.CPU, cpu)
                  for cpu in cpu_ids for core in hierarchy[cpu] if core in cores]
    return found


def _selected(flag: str, selection: DeviceSelection, what: str, present: Iterable[int], kind: str) -> list[int]:
    """The ids of ``present`` a selection of ``kind`` ('g' major, 'i' minor) keeps; every id when it is
    flex, of the other kind, or lists none."""
    present = list(present)
    if selection.kind != kind or selection.ids is None:
        return present
    missing = [i for i in selection.ids if i not in present]
    if missing:
        raise LevelSelectionError(f"{flag} {selection}: no {what} {', '.join(map(str, missing))} on this node "
                                  f"(it has {', '.join(map(str, present)) or 'none'})")
    return [i for i in present if i in selection.ids]
