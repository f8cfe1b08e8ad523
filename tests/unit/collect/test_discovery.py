"""What -d selects on a node."""

from __future__ import annotations

import pytest

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect import discovery
from dcgm_collector.config import parse_devices

COUNTERS = parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n")

# GPU 0 split in three GPU instances, GPU 1 whole
MIG_NODE = """\
seed = 1
[[gpu]]
model = "H100"
mig_instances = 3
[[gpu]]
model = "H100"
"""


@pytest.fixture
def mig_node(open_node, tmp_path):
    scenario = tmp_path / "mig.toml"
    scenario.write_text(MIG_NODE)
    return open_node(str(scenario))


def test_mig_instances_on_a_node_without_mig(handle):
    from dcgm_collector.collect.target import TargetError

    with pytest.raises(TargetError, match=r"-d i:0: no GPU has MIG instances on this node"):
        discovery.discover(handle, COUNTERS, parse_devices("i:0"))


def test_flex_samples_a_mig_gpu_through_its_instances(mig_node):
    topology = discovery.discover(mig_node, COUNTERS, parse_devices("f"))
    assert topology.gpu_ids == (1,)
    assert [gpu.gpu_id for gpu in topology.gpus] == [1, 0]
    assert [(i.entity_id, i.gpu_id, i.instance_id) for i in topology.instances] == [(0, 0, 0), (1, 0, 1), (2, 0, 2)]
    assert all(i.profile == "2g.20gb" for i in topology.instances)   # three even instances of an 80 GB H100


def test_g_samples_whole_gpus_even_with_mig(mig_node):
    topology = discovery.discover(mig_node, COUNTERS, parse_devices("g"))
    assert topology.gpu_ids == (0, 1)
    assert topology.instances == ()


def test_i_samples_the_listed_instances_only(mig_node):
    topology = discovery.discover(mig_node, COUNTERS, parse_devices("i:1"))
    assert topology.gpu_ids == ()
    assert [(i.entity_id, i.instance_id) for i in topology.instances] == [(1, 1)]
    assert [gpu.gpu_id for gpu in topology.gpus] == [0]
    with pytest.raises(discovery.DiscoveryError, match=r"no GPU instance 5 \(there are 0-2\)"):
        discovery.discover(mig_node, COUNTERS, parse_devices("i:5"))
