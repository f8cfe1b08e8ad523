"""A process's own pod and job: a real PodMapper on a kubelet stand-in, a checkpoint file and a /proc folder
the test writes (each pid's stat and cgroup), and a real job mapping directory."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from kubelet_standin import Container, KubeletStandIn, Pod

from dcgm_collector.attribution.checkpoint import CheckpointError, DeviceCheckpoint, parse_checkpoint
from dcgm_collector.attribution.hpc import HpcJobMapper
from dcgm_collector.attribution.podresources import PodMapper
from dcgm_collector.attribution.processes import ProcessAttribution

UUID0 = "GPU-11111111-2222-3333-4444-555555555555"
UUID1 = "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa"
UID_A = "aaaaaaaa-0000-4000-8000-000000000001"
UID_B = "bbbbbbbb-0000-4000-8000-000000000002"
UID_OTHER = "cccccccc-0000-4000-8000-000000000003"
CID = "ab" * 32
BLANK_POD = {"pod": "", "namespace": "", "container": ""}


def pod_cgroup(uid: str) -> str:
    return (f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid.replace('-', '_')}.slice/"
            f"cri-containerd-{CID}.scope\n")


def write_proc(root: Path, pid: int, cgroup: str, started: int = 1000) -> None:
    folder = root / str(pid)
    folder.mkdir(exist_ok=True)
    rest = ["S"] + ["0"] * 18 + [str(started)] + ["0"] * 20
    (folder / "stat").write_text(f"{pid} (job) {' '.join(rest)}\n")
    (folder / "cgroup").write_text(cgroup)


def checkpoint_text(*entries: tuple[str, str, list[str]], numa: bool = True) -> str:
    return json.dumps({"Data": {"PodDeviceEntries": [
        {"PodUID": uid, "ContainerName": container, "ResourceName": "nvidia.com/gpu",
         "DeviceIDs": {"0": ids} if numa else ids, "AllocResp": "CgA="} for uid, container, ids in entries],
        "RegisteredDevices": {"nvidia.com/gpu": [f"{UUID0}::0", f"{UUID0}::1", UUID1]}}, "Checksum": 12345})


@pytest.fixture
def node():
    # unix socket paths are limited to ~107 bytes; pytest's tmp_path can be longer
    root = Path(tempfile.mkdtemp(prefix="attr-"))
    (root / "proc").mkdir()
    kubelet = KubeletStandIn(root / "kubelet.sock", pods=[
        Pod("train-a", "team-a", [Container("trainer", {"nvidia.com/gpu": [f"{UUID0}::0"]})]),
        Pod("train-b", "team-b", [Container("worker", {"nvidia.com/gpu": [f"{UUID0}::1"]})]),
        Pod("infer", "serving", [Container("model", {"nvidia.com/gpu": [UUID1]})]),
    ]).start()
    mapper = PodMapper(str(root / "kubelet.sock"))
    assert mapper.refresh()
    yield root, kubelet, mapper
    kubelet.stop()
    shutil.rmtree(root, ignore_errors=True)


def attribute(attribution: ProcessAttribution, pid: int, gpu: int = 0, uuid: str = UUID0) -> dict[str, str]:
    return dict(attribution(pid, gpu, uuid, None))


def test_two_pods_time_slicing_a_gpu_each_get_their_own_labels_through_the_checkpoint(node):
    root, _, mapper = node
    (root / "checkpoint").write_text(checkpoint_text((UID_A, "trainer", [f"{UUID0}::0"]),
                                                     (UID_B, "worker", [f"{UUID0}::1"]), (UID_OTHER, "model", [UUID1])))
    write_proc(root / "proc", 10, pod_cgroup(UID_A))
    write_proc(root / "proc", 11, pod_cgroup(UID_B))
    write_proc(root / "proc", 12, "0::/user.slice/user-0.slice/session-1.scope\n")
    attribution = ProcessAttribution(mapper, checkpoint=DeviceCheckpoint(root / "checkpoint"),
                                     proc_root=str(root / "proc"))
    assert attribute(attribution, 10) == {"pod": "train-a", "namespace": "team-a", "container": "trainer"}
    assert attribute(attribution, 11) == {"pod": "train-b", "namespace": "team-b", "container": "worker"}
    assert attribute(attribution, 12) == BLANK_POD            # a host process: not the pod's
    assert attribution.blank() == (("container", ""), ("namespace", ""), ("pod", ""))
    # a process of pod A on GPU 1, which pod "infer" holds: its own pod, not the holder
    assert attribute(attribution, 10, 1, UUID1) == {"pod": "train-a", "namespace": "team-a", "container": "trainer"}


def test_without_a_checkpoint_one_holder_labels_its_gpus_pod_processes_and_several_holders_none(node, caplog):
    root, _, mapper = node
    write_proc(root / "proc", 10, pod_cgroup(UID_A))
    write_proc(root / "proc", 12, "0::/\n")
    attribution = ProcessAttribution(mapper, checkpoint=DeviceCheckpoint(root / "missing"),
                                     proc_root=str(root / "proc"))
    with caplog.at_level(logging.WARNING):
        assert attribute(attribution, 10) == BLANK_POD                      # GPU 0: two pods share it
        assert attribute(attribution, 10, 1, UUID1) == {"pod": "infer", "namespace": "serving", "container": "model"}
        assert attribute(attribution, 12, 1, UUID1) == BLANK_POD            # not in a pod
        # not in this /proc (exited, or another PID namespace): taken for the GPU's one holder
        assert attribute(attribution, 99, 1, UUID1) == {"pod": "infer", "namespace": "serving", "container": "model"}
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot read the kubelet device checkpoint {root / 'missing'}: No such file or directory; processes in "
        "pods get pod labels only where one container holds their GPU"]


def test_the_checkpoint_is_read_again_when_it_changes_and_a_bad_one_warns_once(node, caplog):
    root, kubelet, mapper = node
    path = root / "checkpoint"
    path.write_text(checkpoint_text((UID_A, "trainer", [f"{UUID0}::0"]), numa=False))   # an older kubelet's list
    write_proc(root / "proc", 10, pod_cgroup(UID_A))
    clock = [0.0]
    attribution = ProcessAttribution(mapper, checkpoint=DeviceCheckpoint(path), proc_root=str(root / "proc"),
                                     clock=lambda: clock[0])
    assert attribute(attribution, 10)["pod"] == "train-a"
    # pod A's replica goes to a new pod "train-c" under the same container name, and the kubelet says so
    kubelet.pods = [Pod("train-c", "team-c", [Container("trainer", {"nvidia.com/gpu": [f"{UUID0}::0"]})])]
    assert mapper.refresh()
    path.write_text(checkpoint_text((UID_A, "trainer", [f"{UUID0}::0"])))
    clock[0] += 2
    assert attribute(attribution, 10)["pod"] == "train-c"
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            path.write_text('{"Data": {"PodDeviceEntries": "nope"}}' + " " * int(clock[0]))
            clock[0] += 2
            assert attribute(attribution, 10) == {**BLANK_POD, "pod": "train-c", "namespace": "team-c",
                                                  "container": "trainer"}   # one holder of GPU 0 left
    assert [r.getMessage() for r in caplog.records] == [
        f'{path}: not a kubelet device checkpoint: "Data.PodDeviceEntries" is not a list; processes in pods get '
        "pod labels only where one container holds their GPU"]


def test_checkpoint_parsing_takes_both_formats_and_names_what_is_wrong():
    [entry] = parse_checkpoint(checkpoint_text((UID_A, "c", ["x", "y"])).encode())
    assert (entry.pod_uid, entry.container, entry.resource, entry.device_ids) == (UID_A, "c", "nvidia.com/gpu",
                                                                                  ("x", "y"))
    assert parse_checkpoint(b'{"Data": {"PodDeviceEntries": null}, "Checksum": 0}') == ()
    with pytest.raises(CheckpointError, match=r"^PodDeviceEntries\[0\]: DeviceIDs is int"):
        parse_checkpoint(b'{"Data": {"PodDeviceEntries": [{"PodUID": "u", "ContainerName": "c", '
                         b'"ResourceName": "r", "DeviceIDs": 3}]}}')
    with pytest.raises(CheckpointError, match="^not JSON"):
        parse_checkpoint(b"{")


def test_a_reused_pid_is_read_again_and_old_names_follow_the_mapper(node):
    root, _, _ = node
    mapper = PodMapper(str(root / "kubelet.sock"), old_names=True)
    assert mapper.refresh()
    (root / "checkpoint").write_text(checkpoint_text((UID_A, "trainer", [f"{UUID0}::0"]),
                                                     (UID_B, "worker", [f"{UUID0}::1"])))
    write_proc(root / "proc", 10, pod_cgroup(UID_A), started=1000)
    attribution = ProcessAttribution(mapper, checkpoint=DeviceCheckpoint(root / "checkpoint"),
                                     proc_root=str(root / "proc"))
    assert attribute(attribution, 10) == {"pod_name": "train-a", "pod_namespace": "team-a",
                                          "container_name": "trainer"}
    write_proc(root / "proc", 10, pod_cgroup(UID_B), started=1000)   # same start time: the cached facts
    assert attribute(attribution, 10)["pod_name"] == "train-a"
    write_proc(root / "proc", 10, pod_cgroup(UID_B), started=2000)   # a new process under the old pid
    assert attribute(attribution, 10)["pod_name"] == "train-b"


def test_a_slurm_process_gets_its_cgroups_job_else_the_gpus_only_job_else_none(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "0").write_text("4242\n5151\n")
    (jobs / "1").write_text("777\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    write_proc(proc, 20, "10:freezer:/slurm/uid_0/job_4242/step_0\n0::/\n")
    write_proc(proc, 21, "0::/system.slice/slurmstepd.scope/job_5151/step_0/user/task_0\n")
    write_proc(proc, 22, "0::/user.slice\n")
    attribution = ProcessAttribution(jobs=HpcJobMapper(jobs), proc_root=str(proc))
    assert attribution.blank() == (("hpc_job", ""),)
    assert attribute(attribution, 20) == {"hpc_job": "4242"}
    assert attribute(attribution, 21) == {"hpc_job": "5151"}
    assert attribute(attribution, 22) == {"hpc_job": ""}        # two jobs on GPU 0, and its cgroup names neither
    assert attribute(attribution, 22, 1, UUID1) == {"hpc_job": "777"}
    assert attribute(attribution, os.getpid() + 10_000_000, 1, UUID1) == {"hpc_job": "777"}
