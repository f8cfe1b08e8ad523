"""The malloc arena cap: set on glibc, left alone when the operator set MALLOC_ARENA_MAX."""

from __future__ import annotations

import platform

import pytest

from dcgm_collector.serve import malloc


def test_the_operators_setting_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert malloc.limit_arenas() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_glibc_takes_the_cap(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert malloc.limit_arenas() is True
