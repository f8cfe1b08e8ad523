"""The history API's answers of a few rows: what a viewer following the cursor at 10 Hz asks for.

Such an answer holds one or two new rows of a ring (a viewer 100 ms behind
the sampler).  For so few samples numpy's calls, the JSON encoder and the
general answer's machinery (the table of timestamps, the cut into pages,
the slabs) cost far more than the work, and at a viewer's pace they run
with cold caches, so the answer is made here in plain Python: the same JSON
as the general path gives (expose.history), from the series' heads kept
between answers (expose.history_heads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import isfinite

from dcgm_collector.expose.history_cursor import Cursor, encode
from dcgm_collector.expose.history_heads import layout_of, wanted
from dcgm_collector.expose.history_query import HistoryQuery, QueryError
from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_OK
from dcgm_collector.series.samples import SampleModel

__all__ = ["FEW_ROWS", "cursor_answer_head", "few_after", "few_texts", "start_row"]

FEW_ROWS = 16       # a ring's slab of at most this many rows is written here, without numpy
_INT64 = 2**63


def start_row(cursor: Cursor, serial: int, written: int, first_row_since: Callable[[int], int]) -> int:
    """The row a cursor's answer reads a ring from: the cursor's, or the first one at its resume time."""
    row = cursor.rows.get(serial)
    if row is None:   # a ring made since, or left out of a long cursor
        return first_row_since(cursor.resume_us)
    if row > written:
        raise QueryError("cursor: it names rows not written yet (it is not one this collector gave)")
    return row


def few_texts(ts: list[int], values: list[list[float]], cells: list[list[int]], integer: list[bool],
              columns: list[int]) -> tuple[list[bytes], int]:
    """Per chosen series (its column in ``columns``), its samples of a few rows as JSON (``[ts,value],...``;
    empty when it has none there), and how many samples they hold.

    For a few rows (a cursor's answer at a viewer's pace) numpy's calls and
    the encoder cost more than the work, so the text is made in Python: the
    same text as history's _RingPart.write (floats as repr, which the encoder uses).
    ``values`` and ``cells`` are the rows' lists, row by row, all columns.
    """
    out = []
    count = 0
    rows = list(zip(ts, values, cells))
    for whole, column in zip(integer, columns):
        texts = []
        for t, numbers, states in rows:
            state = states[column]
            if state == SAMPLE_ABSENT:
                continue
            v = numbers[column]
            if state != SAMPLE_OK or not isfinite(v):
                texts.append(b"[%d,null]" % t)
            elif whole:   # as astype(int64) in write: out of its range is its smallest
                texts.append(b"[%d,%d]" % (t, int(v) if -_INT64 <= v < _INT64 else -_INT64))
            else:
                texts.append(f"[{t},{v!r}]".encode())
        out.append(b",".join(texts))
        count += len(texts)
    return out, count


def cursor_answer_head(cursor_text: str, truncated: bool = False, gap: bool = False) -> str:
    """A cursor's answer up to its series: no span, whether it was cut, whether rows were lost, the next cursor."""
    return ('{"status":"success","data":{"since_us":null,"until_us":null,"columns":["ts_us","value"],'
            f'"truncated":{"true" if truncated else "false"},"gap":{"true" if gap else "false"},'
            f'"cursor":"{cursor_text}","series":[')


def few_after(models: Sequence[SampleModel], query: HistoryQuery, cursor: Cursor,
               pause: Callable[[], None] | None) -> tuple[bytes, int] | None:
    """A cursor's answer (its JSON and how many samples it holds) when it is a few new ring rows (what a
    viewer asks for every 100 ms), else None.

    The same answer as the general path's, made without its machinery (the
    timestamps' table, the cut, the slabs), which costs more than a few
    rows: None (the general path answers) when a chosen ring has more than
    FEW_ROWS new rows, a late row, or lost rows, when the samples pass the
    limit, when new events are to be given, or when an attached store is
    asked (its series are found as its rows are read).
    """
    places: dict[int, int] = {}
    series: list[bytes] = []
    samples = 0
    newest_us: int | None = None
    known = False
    for model in models:
        for store in model.stores:
            if any(wanted(name, field_id, field_name, query.fields) for name, field_id, field_name in store.fields):
                return None
        if any(wanted(f.name, f.field_id, f.field_name, query.fields) for f in model.event_series):
            known, events = True, model.events
            at = start_row(cursor, events.serial, events.rows_written, events.first_row_since)
            if at != events.rows_written:
                return None
            places[events.serial] = at
        for ring in model.rings:
            layout = layout_of(ring, query)
            known = known or layout.served
            if not layout.chosen:
                continue
            native = ring.ring
            at = start_row(cursor, native.serial, native.rows_written, native.first_row_since)
            rows, first = native.rows_from(at, FEW_ROWS + 1)
            ts = rows.ts.tolist()
            if first != at or len(ts) > FEW_ROWS or any(b < a for a, b in zip(ts, ts[1:])):
                return None
            places[native.serial] = at + len(ts)
            if not ts:
                continue
            texts, count = few_texts(ts, rows.values.tolist(), rows.status.tolist(), layout.integer,
                                      layout.column_list)
            samples += count
            if samples > query.limit:
                return None
            for head, text in zip(layout.heads, texts):
                if text:
                    series += (head, text, b"]},")
            newest_us = ts[-1] if newest_us is None else max(newest_us, ts[-1])
            if pause is not None:
                pause()
    if not known:
        return None
    resume_us = cursor.resume_us if newest_us is None else max(cursor.resume_us, newest_us + 1)
    head = cursor_answer_head(encode(Cursor(resume_us, places)))
    if series:
        series[-1] = b"]}"   # the last series' end, without the comma before a next one
    return head.encode() + b"".join(series) + b"]}}", samples
