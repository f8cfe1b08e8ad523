"""Pod attribution against a kubelet stand-in serving the real pod-resources v1 API on a unix socket."""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import grpc
import pytest
from kubelet_standin import Container, KubeletStandIn, Pod

from dcgm_collector.attribution.podresources import (
    PodInfo,
    PodMapper,
    accepted_resource,
    device_keys,
    mapping_from_response,
)
from dcgm_collector.attribution.proto import podresources_v1_pb2 as pb

UUID0 = "GPU-11111111-2222-3333-4444-555555555555"
UUID1 = "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa"
MIG = "MIG-0a1b2c3d-0000-1111-2222-333344445555"


@pytest.fixture
def sock_dir():
    # unix socket paths are limited to ~107 bytes; pytest's tmp_path can be longer
    path = Path(tempfile.mkdtemp(prefix="kubelet-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kubelet(sock_dir):
    standin = KubeletStandIn(sock_dir / "kubelet.sock").start()
    yield standin
    standin.stop()


def gpu_pod(name: str, namespace: str, device_ids: list[str], resource: str = "nvidia.com/gpu",
            container: str = "main") -> Pod:
    return Pod(name, namespace, [Container(container, {resource: device_ids})])


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached in time")
        time.sleep(0.01)


# ---- device ids ---------------------------------------------------------------------------

@pytest.mark.parametrize("device_id, keys", [
    (UUID0, [UUID0]),
    ("nvidia0", ["nvidia0"]),
    ("0", ["0"]),
    (f"{UUID0}::3", [UUID0, f"{UUID0}::3"]),                 # time-slicing / MPS replica
    ("nvidia1/vgpu2", ["nvidia1", "nvidia1/vgpu2"]),         # GKE sharing
    ("nvidia0/gi3", ["0-3", "nvidia0/gi3"]),                 # GKE MIG
    ("nvidia2/gi1/vgpu0", ["2-1", "nvidia2/gi1/vgpu0"]),
    (MIG, [MIG[4:], MIG]),                                   # MIG without a resolver
    (f"{MIG}::1", [MIG[4:], f"{MIG}::1"]),
])
def test_device_keys(device_id, keys):
    assert device_keys(device_id) == keys


def test_mig_resolver_adds_the_instance_key():
    seen = []

    def resolve(mig_uuid):
        seen.append(mig_uuid)
        return (1, 5)

    assert device_keys(f"{MIG}::2", resolve) == ["1-5", MIG[4:], f"{MIG}::2"]
    assert seen == [MIG]   # looked up without the replica suffix


def test_failing_mig_resolver_costs_only_its_key():
    def resolve(mig_uuid):
        raise RuntimeError("no such MIG device")

    assert device_keys(MIG, resolve) == [MIG[4:], MIG]
    assert device_keys(MIG, lambda _: None) == [MIG[4:], MIG]


@pytest.mark.parametrize("name, extra, kept", [
    ("nvidia.com/gpu", (), True),
    ("nvidia.com/mig-1g.10gb", (), True),
    ("nvidia.com/a100", (), False),
    ("nvidia.com/a100", ("nvidia.com/a100",), True),
    ("example.com/fpga", (), False),
    ("nvidia.com/gpu.shared", (), False),
])
def test_resource_filter(name, extra, kept):
    assert accepted_resource(name, extra) is kept


def test_last_container_listed_wins():
    response = pb.ListPodResourcesResponse(pod_resources=[
        pb.PodResources(name="a", namespace="n", containers=[pb.ContainerResources(
            name="c1", devices=[pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=[f"{UUID0}::0"])])]),
        pb.PodResources(name="b", namespace="n", containers=[pb.ContainerResources(
            name="c2", devices=[pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=[f"{UUID0}::1"])])]),
    ])
    mapping = mapping_from_response(response)
    assert mapping[UUID0] == PodInfo("b", "n", "c2")
    assert mapping[f"{UUID0}::0"] == PodInfo("a", "n", "c1")


# ---- against the kubelet stand-in -----------------------------------------------------------

def test_uid_mapping(kubelet):
    kubelet.pods = [gpu_pod("train-0", "ml", [UUID0]), gpu_pod("infer-1", "serving", [UUID1], container="server")]
    mapper = PodMapper(str(kubelet.socket_path), "uid")
    assert mapper.refresh()
    assert mapper.labels_for(0, UUID0) == {"pod": "train-0", "namespace": "ml", "container": "main"}
    assert mapper.labels_for(1, UUID1) == {"pod": "infer-1", "namespace": "serving", "container": "server"}
    assert mapper.labels_for(2, "GPU-unknown") == {}
    assert mapper.labels_for(0, "GPU-other") == {}     # uid mode matches by UUID, not index


def test_device_name_mapping(kubelet):
    kubelet.pods = [gpu_pod("gke-job", "default", ["nvidia1"]), gpu_pod("shared", "default", ["nvidia0/vgpu3"])]
    mapper = PodMapper(str(kubelet.socket_path), "device-name")
    assert mapper.refresh()
    assert mapper.labels_for(1, UUID1)["pod"] == "gke-job"
    assert mapper.labels_for(0, UUID0)["pod"] == "shared"
    assert mapper.labels_for(2, "GPU-x") == {}


def test_time_sliced_replicas_label_their_gpu(kubelet):
    kubelet.pods = [gpu_pod("slice", "ml", [f"{UUID0}::0", f"{UUID0}::1"])]
    mapper = PodMapper(str(kubelet.socket_path))
    assert mapper.refresh()
    assert mapper.labels_for(0, UUID0)["pod"] == "slice"


def test_mig_devices_label_instances_not_the_gpu(kubelet):
    kubelet.pods = [
        gpu_pod("mig-a", "ml", [MIG], resource="nvidia.com/mig-1g.10gb"),
        gpu_pod("mig-gke", "ml", ["nvidia1/gi2"], resource="nvidia.com/gpu"),
    ]
    mapper = PodMapper(str(kubelet.socket_path), mig_resolver={MIG: (0, 7)}.get)
    assert mapper.refresh()
    assert mapper.labels_for_instance(0, 7)["pod"] == "mig-a"
    assert mapper.labels_for_instance(1, 2)["pod"] == "mig-gke"
    assert mapper.labels_for(0, UUID0) == {} and mapper.labels_for(1, UUID1) == {}
    assert mapper.labels_for_instance(0, 1) == {}


def test_mig_devices_match_the_instance_uuid_dcgm_reports(kubelet):
    """No resolver: the instance's own MIG UUID (read from DCGM) finds the pod, replicas included."""
    kubelet.pods = [gpu_pod("mig-a", "ml", [f"{MIG}::1"], resource="nvidia.com/mig-3g.40gb")]
    mapper = PodMapper(str(kubelet.socket_path))
    assert mapper.refresh()
    assert mapper.labels_for_instance(0, 3, MIG)["pod"] == "mig-a"
    assert mapper.labels_for_instance(0, 3) == {} and mapper.labels_for_instance(0, 4, "MIG-other") == {}


def test_multiple_containers_and_other_resources(kubelet):
    kubelet.pods = [Pod("multi", "ml", [
        Container("sidecar", {"example.com/nic": ["eth0"]}, cpu_ids=[2, 3]),
        Container("trainer", {"nvidia.com/gpu": [UUID0]}),
        Container("evaluator", {"nvidia.com/a100": [UUID1]}),
        Container("idle"),
    ])]
    mapper = PodMapper(str(kubelet.socket_path), resource_names=["nvidia.com/a100"])
    assert mapper.refresh()
    assert mapper.labels_for(0, UUID0)["container"] == "trainer"
    assert mapper.labels_for(1, UUID1)["container"] == "evaluator"
    assert "eth0" not in mapper.mapping
    plain = PodMapper(str(kubelet.socket_path))
    assert plain.refresh() and plain.labels_for(1, UUID1) == {}


def test_old_label_names(kubelet):
    kubelet.pods = [gpu_pod("p", "ns", [UUID0])]
    mapper = PodMapper(str(kubelet.socket_path), old_names=True)
    assert mapper.refresh()
    assert mapper.labels_for(0, UUID0) == {"pod_name": "p", "pod_namespace": "ns", "container_name": "main"}


def test_background_refresh_picks_up_changes_and_never_lists_per_read(kubelet):
    kubelet.pods = [gpu_pod("first", "ml", [UUID0])]
    with PodMapper(str(kubelet.socket_path), refresh_s=0.05) as mapper:
        wait_for(lambda: mapper.labels_for(0, UUID0).get("pod") == "first")
        generation = mapper.generation
        calls = kubelet.calls["List"]
        for _ in range(1000):
            mapper.labels_for(0, UUID0)
        assert kubelet.calls["List"] - calls <= 2     # reads are answered from the cache
        kubelet.pods = [gpu_pod("second", "ml", [UUID0])]
        wait_for(lambda: mapper.labels_for(0, UUID0).get("pod") == "second")
        assert mapper.generation > generation
        kubelet.pods = []
        wait_for(lambda: mapper.labels_for(0, UUID0) == {})
    assert not any(t.name == "dcgm-collector-pods" for t in threading.enumerate())


def test_generation_stays_when_nothing_changed(kubelet):
    kubelet.pods = [gpu_pod("p", "ns", [UUID0])]
    mapper = PodMapper(str(kubelet.socket_path))
    assert mapper.refresh()
    generation = mapper.generation
    assert mapper.refresh() and mapper.refresh()
    assert mapper.generation == generation


def test_kubelet_absent_gives_no_labels_and_one_warning(sock_dir, caplog):
    mapper = PodMapper(str(sock_dir / "kubelet.sock"), refresh_s=0.02)
    with caplog.at_level(logging.WARNING, logger="dcgm_collector.attribution.podresources"):
        with mapper:
            wait_for(lambda: mapper.failures >= 5)
    assert mapper.labels_for(0, UUID0) == {}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "no kubelet pod-resources socket" in warnings[0].getMessage()


def test_kubelet_going_away_keeps_the_last_mapping_and_recovers(sock_dir, caplog):
    path = sock_dir / "kubelet.sock"
    kubelet = KubeletStandIn(path, [gpu_pod("p", "ns", [UUID0])]).start()
    mapper = PodMapper(str(path), dial_timeout_s=1.0)
    try:
        assert mapper.refresh()
        kubelet.stop()
        with caplog.at_level(logging.INFO, logger="dcgm_collector.attribution.podresources"):
            assert not mapper.refresh()
            assert not mapper.refresh()
            assert mapper.labels_for(0, UUID0)["pod"] == "p"       # last mapping kept
            kubelet = KubeletStandIn(path, [gpu_pod("q", "ns", [UUID0])]).start()   # kubelet restarted
            assert mapper.refresh()
        assert mapper.labels_for(0, UUID0)["pod"] == "q"
        messages = [r.getMessage() for r in caplog.records]
        assert sum("keeping the last pod mapping" in m for m in messages) == 1
        assert any("answers again" in m for m in messages)
    finally:
        kubelet.stop()


def test_stale_socket_file_without_a_server(sock_dir):
    path = sock_dir / "kubelet.sock"
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(path))          # a socket file nobody listens on (a kubelet that crashed)
    mapper = PodMapper(str(path), dial_timeout_s=1.0)
    started = time.monotonic()
    assert not mapper.refresh()
    assert time.monotonic() - started < 3
    assert "UNAVAILABLE" in mapper.last_error or "DEADLINE" in mapper.last_error


def test_error_status_keeps_mapping(kubelet):
    kubelet.pods = [gpu_pod("p", "ns", [UUID0])]
    mapper = PodMapper(str(kubelet.socket_path))
    assert mapper.refresh()
    kubelet.fail_with = (grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")
    assert not mapper.refresh()
    assert "RESOURCE_EXHAUSTED" in mapper.last_error and "rejected by rate limit" in mapper.last_error
    assert mapper.labels_for(0, UUID0)["pod"] == "p"


def test_slow_kubelet_times_out(kubelet):
    kubelet.pods = [gpu_pod("p", "ns", [UUID0])]
    kubelet.delay_s = 2.0
    mapper = PodMapper(str(kubelet.socket_path), dial_timeout_s=0.3)
    started = time.monotonic()
    assert not mapper.refresh()
    assert time.monotonic() - started < 1.5
    assert "DEADLINE_EXCEEDED" in mapper.last_error


def test_not_a_socket(sock_dir):
    path = sock_dir / "kubelet.sock"
    path.write_text("")
    mapper = PodMapper(str(path))
    assert not mapper.refresh()
    assert "not a socket" in mapper.last_error


def test_large_answer_beyond_grpc_default_limit(kubelet):
    # ~6 MiB: more than gRPC's 4 MiB default receive limit
    filler = [Container(f"c{i}", {"example.com/thing": [f"id-{i}-{j:04d}-" + "x" * 60 for j in range(100)]})
              for i in range(900)]
    kubelet.pods = [Pod("big", "ns", filler + [Container("gpu", {"nvidia.com/gpu": [UUID0]})])]
    mapper = PodMapper(str(kubelet.socket_path), dial_timeout_s=10)
    assert mapper.refresh(), mapper.last_error
    assert mapper.labels_for(0, UUID0)["container"] == "gpu"


def test_standin_serves_get_and_allocatable(kubelet):
    kubelet.pods = [gpu_pod("p", "ns", [UUID0])]
    kubelet.allocatable = {"nvidia.com/gpu": [UUID0, UUID1]}
    with grpc.insecure_channel(f"unix://{kubelet.socket_path}") as channel:
        get = channel.unary_unary("/v1.PodResourcesLister/Get",
                                  request_serializer=pb.GetPodResourcesRequest.SerializeToString,
                                  response_deserializer=pb.GetPodResourcesResponse.FromString)
        answer = get(pb.GetPodResourcesRequest(pod_name="p", pod_namespace="ns"), timeout=5)
        assert answer.pod_resources.containers[0].devices[0].device_ids == [UUID0]
        with pytest.raises(grpc.RpcError) as info:
            get(pb.GetPodResourcesRequest(pod_name="x", pod_namespace="ns"), timeout=5)
        assert info.value.code() == grpc.StatusCode.UNKNOWN
        assert info.value.details() == "pod x in namespace ns not found"
        allocatable = channel.unary_unary("/v1.PodResourcesLister/GetAllocatableResources",
                                          request_serializer=pb.AllocatableResourcesRequest.SerializeToString,
                                          response_deserializer=pb.AllocatableResourcesResponse.FromString)
        assert list(allocatable(pb.AllocatableResourcesRequest(), timeout=5).devices[0].device_ids) == [UUID0, UUID1]


@pytest.mark.parametrize("kwargs, message", [
    ({"gpu_id_type": "index"}, "unknown GPU id type"),
    ({"socket_path": ""}, "socket path is empty"),
    ({"refresh_s": 0}, "refresh_s"),
    ({"dial_timeout_s": -1}, "dial_timeout_s"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PodMapper(**kwargs)


def test_resource_names_must_not_be_a_string():
    with pytest.raises(TypeError):
        PodMapper(resource_names="nvidia.com/a100")
