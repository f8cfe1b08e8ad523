"""The keys of the live view, applied to its state (the terminal loop itself runs in the tmux system test)."""

from __future__ import annotations

import pytest

pytest.importorskip("blessed")

from dcgm_collector.top.app import handle_key  # noqa: E402
from dcgm_collector.top.render import View  # noqa: E402

IDS = [0, 1, 1, 2]   # GPU 0, GPU 1 and its MIG instance, GPU 2


def test_q_quits_and_s_cycles_the_sort():
    view = View("http://x")
    assert [handle_key(view, "s", "", IDS) and view.sort for _ in range(4)] == ["util", "fb", "power", "gpu"]
    assert handle_key(view, "q", "", IDS) is False


def test_digits_and_arrows_pick_a_gpu_and_escape_closes_its_view():
    view = View("http://x")
    handle_key(view, "2", "", IDS)
    assert (view.selected, view.detail) == (3, True)
    handle_key(view, "1", "", IDS)
    assert view.selected == 1                     # the first entry of GPU 1: the whole GPU
    handle_key(view, "", "KEY_DOWN", IDS)
    assert view.selected == 2
    handle_key(view, "", "KEY_ESCAPE", IDS)
    assert view.detail is False
    handle_key(view, "7", "", IDS)                # no GPU 7: nothing changes
    assert (view.selected, view.detail) == (2, False)
    handle_key(view, "", "KEY_UP", IDS)
    handle_key(view, "", "KEY_UP", IDS)
    handle_key(view, "", "KEY_UP", IDS)
    assert view.selected == 3                     # wraps around


def test_plus_and_minus_step_through_the_spans_and_stop_at_the_ends():
    view = View("http://x")
    spans = []
    for key in "++--" + "-":
        handle_key(view, key, "", IDS)
        spans.append(view.span_s)
    assert spans == [300, 300, 60, 30, 30]


def test_help_opens_with_h_and_any_key_closes_it():
    view = View("http://x")
    handle_key(view, "h", "", IDS)
    assert view.help
    assert handle_key(view, "s", "", IDS) is True
    assert not view.help and view.sort == "gpu"
