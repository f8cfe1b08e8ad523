"""The field table: names, aliases, legacy names, metadata, suggestions."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from dcgm_collector.catalog.counters import default_counters_path, load_counters
from dcgm_collector.catalog.fields import ENTITY_LEVELS, FIELD_TYPES, Field, FieldTable, field_table

REPO = Path(__file__).resolve().parents[3]
EXPORTER_COUNTERS_TSV = REPO / "reference" / "dcgm" / "exporter-counters.tsv"


@pytest.fixture(scope="module")
def table() -> FieldTable:
    return field_table()


def test_table_is_cached_and_complete(table: FieldTable) -> None:
    assert field_table() is table
    assert len(table) > 600
    for field in table:
        assert field.type in FIELD_TYPES
        assert field.entity_level in ENTITY_LEVELS
        assert field.scope in ("global", "entity")
        assert table.by_id(field.id) is field
        assert table.lookup(field.name) is field
        assert table.name_kind(field.name) == "canonical"


@pytest.mark.parametrize(("name", "field_id", "kind"), [
    ("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 150, "canonical"),
    ("DCGM_FI_DEV_GPU_TEMP", 150, "deprecated"),
    ("dcgm_gpu_temp", 150, "legacy"),
    ("DCGM_FI_DEV_GPU_UTIL_RATIO", 203, "canonical"),
    ("DCGM_FI_DEV_GPU_UTIL", 203, "deprecated"),
    ("dcgm_gpu_utilization", 203, "legacy"),
    ("DCGM_FI_DEV_POWER_USAGE", 155, "deprecated"),
    ("DCGM_FI_DEV_BOARD_POWER_WATTS", 155, "canonical"),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112, "alias"),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112, "canonical"),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449, "deprecated"),
    ("DCGM_FI_DRIVER_VERSION", 1, "deprecated"),
    ("DCGM_FI_DEV_XID_ERRORS", 230, "deprecated"),
    ("DCGM_FI_PROF_SM_ACTIVE", 1002, "deprecated"),
    ("dcgm_fi_prof_sm_active", 1002, "legacy"),
])
def test_lookup_by_every_kind_of_name(table: FieldTable, name: str, field_id: int, kind: str) -> None:
    field = table.lookup(name)
    assert field is not None and field.id == field_id
    assert table.name_kind(name) == kind


@pytest.mark.parametrize("name", [
    "dcgm_fi_dev_gpu_temp",       # names are case-sensitive, as in go-dcgm
    "DCGM_GPU_TEMP",
    "DCGM_FI_DEV_GPU_TEMP ",
    "",
    "DCGM_FI_UNKNOWN",            # the id-0 placeholder has no metadata
    "DCGM_FI_MAX_FIELDS",         # range markers are not fields
    "DCGM_EXP_XID_ERRORS_COUNT",  # exporter counters are not DCGM fields
])
def test_lookup_rejects(table: FieldTable, name: str) -> None:
    assert table.lookup(name) is None
    assert table.name_kind(name) is None


def test_by_id(table: FieldTable) -> None:
    assert table.by_id(150).name == "DCGM_FI_DEV_GPU_TEMP_CELSIUS"
    assert table.by_id(0) is None
    assert table.by_id(99999) is None


@pytest.mark.parametrize(("field_id", "type_", "level", "scope", "unit", "profiling", "event"), [
    (1, "s", "NONE", "global", None, False, False),       # driver version
    (150, "i", "GPU", "entity", "C", False, False),       # GPU temperature
    (155, "d", "GPU", "entity", "W", False, False),       # power
    (100, "i", "GPU", "entity", "MHz", False, False),     # SM clock
    (203, "i", "GPU", "entity", "%", False, False),       # GPU utilisation, 0-100
    (252, "i", "GPU_CI", "entity", "MiB", False, False),  # frame buffer used
    (230, "i", "GPU_CI", "entity", None, False, True),    # XID: event-driven
    (450, "i", "GPU", "entity", None, False, True),       # NVLink errors: event-driven
    (1001, "d", "GPU_CI", "entity", "ratio", True, False),
    (1009, "i", "GPU", "entity", "B/s", True, False),
    (220, "b", "GPU", "entity", None, False, False),      # graphics pids: binary
])
def test_metadata(table: FieldTable, field_id, type_, level, scope, unit, profiling, event) -> None:
    field = table.by_id(field_id)
    assert (field.type, field.entity_level, field.scope, field.unit, field.is_profiling, field.is_event) == (
        type_, level, scope, unit, profiling, event)


def test_profiling_flag_follows_the_id_range(table: FieldTable) -> None:
    assert sum(1 for field in table if field.is_profiling) >= 20 and len(list(table)) >= 500
    for field in table:
        assert field.is_profiling == (1001 <= field.id <= 1099), field


def test_event_fields_are_few(table: FieldTable) -> None:
    assert sorted(field.id for field in table if field.is_event) == [230, 450]


@pytest.mark.parametrize(("typed", "first"), [
    ("dcgm_fi_dev_gpu_temp", "DCGM_FI_DEV_GPU_TEMP"),
    ("DCGM_FI_DEV_GPU_TEMPP", "DCGM_FI_DEV_GPU_TEMP"),
    ("DCGM_FI_DEV_GPU_TMP", "DCGM_FI_DEV_GPU_TEMP"),
    ("DCGM_FI_PROF_SM_ACTIV", "DCGM_FI_PROF_SM_ACTIVE"),
    ("DCGM_GPU_TEMP", "dcgm_gpu_temp"),
    ("dcgm_gpu_tmp", "dcgm_gpu_temp"),
    ("DCGM_FI_DEV_FB_USD", "DCGM_FI_DEV_FB_USED"),
])
def test_closest_puts_the_likely_name_first(table: FieldTable, typed: str, first: str) -> None:
    suggestions = table.closest(typed)
    assert suggestions[0] == first
    assert 1 <= len(suggestions) <= 3
    assert typed not in suggestions
    assert all(table.lookup(name) is not None for name in suggestions)


def test_closest_with_extra_names_and_limits(table: FieldTable) -> None:
    assert table.closest("DCGM_EXP_XID_ERRORS_COUNTX", extra_names=["DCGM_EXP_XID_ERRORS_COUNT"])[0] == (
        "DCGM_EXP_XID_ERRORS_COUNT")
    assert table.closest("DCGM_FI_DEV_GPU_TEMPP", n=1) == ["DCGM_FI_DEV_GPU_TEMP"]
    assert table.closest("DCGM_FI_DEV_GPU_TEMPP", n=0) == []
    assert table.closest("qqqqqqqq") == []
    assert table.closest("x" * 10_000) == []


def test_closest_of_a_known_name_offers_other_spellings(table: FieldTable) -> None:
    assert "dcgm_fi_prof_sm_active" in table.closest("DCGM_FI_PROF_SM_ACTIVE")


def test_table_refuses_inconsistent_input() -> None:
    one = Field(1, "A", "i", "GPU", "entity", None, False, False)
    two = Field(2, "B", "i", "GPU", "entity", None, False, False)
    with pytest.raises(ValueError, match="listed twice"):
        FieldTable([one, one])
    with pytest.raises(ValueError, match="unknown field id"):
        FieldTable([one], {"C": (3, "legacy")})
    with pytest.raises(ValueError, match="means field"):
        FieldTable([one, two], {"A": (2, "legacy")})


def shipped_and_listed_rows() -> list[tuple[str, str, int | None]]:
    rows = []
    with EXPORTER_COUNTERS_TSV.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            rows.append((row["file"], row["name"], int(row["field_id"]) if row["field_id"] else None))
    return rows


def test_every_exporter_counters_row_resolves_to_its_id(table: FieldTable) -> None:
    rows = shipped_and_listed_rows()
    assert len(rows) > 100
    for file, name, field_id in rows:
        if field_id is None:
            assert name.startswith("DCGM_EXP_"), (file, name)
            assert table.lookup(name) is None
        else:
            field = table.lookup(name)
            assert field is not None and field.id == field_id, (file, name)


@pytest.mark.parametrize(("shipped", "listed_as"), [
    ("default-counters.csv", "default-counters.csv"),
    ("dcp-metrics.csv", "dcp-metrics-included.csv"),
])
def test_shipped_files_hold_the_listed_rows(shipped: str, listed_as: str) -> None:
    path = default_counters_path(shipped)
    counters = load_counters(path)
    expected = [(name, field_id) for file, name, field_id in shipped_and_listed_rows() if file == listed_as]
    enabled = {(c.name, c.field.id if c.field else None) for c in counters}
    assert enabled <= set(expected)
    for counter in counters:
        assert counter.field is None or counter.field.id == dict(expected)[counter.name]
    # every listed row is in the file, enabled or commented out
    text = Path(path).read_text(encoding="utf-8")
    for name, _ in expected:
        assert f"\n{name}, " in text or f"\n# {name}, " in text, name


def test_generated_data_is_up_to_date() -> None:
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_fields_data.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
