"""Kubernetes pod attribution: which pod's container holds each GPU.

The kubelet's pod-resources v1 gRPC API (``PodResourcesLister.List`` on a
unix socket, plaintext) names, for every active pod and container, the
device-plugin devices it was given.  :class:`PodMapper` turns the GPU
devices among them into ``pod``, ``namespace`` and ``container`` labels.

Unlike dcgm-exporter, which dials the kubelet and lists every pod on every
scrape (for every entity group), the mapping is refreshed by a thread of
its own every ``refresh_s`` and a scrape only reads a dict.  A missing
socket, a kubelet that is down or slow, or a bad answer is logged once (and
its recovery once), keeps the last mapping, and never touches a scrape.

Device ids are matched as dcgm-exporter matches them (reference ops.md 1.6):

* the resources kept are ``nvidia.com/gpu``, any ``nvidia.com/mig-*``, and
  the names given in ``resource_names`` (``--nvidia-resource-names``);
* ``GPU-<uuid>`` (NVIDIA device plugin) matches a GPU by UUID under
  ``gpu_id_type="uid"``; ``nvidia<N>`` (GKE) matches GPU N under
  ``"device-name"``;
* replicas of a shared GPU, ``GPU-<uuid>::<n>`` (time-slicing, MPS) and
  ``nvidia<N>/vgpu<n>`` (GKE), count for the GPU they are a share of;
* MIG devices, ``MIG-<uuid>`` (mapped to a GPU instance by an optional
  ``mig_resolver``, or matched by the instance's MIG UUID as DCGM reports it)
  and GKE's ``nvidia<N>/gi<M>``, label the GPU instance
  (:meth:`PodMapper.labels_for_instance`), never the whole GPU;
* when several containers hold the same device, the last one listed wins,
  as in dcgm-exporter's default (non-sharing) mode, for the GPU's series;
  :meth:`PodMapper.holders` keeps them all (time-slicing hands replicas of
  one GPU to several containers), for the per-process labels.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import grpc

from dcgm_collector.attribution.proto import podresources_v1_pb2 as pb

__all__ = [
    "DEFAULT_KUBELET_SOCKET",
    "GPU_ID_TYPES",
    "PodInfo",
    "PodMapper",
    "accepted_resource",
    "device_keys",
    "gpu_key",
    "holders_from_response",
    "instance_key",
    "mapping_from_response",
]

log = logging.getLogger(__name__)

DEFAULT_KUBELET_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
GPU_ID_TYPES = ("uid", "device-name")
LIST_METHOD = "/v1.PodResourcesLister/List"
# The kubelet's own clients accept this much; gRPC's 4 MiB default is too
# little for a node with hundreds of pods and their CPU and memory listings.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_REFRESH_S = 10.0
DEFAULT_DIAL_TIMEOUT_S = 5.0

_GKE_MIG = re.compile(r"^nvidia([0-9]+)/gi([0-9]+)(/vgpu[0-9]+)?$")
_REPLICA_SEPARATOR = "::"
_GKE_SHARE = "/vgpu"

MigResolver = Callable[[str], "tuple[int, int] | None"]


@dataclass(frozen=True)
class PodInfo:
    """The container that holds a device."""

    pod: str
    namespace: str
    container: str

    def labels(self, old_names: bool = False) -> dict[str, str]:
        if old_names:   # dcgm-exporter's -o/--use-old-namespace names
            return {"pod_name": self.pod, "pod_namespace": self.namespace, "container_name": self.container}
        return {"pod": self.pod, "namespace": self.namespace, "container": self.container}


def gpu_key(gpu_id_type: str, gpu_index: int, uuid: str) -> str:
    """The key a whole GPU is looked up by: its UUID (``uid``) or ``nvidia<N>`` (``device-name``)."""
    if gpu_id_type == "uid":
        return uuid
    if gpu_id_type == "device-name":
        return f"nvidia{gpu_index}"
    raise ValueError(f"unknown GPU id type {gpu_id_type!r}; expected one of {', '.join(GPU_ID_TYPES)}")


def instance_key(gpu_index: int, instance_id: int) -> str:
    """The key a MIG GPU instance is looked up by, whatever the id type (``"<gpu>-<gi>"``)."""
    return f"{gpu_index}-{instance_id}"


def accepted_resource(resource_name: str, extra_names: Iterable[str] = ()) -> bool:
    """Whether devices of this extended resource are GPUs (or MIG slices) worth mapping."""
    return (resource_name == GPU_RESOURCE or resource_name.startswith(MIG_RESOURCE_PREFIX)
            or resource_name in extra_names)


def device_keys(device_id: str, mig_resolver: MigResolver | None = None) -> list[str]:
    """Every key a kubelet device id is filed under; the raw id is always one of them."""
    keys: list[str] = []
    if device_id.startswith("MIG-"):
        mig_uuid = device_id.split(_REPLICA_SEPARATOR, 1)[0]
        where = _resolve_mig(mig_resolver, mig_uuid)
        if where is not None:
            keys.append(instance_key(*where))
        keys.append(mig_uuid[len("MIG-"):])
    elif (gke_mig := _GKE_MIG.match(device_id)) is not None:
        keys.append(instance_key(int(gke_mig.group(1)), int(gke_mig.group(2))))
    elif _GKE_SHARE in device_id:
        keys.append(device_id.split(_GKE_SHARE, 1)[0])
    elif _REPLICA_SEPARATOR in device_id:
        keys.append(device_id.split(_REPLICA_SEPARATOR, 1)[0])
    if device_id not in keys:
        keys.append(device_id)
    return keys


def _resolve_mig(mig_resolver: MigResolver | None, mig_uuid: str) -> tuple[int, int] | None:
    if mig_resolver is None:
        return None
    try:
        found = mig_resolver(mig_uuid)
    except Exception as error:   # a failed lookup costs this key only, as in dcgm-exporter
        log.debug("cannot resolve MIG device %s: %s", mig_uuid, error)
        return None
    if found is None:
        return None
    gpu_index, instance_id = found
    return int(gpu_index), int(instance_id)


def holders_from_response(response: pb.ListPodResourcesResponse, resource_names: Iterable[str] = (),
                          mig_resolver: MigResolver | None = None) -> dict[str, tuple[PodInfo, ...]]:
    """Device key -> every container holding it, once each, in the order of their last listing."""
    extra = frozenset(resource_names)
    holders: dict[str, dict[PodInfo, None]] = {}
    for pod in response.pod_resources:
        for container in pod.containers:
            holder = PodInfo(pod.name, pod.namespace, container.name)
            for devices in container.devices:
                if not accepted_resource(devices.resource_name, extra):
                    continue
                for device_id in devices.device_ids:
                    for key in device_keys(device_id, mig_resolver):
                        found = holders.setdefault(key, {})
                        found.pop(holder, None)   # to the end: the last one listed is the last one kept
                        found[holder] = None
    return {key: tuple(found) for key, found in holders.items()}


def mapping_from_response(response: pb.ListPodResourcesResponse, resource_names: Iterable[str] = (),
                          mig_resolver: MigResolver | None = None) -> dict[str, PodInfo]:
    """Device key -> the container holding it, from one List answer (the last container listed wins)."""
    return {key: found[-1] for key, found in holders_from_response(response, resource_names, mig_resolver).items()}


class PodMapper:
    """GPU -> pod, namespace, container, from the kubelet, refreshed in the background.

    ``labels_for`` and ``labels_for_instance`` are cheap and thread-safe; they
    answer from the last successful List.  ``generation`` changes whenever the
    mapping does, so a reader can keep label text built from it until then.
    """

    def __init__(self, socket_path: str = DEFAULT_KUBELET_SOCKET, gpu_id_type: str = "uid",
                 resource_names: Iterable[str] = (), refresh_s: float = DEFAULT_REFRESH_S,
                 dial_timeout_s: float = DEFAULT_DIAL_TIMEOUT_S, *, old_names: bool = False,
                 mig_resolver: MigResolver | None = None) -> None:
        if gpu_id_type not in GPU_ID_TYPES:
            raise ValueError(f"unknown GPU id type {gpu_id_type!r} (--kubernetes-gpu-id-type); "
                             f"expected one of {', '.join(GPU_ID_TYPES)}")
        if not socket_path:
            raise ValueError("the kubelet socket path is empty (--pod-resources-kubelet-socket)")
        for value, what in ((refresh_s, "refresh_s"), (dial_timeout_s, "dial_timeout_s")):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{what} must be a positive number of seconds, not {value!r}")
        if isinstance(resource_names, str):
            raise TypeError("resource_names must be a sequence of names, not a str")
        self.socket_path = socket_path
        self.gpu_id_type = gpu_id_type
        self.resource_names = tuple(name.strip() for name in resource_names if name.strip())
        self.refresh_s = float(refresh_s)
        self.dial_timeout_s = float(dial_timeout_s)
        self.old_names = old_names
        self.mig_resolver = mig_resolver
        self._mapping: Mapping[str, PodInfo] = {}
        self._holders: Mapping[str, tuple[PodInfo, ...]] = {}
        self._generation = 0
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._problem: str | None = None   # the kind of failure last logged, until a List succeeds
        self.last_error: str | None = None
        self.refreshes = 0
        self.failures = 0

    # -- reading
    def labels_for(self, gpu_index: int, uuid: str) -> dict[str, str]:
        """Labels of the container holding a whole GPU; empty when none does (or nothing is known yet)."""
        holder = self._mapping.get(gpu_key(self.gpu_id_type, gpu_index, uuid))
        return holder.labels(self.old_names) if holder is not None else {}

    def labels_for_instance(self, gpu_index: int, instance_id: int, mig_uuid: str = "") -> dict[str, str]:
        """Labels of the container holding a MIG GPU instance (by ``"<gpu>-<gi>"``, else by its
        ``MIG-...`` UUID, as the device plugin lists it); empty when none does."""
        holder = self._mapping.get(instance_key(gpu_index, instance_id))
        if holder is None and mig_uuid:
            holder = self._mapping.get(mig_uuid.removeprefix("MIG-"))   # filed bare, replicas (::N) too
        return holder.labels(self.old_names) if holder is not None else {}

    def holders(self, key: str) -> tuple[PodInfo, ...]:
        """Every container holding a device key (a raw device id, a GPU's UUID or ``nvidia<N>``,
        ``"<gpu>-<gi>"``), replicas of a shared GPU included; () when none does."""
        return self._holders.get(key, ())

    def holders_for(self, gpu_index: int, uuid: str) -> tuple[PodInfo, ...]:
        """Every container holding a whole GPU or one of its replicas (time-slicing, MPS)."""
        return self._holders.get(gpu_key(self.gpu_id_type, gpu_index, uuid), ())

    def holders_for_instance(self, gpu_index: int, instance_id: int, mig_uuid: str = "") -> tuple[PodInfo, ...]:
        """Every container holding a MIG GPU instance or one of its replicas (found as labels_for_instance)."""
        found = self._holders.get(instance_key(gpu_index, instance_id), ())
        return found or (self._holders.get(mig_uuid.removeprefix("MIG-"), ()) if mig_uuid else ())

    @property
    def generation(self) -> int:
        """Changes (grows) each time a refresh finds a different mapping."""
        return self._generation

    @property
    def mapping(self) -> Mapping[str, PodInfo]:
        """The current device key -> container mapping (do not modify)."""
        return self._mapping

    # -- life cycle
    def start(self) -> None:
        """Refresh now and then every ``refresh_s`` on a daemon thread; returns at once."""
        if self._thread is not None:
            raise RuntimeError("the pod mapper is already started")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="dcgm-collector-pods", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(self.dial_timeout_s + 5.0)

    def __enter__(self) -> PodMapper:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:   # the thread must outlive any surprise; the scrape never sees it
                log.exception("refreshing the pod mapping failed")
            self._stop.wait(self.refresh_s)

    # -- one refresh
    def refresh(self) -> bool:
        """List the kubelet's pods once and swap the mapping in; False (mapping kept) on failure."""
        with self._refresh_lock:
            try:
                holders = holders_from_response(self._list(), self.resource_names, self.mig_resolver)
            except _ListFailed as failure:
                self._failed(failure)
                return False
            self.refreshes += 1
            if holders != self._holders:
                self._mapping = {key: found[-1] for key, found in holders.items()}
                self._holders = holders
                self._generation += 1
            if self._problem is not None:
                log.info("kubelet pod-resources answers again at %s: pod labels are current", self.socket_path)
            self._problem = None
            self.last_error = None
            return True

    def _list(self) -> pb.ListPodResourcesResponse:
        path = self.socket_path
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise _ListFailed("missing", f"no kubelet pod-resources socket at {path}") from None
        except OSError as error:
            raise _ListFailed("stat", f"cannot stat the kubelet socket {path}: {error.strerror}") from None
        if not stat.S_ISSOCK(mode):
            raise _ListFailed("not-a-socket", f"{path} is not a socket")
        target = "unix://" + os.path.abspath(path)
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.enable_retries", 0)]
        try:
            with grpc.insecure_channel(target, options=options) as channel:
                list_pods = channel.unary_unary(
                    LIST_METHOD,
                    request_serializer=pb.ListPodResourcesRequest.SerializeToString,
                    response_deserializer=pb.ListPodResourcesResponse.FromString,
                )
                return list_pods(pb.ListPodResourcesRequest(), timeout=self.dial_timeout_s)
        except grpc.RpcError as error:
            code = error.code() if hasattr(error, "code") else None
            details = error.details() if hasattr(error, "details") else str(error)
            name = code.name if code is not None else "ERROR"
            raise _ListFailed(name, f"kubelet List failed at {path}: {name}: {details}") from None

    def _failed(self, failure: _ListFailed) -> None:
        # details of one failure vary from try to try (addresses, errno
        # text); its kind does not, so a lasting outage is logged once
        self.failures += 1
        self.last_error = str(failure)
        if failure.kind != self._problem:
            kept = "keeping the last pod mapping" if self._mapping else "no pod labels until it answers"
            log.warning("%s; %s (retrying every %g s)", failure, kept, self.refresh_s)
            self._problem = failure.kind


class _ListFailed(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
