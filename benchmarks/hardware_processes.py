"""The ``--processes`` checks of hardware_check.py: per-process series against pynvml, second by second.

hardware_check.py loads this file from its own folder (with importlib: the
folder is not a package) when it runs with ``--processes``; copy both files
to the GPU machine.  At each of its scrapes, right after the field reads,
:meth:`ProcessChecker.observe` reads with pynvml, for every GPU, the compute
and graphics process lists, the GPU's utilisation and the per-process
utilisation samples of the last second, and /proc/<pid>/comm of each pid, and
keeps them beside what /metrics served in that answer.  :meth:`render` turns
them into the report's processes section, one table per check:

- the pids NVML lists against the ``pid`` labels of
  ``DCGM_EXP_PROCESS_FB_USED_BYTES`` (``pid="other"`` aside);
- each pid's usedGpuMemory against its served bytes, within 1 % or 64 MiB;
- ``DCGM_EXP_PROCESS_COUNT`` against the list's length, and
  ``DCGM_EXP_PROCESS_QUERY_SUCCESS`` (1, or 0 where NVML refuses the list);
- ``process_name`` against /proc/<pid>/comm;
- the load's process (the torch subprocess): served on each GPU it uses, its
  name, its SM utilisation above 0, its CPU seconds growing;
- per-process SM and memory utilisation, served and pynvml's, as medians;
- the idle and busy seconds each phase added, per state and GPU, against the
  phase's length and the state pynvml's readings make most common;
- the collector's CPU and RSS with ``--processes`` against a run without it.

The served list is read once a second by the collector and this one right
after a scrape, so a process that starts or ends between the two reads makes
a miss: a check passes with misses on at most 10 % of its seconds.  A list
call NVML answers with an error (NOT_SUPPORTED, NO_PERMISSION, a call this
driver lacks) is reported with its text, never raised.  Standard library and
pynvml only.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024
OTHER_PID = "other"
FB_PCT, FB_ABS = 1.0, 64 * MIB          # served framebuffer within 1 % or 64 MiB of usedGpuMemory
MISSES_ALLOWED = 0.10                   # share of seconds a check may miss (the two reads are up to 1 s apart)
IDLE_UTIL_BELOW = 10.0                  # the collector's default --idle-util-below
IDLE_HELD_FB = 100 * MIB                # and --idle-held-fb-mib
SPAN_SLACK_S, SPAN_SLACK_PCT = 2.0, 10.0  # the served seconds of a phase: within 2 s or 10 % of its length
STATES = ("busy", "idle_held", "allocated_no_process", "free")

FB = "DCGM_EXP_PROCESS_FB_USED_BYTES"
SM = "DCGM_EXP_PROCESS_SM_UTIL"
MEM = "DCGM_EXP_PROCESS_MEM_UTIL"
CPU = "DCGM_EXP_PROCESS_CPU_SECONDS_TOTAL"
COUNT = "DCGM_EXP_PROCESS_COUNT"
OK = "DCGM_EXP_PROCESS_QUERY_SUCCESS"
IDLE = "DCGM_EXP_GPU_IDLE_SECONDS_TOTAL"
BUSY = "DCGM_EXP_GPU_BUSY_SECONDS_TOTAL"
FAMILIES = (FB, SM, MEM, CPU, COUNT, OK, IDLE, BUSY)

Sample = tuple[str, dict[str, str], float]


@dataclass
class GpuRead:
    """One GPU at one scrape: what /metrics served and what pynvml said right after."""
    listed: dict[int, int | None] | None = None   # pid -> usedGpuMemory (None: not available); None: list failed
    list_error: str = ""
    refused: bool = False                         # the failure was NOT_SUPPORTED or NO_PERMISSION
    util: dict[int, tuple[int, int]] | None = None   # pid -> (sm, mem), its newest sample of the last second
    util_error: str = ""
    gpu_util: float | None = None
    served_fb: dict[str, float] = field(default_factory=dict)   # pid label -> bytes, pid="other" included
    served_sm: dict[str, float] = field(default_factory=dict)
    served_mem: dict[str, float] = field(default_factory=dict)
    served_cpu: dict[str, float] = field(default_factory=dict)
    served_name: dict[str, str] = field(default_factory=dict)
    count: float | None = None
    ok: float | None = None
    comm: dict[int, str | None] = field(default_factory=dict)    # pid -> /proc/<pid>/comm now; None: not there


@dataclass
class Second:
    phase: str
    t: float
    gpus: dict[str, GpuRead]
    counters: dict[str, dict[str, float]]   # entity (gpu label, "/<GPU_I_ID>" on MIG) -> state or "busy" -> s


def comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().rstrip("\n")
    except OSError:
        return None


def proc_cpu_seconds(pid: int) -> float | None:
    """utime + stime of /proc/<pid>/stat, as the collector reads them."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cell(value: object, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.{digits}g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def share(hits: int, total: int) -> str:
    return f"{hits}/{total}" if total else "n/a"


def passes(misses: int, total: int) -> bool:
    return total > 0 and misses <= MISSES_ALLOWED * total


class ProcessChecker:
    """What each scrape served per process beside pynvml's reading of the same second."""

    def __init__(self, nv, gpu_labels: dict[str, int], handles: dict[int, object],
                 costs: dict[str, list[tuple[float, float]]]) -> None:
        self.nv, self.gpu_labels, self.handles, self.costs = nv, gpu_labels, handles, costs
        self.seconds: list[Second] = []
        self.load_pid: int | None = None
        self.load_cpu: list[tuple[float, float]] = []   # (t, /proc cpu seconds) of the load process
        self.notes: list[str] = []

    # ---- reading ------------------------------------------------------------------------------------------

    def _timed(self, label: str, call, *args):
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            return call(*args)
        finally:
            self.costs.setdefault(label, []).append((time.perf_counter() - wall0, time.thread_time() - cpu0))

    def _error_text(self, error: Exception) -> tuple[str, bool]:
        """(text, whether NVML refused: NOT_SUPPORTED or NO_PERMISSION)."""
        nv = self.nv
        code = getattr(error, "value", None)
        names = {getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3): "NOT_SUPPORTED",
                 getattr(nv, "NVML_ERROR_NO_PERMISSION", 4): "NO_PERMISSION"}
        if code in names:
            return f"NVML answers {names[code]} ({error})", True
        return f"{type(error).__name__}: {error}", False

    def _read_lists(self, handle: object, read: GpuRead) -> None:
        """Compute then graphics processes, each pid once (the collector's order); graphics NOT_SUPPORTED
        is an empty list, as the collector takes it."""
        nv = self.nv
        try:
            listed: dict[int, int | None] = {}
            for p in self._timed("nvmlDeviceGetComputeRunningProcesses", nv.nvmlDeviceGetComputeRunningProcesses,
                                 handle):
                listed.setdefault(int(p.pid), p.usedGpuMemory)
            try:
                for p in self._timed("nvmlDeviceGetGraphicsRunningProcesses",
                                     nv.nvmlDeviceGetGraphicsRunningProcesses, handle):
                    listed.setdefault(int(p.pid), p.usedGpuMemory)
            except nv.NVMLError as error:
                if getattr(error, "value", None) != getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3):
                    raise
            read.listed = listed
        except Exception as error:   # any refusal or missing call is a finding, not the end of the run
            read.list_error, read.refused = self._error_text(error)

    def _read_util(self, handle: object, read: GpuRead) -> None:
        nv = self.nv
        last_seen = int((time.time() - 1.0) * 1e6)
        try:
            samples = self._timed("nvmlDeviceGetProcessUtilization", nv.nvmlDeviceGetProcessUtilization, handle,
                                  last_seen)
        except nv.NVMLError as error:
            if getattr(error, "value", None) in (0, getattr(nv, "NVML_ERROR_NOT_FOUND", 6)):
                read.util = {}   # no sample in the last second
            else:
                read.util_error = self._error_text(error)[0]
            return
        except Exception as error:
            read.util_error = self._error_text(error)[0]
            return
        newest: dict[int, tuple[int, int, int]] = {}
        for s in samples:
            if s.timeStamp >= newest.get(s.pid, (-1,))[0]:
                newest[int(s.pid)] = (s.timeStamp, int(s.smUtil), int(s.memUtil))
        read.util = {pid: (sm, mem) for pid, (_, sm, mem) in newest.items()}

    def observe(self, phase: str, t: float, samples: list[Sample]) -> None:
        """Keep one scrape's per-process series and read the same with pynvml now."""
        reads = {label: GpuRead() for label in self.gpu_labels}
        counters: dict[str, dict[str, float]] = {}
        for name, labels, value in samples:
            if name not in FAMILIES or "gpu" not in labels:
                continue
            gpu = labels["gpu"]
            read = reads.get(gpu)
            if read is None:
                continue
            pid = labels.get("pid")
            if name in (IDLE, BUSY):
                entity = gpu + (f"/{labels['GPU_I_ID']}" if "GPU_I_ID" in labels else "")
                state = "busy" if name == BUSY else labels.get("state", "?")
                per = counters.setdefault(entity, {})
                per[state] = per.get(state, 0.0) + value
            elif name == COUNT:
                read.count = (read.count or 0.0) + value   # MIG: one series per instance
            elif name == OK:
                read.ok = value if read.ok is None else min(read.ok, value)
            elif pid is not None:
                target = {FB: read.served_fb, SM: read.served_sm, MEM: read.served_mem, CPU: read.served_cpu}[name]
                target[pid] = target.get(pid, 0.0) + value
                if "process_name" in labels:
                    read.served_name[pid] = labels["process_name"]
        for label, index in self.gpu_labels.items():
            handle = self.handles.get(index)
            if handle is None:
                continue
            read = reads[label]
            self._read_lists(handle, read)
            self._read_util(handle, read)
            try:
                read.gpu_util = float(self.nv.nvmlDeviceGetUtilizationRates(handle).gpu)
            except Exception:   # only the expected idle state needs it
                read.gpu_util = None
            pids = set(read.listed or ()) | {int(p) for p in read.served_fb if p.isdigit()}
            read.comm = {pid: comm(pid) for pid in pids}
        if self.load_pid is not None and phase == "load":
            seconds = proc_cpu_seconds(self.load_pid)
            if seconds is not None:
                self.load_cpu.append((t, seconds))
        self.seconds.append(Second(phase, t, reads, counters))

    # ---- the report -----------------------------------------------------------------------------------------

    def _labels(self) -> list[str]:
        return sorted(self.gpu_labels, key=lambda g: (len(g), g))

    def _pairs(self, phases: list[str]) -> Iterable[tuple[str, str, list[GpuRead]]]:
        for phase in phases:
            for label in self._labels():
                yield phase, label, [s.gpus[label] for s in self.seconds if s.phase == phase]

    def render(self, phases: list[str], costs: list[tuple[str, float | None, float | None, float | None,
                                                          float | None, str]]) -> tuple[list[str], str]:
        """(markdown lines, a short summary) of the processes section; costs: (phase, CPU % with, CPU %
        without, RSS MiB with, RSS MiB without, note) rows."""
        out: list[str] = []
        verdicts: list[tuple[str, bool | None]] = []
        out.append("## Processes (`--processes`)\n")
        out.append(f"Each scrape of /metrics, then pynvml for every GPU: the compute and graphics process lists "
                   f"(each pid once), nvmlDeviceGetProcessUtilization since 1 s ago, the GPU's utilisation, "
                   f"/proc/<pid>/comm. The collector reads its lists once a second, so a check allows misses on "
                   f"{MISSES_ALLOWED:.0%} of its seconds.\n")
        for note in self.notes:
            out.append(f"- {note}")
        if self.notes:
            out.append("")
        for title, method in (("Process lists", self._lists), ("Framebuffer per process", self._framebuffer),
                              ("Process count and query success", self._count),
                              ("Process names", self._names), ("The load's process", self._load),
                              ("Utilisation per process (medians)", self._util),
                              ("Idle and busy seconds", self._idle)):
            out.append(f"### {title}\n")
            lines, verdict, ok = method(phases)
            out.extend(lines)
            out.append("")
            out.append(f"**Verdict**: {verdict}")
            out.append("")
            verdicts.append((title, ok))
        out.append("### Collector cost of `--processes`\n")
        lines, verdict = self._cost(costs)
        out.extend(lines)
        out.append("")
        out.append(f"**Verdict**: {verdict}")
        out.append("")
        passed = sum(1 for _, ok in verdicts if ok)
        failed = [title.lower() for title, ok in verdicts if ok is False]
        summary = (f"processes: {passed} checks pass, {len(failed)} fail"
                   + (f" ({', '.join(failed)})" if failed else "")
                   + f", {sum(1 for _, ok in verdicts if ok is None)} not compared")
        return out, summary

    def _errors(self, reads: list[GpuRead]) -> str:
        errors = sorted({r.list_error for r in reads if r.list_error})
        return "; ".join(errors)

    def _lists(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        lines = ["| phase | GPU | seconds | pid sets equal | first miss | pynvml |",
                 "| --- | --- | --- | --- | --- | --- |"]
        total = misses = 0
        refused: dict[str, list[str]] = {}   # error -> "GPU (phase)"
        for phase, label, reads in self._pairs(phases):
            n = hits = 0
            first = ""
            for i, r in enumerate(reads):
                if r.listed is None:
                    continue
                served = {int(p) for p in r.served_fb if p.isdigit()}
                listed = set(r.listed)
                # with pid="other" the served pids are the top N of the list, the rest folded
                equal = served == listed or (OTHER_PID in r.served_fb and served < listed)
                n += 1
                hits += equal
                if not equal and not first:
                    first = (f"s {i}: not served {sorted(listed - served)[:4]}, served not listed "
                             f"{sorted(served - listed)[:4]}")
            errors = self._errors(reads)
            if errors:
                refused.setdefault(errors, []).append(f"{label} ({phase})")
            lines.append(f"| {phase} | {label} | {len(reads)} | {share(hits, n)} | {cell(first or '-')} | "
                         f"{cell(errors or 'ok')} |")
            total += n
            misses += n - hits
        said = "; ".join(f"{error} on GPU {', '.join(where)}" for error, where in refused.items())
        if not total:
            return lines, "not compared: pynvml's list failed: " + (said or "no process list read"), None
        ok = passes(misses, total)
        verdict = (f"{'pass' if ok else 'FAIL'}: the served pids are NVML's on {total - misses} of {total} "
                   f"(GPU, second) pairs" + (f"; pynvml's list failed: {said}" if said else ""))
        return lines, verdict, ok

    def _framebuffer(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        lines = ["| phase | GPU | pairs | within 1 % or 64 MiB | worst abs(d) MiB | not available |",
                 "| --- | --- | --- | --- | --- | --- |"]
        total = misses = 0
        for phase, label, reads in self._pairs(phases):
            n = hits = unavailable = 0
            worst: float | None = None
            for r in reads:
                for pid, used in (r.listed or {}).items():
                    served = r.served_fb.get(str(pid))
                    if served is None:
                        continue   # the list check counts it
                    if used is None:
                        unavailable += 1
                        continue
                    d = abs(served - used)
                    worst = d if worst is None else max(worst, d)
                    n += 1
                    hits += d <= max(FB_PCT / 100 * used, FB_ABS)
            lines.append(f"| {phase} | {label} | {n} | {share(hits, n)} | "
                         f"{cell(worst / MIB if worst is not None else None)} | {unavailable} |")
            total += n
            misses += n - hits
        if not total:
            return lines, "not compared: no pid both listed and served", None
        ok = passes(misses, total)
        return lines, (f"{'pass' if ok else 'FAIL'}: {total - misses} of {total} (pid, second) pairs within "
                       f"{FB_PCT:g} % or {FB_ABS // MIB} MiB"), ok

    def _count(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        lines = ["| phase | GPU | count = list length | QUERY_SUCCESS as expected | served QUERY_SUCCESS (last) |",
                 "| --- | --- | --- | --- | --- |"]
        total = misses = ok_total = ok_misses = 0
        for phase, label, reads in self._pairs(phases):
            n = hits = m = good = 0
            for r in reads:
                if r.listed is not None:
                    n += 1
                    hits += r.count is not None and int(r.count) == len(r.listed)
                if r.ok is not None and (r.listed is not None or r.refused):
                    m += 1
                    good += r.ok == (1.0 if r.listed is not None else 0.0)   # 0 where NVML refuses the list
            last = next((r.ok for r in reversed(reads) if r.ok is not None), None)
            lines.append(f"| {phase} | {label} | {share(hits, n)} | {share(good, m)} | {cell(last)} |")
            total, misses, ok_total, ok_misses = total + n, misses + n - hits, ok_total + m, ok_misses + m - good
        if not total and not ok_total:
            return lines, "not compared: no process list read and no DCGM_EXP_PROCESS_QUERY_SUCCESS served", None
        ok = (not total or passes(misses, total)) and ok_total > 0 and ok_misses == 0
        counted = (f"DCGM_EXP_PROCESS_COUNT equals the list's length on {total - misses} of {total} pairs"
                   if total else "no list to count (pynvml's failed)")
        return lines, (f"{'pass' if ok else 'FAIL'}: {counted}; DCGM_EXP_PROCESS_QUERY_SUCCESS is what pynvml's "
                       f"list predicts (1 when it reads, 0 when NVML refuses) on {ok_total - ok_misses} of "
                       f"{ok_total}"), ok

    def _names(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        lines = ["| phase | GPU | served pids | name = /proc comm | not in /proc (no name expected) | first miss |",
                 "| --- | --- | --- | --- | --- | --- |"]
        total = misses = hidden = 0
        for phase, label, reads in self._pairs(phases):
            n = hits = gone = 0
            first = ""
            for r in reads:
                for pid_text in r.served_fb:
                    if not pid_text.isdigit():
                        continue
                    name = r.comm.get(int(pid_text))
                    served = r.served_name.get(pid_text)
                    if name is None:
                        gone += 1
                        continue
                    n += 1
                    hits += served == name
                    if served != name and not first:
                        first = f"pid {pid_text}: served {served!r}, comm {name!r}"
            lines.append(f"| {phase} | {label} | {n + gone} | {share(hits, n)} | {gone} | {cell(first or '-')} |")
            total, misses, hidden = total + n, misses + n - hits, hidden + gone
        if not total:
            why = (f"none of the {hidden} served (pid, second) pairs is in this machine's /proc (simulated pids, "
                   "or another PID namespace)") if hidden else "no served pid"
            return lines, f"not compared: {why}", None
        ok = passes(misses, total)
        return lines, f"{'pass' if ok else 'FAIL'}: process_name is /proc/<pid>/comm on {total - misses} of {total}", ok

    def _load(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        if "load" not in phases or self.load_pid is None:
            return ["No load phase in this run: nothing to look for."], "not compared: no load phase", None
        pid = self.load_pid
        key = str(pid)
        lines = [f"The load is pid {pid} (comm {comm(pid)!r} at the end of the run).", "",
                 "| GPU | seconds listed by NVML | served | process_name = comm | SM util > 0 | "
                 "served CPU s, first -> last |",
                 "| --- | --- | --- | --- | --- | --- |"]
        ok = True
        gpus_used = 0
        for label in self._labels():
            reads = [s.gpus[label] for s in self.seconds if s.phase == "load"]
            listed = [r for r in reads if r.listed is not None and pid in r.listed]
            if not listed:
                continue
            gpus_used += 1
            served = [r for r in listed if key in r.served_fb]
            named = [r for r in served if r.served_name.get(key) == r.comm.get(pid) and r.comm.get(pid)]
            busy = [r for r in served if r.served_sm.get(key, 0.0) > 0]
            cpu = [r.served_cpu[key] for r in served if key in r.served_cpu]
            growing = len(cpu) >= 2 and cpu[-1] > cpu[0] and all(b >= a for a, b in zip(cpu, cpu[1:]))
            row_ok = (passes(len(listed) - len(served), len(listed)) and passes(len(served) - len(named), len(served))
                      and len(busy) > len(served) / 2 and growing)
            ok = ok and row_ok
            lines.append(f"| {label} | {len(listed)} | {share(len(served), len(listed))} | "
                         f"{share(len(named), len(served))} | {share(len(busy), len(served))} | "
                         f"{cell(cpu[0] if cpu else None)} -> {cell(cpu[-1] if cpu else None)}"
                         f"{'' if growing else ' (not growing)'} |")
        if self.load_cpu:
            lines.append("")
            lines.append(f"/proc/{pid}/stat over the phase: {self.load_cpu[0][1]:.2f} -> {self.load_cpu[-1][1]:.2f} "
                         "CPU s.")
        if not gpus_used:
            return lines, f"FAIL: NVML never listed the load's pid {pid} on any GPU", False
        return lines, (f"{'pass' if ok else 'FAIL'}: on the {gpus_used} GPUs NVML lists it on, the load's pid is "
                       "served with its comm, SM util above 0 on most seconds, CPU seconds growing"), ok

    def _util(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        lines = ["| phase | GPU | pid | seconds | served SM % | pynvml SM % | served mem % | pynvml mem % |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        rows = close = 0
        errors: set[str] = set()
        for phase, label, reads in self._pairs(phases):
            errors |= {r.util_error for r in reads if r.util_error}
            seen: dict[int, int] = {}
            for r in reads:
                for pid in r.listed or ():
                    seen[pid] = seen.get(pid, 0) + 1
            # the pids listed on at least half the phase's seconds, the most framebuffer first, four per GPU
            steady = [pid for pid, n in seen.items() if n * 2 >= len(reads)]
            steady.sort(key=lambda pid: -max(((r.listed or {}).get(pid) or 0) for r in reads))
            for pid in steady[:4]:
                key = str(pid)
                pairs = [r for r in reads if r.util is not None and key in r.served_sm]
                if not pairs:
                    continue
                s_sm = statistics.median(r.served_sm[key] for r in pairs)
                p_sm = statistics.median(r.util.get(pid, (0, 0))[0] for r in pairs)
                s_mem = statistics.median(r.served_mem.get(key, 0.0) for r in pairs)
                p_mem = statistics.median(r.util.get(pid, (0, 0))[1] for r in pairs)
                rows += 1
                close += abs(s_sm - p_sm) <= 10 and abs(s_mem - p_mem) <= 10
                lines.append(f"| {phase} | {label} | {pid} | {len(pairs)} | {cell(float(s_sm))} | "
                             f"{cell(float(p_sm))} | {cell(float(s_mem))} | {cell(float(p_mem))} |")
        if errors:
            lines.append("")
            lines.append("nvmlDeviceGetProcessUtilization: " + "; ".join(sorted(errors)))
        if not rows:
            return lines, "not compared: no pid listed on half a phase with served and pynvml utilisation", None
        return lines, (f"{close} of {rows} rows have both medians within 10 pp (shown beside each other, not "
                       "counted as a check: a 200 ms sample period and reads a second apart)"), None

    def _idle(self, phases: list[str]) -> tuple[list[str], str, bool | None]:
        lines = ["| phase | GPU | span s | busy | idle_held | allocated_no_process | free | sum / span | pynvml "
                 "says | phase expects | result |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        results: list[bool] = []
        odd: dict[tuple[str, str], list[str]] = {}   # (phase, state pynvml gives) -> GPUs
        for phase in phases:
            seconds = [s for s in self.seconds if s.phase == phase]
            if len(seconds) < 2:
                continue
            first, last = seconds[0], seconds[-1]
            span = last.t - first.t
            if span <= 0:
                continue
            expects = {"idle": "free or idle_held", "load": "busy"}.get(phase, "?")
            for entity in sorted(last.counters, key=lambda e: (len(e), e)):
                before, after = first.counters.get(entity, {}), last.counters[entity]
                inc = {state: after.get(state, 0.0) - before.get(state, 0.0) for state in STATES}
                told = self._pynvml_states(seconds, entity.split("/")[0])
                says = max(told, key=told.get) if told else None
                most = max(inc, key=inc.get)
                total = sum(inc.values())
                in_span = abs(total - span) <= max(SPAN_SLACK_S, SPAN_SLACK_PCT / 100 * span)
                ok = in_span and (says is None or most == says)
                results.append(ok)
                if says is not None and says not in expects.split(" or "):
                    odd.setdefault((phase, says), []).append(entity)
                lines.append(f"| {phase} | {entity} | {span:.1f} | " + " | ".join(f"{inc[s]:.1f}" for s in STATES)
                             + f" | {total / span:.3f} | {cell(says)} | {expects} | {'pass' if ok else 'FAIL'} |")
        if not results:
            return lines, f"not compared: no {IDLE} or {BUSY} served over a phase", None
        ok = all(results)
        verdict = (f"{'pass' if ok else 'FAIL'}: on {sum(results)} of {len(results)} (phase, GPU) rows the served "
                   f"seconds add up to the phase's length (within {SPAN_SLACK_S:g} s or {SPAN_SLACK_PCT:g} %) and "
                   "most go to the state pynvml's readings give (util >= 10 %: busy; else >= 100 MiB held: "
                   "idle_held; else free)")
        if odd:
            verdict += "; not what the phase is for: " + ", ".join(
                f"in the {phase} phase pynvml gives {says} on GPU {', '.join(gpus)}"
                for (phase, says), gpus in odd.items())
        return lines, verdict, ok

    @staticmethod
    def _pynvml_states(seconds: list[Second], label: str) -> dict[str, float]:
        """The seconds of a phase by the state pynvml's readings give, each reading standing until the next."""
        out: dict[str, float] = {}
        for here, after in zip(seconds, seconds[1:]):
            r = here.gpus.get(label)
            if r is None or r.gpu_util is None:
                continue
            if r.gpu_util >= IDLE_UTIL_BELOW:
                state = "busy"
            elif r.listed is not None and sum(v or 0 for v in r.listed.values()) >= IDLE_HELD_FB:
                state = "idle_held"
            else:
                state = "free"
            out[state] = out.get(state, 0.0) + (after.t - here.t)
        return out

    @staticmethod
    def _cost(costs: list[tuple[str, float | None, float | None, float | None, float | None, str]]
              ) -> tuple[list[str], str]:
        lines = ["| phase | CPU % with | CPU % without | ratio | RSS MiB with | RSS MiB without | ratio | run "
                 "without |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        ratios = []
        for phase, cpu_with, cpu_without, rss_with, rss_without, note in costs:
            cpu_ratio = cpu_with / cpu_without if cpu_with is not None and cpu_without else None
            rss_ratio = rss_with / rss_without if rss_with is not None and rss_without else None
            if cpu_ratio is not None:
                ratios.append(f"{phase} CPU {cpu_ratio:.2f}x")
            if rss_ratio is not None:
                ratios.append(f"{phase} RSS {rss_ratio:.2f}x")
            lines.append(f"| {phase} | {cell(cpu_with)} | {cell(cpu_without)} | {cell(cpu_ratio, 3)} | "
                         f"{cell(rss_with)} | {cell(rss_without)} | {cell(rss_ratio, 3)} | {cell(note)} |")
        if not costs:
            return lines, "not measured: no run without --processes"
        return lines, ("measured, not judged: " + (", ".join(ratios) if ratios else "no ratio")
                       + " (the run with --processes over the whole phase, the one without over a shorter span)")
