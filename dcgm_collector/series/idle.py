"""The idle and busy time families (--processes): their names, help, states and store field ids.

The idle reader (collect.readers.idle) adds, at every sample of a GPU's
utilisation, the time since that GPU's previous sample to one of four
counters: busy, or one of the three idle states below.  Their field ids sit
just above the per-process families' (series.processes) in the store's
private range, so no counters row serves them as a DCGM field.
"""

from __future__ import annotations

from dcgm_collector.series.processes import PROCESS_FAMILIES, ProcessFamily

__all__ = ["BUSY", "DEFAULT_HELD_FB_MIB", "DEFAULT_UTIL_BELOW", "IDLE_FAMILIES", "IDLE_STATES", "STATE_LABEL"]

DEFAULT_UTIL_BELOW = 10.0    # % utilisation under which a GPU is idle (--idle-util-below)
DEFAULT_HELD_FB_MIB = 100.0  # MiB its processes must hold in all for an idle GPU to count as held (--idle-held-fb-mib)
STATE_LABEL = "state"
# the idle states, in the order the reader tries them: a GPU that is held is not asked whether it is allocated
IDLE_STATES = ("idle_held", "allocated_no_process", "free")
BUSY = "busy"

IDLE_FAMILIES: tuple[ProcessFamily, ...] = (
    ProcessFamily("idle", "DCGM_EXP_GPU_IDLE_SECONDS_TOTAL", 65012,
                  "Seconds the GPU was sampled idle (utilisation under --idle-util-below), by state: idle_held, "
                  "its processes held at least --idle-held-fb-mib of framebuffer; allocated_no_process, a pod or "
                  "HPC job had it and no process held memory; free, neither.", "counter", False),
    ProcessFamily("busy", "DCGM_EXP_GPU_BUSY_SECONDS_TOTAL", 65013,
                  "Seconds the GPU was sampled busy (utilisation at or over --idle-util-below).", "counter", False),
)
IDLE_FAMILY, BUSY_FAMILY = IDLE_FAMILIES

assert not {f.field_id for f in IDLE_FAMILIES} & {f.field_id for f in PROCESS_FAMILIES}
