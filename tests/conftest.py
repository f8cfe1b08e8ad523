"""Shared fixtures: the simulated libdcgm.so.4 and embedded handles on it.

The library is loaded once per test process (one libdcgm per process), so
every test in this process goes through the simulator the package installed.
The simulated engine reads DCGM_SIM_SCENARIO when the embedded engine starts;
a test that needs another node opens it with ``open_node`` while no other
embedded handle is open (the engine is shared while any handle uses it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

SCENARIO_ENV = "DCGM_SIM_SCENARIO"


@pytest.fixture(scope="session")
def sim_lib() -> Path:
    from dcgm_collector.engine import library_path

    return library_path()


@pytest.fixture(scope="session")
def library(sim_lib: Path):
    from dcgm_collector.dcgm import load_library

    return load_library(sim_lib)


@pytest.fixture
def handle(library, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """An embedded handle (AUTO mode) on the default simulated node: 8 H100s training."""
    from dcgm_collector.dcgm import Handle

    monkeypatch.delenv(SCENARIO_ENV, raising=False)
    with Handle.embedded(library=library) as h:
        yield h


@pytest.fixture
def open_node(library, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable]:
    """open_node(spec="", mode="auto") -> an embedded handle on the node spec names."""
    from dcgm_collector.dcgm import Handle

    handles = []

    def open_(spec: str = "", mode: str = "auto"):
        monkeypatch.setenv(SCENARIO_ENV, spec)
        h = Handle.embedded(mode, library=library)
        handles.append(h)
        return h

    yield open_
    for h in reversed(handles):
        h.close()


@pytest.fixture
def webhook() -> Iterator[tuple[str, object]]:
    """An Alertmanager webhook on loopback: its URL and the queue of the notices it was sent."""
    from support import webhook_receiver

    with webhook_receiver() as receiver:
        yield receiver
