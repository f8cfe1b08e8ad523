"""counters.csv: one case per grammar rule, one per error, and fuzzing.

The grammar is dcgm-exporter 4.8's (Go encoding/csv with '#' comments, three
space-trimmed fields) plus our optional fourth column; see the docstring of
dcgm_collector.catalog.counters for the rules and the deliberate differences.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcgm_collector.catalog.counters import (
    EXPORTER_COUNTERS,
    MAX_COUNTERS_FILE_BYTES,
    Counter,
    CountersError,
    CounterSet,
    default_counters_path,
    load_counters,
    parse_counters,
    split_lines,
)

PATH = "f.csv"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
UTIL = "DCGM_FI_DEV_GPU_UTIL"


def row(name: str, field_id: int | None, prom_type: str, help_text: str, line: int,
        aggregations: tuple[str, ...] = ()) -> tuple:
    return (name, field_id, prom_type, help_text, aggregations, line)


def summary(counters: CounterSet) -> list[tuple]:
    return [(c.name, c.field.id if c.field else None, c.prom_type, c.help, c.aggregations, c.line)
            for c in counters]


# (text, the rows it gives), one case per rule of the grammar
ACCEPTED = [
    pytest.param(f"# a comment\n{TEMP}, gauge, t\n", [row(TEMP, 150, "gauge", "t", 2)],
                 id="comment-in-column-0"),
    pytest.param(f"#{TEMP}, gauge, t\n{UTIL}, gauge, u", [row(UTIL, 203, "gauge", "u", 2)],
                 id="commented-out-row"),
    pytest.param(f"{TEMP}, gauge, t # not a comment\n", [row(TEMP, 150, "gauge", "t # not a comment", 1)],
                 id="hash-after-data-is-help"),
    pytest.param(f"\n\n{TEMP}, gauge, t\n\n\n{UTIL}, gauge, u\n\n", [
        row(TEMP, 150, "gauge", "t", 3), row(UTIL, 203, "gauge", "u", 6)], id="blank-lines-skipped"),
    pytest.param(f"# c\r\n\r\n{TEMP}, gauge, t\r\n{UTIL}, gauge, u\r\n", [
        row(TEMP, 150, "gauge", "t", 3), row(UTIL, 203, "gauge", "u", 4)], id="crlf-line-endings"),
    pytest.param(f"{TEMP}, gauge, t\r", [row(TEMP, 150, "gauge", "t", 1)], id="cr-at-end-of-file"),
    pytest.param(f"{TEMP}, gauge, t", [row(TEMP, 150, "gauge", "t", 1)], id="no-final-newline"),
    pytest.param(f"{TEMP}, gauge, a\rb\n", [row(TEMP, 150, "gauge", "a\rb", 1)], id="lone-cr-is-data"),
    pytest.param(f"\ufeff{TEMP}, gauge, t\n", [row(TEMP, 150, "gauge", "t", 1)], id="utf8-bom-ignored"),
    pytest.param(f'{TEMP}, gauge,"hot, very hot"\n', [row(TEMP, 150, "gauge", "hot, very hot", 1)],
                 id="quoted-help-with-comma"),
    pytest.param(f'{TEMP}, gauge,"say ""hot"" twice"\n', [row(TEMP, 150, "gauge", 'say "hot" twice', 1)],
                 id="doubled-quote-escape"),
    pytest.param(f'"{TEMP}","gauge",""\n', [row(TEMP, 150, "gauge", "", 1)], id="every-field-quoted"),
    pytest.param(f'{TEMP}, gauge,"  padded  "\n', [row(TEMP, 150, "gauge", "padded", 1)],
                 id="quoted-field-trimmed-too"),
    pytest.param(f"{TEMP}, gauge,\n", [row(TEMP, 150, "gauge", "", 1)], id="empty-help"),
    pytest.param(f'{TEMP}, gauge,"two\nlines"\n{UTIL}, gauge, u\n', [
        row(TEMP, 150, "gauge", "two\nlines", 1), row(UTIL, 203, "gauge", "u", 3)], id="multi-line-quoted-help"),
    pytest.param(f'{TEMP}, gauge,"a\n# b\n\nc"\n', [row(TEMP, 150, "gauge", "a\n# b\n\nc", 1)],
                 id="hash-and-blank-lines-inside-quotes-are-data"),
    pytest.param(f'{TEMP}, gauge,"a\r\nb"\r\n', [row(TEMP, 150, "gauge", "a\nb", 1)], id="crlf-inside-quotes"),
    pytest.param(f"   {TEMP}   ,   gauge   ,   t t   \n", [row(TEMP, 150, "gauge", "t t", 1)],
                 id="spaces-trimmed"),
    pytest.param(f"{TEMP}, gauge,\tt\t\n", [row(TEMP, 150, "gauge", "\tt\t", 1)], id="tabs-not-trimmed"),
    pytest.param(f"{TEMP}, gauge, t\n{UTIL}, gauge, u, max\n", [
        row(TEMP, 150, "gauge", "t", 1), row(UTIL, 203, "gauge", "u", 2, ("max",))], id="3-and-4-columns-mixed"),
    pytest.param(f"{UTIL}, gauge, u, avg|max|min\n", [row(UTIL, 203, "gauge", "u", 1, ("min", "max", "avg"))],
                 id="aggregations-in-canonical-order"),
    pytest.param(f"{UTIL}, gauge, u,  max | avg  \n", [row(UTIL, 203, "gauge", "u", 1, ("max", "avg"))],
                 id="aggregations-spaces-trimmed"),
    pytest.param(f'{UTIL}, gauge, u,"min|max"\n', [row(UTIL, 203, "gauge", "u", 1, ("min", "max"))],
                 id="aggregations-quoted"),
    pytest.param(f"{TEMP}, gauge, t\n", [row(TEMP, 150, "gauge", "t", 1)], id="type-gauge"),
    pytest.param("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, e\n", [
        row("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156, "counter", "e", 1)], id="type-counter"),
    pytest.param(f"{TEMP}, histogram, t\n", [row(TEMP, 150, "histogram", "t", 1)], id="type-histogram"),
    pytest.param(f"{TEMP}, summary, t\n", [row(TEMP, 150, "summary", "t", 1)], id="type-summary"),
    pytest.param("DCGM_FI_DRIVER_VERSION, label, Driver Version\n", [
        row("DCGM_FI_DRIVER_VERSION", 1, "label", "Driver Version", 1)], id="type-label-string-field"),
    pytest.param("DCGM_FI_DEV_COMPUTE_MODE, label, mode\n", [
        row("DCGM_FI_DEV_COMPUTE_MODE", 65, "label", "mode", 1)], id="type-label-numeric-field"),
    pytest.param("DCGM_EXP_XID_ERRORS_COUNT, gauge, x\nDCGM_EXP_CLOCK_EVENTS_COUNT, Counter, c\n"
                 "DCGM_EXP_GPU_HEALTH_STATUS, anything, h\nDCGM_EXP_P2P_STATUS, , p\n", [
                     row("DCGM_EXP_XID_ERRORS_COUNT", None, "gauge", "x", 1),
                     row("DCGM_EXP_CLOCK_EVENTS_COUNT", None, "Counter", "c", 2),
                     row("DCGM_EXP_GPU_HEALTH_STATUS", None, "anything", "h", 3),
                     row("DCGM_EXP_P2P_STATUS", None, "", "p", 4)], id="exporter-rows-any-type"),
    pytest.param("dcgm_gpu_temp, gauge, t\n", [row("dcgm_gpu_temp", 150, "gauge", "t", 1)], id="legacy-name"),
    pytest.param("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, gauge, r\n", [
        row("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112, "gauge", "r", 1)], id="alias-name"),
    pytest.param("DCGM_FI_DEV_GPU_TEMP_CELSIUS, gauge, t\n", [
        row("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 150, "gauge", "t", 1)], id="dcgm-4.6-name"),
    pytest.param("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, b\n", [
        row("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449, "counter", "b", 1)], id="deprecated-alias-name"),
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED)
def test_accepted(text: str, expected: list[tuple]) -> None:
    counters = parse_counters(text, PATH)
    assert counters.path == PATH
    assert summary(counters) == expected
    for counter in counters:
        assert counter.path == PATH
        assert (counter.exporter == counter.name) == (counter.field is None)


def closest_of(name: str) -> str:
    return f'unknown field name "{name}"; closest: '


# (text, the exact error), one case per error
REJECTED = [
    pytest.param("", "f.csv:1: no counters defined: the file is empty", id="empty-file"),
    pytest.param("\n\n", "f.csv:1: no counters defined: the file is empty", id="blank-lines-only"),
    pytest.param("# a\n\n# b\n", "f.csv:1: no counters defined: the file holds only comments and blank lines",
                 id="comments-only"),
    pytest.param(f"# ok\n  # indented\n{TEMP}, gauge, t\n",
                 "f.csv:2: expected 3 fields (name, type, help) or 4 (name, type, help, aggregations), found 1; "
                 "a comment's '#' must be the first character of the line", id="indented-comment"),
    pytest.param("   \n", "f.csv:1: expected 3 fields (name, type, help) or 4 (name, type, help, aggregations), "
                 "found 1", id="line-of-spaces-is-a-record"),
    pytest.param(f"{TEMP}, gauge\n", "f.csv:1: expected 3 fields (name, type, help) or 4 "
                 "(name, type, help, aggregations), found 2", id="two-columns"),
    pytest.param(f"{TEMP}, gauge, hot, very, hot\n", "f.csv:1: expected 3 fields (name, type, help) or 4 "
                 "(name, type, help, aggregations), found 5; put help text that contains commas in double quotes",
                 id="five-columns"),
    pytest.param(f"{TEMP}, gauge, t,\n", "f.csv:1: empty fourth column; remove the trailing comma or list "
                 "aggregations (min|max|avg)", id="trailing-comma"),
    pytest.param(f'{TEMP}, gauge, say "hot"\n', 'f.csv:1: quote inside an unquoted field (column 34); a quoted '
                 'field must start right after the comma, and a quote inside it is written ""', id="bare-quote"),
    pytest.param(f'{TEMP}, gauge, "hot, very hot"\n', 'f.csv:1: quote inside an unquoted field after leading '
                 'spaces (column 30); a quoted field must start right after the comma, and a quote inside it is '
                 'written ""', id="space-before-quote"),
    pytest.param(f'{TEMP}, gauge,"hot" (in C)\n', 'f.csv:1: unexpected " " after the closing quote of a field '
                 '(column 34); a quote inside a quoted field is written ""', id="text-after-closing-quote"),
    pytest.param(f'{UTIL}, gauge, u\n{TEMP}, gauge,"hot\nvery hot\n', "f.csv:2: quoted field is never closed",
                 id="unclosed-quote"),
    pytest.param(f'{TEMP}, gauge,"a\nb"x\n', 'f.csv:2: unexpected "x" after the closing quote of a field '
                 '(column 3); a quote inside a quoted field is written ""', id="quote-error-on-a-continuation-line"),
    pytest.param(f'{UTIL}, gauge,"a\nb\nc"\n\nDCGM_FI_DEV_GPU_TEMPP, gauge, t\n',
                 "f.csv:5: " + closest_of("DCGM_FI_DEV_GPU_TEMPP")
                 + "DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_GPU_TEMP_LIMIT, DCGM_FI_DEV_GPU_NAME",
                 id="unknown-name-real-line-after-multi-line-field"),
    pytest.param("# c\r\n\r\nDCGM_FI_DEV_GPU_TEMPP, gauge, t\r\n",
                 "f.csv:3: " + closest_of("DCGM_FI_DEV_GPU_TEMPP")
                 + "DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_GPU_TEMP_LIMIT, DCGM_FI_DEV_GPU_NAME",
                 id="unknown-name-line-with-crlf"),
    pytest.param("dcgm_fi_dev_gpu_temp, gauge, t\n", "f.csv:1: " + closest_of("dcgm_fi_dev_gpu_temp")
                 + "DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_GPU_TEMP_LIMIT, DCGM_FI_DEV_GPU_NAME",
                 id="names-are-case-sensitive"),
    pytest.param(f"{TEMP}\t, gauge, t\n", 'f.csv:1: unknown field name "DCGM_FI_DEV_GPU_TEMP\\t" (only spaces '
                 "around a field are trimmed, not tabs); closest: DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_GPU_TEMP_LIMIT, "
                 "DCGM_FI_DEV_GPU_NAME", id="tab-around-name"),
    pytest.param("DCGM_EXP_XID_ERRORS_COUNTXXX, gauge, x\n", "f.csv:1: " + closest_of("DCGM_EXP_XID_ERRORS_COUNTXXX")
                 + "DCGM_EXP_XID_ERRORS_COUNT, DCGM_EXP_CLOCK_EVENTS_COUNT, dcgm_xid_errors",
                 id="unknown-exporter-counter"),
    pytest.param("QQQQQQQ, gauge, x\n", 'f.csv:1: unknown field name "QQQQQQQ" (not a DCGM field name, alias or '
                 "legacy name, nor a DCGM_EXP_* counter)", id="unknown-name-nothing-close"),
    pytest.param(", gauge, x\n", "f.csv:1: missing field name", id="missing-name"),
    pytest.param("DCGM_FI_UNKNOWN, gauge, x\n", "f.csv:1: DCGM_FI_UNKNOWN is DCGM's \"no field\" placeholder "
                 "(id 0): there is nothing to collect", id="placeholder-field"),
    pytest.param(f"{TEMP}, Gauge, t\n", 'f.csv:1: unknown metric type "Gauge" for DCGM_FI_DEV_GPU_TEMP; expected '
                 "one of gauge, counter, histogram, summary, label (case-sensitive: did you mean gauge?)",
                 id="type-is-case-sensitive"),
    pytest.param(f"{TEMP}, gaugee, t\n", 'f.csv:1: unknown metric type "gaugee" for DCGM_FI_DEV_GPU_TEMP; expected '
                 "one of gauge, counter, histogram, summary, label", id="unknown-type"),
    pytest.param(f"{TEMP}, , t\n", 'f.csv:1: unknown metric type "" for DCGM_FI_DEV_GPU_TEMP; expected '
                 "one of gauge, counter, histogram, summary, label", id="missing-type"),
    pytest.param("DCGM_FI_DEV_SERIAL, gauge, s\n", "f.csv:1: DCGM_FI_DEV_SERIAL is a string field, so it can only "
                 "be a label, not a gauge", id="string-field-as-gauge"),
    pytest.param("DCGM_FI_DRIVER_VERSION, counter, s\n", "f.csv:1: DCGM_FI_DRIVER_VERSION is a string field, so it "
                 "can only be a label, not a counter", id="string-field-as-counter"),
    pytest.param("DCGM_FI_DEV_GRAPHICS_PIDS, label, p\n", "f.csv:1: DCGM_FI_DEV_GRAPHICS_PIDS is a binary field: it "
                 "has no value a metric or label can show", id="binary-field"),
    pytest.param(f"{UTIL}, gauge, u, mean\n", 'f.csv:1: unknown aggregation "mean"; expected min, max, avg '
                 "separated by '|'", id="bad-aggregation"),
    pytest.param(f"{UTIL}, gauge, u, MAX\n", 'f.csv:1: unknown aggregation "MAX"; expected min, max, avg '
                 "separated by '|'", id="aggregations-are-case-sensitive"),
    pytest.param(f"{UTIL}, gauge, u, min||max\n", 'f.csv:1: unknown aggregation ""; expected min, max, avg '
                 "separated by '|'", id="empty-aggregation"),
    pytest.param(f"{UTIL}, gauge, u, min,max\n", "f.csv:1: expected 3 fields (name, type, help) or 4 "
                 "(name, type, help, aggregations), found 5; put help text that contains commas in double quotes",
                 id="aggregations-separated-by-comma"),
    pytest.param(f"{UTIL}, gauge, u, max|max\n", "f.csv:1: aggregation max listed twice", id="aggregation-twice"),
    pytest.param("DCGM_FI_DRIVER_VERSION, label, v, max\n", "f.csv:1: DCGM_FI_DRIVER_VERSION: a label row cannot "
                 "have aggregations", id="aggregations-on-label"),
    pytest.param("DCGM_EXP_XID_ERRORS_COUNT, gauge, x, max\n", "f.csv:1: DCGM_EXP_XID_ERRORS_COUNT: aggregations "
                 "are not available for DCGM_EXP_* counters", id="aggregations-on-exporter-row"),
    pytest.param("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, e, max\n", "f.csv:1: "
                 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is a counter: window aggregates (min|max|avg) are for gauges; "
                 "query a counter with increase() or rate()", id="aggregations-on-counter"),
    pytest.param(f"\ufeff{TEMP}, gauge\n", "f.csv:1: expected 3 fields (name, type, help) or 4 "
                 "(name, type, help, aggregations), found 2", id="error-on-first-line-after-bom"),
    pytest.param("DCGM_FI\x00_DEV, gauge, t\n", 'f.csv:1: unknown field name "DCGM_FI\\x00_DEV"; closest: '
                 "DCGM_FI_DEV_NAME, DCGM_FI_DEV_UUID, DCGM_FI_DEV_BRAND", id="control-character-escaped"),
]


@pytest.mark.parametrize(("text", "message"), REJECTED)
def test_rejected(text: str, message: str) -> None:
    with pytest.raises(CountersError) as caught:
        parse_counters(text, PATH)
    assert str(caught.value) == message
    assert caught.value.path == PATH
    assert message == f"{PATH}:{caught.value.line}: {caught.value.message}"
    assert isinstance(caught.value, ValueError)


DUPLICATES = [
    pytest.param(f"{TEMP}, gauge, t\n\n{TEMP}, gauge, again\n", "f.csv:3: DCGM_FI_DEV_GPU_TEMP is field 150, already "
                 "listed at line 1: using line 1, skipping line 3", id="duplicate-row"),
    pytest.param(f"{TEMP}, gauge, t\ndcgm_gpu_temp, gauge, again\n", "f.csv:2: dcgm_gpu_temp is field 150, already "
                 "listed at line 1 as DCGM_FI_DEV_GPU_TEMP: using line 1, skipping line 2",
                 id="duplicate-through-legacy-name"),
    pytest.param(f"{TEMP}, label, t\n{TEMP}, gauge, again\n", "f.csv:2: DCGM_FI_DEV_GPU_TEMP is field 150, already "
                 "listed at line 1: using line 1, skipping line 2", id="duplicate-label-and-value"),
    pytest.param("DCGM_EXP_P2P_STATUS, gauge, t\nDCGM_EXP_P2P_STATUS, gauge, again\n", "f.csv:2: DCGM_EXP_P2P_STATUS "
                 "is DCGM_EXP_P2P_STATUS, already listed at line 1: using line 1, skipping line 2",
                 id="duplicate-exporter-row"),
]


@pytest.mark.parametrize(("text", "warning"), DUPLICATES)
def test_a_field_named_twice_keeps_the_first_row_and_warns_once(text: str, warning: str) -> None:
    counters = parse_counters(text, PATH)
    assert counters.warnings == (warning,)
    assert len(counters) == 1
    (first,) = counters
    assert (first.line, first.help) == (1, "t")


def test_a_row_named_twice_is_still_checked() -> None:
    with pytest.raises(CountersError) as caught:
        parse_counters(f"{TEMP}, gauge, t\n{TEMP}, gaugee, t\n", PATH)
    assert str(caught.value).startswith("f.csv:2: unknown metric type")


def test_nvidia_1x_file_pcie_row_twice_in_lower_case() -> None:
    # the 1.x compatibility file lists its PCIe transmit row twice, in lower case
    text = ("dcgm_fi_prof_pcie_tx_bytes, counter, The number of bytes of active pcie tx data.\n"
            "dcgm_fi_prof_pcie_rx_bytes, counter, The number of bytes of active pcie rx data.\n"
            "dcgm_fi_prof_pcie_tx_bytes, counter, The number of bytes of active pcie tx data.\n")
    counters = parse_counters(text, PATH)
    assert [c.name for c in counters] == ["dcgm_fi_prof_pcie_tx_bytes", "dcgm_fi_prof_pcie_rx_bytes"]
    assert counters.warnings == ("f.csv:3: dcgm_fi_prof_pcie_tx_bytes is field 1009, already listed at line 1: "
                                 "using line 1, skipping line 3",)


def test_split_lines_follows_go() -> None:
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\r\nb\r") == ["a", "b"]
    assert split_lines("a\n\nb") == ["a", "", "b"]
    assert split_lines("a\rb\r\r\n") == ["a\rb\r"]


# --- the set -------------------------------------------------------------------

MIXED = f"""DCGM_FI_DEV_SM_CLOCK, gauge, clock
DCGM_FI_DRIVER_VERSION, label, driver
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, gr, max
DCGM_EXP_XID_ERRORS_COUNT, gauge, xids
DCGM_FI_PROF_SM_ACTIVE, gauge, sm
{TEMP}, gauge, temp, max|avg
DCGM_FI_DEV_SERIAL, label, serial
"""


def test_counter_set_views() -> None:
    counters = parse_counters(MIXED, PATH)
    assert len(counters) == 7
    assert [c.name for c in counters.field_counters()] == [
        "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", TEMP]
    assert [c.name for c in counters.label_counters()] == ["DCGM_FI_DRIVER_VERSION", "DCGM_FI_DEV_SERIAL"]
    assert [c.exporter for c in counters.exporter_counters()] == ["DCGM_EXP_XID_ERRORS_COUNT"]
    assert counters.field_ids() == (100, 1, 1001, 1002, 150, 53)
    assert all(isinstance(c, Counter) for c in counters)


def test_without_unsupported_profiling_warns_once_per_dropped_row() -> None:
    counters = parse_counters(MIXED, PATH)
    warnings: list[str] = []
    kept = counters.without_unsupported_profiling({1001}, warnings.append)
    assert warnings == ["f.csv:5: skipping DCGM_FI_PROF_SM_ACTIVE: profiling metric not supported by the GPUs"]
    assert kept.field_ids() == (100, 1, 1001, 150, 53)
    assert kept.path == PATH
    assert counters.field_ids() == (100, 1, 1001, 1002, 150, 53)  # the original is unchanged
    nothing: list[str] = []
    assert len(counters.without_unsupported_profiling(set(), nothing.append)) == 5
    assert len(nothing) == 2


@pytest.mark.parametrize("name", ["default-counters.csv", "dcp-metrics.csv"])
def test_shipped_files_parse(name: str) -> None:
    counters = load_counters(default_counters_path(name))
    assert len(counters) == 26
    # dcgm-exporter's files type NVLink throughput counter; DCGM's value is a rate, so ours type it gauge
    assert [c.prom_type for c in counters].count("gauge") == 21
    assert [c.prom_type for c in counters].count("counter") == 4
    assert counters.counters_served_as_gauges() == ()
    assert [c.name for c in counters.label_counters()] == ["DCGM_FI_DRIVER_VERSION"]
    assert counters.exporter_counters() == ()
    assert {1001, 1004, 1005, 1009, 1010} <= set(counters.field_ids())


def test_default_counters_path_only_knows_shipped_files() -> None:
    with pytest.raises(ValueError, match="no shipped counters file"):
        default_counters_path("nope.csv")


def test_load_counters(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_bytes(f"{TEMP}, gauge, t\r\n".encode())
    assert summary(load_counters(good)) == [row(TEMP, 150, "gauge", "t", 1)]
    assert load_counters(good).path == str(good)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(f"# caf\xc3\xa9\n{TEMP}, gauge, \xff\n".encode("latin-1"))
    with pytest.raises(CountersError) as caught:
        load_counters(bad)
    assert str(caught.value) == f"{bad}:2: not UTF-8 text (byte 0xff)"
    with pytest.raises(OSError):
        load_counters(tmp_path / "missing.csv")


@pytest.mark.timeout(10)   # a FIFO opened for reading without O_NONBLOCK waits for a writer forever
@pytest.mark.parametrize("kind, make", [
    ("a FIFO", lambda path: os.mkfifo(path)),
    ("a directory", lambda path: path.mkdir()),
    ("a character device", lambda path: path.symlink_to("/dev/zero")),
    ("a socket", lambda path: socket.socket(socket.AF_UNIX).bind(str(path))),
])
def test_load_counters_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str, make) -> None:
    path = tmp_path / "counters.csv"
    make(path)
    with pytest.raises(CountersError) as caught:
        load_counters(path)
    assert str(caught.value) == f"{path}: not a regular file ({kind})"


def test_load_counters_refuses_files_over_1_mib(tmp_path: Path) -> None:
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as out:
        out.write(f"{TEMP}, gauge, t\n".encode())
        out.truncate(8 << 30)   # sparse: 8 GiB that take no disk and must not be read
    with pytest.raises(CountersError) as caught:
        load_counters(huge)
    assert str(caught.value) == f"{huge}: larger than 1 MiB"
    # 1 MiB itself is fine (dcgm-exporter's files are about 10 KB)
    full = tmp_path / "full.csv"
    first = f"{TEMP}, gauge, t\n".encode()
    full.write_bytes(first + b"#" * (MAX_COUNTERS_FILE_BYTES - len(first) - 1) + b"\n")
    assert full.stat().st_size == 1 << 20
    assert summary(load_counters(full)) == [row(TEMP, 150, "gauge", "t", 1)]


# --- fuzzing: only clean, one-line errors ----------------------------------------

FUZZ_PATH = "fuzz.csv"
SHIPPED_TEXT = Path(default_counters_path()).read_text(encoding="utf-8")
SIGNIFICANT = ',"#| \t\r\n\ufeffxX_' + "".join(EXPORTER_COUNTERS[0][:8])


def check_parse(text: str) -> None:
    try:
        counters = parse_counters(text, FUZZ_PATH)
    except CountersError as error:
        message = str(error)
        assert message.startswith(FUZZ_PATH + ":")
        assert message.splitlines() == [message]
        assert message == f"{FUZZ_PATH}:{error.line}: {error.message}"
        assert 1 <= error.line <= max(1, len(split_lines(text.removeprefix("\ufeff"))))
    else:
        assert len(counters) > 0
        line_count = len(split_lines(text))
        for counter in counters:
            assert 1 <= counter.line <= line_count
        assert len(set(counters.field_ids())) == len(counters.field_ids())


fuzz_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fuzz_settings
@given(data=st.binary(max_size=400), errors=st.sampled_from(["replace", "surrogateescape", "ignore"]))
def test_fuzz_random_bytes(data: bytes, errors: str) -> None:
    check_parse(data.decode("utf-8", errors=errors))


@fuzz_settings
@given(text=st.lists(st.sampled_from(list(SIGNIFICANT) + [TEMP, "gauge", "label", "max|min"]), max_size=60)
       .map("".join))
def test_fuzz_csv_significant_text(text: str) -> None:
    check_parse(text)


@st.composite
def mutated_shipped_file(draw: st.DrawFn) -> str:
    """The shipped default file after a few random edits of characters and lines."""
    lines = SHIPPED_TEXT.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["insert", "delete", "repeat", "drop-line", "repeat-line", "swap-lines"]))
        line = lines[index]
        if edit in ("insert", "delete", "repeat"):
            at = draw(st.integers(0, len(line)))
            if edit == "insert":
                char = draw(st.one_of(st.sampled_from(list(SIGNIFICANT)), st.characters()))
                lines[index] = line[:at] + char + line[at:]
            elif edit == "delete":
                lines[index] = line[:at] + line[at + 1:]
            else:
                lines[index] = line[:at] + line[at:at + 1] * 2 + line[at + 1:]
        elif edit == "drop-line":
            del lines[index]
            if not lines:
                lines = [""]
        elif edit == "repeat-line":
            lines.insert(index, line)
        else:
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
    return "\n".join(lines)


@fuzz_settings
@given(text=mutated_shipped_file())
def test_fuzz_mutated_default_file(text: str) -> None:
    check_parse(text)
