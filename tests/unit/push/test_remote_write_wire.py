"""The hand-written WriteRequest decodes with the protobuf library, compiled from our remote_write.proto."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import cramjam
import numpy as np
import pytest

from dcgm_collector.push import wire
from dcgm_collector.push.wire import SeriesSamples, compress, encode_labels, encode_write_request

PROTO = Path(wire.__file__).with_name("remote_write.proto")


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    """The module protoc makes of remote_write.proto."""
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("proto")
    assert protoc.main(["protoc", f"-I{PROTO.parent}", f"--python_out={out}", PROTO.name]) == 0
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("remote_write_pb2")
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("remote_write_pb2", None)


def decoded(messages, body: bytes) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
    request = messages.WriteRequest()
    request.ParseFromString(body)
    return [({label.name: label.value for label in series.labels}, [(s.timestamp, s.value) for s in series.samples])
            for series in request.timeseries]


def test_a_request_decodes_to_the_series_and_samples_written(messages):
    now_ms = 1_796_000_000_123
    power = SeriesSamples(encode_labels("DCGM_FI_DEV_POWER_USAGE", (("gpu", "0"), ("UUID", "GPU-a"))),
                          np.array([now_ms, now_ms + 100]), np.array([301.5, -0.0]))
    xid = SeriesSamples(encode_labels("DCGM_FI_DEV_XID_ERRORS", (("gpu", "1"), ("err_msg", "é \"q\"\n")),
                                      extra=(("cluster", "c1"), ("gpu", "ignored"))),
                        np.array([now_ms]), np.array([79.0]))
    body = encode_write_request([power, xid])
    assert decoded(messages, body) == [
        ({"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": "0", "UUID": "GPU-a"}, [(now_ms, 301.5), (now_ms + 100, 0.0)]),
        ({"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "1", "err_msg": "é \"q\"\n", "cluster": "c1"}, [(now_ms, 79.0)]),
    ]
    request = messages.WriteRequest()
    request.ParseFromString(body)
    assert [label.name for label in request.timeseries[0].labels] == ["UUID", "__name__", "gpu"]   # sorted by name


@pytest.mark.parametrize("ts_ms", [0, 1, 127, 128, 2**35 - 1, 2**42, 2**62, -5])
def test_timestamps_outside_the_common_range_encode_too(messages, ts_ms):
    body = encode_write_request([SeriesSamples(encode_labels("x", ()), np.array([ts_ms]), np.array([1.0]))])
    assert decoded(messages, body) == [({"__name__": "x"}, [(ts_ms, 1.0)])]


def test_many_samples_and_long_labels(messages):
    ts = np.arange(1_796_000_000_000, 1_796_000_000_000 + 5000 * 100, 100)
    values = np.random.default_rng(1).normal(size=len(ts))
    labels = (("pod", "p" * 300),)
    body = encode_write_request([SeriesSamples(encode_labels("y", labels), ts, values)])
    [(got_labels, got)] = decoded(messages, body)
    assert got_labels == {"__name__": "y", "pod": "p" * 300}
    assert got == list(zip(ts.tolist(), values.tolist()))


def test_compression_is_snappy_block_format():
    body = encode_write_request([SeriesSamples(encode_labels("z", ()), np.array([1_796_000_000_000]),
                                               np.array([2.0]))]) * 50
    assert bytes(cramjam.snappy.decompress_raw(compress(body))) == body
