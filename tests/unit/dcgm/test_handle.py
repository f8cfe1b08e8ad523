"""The Pythonic DCGM API, end to end through the extension and the simulated libdcgm."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest
from dcgm_collector.ext._native import ffi, lib
from support import ENGINE, command

from dcgm_collector import engine
from dcgm_collector.dcgm.handle import (
    Cursor,
    DcgmError,
    DcgmNotWatchedError,
    DcgmUnknownFieldError,
    EntityType,
    FieldValue,
    Handle,
    HandleClosedError,
    _decode_value,
    _parse_address,
    field_meta,
)

GPU_TEMP, POWER, GPU_UTIL = 150, 155, 203
FE_GPU = int(EntityType.GPU)


def test_done_when_eight_gpus_report_utilisation_power_and_temperature(sim_lib, monkeypatch):
    monkeypatch.delenv("DCGM_SIM_SCENARIO", raising=False)
    with Handle.embedded(library=sim_lib) as h:
        fields = h.create_field_groups([GPU_UTIL, POWER, GPU_TEMP])
        gpus = h.all_gpus()
        h.watch(gpus, fields, update_freq_us=100_000, max_keep_age_s=60)
        h.update_all_fields()
        values = h.latest_values(gpus, fields)

    by_field = defaultdict(dict)
    for v in values:
        assert v.status == 0 and not v.is_blank, v
        by_field[v.field_id][v.entity_id] = v.value
    assert set(by_field) == {GPU_UTIL, POWER, GPU_TEMP}
    for field in by_field.values():
        assert sorted(field) == list(range(8))
    assert all(isinstance(u, int) and 0 <= u <= 100 for u in by_field[GPU_UTIL].values())
    assert all(isinstance(p, float) and 20.0 < p < 1000.0 for p in by_field[POWER].values())
    assert all(isinstance(t, int) and 15 <= t <= 110 for t in by_field[GPU_TEMP].values())


def test_gpus_and_their_attributes(handle):
    assert handle.gpu_ids() == list(range(8))
    assert handle.gpu_ids(supported_only=False) == list(range(8))
    gpus = handle.gpus()
    assert [g.gpu_id for g in gpus] == list(range(8))
    assert len({g.uuid for g in gpus}) == 8 and len({g.pci_bus_id for g in gpus}) == 8
    for g in gpus:
        assert "H100" in g.name and g.status == "Ok"
        assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", g.uuid), g.uuid
        assert re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F]", g.pci_bus_id, re.IGNORECASE)
    a = handle.gpu_attributes(3)
    assert a.gpu_id == 3 and a.uuid == gpus[3].uuid
    assert a.fb_total_mib and a.fb_total_mib > 70_000
    assert a.max_power_limit_w and a.power_limit_w and a.power_limit_w <= a.max_power_limit_w
    assert a.slowdown_temp_c and a.shutdown_temp_c and a.slowdown_temp_c < a.shutdown_temp_c
    assert handle.gpu_status(0) == "Ok"
    assert handle.entities(FE_GPU) == list(range(8))
    assert isinstance(handle.mig_hierarchy(), list)


def test_another_node_from_the_scenario_env_after_a_restart(open_node):
    h = open_node("3")
    assert h.gpu_ids() == [0, 1, 2]
    h.close()
    h = open_node("")
    assert h.gpu_ids() == list(range(8))


def test_mig_hierarchy_lists_instances_under_their_gpus(open_node, tmp_path):
    scenario = tmp_path / "mig.toml"
    scenario.write_text('seed = 1\n[[gpu]]\nmodel = "A100"\ncount = 2\nmig_instances = 2\n')
    h = open_node(str(scenario))
    rows = h.mig_hierarchy()
    instances = [r for r in rows if r.entity_group == EntityType.GPU_I]
    compute = [r for r in rows if r.entity_group == EntityType.GPU_CI]
    assert [(r.parent_id, r.entity_id) for r in instances] == [(0, 0), (0, 1), (1, 8), (1, 9)]
    assert all(r.parent_group == EntityType.GPU for r in instances)
    assert sorted((r.parent_id, r.entity_id) for r in compute) == [(0, 0), (1, 1), (8, 8), (9, 9)]
    assert h.entities(EntityType.GPU_I) == [0, 1, 8, 9]


def test_link_states_and_cpu_hierarchy_of_a_switch_and_grace_node(open_node, tmp_path):
    scenario = tmp_path / "levels.toml"
    scenario.write_text('nvswitches = 3\ngrace_cpus = 2\ncpu_cores = 3\n[[gpu]]\nmodel = "H100"\ncount = 2\n')
    h = open_node(str(scenario))
    gpus, switches = h.nvlink_link_states()
    up = 3   # DcgmNvLinkLinkStateUp
    assert sorted(gpus) == [0, 1] and all(states.count(up) == 18 for states in gpus.values())
    # 36 GPU links over 3 switches: the first 12 ports of each up, the rest disabled (1)
    assert sorted(switches) == [0, 1, 2]
    assert all(states[:12] == (up,) * 12 and set(states[12:]) == {1} for states in switches.values())
    assert h.entities(EntityType.SWITCH) == [0, 1, 2]
    assert h.cpu_hierarchy() == {0: (0, 1, 2), 1: (3, 4, 5)}


def test_attributes_of_an_unknown_gpu_are_blank(handle):
    # DCGM reads the attributes as the GPU's latest field values: an id no GPU
    # has answers blanks rather than an error
    attrs = handle.gpu_attributes(99)
    assert attrs.name == "<<<NULL>>>" and attrs.power_limit_w is None and attrs.fb_total_mib is None
    assert attrs.driver_version and attrs.driver_version != "<<<NULL>>>"


def test_dcgm_errors_carry_code_name_and_library_text(handle):
    with pytest.raises(DcgmError) as info:
        handle.gpu_status(99)
    error = info.value
    assert error.code < 0 and error.name == f"DCGM_ST_{error.name[len('DCGM_ST_'):]}"
    assert error.message == ffi.string(lib.errorString(error.code)).decode()
    assert str(error) == f"{error.name} ({error.code}): {error.message} [in {error.where}]"
    assert "gpu 99" in error.where

    fields = handle.create_field_groups([GPU_TEMP])
    with pytest.raises(DcgmNotWatchedError) as info:
        handle.values_since(handle.all_gpus(), fields)
    assert (info.value.code, info.value.name) == (-16, "DCGM_ST_NOT_WATCHED")
    assert "dcgmGetValuesSince_v2" in str(info.value)
    handle.watch(handle.all_gpus(), fields, 100_000, 10.0)
    handle.values_since(handle.all_gpus(), fields)
    handle.unwatch(handle.all_gpus(), fields)
    with pytest.raises(DcgmNotWatchedError):
        handle.values_since(handle.all_gpus(), fields)


def test_a_closed_handle_raises_cleanly(library, monkeypatch):
    monkeypatch.delenv("DCGM_SIM_SCENARIO", raising=False)
    h = Handle.embedded(library=library)
    fields = h.create_field_groups([GPU_TEMP])
    gpus = h.all_gpus()
    h.close()
    h.close()                      # twice is fine
    assert h.closed and "closed" in repr(h)
    calls = [
        lambda: h.gpu_ids(), lambda: h.gpus(), lambda: h.gpu_attributes(0), lambda: h.gpu_status(0),
        lambda: h.entities(FE_GPU), lambda: h.mig_hierarchy(), lambda: h.version_info(),
        lambda: h.hostengine_healthy(), lambda: h.all_gpus(), lambda: h.create_group("g", [0]),
        lambda: h.create_field_groups([GPU_TEMP]), lambda: h.watch(gpus, fields, 1000, 1.0),
        lambda: h.unwatch(gpus, fields), lambda: h.update_all_fields(), lambda: h.latest_values(gpus, fields),
        lambda: h.values_since(gpus, fields), lambda: h.entity_latest_values(FE_GPU, 0, [GPU_TEMP]),
        lambda: h.inject(FE_GPU, 0, GPU_TEMP, 50), lambda: h.create_fake_gpus(1),
        lambda: h.health_set(gpus), lambda: h.health_check(gpus),
    ]
    for call in calls:
        with pytest.raises((HandleClosedError, ValueError)) as info:
            call()
        assert "closed" in str(info.value) or "destroyed" in str(info.value)
    fields.destroy()               # releasing after close is a no-op
    with pytest.raises(HandleClosedError) as info:
        h.gpu_ids()
    assert isinstance(info.value, ValueError) and isinstance(info.value, DcgmError)


def _valid_field_ids(count: int) -> list[int]:
    ids = []
    for field_id in range(1, 2000):
        meta = field_meta(field_id)
        if meta is not None and meta.entity_level == FE_GPU and field_id < 1000:
            ids.append(field_id)
            if len(ids) == count:
                return ids
    pytest.fail(f"the simulator has fewer than {count} GPU fields")


def test_field_groups_split_at_127_and_unknown_ids_are_named(handle):
    ids = _valid_field_ids(200)
    fields = handle.create_field_groups(ids, "many")
    assert [len(g.field_ids) for g in fields] == [127, 73]
    assert fields.field_ids == tuple(ids)
    assert [g.name for g in fields] == ["many.1", "many.2"]
    assert len({g.id for g in fields}) == 2
    gpus = handle.all_gpus()
    handle.watch(gpus, fields, 1_000_000, 10.0)
    handle.update_all_fields()
    values = handle.latest_values(gpus, fields)
    assert len(values) == 200 * 8
    fields.destroy()
    with pytest.raises(ValueError, match="destroyed"):
        handle.latest_values(gpus, fields)

    with pytest.raises(DcgmUnknownFieldError) as info:
        handle.create_field_groups([GPU_TEMP, 9999, 1599])
    assert "9999" in info.value.message and "1599" in info.value.message
    assert info.value.code == lib.DCGM_ST_UNKNOWN_FIELD
    assert handle.create_field_groups([GPU_TEMP, GPU_TEMP]).field_ids == (GPU_TEMP,)


def test_groups_hold_the_entities_given(handle):
    with handle.create_group("three", [0, 1, (FE_GPU, 5)]) as group:
        assert group.entities() == [(FE_GPU, 0), (FE_GPU, 1), (FE_GPU, 5)]
        fields = handle.create_field_groups([GPU_TEMP])
        handle.watch(group, fields, 100_000, 10.0)
        handle.update_all_fields()
        assert sorted(v.entity_id for v in handle.latest_values(group, fields)) == [0, 1, 5]
    with pytest.raises(ValueError, match="destroyed"):
        handle.latest_values(group, fields)
    with pytest.raises(DcgmError) as info:
        handle.create_group("bad", [0, 99])
    assert "GPU 99" in str(info.value)


def _series(values: list[FieldValue]) -> dict[tuple[int, int], list[FieldValue]]:
    series = defaultdict(list)
    for v in values:
        series[(v.entity_id, v.field_id)].append(v)
    return series


@pytest.mark.slow
def test_values_since_cursor_returns_every_sample_exactly_once(open_node):
    h = open_node("2")
    fields = h.create_field_groups([GPU_TEMP, POWER, GPU_UTIL])
    gpus = h.all_gpus()
    h.watch(gpus, fields, update_freq_us=20_000, max_keep_age_s=600.0)
    cursor, first = h.values_since(gpus, fields)        # since 0: everything since the watch began
    seen = [v for v in first if v.status == 0]
    for _ in range(25):
        time.sleep(0.03)
        cursor, values = h.values_since(gpus, fields, cursor)
        assert isinstance(cursor, Cursor)
        seen.extend(v for v in values if v.status == 0)
        assert all(v.status in (0, lib.DCGM_ST_NO_DATA) for v in values)

    per_series = _series(seen)
    assert len(per_series) == 2 * 3
    for key, samples in per_series.items():
        stamps = [v.ts for v in samples]
        assert stamps == sorted(set(stamps)), f"{key}: duplicates or disorder"
        assert len(stamps) >= 10, key
    # no gaps: one read of everything retained holds exactly what the cursor reads saw
    _, everything = h.values_since(gpus, fields, 0)
    last_seen = max(v.ts for v in seen)
    full = _series([v for v in everything if v.status == 0 and v.ts <= last_seen])
    assert {k: [v.ts for v in s] for k, s in full.items()} == {k: [v.ts for v in s] for k, s in per_series.items()}


def test_values_since_with_nothing_new_is_one_no_data_record_per_series(open_node):
    h = open_node("2", mode="manual")
    fields = h.create_field_groups([GPU_TEMP, POWER])
    gpus = h.all_gpus()
    h.watch(gpus, fields, update_freq_us=1000, max_keep_age_s=60.0)
    time.sleep(0.002)
    h.update_all_fields()
    cursor, values = h.values_since(gpus, fields)
    assert {(v.entity_id, v.field_id) for v in values if v.status == 0} == {(g, f) for g in (0, 1)
                                                                          for f in (GPU_TEMP, POWER)}
    cursor2, values = h.values_since(gpus, fields, cursor)
    assert len(values) == 4
    for v in values:
        assert v.status == lib.DCGM_ST_NO_DATA and v.ts == 0
        assert v.value is None and v.is_blank and v.blank_kind == "NO_DATA"
    assert int(cursor2) >= int(cursor)


def test_cursor_is_kept_per_field_group(handle):
    ids = _valid_field_ids(130)
    fields = handle.create_field_groups(ids)
    gpus = handle.all_gpus()
    handle.watch(gpus, fields, 100_000, 60.0)
    cursor, _ = handle.values_since(gpus, fields)
    assert [fg_id for fg_id, _ in cursor.positions] == [fg.id for fg in fields]
    assert all(cursor.since(fg) > 0 for fg in fields)
    assert Cursor(()).since(fields[0]) == 0


def test_inject_into_a_fake_gpu_and_read_it_back(handle):
    (fake,) = handle.create_fake_gpus(1)
    assert fake == 8 and handle.gpu_status(fake) == "Fake"
    ts = int(time.time() * 1e6)
    handle.inject(FE_GPU, fake, GPU_TEMP, 77, ts_us=ts)
    handle.inject(FE_GPU, fake, POWER, 123.5, ts_us=ts)
    temp, power = handle.entity_latest_values(FE_GPU, fake, [GPU_TEMP, POWER])
    assert (temp.value, temp.ts, temp.field_type) == (77, ts, "i")
    assert (power.value, power.field_type) == (123.5, "d")
    name_field = 50
    handle.inject(FE_GPU, fake, name_field, "Fake GPU")
    assert handle.entity_latest_values(FE_GPU, fake, [name_field])[0].value == "Fake GPU"


def test_health_and_versions(handle):
    gpus = handle.all_gpus()
    handle.health_set(gpus)
    report = handle.health_check(gpus)
    assert report.overall in ("PASS", "WARN", "FAIL")
    assert isinstance(handle.version_info(), dict)
    assert isinstance(handle.library.version_info(), dict)
    assert handle.hostengine_healthy() is True


def test_close_removes_what_the_handle_created(handle, library):
    def field_group_count() -> int:
        all_groups = ffi.new("dcgmAllFieldGroup_t *", {"version": lib.dcgmAllFieldGroup_version})
        assert lib.dcgmFieldGroupGetAll(0x7FFFFFFF, all_groups) == 0
        return all_groups.numFieldGroups

    before = field_group_count()
    with Handle.embedded(library=library) as inner:          # shares the engine with `handle`
        fields = inner.create_field_groups(_valid_field_ids(130))
        group = inner.create_group("inner", [0, 1])
        inner.watch(group, fields, 100_000, 10.0)
        assert field_group_count() == before + 2
    assert field_group_count() == before
    info = ffi.new("dcgmGroupInfo_t *", {"version": lib.dcgmGroupInfo_version})
    assert lib.dcgmGroupGetInfo(0x7FFFFFFF, group.id, info) != 0   # the group went too


@pytest.mark.parametrize("address", ["127.0.0.1:1", "/nonexistent/hostengine.sock", "unix:///nonexistent/sock"])
def test_remote_connect_to_nothing_fails_cleanly(library, address):
    with pytest.raises(DcgmError) as info:
        Handle.connect(address, timeout_ms=200, library=library)
    assert info.value.code < 0 and address in info.value.where


@pytest.mark.parametrize("address, expected", [
    ("node7", (False, False)), ("node7:5555", (False, False)), ("[fe80::1]:5555", (False, False)),
    ("::1", (False, False)), ("/run/nv-hostengine.sock", (False, True)),
    ("unix:///run/nv-hostengine.sock", (True, False)), ("TCP://node7:5555", (True, False)),
])
def test_hostengine_addresses_choose_the_connect_call(address, expected):
    assert _parse_address(address) == expected


BAD_CALLS = {
    "gpu id str": (lambda h, g, f: h.gpu_attributes("0"), TypeError),
    "gpu id bool": (lambda h, g, f: h.gpu_attributes(True), TypeError),
    "gpu id negative": (lambda h, g, f: h.gpu_attributes(-1), ValueError),
    "gpu id too big": (lambda h, g, f: h.gpu_attributes(2**32), ValueError),
    "status unknown gpu": (lambda h, g, f: h.gpu_status(99), DcgmError),
    "status float": (lambda h, g, f: h.gpu_status(1.0), TypeError),
    "entities bad group": (lambda h, g, f: h.entities(99), ValueError),
    "entities str": (lambda h, g, f: h.entities("GPU"), TypeError),
    "group name int": (lambda h, g, f: h.create_group(123), TypeError),
    "group name NUL": (lambda h, g, f: h.create_group("a\0b"), ValueError),
    "group name long": (lambda h, g, f: h.create_group("x" * 300), ValueError),
    "group entities str": (lambda h, g, f: h.create_group("g", "0,1"), TypeError),
    "group entity triple": (lambda h, g, f: h.create_group("g", [(1, 2, 3)]), ValueError),
    "group entity unknown": (lambda h, g, f: h.create_group("g", [42]), DcgmError),
    "fields empty": (lambda h, g, f: h.create_field_groups([]), ValueError),
    "fields zero": (lambda h, g, f: h.create_field_groups([0]), ValueError),
    "fields too big": (lambda h, g, f: h.create_field_groups([70000]), ValueError),
    "fields str": (lambda h, g, f: h.create_field_groups(["150"]), TypeError),
    "fields int": (lambda h, g, f: h.create_field_groups(150), TypeError),
    "fields unknown": (lambda h, g, f: h.create_field_groups([9999]), DcgmUnknownFieldError),
    "watch freq 0": (lambda h, g, f: h.watch(g, f, 0, 1.0), ValueError),
    "watch age negative": (lambda h, g, f: h.watch(g, f, 1000, -1.0), ValueError),
    "watch age nan": (lambda h, g, f: h.watch(g, f, 1000, float("nan")), ValueError),
    "watch samples str": (lambda h, g, f: h.watch(g, f, 1000, 1.0, "0"), TypeError),
    "watch fields str": (lambda h, g, f: h.watch(g, "f", 1000, 1.0), TypeError),
    "watch fields empty": (lambda h, g, f: h.watch(g, [], 1000, 1.0), ValueError),
    "watch fields of ints": (lambda h, g, f: h.watch(g, [150], 1000, 1.0), TypeError),
    "watch group str": (lambda h, g, f: h.watch("all", f, 1000, 1.0), TypeError),
    "watch unknown group": (lambda h, g, f: h.watch(12345, f, 1000, 1.0), DcgmError),
    "since negative": (lambda h, g, f: h.values_since(g, f, -1), ValueError),
    "since str": (lambda h, g, f: h.values_since(g, f, "0"), TypeError),
    "latest unwatched group": (lambda h, g, f: h.latest_values(12345, f), DcgmError),
    "entity id negative": (lambda h, g, f: h.entity_latest_values(FE_GPU, -1, [150]), ValueError),
    "entity fields none": (lambda h, g, f: h.entity_latest_values(FE_GPU, 0, None), TypeError),
    "inject str into int": (lambda h, g, f: h.inject(FE_GPU, 0, GPU_TEMP, "hot"), TypeError),
    "inject too big": (lambda h, g, f: h.inject(FE_GPU, 0, GPU_TEMP, 2**70), ValueError),
    "inject unknown field": (lambda h, g, f: h.inject(FE_GPU, 0, 9999, 1), DcgmUnknownFieldError),
    "inject unknown gpu": (lambda h, g, f: h.inject(FE_GPU, 99, GPU_TEMP, 1), DcgmError),
    "inject bad ts": (lambda h, g, f: h.inject(FE_GPU, 0, GPU_TEMP, 1, ts_us=-5), ValueError),
    "fake gpus 0": (lambda h, g, f: h.create_fake_gpus(0), ValueError),
    "update wait int": (lambda h, g, f: h.update_all_fields(1), TypeError),
    "health systems str": (lambda h, g, f: h.health_set(g, "all"), TypeError),
    "embedded bad mode": (lambda h, g, f: Handle.embedded("fast"), ValueError),
    "connect int": (lambda h, g, f: Handle.connect(5555), TypeError),
    "connect empty": (lambda h, g, f: Handle.connect(""), ValueError),
    "connect space": (lambda h, g, f: Handle.connect("a host"), ValueError),
    "connect bad port": (lambda h, g, f: Handle.connect("localhost:99999"), ValueError),
    "connect bad timeout": (lambda h, g, f: Handle.connect("localhost", timeout_ms=-1), ValueError),
    "connect empty uri": (lambda h, g, f: Handle.connect("unix://"), ValueError),
    "field meta str": (lambda h, g, f: field_meta("150"), TypeError),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_raises_a_clean_error(handle, name):
    call, expected = BAD_CALLS[name]
    fields = handle.create_field_groups([GPU_TEMP])
    with pytest.raises(expected):
        call(handle, handle.all_gpus(), fields)
    assert handle.gpu_ids() == list(range(8))     # and the handle still works


def test_objects_of_another_handle_are_refused(handle, library):
    with Handle.embedded(library=library) as other:
        fields = other.create_field_groups([GPU_TEMP])
        with pytest.raises(ValueError, match="another handle"):
            handle.latest_values(handle.all_gpus(), fields)
        with pytest.raises(ValueError, match="another handle"):
            handle.watch(other.all_gpus(), handle.create_field_groups([POWER]), 1000, 1.0)


def test_blank_values_are_recognised():
    text = ffi.new("char[256]", b"<<<NOT_SUPPORTED>>>")
    plain = ffi.new("char[256]", b"NVIDIA H100")

    def decode(type_char, status=0, i64=0, dbl=0.0, s=plain):
        return _decode_value(FE_GPU, 0, 150, ord(type_char), status, 1, i64, dbl, s)

    assert decode("i", i64=0x7FFFFFFFFFFFFFF2).blank_kind == "NOT_SUPPORTED"
    assert decode("i", i64=0x7FFFFFFFFFFFFFF0).blank_kind == "BLANK"
    assert decode("i", i64=0x7FFFFFFFFFFFFFFF).blank_kind == "BLANK"
    assert decode("i", i64=41).value == 41
    assert decode("d", dbl=2.0**47 + 3).blank_kind == "NOT_PERMISSIONED"
    assert decode("d", dbl=2.0**48).blank_kind == "BLANK"
    assert decode("d", dbl=-1.5).value == -1.5
    assert decode("s", s=text).blank_kind == "NOT_SUPPORTED"
    assert decode("s").value == "NVIDIA H100"
    no_data = decode("i", status=lib.DCGM_ST_NO_DATA, i64=5)
    assert (no_data.value, no_data.blank_kind, no_data.is_blank) == (None, "NO_DATA", True)
    assert decode("b", s=plain).value[:11] == b"NVIDIA H100"
    assert decode("x").blank_kind == "UNKNOWN_TYPE"


def _sim_cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI of the same package this process imported (not a checkout in the working directory)."""
    package_parent = Path(engine.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(command(ENGINE, *args), cwd=package_parent,
                          capture_output=True, text=True, check=False, env=env, timeout=60)


def test_sim_module_locates_the_library_and_checks_scenarios(tmp_path):
    libdir = _sim_cli("libdir").stdout
    assert libdir == f"{engine.library_dir()}\n"
    assert Path(libdir.strip(), "libdcgm.so.4").is_file()
    help_text = _sim_cli("--help").stdout
    assert "libdir" in help_text and "check" in help_text and "DCGM_SIM_SCENARIO" in help_text

    shipped = sorted((Path(engine.__file__).parent / "scenarios").glob("*.toml"))
    assert shipped, "no shipped scenarios"
    for path in shipped:
        engine.check_scenario(path)
    engine.check_scenario("4")
    engine.check_scenario("")

    broken = tmp_path / "broken.toml"
    broken.write_text('seed = 1\n[[gpu]]\nmodel = "H100\n')
    with pytest.raises(ValueError, match=r"broken\.toml:3: "):
        engine.check_scenario(broken)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('seed = 1\n[[gpu]]\nmodel = "NoSuchGPU"\ncount = 2\n')
    with pytest.raises(ValueError, match="NoSuchGPU"):
        engine.check_scenario(wrong)
    with pytest.raises(ValueError):
        engine.check_scenario(tmp_path / "missing.toml")
    with pytest.raises(TypeError):
        engine.check_scenario(3)

    result = _sim_cli("check", str(shipped[0]), str(wrong))
    assert result.returncode == 1
    assert f"{shipped[0]}: ok" in result.stdout and "NoSuchGPU" in result.stderr
