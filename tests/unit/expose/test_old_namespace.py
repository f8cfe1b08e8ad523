"""-o/--use-old-namespace: dcgm-exporter 1.x's label names on a 1.x counters file.

The series are rendered from a real sampler on a MANUAL-mode simulated node
(values injected through DCGM's injection API) with pod labels from the
kubelet stand-in, and compared with the exact text dcgm-exporter's GPU
template writes with -o: ``uuid`` where ``UUID`` was, and the pod labels as
``container_name``, ``pod_name``, ``pod_namespace`` (attributes, sorted).
Metric names are the counters file's first column, as written.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest
from kubelet_standin import Container, KubeletStandIn, Pod

from dcgm_collector.attribution.copies import GpuAttribution
from dcgm_collector.attribution.podresources import PodMapper
from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.dcgm import EntityType
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions

FE_GPU = int(EntityType.GPU)
TEMP, POWER = 150, 155
NODE = 'seed = 3\n[[gpu]]\nmodel = "H100"\n[[gpu]]\nmodel = "T4"\n'
# 1.x names, as NVIDIA's 1.x compatibility file writes them
COUNTERS_1X = """\
dcgm_gpu_temp,    gauge, GPU temperature (in C).
dcgm_power_usage, gauge, Power draw (in W).
"""
H100_UUID = "GPU-5ca19fc2-967b-0ace-d6df-54e6fa399c83"
T4_UUID = "GPU-92c17e1e-1c27-8a87-c328-d30fe98ba410"
H100 = f'gpu="0",{{uuid}}="{H100_UUID}",pci_bus_id="00000000:18:00.0",device="nvidia0",' \
       'modelName="NVIDIA H100 80GB HBM3",hostname="old-host"'
T4 = f'gpu="1",{{uuid}}="{T4_UUID}",pci_bus_id="00000000:2A:00.0",device="nvidia1",modelName="Tesla T4",' \
     'hostname="old-host"'
POD_OLD = ',container_name="trainer",pod_name="train-0",pod_namespace="ml"'
POD_NEW = ',container="trainer",namespace="ml",pod="train-0"'


def expected(uuid: str, pod: str) -> str:
    h100, t4 = H100.format(uuid=uuid), T4.format(uuid=uuid)
    return (
        "# HELP dcgm_gpu_temp GPU temperature (in C).\n"
        "# TYPE dcgm_gpu_temp gauge\n"
        f"dcgm_gpu_temp{{{h100}{pod}}} 62\n"
        f"dcgm_gpu_temp{{{t4}}} 46\n"
        "# HELP dcgm_power_usage Power draw (in W).\n"
        "# TYPE dcgm_power_usage gauge\n"
        f"dcgm_power_usage{{{h100}{pod}}} 512.125000\n"
        f"dcgm_power_usage{{{t4}}} 41.750000\n"
    )


@pytest.fixture
def kubelet():
    # unix socket paths are limited to ~107 bytes; pytest's tmp_path can be longer
    directory = Path(tempfile.mkdtemp(prefix="kubelet-"))
    standin = KubeletStandIn(directory / "kubelet.sock").start()
    standin.pods = [Pod("train-0", "ml", [Container("trainer", {"nvidia.com/gpu": [H100_UUID]})])]
    yield standin
    standin.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def sampled(open_node, tmp_path):
    """A manual sampler that drained three injected rows per GPU; (sampler, GPUs, render time)."""
    node = tmp_path / "node.toml"
    node.write_text(NODE)
    handle = open_node(str(node), mode="manual")
    sampler = Sampler(handle, parse_counters(COUNTERS_1X), SamplingOptions(collect_interval_ms=1000))
    sampler.start(thread=False)
    try:
        t0 = time.time_ns() // 1000
        for k, (temps, powers) in enumerate((((61, 45), (650.25, 35.5)), ((64, 47), (700.0, 70.0)),
                                              ((62, 46), (512.125, 41.75)))):
            ts = t0 - 3_000_000 + k * 1_000_000
            for gpu in (0, 1):
                handle.inject(FE_GPU, gpu, TEMP, temps[gpu], ts)
                handle.inject(FE_GPU, gpu, POWER, powers[gpu], ts)
        sampler.tick_once()
        yield sampler, handle.gpus(), t0 - 500_000
    finally:
        sampler.stop()


def _body(sampler, gpus, now: int, old: bool, pods: PodMapper) -> str:
    options = ExpositionOptions(hostname="old-host", use_old_namespace=old, attribution=GpuAttribution(pods))
    text = Exposition(target_view(sampler), gpus, options, version="test").render(now_us=now).decode()
    return text[:text.index("# HELP dcgm_collector_")]


@pytest.mark.parametrize("old", [True, False], ids=["-o", "default"])
def test_1x_names_and_labels_exactly(sampled, kubelet, old):
    sampler, gpus, now = sampled
    pods = PodMapper(str(kubelet.socket_path), "uid", old_names=old)
    assert pods.refresh()
    body = _body(sampler, gpus, now, old, pods)
    assert body == expected("uuid" if old else "UUID", POD_OLD if old else POD_NEW)
