"""The neutral types carry DCGM's own numbers: each checked against the constants compiled into the extension."""

from __future__ import annotations

from dcgm_collector.ext._native import lib

from dcgm_collector.model import (
    HEALTH_RESULTS,
    HEALTH_SYSTEMS,
    HEALTH_WATCH_ALL,
    DeviceSelection,
    EntityType,
    id_ranges,
)


def test_entity_types_are_dcgms():
    compiled = {name[len("DCGM_FE_"):]: getattr(lib, name) for name in dir(lib)
                if name.startswith("DCGM_FE_") and name != "DCGM_FE_COUNT"}
    assert {member.name: int(member) for member in EntityType} == compiled


def test_health_systems_and_results_are_dcgms():
    for name, bit in HEALTH_SYSTEMS:
        assert bit == getattr(lib, f"DCGM_HEALTH_WATCH_{name}"), name
    assert HEALTH_WATCH_ALL == lib.DCGM_HEALTH_WATCH_ALL
    assert HEALTH_RESULTS == {name: getattr(lib, f"DCGM_HEALTH_RESULT_{name}") for name in ("PASS", "WARN", "FAIL")}


def test_device_selection_prints_as_given():
    assert str(DeviceSelection("f")) == "f"
    assert str(DeviceSelection("g", (0, 2, 3))) == "g:0,2,3"


def test_ids_are_written_as_ranges():
    """How the start-up lines and a refused POST /recorder list GPUs: runs of ids as ranges, in order."""
    assert id_ranges([5, 0, 1, 2, 3, 8, 7]) == "0-3,5,7-8"
    assert id_ranges([4]) == "4"
    assert id_ranges([]) == ""
