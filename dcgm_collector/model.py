"""Neutral types shared by every stage: what a GPU is, entity levels, health results, device selections.

Nothing here touches the DCGM binding, so the exposition, the dashboard and
the tests can use these types without loading the C extension.  The numbers
are DCGM's ABI values (dcgm_structs.h); tests/unit/test_model.py checks each
against the constants compiled into the extension.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HEALTH_RESULTS",
    "HEALTH_SYSTEMS",
    "HEALTH_WATCH_ALL",
    "DeviceSelection",
    "EntityType",
    "GpuInfo",
    "HealthIncident",
    "HealthReport",
    "LevelEntity",
    "MigInstance",
    "PYARROW_INSTALL_HINT",
    "RECORDING_COLUMNS",
    "RECORDING_FORMAT_VERSION",
    "RECORDING_SIDECAR_SUFFIX",
    "RECORDING_STATUSES",
    "entity_group_name",
    "id_ranges",
    "recording_schema",
]


class EntityType(enum.IntEnum):
    """DCGM entity groups (``DCGM_FE_*``)."""

    NONE = 0
    GPU = 1
    VGPU = 2
    SWITCH = 3
    GPU_I = 4
    GPU_CI = 5
    LINK = 6
    CPU = 7
    CPU_CORE = 8
    CONNECTX = 9


def entity_group_name(group: int) -> str:
    """The EntityType name of a DCGM entity group ("GPU", "LINK", ...); the number for one DCGM may add."""
    try:
        return EntityType(group).name
    except ValueError:
        return str(group)


# DCGM_HEALTH_WATCH_* bits, in the order dcgm-exporter lists them, with ALL last.
HEALTH_SYSTEMS: tuple[tuple[str, int], ...] = (
    ("PCIE", 0x1),
    ("NVLINK", 0x2),
    ("PMU", 0x4),
    ("MCU", 0x8),
    ("MEM", 0x10),
    ("SM", 0x20),
    ("INFOROM", 0x40),
    ("THERMAL", 0x80),
    ("POWER", 0x100),
    ("DRIVER", 0x200),
    ("ALL", 0xFFFFFFFF),
)
HEALTH_WATCH_ALL = 0xFFFFFFFF

# DCGM_HEALTH_RESULT_* values by name.
HEALTH_RESULTS: dict[str, int] = {"PASS": 0, "WARN": 10, "FAIL": 20}


@dataclass(frozen=True)
class GpuInfo:
    """Identity of one GPU, as dcgm-exporter labels it."""

    gpu_id: int
    name: str
    uuid: str
    pci_bus_id: str
    serial: str
    driver_version: str
    brand: str
    status: str          # DcgmEntityStatus name: "Ok", "Lost", "Fake", ...


@dataclass(frozen=True)
class MigInstance:
    """One MIG GPU instance sampled on its own, as dcgm-exporter labels it.

    ``entity_id`` is DCGM's GPU_I entity id (what ``-d i:N`` names),
    ``instance_id`` the NVML GPU-instance id (the ``GPU_I_ID`` label), and
    ``profile`` the instance's profile name (``GPU_I_PROFILE``, e.g. ``3g.40gb``),
    ``uuid`` the MIG device's own UUID (``MIG-...``, how the device plugin names
    it to pods; "" when DCGM does not say).
    """

    entity_id: int
    gpu_id: int          # the GPU that holds it: its gpu, UUID, pci_bus_id, device and modelName labels
    instance_id: int
    profile: str
    uuid: str = ""


@dataclass(frozen=True)
class FieldCost:
    """What the engine spent on one field (dcgm-collector's engine only; real DCGM does not say).

    ``samples``/``late_samples``: samples the engine's passes took, and those taken more than
    half a watch interval after they were due.  ``reads``/``read_seconds``: reads of the
    hardware its value source made for the field and the wall time they took; ``period_s`` the
    source's own cadence for a costly field (0: read at each sample), ``late_reads`` such reads
    made more than one cadence late.  For a field served as an estimate between true reads
    (energy): ``corrections`` made so far and the latest and largest of them (estimate minus
    true value, in the field's unit).
    """

    field_id: int
    samples: int
    late_samples: int
    reads: int
    read_seconds: float
    late_reads: int
    period_s: float
    corrections: int = 0
    last_correction: float = 0.0
    max_abs_correction: float = 0.0


@dataclass(frozen=True)
class HealthIncident:
    system: int          # DCGM_HEALTH_WATCH_* bit
    health: str          # "WARN" or "FAIL"
    message: str
    code: int            # dcgmError_t
    entity_group: int
    entity_id: int


@dataclass(frozen=True)
class HealthReport:
    overall: str         # "PASS", "WARN" or "FAIL"
    incidents: tuple[HealthIncident, ...]


@dataclass(frozen=True)
class LevelEntity:
    """One sampled entity beyond the GPUs: an NvLink port, an NvSwitch, a CPU or a CPU core.

    ``entity_id`` is DCGM's id of the entity (a link's packed dcgm_link_t); ``number`` the one its
    series are labelled with (``nvlink``, ``nvswitch``, ``cpu``, ``cpucore``); ``parent`` the GPU
    or switch a link belongs to, the CPU a core belongs to (``parent_level`` says which).
    """

    level: EntityType
    entity_id: int
    number: int
    parent_level: EntityType = EntityType.NONE
    parent: int = 0

    @property
    def key(self) -> tuple[int, int]:
        """(entity group, entity id), as families key their series."""
        return int(self.level), self.entity_id


@dataclass(frozen=True)
class DeviceSelection:
    """What -d selects: ``f`` (flex), ``g`` (GPUs) or ``i`` (GPU instances); ids None means all."""

    kind: str
    ids: tuple[int, ...] | None = None

    def __str__(self) -> str:
        if self.ids is None:
            return self.kind
        return f"{self.kind}:{','.join(map(str, self.ids))}"


def id_ranges(ids: Sequence[int]) -> str:
    """Entity ids as the -d grammar writes them, runs as ranges: ``0-3,5`` (start-up lines, refusals)."""
    ids = sorted(ids)
    parts = []
    start = prev = None
    for i in ids + [None]:
        if start is None:
            start = prev = i
        elif i is not None and i == prev + 1:
            prev = i
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    return ",".join(parts)


# ---- flight recordings -------------------------------------------------------------------
# A flight recording (written by dcgm_collector.push.recorder, played back by the simulated
# engine) is a Parquet file with one row per sample, in these columns, plus a JSON sidecar
# ``<file>.json``.  Both sides name the columns from here; the format itself is declared once,
# in native/node/recording_format.h, which tests/unit/test_recording_format.py holds these to.
RECORDING_FORMAT_VERSION = 1
RECORDING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("time", "timestamp[us, tz=UTC]"),   # DCGM's timestamp of the sample
    ("entity_group", "string"),         # EntityType name: "GPU", "GPU_I", "LINK", ...
    ("entity_id", "int64"),             # DCGM's entity id
    ("gpu", "int64"),                   # the GPU the entity is or belongs to (null: switch, CPU, core)
    ("field_id", "int32"),              # DCGM field id
    ("field_name", "string"),           # DCGM's name of the field (DCGM_FI_DEV_POWER_USAGE)
    ("metric", "string"),               # the /metrics name of its series (the counters file's first column)
    ("value", "double"),                # null unless status is "OK"
    ("status", "string"),               # "OK", "BLANK" or "NOT_SUPPORTED"
)
RECORDING_SIDECAR_SUFFIX = ".json"
RECORDING_STATUSES = ("OK", "BLANK", "NOT_SUPPORTED")   # the status column's words
# what to install for the recorder and the replay: the package is not on a public index, so the
# extra is named as it is installed from a checkout, beside the one package it stands for
PYARROW_INSTALL_HINT = "pip install pyarrow (in a checkout: pip install '.[recorder]')"


def recording_schema(pa: Any) -> Any:
    """RECORDING_COLUMNS as a pyarrow schema, for a caller that has imported pyarrow (``pa``)."""
    types = {"timestamp[us, tz=UTC]": pa.timestamp("us", tz="UTC"), "string": pa.string(), "int64": pa.int64(),
             "int32": pa.int32(), "double": pa.float64()}
    return pa.schema([(name, types[kind]) for name, kind in RECORDING_COLUMNS])
