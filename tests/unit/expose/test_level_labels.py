"""NvLink, NvSwitch, CPU and CPU-core series, as dcgm-exporter's templates write them.

The golden files (golden/levels-*.prom) were written by hand from
dcgm-exporter's render templates and the collectors that fill them, not
from this exposition's output:

* link: ``nvlink`` first; a switch's port then ``nvswitch="nvswitch<N>"``, a
  GPU's link ``gpu, gpu_uuid, pci_bus_id, device, model_name`` (the link
  template's names), then ``hostname``, then the label rows, sorted; a
  GPU's links are numbered from 1, a switch's ports by DCGM's index;
* switch: ``nvswitch="nvswitch<N>"``, ``hostname``, label rows;
* CPU: ``cpu``, ``hostname``, label rows; core: ``cpucore``, ``cpu``,
  ``hostname``, label rows.

A node-wide label row (DCGM_FI_DRIVER_VERSION) is on every level's series,
as dcgm-exporter's collectors of each level read it with their fields; a
level's own label row (DCGM_FI_DEV_CPU_MODEL) is on that level's series.
Values are injected in MANUAL mode and rendered at a fixed time.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.levels import ALL, discover_levels, link_entity_id
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.config import parse_devices
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.model import EntityType

GOLDEN = Path(__file__).parent / "golden"
# the exposition golden node (an H100, GPU 0, with 18 NvLinks, and a T4 without), two switches, a Grace CPU
NODE = 'seed = 3\nnvswitches = 2\ngrace_cpus = 1\ncpu_cores = 2\n[[gpu]]\nmodel = "H100"\n[[gpu]]\nmodel = "T4"\n'
COUNTERS = """\
DCGM_FI_DEV_NVLINK_GET_STATE, gauge, NvLink state (1 up).
DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX, counter, NvSwitch port transmit throughput (in KiB).
DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS, gauge, NvSwitch temperature (in C)., max
DCGM_FI_DEV_CPU_TEMP_CELSIUS, gauge, CPU temperature (in C).
DCGM_FI_DEV_CPU_CLOCK_CURRENT, gauge, CPU core clock (in kHz).
DCGM_FI_DRIVER_VERSION, label, Driver Version
DCGM_FI_DEV_CPU_MODEL, label, CPU model
"""
LINK_STATE, PORT_TX, SWITCH_TEMP, CPU_TEMP, CORE_CLOCK = 1508, 780, 858, 1110, 1120
GPU, SWITCH, LINK, CPU, CORE = (int(t) for t in (EntityType.GPU, EntityType.SWITCH, EntityType.LINK,
                                                  EntityType.CPU, EntityType.CPU_CORE))


@pytest.fixture
def rendered(open_node, tmp_path) -> str:
    """The text of the levels' families: -s i:0,1 keeps ports 0 and 1 of each switch."""
    node = tmp_path / "node.toml"
    node.write_text(NODE)
    handle = open_node(str(node), mode="manual")
    counters = parse_counters(COUNTERS)
    levels = discover_levels(handle, counters, [0, 1], parse_devices("i:0,1"), ALL)
    sampler = Sampler(handle, counters, SamplingOptions(collect_interval_ms=1000), gpu_ids=[0, 1], levels=levels)
    sampler.start(thread=False)
    try:
        t0 = time.time_ns() // 1000
        ts = t0 - 1_000_000
        for port in range(18):
            handle.inject(LINK, link_entity_id(EntityType.GPU, 0, port), LINK_STATE, 1, ts)
        for switch in (0, 1):
            for port in (0, 1):
                handle.inject(LINK, link_entity_id(EntityType.SWITCH, switch, port), PORT_TX,
                              1000 * (2 * switch + port + 1), ts)
            handle.inject(SWITCH, switch, SWITCH_TEMP, 45 + 2 * switch, ts)
        handle.inject(CPU, 0, CPU_TEMP, 51.5, ts)
        handle.inject(CORE, 0, CORE_CLOCK, 3100000, ts)
        handle.inject(CORE, 1, CORE_CLOCK, 3050000, ts)
        sampler.tick_once()
        exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(hostname="golden-host"),
                                version="test")
        return exposition.render(now_us=t0 - 500_000).decode()
    finally:
        sampler.stop()


def _family(text: str, *names: str) -> str:
    """The lines of the named families, in the order they came."""
    return "".join(line + "\n" for line in text.splitlines()
                   if any(line.startswith((f"{n}{{", f"# HELP {n} ", f"# TYPE {n} ")) for n in names))


@pytest.mark.parametrize(("golden", "families"), [
    ("levels-link.prom", ("DCGM_FI_DEV_NVLINK_GET_STATE", "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX")),
    ("levels-switch.prom", ("DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS",)),
    ("levels-cpu.prom", ("DCGM_FI_DEV_CPU_TEMP_CELSIUS",)),
    ("levels-cpucore.prom", ("DCGM_FI_DEV_CPU_CLOCK_CURRENT",)),
])
def test_each_level_renders_as_dcgm_exporter_templates_do(rendered, golden, families):
    assert _family(rendered, *families) == (GOLDEN / golden).read_text()


def test_window_families_work_per_entity(rendered):
    assert _family(rendered, "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS_max").splitlines()[2:] == [
        'DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS_max{nvswitch="nvswitch0",hostname="golden-host",'
        'DCGM_FI_DRIVER_VERSION="550.54.15"} 45',
        'DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS_max{nvswitch="nvswitch1",hostname="golden-host",'
        'DCGM_FI_DRIVER_VERSION="550.54.15"} 47']


def test_gpu_series_keep_their_own_labels(rendered):
    """A GPU field beside the levels is untouched: no level row leaks into the GPUs' families."""
    assert "modelName=" not in _family(rendered, "DCGM_FI_DEV_NVLINK_GET_STATE")
    assert 'nvlink="' not in _family(rendered, "DCGM_FI_DEV_CPU_TEMP_CELSIUS")


def test_switch_and_cpu_selection(open_node, tmp_path):
    """-s g:1 keeps switch 1 and its ports; -p i:1 keeps core 1; ids the node lacks stop the start."""
    from dcgm_collector.collect.levels import LevelSelectionError

    node = tmp_path / "node.toml"
    node.write_text(NODE)
    handle = open_node(str(node))
    counters = parse_counters(COUNTERS)
    levels = discover_levels(handle, counters, [0], parse_devices("g:1"), parse_devices("i:1"))
    switch_links = {(e.parent, e.number) for e in levels if e.level == EntityType.LINK
                    and e.parent_level == EntityType.SWITCH}
    assert switch_links == {(1, port) for port in range(9)}
    assert [e.number for e in levels if e.level == EntityType.SWITCH] == [1]
    assert [(e.number, e.parent) for e in levels if e.level == EntityType.CPU_CORE] == [(1, 0)]
    # a core row alone: the CPUs serve it too (the mean of their cores), as dcgm-exporter's CPU collector
    cores_only = parse_counters("DCGM_FI_DEV_CPU_CLOCK_CURRENT, gauge, clock\n")
    assert [(e.level, e.number) for e in discover_levels(handle, cores_only, [0])] == [
        (EntityType.CPU, 0), (EntityType.CPU_CORE, 0), (EntityType.CPU_CORE, 1)]
    assert sum(1 for e in levels if e.level == EntityType.LINK and e.parent_level == EntityType.GPU) == 18
    with pytest.raises(LevelSelectionError, match=r"-s g:5: no switch 5 on this node \(it has 0, 1\)"):
        discover_levels(handle, counters, [0], parse_devices("g:5"), ALL)
    with pytest.raises(LevelSelectionError, match=r"-p i:7: no CPU core 7"):
        discover_levels(handle, counters, [0], ALL, parse_devices("i:7"))
