"""The cap on heavy answers in flight and the priority of light requests over them."""

from __future__ import annotations

import threading
import time

import pytest

from dcgm_collector.serve.admission import Admission


def test_at_most_the_slots_are_handed_out_and_a_release_frees_one():
    admission = Admission(heavy_slots=2, queue_s=0.0)
    first, second = admission.heavy(), admission.heavy()
    assert first is not None and second is not None and admission.heavy_in_flight == 2
    assert admission.heavy() is None and admission.refused == 1
    first.release()
    first.release()   # idempotent
    assert admission.heavy_in_flight == 1
    with admission.heavy() as third:
        assert third is not None and admission.heavy_in_flight == 2
    assert admission.heavy_in_flight == 1


def test_a_heavy_request_waits_a_little_for_a_slot_before_it_is_refused():
    admission = Admission(heavy_slots=1, queue_s=0.3)
    held = admission.heavy()
    started = time.monotonic()
    assert admission.heavy() is None
    assert 0.25 <= time.monotonic() - started < 2
    threading.Timer(0.1, held.release).start()
    started = time.monotonic()
    slot = admission.heavy()
    assert slot is not None and time.monotonic() - started < 0.3


def test_heavy_work_pauses_while_a_light_request_runs():
    admission = Admission(max_pause_s=2.0)
    admission.yield_to_light()   # nothing light: no wait
    resumed = []
    with admission.light():
        worker = threading.Thread(target=lambda: (admission.yield_to_light(), resumed.append(time.monotonic())))
        worker.start()
        time.sleep(0.3)
        assert not resumed
        left = time.monotonic()
    worker.join(2)
    assert resumed and resumed[0] >= left


def test_a_pause_is_bounded():
    admission = Admission(max_pause_s=0.1)
    with admission.light():
        started = time.monotonic()
        admission.yield_to_light()
        assert 0.05 <= time.monotonic() - started < 1


def test_there_is_at_least_one_slot():
    with pytest.raises(ValueError):
        Admission(heavy_slots=0)
