"""Idle and busy GPU seconds end to end: the collector on a simulated node of four GPUs, each in one state.

GPU 0 trains (busy); GPU 1 runs nothing but a process holds 2 GiB on it
(idle_held); GPU 2 runs nothing, no process, and a job file in
--hpc-job-mapping-dir gives it to a job (allocated_no_process, its series
labelled hpc_job); GPU 3 runs nothing and nobody has it (free).  Two scrapes
some seconds apart: each GPU's increase lands in its state only, and the
four together grow by about the time between the scrapes.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from support import COLLECTOR, SERVING, http_get, launch, samples, stop_process, wait_for

IDLE = "DCGM_EXP_GPU_IDLE_SECONDS_TOTAL"
BUSY = "DCGM_EXP_GPU_BUSY_SECONDS_TOTAL"
STATES = ("busy", "idle_held", "allocated_no_process", "free")
EXPECTED = {"0": "busy", "1": "idle_held", "2": "allocated_no_process", "3": "free"}
SCENARIO = """\
seed = 5
[[gpu]]
model = "H200"
workload = "training"
[[gpu]]
model = "H200"
count = 3
workload = "idle"
[[process]]
gpu = 1
pid = 4300001
name = "notebook, holding memory"
fb_bytes = 2147483648
sm_share = 0
"""


def _counters(text: str) -> dict[str, dict[str, float]]:
    """GPU -> state -> seconds; checks that each GPU serves each state exactly once."""
    found: dict[str, dict[str, float]] = {}
    for name, labels, value in samples(text):
        if name not in (IDLE, BUSY):
            continue
        state = labels.get("state", "busy") if name == IDLE else "busy"
        assert (name == BUSY) == ("state" not in labels)
        per_gpu = found.setdefault(labels["gpu"], {})
        assert state not in per_gpu, f"GPU {labels['gpu']} serves {state} twice"
        per_gpu[state] = value
        if labels["gpu"] == "2":
            assert labels["hpc_job"] == "job-42"
        else:
            assert "hpc_job" not in labels
    return found


def test_each_gpu_counts_its_seconds_in_its_own_state_at_the_sampling_rate(tmp_path: Path):
    (tmp_path / "node.toml").write_text(SCENARIO)
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "2").write_text("job-42\n")
    log = tmp_path / "collector.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "NODE_NAME"))}
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, "--sim", str(tmp_path / "node.toml"), "--processes", "-c", "200",
                      "--hpc-job-mapping-dir", str(jobs), "-a", "127.0.0.1:0", cwd=tmp_path, env=env,
                      stdout=out, stderr=subprocess.STDOUT)
    try:
        port = int(wait_for(lambda: SERVING.search(log.read_text()), timeout=60, what="serving",
                            log=log.read_text)[1])

        def scrape() -> tuple[float, dict[str, dict[str, float]]]:
            status, body = http_get(f"http://127.0.0.1:{port}/metrics", timeout=5)
            assert status == 200
            return time.monotonic(), _counters(body.decode())

        # every state of every GPU is there from the first ticks on, explicit zeros included
        first_at, first = wait_for(lambda: (lambda s: s if s[1].get("0", {}).get("busy", 0) > 0.5 else None)(
            scrape()), timeout=30, what="the busy seconds of GPU 0", log=log.read_text)
        assert sorted(first) == ["0", "1", "2", "3"]
        assert all(sorted(states) == sorted(STATES) for states in first.values())
        time.sleep(4)
        second_at, second = scrape()
        elapsed = second_at - first_at
        for gpu, state in EXPECTED.items():
            grown = {s: second[gpu][s] - first[gpu][s] for s in STATES}
            assert {s for s, d in grown.items() if d != 0} == {state}, (gpu, grown)
            # the sum of the rows' intervals between the scrapes: about the time between them, which is
            # many 200 ms sampling intervals, not one (generous bounds: which bucket is the point)
            assert 0.5 * elapsed < sum(grown.values()) < 1.5 * elapsed + 1, (gpu, grown, elapsed)
            # counted row by row: each of the 200 ms sampling instants adds its interval
            rows = grown[state] / 0.2
            assert abs(rows - round(rows)) < 0.05 and round(rows) >= 10, (gpu, grown)
    finally:
        stop_process(proc)
