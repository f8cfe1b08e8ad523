"""The per-process families (--processes): their names, help, types and the store field ids they are kept under.

The process reader (collect.readers.processes) writes one store series per
family and GPU (or MIG instance) and process; the exposition serves each
family from the store (expose.processes).  A field id here is private to the
process store: DCGM's field ids stay below 2000, these are near the top of
the store's 16-bit range so that no counters row ever serves them as a DCGM
field.  The names follow the project's split: ``DCGM_EXP_PROCESS_*`` for what
the GPUs' processes do (as ``DCGM_EXP_XID_ERRORS_COUNT`` is the exporter's own
view of the GPUs), ``dcgm_collector_*`` for what the reader itself did.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DEFAULT_TOP", "OTHER_PID", "PROCESS_FAMILIES", "ProcessFamily", "FAMILY_BY_KEY"]

DEFAULT_TOP = 16      # processes per GPU with series of their own (--processes-top)
OTHER_PID = "other"   # the pid label of the series that folds the processes past the top N of a GPU


class ProcessFamily(NamedTuple):
    """One family served from the process store."""

    key: str          # how the reader names it
    name: str         # the metric name on /metrics
    field_id: int     # its store series' field id
    help: str
    prom_type: str    # "gauge" or "counter"
    integer: bool     # written as an integer


_BASE = 65000
PROCESS_FAMILIES: tuple[ProcessFamily, ...] = (
    ProcessFamily("fb", "DCGM_EXP_PROCESS_FB_USED_BYTES", _BASE + 1,
                  "Framebuffer memory the process holds on the GPU (in bytes).", "gauge", True),
    ProcessFamily("sm", "DCGM_EXP_PROCESS_SM_UTIL", _BASE + 2,
                  "The process's share of the GPU's SM utilisation (in %).", "gauge", True),
    ProcessFamily("mem", "DCGM_EXP_PROCESS_MEM_UTIL", _BASE + 3,
                  "The process's share of the GPU's memory utilisation (in %).", "gauge", True),
    ProcessFamily("enc", "DCGM_EXP_PROCESS_ENC_UTIL", _BASE + 4,
                  "The process's share of the GPU's encoder utilisation (in %).", "gauge", True),
    ProcessFamily("dec", "DCGM_EXP_PROCESS_DEC_UTIL", _BASE + 5,
                  "The process's share of the GPU's decoder utilisation (in %).", "gauge", True),
    ProcessFamily("cpu", "DCGM_EXP_PROCESS_CPU_SECONDS_TOTAL", _BASE + 6,
                  "Host CPU time the process used, user and system (in s).", "counter", False),
    ProcessFamily("rss", "DCGM_EXP_PROCESS_RSS_BYTES", _BASE + 7,
                  "Host memory the process holds resident (in bytes).", "gauge", True),
    ProcessFamily("count", "DCGM_EXP_PROCESS_COUNT", _BASE + 8,
                  "Processes running on the GPU (0 when idle).", "gauge", True),
    ProcessFamily("ok", "DCGM_EXP_PROCESS_QUERY_SUCCESS", _BASE + 9,
                  "1 when the GPU's process list was read, 0 when the query failed (the count then is not 0).",
                  "gauge", True),
    ProcessFamily("seen", "dcgm_collector_processes_seen_total", _BASE + 10,
                  "Process list entries the process reader saw on the GPU.", "counter", True),
    ProcessFamily("folded", "dcgm_collector_processes_folded_total", _BASE + 11,
                  "Process list entries past the top N (--processes-top) folded into pid=\"other\".",
                  "counter", True),
)
FAMILY_BY_KEY: dict[str, ProcessFamily] = {family.key: family for family in PROCESS_FAMILIES}
