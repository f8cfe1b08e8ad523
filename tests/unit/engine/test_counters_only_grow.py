"""A field served as a counter never goes backwards in the engine; DCGM's rates typed counter are served as gauges.

dcgm-exporter's files type NVLink throughput (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL)
``counter``, but DCGM stores it as a per-second rate, which goes up and down: the
collector serves such rows as gauges, and every row it does serve as a counter must
only grow in the engine's models, whatever the scenario.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcgm_collector import engine
from dcgm_collector.catalog.counters import load_counters, parse_counters
from dcgm_collector.catalog.fields import field_table

DATA = Path(engine.__file__).resolve().parents[1] / "data"
REFERENCE = Path(__file__).resolve().parents[3] / "reference" / "dcgm"
SCENARIOS = sorted((Path(engine.__file__).resolve().parent / "scenarios").glob("*.toml"))

_WALK = """
import json, sys
from dcgm_collector import dcgm, engine
from dcgm_collector.ext._native import ffi, lib
fields = json.loads(sys.argv[1])
backwards = []
with dcgm.Handle.embedded(library=engine.library_path()) as handle:
    record = ffi.new("dcgmFieldValue_v1 *")
    for gpu in handle.gpu_ids(supported_only=False):
        for field in fields:
            previous = None
            for step in range(0, 1800):                # 3 minutes at the 100 ms a watch can ask for
                if lib.dcgmSimGetValueAt(gpu, field, step * 100_000, record) != 0 or record.status != 0:
                    continue
                value = record.value.dbl if record.fieldType == ord("d") else record.value.i64
                if value >= 2**47 or value <= -2**31:  # a blank sentinel, not a reading
                    continue
                if previous is not None and value < previous:
                    backwards.append([gpu, field, step / 10, previous, value])
                    break
                previous = value
print(json.dumps(backwards))
"""


def _served_counters() -> list[int]:
    """Every field a dcgm-exporter file (ours, or NVIDIA's, enabled or commented out) has the collector serve as a
    counter."""
    ids = set()
    for path in (DATA / "default-counters.csv", DATA / "dcp-metrics.csv"):
        ids |= {c.field.id for c in load_counters(str(path)).running_totals() if c.field.is_numeric}
    table = field_table()
    for line in (REFERENCE / "exporter-counters.tsv").read_text().splitlines()[1:]:
        _, _, name, field_id, prom_type, _ = line.split("\t")
        field = table.by_id(int(field_id)) if field_id else None
        if prom_type == "counter" and field is not None and field.is_numeric and not field.not_a_running_total:
            ids.add(field.id)
    return sorted(ids)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_fields_served_as_counters_never_go_backwards(scenario, tmp_path):
    fields = _served_counters()
    assert 156 in fields and 449 not in fields     # energy is a counter; NVLink throughput is a rate
    env = dict(os.environ, DCGM_SIM_SCENARIO=str(scenario))
    done = subprocess.run([sys.executable, "-c", _WALK, json.dumps(fields)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = {f: field_table().by_id(f).name for f in fields}
    assert [f"GPU {g}: {names[f]} fell from {a} to {b} at {t:g} s" for g, f, t, a, b in json.loads(done.stdout)] == []


def test_nvlink_throughput_typed_counter_is_served_as_a_gauge():
    counters = parse_counters("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, Total NVLink bandwidth.\n"
                              "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy.\n")
    rate, energy = counters
    assert (rate.prom_type, rate.served_type) == ("counter", "gauge")
    assert rate.field.not_a_running_total == "a rate (MB/s)"
    assert (energy.prom_type, energy.served_type) == ("counter", "counter")
    assert counters.counters_served_as_gauges() == (rate,) and counters.running_totals() == (energy,)
