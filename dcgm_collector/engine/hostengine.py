"""A simulated nv-hostengine: one simulated node served to remote DCGM clients.

``python -m dcgm_collector.engine hostengine --port N`` (or ``--unix PATH``)
owns the simulated GPUs; any client of the simulated libdcgm.so.4 reaches it
with ``dcgmConnect_v2("127.0.0.1:N")``, ``-r 127.0.0.1:N`` in the collector,
or ``unix:///PATH``.  The server itself is C inside the library
(``dcgmSimServe``); this module loads the library, routes SIGTERM/SIGINT to
the server's stop descriptor and waits with the GIL released.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TextIO

import cffi

from dcgm_collector import engine

__all__ = ["serve"]

_CDEF = (
    "int dcgmSimServe(const char *address, unsigned int port, int isUnixSocket, "
    "const char *scenario, int readyFd, int stopFd, char *errorText, int errorTextLen);"
)


def serve(
    *,
    port: int | None = None,
    address: str = "127.0.0.1",
    unix_path: str | None = None,
    scenario: str | None = None,
    ready: TextIO | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT; raise ValueError on a bad scenario or address.

    Writes one line ``listening on HOST:PORT`` (or ``listening on
    unix:PATH``) to ``ready`` (default stdout) once clients can connect.
    ``scenario`` defaults to ``$DCGM_SIM_SCENARIO`` (empty: 8 H100s training).
    """
    if (port is None) == (unix_path is None):
        raise ValueError("give exactly one of port and unix_path")
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"port must be 0..65535, not {port}")
    spec = os.environ.get(engine.SCENARIO_ENV, "") if scenario is None else scenario
    if spec and os.environ.get(engine.SOURCE_ENV, "") != "nvml":
        engine.check_scenario(spec)
    stream = sys.stdout if ready is None else ready
    stream.flush()
    ffi = cffi.FFI()
    ffi.cdef(_CDEF)
    library = ffi.dlopen(str(engine.library_path()))
    stop_read, stop_write = os.pipe()
    previous = _route_signals(stop_write)
    try:
        error = ffi.new("char[]", 1024)
        status = library.dcgmSimServe(
            (unix_path if unix_path is not None else address).encode(),
            0 if port is None else port,
            int(unix_path is not None),
            spec.encode(),
            stream.fileno(),
            stop_read,
            error,
            len(error),
        )
    finally:
        _restore_signals(previous)
        os.close(stop_read)
        os.close(stop_write)
    if status != 0:
        message = ffi.string(error).decode("utf-8", "replace").strip()
        raise ValueError(message or f"the hostengine failed (status {status})")


def _route_signals(stop_write: int) -> tuple:
    # The server runs in C on this (main) thread, so Python handlers could
    # not run until it returns; the wakeup descriptor is written by the
    # C-level signal handler at once, and the server polls its other end.
    os.set_blocking(stop_write, False)
    old_wakeup = signal.set_wakeup_fd(stop_write)
    old_handlers = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGTERM, signal.SIGINT)}
    return old_wakeup, old_handlers


def _restore_signals(previous: tuple) -> None:
    old_wakeup, old_handlers = previous
    signal.set_wakeup_fd(old_wakeup)
    for sig, handler in old_handlers.items():
        signal.signal(sig, handler)


def _ignore(signum: int, frame: object) -> None:
    pass
