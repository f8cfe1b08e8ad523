"""The cgroup parser on /proc/<pid>/cgroup texts as each kubelet driver, container runtime and Slurm plugin
writes them, and on this process's own file."""

from __future__ import annotations

import os

import pytest

from dcgm_collector.attribution.cgroups import CgroupFacts, parse_cgroup, read_cgroup

UID = "3f2b8c1e-9a4d-4e5f-8b7a-0c1d2e3f4a5b"
CID = "4e7f0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"

# cgroup v2, kubelet systemd driver, containerd (a Burstable pod)
SYSTEMD_CONTAINERD = (f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID.replace('-', '_')}"
                      f".slice/cri-containerd-{CID}.scope\n")
# cgroup v2, systemd driver, CRI-O, a Guaranteed pod (no QoS slice)
SYSTEMD_CRIO = f"0::/kubepods.slice/kubepods-pod{UID.replace('-', '_')}.slice/crio-{CID}.scope\n"
# cgroup v1 hybrid host, cgroupfs driver, Docker: bare container ids, one line per hierarchy
CGROUPFS_V1 = "".join(f"{n}:{c}:/kubepods/besteffort/pod{UID}/{CID}\n"
                      for n, c in ((12, "pids"), (11, "memory"), (4, "cpu,cpuacct"), (1, "name=systemd"))) + "0::/\n"
# cgroup v1, systemd driver, Docker scopes
SYSTEMD_DOCKER_V1 = (f"11:devices:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
                     f"{UID.replace('-', '_')}.slice/docker-{CID}.scope\n"
                     f"1:name=systemd:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
                     f"{UID.replace('-', '_')}.slice/docker-{CID}.scope\n")
# the collector in a pod with a cgroup namespace of its own, looking at another pod's process
NAMESPACED = (f"0::/../../kubepods-besteffort.slice/kubepods-besteffort-pod{UID.replace('-', '_')}.slice/"
              f"cri-containerd-{CID}.scope\n")
SLURM_V1 = ("10:freezer:/slurm/uid_1000/job_4242/step_0\n9:memory:/slurm/uid_1000/job_4242/step_0/task_0\n"
            "5:devices:/slurm/uid_1000/job_4242/step_0\n1:name=systemd:/system.slice/slurmd.service\n0::/\n")
SLURM_V1_MULTIPLE_SLURMD = "7:cpuset:/slurm_node12/uid_0/job_77/step_batch\n0::/\n"
SLURM_V2 = "0::/system.slice/slurmstepd.scope/job_913/step_2/user/task_0\n"
HOST_V2 = "0::/user.slice/user-1000.slice/session-4.scope\n"
HOST_HYBRID = "12:pids:/user.slice/user-1000.slice/session-4.scope\n1:name=systemd:/init.scope\n0::/init.scope\n"
DOCKER_NOT_IN_POD = f"0::/system.slice/docker-{CID}.scope\n"


@pytest.mark.parametrize(("text", "facts"), [
    (SYSTEMD_CONTAINERD, CgroupFacts(UID, CID, None)),
    (SYSTEMD_CRIO, CgroupFacts(UID, CID, None)),
    (CGROUPFS_V1, CgroupFacts(UID, CID, None)),
    (SYSTEMD_DOCKER_V1, CgroupFacts(UID, CID, None)),
    (NAMESPACED, CgroupFacts(UID, CID, None)),
    (SLURM_V1, CgroupFacts(None, None, "4242")),
    (SLURM_V1_MULTIPLE_SLURMD, CgroupFacts(None, None, "77")),
    (SLURM_V2, CgroupFacts(None, None, "913")),
    (HOST_V2, CgroupFacts()),
    (HOST_HYBRID, CgroupFacts()),
    (DOCKER_NOT_IN_POD, CgroupFacts(None, CID, None)),
], ids=["systemd-containerd", "systemd-crio-guaranteed", "cgroupfs-v1", "systemd-docker-v1", "cgroup-namespace",
        "slurm-v1", "slurm-v1-node-prefix", "slurm-v2", "host-v2", "host-hybrid", "docker-no-pod"])
def test_each_drivers_lines_name_the_pod_container_and_job(text, facts):
    assert parse_cgroup(text) == facts
    assert parse_cgroup(text).in_pod == (facts.pod_uid is not None)


def test_a_pod_folder_outside_kubepods_and_a_short_hex_segment_name_nothing():
    assert parse_cgroup("0::/machine.slice/pod1234/abc123.scope\n") == CgroupFacts()
    assert parse_cgroup("0::/jobs/job_5/step_0\n") == CgroupFacts()   # job_ outside a slurm folder


def test_the_v2_line_wins_on_a_hybrid_host_and_junk_lines_are_skipped():
    other = "9" * 64
    text = f"garbage\n3:cpu:/kubepods/burstable/pod{'1' * 8}-0000/{other}\n0::/kubepods/pod{UID}/{CID}\n"
    assert parse_cgroup(text) == CgroupFacts(UID, CID, None)


def test_this_process_is_read_from_proc_and_a_missing_pid_is_none(tmp_path):
    assert read_cgroup(os.getpid()) == parse_cgroup(open(f"/proc/{os.getpid()}/cgroup").read())
    assert read_cgroup(4_200_000) is None
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cgroup").write_text(SLURM_V2)
    assert read_cgroup(7, str(tmp_path)) == CgroupFacts(None, None, "913")
