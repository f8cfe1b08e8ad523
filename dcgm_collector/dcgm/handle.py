"""A Pythonic DCGM binding over the cffi extension.

The extension dlopen's a libdcgm.so.4 at run time (the real one, or the
simulator in :mod:`dcgm_collector.engine`), so this module imports on any
machine; :func:`load_library` is where a missing DCGM is reported.

Typical use::

    with Handle.embedded(library=path) as h:
        fields = h.create_field_groups([150, 155, 203])
        gpus = h.all_gpus()
        h.watch(gpus, fields, update_freq_us=100_000, max_keep_age_s=60)
        cursor, values = h.values_since(gpus, fields)
        ...
        cursor, values = h.values_since(gpus, fields, cursor)   # only what is new

Every method validates its arguments before they reach C, and raises
TypeError / ValueError for bad ones and :class:`DcgmError` (with the status
code, its name and DCGM's own text) for what the library refuses.

The parts live beside it: :mod:`.checks` (argument checks), :mod:`.values`
(field metadata and value decoding), :mod:`.results` (result types),
:mod:`.groups` (entity and field groups) and :mod:`.discovery` (the
discovery calls Handle inherits); this module's ``__all__`` re-exports them.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from dcgm_collector.dcgm.checks import (
    _INT32_MAX,
    _INT64_MAX,
    _UINT32_MAX,
    _entity,
    _entity_group,
    _field_ids,
    _integer,
    _number,
    _parse_address,
    _text,
)
from dcgm_collector.dcgm.discovery import Discovery
from dcgm_collector.dcgm.errors import (
    DCGM_ST_OK,
    DcgmConnectionError,
    DcgmError,
    DcgmNotWatchedError,
    DcgmTimeoutError,
    DcgmUnknownFieldError,
    HandleClosedError,
    LibraryNotFoundError,
    check,
)
from dcgm_collector.dcgm.groups import EntityGroup, FieldGroup, FieldGroupsArg, FieldGroupSet, GroupArg
from dcgm_collector.dcgm.library import Library, _c_string, _require_library, load_library, loaded_library
from dcgm_collector.dcgm.results import Cursor, GpuAttributes, MigEntity
from dcgm_collector.dcgm.values import (
    _FT_DOUBLE,
    _FT_INT64,
    _FT_STRING,
    FieldMeta,
    FieldValue,
    _decode_value,
    _Records,
    _values_from_records,
    field_meta,
)
from dcgm_collector.ext._native import ffi, lib
from dcgm_collector.model import EntityType, FieldCost, GpuInfo, HealthIncident, HealthReport

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Cursor",
    "DcgmConnectionError",
    "DcgmError",
    "DcgmNotWatchedError",
    "DcgmTimeoutError",
    "DcgmUnknownFieldError",
    "EntityGroup",
    "EntityType",
    "FieldGroup",
    "FieldGroupSet",
    "FieldMeta",
    "FieldValue",
    "GpuAttributes",
    "GpuInfo",
    "Handle",
    "HandleClosedError",
    "HealthIncident",
    "HealthReport",
    "Library",
    "LibraryNotFoundError",
    "MigEntity",
    "field_meta",
    "load_library",
    "loaded_library",
]

EMBEDDED_HANDLE: int = lib.DCGM_EMBEDDED_HANDLE
GROUP_ALL_GPUS: int = lib.DCGM_GROUP_ALL_GPUS
MAX_FIELDS_PER_FIELD_GROUP: int = lib.DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP - 1  # api-facts §1: 127
DEFAULT_CONNECT_TIMEOUT_MS = 5000


_HEALTH_RESULTS = {
    getattr(lib, name): name[len("DCGM_HEALTH_RESULT_"):]
    for name in dir(lib) if name.startswith("DCGM_HEALTH_RESULT_")
}

_name_counter = itertools.count(1)
# more rows than fields anyone watches at once (dcgmSimFieldStats says how many there are)
_FIELD_STATS_CAPACITY = 512
_embedded_lock = threading.Lock()
_embedded_users = 0
_embedded_mode: str | None = None
_embedded_raw = EMBEDDED_HANDLE
_MODES = {"auto": lib.DCGM_OPERATION_MODE_AUTO, "manual": lib.DCGM_OPERATION_MODE_MANUAL}


def _unique_name(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_name_counter)}"


# ---- the handle ------------------------------------------------------------------
class Handle(Discovery):
    """A DCGM handle: the embedded engine, or a connection to an nv-hostengine.

    Use :meth:`embedded` or :meth:`connect`.  :meth:`close` (or leaving a
    ``with`` block) removes the watches, field groups and groups this handle
    created, newest first, then stops the engine or disconnects.
    """

    def __init__(self, library: Library, raw: int, remote: bool, description: str) -> None:
        self.library = library
        self._raw: int | None = raw
        self.remote = remote
        self.description = description
        self._lock = threading.RLock()
        self._owned: dict[tuple, Callable[[], None]] = {}   # insertion order = creation order

    # -- opening and closing
    @classmethod
    def embedded(cls, mode: str = "auto", library: Library | str | os.PathLike[str] | None = None) -> Handle:
        """Start (or share) the in-process engine; mode "auto" samples on its own, "manual" on update_all_fields."""
        global _embedded_users, _embedded_mode, _embedded_raw
        if mode not in _MODES:
            raise ValueError(f"mode must be 'auto' or 'manual', not {mode!r}")
        loaded = _require_library(library)
        _init()
        with _embedded_lock:
            if _embedded_users and mode != _embedded_mode:
                raise ValueError(f"the embedded engine already runs in {_embedded_mode!r} mode")
            if not _embedded_users:
                out = ffi.new("dcgmHandle_t *")
                check(lib.dcgmStartEmbedded(_MODES[mode], out), "dcgmStartEmbedded")
                _embedded_mode, _embedded_raw = mode, int(out[0])
            _embedded_users += 1
            raw = _embedded_raw
        return cls(loaded, raw, False, f"embedded ({mode})")

    @classmethod
    def connect(
        cls,
        address: str,
        timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
        persist_after_disconnect: bool = False,
        library: Library | str | os.PathLike[str] | None = None,
    ) -> Handle:
        """Connect to an nv-hostengine.

        ``address``: ``host``, ``host:port``, ``[v6addr]:port``, a unix
        socket path (``/run/...``), or a URI ``tcp://host:port`` /
        ``unix:///path`` (``dcgmConnect_v3``).
        """
        uri, unix = _parse_address(address)
        timeout_ms = _integer(timeout_ms, "timeout_ms", 0, _UINT32_MAX)
        if not isinstance(persist_after_disconnect, bool):
            raise TypeError("persist_after_disconnect must be a bool")
        loaded = _require_library(library)
        _init()
        out = ffi.new("dcgmHandle_t *")
        if uri:
            params = ffi.new("dcgmConnectV3Params_t *", {
                "version": lib.dcgmConnectV3Params_version,
                "persistAfterDisconnect": int(persist_after_disconnect), "timeoutMs": timeout_ms,
            })
            check(lib.dcgmConnect_v3(address.encode(), params, out), f"dcgmConnect_v3({address})")
        else:
            params = ffi.new("dcgmConnectV2Params_t *", {
                "version": lib.dcgmConnectV2Params_version,
                "persistAfterDisconnect": int(persist_after_disconnect), "timeoutMs": timeout_ms,
                "addressIsUnixSocket": int(unix),
            })
            check(lib.dcgmConnect_v2(address.encode(), params, out), f"dcgmConnect_v2({address})")
        return cls(loaded, int(out[0]), True, address)

    @property
    def closed(self) -> bool:
        return self._raw is None

    def close(self) -> None:
        """Remove what this handle created, then stop / disconnect; closing twice is a no-op."""
        global _embedded_users
        with self._lock:
            if self._raw is None:
                return
            for key in reversed(list(self._owned)):
                self._release(key, quiet=True)
            raw, self._raw = self._raw, None
        if self.remote:
            lib.dcgmDisconnect(raw)
            return
        with _embedded_lock:
            _embedded_users -= 1
            if _embedded_users == 0:
                lib.dcgmStopEmbedded(raw)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"Handle({self.description}, {state}, library={self.library.path})"

    # -- plumbing
    def _h(self) -> int:
        raw = self._raw
        if raw is None:
            raise HandleClosedError(lib.DCGM_ST_UNINITIALIZED, "handle is closed", f"handle {self.description}")
        return raw

    def _own(self, key: tuple, undo: Callable[[], None]) -> None:
        with self._lock:
            self._owned.setdefault(key, undo)

    def _release(self, key: tuple, quiet: bool = False) -> None:
        """Undo one created thing (and the watches that depend on it)."""
        with self._lock:
            if self._raw is None:
                return  # the handle's close already released everything
            if key[0] in ("group", "fieldgroup"):
                position = 1 if key[0] == "group" else 2
                for watch in [k for k in self._owned if k[0] == "watch" and k[position] == key[1]]:
                    self._release(watch, quiet)
            undo = self._owned.pop(key, None)
        if undo is None:
            return
        try:
            undo()
        except DcgmError:
            if not quiet:
                raise

    def _group_id(self, group: GroupArg) -> int:
        if isinstance(group, EntityGroup):
            if group.handle is not self:
                raise ValueError(f"{group!r} belongs to another handle")
            if group.owned and ("group", group.id) not in self._owned:
                raise ValueError(f"{group!r} was destroyed")
            return group.id
        return _integer(group, "group id", 0, _UINT32_MAX)

    def _field_groups(self, field_groups: FieldGroupsArg) -> list[FieldGroup]:
        groups = [field_groups] if isinstance(field_groups, FieldGroup) else field_groups
        if isinstance(groups, (str, bytes)) or not isinstance(groups, Iterable):
            raise TypeError(f"expected a FieldGroup or FieldGroupSet, not {type(field_groups).__name__}")
        groups = list(groups)
        if not groups:
            raise ValueError("no field groups given")
        for group in groups:
            if not isinstance(group, FieldGroup):
                raise TypeError(f"expected a FieldGroup, not {type(group).__name__}")
            if group.handle is not self:
                raise ValueError(f"{group!r} belongs to another handle")
            if ("fieldgroup", group.id) not in self._owned:
                raise ValueError(f"{group!r} was destroyed")
        return groups

    # -- entity groups
    def all_gpus(self) -> EntityGroup:
        """DCGM's built-in group of all GPUs (never destroyed)."""
        self._h()
        return EntityGroup(self, GROUP_ALL_GPUS, "all GPUs", owned=False)

    def create_group(self, name: str | None = None, entities: Iterable[Any] = ()) -> EntityGroup:
        """A new entity group holding ``entities`` (GPU ids or (entity group, entity id) pairs)."""
        name = _unique_name("dcgm-collector-group") if name is None else name
        encoded = _text(name, "group name", lib.DCGM_MAX_STR_LENGTH - 1)
        if isinstance(entities, (str, bytes)) or not isinstance(entities, Iterable):
            raise TypeError(f"entities must be an iterable, not {type(entities).__name__}")
        members = [_entity(e) for e in entities]
        out = ffi.new("dcgmGpuGrp_t *")
        h = self._h()
        check(lib.dcgmGroupCreate(h, lib.DCGM_GROUP_EMPTY, encoded, out), f"dcgmGroupCreate({name!r})")
        group_id = int(out[0])
        self._own(("group", group_id), lambda: check(lib.dcgmGroupDestroy(h, group_id), "dcgmGroupDestroy"))
        group = EntityGroup(self, group_id, name, owned=True)
        try:
            for entity_group, entity_id in members:
                check(lib.dcgmGroupAddEntity(h, group_id, entity_group, entity_id),
                      f"dcgmGroupAddEntity({_entity_label(entity_group, entity_id)})")
        except DcgmError:
            group.destroy()
            raise
        return group

    def remove_from_group(self, group: GroupArg, entities: Iterable[Any]) -> None:
        """Take entities (GPU ids or (entity group, entity id) pairs) out of a group (``dcgmGroupRemoveEntity``)."""
        group_id = self._group_id(group)
        members = [_entity(e) for e in entities]
        h = self._h()
        for entity_group, entity_id in members:
            check(lib.dcgmGroupRemoveEntity(h, group_id, entity_group, entity_id),
                  f"dcgmGroupRemoveEntity({_entity_label(entity_group, entity_id)})")

    def _group_entities(self, group: EntityGroup) -> list[tuple[int, int]]:
        info = ffi.new("dcgmGroupInfo_t *", {"version": lib.dcgmGroupInfo_version})
        check(lib.dcgmGroupGetInfo(self._h(), self._group_id(group), info), "dcgmGroupGetInfo")
        return [(int(info.entityList[i].entityGroupId), int(info.entityList[i].entityId))
                for i in range(min(info.count, lib.DCGM_GROUP_MAX_ENTITIES_V2))]

    # -- field groups
    def create_field_groups(self, field_ids: Iterable[int], name: str | None = None) -> FieldGroupSet:
        """Field groups for field_ids, split into DCGM field groups of at most 127 ids.

        Unknown field ids raise DcgmUnknownFieldError naming them, before
        anything is created.
        """
        ids = _field_ids(field_ids)
        name = _unique_name("dcgm-collector-fields") if name is None else name
        _text(name, "field group name", lib.DCGM_MAX_STR_LENGTH - 8)
        h = self._h()
        unknown = [f for f in ids if lib.DcgmFieldGetById(f) == ffi.NULL]
        if unknown:
            raise DcgmUnknownFieldError(
                lib.DCGM_ST_UNKNOWN_FIELD,
                "unknown field id" + ("s " if len(unknown) > 1 else " ") + ", ".join(map(str, unknown)),
                "create_field_groups",
            )
        chunks = [ids[i:i + MAX_FIELDS_PER_FIELD_GROUP] for i in range(0, len(ids), MAX_FIELDS_PER_FIELD_GROUP)]
        groups: list[FieldGroup] = []
        try:
            for index, chunk in enumerate(chunks):
                part = name if len(chunks) == 1 else f"{name}.{index + 1}"
                groups.append(self._create_field_group(h, chunk, part))
        except DcgmError:
            FieldGroupSet(groups).destroy()
            raise
        return FieldGroupSet(groups)

    def _create_field_group(self, h: int, ids: list[int], name: str) -> FieldGroup:
        out = ffi.new("dcgmFieldGrp_t *")
        status = lib.dcgmFieldGroupCreate(h, len(ids), ffi.new("unsigned short[]", ids), name.encode(), out)
        check(status, f"dcgmFieldGroupCreate({name!r}, fields {_id_list(ids)})")
        group_id = int(out[0])
        self._own(("fieldgroup", group_id),
                  lambda: check(lib.dcgmFieldGroupDestroy(h, group_id), "dcgmFieldGroupDestroy"))
        return FieldGroup(self, group_id, name, tuple(ids))

    # -- watches
    def watch(
        self,
        group: GroupArg,
        field_groups: FieldGroupsArg,
        update_freq_us: int,
        max_keep_age_s: float,
        max_keep_samples: int = 0,
    ) -> None:
        """Watch every field of field_groups on every entity of group (``dcgmWatchFields``).

        All or nothing: if one field group's watch fails, the ones this call
        made are removed again.
        """
        group_id = self._group_id(group)
        groups = self._field_groups(field_groups)
        update_freq_us = _integer(update_freq_us, "update_freq_us", 1, _INT64_MAX)
        max_keep_age_s = _number(max_keep_age_s, "max_keep_age_s", 0.0, 1e12)
        max_keep_samples = _integer(max_keep_samples, "max_keep_samples", 0, _INT32_MAX)
        h = self._h()
        made = []
        try:
            for fg in groups:
                key = ("watch", group_id, fg.id)
                check(lib.dcgmWatchFields(h, group_id, fg.id, update_freq_us, max_keep_age_s, max_keep_samples),
                      f"dcgmWatchFields(group {group_id:#x}, {fg.name!r})")
                if key not in self._owned:
                    self._own(key, _unwatcher(h, group_id, fg.id))
                    made.append(key)
        except DcgmError:
            for key in reversed(made):
                self._release(key, quiet=True)
            raise

    def unwatch(self, group: GroupArg, field_groups: FieldGroupsArg) -> None:
        """Remove watches made with :meth:`watch`."""
        group_id = self._group_id(group)
        for fg in self._field_groups(field_groups):
            key = ("watch", group_id, fg.id)
            if key in self._owned:
                self._release(key)
            else:
                check(lib.dcgmUnwatchFields(self._h(), group_id, fg.id), "dcgmUnwatchFields")

    def field_costs(self) -> tuple[FieldCost, ...]:
        """Per-field statistics of the embedded engine (dcgmSimFieldStats): () for a
        hostengine connection and for a libdcgm without the extension (NVIDIA's)."""
        if self.remote:
            return ()
        capacity = _FIELD_STATS_CAPACITY
        rows = ffi.new("dcgmSimFieldStats_t[]", capacity)
        count = ffi.new("int *")
        if lib.dcgmSimFieldStats(rows, capacity, count) != lib.DCGM_ST_OK:
            return ()
        return tuple(
            FieldCost(r.fieldId, r.samples, r.lateSamples, r.reads, r.readNs / 1e9, r.lateReads,
                      r.periodUs / 1e6, r.corrections, r.lastCorrection, r.maxAbsCorrection)
            for r in rows[0:min(count[0], capacity)])

    def update_all_fields(self, wait: bool = True) -> None:
        """Sample every due watch now (needed in manual mode)."""
        if not isinstance(wait, bool):
            raise TypeError("wait must be a bool")
        check(lib.dcgmUpdateAllFields(self._h(), int(wait)), "dcgmUpdateAllFields")

    # -- reads
    def latest_values(self, group: GroupArg, field_groups: FieldGroupsArg) -> list[FieldValue]:
        """The latest cached value of every (entity, field), NO_DATA / NOT_WATCHED records included."""
        group_id = self._group_id(group)
        groups = self._field_groups(field_groups)
        values: list[FieldValue] = []
        with _Records() as records:
            for fg in groups:
                check(lib.dcgmc_latest_values(self._h(), group_id, fg.id, records.c),
                      f"dcgmGetLatestValues_v2({fg.name!r})")
                values.extend(_values_from_records(records.c))
        return values

    def values_since(
        self, group: GroupArg, field_groups: FieldGroupsArg, since: Cursor | int = 0
    ) -> tuple[Cursor, list[FieldValue]]:
        """Every cached sample from ``since`` on (``dcgmGetValuesSince_v2``), and the cursor for the next read.

        ``since`` is 0 (everything retained), a time in µs, or the Cursor a
        previous call returned.  An (entity, field) with nothing new answers
        one NO_DATA record.  Raises DcgmNotWatchedError for an unwatched field.
        """
        group_id = self._group_id(group)
        groups = self._field_groups(field_groups)
        if not isinstance(since, Cursor):
            since = _integer(since, "since", 0, _INT64_MAX)
        positions = []
        values: list[FieldValue] = []
        next_since = ffi.new("long long *")
        with _Records() as records:
            for fg in groups:
                start = since.since(fg) if isinstance(since, Cursor) else since
                check(lib.dcgmc_values_since(self._h(), group_id, fg.id, start, next_since, records.c),
                      f"dcgmGetValuesSince_v2({fg.name!r})")
                values.extend(_values_from_records(records.c))
                positions.append((fg.id, int(next_since[0])))
        return Cursor(tuple(positions)), values

    def entity_latest_values(self, entity_group: int, entity_id: int, field_ids: Iterable[int]) -> list[FieldValue]:
        """Latest cached values of one entity (``dcgmEntityGetLatestValues``), in field order."""
        entity_group = _entity_group(entity_group)
        entity_id = _integer(entity_id, "entity id", 0, _INT32_MAX)
        ids = _field_ids(field_ids)
        h = self._h()
        values: list[FieldValue] = []
        chunk_size = lib.DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP
        for start in range(0, len(ids), chunk_size):
            chunk = ids[start:start + chunk_size]
            records = ffi.new("dcgmFieldValue_v1[]", len(chunk))
            check(lib.dcgmEntityGetLatestValues(h, entity_group, entity_id, ffi.new("unsigned short[]", chunk),
                                                len(chunk), records),
                  f"dcgmEntityGetLatestValues({_entity_label(entity_group, entity_id)})")
            for r in records:
                values.append(_decode_value(entity_group, entity_id, r.fieldId, r.fieldType, r.status, r.ts,
                                            r.value.i64, r.value.dbl, r.value.str))
        return values

    # -- test entry points
    def live_values(self, entities: Iterable[Any], field_ids: Iterable[int]) -> list[FieldValue]:
        """Values read from the hardware now, not the cache (``dcgmEntitiesGetLatestValues`` with
        ``DCGM_FV_FLAG_LIVE_DATA``): what dcgm-exporter reads a GPU instance's profile name with."""
        members = [_entity(e) for e in entities]
        ids = _field_ids(field_ids)
        if not members or not ids:
            return []
        pairs = ffi.new("dcgmGroupEntityPair_t[]", len(members))
        for pair, (entity_group, entity_id) in zip(pairs, members):
            pair.entityGroupId, pair.entityId = entity_group, entity_id
        records = ffi.new("dcgmFieldValue_v2[]", len(members) * len(ids))
        check(lib.dcgmEntitiesGetLatestValues(self._h(), pairs, len(members), ffi.new("unsigned short[]", ids),
                                              len(ids), lib.DCGM_FV_FLAG_LIVE_DATA, records),
              "dcgmEntitiesGetLatestValues")
        return [_decode_value(r.entityGroupId, r.entityId, r.fieldId, r.fieldType, r.status, r.ts,
                              r.value.i64, r.value.dbl, r.value.str) for r in records]

    def inject(
        self, entity_group: int, entity_id: int, field_id: int, value: float | str, ts_us: int | None = None
    ) -> None:
        """Store a value as if DCGM had sampled it (``dcgmInjectEntityFieldValue``); ts defaults to now."""
        entity_group = _entity_group(entity_group)
        entity_id = _integer(entity_id, "entity id", 0, _UINT32_MAX)
        field_id = _integer(field_id, "field id", 1, 65535)
        ts_us = time.time_ns() // 1000 if ts_us is None else _integer(ts_us, "ts_us", 0, _INT64_MAX)
        h = self._h()
        meta = lib.DcgmFieldGetById(field_id)
        if meta == ffi.NULL:
            raise DcgmUnknownFieldError(lib.DCGM_ST_UNKNOWN_FIELD, f"unknown field id {field_id}", "inject")
        record = ffi.new("dcgmInjectFieldValue_t *", {
            "version": lib.dcgmInjectFieldValue_version, "fieldId": field_id, "status": DCGM_ST_OK, "ts": ts_us,
        })
        field_type = ord(meta.fieldType)
        record.fieldType = field_type
        if field_type == _FT_INT64:
            record.value.i64 = _integer(value, "value", -(2**63), _INT64_MAX)
        elif field_type == _FT_DOUBLE:
            record.value.dbl = _number(value, "value", float("-inf"), float("inf"))
        elif field_type == _FT_STRING:
            record.value.str = _text(value, "value", lib.DCGM_MAX_STR_LENGTH - 1)
        else:
            raise ValueError(f"field {field_id} has type {chr(field_type)!r}; only i, d and s can be injected")
        check(lib.dcgmInjectEntityFieldValue(h, entity_group, entity_id, record),
              f"dcgmInjectEntityFieldValue({_entity_label(entity_group, entity_id)}, field {field_id})")

    def create_fake_gpus(self, count: int) -> list[int]:
        """Add ``count`` fake GPUs (status Fake, never sampled; values come from :meth:`inject`)."""
        count = _integer(count, "count", 1, lib.DCGM_MAX_NUM_DEVICES)
        request = ffi.new("dcgmCreateFakeEntities_t *", {
            "version": lib.dcgmCreateFakeEntities_version, "numToCreate": count,
        })
        for i in range(count):
            request.entityList[i].entity.entityGroupId = lib.DCGM_FE_GPU
        check(lib.dcgmCreateFakeEntities(self._h(), request), "dcgmCreateFakeEntities")
        return [int(request.entityList[i].entity.entityId) for i in range(count)]

    # -- health
    def health_set(self, group: GroupArg, systems: int = lib.DCGM_HEALTH_WATCH_ALL) -> None:
        """Enable health watches (DCGM_HEALTH_WATCH_* bits) on a group."""
        group_id = self._group_id(group)
        systems = _integer(systems, "systems", 0, _UINT32_MAX)
        check(lib.dcgmHealthSet(self._h(), group_id, systems), "dcgmHealthSet")

    def health_check(self, group: GroupArg) -> HealthReport:
        """Overall health and incidents of a group (``dcgmHealthCheck``)."""
        group_id = self._group_id(group)
        response = ffi.new("dcgmHealthResponse_t *", {"version": lib.dcgmHealthResponse_version})
        check(lib.dcgmHealthCheck(self._h(), group_id, response), "dcgmHealthCheck")
        incidents = []
        for i in range(min(response.incidentCount, lib.DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2)):
            incident = response.incidents[i]
            incidents.append(HealthIncident(
                int(incident.system), _HEALTH_RESULTS.get(incident.health, str(incident.health)),
                _c_string(incident.error.msg), int(incident.error.code),
                int(incident.entityInfo.entityGroupId), int(incident.entityInfo.entityId),
            ))
        overall = _HEALTH_RESULTS.get(response.overallHealth, str(response.overallHealth))
        return HealthReport(overall, tuple(incidents))


def _unwatcher(h: int, group_id: int, field_group_id: int) -> Callable[[], None]:
    return lambda: check(lib.dcgmUnwatchFields(h, group_id, field_group_id), "dcgmUnwatchFields")


def _init() -> None:
    check(lib.dcgmInit(), "dcgmInit")
    if lib.DcgmFieldsInit() != 0:
        raise DcgmError(lib.DCGM_ST_INIT_ERROR, where="DcgmFieldsInit")


def _entity_label(entity_group: int, entity_id: int) -> str:
    try:
        kind = EntityType(entity_group).name
    except ValueError:
        kind = str(entity_group)
    return f"{kind} {entity_id}"


def _id_list(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if len(ids) <= 8 else f"{ids[0]}..{ids[-1]} ({len(ids)} ids)"
