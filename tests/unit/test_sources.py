"""Choosing where the readings come from (dcgm_collector.sources): the refusals that load nothing, and the line
/health and the log give."""

from __future__ import annotations

import pytest

from dcgm_collector.config import parse_config
from dcgm_collector.sources import AUTO_DCGM, GIVEN, Source, SourceError, load_source


def test_the_source_line_names_the_source_and_why():
    assert Source("nvml", GIVEN, "chosen by --nvml").describe() == "source: nvml, chosen by --nvml"
    assert Source("dcgm", AUTO_DCGM, "chosen because libdcgm.so.4 loads").describe() == (
        "source: dcgm, chosen because libdcgm.so.4 loads")


def test_an_unknown_scenario_name_lists_what_sim_takes(monkeypatch):
    monkeypatch.delenv("DCGM_SIM_SCENARIO", raising=False)
    with pytest.raises(SourceError) as caught:
        load_source(parse_config(["--sim", "spikez"], {}))
    message = str(caught.value)
    assert message.startswith("--sim spikez: no shipped scenario is named spikez: give a shipped scenario (default, ")
    assert "spikes, thermal-runaway, xid-burst), a number N (N simulated H100s), or the path of a scenario " \
           "file (.toml) or of a flight recording (.parquet)" in message


def test_nvml_forced_with_no_nvml_library_says_where_it_looked(monkeypatch, tmp_path):
    missing = tmp_path / "libnvidia-ml.so.1"
    monkeypatch.setenv("DCGM_ENGINE_NVML_LIB", str(missing))
    with pytest.raises(SourceError) as caught:
        load_source(parse_config(["--nvml"], {}))
    assert str(caught.value).startswith(f"--nvml: cannot open DCGM_ENGINE_NVML_LIB={missing} (")
    assert str(caught.value).endswith("or leave out --nvml")
