"""CI: the repaired binary wheel, installed in a fresh venv, runs with no C compiler on PATH.

Run with the wheel venv's python and a PATH holding only that venv's bin:
starts `dcgm-collector --sim 2`, reads the port it serves on, fetches
/metrics until both GPUs' temperatures are there, then the landing page's
script and style sheet (package data), then stops it with SIGTERM.
"""

import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

for compiler in ("cc", "gcc", "clang"):
    assert shutil.which(compiler) is None, f"{compiler} is on PATH: this check must run without a compiler"
collector = Path(sys.executable).parent / "dcgm-collector"
proc = subprocess.Popen([str(collector), "--sim", "2", "-a", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
try:
    deadline = time.monotonic() + 30
    port = None
    while port is None:
        line = proc.stderr.readline()
        assert line or proc.poll() is None, f"dcgm-collector exited ({proc.poll()})"
        assert time.monotonic() < deadline, "no 'serving' line within 30 s"
        print(line, end="")
        found = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", line)
        port = int(found.group(1)) if found else None
    while True:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        gpus = set(re.findall(r'^DCGM_FI_DEV_GPU_TEMP\{gpu="(\d+)"', body, re.M))
        if gpus == {"0", "1"}:
            break
        assert time.monotonic() < deadline, f"no temperature of both GPUs on /metrics: {gpus}"
        time.sleep(0.2)
    print(f"the wheel serves both GPUs on :{port}/metrics")
    # the landing page's script and style sheet are package data: a wheel without them has a page without charts
    for path in ("static/live.js", "static/live.css"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=5) as answer:
            assert answer.status == 200 and len(answer.read()) > 1000, f"/{path} is missing from the wheel"
    print("the wheel serves the landing page's script and style sheet")
finally:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0, "dcgm-collector did not exit 0 on SIGTERM"
