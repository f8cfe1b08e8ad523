"""The ``report`` command's flags: the text summary on stdout, the HTML page with ``-o``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from dcgm_collector.report.page import html_page, text_summary
from dcgm_collector.report.recording import RecordingError, read_recording

__all__ = ["main"]

PROG = "dcgm-collector report"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Summarise a flight recording: its triggers, GPUs, findings and XIDs; with -o, "
                               "also a self-contained HTML page with charts.")
    parser.add_argument("recording", metavar="RECORDING.parquet", help="a recording written by --recorder-dir")
    parser.add_argument("-o", "--output", metavar="REPORT.html", help="write the HTML page to this file")
    parser.add_argument("--text", action="store_true", help="only the text summary (no HTML even with -o)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        rec = read_recording(args.recording)
    except RecordingError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    if args.output and not args.text:
        temp = f"{args.output}.tmp"
        try:
            with open(temp, "w", encoding="utf-8") as out:
                out.write(html_page(rec))
            os.replace(temp, args.output)
        except OSError as error:
            print(f"{PROG}: error: -o {args.output}: cannot write: {error.strerror or error}", file=sys.stderr)
            return 1
    sys.stdout.write(text_summary(rec))
    return 0
