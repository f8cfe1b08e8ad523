"""The remote-write 1.0 request body: a protobuf WriteRequest, snappy block compressed.

The message is small enough to write by hand, which saves building a protobuf
object per sample (the cost that matters at thousands of samples a second):

    WriteRequest { repeated TimeSeries timeseries = 1; }
    TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
    Label        { string name = 1; string value = 2; }
    Sample       { double value = 1; int64 timestamp = 2; }   // timestamp: ms since the epoch

``remote_write.proto`` beside this module declares the same messages; the unit
tests decode what :func:`encode_write_request` writes with the protobuf library.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from dcgm_collector.series.samples import Labels

__all__ = ["SeriesSamples", "compress", "encode_labels", "encode_write_request"]

# tag bytes: (field number << 3) | wire type (0 varint, 1 64-bit, 2 length-delimited)
_TIMESERIES = 0x0A    # WriteRequest.timeseries, field 1, length-delimited
_LABEL = 0x0A         # TimeSeries.labels, field 1
_SAMPLE = 0x12        # TimeSeries.samples, field 2
_NAME, _VALUE = 0x0A, 0x12            # Label.name, Label.value
_SAMPLE_VALUE, _SAMPLE_TS = 0x09, 0x10  # Sample.value (double), Sample.timestamp (varint)

# every ms timestamp from 1971 to 2109 is a 6-byte varint: those samples are written by numpy
_SIX_BYTE_LOW, _SIX_BYTE_HIGH = 1 << 35, 1 << 42
_PACKED_SAMPLE = np.dtype([("tag", "u1"), ("size", "u1"), ("value_tag", "u1"), ("value", "<f8"),
                           ("ts_tag", "u1"), ("ts", "u1", (6,))])   # unaligned: 18 bytes, as on the wire


class SeriesSamples(NamedTuple):
    """One series of a request: its encoded labels and its samples, oldest first."""

    labels: bytes           # the TimeSeries' label fields, from encode_labels
    ts_ms: np.ndarray       # int64
    values: np.ndarray      # float64


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64    # int64 as protobuf writes it: ten bytes of two's complement
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + _varint(len(payload)) + payload


def encode_labels(name: str, labels: Labels, extra: Labels = ()) -> bytes:
    """The label fields of a series: __name__ first, then the rest sorted by name, as receivers expect.

    ``extra`` labels (--remote-write-label) are added unless the series has a label of that name.
    """
    pairs = dict(extra)
    pairs.update(labels)
    pairs["__name__"] = name
    out = bytearray()
    for key in sorted(pairs):
        out += _field(_LABEL, _field(_NAME, key.encode()) + _field(_VALUE, pairs[key].encode()))
    return bytes(out)


def _packed(ts_ms: np.ndarray, values: np.ndarray) -> bytes | None:
    """The Sample fields of these samples, 18 bytes each, or None when a timestamp is not a 6-byte varint."""
    if not len(ts_ms) or int(ts_ms.min()) < _SIX_BYTE_LOW or int(ts_ms.max()) >= _SIX_BYTE_HIGH:
        return None
    packed = np.empty(len(ts_ms), dtype=_PACKED_SAMPLE)
    packed["tag"], packed["size"], packed["value_tag"], packed["ts_tag"] = _SAMPLE, 16, _SAMPLE_VALUE, _SAMPLE_TS
    packed["value"] = values
    ts = ts_ms.astype(np.uint64)
    varint = packed["ts"]
    for i in range(5):
        varint[:, i] = ((ts >> np.uint64(7 * i)) & np.uint64(0x7F)) | np.uint64(0x80)
    varint[:, 5] = ts >> np.uint64(35)
    return packed.tobytes()


def _samples(ts_ms: np.ndarray, values: np.ndarray) -> bytes:
    packed = _packed(ts_ms, values)
    if packed is not None:
        return packed
    out = bytearray()
    for t, v in zip(ts_ms.tolist(), values.tolist()):
        out += _field(_SAMPLE, bytes((_SAMPLE_VALUE,)) + struct.pack("<d", v) + bytes((_SAMPLE_TS,)) + _varint(t))
    return bytes(out)


def encode_write_request(series: Iterable[SeriesSamples]) -> bytes:
    """The WriteRequest (uncompressed) holding these series."""
    series = list(series)
    # every sample of the request packed in one pass, then cut per series: a flush holds hundreds
    # of series of a few samples each, and numpy's cost is per call
    packed = _packed(np.concatenate([s.ts_ms for s in series]), np.concatenate([s.values for s in series])) \
        if series else None
    out = bytearray()
    at = 0
    for one in series:
        if packed is not None:
            end = at + len(one.ts_ms) * _PACKED_SAMPLE.itemsize
            samples, at = packed[at:end], end
        else:
            samples = _samples(one.ts_ms, one.values)
        out += _field(_TIMESERIES, one.labels + samples)
    return bytes(out)


def compress(body: bytes) -> bytes:
    """Snappy's block format (not the framed one), as remote write asks."""
    import cramjam  # imported with the feature: a collector without remote write never loads it

    return bytes(cramjam.snappy.compress_raw(body))

