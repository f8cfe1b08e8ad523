"""NVIDIA's own Python DCGM bindings run unchanged against the engine, with either value source.

The bindings (DcgmReader, pydcgm, dcgm_agent, dcgm_structs, ... from
NVIDIA/DCGM testing/python3) are not part of this project and are never
copied into it: point DCGM_NVIDIA_BINDINGS at a directory holding them
(the testing/python3 folder of a checkout of NVIDIA's DCGM repository).  Without it these
tests are skipped.

The reader runs in a child interpreter with only that directory on
PYTHONPATH and the engine's directory on LD_LIBRARY_PATH, which is how the
bindings find a real libdcgm.so.4.  The engine reads its simulated GPUs either
from its physics models or through the simulated libnvidia-ml.so.1 (NVML
mode, DCGM_ENGINE_SOURCE=nvml), as it reads real GPUs on a node without DCGM.  The child prints what it read as JSON;
the checks live here.  Its stderr must stay free of tracebacks, including the
ones NVIDIA's destructors print at interpreter exit when a teardown call
answers an unexpected code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BINDINGS_ENV = "DCGM_NVIDIA_BINDINGS"
FIELD_IDS = {"gpu_temp": 150, "power_usage": 155, "gpu_utilization": 203, "fb_used": 252}
DEFAULT_GPU_COUNT = 8
WATCH_INTERVAL_US = 100_000
RUN_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def nvidia_bindings() -> Path:
    configured = os.environ.get(BINDINGS_ENV)
    if not configured:
        pytest.skip(f"{BINDINGS_ENV} is not set: point it at NVIDIA/DCGM testing/python3 "
                    "of a DCGM source checkout")
    directory = Path(configured)
    if not (directory / "DcgmReader.py").is_file():
        pytest.skip(f"{BINDINGS_ENV}={configured} holds no DcgmReader.py")
    return directory


# hostname=None selects the embedded host engine (DcgmReader's default
# "localhost" would dial a TCP hostengine instead).  The first since-last-call
# read only primes the reader's cursor and reports nothing, by design.
READER_SCRIPT = textwrap.dedent("""
    import json
    import sys
    import time

    import DcgmReader

    field_ids = [int(f) for f in sys.argv[1].split(",")]
    explicit_shutdown = sys.argv[2] == "shutdown"

    started_us = int(time.time() * 1e6)
    reader = DcgmReader.DcgmReader(hostname=None, fieldIds=field_ids, updateFrequency=%d)
    reader.Init()
    time.sleep(1.0)
    latest = reader.GetLatestGpuValuesAsFieldIdDict()
    reader.GetAllGpuValuesAsFieldIdDictSinceLastCall()
    time.sleep(1.0)
    since_first = reader.GetAllGpuValuesAsFieldIdDictSinceLastCall()
    time.sleep(0.5)
    since_second = reader.GetAllGpuValuesAsFieldIdDictSinceLastCall()

    def series(values_by_gpu):
        return {str(gpu): {str(field): [[v.ts, v.value] for v in values]
                           for field, values in fields.items()}
                for gpu, fields in values_by_gpu.items()}

    print(json.dumps({
        "started_us": started_us,
        "ended_us": int(time.time() * 1e6),
        "gpu_ids": sorted(reader.m_gpuIdToUUId),
        "uuids": {str(gpu): uuid for gpu, uuid in reader.m_gpuIdToUUId.items()},
        "bus_ids": {str(gpu): bus for gpu, bus in reader.m_gpuIdToBusId.items()},
        "latest": {str(gpu): {str(f): v for f, v in fields.items()} for gpu, fields in latest.items()},
        "since": [series(since_first), series(since_second)],
    }))
    sys.stdout.flush()
    if explicit_shutdown:
        reader.Shutdown()
""" % WATCH_INTERVAL_US)


def _plausible(field_id: int, value: float) -> bool:
    if field_id == FIELD_IDS["gpu_temp"]:
        return 20 <= value <= 100
    if field_id == FIELD_IDS["power_usage"]:
        return 0 < value < 5000
    if field_id == FIELD_IDS["gpu_utilization"]:
        return 0 <= value <= 100
    return value >= 0


@pytest.fixture(scope="module")
def sim_library_dir() -> Path:
    from dcgm_collector.engine import library_dir

    directory = Path(library_dir())
    assert (directory / "libdcgm.so.4").is_file(), f"no libdcgm.so.4 in {directory}"
    return directory


def _run_reader(bindings: Path, library_dir: Path, workdir: Path, teardown: str, source: str = "models"):
    script = workdir / "read_with_dcgm_reader.py"
    script.write_text(READER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_SIM_", "DCGM_ENGINE_"))}
    env["DCGM_ENGINE_SOURCE"] = source
    if source == "nvml":
        env["DCGM_ENGINE_NVML_LIB"] = str(library_dir / "libnvidia-ml.so.1")
    env["PYTHONPATH"] = str(bindings)
    env["LD_LIBRARY_PATH"] = str(library_dir)
    fields = ",".join(str(f) for f in FIELD_IDS.values())
    return subprocess.run(
        [sys.executable, str(script), fields, teardown],
        capture_output=True, text=True, env=env, cwd=workdir, timeout=RUN_TIMEOUT_S,
    )


@pytest.mark.parametrize(("source", "teardown"), [("models", "shutdown"), ("models", "interpreter-exit"),
                                                  ("nvml", "shutdown"), ("nvml", "interpreter-exit")])
def test_dcgm_reader_reads_simulated_node(nvidia_bindings: Path, sim_library_dir: Path,
                                          tmp_path: Path, source: str, teardown: str) -> None:
    result = _run_reader(nvidia_bindings, sim_library_dir, tmp_path, teardown, source)
    report = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"

    assert result.returncode == 0, report
    assert "Traceback" not in result.stderr, report
    assert "Exception ignored" not in result.stderr, report
    read = json.loads(result.stdout.strip().splitlines()[-1])

    gpus = [str(g) for g in range(DEFAULT_GPU_COUNT)]
    assert read["gpu_ids"] == list(range(DEFAULT_GPU_COUNT)), report
    assert all(read["uuids"][g].startswith("GPU-") for g in gpus), report
    assert len(set(read["uuids"].values())) == DEFAULT_GPU_COUNT, report
    assert all(read["bus_ids"][g] for g in gpus), report

    assert sorted(read["latest"]) == gpus, report
    for gpu in gpus:
        for field_id in FIELD_IDS.values():
            value = read["latest"][gpu].get(str(field_id))
            assert value is not None and _plausible(field_id, value), (gpu, field_id, value, report)

    # History begins at the watch (a little slack for the pass stamped as
    # the watch is set up): nothing invented before the reader started.
    earliest_us = read["started_us"] - WATCH_INTERVAL_US
    latest_us = read["ended_us"] + 1_000_000
    min_samples = [5, 1]   # ~2 s then ~0.5 s of a 100 ms watch
    last_ts: dict[tuple[str, str], int] = {}
    for window, at_least in zip(read["since"], min_samples):
        assert sorted(window) == gpus, report
        for gpu in gpus:
            for field_id in FIELD_IDS.values():
                samples = window[gpu].get(str(field_id), [])
                assert len(samples) >= at_least, f"gpu {gpu} field {field_id}: {samples}\n{report}"
                for ts, value in samples:
                    assert earliest_us <= ts <= latest_us, (gpu, field_id, ts, report)
                    key = (gpu, str(field_id))
                    # strictly increasing across windows: nothing repeats, nothing goes back
                    assert ts > last_ts.get(key, 0), (key, ts, last_ts.get(key), report)
                    assert _plausible(field_id, value), (key, value, report)
                    last_ts[key] = ts
