#!/usr/bin/env python3
"""Redraw docs/images/report.png: the collector's /reports page of the recording of a rehearsed fault.

The collector runs on ``--sim power-excursions`` (GPU 1's power regulation
fails in bursts, then the GPU falls off the bus at 150 s) with ``--warnings``
and a recorder folder in a temporary directory.  The early warning on the
power over its limit starts a recording; the XID 79 starts another, whose
window holds the warning before it.  Once that one is on the landing page,
Debian's headless Chromium (``apt-get install chromium``) draws its report as
the collector serves it, at /reports.

    .venv/bin/python tools/screenshot_report.py                 # rewrite docs/images/report.png (about 3 minutes)
    .venv/bin/python tools/screenshot_report.py -o /tmp/r.png

Run it with the venv's interpreter from the checkout root: the collector it
starts is the installed package, run from the temporary directory.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = ROOT / "docs" / "images" / "report.png"
MAX_PNG_BYTES = 300 * 1024     # what the docs may carry
WINDOW = "1200,1520"           # the whole page of a two-GPU recording
START_TIMEOUT_S = 60.0
RECORDING_TIMEOUT_S = 300.0   # the XID comes 150 s in, on a busy machine later


class ScreenshotError(Exception):
    """The picture cannot be made; str() is the one line said."""


def _wait(what: str, check, timeout_s: float, proc: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if proc.poll() is not None:
            raise ScreenshotError(f"the collector exited ({proc.returncode}) before {what}:\n{log.read_text()}")
        time.sleep(0.2)
    raise ScreenshotError(f"no {what} within {timeout_s:g} s:\n{log.read_text()}")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return answer.read().decode()


def screenshot(output: Path, before_s: float, chromium: str) -> int:
    """Draw the report into ``output``; its size in bytes."""
    with tempfile.TemporaryDirectory(prefix="report-screenshot-") as scratch:
        folder, log = Path(scratch) / "recordings", Path(scratch) / "collector.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_EXPORTER_", "DCGM_COLLECTOR_"))}
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "dcgm_collector", "--sim", "power-excursions",
                                     "--warnings", "-a", "127.0.0.1:0", "--recorder-dir", str(folder),
                                     "--recorder-before", str(before_s), "--recorder-after", "5"],
                                    cwd=scratch, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            port = _wait("the listener", lambda: re.search(r"serving http://127\.0\.0\.1:(\d+)/", log.read_text()),
                         START_TIMEOUT_S, proc, log)[1]
            # the XID 79's recording: GPU 1 falls off the bus 150 s in, and it is written 5 s later
            [recording] = _wait("recording", lambda: sorted(folder.glob("recording-*-xid.parquet"))[:1],
                                RECORDING_TIMEOUT_S, proc, log)
            base = f"http://127.0.0.1:{port}/"
            link = f"reports?name={quote(recording.name)}"
            _wait("report link on the landing page", lambda: link in _get(base), RECORDING_TIMEOUT_S, proc, log)
            drawn = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                    f"--window-size={WINDOW}", "--force-device-scale-factor=1",
                                    f"--screenshot={output}", base + link],
                                   capture_output=True, text=True, timeout=120)
            if drawn.returncode != 0 or not output.is_file():
                raise ScreenshotError(f"chromium failed ({drawn.returncode}): {drawn.stderr.strip()[-2000:]}")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
    size = output.stat().st_size
    if size > MAX_PNG_BYTES:
        raise ScreenshotError(f"{output}: {size} bytes, over the {MAX_PNG_BYTES} the docs may carry")
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Redraw the report screenshot of the docs.")
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT, help=f"the PNG [{DEFAULT_OUTPUT}]")
    parser.add_argument("--before", type=float, default=160.0, metavar="S",
                        help="seconds a recording keeps before its trigger [160: the scenario from its start]")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium")
    if chromium is None:
        print("screenshot_report: error: Debian's chromium is not installed (apt-get install chromium)",
              file=sys.stderr)
        return 1
    try:
        size = screenshot(args.output, args.before, chromium)
    except ScreenshotError as error:
        print(f"screenshot_report: error: {error}", file=sys.stderr)
        return 1
    print(f"{args.output}: {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
