"""The dashboard's "Processes and idle time" row: what the GPUs' processes hold and do, and where GPU time is wasted.

The collector serves these families only with ``--processes``, which a
counters file cannot tell, so the generator adds the row when asked
(``--processes``, as with ``--mig``).  Process series carry the GPU's labels
plus ``pid`` and ``process_name``, and the process's own pod labels
(``pod``, ``namespace``, ``container``; with the collector's -o
``pod_name``, ``pod_namespace``, ``container_name``) or ``hpc_job`` where
the collector knows them: the tables show whichever a series has, the
legends the pod and the job.

Idle time comes from ``DCGM_EXP_GPU_IDLE_SECONDS_TOTAL{state}``: the
seconds a GPU spent held idle (under the collector's idle utilisation
threshold while processes hold memory on it) or allocated to a pod or a job
with no process on it.  The tables add it up over the dashboard's time
range (``$__range``), so they answer "in this range" whatever the range is.
"""

from __future__ import annotations

from dcgm_collector.dashboard.grafana import TABLE, Panel, Target
from dcgm_collector.series.processes import FAMILY_BY_KEY, OTHER_PID

__all__ = ["IDLE_SECONDS", "IDLE_STATES", "process_panels"]

FB = FAMILY_BY_KEY["fb"].name
SM = FAMILY_BY_KEY["sm"].name
COUNT = FAMILY_BY_KEY["count"].name
# the collector's idle counter and the states of it that are waste (not "free")
IDLE_SECONDS = "DCGM_EXP_GPU_IDLE_SECONDS_TOTAL"
IDLE_STATES = "idle_held|allocated_no_process"
TOP = 10

# the generator's instance and GPU variables, as its other per-GPU panels select them
SELECTION = 'instance=~"$instance", gpu=~"$gpu"'
ONE_PROCESS = f'{SELECTION}, pid!="{OTHER_PID}"'
IDLE = f'{SELECTION}, state=~"{IDLE_STATES}"'
PROCESS_LEGEND = "{{hostname}} GPU {{gpu}} pid {{pid}} {{process_name}} {{pod}} {{hpc_job}}"
GPU_LEGEND = "{{hostname}} GPU {{gpu}}"
# both spellings of the pod labels (the collector's -o gives the old ones) and the HPC job
OWNER_COLUMNS = ("namespace", "pod", "container", "pod_namespace", "pod_name", "container_name", "hpc_job")
PROCESS_COLUMNS = ("hostname", "gpu", "pid", "process_name", *OWNER_COLUMNS)
IDLE_COLUMNS = ("hostname", "gpu", "state", *OWNER_COLUMNS)
HOURS = 3600


def _in_range(selector: str) -> str:
    return f"increase({IDLE_SECONDS}{{{selector}}}[$__range])"


def _idle_hours_by_namespace() -> str:
    """Idle GPU-hours per namespace, under either spelling of the label (-o's pod_namespace).

    Not label_replace's "$1" as the recording rule has it: Grafana would read that as a variable.
    """
    named = _in_range(IDLE + ', namespace!=""')
    old_named = _in_range(IDLE + ', pod_namespace!=""')
    return f"sum by (namespace, pod_namespace) ({named} or {old_named}) / {HOURS}"


def _idle_hours_by_job() -> str:
    """Idle GPU-hours per HPC job."""
    in_a_job = _in_range(IDLE + ', hpc_job!=""')
    return f"sum by (hpc_job) ({in_a_job}) / {HOURS}"


def process_panels() -> list[Panel]:
    """The row's panels, top to bottom: the processes, then the idle time."""
    needs = "Needs the collector's --processes."
    owners = ("The pod columns are filled under -k (--kubernetes), hpc_job with job mapping files "
              "(--hpc-job-mapping-dir).")
    return [
        Panel("table", "Top processes by framebuffer", [Target(f"topk({TOP}, {FB}{{{ONE_PROCESS}}})", table=True)],
              unit="bytes", size=TABLE, columns=PROCESS_COLUMNS, value_column="Framebuffer",
              description=f"The {TOP} processes holding the most framebuffer on the selected GPUs now ({FB}). "
                          f"{owners} {needs}"),
        Panel("table", "Top processes by SM share", [Target(f"topk({TOP}, {SM}{{{ONE_PROCESS}}})", table=True)],
              unit="percent", size=TABLE, columns=PROCESS_COLUMNS, value_column="SM %",
              description=f"The {TOP} processes with the largest share of their GPU's SM utilisation now ({SM}). "
                          f"{owners} {needs}"),
        Panel("timeseries", "Framebuffer per process", [Target(f"{FB}{{{SELECTION}}}", PROCESS_LEGEND)],
              unit="bytes", min=0,
              description=f"{FB}: what each process holds; pid=\"other\" sums the processes past the "
                          f"collector's --processes-top. A line that only rises is a leak. {needs}"),
        Panel("timeseries", "SM share per process", [Target(f"{SM}{{{SELECTION}}}", PROCESS_LEGEND)],
              unit="percent", min=0, max=100,
              description=f"{SM}: each process's share of its GPU's SM utilisation. {needs}"),
        Panel("timeseries", "Processes per GPU", [Target(f"{COUNT}{{{SELECTION}}}", GPU_LEGEND)],
              min=0, stepped=True,
              description=f"{COUNT}: the processes the driver lists on each GPU (0 when none). {needs}"),
        Panel("table", "Allocated but idle", [Target(f"{_in_range(IDLE)} > 0", table=True)],
              unit="s", size=TABLE, columns=IDLE_COLUMNS, value_column="Idle in the range",
              description=f"GPUs whose idle time grew in the dashboard's range ({IDLE_SECONDS}): idle_held is "
                          "under the collector's --idle-util-below while processes hold at least "
                          "--idle-held-fb-mib; allocated_no_process is allocated to a pod or job with no "
                          f"process on it. {needs}"),
        Panel("table", "Idle GPU-hours per namespace", [Target(_idle_hours_by_namespace(), table=True)],
              unit="h", size=TABLE, columns=("namespace", "pod_namespace"), value_column="Idle GPU-hours",
              description="Held idle plus allocated without a process, in the dashboard's range, per Kubernetes "
                          "namespace (GPUs no pod holds are left out). The alert rules record the past day's "
                          f"as namespace:dcgm_gpu_idle_hours:increase1d. Needs -k. {needs}"),
        Panel("table", "Idle GPU-hours per job",
              [Target(_idle_hours_by_job(), table=True)],
              unit="h", size=TABLE, columns=("hpc_job",), value_column="Idle GPU-hours",
              description="Held idle plus allocated without a process, in the dashboard's range, per HPC job. "
                          "The alert rules record the past day's as hpc_job:dcgm_gpu_idle_hours:increase1d. "
                          f"Needs job mapping files (--hpc-job-mapping-dir). {needs}"),
    ]
