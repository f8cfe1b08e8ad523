"""The sampler's periodic side reads: what its tick reads besides the sample cache.

Labels (UUID, names, driver version) and DCGM's NvLink P2P status matrix are
read at start, then every LABEL_REFRESH_S: they change only when the topology
does.  When the counters ask for DCGM_EXP_GPU_HEALTH_STATUS, DCGM's health
checks run (on a group of their own that keeps lost GPUs, so their failure
stays visible) every HEALTH_CHECK_S.  Once every HOUSEKEEPING_EVERY_S the
engine's per-field costs are read and, when more cells came back blank than
usual, each GPU's status is asked for, so that a GPU DCGM lost is taken out of
the sampler's group (its ring series simply get no new rows).

Each is a function of the :class:`~dcgm_collector.collect.sampler.Sampler`
it reads for, called on that sampler's thread (or by its start); the sampler
decides when.  Failures are counted on the sampler, as its own are.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.catalog.fields import field_table
from dcgm_collector.dcgm import DcgmError
from dcgm_collector.ext._native import lib
from dcgm_collector.series.stats import HealthState

if TYPE_CHECKING:   # for the annotations only: the sampler imports this module
    from dcgm_collector.collect.sampler import Sampler

# logged as the sampler's own lines, under the logger they have always had
log = logging.getLogger("dcgm_collector.collect.sampler")

# Entity statuses of a GPU that can no longer be read.
GONE_STATUSES = frozenset({"Lost", "Inaccessible", "Detached", "Disabled"})
# Labels (UUID, names, driver version) hardly ever change; reading them every
# tick would only make Python objects for nothing.
LABEL_REFRESH_S = 10.0
# DCGM reports a counter's incident only while the counter moved within the minute
# before a check (an XID, from then on); incidents are kept this long so that a
# scrape some seconds later still sees them.
HEALTH_CHECK_S = 5.0
HEALTH_HOLD_S = 60.0
HEALTH_COUNTER = "DCGM_EXP_GPU_HEALTH_STATUS"
P2P_COUNTER = "DCGM_EXP_P2P_STATUS"
# Once a second the sampler reads the engine's per-field costs (enough for a 15 s scrape) and,
# when more cells came back blank than usual, asks DCGM for the status of each GPU (one call
# per GPU, which on a remote hostengine is one round trip each: not worth making every second).
HOUSEKEEPING_EVERY_S = 1.0


# -- labels
def label_names(counters: CounterSet) -> dict[int, tuple[str, ...]]:
    """Field id -> the names of the label rows that read it."""
    names: dict[int, list[str]] = {}
    for counter in counters.label_counters():
        names.setdefault(counter.field.id, []).append(counter.name)
    for counter in counters.field_counters():
        if counter.field.type in ("s", "b") and not counter.field.is_event:
            names.setdefault(counter.field.id, []).append(counter.name)
    return {field_id: tuple(dict.fromkeys(n)) for field_id, n in names.items()}


def refresh_labels(sampler: Sampler) -> bool:
    assert sampler.group is not None
    try:
        values = sampler.handle.latest_values(sampler.group, sampler._label_groups) if sampler._label_groups else []
        for group, fg in sampler._level_label_groups:
            values += sampler.handle.latest_values(group, [fg])
    except DcgmError as error:
        sampler._count(error.code)
        return False
    labels = {key: dict(names) for key, names in sampler.labels.items()}
    for v in values:
        if v.value is None or isinstance(v.value, bytes):
            continue  # keep the last good value: a lost GPU still has its UUID
        entity = labels.setdefault((v.entity_group, v.entity_id), {})
        for name in sampler._label_names.get(v.field_id, ()):
            entity[name] = str(v.value)
    sampler.labels = MappingProxyType({key: MappingProxyType(names) for key, names in labels.items()})
    return True


# -- P2P status
def start_p2p(sampler: Sampler) -> None:
    """The first read of the P2P matrix; a row that will show nothing is said so, with its file and line."""
    why = None
    try:
        _read_p2p(sampler)
        if not sampler.p2p:
            why = "DCGM answers NOT_SUPPORTED for the NvLink P2P status"
    except DcgmError as error:
        sampler._count(error.code)
        why = f"reading DCGM's NvLink P2P status failed ({error}); retried every {LABEL_REFRESH_S:g} s"
    if why is not None:
        for row in (c for c in sampler.counters.exporter_counters() if c.exporter == P2P_COUNTER):
            log.warning("%s:%d: not serving %s: %s", row.path, row.line, row.name, why)


def refresh_p2p(sampler: Sampler) -> bool:
    try:
        _read_p2p(sampler)
    except DcgmError as error:
        sampler._count(error.code)
        return False   # the last matrix read stays
    return True


def _read_p2p(sampler: Sampler) -> None:
    matrix = sampler.handle.nvlink_p2p_status()
    sampler.p2p = MappingProxyType({gpu: MappingProxyType(peers) for gpu, peers in matrix.items()})


# -- health
def start_health(sampler: Sampler, gpus: Sequence[int]) -> None:
    try:
        sampler._health_group = sampler.handle.create_group(f"dcgm-collector-health-{id(sampler):x}", gpus)
        sampler.handle.health_set(sampler._health_group, lib.DCGM_HEALTH_WATCH_ALL)
    except DcgmError as error:
        sampler._count(error.code)
        for row in (c for c in sampler.counters.exporter_counters() if c.exporter == HEALTH_COUNTER):
            log.warning("%s:%d: not serving %s: DCGM's health checks are not available: %s", row.path, row.line,
                        row.name, error)
        if sampler._health_group is not None:
            quietly(sampler._health_group.destroy)
            sampler._health_group = None
        return
    check_health(sampler)  # known from the start, not a HEALTH_CHECK_S later


def check_health(sampler: Sampler) -> bool:
    assert sampler._health_group is not None
    sampler._next_health = time.monotonic() + sampler.health_interval_s
    try:
        report = sampler.handle.health_check(sampler._health_group)
    except DcgmError as error:
        sampler._count(error.code)
        return False
    now = time.time()
    held = () if sampler.health is None else tuple(r for r in sampler.health.recent if r[0] > now - HEALTH_HOLD_S)
    sampler.health = HealthState(report, now, held + tuple((now, i) for i in report.incidents))
    return True


# -- field costs and lost GPUs (the housekeeping)
def read_field_costs(sampler: Sampler) -> None:
    costs = sampler.handle.field_costs()
    if not costs:
        return
    sampler.stats.field_costs = tuple((_field_name(sampler, c.field_id), c) for c in costs)


def _field_name(sampler: Sampler, field_id: int) -> str:
    """The name a field has in the counters, else DCGM's; worked out once per field, not once a second."""
    name = sampler._field_names.get(field_id)
    if name is None:
        field = field_table().by_id(field_id)
        name = sampler._field_names[field_id] = field.name if field is not None else f"field_{field_id}"
    return name


def blanker_than_usual(sampler: Sampler) -> bool:
    """Whether the cells drained since the last call had more blanks than the best interval had."""
    cells, blanks = sampler._cells, sampler._blank_cells
    sampler._cells = sampler._blank_cells = 0
    if not cells:
        return False
    share = blanks / cells
    usual = sampler._usual_blank_share
    sampler._usual_blank_share = share if usual < 0 else min(usual, share)
    return share > usual   # the first interval is always checked


def remove_lost_gpus(sampler: Sampler) -> bool:
    """Take the GPUs DCGM reports as gone out of the sampler's group; True when there were any."""
    lost = []
    for gpu in sorted(sampler._live_gpus, key=sampler.gpu_ids.index):
        try:
            status = sampler.handle.gpu_status(gpu)
        except DcgmError as error:
            sampler._count(error.code)
            return False
        if status in GONE_STATUSES:
            lost.append(gpu)
    for gpu in lost:
        _remove_gpu(sampler, gpu)
    return bool(lost)


def _remove_gpu(sampler: Sampler, gpu: int) -> None:
    assert sampler.group is not None
    try:
        sampler.handle.remove_from_group(sampler.group, [gpu])
    except DcgmError as error:
        sampler._count(error.code)
        return
    sampler._live_gpus.discard(gpu)
    sampler.stats.lost_gpus = (*sampler.stats.lost_gpus, gpu)
    log.warning("GPU %d is lost: its series stop, the other GPUs carry on", gpu)


def quietly(action) -> None:
    """Run a clean-up call whose failure changes nothing (the handle's close removes what it leaves)."""
    try:
        action()
    except DcgmError as error:
        log.debug("clean-up: %s", error)
