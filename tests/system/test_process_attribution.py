"""Each process's own pod, namespace, container and hpc_job on /metrics, end to end.

The test starts real child processes and moves them into cgroups it makes,
named as the kubelet's systemd driver and containerd name a pod's container
(cgroup v2) and as Slurm's v1 plugin names a job step; a scenario lists
their pids on the GPUs.  A kubelet stand-in gives two replicas of GPU 0 to
two pods (time-slicing), a device-manager checkpoint written here names the
pods' UIDs, and job mapping files give GPU 0 one job and GPU 1 two.  The
collector runs with --processes -k --hpc-job-mapping-dir, once on the
simulated DCGM (--sim) and once on the package's NVML engine (--nvml over
the simulated NVML), and /metrics is read over HTTP.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid as uuids
from pathlib import Path

import pytest
from kubelet_standin import Container, KubeletStandIn, Pod
from support import COLLECTOR, SERVING, http_get, launch, samples, stop_process, wait_for

UID_A = str(uuids.uuid4())
UID_B = str(uuids.uuid4())
CONTAINER_A = "a1" * 32
CONTAINER_B = "b2" * 32
JOB = "4242"
SLURM_CGROUP = f"slurm/uid_0/job_{JOB}/step_0"
ATTRIBUTES = ("pod", "namespace", "container", "hpc_job")
SLEEPER = "print('ready', flush=True); import time; time.sleep(300)"


def _mounts() -> tuple[Path | None, Path | None]:
    """The cgroup v2 mount, and a v1 hierarchy Slurm would use (freezer, else any), from /proc/self/mounts."""
    v2 = v1 = None
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, kind, options = line.split()[:4]
        if kind == "cgroup2" and v2 is None:
            v2 = Path(where)
        elif kind == "cgroup" and (v1 is None or "freezer" in options.split(",")):
            v1 = Path(where)
    return v2, v1


def _pod_cgroup(uid: str, container: str) -> str:
    slice_uid = uid.replace("-", "_")
    return (f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{slice_uid}.slice/"
            f"cri-containerd-{container}.scope")


class Cgroups:
    """The cgroups the test makes (removed again, deepest first, once their processes are gone)."""

    def __init__(self) -> None:
        self.made: list[Path] = []

    def place(self, root: Path, path: str, pid: int) -> None:
        folder = root
        for part in path.split("/"):
            folder = folder / part
            if not folder.is_dir():
                folder.mkdir()
                self.made.append(folder)
        (folder / "cgroup.procs").write_text(str(pid))

    def remove(self) -> None:
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except OSError:
                pass


@pytest.fixture
def node():
    """Five sleeping children: two in pods A and B, one on the host (GPU 0), one in Slurm job 4242 and one
    on the host (GPU 1)."""
    v2, v1 = _mounts()
    if v2 is None or v1 is None:
        pytest.skip("needs a cgroup v2 mount and a cgroup v1 hierarchy (see /proc/self/mounts)")
    children = [subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
                for _ in range(5)]
    cgroups = Cgroups()
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        pod_a, pod_b, host0, slurm, host1 = (child.pid for child in children)
        try:
            cgroups.place(v2, _pod_cgroup(UID_A, CONTAINER_A), pod_a)
            cgroups.place(v2, _pod_cgroup(UID_B, CONTAINER_B), pod_b)
            cgroups.place(v1, SLURM_CGROUP, slurm)
        except OSError as error:
            pytest.skip(f"cannot make test cgroups under {v2} and {v1}: {error.strerror or error}")
        assert f"/kubepods-besteffort-pod{UID_A.replace('-', '_')}.slice/" in Path(f"/proc/{pod_a}/cgroup").read_text()
        yield {"pod_a": pod_a, "pod_b": pod_b, "host0": host0, "slurm": slurm, "host1": host1}
    finally:
        for child in children:
            child.kill()
            child.wait()
        cgroups.remove()


def _scenario(pids: dict[str, int]) -> str:
    gpus = {"pod_a": 0, "pod_b": 0, "host0": 0, "slurm": 1, "host1": 1}
    tables = "".join(f"[[process]]\ngpu = {gpus[name]}\npid = {pid}\nfb_bytes = {1000 + n}\n"
                     for n, (name, pid) in enumerate(pids.items()))
    return f'seed = 11\n[[gpu]]\nmodel = "H200"\ncount = 2\n{tables}'


def _checkpoint(uuid0: str) -> str:
    entries = [{"PodUID": uid, "ContainerName": container, "ResourceName": "nvidia.com/gpu",
                "DeviceIDs": {"0": [f"{uuid0}::{replica}"]}, "AllocResp": "CgA="}
               for uid, container, replica in ((UID_A, "trainer", 0), (UID_B, "worker", 1))]
    return json.dumps({"Data": {"PodDeviceEntries": entries,
                                "RegisteredDevices": {"nvidia.com/gpu": [f"{uuid0}::0", f"{uuid0}::1"]}},
                       "Checksum": 2736593301})


@pytest.mark.parametrize("source", ["sim", "nvml"])
def test_each_process_series_carries_its_own_pod_and_job_once(node, source, open_node, tmp_path):
    # a short folder: the kubelet socket's path must fit a unix socket address
    work = Path(tempfile.mkdtemp(prefix="attr-"))
    (work / "node.toml").write_text(_scenario(node))
    handle = open_node(str(work / "node.toml"))
    uuid0 = handle.gpus()[0].uuid
    handle.close()
    (work / "checkpoint").write_text(_checkpoint(uuid0))
    (work / "jobs").mkdir()
    (work / "jobs" / "0").write_text("9000\n")
    (work / "jobs" / "1").write_text(f"{JOB}\n5151\n")
    kubelet = KubeletStandIn(work / "kubelet.sock", pods=[
        Pod("train-a", "team-a", [Container("trainer", {"nvidia.com/gpu": [f"{uuid0}::0"]})]),
        Pod("train-b", "team-b", [Container("worker", {"nvidia.com/gpu": [f"{uuid0}::1"]})]),
    ]).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "NODE_NAME"))}
    if source == "sim":
        flags = ["--sim", str(work / "node.toml")]
    else:
        from dcgm_collector.engine import nvml_library_path

        flags = ["--nvml"]
        env.update(DCGM_ENGINE_NVML_LIB=str(nvml_library_path()), DCGM_SIM_SCENARIO=str(work / "node.toml"),
                   DCGM_SIM_NVML_COSTS="off")
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, *flags, "-a", "127.0.0.1:0", "--processes", "-k",
                      "--pod-resources-kubelet-socket", str(work / "kubelet.sock"),
                      "--kubernetes-device-checkpoint", str(work / "checkpoint"),
                      "--hpc-job-mapping-dir", str(work / "jobs"), cwd=tmp_path, env=env, stdout=out,
                      stderr=subprocess.STDOUT)
    try:
        port = int(wait_for(lambda: SERVING.search(log.read_text()), timeout=60, what="serving",
                            log=log.read_text)[1])

        def attributed():
            status, body = http_get(f"http://127.0.0.1:{port}/metrics", timeout=5)
            found = samples(body.decode()) if status == 200 else []
            fb = [labels for name, labels, _ in found if name == "DCGM_EXP_PROCESS_FB_USED_BYTES"]
            pids = {labels["pid"] for labels in fb}
            ready = pids >= {str(pid) for pid in node.values()} and any(labels.get("pod") for labels in fb)
            return found if ready else None

        found = wait_for(attributed, timeout=30, what="the processes' series with pod labels", log=log.read_text)
    finally:
        stop_process(proc)
        kubelet.stop()
        shutil.rmtree(work, ignore_errors=True)
    text = log.read_text()
    assert "Traceback" not in text and "device checkpoint" not in text, text

    def own(pid: int) -> list[dict[str, str]]:
        return [{k: labels[k] for k in ATTRIBUTES if k in labels} for name, labels, _ in found
                if name == "DCGM_EXP_PROCESS_FB_USED_BYTES" and labels["pid"] == str(pid)]

    # two pods time-slicing GPU 0: each process its own pod, once, with the GPU's one job
    assert own(node["pod_a"]) == [{"pod": "train-a", "namespace": "team-a", "container": "trainer",
                                   "hpc_job": "9000"}]
    assert own(node["pod_b"]) == [{"pod": "train-b", "namespace": "team-b", "container": "worker",
                                   "hpc_job": "9000"}]
    # a host process on the pods' GPU: none of their labels (the GPU's own series carry the last holder's)
    assert own(node["host0"]) == [{"hpc_job": "9000"}]
    gpu0 = [labels for name, labels, _ in found if name == "DCGM_FI_DEV_FB_USED" and labels["gpu"] == "0"]
    assert [(labels["pod"], labels["hpc_job"]) for labels in gpu0] == [("train-b", "9000")]
    # GPU 1's series are one copy per job; the Slurm job's process is served once, with its own job,
    # and a host process there (two jobs, its cgroup names neither) once, with none
    gpu1 = [labels for name, labels, _ in found if name == "DCGM_FI_DEV_FB_USED" and labels["gpu"] == "1"]
    assert sorted(labels["hpc_job"] for labels in gpu1) == [JOB, "5151"]
    assert own(node["slurm"]) == [{"hpc_job": JOB}]
    assert own(node["host1"]) == [{}]
    assert [labels.get("hpc_job") for name, labels, _ in found
            if name == "DCGM_EXP_PROCESS_COUNT" and labels["gpu"] == "1"] == [JOB, "5151"]
