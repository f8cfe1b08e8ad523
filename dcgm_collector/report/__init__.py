"""``dcgm-collector report RECORDING.parquet``: what a flight recording says about its incident.

It reads a recording and its sidecar (dcgm_collector.push.recording_file
writes them) and prints a plain-text summary: the triggers, the GPUs, the
findings ranked by how close before the trigger and how strong, and each
XID explained from dcgm_collector.catalog.xids.  ``-o FILE`` also writes a
self-contained HTML page with charts of the readings on one time axis.
Its modules: recording (the file read into series), findings (the rules),
charts (the SVG), page (the text and the HTML), command (the flags).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``report`` with these arguments; its exit status."""
    # imported here: the command line's module imports this package, and numpy and pyarrow
    # are not for the collector's --help or its other commands to load
    from dcgm_collector.report.command import main as run

    return run(argv)
