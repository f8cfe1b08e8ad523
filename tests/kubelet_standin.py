"""A kubelet stand-in for tests: the real pod-resources v1 gRPC service on a unix socket.

It serves ``v1.PodResourcesLister`` (List, GetAllocatableResources, Get) with
the same method paths and messages as the kubelet, so any client, ours or a
real dcgm-exporter, can talk to it.  Pods are plain tuples, changeable while
it runs::

    kubelet = KubeletStandIn(tmp_path / "kubelet.sock")
    kubelet.pods = [Pod("train-0", "ml", [Container("main", {"nvidia.com/gpu": ["GPU-aaaa"]})])]
    kubelet.start()
    ...
    kubelet.stop()

``fail_with`` makes every call fail with a gRPC status (the kubelet answers
RESOURCE_EXHAUSTED past its rate limit, UNKNOWN for its plain errors);
``delay_s`` makes every answer late; ``calls`` counts the calls per method.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from dcgm_collector.attribution.proto import podresources_v1_pb2 as pb

SERVICE = "v1.PodResourcesLister"


@dataclass
class Container:
    name: str
    devices: dict[str, list[str]] = field(default_factory=dict)   # resource name -> device ids
    cpu_ids: list[int] = field(default_factory=list)


@dataclass
class Pod:
    name: str
    namespace: str
    containers: list[Container]


class KubeletStandIn:
    def __init__(self, socket_path: str | os.PathLike, pods: list[Pod] | None = None,
                 allocatable: dict[str, list[str]] | None = None) -> None:
        self.socket_path = Path(socket_path)
        self.pods: list[Pod] = list(pods or [])
        self.allocatable = dict(allocatable or {})
        self.fail_with: tuple[grpc.StatusCode, str] | None = None
        self.delay_s = 0.0
        self.calls: dict[str, int] = {"List": 0, "GetAllocatableResources": 0, "Get": 0}
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None

    # -- life cycle
    def start(self) -> KubeletStandIn:
        server = grpc.server(ThreadPoolExecutor(max_workers=2))
        handlers = {
            "List": grpc.unary_unary_rpc_method_handler(
                self._list, request_deserializer=pb.ListPodResourcesRequest.FromString,
                response_serializer=pb.ListPodResourcesResponse.SerializeToString),
            "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(
                self._allocatable, request_deserializer=pb.AllocatableResourcesRequest.FromString,
                response_serializer=pb.AllocatableResourcesResponse.SerializeToString),
            "Get": grpc.unary_unary_rpc_method_handler(
                self._get, request_deserializer=pb.GetPodResourcesRequest.FromString,
                response_serializer=pb.GetPodResourcesResponse.SerializeToString),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        if server.add_insecure_port(f"unix://{self.socket_path.resolve()}") == 0:
            raise RuntimeError(f"cannot listen on {self.socket_path}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket, as a kubelet going away does."""
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace=None).wait(5)
        try:
            self.socket_path.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> KubeletStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the service
    def _answer(self, method: str, context: grpc.ServicerContext) -> None:
        with self._lock:
            self.calls[method] += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_with is not None:
            context.abort(*self.fail_with)

    def _list(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext):
        self._answer("List", context)
        return pb.ListPodResourcesResponse(pod_resources=[_pod_message(p) for p in list(self.pods)])

    def _allocatable(self, request: pb.AllocatableResourcesRequest, context: grpc.ServicerContext):
        self._answer("GetAllocatableResources", context)
        return pb.AllocatableResourcesResponse(devices=[
            pb.ContainerDevices(resource_name=name, device_ids=ids) for name, ids in self.allocatable.items()])

    def _get(self, request: pb.GetPodResourcesRequest, context: grpc.ServicerContext):
        self._answer("Get", context)
        for pod in list(self.pods):
            if pod.name == request.pod_name and pod.namespace == request.pod_namespace:
                return pb.GetPodResourcesResponse(pod_resources=_pod_message(pod))
        # the kubelet's error is a plain Go error, which gRPC sends as UNKNOWN
        context.abort(grpc.StatusCode.UNKNOWN,
                      f"pod {request.pod_name} in namespace {request.pod_namespace} not found")


def _pod_message(pod: Pod) -> pb.PodResources:
    return pb.PodResources(name=pod.name, namespace=pod.namespace, containers=[
        pb.ContainerResources(
            name=c.name,
            cpu_ids=c.cpu_ids,
            devices=[pb.ContainerDevices(resource_name=name, device_ids=ids,
                                         topology=pb.TopologyInfo(nodes=[pb.NUMANode(ID=0)]))
                     for name, ids in c.devices.items()])
        for c in pod.containers])
