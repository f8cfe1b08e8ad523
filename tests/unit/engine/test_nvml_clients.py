"""Real NVML clients against the simulated libnvidia-ml.so.1, and the same scenario through both libraries.

nvidia-ml-py (``pynvml``) loads ``libnvidia-ml.so.1`` through the dynamic
loader, so each client runs in a subprocess with LD_LIBRARY_PATH set to the
package's library folder.  The clock is frozen (DCGM_SIM_NVML_TIME_US) so
that the NVML side and the engine's dcgmSimGetValueAt read the node at the
same instant; the values must then agree within NVML's units.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from dcgm_collector import engine

T_US = 7_000_000
SCENARIO = (
    'seed = 11\n[[gpu]]\nmodel = "H100"\ncount = 2\nworkload = "training"\n'
    '[[gpu]]\nmodel = "L4"\ncount = 1\nworkload = "spikes"\n'
)

_PYNVML_READ = """
import json, pynvml as n
n.nvmlInit()
out = {"driver": n.nvmlSystemGetDriverVersion(), "gpus": []}
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    mem = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
    util = n.nvmlDeviceGetUtilizationRates(h)
    try:
        fan = n.nvmlDeviceGetFanSpeed(h)
    except n.NVMLError as e:
        fan = str(e)
    out["gpus"].append({
        "name": n.nvmlDeviceGetName(h), "uuid": n.nvmlDeviceGetUUID(h),
        "bus": n.nvmlDeviceGetPciInfo(h).busId,
        "mem_total": mem.total, "mem_used": mem.used, "mem_free": mem.free, "mem_reserved": mem.reserved,
        "util": util.gpu, "mem_util": util.memory,
        "power_mw": n.nvmlDeviceGetPowerUsage(h), "limit_mw": n.nvmlDeviceGetEnforcedPowerLimit(h),
        "temp": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
        "sm": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM), "mem_clock": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
        "max_sm": n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM),
        "energy": n.nvmlDeviceGetTotalEnergyConsumption(h),
        "processes": len(n.nvmlDeviceGetComputeRunningProcesses(h)), "fan": fan,
    })
n.nvmlShutdown()
print(json.dumps(out))
"""

_DCGM_READ = """
import json
from dcgm_collector import dcgm, engine
from dcgm_collector.ext._native import ffi, lib
fields = (50, 54, 150, 155, 100, 101, 203, 252, 250, 156, 164)
with dcgm.Handle.embedded(library=engine.library_path()):
    record = ffi.new("dcgmFieldValue_v1 *")
    out = []
    for gpu in range(3):
        row = {}
        for field in fields:
            assert lib.dcgmSimGetValueAt(gpu, field, %d, record) == 0
            if record.fieldType == ord("s"):
                row[field] = ffi.string(record.value.str).decode()
            elif record.fieldType == ord("d"):
                row[field] = record.value.dbl
            else:
                row[field] = record.value.i64
        out.append(row)
print(json.dumps(out))
""" % T_US


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("nvml") / "nvml.toml"
    path.write_text(SCENARIO)
    return str(path)


def _env(scenario: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ, DCGM_SIM_SCENARIO=scenario, DCGM_SIM_NVML_COSTS="off", DCGM_SIM_NVML_TIME_US=str(T_US))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(engine.nvml_library_dir()),
                                                           os.environ.get("LD_LIBRARY_PATH")]))
    env.update(extra)
    return env


def _run(code: str, env: dict[str, str], cwd) -> dict | list:
    # cwd outside the checkout: the source folder has no compiled extension on sys.path
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def nvml_view(scenario, tmp_path_factory):
    pytest.importorskip("pynvml")
    return _run(_PYNVML_READ, _env(scenario), tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="module")
def dcgm_view(scenario, tmp_path_factory):
    return _run(_DCGM_READ, dict(os.environ, DCGM_SIM_SCENARIO=scenario), tmp_path_factory.mktemp("cwd"))


def test_nvidia_ml_py_reads_the_simulated_node(nvml_view):
    assert nvml_view["driver"]
    gpus = nvml_view["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA L4"]
    assert len({g["uuid"] for g in gpus}) == 3 and all(g["uuid"].startswith("GPU-") for g in gpus)
    for g in gpus:
        assert g["mem_total"] == g["mem_reserved"] + g["mem_used"] + g["mem_free"]
        assert 0 <= g["util"] <= 100 and 0 <= g["mem_util"] <= 100
        assert 0 < g["power_mw"] <= g["limit_mw"] * 1.05
        assert 20 <= g["temp"] <= 100
        assert 0 < g["sm"] <= g["max_sm"]
        assert g["energy"] > 0 and g["processes"] == 1  # each GPU's load runs in one process
        assert g["fan"] == "Not Supported"


def test_the_same_scenario_gives_the_same_values_through_dcgm_and_nvml(nvml_view, dcgm_view):
    assert len(nvml_view["gpus"]) == len(dcgm_view) >= 1
    for nvml, dcgm in zip(nvml_view["gpus"], dcgm_view):
        assert nvml["name"] == dcgm["50"] and nvml["uuid"] == dcgm["54"]
        assert nvml["temp"] == dcgm["150"]                                  # degC both
        assert abs(nvml["power_mw"] / 1000.0 - dcgm["155"]) <= 0.0005       # mW -> W
        assert abs(nvml["limit_mw"] / 1000.0 - dcgm["164"]) <= 0.0005
        assert nvml["sm"] == dcgm["100"] and nvml["mem_clock"] == dcgm["101"]  # MHz both
        assert nvml["util"] == dcgm["203"]                                  # percent both
        assert nvml["mem_used"] // (1024 * 1024) == dcgm["252"]             # bytes -> MiB, DCGM's floor
        assert nvml["mem_total"] // (1024 * 1024) == dcgm["250"]
        assert nvml["energy"] == dcgm["156"]                                # mJ both


def test_uninitialized_and_no_permission_reach_pynvml_as_nvml_errors(scenario, tmp_path):
    pytest.importorskip("pynvml")
    code = """
import json, pynvml as n
out = {}
try:
    n.nvmlDeviceGetCount()
except n.NVMLError as e:
    out["before_init"] = e.value
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
try:
    n.nvmlDeviceGetPowerUsage(h)
except n.NVMLError as e:
    out["denied"] = e.value
out["temp"] = n.nvmlDeviceGetTemperature(h, 0)
n.nvmlShutdown()
print(json.dumps(out))
"""
    out = _run(code, _env(scenario, DCGM_SIM_NVML_NO_PERMISSION="nvmlDeviceGetPowerUsage"), tmp_path)
    assert out["before_init"] == 1       # NVML_ERROR_UNINITIALIZED
    assert out["denied"] == 4            # NVML_ERROR_NO_PERMISSION
    assert out["temp"] > 0


def test_gpustat_runs_against_the_simulated_library(scenario, tmp_path):
    gpustat = shutil.which("gpustat", path=os.path.dirname(sys.executable)) or shutil.which("gpustat")
    assert gpustat is not None, "gpustat (in the test extra) is not installed"
    done = subprocess.run([gpustat, "--json"], env=_env(scenario), capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [g["name"] for g in report["gpus"]] == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA L4"]
    assert all(g["temperature.gpu"] > 0 and g["memory.total"] > 0 for g in report["gpus"])


def test_nvitop_runs_against_the_simulated_library(scenario, tmp_path):
    """nvitop (nvidia-ml-py underneath) prints its one-shot table without a missing entry point."""
    nvitop = shutil.which("nvitop", path=os.path.dirname(sys.executable)) or shutil.which("nvitop")
    assert nvitop is not None, "nvitop (in the test extra) is not installed"
    done = subprocess.run([nvitop, "--once", "--ascii"], env=_env(scenario), capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ERROR" not in done.stderr and "undefined symbol" not in done.stderr, done.stderr
    assert "Driver Version: " in done.stdout
    rows = [line for line in done.stdout.splitlines() if "H100 80GB HBM3" in line or "L4" in line]
    assert len(rows) == 3, done.stdout
