"""The per-process families (--processes) on /metrics: each one a field id of the process store.

A series carries the labels of its entity (a GPU's, or a MIG instance's with
GPU_I_ID and GPU_I_PROFILE), then its own (``pid``, ``process_name``), as the
store's other series do (expose.store_families).  A series older than the
store's TTL (an exited process) is left out.
"""

from __future__ import annotations

from collections.abc import Callable

from dcgm_collector.expose.families import Family, FieldFamilySpec
from dcgm_collector.expose.scrape import Scrape
from dcgm_collector.expose.store_families import StoreFieldFamily, StoreNames
from dcgm_collector.rings.series_store import SeriesStore
from dcgm_collector.series.processes import ProcessFamily
from dcgm_collector.series.text import Header, family_types

__all__ = ["StoreSizeFamily", "process_family", "store_size_families"]


def process_family(spec: ProcessFamily, store: SeriesStore, names: StoreNames) -> Family:
    """One per-process family: the last value of the store's series of its field (no ring series beside)."""
    header = Header.of(spec.name, spec.help, *family_types(spec.prom_type, spec.name))
    field_spec = FieldFamilySpec(spec.name, header, "%d" if spec.integer else "%f", None)
    return StoreFieldFamily(field_spec, spec.field_id, None, (store,), names)


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
