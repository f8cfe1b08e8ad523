"""Field metadata and field values: decoding DCGM's value records, blank sentinels included."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from dcgm_collector.dcgm.checks import _integer
from dcgm_collector.dcgm.errors import DCGM_ST_OK, DcgmError, status_name
from dcgm_collector.dcgm.library import _c_string, load_library
from dcgm_collector.ext._native import ffi, lib

if TYPE_CHECKING:
    from typing_extensions import Self

# ---- blank values (api-facts §4.4) ------------------------------------------
_INT64_BLANK: int = lib.DCGM_INT64_BLANK
_INT32_BLANK: int = lib.DCGM_INT32_BLANK
_FP64_BLANK = 2.0**47
_BLANK_KINDS = ("BLANK", "NOT_FOUND", "NOT_SUPPORTED", "NOT_PERMISSIONED")
_STRING_BLANKS = {
    "<<<NULL>>>": "BLANK",
    "<<<NOT_FOUND>>>": "NOT_FOUND",
    "<<<NOT_SUPPORTED>>>": "NOT_SUPPORTED",
    "<<<NOT_PERM>>>": "NOT_PERMISSIONED",
}
_FT_INT64, _FT_DOUBLE, _FT_STRING = lib.DCGM_FT_INT64, lib.DCGM_FT_DOUBLE, lib.DCGM_FT_STRING
_FT_BINARY, _FT_TIMESTAMP = lib.DCGM_FT_BINARY, lib.DCGM_FT_TIMESTAMP


def _sentinel_kind(offset: float) -> str:
    return _BLANK_KINDS[int(offset)] if 0 <= offset < len(_BLANK_KINDS) and offset == int(offset) else "BLANK"


# ---- field metadata and values -----------------------------------------------
class FieldMeta(NamedTuple):
    """What the library knows of a field id (``DcgmFieldGetById``)."""

    field_id: int
    field_type: str     # 'i', 'd', 's', 'b' or 't'
    tag: str
    scope: int          # DCGM_FS_GLOBAL (0) or DCGM_FS_ENTITY (1)
    entity_level: int   # the EntityType it is read on


def field_meta(field_id: int) -> FieldMeta | None:
    """Metadata of field_id from the loaded library, or None if it has none."""
    field_id = _integer(field_id, "field id", 0, 65535)
    load_library()
    if lib.DcgmFieldsInit() != 0:
        raise DcgmError(lib.DCGM_ST_INIT_ERROR, where="DcgmFieldsInit")
    meta = lib.DcgmFieldGetById(field_id)
    if meta == ffi.NULL:
        return None
    return FieldMeta(
        int(meta.fieldId), meta.fieldType.decode("ascii", "replace"), _c_string(meta.tag), int(meta.scope),
        int(meta.entityLevel),
    )


class FieldValue(NamedTuple):
    """One field reading of one entity.

    ``value`` is an int ('i', 't'), float ('d'), str ('s') or bytes ('b', the
    first 256 bytes), or None when the record carries no reading: then
    ``blank_kind`` says why: a status name ("NO_DATA", "NOT_WATCHED", ...)
    when ``status`` is not OK, else the sentinel's kind ("BLANK",
    "NOT_FOUND", "NOT_SUPPORTED", "NOT_PERMISSIONED").
    """

    entity_group: int
    entity_id: int
    field_id: int
    field_type: str
    status: int
    ts: int              # microseconds since the Unix epoch (0 when no reading)
    value: int | float | str | bytes | None
    blank_kind: str | None = None

    @property
    def is_blank(self) -> bool:
        return self.value is None


def _decode_value(
    entity_group: int, entity_id: int, field_id: int, type_code: int, status: int, ts: int,
    i64: int, dbl: float, text: Any,
) -> FieldValue:
    field_type = chr(type_code) if 0 < type_code < 128 else "?"
    value: int | float | str | bytes | None = None
    blank: str | None = None
    if status != DCGM_ST_OK:
        blank = status_name(status).removeprefix("DCGM_ST_")
    elif type_code in (_FT_INT64, _FT_TIMESTAMP):
        if i64 >= _INT64_BLANK:
            blank = _sentinel_kind(i64 - _INT64_BLANK)
        else:
            value = i64
    elif type_code == _FT_DOUBLE:
        if dbl >= _FP64_BLANK:
            blank = _sentinel_kind(dbl - _FP64_BLANK)
        else:
            value = dbl
    elif type_code == _FT_STRING:
        string = ffi.string(text).decode("utf-8", "replace")
        if string.startswith("<<<") and ">>>" in string:
            blank = _STRING_BLANKS.get(string, "BLANK")
        else:
            value = string
    elif type_code == _FT_BINARY:
        value = bytes(ffi.buffer(text, 256))
    else:
        blank = "UNKNOWN_TYPE"
    return FieldValue(entity_group, entity_id, field_id, field_type, status, ts, value, blank)


def _values_from_records(records: Any) -> list[FieldValue]:
    items = records.items
    return [
        _decode_value(r.entityGroupId, r.entityId, r.fieldId, r.fieldType, r.status, r.ts, r.i64, r.dbl, r.str)
        for r in (items[i] for i in range(records.count))
    ]


class _Records:
    """A C-side record buffer, freed when the block ends."""

    def __enter__(self) -> Self:
        self.c = ffi.new("dcgmc_records *")
        return self

    def __exit__(self, *exc: object) -> None:
        lib.dcgmc_records_free(self.c)
