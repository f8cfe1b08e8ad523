"""The per-process families (--processes) on /metrics: each one a field id of the process store.

A series carries the labels of its entity (a GPU's, or a MIG instance's with
GPU_I_ID and GPU_I_PROFILE), then its own (``pid``, ``process_name``), as the
store's other series do (expose.store_families).  A series older than the
store's TTL (an exited process) is left out.
"""

from __future__ import annotations

from collections.abc import Callable

from dcgm_collector.expose.families import Family
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.expose.store_families import StoreNames
from dcgm_collector.rings.series_store import SeriesStore
from dcgm_collector.series.processes import ProcessFamily
from dcgm_collector.series.text import Header, family_types

__all__ = ["ProcessStoreFamily", "StoreSizeFamily", "store_size_families"]


class ProcessStoreFamily(Family):
    """One per-process family: the last value of the store's series of its field."""

    def __init__(self, spec: ProcessFamily, store: SeriesStore, names: StoreNames) -> None:
        self.name = spec.name
        self.header = Header.of(spec.name, spec.help, *family_types(spec.prom_type, spec.name))
        self.aggregate = None
        self.field_id, self.store, self.names = spec.field_id, store, names
        self.fmt = ("%d" if spec.integer else "%f") + "\n"

    def lines(self, scrape: Scrape) -> list[str]:
        window = scrape.store_view(self.store).last
        lines: list[str] = []
        for i in window.by_field.get(self.field_id, ()):
            if window.ok[i]:
                value = self.fmt % window.last[i]
                lines.extend(prefix + value for prefix in self.names.prefixes(self.name, window.keys[i]))
        return lines


class StoreSizeFamily(Family):
    """One unlabelled figure of the store itself (its bytes, its bound, the samples it refused)."""

    def __init__(self, name: str, help_text: str, prom_type: str, value: Callable[[], int]) -> None:
        self.name, self.value = name, value
        self.header = Header.of(name, help_text, *family_types(prom_type, name))
        self.aggregate = None

    def lines(self, scrape: Scrape) -> list[str]:
        return [f"{self.name} {self.value()}\n"]


def store_size_families(store: SeriesStore) -> list[Family]:
    """What shows that the process store's memory stays within its bound whatever the churn."""
    return [
        StoreSizeFamily("dcgm_collector_process_store_bytes", "Bytes the per-process series' store holds.", "gauge",
                        lambda: store.nbytes),
        StoreSizeFamily("dcgm_collector_process_store_limit_bytes",
                        "Bytes the per-process series' store may hold, set when sampling starts.", "gauge",
                        lambda: store.max_bytes),
        StoreSizeFamily("dcgm_collector_process_store_refused_total",
                        "Per-process samples the store refused for want of a free series slot.", "counter",
                        lambda: store.refused),
    ]
