"""The watch plan: how a counters file becomes DCGM field groups and watch parameters."""

from __future__ import annotations

import math

import pytest

from dcgm_collector.catalog.counters import load_counters, parse_counters
from dcgm_collector.catalog.fields import field_table
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.watches import (
    EVENT_CAPACITY,
    MIN_KEEP_AGE_S,
    WatchGroup,
    plan_watches,
    ring_capacity,
    watch_level,
)

MAX_IDS = 127
TEMP, POWER, UTIL, CLOCK_EVENTS, XID, DRIVER, UUID, CUDA_DRIVER = 150, 155, 203, 112, 230, 1, 54, 5
SM_ACTIVE, TENSOR_ACTIVE = 1002, 1004

MIXED = """\
# a bit of everything
DCGM_FI_DEV_GPU_TEMP, gauge, temperature
DCGM_FI_PROF_SM_ACTIVE, gauge, SM active
DCGM_FI_DEV_POWER_USAGE, gauge, power
DCGM_FI_DEV_XID_ERRORS, gauge, last XID
DCGM_FI_DRIVER_VERSION, label, driver
DCGM_FI_DEV_UUID, label, uuid
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, tensor
DCGM_FI_CUDA_DRIVER_VERSION, gauge, CUDA driver
DCGM_FI_DEV_GPU_UTIL, gauge, utilisation
"""


def _plan(text: str = MIXED, **kwargs):
    return plan_watches(parse_counters(text), SamplingOptions(**kwargs))


def _kinds(plan) -> dict[tuple[str, str], tuple[int, ...]]:
    out: dict[tuple[str, str], tuple[int, ...]] = {}
    for group in plan.groups:
        out[(group.kind, group.entity_level)] = out.get((group.kind, group.entity_level), ()) + group.field_ids
    return out


def _numeric_gpu_fields(count: int) -> list:
    """``count`` plain numeric GPU fields from the table (not profiling, not events)."""
    table = field_table()
    found = []
    for field_id in range(1, 4000):
        field = table.by_id(field_id)
        if (field is not None and field.type in ("i", "d") and field.scope == "entity"
                and watch_level(field) == "GPU" and not field.is_profiling and not field.is_event):
            found.append(field)
        if len(found) == count:
            return found
    raise AssertionError(f"the field table has fewer than {count} plain numeric GPU fields")


def test_each_kind_of_field_gets_its_own_groups():
    kinds = _kinds(_plan())
    assert kinds == {
        ("values", "GPU"): (TEMP, POWER, UTIL),
        ("values", "NONE"): (CUDA_DRIVER,),
        ("profiling", "GPU"): (SM_ACTIVE, TENSOR_ACTIVE),
        ("events", "GPU"): (XID,),
        ("labels", "NONE"): (DRIVER,),
        ("labels", "GPU"): (UUID,),
    }


def test_groups_come_in_a_stable_order_values_first():
    plan = _plan()
    assert [g.kind for g in plan.groups] == ["values", "values", "profiling", "events", "labels", "labels"]
    assert plan == _plan()
    assert plan.of_kind("profiling") == (WatchGroup("profiling", "GPU", (SM_ACTIVE, TENSOR_ACTIVE)),)


def test_more_than_127_fields_are_split_in_file_order():
    fields = _numeric_gpu_fields(280)
    text = "".join(f"{f.name}, gauge, field {f.id}\n" for f in fields)
    plan = _plan(text)
    assert [len(g.field_ids) for g in plan.groups] == [127, 127, 26]
    assert all(g.kind == "values" and g.entity_level == "GPU" for g in plan.groups)
    assert sum((g.field_ids for g in plan.groups), ()) == tuple(f.id for f in fields)


def test_exactly_127_fields_make_one_group():
    fields = _numeric_gpu_fields(MAX_IDS)
    plan = _plan("".join(f"{f.name}, gauge, x\n" for f in fields))
    assert [len(g.field_ids) for g in plan.groups] == [MAX_IDS]


def test_profiling_fields_never_share_a_group_with_other_fields():
    fields = _numeric_gpu_fields(130)
    table = field_table()
    profiling = [f for f in (table.by_id(i) for i in range(1001, 1100)) if f is not None and f.is_profiling]
    rows = [f"{f.name}, gauge, x\n" for f in fields[:70]] + [f"{f.name}, gauge, p\n" for f in profiling]
    rows += [f"{f.name}, gauge, x\n" for f in fields[70:]]
    plan = _plan("".join(rows))
    for group in plan.groups:
        flags = {table.by_id(i).is_profiling for i in group.field_ids}
        assert flags == {group.kind == "profiling"}
        assert len(group.field_ids) <= MAX_IDS
    assert sum((g.field_ids for g in plan.of_kind("profiling")), ()) == tuple(f.id for f in profiling)


def test_exporter_rows_add_the_fields_they_need():
    text = ("DCGM_EXP_XID_ERRORS_COUNT, gauge, xids\nDCGM_EXP_CLOCK_EVENTS_COUNT, gauge, clock events\n"
            "DCGM_EXP_GPU_HEALTH_STATUS, gauge, health\n")
    assert _kinds(_plan(text)) == {("events", "GPU"): (XID,), ("values", "GPU"): (CLOCK_EVENTS,)}


def test_health_status_alone_needs_no_watch():
    assert _plan("DCGM_EXP_GPU_HEALTH_STATUS, gauge, health\n").groups == ()


def test_a_field_needed_twice_is_watched_once():
    text = "DCGM_FI_DEV_XID_ERRORS, gauge, last XID\nDCGM_EXP_XID_ERRORS_COUNT, gauge, xids\n"
    assert _plan(text).groups == (WatchGroup("events", "GPU", (XID,)),)


def test_watch_interval_defaults_to_the_collect_interval():
    assert _plan().update_freq_us == 1_000_000
    assert _plan(collect_interval_ms=250).update_freq_us == 250_000
    plan = _plan(collect_interval_ms=1000, watch_interval_ms=100)
    assert (plan.update_freq_us, plan.collect_interval_us) == (100_000, 1_000_000)
    assert _plan(collect_interval_ms=500, watch_interval_ms=500).update_freq_us == 500_000


def test_a_watch_interval_slower_than_the_collect_interval_is_refused():
    with pytest.raises(ValueError) as caught:
        _plan(collect_interval_ms=1000, watch_interval_ms=2000)
    message = str(caught.value)
    assert "2000 ms" in message and "1000 ms" in message
    assert "--watch-interval" in message and "--collect-interval" in message


@pytest.mark.parametrize("kwargs", [
    {"collect_interval_ms": 0}, {"collect_interval_ms": -5}, {"collect_interval_ms": math.nan},
    {"watch_interval_ms": 0}, {"watch_interval_ms": math.inf}, {"retention_s": 0}, {"retention_s": -1.0},
    {"retention_s": math.nan},
])
def test_bad_numbers_are_refused(kwargs):
    with pytest.raises(ValueError):
        _plan(**kwargs)


@pytest.mark.parametrize("kwargs", [{"collect_interval_ms": "1000"}, {"watch_interval_ms": True},
                                    {"retention_s": None}])
def test_non_numbers_are_refused(kwargs):
    with pytest.raises(TypeError):
        _plan(**kwargs)


def test_keep_age_covers_a_few_collect_intervals():
    assert _plan(collect_interval_ms=1000).max_keep_age_s == MIN_KEEP_AGE_S
    assert _plan(collect_interval_ms=100, watch_interval_ms=10).max_keep_age_s == MIN_KEEP_AGE_S
    assert _plan(collect_interval_ms=30_000).max_keep_age_s == 120.0


@pytest.mark.parametrize("retention_s, watch_ms, collect_ms", [
    (900.0, None, 1000), (900.0, 100, 1000), (60.0, 250, 250), (1.0, 100, 100), (0.05, 100, 100),
])
def test_ring_capacity_holds_the_retention_with_a_little_slack(retention_s, watch_ms, collect_ms):
    plan = _plan(retention_s=retention_s, watch_interval_ms=watch_ms, collect_interval_ms=collect_ms)
    rows = math.ceil(retention_s * 1e6 / plan.update_freq_us)
    assert rows + 1 <= plan.ring_capacity <= rows * 1.06 + 3
    assert plan.retention_s == retention_s
    assert plan.event_capacity == EVENT_CAPACITY


def test_default_ring_capacity_is_an_hour():
    assert 3600 < _plan().ring_capacity < 3800
    assert 36_000 < _plan(watch_interval_ms=100).ring_capacity < 38_000
    assert ring_capacity(3600.0, 100_000) == _plan(watch_interval_ms=100).ring_capacity


def test_instance_and_vgpu_fields_are_watched_on_gpus():
    table = field_table()
    assert watch_level(table.by_id(XID)) == "GPU"          # level GPU_CI in the table
    assert watch_level(table.by_id(SM_ACTIVE)) == "GPU"    # level GPU_CI
    assert watch_level(table.by_id(526)) == "GPU"          # vGPU licence status, level VGPU
    assert watch_level(table.by_id(DRIVER)) == "NONE"


def test_the_shipped_counters_files_make_a_valid_plan():
    from dcgm_collector.catalog.counters import default_counters_path

    for name in ("default-counters.csv", "dcp-metrics.csv"):
        counters = load_counters(default_counters_path(name))
        plan = plan_watches(counters)
        assert plan.groups
        for group in plan.groups:
            assert 0 < len(group.field_ids) <= MAX_IDS
            assert len(set(group.field_ids)) == len(group.field_ids)
        assert set(plan.field_ids) >= {f for f in counters.field_ids()}
        assert XID in plan.field_ids  # both list DCGM_FI_DEV_XID_ERRORS, an event field
