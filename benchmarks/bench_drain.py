"""Cost per drained sample: the native drain against a pure-Python ctypes loop.

Both read the same samples from the same simulated engine with
dcgmGetValuesSince_v2: 8 simulated H100s, the default counters' numeric
fields watched at 100 ms (profiling fields in a field group of their own),
about one second of samples per round.  The node runs in manual mode and is
sampled ten times up front, so every round reads exactly the same samples.

The ctypes baseline does what NVIDIA's Python bindings do: a CFUNCTYPE
callback receiving v1 records declared with ctypes, one Python call and a
few Python objects per record.  It loads the simulator's library file a
second time with ctypes.CDLL; the dynamic linker hands back the library
already loaded, so both paths talk to one embedded engine.

A third benchmark calls the same read with a C callback that only counts
records: the library's own cost per record, which both paths pay.  The
report gives the end-to-end ratio and the ratio of what each path adds on
top of the library.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections import defaultdict

import _workload as w
import pytest
from dcgm_collector.ext._native import ffi, lib

from dcgm_collector import dcgm, engine
from dcgm_collector.collect.drain import drain_into
from dcgm_collector.rings.ring import RingBuffer, SeriesKey

VALUE_FIELDS = (100, 101, 140, 150, 155, 156, 202, 203, 204, 206, 207, 251, 252, 253, 393, 394, 395)
PROFILING_FIELDS = (1001, 1004, 1005, 1009, 1010)
PASSES = 10            # update passes 100 ms apart: one second of samples
SCENARIO_ENV = "DCGM_SIM_SCENARIO"
FE_GPU = int(dcgm.EntityType.GPU)
DCGM_FT_INT64, DCGM_FT_DOUBLE, DCGM_INT64_BLANK, DCGM_FP64_BLANK = ord("i"), ord("d"), 0x7FFFFFFFFFFFFFF0, 2.0**47

_timings: dict[str, float] = {}


_ENUM_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(w.FieldValueV1),
                            ctypes.c_int, ctypes.c_void_p)


class Node:
    def __init__(self, handle: dcgm.Handle) -> None:
        self.handle = handle
        self.group = handle.all_gpus()
        self.gpus = handle.gpu_ids()
        self.field_groups = [handle.create_field_groups(VALUE_FIELDS, "bench-values"),
                             handle.create_field_groups(PROFILING_FIELDS, "bench-profiling")]
        for fields in self.field_groups:
            handle.watch(self.group, fields, update_freq_us=100_000, max_keep_age_s=3600.0)
        for _ in range(PASSES - 1):  # the watch itself took the first pass
            time.sleep(0.105)
            handle.update_all_fields()
        self.rings = [RingBuffer([SeriesKey(FE_GPU, g, f) for g in self.gpus for f in fields.field_ids], 64)
                      for fields in self.field_groups]


@pytest.fixture(scope="module")
def node():
    previous = os.environ.pop(SCENARIO_ENV, None)  # the default node: 8 x H100
    try:
        with dcgm.Handle.embedded("manual", library=engine.library_path()) as handle:
            yield Node(handle)
    finally:
        if previous is not None:
            os.environ[SCENARIO_ENV] = previous


def native_round(node: Node) -> int:
    samples = 0
    for ring, fields in zip(node.rings, node.field_groups):
        result = drain_into(ring, node.handle._h(), node.group.id, fields[0].id, 0)
        assert result.rc == 0
        samples += result.samples
    return samples


def library_round(node: Node) -> int:
    records = 0
    next_since, count = ffi.new("long long *"), ffi.new("int64_t *")
    for fields in node.field_groups:
        assert lib.dcgmc_count_since(node.handle._h(), node.group.id, fields[0].id, 0, next_since, count) == 0
        records += count[0]
    return records


class CtypesReader:
    """dcgmGetValuesSince_v2 through ctypes with a Python callback per record."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.library = ctypes.CDLL(str(engine.library_path()))
        self.library.dcgmGetValuesSince_v2.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
            ctypes.POINTER(ctypes.c_longlong), _ENUM_CB, ctypes.c_void_p,
        ]
        self.library.dcgmGetValuesSince_v2.restype = ctypes.c_int
        self.series: dict[tuple[int, int, int], list] = defaultdict(list)
        self.callback = _ENUM_CB(self._on_values)

    def _on_values(self, entity_group, entity_id, values, count, _user):
        for i in range(count):
            v = values[i]
            if v.status != 0:
                continue
            if v.fieldType == DCGM_FT_DOUBLE:
                number = v.value.dbl
                number = None if number >= DCGM_FP64_BLANK else number
            elif v.fieldType == DCGM_FT_INT64:
                number = v.value.i64
                number = None if number >= DCGM_INT64_BLANK else number
            else:
                continue
            self.series[(entity_group, entity_id, v.fieldId)].append((v.ts, number))
        return 0

    def round(self) -> int:
        self.series.clear()
        next_since = ctypes.c_longlong()
        for fields in self.node.field_groups:
            rc = self.library.dcgmGetValuesSince_v2(self.node.handle._h(), self.node.group.id, fields[0].id, 0,
                                                    ctypes.byref(next_since), self.callback, None)
            assert rc == 0
        return sum(len(s) for s in self.series.values())


def _record(benchmark, name: str, samples: int) -> None:
    seconds = benchmark.stats.stats.median
    _timings[name] = seconds / samples
    benchmark.extra_info["samples_per_round"] = samples
    benchmark.extra_info["samples_per_second"] = round(samples / seconds)
    benchmark.extra_info["ns_per_sample"] = round(seconds / samples * 1e9, 1)
    print(f"\n{name}: {samples} samples per round, {samples / seconds:,.0f} samples/s, "
          f"{seconds / samples * 1e9:.1f} ns per sample")
    if {"native", "ctypes"} <= _timings.keys():
        ratio = _timings["ctypes"] / _timings["native"]
        benchmark.extra_info["native_speedup_vs_ctypes"] = round(ratio, 1)
        print(f"native drain is {ratio:.1f}x faster per sample than the ctypes loop (target >= 20x)")
        if "library" in _timings:
            library = _timings["library"]
            added = (_timings["ctypes"] - library) / max(_timings["native"] - library, 1e-12)
            benchmark.extra_info["library_ns_per_sample"] = round(library * 1e9, 1)
            benchmark.extra_info["added_cost_ratio"] = round(added, 1)
            print(f"the library itself takes {library * 1e9:.1f} ns per sample; on top of it the native drain "
                  f"adds {(_timings['native'] - library) * 1e9:.1f} ns, the ctypes loop "
                  f"{(_timings['ctypes'] - library) * 1e9:.1f} ns ({added:.0f}x)")


def test_library_alone(benchmark, node):
    records = library_round(node)
    assert records == len(node.gpus) * (len(VALUE_FIELDS) + len(PROFILING_FIELDS)) * PASSES
    benchmark(library_round, node)
    _record(benchmark, "library", records)


def test_native_drain(benchmark, node):
    samples = native_round(node)
    assert samples == len(node.gpus) * (len(VALUE_FIELDS) + len(PROFILING_FIELDS)) * PASSES
    benchmark(native_round, node)
    _record(benchmark, "native", samples)


def test_ctypes_python_callback(benchmark, node):
    reader = CtypesReader(node)
    samples = reader.round()
    assert samples == native_round(node)  # same engine, same samples
    benchmark(reader.round)
    _record(benchmark, "ctypes", samples)
