"""DCGM_EXP_P2P_STATUS on a simulated node with two H100s (NvLinks) and a T4 (none).

The text is compared with what dcgm-exporter's P2P collector and GPU template
write: one series per ordered GPU pair, ``peer_gpu`` and ``link_status``
sorted in with the label rows, the status code as the value.
"""

from __future__ import annotations

import pytest

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.servable import SERVED_EXPORTER_COUNTERS
from dcgm_collector.collect.view import target_view
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.expose.p2p_status import link_status_name

NODE = 'seed = 3\n[[gpu]]\nmodel = "H100"\n[[gpu]]\nmodel = "H100"\n[[gpu]]\nmodel = "T4"\n'
COUNTERS = "DCGM_FI_DRIVER_VERSION, label, Driver Version\nDCGM_EXP_P2P_STATUS, counter, P2P NvLink status\n"
GPU0 = ('gpu="0",{uuid}="GPU-5ca19fc2-967b-0ace-d6df-54e6fa399c83",pci_bus_id="00000000:18:00.0",device="nvidia0",'
        'modelName="NVIDIA H100 80GB HBM3",hostname="p2p-host",DCGM_FI_DRIVER_VERSION="550.54.15"')
GPU1 = ('gpu="1",{uuid}="GPU-92c17e1e-1c27-8a87-c328-d30fe98ba410",pci_bus_id="00000000:2A:00.0",device="nvidia1",'
        'modelName="NVIDIA H100 80GB HBM3",hostname="p2p-host",DCGM_FI_DRIVER_VERSION="550.54.15"')
GPU2 = ('gpu="2",{uuid}="GPU-85e4783c-1079-ac2e-fd8b-272bd4d225e2",pci_bus_id="00000000:3A:00.0",device="nvidia2",'
        'modelName="Tesla T4",hostname="p2p-host",DCGM_FI_DRIVER_VERSION="550.54.15"')


def expected(uuid: str = "UUID") -> str:
    gpu0, gpu1, gpu2 = (g.format(uuid=uuid) for g in (GPU0, GPU1, GPU2))
    return (
        "# HELP DCGM_EXP_P2P_STATUS P2P NvLink status\n"
        "# TYPE DCGM_EXP_P2P_STATUS counter\n"
        f'DCGM_EXP_P2P_STATUS{{{gpu0},link_status="OK",peer_gpu="1"}} 0\n'
        f'DCGM_EXP_P2P_STATUS{{{gpu0},link_status="NotSupported",peer_gpu="2"}} 5\n'
        f'DCGM_EXP_P2P_STATUS{{{gpu1},link_status="OK",peer_gpu="0"}} 0\n'
        f'DCGM_EXP_P2P_STATUS{{{gpu1},link_status="NotSupported",peer_gpu="2"}} 5\n'
        f'DCGM_EXP_P2P_STATUS{{{gpu2},link_status="NotSupported",peer_gpu="0"}} 5\n'
        f'DCGM_EXP_P2P_STATUS{{{gpu2},link_status="NotSupported",peer_gpu="1"}} 5\n'
    )


@pytest.fixture
def sampler(open_node, tmp_path):
    node = tmp_path / "node.toml"
    node.write_text(NODE)
    handle = open_node(str(node), mode="manual")
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=1000))
    sampler.start(thread=False)
    yield sampler, handle.gpus()
    sampler.stop()


def _families(sampler, gpus, **options) -> str:
    exposition = Exposition(target_view(sampler), gpus, ExpositionOptions(hostname="p2p-host", **options), version="t")
    text = exposition.render().decode()
    return text[:text.index("# HELP dcgm_collector_")]


def test_every_ordered_gpu_pair_with_its_link_status(sampler):
    assert _families(*sampler) == expected()


def test_old_namespace_names_the_uuid_label_uuid(sampler):
    assert _families(*sampler, use_old_namespace=True) == expected("uuid")


def test_a_gpu_not_sampled_gets_no_row_but_stays_a_peer(open_node, tmp_path):
    node = tmp_path / "node.toml"
    node.write_text(NODE)
    handle = open_node(str(node), mode="manual")
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=1000), gpu_ids=[0])
    sampler.start(thread=False)
    try:
        body = _families(sampler, handle.gpus())
    finally:
        sampler.stop()
    assert body == "".join(expected().splitlines(keepends=True)[:4])


@pytest.mark.parametrize(("status", "name"), [(0, "OK"), (1, "ChipsetNotSupported"), (2, "GPUNotSupported"),
                                              (3, "TopologyNotSupported"), (4, "DisabledByRegKey"),
                                              (5, "NotSupported"), (6, "Unknown"), (7, "Unknown")])
def test_link_status_names(status, name):
    assert link_status_name(status) == name


def test_every_exporter_counter_the_start_up_check_calls_served_gets_series(open_node, tmp_path):
    # collect.servable warns about DCGM_EXP_* rows outside SERVED_EXPORTER_COUNTERS; the rest must be served
    node = tmp_path / "node.toml"
    node.write_text(NODE)
    handle = open_node(str(node), mode="manual")
    counters = parse_counters("".join(f"{name}, gauge, {name}\n" for name in sorted(SERVED_EXPORTER_COUNTERS)))
    sampler = Sampler(handle, counters, SamplingOptions(collect_interval_ms=1000))
    sampler.start(thread=False)
    try:
        sampler.tick_once()
        text = _families(sampler, handle.gpus())
    finally:
        sampler.stop()
    assert {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")} == SERVED_EXPORTER_COUNTERS
