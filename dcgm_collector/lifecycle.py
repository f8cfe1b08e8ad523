"""The process's life: signals, the start-up thread, reloads, and an exit within 2 s of SIGTERM.

The main thread only waits for signals; it never makes a DCGM call.  A DCGM
call can block for DCGM's whole request timeout (60 s) when a hostengine
hangs, longer than systemd's TimeoutStopSec or a Kubernetes grace period
allows, so start-up, each reload and the stop run on threads of their own.
Reloads run one at a time; SIGHUPs that arrive during one are coalesced into
one more reload after it.  On SIGTERM the stop gets STOP_GRACE_S; if a DCGM
call still holds it then, the logs are flushed and the process exits at once
(os._exit) with the exit status it would have had; the kernel closes its
connections.

Two things that would otherwise keep a stopping process alive:

* The thread that runs the stop is started before the start-up, not when
  SIGTERM comes.  While a library load blocks (dlopen of a file on a hung
  mount), the dynamic linker holds its lock, and creating a thread waits for
  that lock with the GIL held: a stop that began by starting a thread would
  freeze the whole process until SIGKILL.
* Once the process is stopping, SIGTERM, SIGINT, SIGHUP and SIGUSR2 are
  ignored.  The interpreter puts the default action back on every signal it
  handled as it finalizes, so a SIGHUP arriving then (``systemctl reload``
  racing ``stop``) would kill the process, and systemd would mark the unit
  failed, instead of the exit status 0 the stop earned.
"""

from __future__ import annotations

import logging
import queue
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dcgm_collector import engine
from dcgm_collector.app import STOP_GRACE_S, Collector, StartupError
from dcgm_collector.config import EXIT_ERROR, EXIT_OK, PROG, Config
from dcgm_collector.logs import exit_flushed

__all__ = ["HANDLED_SIGNALS", "Reloads", "Stopper", "serve", "stop_within"]

log = logging.getLogger("dcgm_collector")

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR2)


@dataclass(frozen=True)
class _Started:
    """What the start-up thread puts on the event queue: None, or the one-line error."""

    error: str | None


def _install_signals(events: queue.SimpleQueue) -> None:
    def handler(signum: int, _frame: Any) -> None:
        events.put(signum)   # SimpleQueue.put is safe in a signal handler; the main loop does the work

    for signum in HANDLED_SIGNALS:
        signal.signal(signum, handler)


def _ignore_late_signals() -> None:
    """From here on the process is stopping: a signal must neither start work nor kill it."""
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _start(collector: Collector, events: queue.SimpleQueue) -> None:
    """Start the collector (on a thread of its own) and say how it went on ``events``."""
    try:
        collector.start()
    except StartupError as error:
        events.put(_Started(str(error)))
    except Exception as error:
        log.debug("start-up failed", exc_info=True)
        events.put(_Started(f"start-up failed: {type(error).__name__}: {error}"))
    else:
        events.put(_Started(None))


class Reloads:
    """SIGHUP's reloads, on a thread of their own so that a hung DCGM never holds up the signals.

    One runs at a time; the requests that come while it runs are coalesced into one
    more reload after it, so the file last written is the one read.
    """

    def __init__(self, reload: Callable[[], object]) -> None:
        self._reload = reload
        self._lock = threading.Lock()
        self._running = False
        self._again = False

    def request(self) -> None:
        with self._lock:
            if self._running:
                if not self._again:
                    log.info("SIGHUP: a reload is under way; the counters file is read again once it ends")
                self._again = True
                return
            self._running = True
        threading.Thread(target=self._run, name="dcgm-collector-reload", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                self._reload()
            except Exception:   # the collector must keep serving whatever a reload did
                log.exception("reload failed")
            with self._lock:
                if not self._again:
                    self._running = False
                    return
                self._again = False


class Stopper:
    """The thread that stops the collector, started ahead of time (see the module's docstring).

    It waits for the word, then for the start-up (``starting``) to end, then runs
    ``collector.stop()``.  ``stop_within(seconds)`` gives the word and waits at most that long.
    """

    def __init__(self, collector: Collector, starting: threading.Thread | None = None) -> None:
        self._collector = collector
        self._starting = starting
        self._go = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dcgm-collector-stop", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        self._go.wait()
        if self._starting is not None and self._starting.ident is not None:
            self._starting.join()
        self._collector.stop()

    def stop_within(self, seconds: float) -> bool:
        """Stop, waiting at most ``seconds``; False when DCGM still holds the stop."""
        self._go.set()
        self._thread.join(seconds)
        return not self._thread.is_alive()


def stop_within(collector: Collector, seconds: float, starting: threading.Thread | None = None) -> bool:
    """Stop the collector (after its start-up, if one is under way), waiting at most ``seconds``.

    False when DCGM still holds the stop: the caller exits without it.
    """
    stopper = Stopper(collector, starting)
    stopper.start()
    return stopper.stop_within(seconds)


def _exit_now(code: int) -> None:
    """Exit at once, leaving the threads stuck in DCGM calls (and libdcgm's own clean-up) behind."""
    log.warning("the stop did not end within %.1f s (a DCGM call or a library load does not return); "
                "exiting without waiting for it", STOP_GRACE_S)
    engine.remove_replay_files()   # os._exit skips atexit, which would have removed them
    exit_flushed(code)


def _record_now(collector: Collector) -> None:
    """SIGUSR2: start a flight recording, on a thread of its own (the main thread only waits for signals)."""
    def run() -> None:
        try:
            collector.record_now("SIGUSR2")
        except Exception:
            log.exception("SIGUSR2: the flight recording could not be started")

    threading.Thread(target=run, name="dcgm-collector-sigusr2", daemon=True).start()


def _main_loop(collector: Collector, events: queue.SimpleQueue, reloads: Reloads) -> int:
    """Handle the start-up's outcome and the signals until one says stop; the exit status."""
    started = False
    reload_waiting = False   # a SIGHUP during start-up: reload once start-up is done
    while True:
        try:
            event = events.get(timeout=1.0)
        except queue.Empty:
            continue
        if isinstance(event, _Started):
            if event.error is not None:
                print(f"{PROG}: error: {event.error}", file=sys.stderr)
                return EXIT_ERROR
            started = True
            if reload_waiting:
                reloads.request()
            continue
        if event == signal.SIGHUP:
            if started:
                reloads.request()
            else:
                reload_waiting = True
            continue
        if event == signal.SIGUSR2:
            if started:
                _record_now(collector)
            else:
                log.info("SIGUSR2: still starting, no samples to record yet")
            continue
        log.info("%s: shutting down", signal.Signals(event).name)
        return EXIT_OK


def serve(config: Config) -> int:
    """Run the collector until SIGTERM or SIGINT (exit 0) or a start-up error (exit 1)."""
    events: queue.SimpleQueue = queue.SimpleQueue()
    _install_signals(events)
    collector = Collector(config)
    starting = threading.Thread(target=_start, args=(collector, events), name="dcgm-collector-start", daemon=True)
    stopper = Stopper(collector, starting)
    stopper.start()
    code = EXIT_ERROR
    try:
        starting.start()
        code = _main_loop(collector, events, Reloads(collector.reload))
    finally:
        _ignore_late_signals()
        if not stopper.stop_within(STOP_GRACE_S):
            _exit_now(code)
    return code
