"""Processes on the simulated GPUs, as nvidia-ml-py (``pynvml``) sees them through the simulated libnvidia-ml.so.1.

Each client runs in a subprocess with LD_LIBRARY_PATH at the package's
library folder (pynvml loads ``libnvidia-ml.so.1`` by name).  The clock is
frozen (DCGM_SIM_NVML_TIME_US) so that the lists and the GPU's own readings
are taken at one instant.  One scenario names the pid of a real process this
test starts, as a collector's test would, to find it in /proc.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from dcgm_collector import engine

T_US = 3_050_000

_READ = """
import json, pynvml as n

def util(h):
    try:
        return n.nvmlDeviceGetUtilizationRates(h).gpu
    except n.NVMLError as e:
        return str(e)

def samples(h, last_seen):
    try:
        return [[s.pid, s.timeStamp, s.smUtil, s.memUtil] for s in n.nvmlDeviceGetProcessUtilization(h, last_seen)]
    except n.NVMLError as e:
        return str(e)

n.nvmlInit()
out = []
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    gpu = {"compute": [[p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId]
                       for p in n.nvmlDeviceGetComputeRunningProcesses(h)],
           "graphics": [[p.pid, p.usedGpuMemory] for p in n.nvmlDeviceGetGraphicsRunningProcesses(h)],
           "used": n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2).used,
           "util": util(h),
           "samples": samples(h, 0)}
    # the same calls again with lastSeen at the second newest and at the newest sample time
    if isinstance(gpu["samples"], list):
        times = sorted({s[1] for s in gpu["samples"]})
        gpu["after_newest"] = samples(h, times[-1])
        if len(times) > 1:
            gpu["since"] = samples(h, times[-2])
            gpu["info_since"] = [[s.pid, s.timeStamp, s.smUtil, s.memUtil]
                                 for s in n.nvmlDeviceGetProcessesUtilizationInfo(h, times[-2])]
    gpu["instances"] = []
    try:
        slots = n.nvmlDeviceGetMaxMigDeviceCount(h)
    except n.NVMLError:
        slots = 0
    for k in range(slots):
        try:
            mig = n.nvmlDeviceGetMigDeviceHandleByIndex(h, k)
        except n.NVMLError_NotFound:
            continue
        gpu["instances"].append([p.pid for p in n.nvmlDeviceGetComputeRunningProcesses(mig)])
    out.append(gpu)
n.nvmlShutdown()
print(json.dumps(out))
"""


def _read(scenario: str, cwd, t_us: int = T_US) -> list[dict]:
    pytest.importorskip("pynvml")
    env = dict(os.environ, DCGM_SIM_SCENARIO=scenario, DCGM_SIM_NVML_COSTS="off", DCGM_SIM_NVML_TIME_US=str(t_us))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(engine.nvml_library_dir()),
                                                           os.environ.get("LD_LIBRARY_PATH")]))
    # cwd outside the checkout: the source folder has no compiled extension on sys.path
    done = subprocess.run([sys.executable, "-c", _READ], env=env, capture_output=True, text=True,
                          timeout=120, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _scenario(tmp_path, text: str, name: str = "procs.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_scenario_names_a_real_process_and_pynvml_lists_it(tmp_path):
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) as trainer:
        try:
            scenario = _scenario(tmp_path, (
                '[[gpu]]\nmodel = "H200"\nworkload = "training"\n'
                f'[[process]]\ngpu = 0\npid = {trainer.pid}\nname = "trainer"\nfb_bytes = 1050673152\n'))
            (gpu,) = _read(scenario, tmp_path)
            assert gpu["compute"] == [[trainer.pid, 1050673152, 0xFFFFFFFF, 0xFFFFFFFF]]
            assert gpu["graphics"] == []
            # the GPU's framebuffer used is its process's, to DCGM's MiB
            assert gpu["used"] == 1050673152 // 2**20 * 2**20
            # the process is real: a collector finds its name in /proc
            assert os.path.exists(f"/proc/{gpu['compute'][0][0]}/cmdline")
            # one process carries all of the GPU's load
            newest = max(s[1] for s in gpu["samples"])
            assert [s[2] for s in gpu["samples"] if s[1] == newest] == [gpu["util"]]
            assert gpu["util"] > 80
        finally:
            trainer.kill()


def test_shares_split_the_load_and_samples_come_after_last_seen(tmp_path):
    scenario = _scenario(tmp_path, (
        '[[gpu]]\nmodel = "H100"\nworkload = "training"\n'
        '[[process]]\ngpu = 0\npid = 100\nfb_bytes = 2147483648\nsm_share = 0.75\nmem_share = 0.5\n'
        '[[process]]\ngpu = 0\npid = 200\nfb_bytes = 1073741824\nsm_share = 0.25\nmem_share = 0.5\n'
        '[[process]]\ngpu = 0\npid = 300\ntype = "graphics"\nfb_bytes = 104857600\nsm_share = 0\nmem_share = 0\n'))
    (gpu,) = _read(scenario, tmp_path)
    assert [p[:2] for p in gpu["compute"]] == [[100, 2147483648], [200, 1073741824]]
    assert gpu["graphics"] == [[300, 104857600]]
    assert gpu["used"] == 2147483648 + 1073741824 + 104857600
    times = sorted({s[1] for s in gpu["samples"]})
    assert len(times) == 5 and all(b - a == 200_000 for a, b in zip(times, times[1:]))   # 200 ms apart, 1 s kept
    newest = {s[0]: s for s in gpu["samples"] if s[1] == times[-1]}
    assert sorted(newest) == [100, 200, 300]
    assert newest[300][2] == 0
    assert abs(newest[100][2] - 3 * newest[200][2]) <= 2             # 3:1 by their shares
    assert abs(newest[100][2] + newest[200][2] - gpu["util"]) <= 1

    assert sorted(s[0] for s in gpu["since"]) == [100, 200, 300] and {s[1] for s in gpu["since"]} == {times[-1]}
    assert gpu["after_newest"] == "Not Found"
    assert gpu["info_since"] == gpu["since"]   # the versioned call gives the same samples


def test_processes_start_stop_and_leave_the_gpu_idle(tmp_path):
    scenario = _scenario(tmp_path, (
        '[[gpu]]\nmodel = "H100"\ncount = 2\nworkload = "training"\n'
        '[[process]]\ngpu = 0\npid = 100\nstart = 1\nstop = 2\nfb_bytes = 1073741824\n'
        '[[process]]\ngpu = 1\npid = 200\nstart = 1\nfb_bytes = 1073741824\nfb_growth = 1048576\n'))
    stopped, leaking = _read(scenario, tmp_path)
    assert stopped["compute"] == [] and stopped["used"] == 0 and stopped["util"] == 0
    assert stopped["samples"] == "Not Found"
    # 1 MiB/s from 1 s on: 2 MiB more at 3 s (the 100 ms step the read falls in)
    assert leaking["compute"] == [[200, 1073741824 + 2 * 2**20, 0xFFFFFFFF, 0xFFFFFFFF]]


def test_mig_lists_every_instance_on_the_parent_its_own_on_a_mig_handle_and_no_utilisation(tmp_path):
    scenario = _scenario(tmp_path, (
        '[[gpu]]\nmodel = "H100"\nmig_profiles = ["3g.40gb", "2g.20gb"]\n'
        '[[process]]\ngpu = 0\npid = 100\ngpu_instance = 0\nfb_bytes = 1048576\n'
        '[[process]]\ngpu = 0\npid = 101\ngpu_instance = 1\ncompute_instance = 0\nfb_bytes = 2097152\n'))
    (gpu,) = _read(scenario, tmp_path)
    assert gpu["compute"] == [[100, 1048576, 0, 0], [101, 2097152, 1, 0]]
    assert gpu["instances"] == [[100], [101]]   # each MIG device handle lists its own instance's
    assert gpu["samples"] == "Not Supported" and gpu["util"] == "Not Supported"


def test_nvitop_shows_the_processes_of_a_mig_node(tmp_path):
    """nvitop walks the MIG device handles (their BAR1 included) and lists each GPU's process."""
    nvitop = shutil.which("nvitop", path=os.path.dirname(sys.executable)) or shutil.which("nvitop")
    assert nvitop is not None, "nvitop (in the test extra) is not installed"
    env = dict(os.environ, DCGM_SIM_SCENARIO=str(engine.resolve_scenario("mig")), DCGM_SIM_NVML_COSTS="off")
    env["LD_LIBRARY_PATH"] = str(engine.nvml_library_dir())
    done = subprocess.run([nvitop, "--once", "--ascii"], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if " 42000" in line]
    # the synthetic process of each MIG GPU runs in its first instance (GPU:instance), the whole H100 has none idle
    assert [row[1:3] for row in rows] == [["0:0", "4200000"], ["1:0", "4200001"], ["2:0", "4200002"]], done.stdout


def test_the_default_node_runs_one_training_process_per_gpu_above_any_real_pid(tmp_path):
    gpus = _read("2", tmp_path)
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    for index, gpu in enumerate(gpus):
        ((pid, memory, _, _),) = gpu["compute"]
        assert pid == 4_200_000 + index and pid > pid_max
        assert memory == gpu["used"]
        newest = max(s[1] for s in gpu["samples"])
        assert [s[2] for s in gpu["samples"] if s[1] == newest] == [gpu["util"]]


def test_the_shipped_processes_scenario_runs_what_it_says(tmp_path):
    scenario = str(engine.resolve_scenario("processes"))
    trainers, churn = _read(scenario, tmp_path, t_us=60_000_000)
    assert [p[:2] for p in trainers["compute"]] == [
        [4300001, 1050673152], [4300002, 268435456 + 60 * 4194304], [4300003, 536870912]]
    assert trainers["used"] == 1050673152 // 2**20 * 2**20 + 268435456 + 60 * 4194304 + 536870912
    # five a second living two seconds: the ten started after 58 s, the one starting at 60 s included
    assert [p[0] for p in churn["compute"]] == list(range(4400291, 4400301))
    assert churn["used"] == 10 * 134217728
    (after,) = _read(scenario, tmp_path, t_us=100_000_000)[:1]
    assert [p[0] for p in after["compute"]] == [4300001, 4300002]


@pytest.mark.parametrize(("text", "line", "message"), [
    ("[[process]]\npid = 5\n", 3, "[[process]] needs 'gpu' (the index of the GPU it runs on)"),
    ("[[process]]\ngpu = 2\n", 3, "gpu 2 does not exist (the scenario has 1 GPUs, numbered 0-0)"),
    ("[[process]]\ngpu = 0\ncolour = 1\n", 5, "unknown key 'colour' in [[process]] (known: gpu, pid, name, type, "
     "start, stop, fb_bytes, fb_growth, sm_share, mem_share, gpu_instance, compute_instance, churn, lifetime)"),
    ('[[process]]\ngpu = 0\ntype = "video"\n', 5, 'unknown process type "video" (known: compute, graphics)'),
    ("[[process]]\ngpu = 0\nstart = 5\nstop = 2\n", 3, "stop (2 s) must come after start (5 s)"),
    ("[[process]]\ngpu = 0\nchurn = 10\n", 3, "'churn' (processes started per second) and 'lifetime' "
     "(seconds each lives) go together"),
    ("[[process]]\ngpu = 0\nchurn = 1000\nlifetime = 10\n", 3,
     "churn 1000/s with lifetime 10 s keeps 10000 processes alive (at most 1024)"),
    ("[[process]]\ngpu = 0\ngpu_instance = 0\n", 3,
     "'gpu_instance' and 'compute_instance' need MIG on GPU 0 (mig_instances > 0)"),
    ("[[process]]\ngpu = 0\nsm_share = 2\n", 5, "'sm_share'"),
])
def test_bad_process_tables_are_one_line_naming_file_and_line(tmp_path, text, line, message):
    bad = _scenario(tmp_path, '[[gpu]]\nmodel = "H100"\n' + text, "bad.toml")
    with pytest.raises(ValueError) as caught:
        engine.check_scenario(bad)
    first = str(caught.value)
    assert "\n" not in first
    assert first.startswith(f"{bad}:{line}: ") or first.startswith(f"bad.toml:{line}: ")
    assert message in first


def test_a_mig_instance_the_gpu_lacks_is_named(tmp_path):
    bad = _scenario(tmp_path, '[[gpu]]\nmodel = "H100"\nmig_instances = 2\n'
                              '[[process]]\ngpu = 0\ngpu_instance = 5\n', "bad.toml")
    with pytest.raises(ValueError, match=r"bad\.toml:4: gpu_instance 5 does not exist \(GPU 0 has 2, numbered 0-1\)"):
        engine.check_scenario(bad)
