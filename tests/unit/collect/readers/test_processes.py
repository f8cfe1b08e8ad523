"""The process reader on a manual clock, with a fake NVML and a /proc folder written by the test."""

from __future__ import annotations

import logging
import os
from types import SimpleNamespace

import pytest

from dcgm_collector.clock import ManualClock
from dcgm_collector.collect.readers.nvml import NO_PERMISSION, NOT_SUPPORTED, NvmlError, NvmlProcess, NvmlUtilization
from dcgm_collector.collect.readers.processes import TTL_INTERVALS, ProcessReader, read_proc
from dcgm_collector.collect.readers.reader import run_readers
from dcgm_collector.model import EntityType, MigInstance
from dcgm_collector.series.processes import PROCESS_FAMILIES
from dcgm_collector.series.stats import SamplerStats

NAMES = {family.field_id: family.name for family in PROCESS_FAMILIES}
GPU = int(EntityType.GPU)


class FakeNvml:
    """GPUs by index: each a list of (pid, fb) and utilisation samples; a GPU index in ``fail`` answers that code."""

    def __init__(self) -> None:
        self.gpus: dict[int, list[tuple[int, int]]] = {0: [], 1: []}
        self.samples: dict[int, list[NvmlUtilization]] = {0: [], 1: []}
        self.fail: dict[int, int] = {}
        self.migs: dict[int, list[tuple[int, list[tuple[int, int]]]]] = {}
        self.last_seen_asked: list[tuple[int, int]] = []

    def device(self, index: int) -> object:
        return ("gpu", index)

    def mig_devices(self, device: object) -> list[object]:
        index = device[1]
        return [("mig", index, gi) for gi, _ in self.migs.get(index, [])]

    def processes(self, device: object, graphics: bool) -> list[NvmlProcess]:
        if device[0] == "mig":
            listed = dict(self.migs[device[1]])[device[2]]
        else:
            if device[1] in self.fail:
                raise NvmlError("nvmlDeviceGetComputeRunningProcesses_v3", self.fail[device[1]], "Not Supported")
            listed = self.gpus[device[1]]
        instance = device[2] if device[0] == "mig" else None
        return [] if graphics else [NvmlProcess(pid, fb, instance) for pid, fb in listed]

    def utilization(self, device: object, last_seen_us: int) -> list[NvmlUtilization]:
        self.last_seen_asked.append((device[1], last_seen_us))
        return [s for s in self.samples[device[1]] if s.ts_us > last_seen_us]


def write_proc(root, pid: int, name: str, utime: int = 100, stime: int = 50, rss_pages: int = 10) -> None:
    folder = root / str(pid)
    folder.mkdir(exist_ok=True)
    rest = ["S"] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 8 + [str(rss_pages)] + ["0"] * 20
    (folder / "stat").write_text(f"{pid} ({name}) {' '.join(rest)}\n")


@pytest.fixture
def setup(tmp_path):
    clock = ManualClock()
    nvml = FakeNvml()
    sampler = SimpleNamespace(interval_s=1.0, gpu_ids=(0, 1), instances=(), clock=clock)
    reader = ProcessReader(sampler, lambda: nvml, top=2, proc_root=str(tmp_path))
    return SimpleNamespace(clock=clock, nvml=nvml, reader=reader, proc=tmp_path)


def served(reader: ProcessReader, clock: ManualClock) -> dict[tuple[str, int, str], float]:
    """What the store's live series read now: (family name, entity id, pid) -> last value."""
    window = reader.store.window(10_000_000, int(clock.time() * 1e6))
    return {(NAMES[key.field_id], key.entity_id, dict(key.labels).get("pid", "")): value
            for key, value in zip(window.keys, window.stats.last.tolist())}


def names(reader: ProcessReader, clock: ManualClock) -> dict[str, str]:
    window = reader.store.window(10_000_000, int(clock.time() * 1e6))
    return {dict(key.labels)["pid"]: dict(key.labels)["process_name"] for key in window.keys if key.labels}


def tick(s) -> None:
    s.reader.read(s.clock.monotonic())
    s.clock.advance(1.0)


def test_idle_gpu_counts_zero_and_a_process_has_its_proc_name_cpu_and_rss(setup):
    s = setup
    write_proc(s.proc, 101, "trainer", utime=300, stime=100, rss_pages=4)
    s.nvml.gpus[0] = [(101, 1 << 30)]
    tick(s)
    got = served(s.reader, s.clock)
    assert got[("DCGM_EXP_PROCESS_COUNT", 1, "")] == 0
    assert got[("DCGM_EXP_PROCESS_QUERY_SUCCESS", 1, "")] == 1
    assert got[("DCGM_EXP_PROCESS_COUNT", 0, "")] == 1
    assert got[("DCGM_EXP_PROCESS_FB_USED_BYTES", 0, "101")] == 1 << 30
    assert got[("DCGM_EXP_PROCESS_CPU_SECONDS_TOTAL", 0, "101")] == 400 / os.sysconf("SC_CLK_TCK")
    assert got[("DCGM_EXP_PROCESS_RSS_BYTES", 0, "101")] == 4 * os.sysconf("SC_PAGE_SIZE")
    assert names(s.reader, s.clock) == {"101": "trainer"}


def test_past_the_top_n_processes_fold_into_other_and_are_counted(setup):
    s = setup
    for pid in (1, 2, 3, 4):
        write_proc(s.proc, pid, f"job{pid}")
    s.nvml.gpus[0] = [(1, 100), (2, 400), (3, 300), (4, 200)]
    recent_us = int(s.clock.time() * 1e6) - 100_000
    s.nvml.samples[0] = [NvmlUtilization(pid, recent_us, 10 * pid, pid, 0, 0) for pid in (1, 2, 3, 4)]
    tick(s)
    got = served(s.reader, s.clock)
    fb = {pid: v for (name, gpu, pid), v in got.items() if name == "DCGM_EXP_PROCESS_FB_USED_BYTES"}
    assert fb == {"2": 400, "3": 300, "other": 300}
    assert got[("DCGM_EXP_PROCESS_SM_UTIL", 0, "other")] == 50   # pids 1 and 4
    # a counter over a set that changes could fall: the fold has RSS, and no CPU seconds
    assert ("DCGM_EXP_PROCESS_RSS_BYTES", 0, "other") in got
    assert ("DCGM_EXP_PROCESS_CPU_SECONDS_TOTAL", 0, "other") not in got
    assert ("DCGM_EXP_PROCESS_CPU_SECONDS_TOTAL", 0, "2") in got
    assert got[("dcgm_collector_processes_seen_total", 0, "")] == 4
    assert got[("dcgm_collector_processes_folded_total", 0, "")] == 2
    assert names(s.reader, s.clock)["other"] == ""


def test_utilisation_is_asked_after_the_newest_sample_seen_on_each_gpu(setup):
    s = setup
    write_proc(s.proc, 7, "x")
    s.nvml.gpus[0] = [(7, 1)]
    start_us = int(s.clock.time() * 1e6)
    s.nvml.samples[0] = [NvmlUtilization(7, t, sm, 3, 1, 2) for t, sm in
                         ((start_us - 5_000_000, 99), (start_us - 300_000, 30), (start_us - 200_000, 40))]
    tick(s)
    # the first query asks for the last interval only: the sample 5 s old is not this process's present
    assert s.nvml.last_seen_asked == [(0, start_us - 1_000_000), (1, start_us - 1_000_000)]
    assert served(s.reader, s.clock)[("DCGM_EXP_PROCESS_SM_UTIL", 0, "7")] == 40   # the newest sample
    tick(s)
    assert s.nvml.last_seen_asked[-2:] == [(0, start_us - 200_000), (1, start_us)]
    assert served(s.reader, s.clock)[("DCGM_EXP_PROCESS_SM_UTIL", 0, "7")] == 0   # no new sample: idle


def test_an_exited_process_leaves_after_the_ttl(setup):
    s = setup
    write_proc(s.proc, 5, "short")
    s.nvml.gpus[0] = [(5, 10)]
    tick(s)
    s.nvml.gpus[0] = []
    for _ in range(TTL_INTERVALS - 1):
        tick(s)
        assert ("DCGM_EXP_PROCESS_FB_USED_BYTES", 0, "5") in served(s.reader, s.clock)
    tick(s)
    got = served(s.reader, s.clock)
    assert ("DCGM_EXP_PROCESS_FB_USED_BYTES", 0, "5") not in got
    assert got[("DCGM_EXP_PROCESS_COUNT", 0, "")] == 0


def test_a_pid_gone_before_its_proc_read_is_skipped_without_a_warning(setup, caplog):
    s = setup
    write_proc(s.proc, 1, "stays")
    s.nvml.gpus[0] = [(1, 10), (2, 20)]   # 2 has no /proc entry: it exited after the list
    with caplog.at_level(logging.WARNING):
        tick(s)
    got = served(s.reader, s.clock)
    assert {pid for (name, _, pid) in got if name == "DCGM_EXP_PROCESS_FB_USED_BYTES"} == {"1"}
    assert got[("DCGM_EXP_PROCESS_COUNT", 0, "")] == 2
    assert not caplog.records


def test_no_listed_pid_in_proc_warns_once_and_serves_series_without_names(setup, caplog):
    s = setup
    s.nvml.gpus[0] = [(4300001, 10)]
    with caplog.at_level(logging.WARNING):
        tick(s)
        tick(s)
    assert [r.getMessage() for r in caplog.records] == [
        f"--processes: none of the GPU processes' pids is in {s.proc}: the collector does not see the host's "
        "processes (run it with hostPID: true in Kubernetes, --pid=host in Docker); process series go out "
        "without process_name, CPU seconds and RSS"]
    got = served(s.reader, s.clock)
    assert got[("DCGM_EXP_PROCESS_FB_USED_BYTES", 0, "4300001")] == 10
    assert ("DCGM_EXP_PROCESS_RSS_BYTES", 0, "4300001") not in got
    assert names(s.reader, s.clock) == {"4300001": ""}


@pytest.mark.parametrize("code", [NOT_SUPPORTED, NO_PERMISSION])
def test_a_refused_process_list_warns_once_and_reads_as_a_failed_query_not_idle(setup, caplog, code):
    s = setup
    s.nvml.fail[1] = code
    with caplog.at_level(logging.WARNING):
        tick(s)
        tick(s)
    assert [r.getMessage() for r in caplog.records] == [
        f"--processes: GPU 1: nvmlDeviceGetComputeRunningProcesses_v3: Not Supported (NVML status {code}); "
        "its process series are left out, its other series go on"]
    got = served(s.reader, s.clock)
    assert got[("DCGM_EXP_PROCESS_QUERY_SUCCESS", 1, "")] == 0
    assert ("DCGM_EXP_PROCESS_COUNT", 1, "") not in got
    assert got[("DCGM_EXP_PROCESS_QUERY_SUCCESS", 0, "")] == 1


def test_mig_processes_go_to_their_instance_without_utilisation(tmp_path, caplog):
    clock, nvml = ManualClock(), FakeNvml()
    write_proc(tmp_path, 9, "mig-job")
    nvml.migs[0] = [(1, [(9, 77)]), (2, [])]
    # flex mode: the GPU is served through its instances only
    sampler = SimpleNamespace(interval_s=1.0, gpu_ids=(), clock=clock,
                              instances=(MigInstance(entity_id=5, gpu_id=0, instance_id=1, profile="3g.71gb"),
                                         MigInstance(entity_id=6, gpu_id=0, instance_id=2, profile="3g.71gb")))
    reader = ProcessReader(sampler, lambda: nvml, proc_root=str(tmp_path))
    with caplog.at_level(logging.WARNING):
        reader.read(clock.monotonic())
    window = reader.store.window(10_000_000, int(clock.time() * 1e6))
    got = {(NAMES[k.field_id], k.entity_group, k.entity_id, dict(k.labels).get("pid", "")): v
           for k, v in zip(window.keys, window.stats.last.tolist())}
    assert got[("DCGM_EXP_PROCESS_FB_USED_BYTES", int(EntityType.GPU_I), 5, "9")] == 77
    gpu_i = int(EntityType.GPU_I)
    assert got[("DCGM_EXP_PROCESS_COUNT", gpu_i, 5, "")] == 1
    assert got[("DCGM_EXP_PROCESS_COUNT", gpu_i, 6, "")] == 0
    assert got[("DCGM_EXP_PROCESS_QUERY_SUCCESS", gpu_i, 6, "")] == 1
    assert not any(group == GPU for _, group, _, _ in got)
    assert not any(name == "DCGM_EXP_PROCESS_SM_UTIL" for name, *_ in got)
    assert "GPU 0 is in MIG mode" in caplog.records[0].getMessage()


def test_read_proc_of_this_process_names_it_as_proc_does():
    with open("/proc/self/comm") as file:
        comm = file.read().strip()
    info = read_proc(os.getpid())
    assert info is not None and info.name == comm and info.rss_bytes > 0 and info.cpu_s > 0
    assert read_proc(2**22 + 12345) is None


def test_an_exception_in_a_read_is_logged_once_and_counted_for_health(setup, caplog):
    s = setup

    def broken(index: int) -> object:
        raise RuntimeError("driver went away")

    s.nvml.device = broken
    s.reader.sampler.stats = SamplerStats()
    with caplog.at_level(logging.ERROR):
        for _ in range(2):
            run_readers(s.reader.sampler, [s.reader], s.clock.monotonic())
            s.clock.advance(1.0)
    assert s.reader.sampler.stats.reader_failures == {"processes": 2}
    assert [r.getMessage() for r in caplog.records] == [
        "sampler reader processes failed; the sampler and its other readers go on (counted in "
        "dcgm_collector_tick_failures_total, logged again only if the cause changes)"]


def shown(reader: ProcessReader, clock: ManualClock, family: str) -> dict[str, float]:
    """pid -> value of one family's series as /metrics shows them (a blank last sample hides a series)."""
    window = reader.store.window(10_000_000, int(clock.time() * 1e6))
    ok = (window.stats.last_status == 0).tolist()
    return {dict(key.labels)["pid"]: value for key, value, good in zip(window.keys, window.stats.last.tolist(), ok)
            if good and NAMES[key.field_id] == family and key.entity_id == 0}


def test_a_process_that_drops_out_of_the_top_n_leaves_its_own_series_at_once(setup):
    s = setup
    for pid in (1, 2, 3):
        write_proc(s.proc, pid, f"job{pid}")
    s.nvml.gpus[0] = [(1, 300), (2, 200)]
    tick(s)
    assert shown(s.reader, s.clock, "DCGM_EXP_PROCESS_FB_USED_BYTES") == {"1": 300, "2": 200}
    s.nvml.gpus[0] = [(1, 300), (2, 200), (3, 250)]   # 2 is folded now: its own series would count it twice
    tick(s)
    assert shown(s.reader, s.clock, "DCGM_EXP_PROCESS_FB_USED_BYTES") == {"1": 300, "3": 250, "other": 200}
    s.nvml.gpus[0] = [(1, 300), (3, 250)]   # 2 exited: nothing left to fold, "other" goes at once
    tick(s)
    assert shown(s.reader, s.clock, "DCGM_EXP_PROCESS_FB_USED_BYTES") == {"1": 300, "3": 250}


def test_an_injected_attribution_labels_each_process_and_the_fold_gets_the_blank_labels(tmp_path):
    clock = ManualClock()
    nvml = FakeNvml()
    nvml.uuid = lambda device: f"GPU-{device[1]}"
    asked = []

    def attribute(pid: int, gpu: int, uuid: str, instance: int | None) -> tuple[tuple[str, str], ...]:
        asked.append((pid, gpu, uuid, instance))
        return (("pod", f"pod-{pid}"), ("hpc_job", ""))

    sampler = SimpleNamespace(interval_s=1.0, gpu_ids=(0, 1), instances=(), clock=clock)
    reader = ProcessReader(sampler, lambda: nvml, top=1, proc_root=str(tmp_path), attribute=attribute,
                           folded_labels=(("hpc_job", ""), ("pod", "")))
    nvml.gpus[1] = [(300, 4096), (301, 1024)]
    for pid in (300, 301):
        write_proc(tmp_path, pid, "job")
    reader.read(clock.monotonic())
    window = reader.store.window(10_000_000, int(clock.time() * 1e6))
    fb = PROCESS_FAMILIES[0].field_id
    labels = {dict(key.labels)["pid"]: key.labels for key in window.keys if key.field_id == fb and key.labels}
    assert labels == {"300": (("hpc_job", ""), ("pid", "300"), ("pod", "pod-300"), ("process_name", "job")),
                      "other": (("hpc_job", ""), ("pid", "other"), ("pod", ""), ("process_name", ""))}
    assert asked == [(300, 1, "GPU-1", None)]
