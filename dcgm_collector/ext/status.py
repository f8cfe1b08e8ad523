"""The names of DCGM's status codes (``DCGM_ST_*``), from the constants compiled into the extension.

Below every stage, so that a reader of the sampler's counts (the self-metrics,
/health) names a failed call's status without loading the DCGM binding; the
binding's errors (dcgm_collector.dcgm.errors) name theirs from the same table.
"""

from __future__ import annotations

from dcgm_collector.ext._native import lib

__all__ = ["STATUS_NAMES", "status_name"]

STATUS_NAMES: dict[int, str] = {
    getattr(lib, name): name for name in dir(lib) if name.startswith("DCGM_ST_")
}


def status_name(code: int) -> str:
    """``DCGM_ST_*`` name of a status code (``DCGM_ST_UNKNOWN_<code>`` if DCGM has none)."""
    return STATUS_NAMES.get(code, f"DCGM_ST_UNKNOWN_{code}")
