"""``dcgm-collector --nvml``: the package's engine reading its GPUs through NVML.

The collector runs as a subprocess on the real engine (libdcgm.so.4 with its
NVML value source), which opens the simulated libnvidia-ml.so.1 built into
dcgm_collector/engine/lib (via DCGM_ENGINE_NVML_LIB), with the simulated
library's per-call costs off.  The simulated NVML's clock is frozen
(DCGM_SIM_NVML_TIME_US), so a child interpreter reading the same library with
pynvml in the same environment gets the very readings the collector serves,
up to DCGM's unit conversions (mW -> W, bytes -> MiB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support import COLLECTOR, SERVING, launch, lost_gpu_scenario, samples
from test_faults import Proc, _env, fresh, value, wait_for

FROZEN_US = 5_000_000
LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName")
COUNTERS = textwrap.dedent("""\
    DCGM_FI_DEV_GPU_TEMP, gauge, temperature
    DCGM_FI_DEV_POWER_USAGE, gauge, power
    DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, energy
    DCGM_FI_DEV_GPU_UTIL, gauge, utilisation
    DCGM_FI_DEV_SM_CLOCK, gauge, SM clock
    DCGM_FI_DEV_FB_USED, gauge, framebuffer used
    DCGM_FI_DEV_ENC_UTIL, gauge, encoder utilisation
    DCGM_FI_PROF_NVLINK_TX_BYTES, gauge, NvLink bytes sent (no NVML mapping in DCGM)
    DCGM_FI_DEV_RETIRED_SBE, counter, pages retired for single-bit errors
    DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, PCIe replays
""")
SERVED = {"DCGM_FI_DEV_GPU_TEMP": "temp", "DCGM_FI_DEV_POWER_USAGE": "power",
          "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy", "DCGM_FI_DEV_GPU_UTIL": "util",
          "DCGM_FI_DEV_SM_CLOCK": "sm", "DCGM_FI_DEV_FB_USED": "fb_used", "DCGM_FI_DEV_ENC_UTIL": "enc"}

# what the collector should serve, read with pynvml and converted as DCGM does
REFERENCE = textwrap.dedent("""
    import json
    import pynvml

    pynvml.nvmlInit()
    out = {}
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        energy = pynvml.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION])[0]
        memory = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        out[str(i)] = {
            "temp": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "power": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "energy": energy.value.ullVal,
            "util": pynvml.nvmlDeviceGetUtilizationRates(h).gpu,
            "sm": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "fb_used": memory.used // (1024 * 1024),
            "enc": pynvml.nvmlDeviceGetEncoderUtilization(h)[0],
        }
    pynvml.nvmlShutdown()
    print(json.dumps(out))
""")

# XIDs come through an NVML event set, which hears only what happens after it
# subscribes: the simulated clock must run for the XID to come after that
XID_AT_S = 1.5
XID_SCENARIO = textwrap.dedent(f"""\
    seed = 4
    [[gpu]]
    model = "H100"
    count = 2
    workload = "training"

    [[event]]
    at = {XID_AT_S}
    gpu = 1
    kind = "xid"
    xid = 48
""")
EVENT_AND_PROF_COUNTERS = textwrap.dedent("""\
    DCGM_FI_DEV_GPU_TEMP, gauge, temperature
    DCGM_FI_DEV_XID_ERRORS, gauge, last XID
    DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, graphics engine active (GPM)
""")

LOST_AT_S = 2.0
STALE_AFTER_S = 5.0
LOST_SCENARIO = lost_gpu_scenario(LOST_AT_S)


def _nvml_env(**extra: str) -> dict[str, str]:
    from dcgm_collector.engine import nvml_library_path

    return _env(DCGM_SIM_NVML_COSTS="off", DCGM_ENGINE_NVML_LIB=str(nvml_library_path()), **extra)


class NvmlCollector(Proc):
    def __init__(self, cwd: Path, env: dict[str, str], *args: str, counters_csv: str = COUNTERS) -> None:
        counters = cwd / "counters.csv"
        counters.write_text(counters_csv)
        super().__init__(COLLECTOR, ["-f", str(counters), "-c", "200", "--watch-interval", "100",
                                     "-a", "127.0.0.1:0", *args], cwd, env, "collector")
        self.port = int(self.wait_log(SERVING)[1])

    def metrics(self) -> str:
        from support import http_get

        status, body = http_get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        assert status == 200
        return body.decode()


def by_gpu(text: str, name: str) -> dict[str, tuple[dict[str, str], float]]:
    return {labels["gpu"]: (labels, v) for n, labels, v in samples(text) if n == name}


def run_once(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    proc = launch(COLLECTOR, *args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(args, proc.returncode, out.decode(), err.decode())


def test_nvml_mode_serves_the_nvml_readings_with_the_sim_labels(tmp_path):
    env = _nvml_env(DCGM_SIM_SCENARIO="4", DCGM_SIM_NVML_TIME_US=str(FROZEN_US))
    reference_env = dict(env)
    reference_env["LD_LIBRARY_PATH"] = str(Path(env["DCGM_ENGINE_NVML_LIB"]).parent)
    reference = json.loads(subprocess.run([sys.executable, "-c", REFERENCE], env=reference_env, check=True,
                                          capture_output=True, text=True, timeout=60).stdout)
    assert sorted(reference) == ["0", "1", "2", "3"]

    started = time.monotonic()  # before the launch: the engine integrates power from its own start
    collector = NvmlCollector(tmp_path, env, "--nvml")
    try:
        text = wait_for(lambda: (t := collector.metrics()) and all(len(by_gpu(t, n)) == 4 for n in SERVED) and t,
                        what="every NVML row on 4 GPUs", log=collector.log)
        log = collector.log()
        assert f"the engine reading NVML ({Path(env['DCGM_ENGINE_NVML_LIB']).resolve()})" in log
        assert "source: nvml, chosen by --nvml" in log
        assert _source_seen(collector) == ("OK\nsource: nvml, chosen by --nvml",
                                           {"source": "nvml", "source_reason": "given"})
        elapsed_s = time.monotonic() - started
        for name, key in SERVED.items():
            for gpu, (_, got) in by_gpu(text, name).items():
                want = reference[gpu][key]
                if key == "energy":
                    # the true counter plus the power integrated since it was read: the simulated
                    # clock is frozen, so the estimate runs ahead by at most power x real time
                    most = reference[gpu]["power"] * 1000 * elapsed_s
                    assert want <= got <= want + most, (name, gpu, got, want, most)
                    continue
                assert got == pytest.approx(want, abs=1e-6), (name, gpu, got, want)
        # a field DCGM itself reads from no NVML call is NOT_SUPPORTED: no series, nothing invented,
        # and one start-up line says so
        assert not by_gpu(text, "DCGM_FI_PROF_NVLINK_TX_BYTES")
        # page retirement is pre-Ampere: NVML answers NOT_SUPPORTED on an H100, as on the real H200
        assert not by_gpu(text, "DCGM_FI_DEV_RETIRED_SBE")
        assert "embedded DCGM: not served, NOT_SUPPORTED on every GPU (1): DCGM_FI_DEV_RETIRED_SBE" in log
        retired_line = next(n for n, row in enumerate(COUNTERS.splitlines(), 1)
                            if row.startswith("DCGM_FI_DEV_RETIRED_SBE,"))
        assert log.count(f"counters.csv:{retired_line}: not serving DCGM_FI_DEV_RETIRED_SBE: embedded DCGM answers "
                         "NOT_SUPPORTED for it on every GPU") == 1
        assert fresh(text) and value(text, "dcgm_collector_up") == 1
        nvml_labels = {gpu: {k: labels[k] for k in LABELS}
                       for gpu, (labels, _) in by_gpu(text, "DCGM_FI_DEV_GPU_TEMP").items()}
        assert "Traceback" not in collector.log()
    finally:
        collector.end()

    # the same node through --sim carries the same identity labels
    sim = NvmlCollector(tmp_path, _env(), "--sim", "4")
    try:
        text = wait_for(lambda: (t := sim.metrics()) and len(by_gpu(t, "DCGM_FI_DEV_GPU_TEMP")) == 4 and t,
                        what="4 GPUs through --sim", log=sim.log)
        sim_labels = {gpu: {k: labels[k] for k in LABELS}
                      for gpu, (labels, _) in by_gpu(text, "DCGM_FI_DEV_GPU_TEMP").items()}
        assert nvml_labels == sim_labels
        # and --sim serves what --nvml leaves out, so its absence above is the source's doing
        assert len(by_gpu(text, "DCGM_FI_PROF_NVLINK_TX_BYTES")) == 4
    finally:
        sim.end()


def test_a_lost_gpu_stops_while_the_others_stay_fresh(tmp_path):
    (tmp_path / "lost.toml").write_text(LOST_SCENARIO)
    env = _nvml_env(DCGM_SIM_SCENARIO=str(tmp_path / "lost.toml"))
    collector = NvmlCollector(tmp_path, env, "--nvml", "--window", "1")
    try:
        text = wait_for(lambda: (t := collector.metrics()) and len(by_gpu(t, "DCGM_FI_DEV_GPU_TEMP")) == 3 and t,
                        what="3 GPUs", log=collector.log)
        started = time.monotonic()
        while "1" in by_gpu(text := collector.metrics(), "DCGM_FI_DEV_GPU_TEMP"):
            assert set(by_gpu(text, "DCGM_FI_DEV_GPU_TEMP")) == {"0", "1", "2"}
            assert fresh(text), "a lost GPU must not make the target stale"
            assert time.monotonic() - started < LOST_AT_S + STALE_AFTER_S + 5, "GPU 1 never dropped out"
            time.sleep(0.2)
        assert set(by_gpu(text, "DCGM_FI_DEV_GPU_TEMP")) == {"0", "2"}
        assert set(by_gpu(text, "DCGM_FI_DEV_POWER_USAGE")) == {"0", "2"}
        time.sleep(1.0)
        text = collector.metrics()
        assert fresh(text) and value(text, "dcgm_collector_up") == 1
        assert set(by_gpu(text, "DCGM_FI_DEV_GPU_TEMP")) == {"0", "2"}
        # healthy (the others are fresh), and /health says which GPU stopped
        from support import http_get

        assert http_get(f"http://127.0.0.1:{collector.port}/health", timeout=5) == (
            200, b"OK; lost GPU 1 (its series stop)\nsource: nvml, chosen by --nvml")
        assert "Traceback" not in collector.log()
    finally:
        collector.end()


def test_an_xid_and_a_profiling_field_come_through_nvml(tmp_path):
    (tmp_path / "xid.toml").write_text(XID_SCENARIO)
    env = _nvml_env(DCGM_SIM_SCENARIO=str(tmp_path / "xid.toml"))
    collector = NvmlCollector(tmp_path, env, "--nvml", counters_csv=EVENT_AND_PROF_COUNTERS)
    try:
        # GPM: the first pass only takes a sample; from the second on, a ratio of the time between
        text = wait_for(lambda: (t := collector.metrics()) and len(by_gpu(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")) == 2
                        and t, what="DCGM_FI_PROF_GR_ENGINE_ACTIVE on 2 GPUs", log=collector.log)
        for gpu, (_, got) in by_gpu(text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE").items():
            assert 0.0 < got <= 1.0, (gpu, got)     # a training load keeps the engine busy
        text = wait_for(lambda: (t := collector.metrics()) and "1" in by_gpu(t, "DCGM_FI_DEV_XID_ERRORS") and t,
                        what="XID 48 on GPU 1", log=collector.log)
        xids = by_gpu(text, "DCGM_FI_DEV_XID_ERRORS")
        labels, got = xids["1"]
        assert got == 48 and labels["err_code"] == "48", (labels, got)
        assert "0" not in xids, "GPU 0 had no XID"
        assert fresh(text) and value(text, "dcgm_collector_up") == 1
        assert "Traceback" not in collector.log()
    finally:
        collector.end()


def test_costly_fields_are_read_at_their_own_cadence_and_shown_in_self_metrics(tmp_path):
    """With the H200's per-call costs: energy and PCIe replays come from the reader thread
    (true energy read every 10 s, estimated between), and what each field cost is served."""
    from dcgm_collector.engine import nvml_library_path

    env = _env(DCGM_ENGINE_NVML_LIB=str(nvml_library_path()), DCGM_SIM_SCENARIO="2")
    collector = NvmlCollector(tmp_path, env, "--nvml")
    try:
        def costs_ready() -> str | None:
            t = collector.metrics()
            ready = [n for n, labels, v in samples(t) if n == "dcgm_collector_field_read_interval_seconds"]
            return t if len(ready) >= 2 and len(by_gpu(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")) == 2 else None

        text = wait_for(costs_ready, what="per-field costs in the self-metrics", log=collector.log)
        costs = {(n, labels.get("field")): v for n, labels, v in samples(text) if n.startswith("dcgm_collector_field_")}
        energy, replay = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
        assert costs[("dcgm_collector_field_read_interval_seconds", energy)] == 10
        assert costs[("dcgm_collector_field_read_interval_seconds", replay)] == 1
        # a cheap field is read at each sample, so it has no interval of its own
        assert ("dcgm_collector_field_read_interval_seconds", "DCGM_FI_DEV_GPU_TEMP") not in costs
        assert costs[("dcgm_collector_field_reads_total", "DCGM_FI_DEV_GPU_TEMP")] >= 2
        # a true energy read spins ~3 ms: the time spent shows (in the costs the sampler reads
        # once a second, so perhaps one snapshot after the first served energy)
        def energy_read_seconds() -> float:
            return next((v for n, labels, v in samples(collector.metrics())
                         if n == "dcgm_collector_field_read_seconds_total" and labels.get("field") == energy), 0.0)

        wait_for(lambda: energy_read_seconds() >= 0.002, what="the true energy reads' time in the self-metrics",
                 log=collector.log)
        assert ("dcgm_collector_field_late_samples_total", "DCGM_FI_DEV_GPU_TEMP") in costs
        assert "# TYPE dcgm_collector_field_read_seconds_total counter" in text
        for gpu, (_, mj) in by_gpu(text, energy).items():
            assert mj > 0, gpu
    finally:
        collector.end()

    # the physics source reads no hardware: samples are counted, reads are not
    sim = NvmlCollector(tmp_path, _env(), "--sim", "2")
    try:
        text = wait_for(lambda: (t := sim.metrics()) and "dcgm_collector_field_late_samples_total" in t and t,
                        what="late-sample counts through --sim", log=sim.log)
        assert "dcgm_collector_field_reads_total" not in text
    finally:
        sim.end()


def test_a_hostengine_in_nvml_mode_serves_a_remote_collector(tmp_path):
    """Remote collection from a node without DCGM: the engine's hostengine reads NVML, the
    collector reaches it with -r exactly as it reaches NVIDIA's nv-hostengine."""
    from test_hostengine import _start

    env = _nvml_env(DCGM_SIM_SCENARIO="2", DCGM_SIM_NVML_TIME_US=str(FROZEN_US))
    hostengine = _start(tmp_path, "--port", "0", "--nvml", env=env)
    try:
        from dcgm_collector.engine import library_path

        # the collector's side has no DCGM either: the engine's libdcgm.so.4 is its client library
        collector = NvmlCollector(tmp_path, _env(), "-r", hostengine.address, "--dcgm-lib", str(library_path()))
        try:
            text = wait_for(lambda: (t := collector.metrics()) and len(by_gpu(t, "DCGM_FI_DEV_GPU_TEMP")) == 2 and t,
                            what="2 GPUs through the NVML hostengine", log=collector.log)
            reference_env = dict(env, LD_LIBRARY_PATH=str(Path(env["DCGM_ENGINE_NVML_LIB"]).parent))
            reference = json.loads(subprocess.run([sys.executable, "-c", REFERENCE], env=reference_env, check=True,
                                                  capture_output=True, text=True, timeout=60).stdout)
            for gpu, (_, temp) in by_gpu(text, "DCGM_FI_DEV_GPU_TEMP").items():
                assert temp == reference[gpu]["temp"]
            for gpu, (_, used) in by_gpu(text, "DCGM_FI_DEV_FB_USED").items():
                assert used == reference[gpu]["fb_used"]
            # the engine's per-field costs stay in the hostengine's process: nothing claims otherwise here
            assert "dcgm_collector_field_reads_total" not in text
            # the first scrape with both GPUs can precede the first full drain over the wire
            text = wait_for(lambda: (t := collector.metrics()) and fresh(t) and t, what="fresh samples",
                            log=collector.log)
            assert fresh(text) and value(text, "dcgm_collector_up") == 1
        finally:
            collector.end()
    finally:
        assert hostengine.stop() == 0


def test_a_driver_not_loaded_yet_is_retried_until_it_is(tmp_path):
    """nvmlInit failing (the driver being installed or reloaded) does not end the collector:
    it serves its own metrics, /health says why, and it starts the engine once NVML answers."""
    from support import http_get

    from dcgm_collector.collect.target import Backoff

    gate = tmp_path / "driver-not-loaded"
    gate.touch()
    collector = NvmlCollector(tmp_path, _nvml_env(DCGM_SIM_SCENARIO="2", DCGM_SIM_NVML_NOT_LOADED_WHILE=str(gate)),
                              "--nvml")
    try:
        status, body = http_get(f"http://127.0.0.1:{collector.port}/health", timeout=5)
        assert status == 503 and b"DCGM_ST_INIT_ERROR" in body
        text = collector.metrics()
        assert value(text, "dcgm_collector_up") == 0 and not by_gpu(text, "DCGM_FI_DEV_GPU_TEMP")
        log = collector.log()
        assert log.count("the NVIDIA kernel driver is not loaded") == 1   # the engine's reason, once
        assert "cannot start DCGM embedded: DCGM_ST_INIT_ERROR" in log and "retrying" in log
        assert "the engine reading NVML, not started yet" in log
        gate.unlink()
        # the next attempt comes within the longest backoff delay
        wait_for(lambda: len(by_gpu(collector.metrics(), "DCGM_FI_DEV_GPU_TEMP")) == 2,
                 timeout=Backoff().longest_s + 5, what="the GPUs once the driver is loaded", log=collector.log)
        status, _ = http_get(f"http://127.0.0.1:{collector.port}/health", timeout=5)
        assert status == 200
        assert "DCGM embedded started after" in collector.log()
    finally:
        collector.end()


# An NVML library of a driver older than the engine knows: the calls an R4xx driver already had
# for these readings, and none of the newer ones (no _v2 memory info, no field values, no GPM).
OLD_DRIVER_NVML = r"""
#include <string.h>
#include "nvml_abi.h"
static struct nvmlDevice_st { int index; } gpu0 = { 0 };
nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{ if (i) return NVML_ERROR_INVALID_ARGUMENT; *d = &gpu0; return NVML_SUCCESS; }
nvmlReturn_t nvmlSystemGetDriverVersion(char *b, unsigned int n) { strncpy(b, "470.256.02", n); return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *b, unsigned int n)
{ strncpy(b, "Tesla V100-SXM2-32GB", n); return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *b, unsigned int n)
{ strncpy(b, "GPU-00000000-1111-2222-3333-444444444444", n); return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t s, unsigned int *t)
{ *t = 41; return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) { *mw = 61250; return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{ m->total = 34359738368ull; m->used = 3221225472ull; m->free = m->total - m->used; return NVML_SUCCESS; }
"""
OLD_DRIVER_COUNTERS = textwrap.dedent("""\
    DCGM_FI_DEV_GPU_TEMP, gauge, temperature
    DCGM_FI_DEV_POWER_USAGE, gauge, power
    DCGM_FI_DEV_FB_USED, gauge, framebuffer used
    DCGM_FI_DEV_FB_RESERVED, gauge, framebuffer reserved (needs the _v2 call)
    DCGM_FI_DEV_MEMORY_TEMP, gauge, memory temperature (needs field values)
""")


def test_an_older_driver_serves_what_it_has_and_says_what_it_lacks(tmp_path):
    """A libnvidia-ml.so.1 without the newer entry points: their fields are NOT_SUPPORTED,
    one warning names what is missing, and DCGM's v1 fallback still gives the framebuffer."""
    import shutil

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler to build the old driver's library")
    from support import http_get

    source = tmp_path / "old_nvml.c"
    source.write_text(OLD_DRIVER_NVML)
    library = tmp_path / "libnvidia-ml.so.1"
    header_dir = Path(__file__).resolve().parents[2] / "native" / "nvml"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", f"-I{header_dir}", "-o", str(library), str(source)],
                   check=True, timeout=120)
    counters = tmp_path / "old.csv"
    counters.write_text(OLD_DRIVER_COUNTERS)
    env = _env(DCGM_ENGINE_NVML_LIB=str(library))
    proc = Proc(COLLECTOR, ["--nvml", "-f", str(counters), "-c", "200", "--watch-interval", "100",
                            "-a", "127.0.0.1:0"], tmp_path, env, "collector")
    try:
        port = int(proc.wait_log(SERVING)[1])

        def metrics() -> str:
            return http_get(f"http://127.0.0.1:{port}/metrics", timeout=5)[1].decode()

        text = wait_for(lambda: (t := metrics()) and by_gpu(t, "DCGM_FI_DEV_FB_USED") and t,
                        what="the old driver's readings", log=proc.log)
        assert by_gpu(text, "DCGM_FI_DEV_GPU_TEMP")["0"][1] == 41
        assert by_gpu(text, "DCGM_FI_DEV_POWER_USAGE")["0"][1] == pytest.approx(61.25)
        labels, used = by_gpu(text, "DCGM_FI_DEV_FB_USED")["0"]
        assert used == 3072 and labels["modelName"] == "Tesla V100-SXM2-32GB"
        assert not by_gpu(text, "DCGM_FI_DEV_FB_RESERVED") and not by_gpu(text, "DCGM_FI_DEV_MEMORY_TEMP")
        log = proc.log()
        warnings = [line for line in log.splitlines() if "a driver older than this engine knows" in line]
        assert len(warnings) == 1, log
        assert "nvmlDeviceGetMemoryInfo_v2" in warnings[0] and "nvmlDeviceGetFieldValues" in warnings[0]
        assert ("not served, NOT_SUPPORTED on every GPU (2): DCGM_FI_DEV_FB_RESERVED, DCGM_FI_DEV_MEMORY_TEMP"
                in log)
    finally:
        proc.end()


def test_no_libnvidia_ml_exits_1_with_one_line(tmp_path):
    env = _env(DCGM_SIM_SCENARIO="2", DCGM_ENGINE_NVML_LIB="", LD_LIBRARY_PATH="")
    done = run_once(["--nvml", "-a", "127.0.0.1:0"], env, tmp_path)
    assert done.returncode == 1, done
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "libnvidia-ml.so.1" in lines[0] and "DCGM_ENGINE_NVML_LIB" in lines[0]
    assert "dynamic linker" in lines[0] and "leave out --nvml" in lines[0]

    env["DCGM_ENGINE_NVML_LIB"] = str(tmp_path / "nowhere" / "libnvidia-ml.so.1")
    done = run_once(["--nvml", "-a", "127.0.0.1:0"], env, tmp_path)
    assert done.returncode == 1, done
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(tmp_path / "nowhere") in lines[0], done.stderr


@pytest.mark.parametrize(("flags", "env", "both"), [
    (["--nvml", "--sim", "2"], {}, "--nvml and --sim"),
    (["--nvml", "--dcgm-lib", "/nonexistent/libdcgm.so.4"], {}, "--nvml and --dcgm-lib"),
    (["--nvml", "--dcgm"], {}, "--nvml and --dcgm"),
    (["--nvml", "-r", "127.0.0.1:5555"], {}, "--nvml and -r"),
    (["--sim", "2"], {"DCGM_COLLECTOR_NVML": "true"}, "DCGM_COLLECTOR_NVML=true and --sim"),
    (["--sim", "2"], {"DCGM_COLLECTOR_DCGM": "true"}, "DCGM_COLLECTOR_DCGM=true and --sim"),
])
def test_two_sources_are_a_one_line_usage_error_naming_both(tmp_path, flags, env, both):
    done = run_once([*flags, "-a", "127.0.0.1:0"], _env(**env), tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == f"dcgm-collector: error: {both} each choose where the readings come from: give one of them\n"


# ---- no source named: DCGM when its library loads, else the driver's NVML --------------------------------------

def _dcgm_on_the_linker_path() -> bool:
    from dcgm_collector.dcgm.library import probe_library

    return probe_library("libdcgm.so.4") is None


def _linker_path_with(tmp_path: Path, *names: str) -> str:
    """A folder holding only the named libraries of the package's engine (links to them), as a node's would."""
    from dcgm_collector.engine import nvml_library_path

    folder = tmp_path / "lib"
    folder.mkdir()
    for name in names:
        (folder / name).symlink_to(nvml_library_path().parent / name)
    return str(folder)


def _source_seen(collector: NvmlCollector) -> tuple[str, dict[str, str]]:
    """The healthy /health body and the labels of dcgm_collector_build_info but its versions."""
    from support import http_get

    health = wait_for(lambda: (r := http_get(f"http://127.0.0.1:{collector.port}/health", timeout=5))[0] == 200
                      and r[1].decode(), what="/health 200", log=collector.log)
    [labels] = [labels for name, labels, _ in samples(collector.metrics()) if name == "dcgm_collector_build_info"]
    return health, {k: v for k, v in labels.items() if k not in ("version", "dcgm_library")}


@pytest.mark.skipif(_dcgm_on_the_linker_path(), reason="a real libdcgm.so.4 is installed: DCGM would be chosen")
def test_a_node_with_only_the_driver_is_read_through_nvml_with_no_flag(tmp_path):
    """No --nvml, no --sim: libdcgm.so.4 is nowhere, libnvidia-ml.so.1 loads, so the collector reads NVML."""
    env = _env(DCGM_SIM_NVML_COSTS="off", DCGM_SIM_SCENARIO="2",
               LD_LIBRARY_PATH=_linker_path_with(tmp_path, "libnvidia-ml.so.1"))
    collector = NvmlCollector(tmp_path, env)
    try:
        text = wait_for(lambda: (t := collector.metrics()) and len(by_gpu(t, "DCGM_FI_DEV_GPU_TEMP")) == 2 and t,
                        what="GPU temperatures of 2 GPUs", log=collector.log)
        assert sorted(by_gpu(text, "DCGM_FI_DEV_GPU_TEMP")) == ["0", "1"]
        log = collector.log()
        assert "no libdcgm.so.4 found: reading the GPUs through the driver's NVML (libnvidia-ml.so.1)" in log
        assert "the engine reading NVML (" in log
        assert "source: nvml, chosen because libdcgm.so.4 was not found and libnvidia-ml.so.1 loads" in log
        assert _source_seen(collector) == (
            "OK\nsource: nvml, chosen because libdcgm.so.4 was not found and libnvidia-ml.so.1 loads",
            {"source": "nvml", "source_reason": "auto: no libdcgm, NVML loaded"})
    finally:
        collector.end()


def test_a_node_with_dcgm_is_read_through_dcgm_with_no_flag(tmp_path):
    """Both libraries load: DCGM is chosen, and nothing says NVML."""
    env = _env(DCGM_SIM_SCENARIO="2",
               LD_LIBRARY_PATH=_linker_path_with(tmp_path, "libdcgm.so.4", "libnvidia-ml.so.1"))
    collector = NvmlCollector(tmp_path, env)
    try:
        wait_for(lambda: len(by_gpu(collector.metrics(), "DCGM_FI_DEV_GPU_TEMP")) == 2,
                 what="GPU temperatures of 2 GPUs", log=collector.log)
        log = collector.log()
        # the dynamic linker found it through the link: the log names the file it resolves to
        assert "DCGM library " in log and "(dcgm-collector's simulated engine, version" in log
        assert "NVML" not in log
        # the libdcgm.so.4 found is the package's simulator: what runs is the simulated GPUs
        assert _source_seen(collector) == ("OK\nsource: sim, chosen because libdcgm.so.4 loads",
                                           {"source": "sim", "source_reason": "auto: libdcgm loaded"})
    finally:
        collector.end()


@pytest.mark.parametrize(("flag", "env"), [(["--dcgm"], {}), ([], {"DCGM_COLLECTOR_DCGM": "true"})])
def test_dcgm_forced_reads_the_libdcgm_the_linker_finds(tmp_path, flag, env):
    env = _env(DCGM_SIM_SCENARIO="2", LD_LIBRARY_PATH=_linker_path_with(tmp_path, "libdcgm.so.4"), **env)
    collector = NvmlCollector(tmp_path, env, *flag)
    try:
        wait_for(lambda: len(by_gpu(collector.metrics(), "DCGM_FI_DEV_GPU_TEMP")) == 2,
                 what="GPU temperatures of 2 GPUs", log=collector.log)
        given = "--dcgm" if flag else "DCGM_COLLECTOR_DCGM=true"
        assert _source_seen(collector) == (f"OK\nsource: sim, chosen by {given}",
                                           {"source": "sim", "source_reason": "given"})
    finally:
        collector.end()


def test_nvml_forced_reads_nvml_though_libdcgm_loads_too(tmp_path):
    env = _env(DCGM_SIM_NVML_COSTS="off", DCGM_SIM_SCENARIO="2",
               LD_LIBRARY_PATH=_linker_path_with(tmp_path, "libdcgm.so.4", "libnvidia-ml.so.1"))
    collector = NvmlCollector(tmp_path, env, "--nvml")
    try:
        wait_for(lambda: len(by_gpu(collector.metrics(), "DCGM_FI_DEV_GPU_TEMP")) == 2,
                 what="GPU temperatures of 2 GPUs", log=collector.log)
        assert _source_seen(collector) == ("OK\nsource: nvml, chosen by --nvml",
                                           {"source": "nvml", "source_reason": "given"})
        assert "the engine reading NVML (" in collector.log()
    finally:
        collector.end()


@pytest.mark.skipif(_dcgm_on_the_linker_path(), reason="a real libdcgm.so.4 is installed: DCGM would be chosen")
@pytest.mark.parametrize(("flag", "env"), [(["--dcgm"], {}), ([], {"DCGM_COLLECTOR_DCGM": "1"})])
def test_dcgm_forced_with_no_libdcgm_exits_1_and_never_falls_back_to_nvml(tmp_path, flag, env):
    """libnvidia-ml.so.1 loads, but DCGM was asked for: the usual one line of the DCGM search, no NVML."""
    env = _env(LD_LIBRARY_PATH=_linker_path_with(tmp_path, "libnvidia-ml.so.1"), **env)
    done = run_once([*flag, "-a", "127.0.0.1:0"], env, tmp_path)
    assert (done.returncode, done.stdout) == (1, ""), done
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("dcgm-collector: error: libdcgm.so.4 was not found; searched: the dynamic linker's "
                               f"path (LD_LIBRARY_PATH='{tmp_path / 'lib'}', "), lines[0]
    assert lines[0].endswith("; fix: install DCGM (package datacenter-gpu-manager-4), or give the library's path "
                             "(--dcgm-lib PATH or DCGM_COLLECTOR_LIBDCGM=PATH), or use the simulator (--sim)")
    assert "NVML" not in done.stderr and "libnvidia-ml" not in done.stderr


@pytest.mark.skipif(_dcgm_on_the_linker_path(), reason="a real libdcgm.so.4 is installed: DCGM would be chosen")
def test_a_node_with_neither_library_gets_one_line_naming_both_searches_and_the_ways_on(tmp_path):
    missing = tmp_path / "nowhere" / "libnvidia-ml.so.1"
    env = _env(DCGM_ENGINE_NVML_LIB=str(missing))
    env.pop("LD_LIBRARY_PATH", None)
    done = run_once(["-a", "127.0.0.1:0"], env, tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert "libdcgm.so.4 was not found; searched: the dynamic linker's path" in line
    assert f"and libnvidia-ml.so.1 (the NVIDIA driver's NVML) was not found either: cannot open " \
           f"DCGM_ENGINE_NVML_LIB={missing}" in line
    for way in ("install the NVIDIA driver", "datacenter-gpu-manager-4", "--dcgm-lib", "--sim"):
        assert way in line, (way, line)
