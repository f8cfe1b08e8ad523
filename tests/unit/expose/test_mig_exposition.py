"""MIG series: GPU instances sampled on their own, labelled as dcgm-exporter labels them.

dcgm-exporter's GPU template writes an instance's series with the labels of
the GPU that holds it (gpu, UUID, pci_bus_id, device, modelName), then
``GPU_I_PROFILE`` and ``GPU_I_ID`` (the NVML GPU-instance id), then
``hostname``, then the label rows sorted by key.  The expected text below is
written out by hand from that template, not produced by the collector.
"""

from __future__ import annotations

import time

import pytest

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.discovery import mig_instances
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.dcgm import EntityType
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions

FE_GPU, FE_GPU_I = int(EntityType.GPU), int(EntityType.GPU_I)
FB_USED, GR_ACTIVE = 252, 1001

# GPU 0 split into three GPU instances, GPU 1 whole
NODE = '''\
seed = 3
[[gpu]]
model = "H100"
mig_profiles = ["3g.40gb", "2g.20gb", "1g.10gb"]
[[gpu]]
model = "H100"
'''
COUNTERS = '''\
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB)., max
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_DRIVER_VERSION, label, Driver Version
'''
# (entity group, entity id) -> (FB used, graphics engine active), the last of three injected rows
VALUES = {(FE_GPU_I, 0): (20000, 0.5), (FE_GPU_I, 1): (9000, 0.25), (FE_GPU_I, 2): (4000, 0.125),
          (FE_GPU, 1): (50000, 0.75)}

GPU0 = ('gpu="0",UUID="GPU-5ca19fc2-967b-0ace-d6df-54e6fa399c83",pci_bus_id="00000000:18:00.0",device="nvidia0",'
        'modelName="NVIDIA H100 80GB HBM3"')
GPU1 = ('gpu="1",UUID="GPU-92c17e1e-1c27-8a87-c328-d30fe98ba410",pci_bus_id="00000000:2A:00.0",device="nvidia1",'
        'modelName="NVIDIA H100 80GB HBM3"')
TAIL = 'hostname="mig-host",DCGM_FI_DRIVER_VERSION="550.54.15"'
EXPECTED = f'''\
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="3g.40gb",GPU_I_ID="0",{TAIL}}} 20000
DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="2g.20gb",GPU_I_ID="1",{TAIL}}} 9000
DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="1g.10gb",GPU_I_ID="2",{TAIL}}} 4000
DCGM_FI_DEV_FB_USED{{{GPU1},{TAIL}}} 50000
# HELP DCGM_FI_DEV_FB_USED_max Framebuffer memory used (in MiB). (max over the last 15 s window)
# TYPE DCGM_FI_DEV_FB_USED_max gauge
DCGM_FI_DEV_FB_USED_max{{{GPU0},GPU_I_PROFILE="3g.40gb",GPU_I_ID="0",{TAIL}}} 20002
DCGM_FI_DEV_FB_USED_max{{{GPU0},GPU_I_PROFILE="2g.20gb",GPU_I_ID="1",{TAIL}}} 9002
DCGM_FI_DEV_FB_USED_max{{{GPU0},GPU_I_PROFILE="1g.10gb",GPU_I_ID="2",{TAIL}}} 4002
DCGM_FI_DEV_FB_USED_max{{{GPU1},{TAIL}}} 50002
# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{GPU0},GPU_I_PROFILE="3g.40gb",GPU_I_ID="0",{TAIL}}} 0.500000
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{GPU0},GPU_I_PROFILE="2g.20gb",GPU_I_ID="1",{TAIL}}} 0.250000
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{GPU0},GPU_I_PROFILE="1g.10gb",GPU_I_ID="2",{TAIL}}} 0.125000
DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{GPU1},{TAIL}}} 0.750000
'''


@pytest.fixture
def mig_exposition(open_node, tmp_path):
    """(handle, sampler, render time) on the MIG node, three rows injected a second apart."""
    node = tmp_path / "mig.toml"
    node.write_text(NODE)
    handle = open_node(str(node), mode="manual")
    instances = mig_instances(handle)
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=1000), gpu_ids=[1],
                      instances=instances)
    sampler.start(thread=False)
    try:
        t0 = time.time_ns() // 1000
        for k in range(3):
            ts = t0 - 3_000_000 + k * 1_000_000
            for (group, entity), (fb, active) in VALUES.items():
                handle.inject(group, entity, FB_USED, fb + 2 * (k == 1), ts)   # the middle row is the window max
                handle.inject(group, entity, GR_ACTIVE, active, ts)
        sampler.tick_once()
        yield handle, sampler, t0 - 500_000
    finally:
        sampler.stop()


def _body(exposition: Exposition, now: int) -> str:
    text = exposition.render(now_us=now).decode()
    return text[:text.index("# HELP dcgm_collector_")]


def test_instances_of_the_node(mig_exposition):
    handle, sampler, _ = mig_exposition
    assert [(i.entity_id, i.gpu_id, i.instance_id, i.profile) for i in sampler.instances] == [
        (0, 0, 0, "3g.40gb"), (1, 0, 1, "2g.20gb"), (2, 0, 2, "1g.10gb")]
    uuids = [i.uuid for i in sampler.instances]
    assert all(uuid.startswith("MIG-") for uuid in uuids) and len(set(uuids)) == 3


def test_golden_mig_text_as_dcgm_exporter_writes_it(mig_exposition):
    handle, sampler, now = mig_exposition
    exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(hostname="mig-host"), version="test")
    assert _body(exposition, now) == EXPECTED


def test_mig_labels_without_hostname(mig_exposition):
    handle, sampler, now = mig_exposition
    exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(hostname=None), version="test")
    first = _body(exposition, now).splitlines()[2]
    assert first == (f'DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="3g.40gb",GPU_I_ID="0",'
                     'DCGM_FI_DRIVER_VERSION="550.54.15"} 20000')


class _Pods:
    """A pod mapper that holds GPU instance 1 of GPU 0 (GKE files it as ``nvidia0/gi1``) and GPU 1."""

    generation = 1

    def labels_for(self, gpu_index: int, uuid: str) -> dict[str, str]:
        return {"pod": "whole", "namespace": "ml", "container": "main"} if gpu_index == 1 else {}

    def labels_for_instance(self, gpu_index: int, instance_id: int, mig_uuid: str = "") -> dict[str, str]:
        if (gpu_index, instance_id) == (0, 1):
            return {"pod": "slice", "namespace": "ml", "container": "infer"}
        return {}


def test_pods_are_attributed_per_instance(mig_exposition):
    from dcgm_collector.attribution.copies import GpuAttribution

    handle, sampler, now = mig_exposition
    options = ExpositionOptions(hostname="mig-host", attribution=GpuAttribution(_Pods()))
    exposition = Exposition(target_view(sampler), handle.gpus(), options, version="test")
    lines = [line for line in _body(exposition, now).splitlines() if line.startswith("DCGM_FI_DEV_FB_USED{")]
    assert lines == [
        f'DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="3g.40gb",GPU_I_ID="0",{TAIL}}} 20000',
        f'DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="2g.20gb",GPU_I_ID="1",{TAIL},'
        'container="infer",namespace="ml",pod="slice"} 9000',
        f'DCGM_FI_DEV_FB_USED{{{GPU0},GPU_I_PROFILE="1g.10gb",GPU_I_ID="2",{TAIL}}} 4000',
        f'DCGM_FI_DEV_FB_USED{{{GPU1},{TAIL},container="main",namespace="ml",pod="whole"}} 50000',
    ]


def test_an_instance_shows_the_health_of_its_gpu(mig_exposition):
    """DCGM checks whole GPUs: GPU 0's memory incident shows on each of its instances, not on GPU 1."""
    from types import SimpleNamespace

    from dcgm_collector.collect.sampler import HealthState
    from dcgm_collector.expose.health_status import HealthFamily
    from dcgm_collector.expose.labels import EntityLabels
    from dcgm_collector.expose.scrape import Scrape
    from dcgm_collector.model import HealthIncident, HealthReport
    from dcgm_collector.series.text import Header

    incident = HealthIncident(0x10, "FAIL", "double-bit ECC", 20, FE_GPU, 0)
    state = HealthState(HealthReport("FAIL", (incident,)), 0.0, ((0.0, incident),))
    entities = [EntityLabels.of(entity, [("e", f"{entity[0]}.{entity[1]}")], {})
                for entity in [(FE_GPU_I, 0), (FE_GPU_I, 1), (FE_GPU, 1)]]
    family = HealthFamily("H", Header.of("H", "health", "gauge", "gauge"), SimpleNamespace(health=state), entities,
                          {(FE_GPU_I, 0): (FE_GPU, 0), (FE_GPU_I, 1): (FE_GPU, 0)})
    mem = [line for line in family.lines(Scrape(0, 0, 0, lambda: None)) if 'health_watch="MEM"' in line]
    assert [line.split(",")[0] + " " + line.split()[-1] for line in mem] == ['H{e="4.0" 20', 'H{e="4.1" 20',
                                                                           'H{e="1.1" 0']


def test_window_families_per_instance(mig_exposition):
    """--aggregations gives every instance series its own _min/_max/_avg, over that instance's samples only."""
    handle, sampler, now = mig_exposition
    options = ExpositionOptions(hostname="mig-host", aggregations=("min", "max", "avg"))
    text = _body(Exposition(target_view(sampler), handle.gpus(), options, version="test"), now)
    instance_1 = f'{{{GPU0},GPU_I_PROFILE="2g.20gb",GPU_I_ID="1",{TAIL}}}'
    lines = [line for line in text.splitlines() if instance_1 in line]
    # the rows were 9000, 9002, 9000 (FB used) and 0.25 three times (graphics engine active)
    assert lines == [
        f"DCGM_FI_DEV_FB_USED{instance_1} 9000",
        f"DCGM_FI_DEV_FB_USED_min{instance_1} 9000",
        f"DCGM_FI_DEV_FB_USED_max{instance_1} 9002",
        f"DCGM_FI_DEV_FB_USED_avg{instance_1} 9000.666667",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{instance_1} 0.250000",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE_min{instance_1} 0.250000",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE_max{instance_1} 0.250000",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE_avg{instance_1} 0.250000",
    ]
    # every family has one series per instance and one for the whole GPU 1, in that order
    for family in ("DCGM_FI_DEV_FB_USED_min", "DCGM_FI_PROF_GR_ENGINE_ACTIVE_avg"):
        ids = [line.split("GPU_I_ID=")[1][1] if "GPU_I_ID" in line else "whole"
               for line in text.splitlines() if line.startswith(family + "{")]
        assert ids == ["0", "1", "2", "whole"], family
