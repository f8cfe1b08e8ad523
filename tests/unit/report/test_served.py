"""The reports the collector serves: the page ``report -o`` writes, kept per file version, refused past the bounds."""

from __future__ import annotations

import logging
import sys
import threading

import pytest
from support import write_recording

from dcgm_collector.model import PYARROW_INSTALL_HINT, RECORDING_FORMAT_VERSION
from dcgm_collector.report.page import html_page
from dcgm_collector.report.recording import read_recording
from dcgm_collector.report.served import RecordingFile, ReportPages, ReportRefused

pytest.importorskip("pyarrow")

NAME = "recording-20270115T080000.000000Z-xid.parquet"
SIDECAR = {"format_version": RECORDING_FORMAT_VERSION,
           "trigger": {"kind": "xid", "time": "2027-01-15T08:00:00.000000Z", "time_us": 1_800_000_000_000_000,
                       "gpus": [0], "detail": "XID 13"},
           "gpus": [{"gpu": 0, "model": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0"}]}


def recording(tmp_path, rows=None, version=(1,)) -> RecordingFile:
    path = tmp_path / NAME
    write_recording(path, rows or [(t, 0, 155, 300.0) for t in range(-10, 3)] + [(0.0, 0, 230, 13.0)],
                    SIDECAR, start=1_800_000_000.0)
    return RecordingFile(NAME, str(path), version)


def failures_line(pages: ReportPages) -> str:
    parts: list[str] = []
    pages.write_families(parts, openmetrics=False)
    return parts[0].splitlines()[-1]


def test_the_page_is_the_one_the_command_writes_and_is_built_once_per_version(tmp_path):
    pages = ReportPages()
    rec = recording(tmp_path)
    body = pages.page(rec)
    assert body == html_page(read_recording(rec.path)).encode()
    assert pages.page(rec) is body and pages.built == 1   # asked again: the page kept
    # the recording replaced (a new size or time): built again, of the new file
    newer = recording(tmp_path, [(t, 0, 155, 350.0) for t in range(-10, 3)], version=(2,))
    again = pages.page(newer)
    assert pages.built == 2 and again != body and again == html_page(read_recording(newer.path)).encode()
    assert failures_line(pages) == "dcgm_collector_report_failures_total 0" and pages.problem() is None


def test_a_recording_of_more_samples_than_the_cap_is_refused_without_being_read(tmp_path):
    pages = ReportPages(max_rows=10)
    with pytest.raises(ReportRefused) as refused:
        pages.page(recording(tmp_path))
    assert refused.value.status == 413
    assert str(refused.value) == (f"413 Content Too Large: {NAME} holds 14 samples, over the 10 a report is built "
                                  "of here: download it and run dcgm-collector report on it")
    assert pages.built == 0 and pages.failures == 0


def test_a_file_that_is_not_a_recording_is_a_counted_failure_of_one_line_until_a_report_builds(tmp_path, caplog):
    pages = ReportPages()
    bad = tmp_path / "bad" / NAME
    bad.parent.mkdir()
    bad.write_bytes(b"not parquet\n")
    with caplog.at_level(logging.ERROR, "dcgm_collector"), pytest.raises(ReportRefused) as refused:
        pages.page(RecordingFile(NAME, str(bad), (1,)))
    assert refused.value.status == 500
    line = str(refused.value)
    assert line.startswith(f"500 Internal Server Error: no report: {NAME}: not a flight recording: not a Parquet")
    assert "\n" not in line and str(tmp_path) not in line   # the file's name, not where the folder is
    why = line.removeprefix("500 Internal Server Error: no report: ")
    assert failures_line(pages) == "dcgm_collector_report_failures_total 1"
    assert pages.problem() == f"reports: building a report failed: {why} (1 failure)"
    assert [r.getMessage() for r in caplog.records] == [f"building a report failed: {why}"]
    with pytest.raises(ReportRefused):
        pages.page(RecordingFile(NAME, str(bad), (1,)))   # not kept: asked again, tried again
    assert pages.problem().endswith("(2 failures)") and len(caplog.records) == 1   # the same cause logged once
    pages.page(recording(tmp_path))
    assert pages.problem() is None and failures_line(pages) == "dcgm_collector_report_failures_total 2"


def test_a_bug_while_building_is_a_500_and_its_traceback_logged(tmp_path, caplog, monkeypatch):
    def broken(rec):
        raise KeyError("field")

    monkeypatch.setattr("dcgm_collector.report.page.html_page", broken)
    pages = ReportPages()
    with caplog.at_level(logging.ERROR, "dcgm_collector"), pytest.raises(ReportRefused) as refused:
        pages.page(recording(tmp_path))
    assert str(refused.value) == f"500 Internal Server Error: no report: {NAME}: KeyError: 'field'"
    [record] = caplog.records
    assert record.exc_info is not None and pages.failures == 1


def test_a_second_report_waits_for_the_one_building_then_is_refused_with_retry_after(tmp_path):
    pages = ReportPages(wait_s=0.05)
    building = pages._building   # a report of another recording being built
    building.acquire()
    try:
        with pytest.raises(ReportRefused) as refused:
            pages.page(recording(tmp_path))
    finally:
        building.release()
    assert refused.value.status == 503 and refused.value.headers == {"Retry-After": "2"}
    assert str(refused.value) == "503 Service Unavailable: busy building another report; retry in 2 s"
    assert pages.page(recording(tmp_path)).startswith(b"<!DOCTYPE html>")   # once it is done


def test_concurrent_requests_for_one_report_build_it_once(tmp_path):
    pages = ReportPages()
    rec = recording(tmp_path)
    bodies: list[bytes] = []
    threads = [threading.Thread(target=lambda: bodies.append(pages.page(rec))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(bodies) == 4 and len(set(bodies)) == 1 and pages.built == 1


def test_without_pyarrow_the_answer_names_the_package_to_install(tmp_path, monkeypatch):
    rec = recording(tmp_path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)   # import pyarrow.parquet raises ImportError
    with pytest.raises(ReportRefused) as refused:
        ReportPages().page(rec)
    assert refused.value.status == 501
    assert str(refused.value).startswith("501 Not Implemented: building a report needs pyarrow (")
    assert str(refused.value).endswith(f"): {PYARROW_INSTALL_HINT}")
