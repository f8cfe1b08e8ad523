"""--processes end to end: the collector on a simulated node whose GPUs run processes, scraped over HTTP.

The scenario names the pid of a real process this test starts (a Python
child that renames itself), so the collector finds its name, CPU seconds and
RSS in /proc, beside the framebuffer the scenario gives it.  Under the shipped
``processes`` scenario's churn the top-N guard folds the rest into one
``pid="other"`` series.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import COLLECTOR, SERVING, http_get, launch, samples, stop_process, wait_for

CHILD_NAME = "proc-test-job"
# renames itself (PR_SET_NAME) and burns a third of a CPU second, so /proc shows its CPU time
RENAME = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n"
          "while time.process_time() < 0.35: pass\n"
          "print('ready', flush=True); time.sleep(300)")
FB = 123456789


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "NODE_NAME"))}


class Collector:
    """A collector process and its /metrics."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.log = tmp_path / "collector.log"
        with open(self.log, "wb") as out:
            self.proc = launch(COLLECTOR, *args, "-a", "127.0.0.1:0", cwd=tmp_path, env=env or _env(), stdout=out,
                               stderr=subprocess.STDOUT)
        self.port = int(wait_for(lambda: SERVING.search(self.log.read_text()), timeout=60, what="serving",
                                 log=self.log.read_text)[1])

    def metrics(self) -> list[tuple[str, dict[str, str], float]]:
        status, body = http_get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        assert status == 200
        return samples(body.decode())

    def wait(self, predicate, what: str):
        return wait_for(lambda: predicate(self.metrics()), timeout=30, what=what, log=self.log.read_text)

    def stop(self) -> None:
        stop_process(self.proc)


def _start_child(name: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", RENAME, name], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


@pytest.fixture
def children():
    started = [_start_child(CHILD_NAME), _start_child("proc-test-short")]
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def _of(found, name: str, **labels: str) -> list[float]:
    return [value for n, got, value in found if n == name and all(got.get(k) == v for k, v in labels.items())]


def test_a_real_process_named_in_the_scenario_is_served_with_its_comm_and_framebuffer(tmp_path, children):
    child, short = children
    (tmp_path / "node.toml").write_text(f"""\
seed = 1
[[gpu]]
model = "H200"
count = 2
[[process]]
gpu = 0
pid = {child.pid}
fb_bytes = {FB}
[[process]]
gpu = 0
pid = {short.pid}
stop = 8
fb_bytes = 1000
[[process]]
gpu = 1
pid = 4300099
start = 100000
""")
    collector = Collector(tmp_path, "--sim", str(tmp_path / "node.toml"), "--processes")
    try:
        found = collector.wait(lambda m: m if _of(m, "DCGM_EXP_PROCESS_FB_USED_BYTES", pid=str(child.pid)) else None,
                               "the child's series")
        fb = [(labels, value) for name, labels, value in found
              if name == "DCGM_EXP_PROCESS_FB_USED_BYTES" and labels["pid"] == str(child.pid)]
        assert len(fb) == 1
        labels, value = fb[0]
        assert value == FB
        assert labels["process_name"] == CHILD_NAME and labels["gpu"] == "0" and labels["modelName"] == "NVIDIA H200"
        assert labels["UUID"].startswith("GPU-") and labels["device"] == "nvidia0"
        assert _of(found, "DCGM_EXP_PROCESS_COUNT", gpu="1") == [0]
        assert _of(found, "DCGM_EXP_PROCESS_QUERY_SUCCESS", gpu="1") == [1]
        assert _of(found, "DCGM_EXP_PROCESS_RSS_BYTES", pid=str(child.pid))[0] > 0
        assert _of(found, "DCGM_EXP_PROCESS_CPU_SECONDS_TOTAL", pid=str(child.pid))[0] > 0
        # the process the node stops listing at 8 s leaves once its time to live is over; the child stays
        assert _of(found, "DCGM_EXP_PROCESS_FB_USED_BYTES", pid=str(short.pid), process_name="proc-test-short") \
            == [1000]
        after = collector.wait(lambda m: m if not _of(m, "DCGM_EXP_PROCESS_FB_USED_BYTES", pid=str(short.pid))
                               else None,
                               "the stopped process's series to leave")
        assert _of(after, "DCGM_EXP_PROCESS_FB_USED_BYTES", pid=str(child.pid)) == [FB]
        assert _of(after, "DCGM_EXP_PROCESS_COUNT", gpu="0") == [1]
    finally:
        collector.stop()
    assert "none of the GPU processes' pids" not in collector.log.read_text()


def test_the_churn_beyond_the_top_n_folds_into_other_and_the_series_stay_bounded(tmp_path):
    collector = Collector(tmp_path, "--sim", "processes", "--processes", "--processes-top", "3")
    try:
        first = collector.wait(lambda m: m if _of(m, "dcgm_collector_processes_folded_total", gpu="1")
                               and _of(m, "dcgm_collector_processes_folded_total", gpu="1")[0] > 0 else None,
                               "folded processes on GPU 1")
        for _ in range(5):
            found = collector.metrics()
            count = _of(found, "DCGM_EXP_PROCESS_COUNT", gpu="1")[0]
            assert count > 3
            assert _of(found, "DCGM_EXP_PROCESS_FB_USED_BYTES", gpu="1", pid="other") == [(count - 3) * 134217728]
        last = collector.wait(lambda m: m if _of(m, "dcgm_collector_processes_seen_total", gpu="1")[0]
                              > _of(first, "dcgm_collector_processes_seen_total", gpu="1")[0] + 20 else None,
                              "more processes seen")
        # the store's memory stays within the bound set at start, and no sample found it full
        [limit] = _of(last, "dcgm_collector_process_store_limit_bytes")
        assert 0 < _of(first, "dcgm_collector_process_store_bytes")[0] <= limit
        assert 0 < _of(last, "dcgm_collector_process_store_bytes")[0] <= limit
        assert _of(last, "dcgm_collector_process_store_refused_total") == [0]
    finally:
        collector.stop()
    # the shipped scenario's pids are above any real pid: one warning that the host's processes are not visible
    assert collector.log.read_text().count("none of the GPU processes' pids is in /proc") == 1


def test_without_the_flag_there_are_no_process_series(tmp_path):
    collector = Collector(tmp_path, "--sim", "processes")
    try:
        found = collector.wait(lambda m: m if any(n == "DCGM_FI_DEV_FB_USED" for n, _, _ in m) else None,
                               "the GPU series")
    finally:
        collector.stop()
    assert not [n for n, _, _ in found if "process" in n.lower()]


def test_mig_instances_carry_their_processes_without_utilisation(tmp_path):
    collector = Collector(tmp_path, "--sim", "mig", "--processes")
    try:
        found = collector.wait(lambda m: m if _of(m, "DCGM_EXP_PROCESS_FB_USED_BYTES", gpu="0") else None,
                               "GPU 0's process")
    finally:
        collector.stop()
    # the scenario's MIG GPUs run their synthetic process in their first instance; GPU 3 is whole and idle
    fb = [labels for name, labels, _ in found if name == "DCGM_EXP_PROCESS_FB_USED_BYTES" and labels["gpu"] == "0"]
    assert [(labels["GPU_I_ID"], labels["GPU_I_PROFILE"], labels["pid"]) for labels in fb] == [("0", "3g.40gb",
                                                                                               "4200000")]
    assert _of(found, "DCGM_EXP_PROCESS_COUNT", gpu="0", GPU_I_ID="1") == [0]
    assert _of(found, "DCGM_EXP_PROCESS_COUNT", gpu="3") == [0]
    assert not _of(found, "DCGM_EXP_PROCESS_SM_UTIL", gpu="0")
    assert ("--processes: GPU 0 is in MIG mode: NVML gives no per-process utilisation there, its processes' SM, "
            "memory, encoder and decoder series are left out") in collector.log.read_text()


def _nvml_node(tmp_path: Path, flags: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The package's engine reading the simulated NVML (DCGM_ENGINE_NVML_LIB), which runs the scenario: given by
    --nvml or, with no flag, chosen because no libdcgm.so.4 loads; no libnvidia-ml.so.1 is on the linker path, so
    only the NVML the engine reads can list the processes."""
    from dcgm_collector.engine import nvml_library_path

    nvml = nvml_library_path()
    folder = tmp_path / "lib"
    folder.mkdir()
    env = dict(_env(), DCGM_SIM_NVML_COSTS="off", DCGM_SIM_SCENARIO=str(tmp_path / "node.toml"),
               DCGM_ENGINE_NVML_LIB=str(nvml), LD_LIBRARY_PATH=str(folder))
    return flags, env


@pytest.mark.parametrize("source", ["nvml given", "nvml chosen"])
def test_the_engine_on_nvml_lists_the_processes_of_the_nvml_it_reads(tmp_path, children, source):
    """--processes reads the NVML the running source reads (DCGM_ENGINE_NVML_LIB), also when no flag chose it."""
    child, _ = children
    (tmp_path / "node.toml").write_text(f"""\
seed = 1
[[gpu]]
model = "H200"
count = 2
[[process]]
gpu = 1
pid = {child.pid}
fb_bytes = {FB}
""")
    flags, env = _nvml_node(tmp_path, ("--nvml",) if source == "nvml given" else ())
    # asked of a fresh process with the collector's environment: this one may have the simulated libdcgm loaded
    if source == "nvml chosen" and subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libdcgm.so.4')"],
                                                  env=env, capture_output=True).returncode == 0:
        pytest.skip("a real libdcgm.so.4 is installed: DCGM would be chosen")
    collector = Collector(tmp_path, *flags, "--processes", env=env)
    try:
        found = collector.wait(lambda m: m if _of(m, "DCGM_EXP_PROCESS_FB_USED_BYTES", pid=str(child.pid)) else None,
                               "the child's series")
        assert _of(found, "DCGM_EXP_PROCESS_FB_USED_BYTES", gpu="1", pid=str(child.pid),
                   process_name=CHILD_NAME) == [FB]
        assert _of(found, "DCGM_EXP_PROCESS_COUNT", gpu="1") == [1]
        assert _of(found, "DCGM_EXP_PROCESS_QUERY_SUCCESS", gpu="1") == [1]
        [info] = [labels for name, labels, _ in found if name == "dcgm_collector_build_info"]
        assert info["source"] == "nvml"
    finally:
        collector.stop()
    assert "cannot open NVML" not in collector.log.read_text()
