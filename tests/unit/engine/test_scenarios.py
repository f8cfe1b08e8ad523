"""Naming a scenario: a GPU count, a file, or the name of one shipped with the engine."""

from __future__ import annotations

from pathlib import Path

from dcgm_collector import engine


def test_shipped_scenarios_go_by_name():
    assert engine.resolve_scenario("4") == "4"
    spikes = Path(engine.resolve_scenario("spikes"))
    assert spikes.name == "spikes.toml" and spikes.is_file()
    assert Path(engine.resolve_scenario("xid-burst.toml")).is_file()
    assert engine.resolve_scenario("no-such-scenario") == "no-such-scenario"
