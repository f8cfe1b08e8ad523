"""What -d selects on a node."""

from __future__ import annotations

import pytest

from dcgm_collector.collect import discovery
from dcgm_collector.config import parse_devices


def test_mig_instances_on_a_node_without_mig(handle):
    from dcgm_collector.collect.target import TargetError

    with pytest.raises(TargetError, match=r"-d i:0: no GPU has MIG instances on this node"):
        discovery.select_gpus(handle, parse_devices("i:0"))
