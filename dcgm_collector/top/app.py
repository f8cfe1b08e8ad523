"""The live ``top`` screen: the terminal loop and its keys, with blessed (the ``top`` extra)."""

from __future__ import annotations

import time

import blessed

from dcgm_collector.top.client import TopError
from dcgm_collector.top.feed import Feed
from dcgm_collector.top.render import SORTS, SPANS_S, View, screen, sorted_gpus

__all__ = ["handle_key", "run"]


def handle_key(view: View, key: str, name: str, gpu_ids: list[int]) -> bool:
    """Applies one key to the view; False when it asks to quit.

    ``gpu_ids``: the gpu id of each GPU or MIG instance as listed (a digit opens the first one of that GPU).
    """
    if view.help:
        view.help = False
        return key != "q"
    if key == "q":
        return False
    count = len(gpu_ids)
    if key == "h" or key == "?":
        view.help = True
    elif key == "s":
        view.sort = SORTS[(SORTS.index(view.sort) + 1) % len(SORTS)]
        view.selected = 0
    elif key in ("+", "="):
        view.span_s = SPANS_S[min(len(SPANS_S) - 1, SPANS_S.index(view.span_s) + 1)]
    elif key in ("-", "_"):
        view.span_s = SPANS_S[max(0, SPANS_S.index(view.span_s) - 1)]
    elif name == "KEY_UP" and count:
        view.selected = (view.selected - 1) % count
    elif name == "KEY_DOWN" and count:
        view.selected = (view.selected + 1) % count
    elif name == "KEY_ENTER" or key in ("\n", "\r"):
        view.detail = not view.detail and count > 0
    elif name == "KEY_ESCAPE" or name == "KEY_BACKSPACE":
        view.detail = False
    elif key.isdigit() and int(key) in gpu_ids:
        view.selected = gpu_ids.index(int(key))
        view.detail = True
    return True


def run(feed: Feed, view: View) -> int:
    """Shows the screen until q; polls at the collector's sampling rate, redraws after each poll and key."""
    term = blessed.Terminal()
    next_poll = 0.0
    with term.fullscreen(), term.cbreak(), term.hidden_cursor():
        while True:
            if time.monotonic() >= next_poll:
                try:
                    feed.poll()
                    view.error = "" if not feed.gaps else (
                        f"{feed.gaps} polls came too late: samples were overwritten before they were read")
                except TopError as error:
                    view.error = str(error)
                view.refresh_s = feed.refresh_s()
                next_poll = time.monotonic() + view.refresh_s
            lines = screen(feed.node, view, term.width, term.height)
            out = [term.home]
            for row, line in enumerate(lines):
                text = term.reverse(line.ljust(term.width)) if row == len(lines) - 1 else line
                out.append(term.move_yx(row, 0) + text + term.clear_eol)
            print("".join(out), end="", flush=True)
            key = term.inkey(timeout=max(0.0, next_poll - time.monotonic()))
            if key:
                ids = [g.key[0] for g in sorted_gpus(feed.node, view.sort)]
                if not handle_key(view, str(key), key.name or "", ids):
                    return 0
