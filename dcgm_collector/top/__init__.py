"""``dcgm-collector top [URL]``: a live terminal view of any collector, over HTTP.

It polls the collector's history API at its sampling rate (at most 10 a
second) and /metrics for the per-process series, and shows a block per GPU
or MIG instance with a sparkline of its utilisation, the top processes and a
status line.  ``--once`` (and any stdout that is not a terminal) prints one
plain-text snapshot instead.  The live screen needs the ``top`` extra
(blessed); the snapshot needs nothing beyond the standard library.

The package reads the collector only over HTTP: it imports nothing of the
sampler, as the dashboard generator does not.  Its modules: client (HTTP and
the history API polled forward), metrics (what /metrics adds), model (the
per-GPU state), feed (keeps the state current), render (the screen's lines),
app (the terminal loop and keys), command (the flags).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``top`` with these arguments; its exit status."""
    # imported here: the command line's module imports this package, and the HTTP client
    # (urllib, ssl) is not for the collector's --help or its other commands to load
    from dcgm_collector.top.command import main as run

    return run(argv)
