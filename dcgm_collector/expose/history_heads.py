"""What the history API says of a series before its samples, made once and kept: its JSON head, and per ring
and query the series it chooses.

A viewer asks the same question every 100 ms; the series' names and labels
do not change between its answers, so their JSON (everything up to the
samples array) is written once per series (:func:`head_of`), and which
series of a ring a query chooses, with the columns they are in, once per
ring and query (:func:`layout_of`).  Both are bounded: past their limits
they start again rather than grow with series that came and went.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass

import numpy as np

from dcgm_collector.expose.history_query import HistoryQuery
from dcgm_collector.model import entity_group_name
from dcgm_collector.series.samples import RingSeries, SeriesInfo

__all__ = ["Layout", "head_of", "layout_of", "wanted"]

_SEPARATORS = (",", ":")
_KEPT_HEADS = 16_384        # series heads kept for the next answers (about 400 bytes each)
_KEPT_CHOICES = 1_024       # rings x queries whose chosen series are kept
_HEADS: dict[tuple, bytes] = {}
_CHOSEN: dict[tuple, tuple] = {}
_WANTED: dict[tuple, bool] = {}


def wanted(series_name: str, field_id: int, field_name: str, fields: tuple[str, ...]) -> bool:
    """Whether a query's fields name this series (by its metric name, DCGM field name or field id); kept in
    _WANTED, since a viewer asks it of the same event families and stores every 100 ms."""
    key = (series_name, field_id, field_name, fields)
    found = _WANTED.get(key)
    if found is None:
        found = any(f == series_name or f == field_name or f == str(field_id) for f in fields)
        if len(_WANTED) >= _KEPT_HEADS:
            _WANTED.clear()
        _WANTED[key] = found
    return found


def _entity_json(entity: tuple[int, int]) -> dict[str, object]:
    return {"group": entity_group_name(entity[0]), "id": entity[1]}


def head_of(metric: str, labels: tuple, field_id: int, field_name: str, gpu: int | None, entity) -> bytes:
    """A series object's JSON up to the opening of its samples array (made once, then kept in _HEADS)."""
    key = (metric, labels, field_id, field_name, gpu, entity)
    found = _HEADS.get(key)
    if found is None:
        text = json.dumps({"metric": metric, "labels": dict(labels), "field_id": field_id, "field_name": field_name,
                           "gpu": gpu, "entity": _entity_json(entity), "samples": []}, separators=_SEPARATORS)
        assert text.endswith("[]}")
        found = text[:-2].encode()
        if len(_HEADS) >= _KEPT_HEADS:   # series that came and went: start again rather than grow
            _HEADS.clear()
        _HEADS[key] = found
    return found


@dataclass
class Layout:
    """What a ring answers a query with, made once per ring and query: its chosen series and their heads, the
    columns they are in, which hold integers; and whether the ring serves any of the fields (on any GPU)."""

    chosen: list[SeriesInfo]
    served: bool
    heads: list[bytes]
    columns: np.ndarray
    column_list: list[int]
    integer: list[bool]
    whole: np.ndarray
    real: np.ndarray


def layout_of(ring: RingSeries, query: HistoryQuery) -> Layout:
    """The ring's layout for the query (:class:`Layout`).

    Kept per ring and query in _CHOSEN (a viewer asks the same every 100 ms),
    by the ring's id with a weak reference to tell a new ring at a reused id.
    """
    key = (id(ring), query.fields, query.gpus)
    found = _CHOSEN.get(key)
    if found is not None and found[0]() is ring:
        return found[1]
    served = [s for s in ring.series if wanted(s.name, s.field_id, s.field_name, query.fields)]
    chosen = [s for s in served if query.gpus is None or s.gpu in query.gpus]
    integer = np.array([s.integer for s in chosen], dtype=bool)
    heads = [head_of(s.name, s.labels, s.field_id, s.field_name, s.gpu, s.entity) for s in chosen]
    columns = [s.column for s in chosen]
    layout = Layout(chosen, bool(served), heads, np.array(columns, dtype=np.intp), columns, integer.tolist(),
                    np.flatnonzero(integer), np.flatnonzero(~integer))
    if len(_CHOSEN) >= _KEPT_CHOICES:
        _CHOSEN.clear()
    _CHOSEN[key] = (weakref.ref(ring), layout)
    return layout
