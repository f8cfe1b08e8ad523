"""The lines a ``top`` screen shows, as pure functions of the node's state and the view's settings.

Nothing here touches a terminal: each function answers plain strings no
wider than it was given (no escape codes), so the same lines are the live
screen, the ``--once`` snapshot and what the tests compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dcgm_collector.top.metrics import Process
from dcgm_collector.top.model import GpuState, NodeState, Sample

__all__ = ["BLOCKS", "SORTS", "SPANS_S", "View", "clock_event_words", "detail_lines", "gpu_block", "help_lines",
           "overview_lines", "process_lines", "screen", "snapshot", "sorted_gpus", "sparkline", "status_line"]

# One empty cell, then eight heights: a column's height is its bucket's largest sample.
BLOCKS = " ▁▂▃▄▅▆▇█"
SORTS = ("gpu", "util", "fb", "power")
SPANS_S = (30, 60, 300)
MIB = 1 << 20

# DCGM's clock-event reason bits (field 112), in words.
CLOCK_EVENT_WORDS: tuple[tuple[int, str], ...] = (
    (0x4, "power cap"),
    (0x8, "HW slowdown"),
    (0x20, "SW thermal"),
    (0x40, "HW thermal"),
    (0x80, "power brake"),
    (0x10, "sync boost"),
    (0x2, "app clocks"),
    (0x100, "display clocks"),
    (0x1, "idle"),
)


@dataclass
class View:
    """What the user chose and what the poller last saw: everything a screen depends on besides the node."""

    url: str
    span_s: int = 60
    sort: str = "gpu"
    selected: int = 0           # index into the sorted GPUs
    detail: bool = False
    help: bool = False
    refresh_s: float | None = None
    error: str = ""


def clock_event_words(mask: float | None) -> str:
    """The reasons set in a field 112 value, in words ("power cap, SW thermal"); "none" for 0, "-" unknown."""
    if mask is None:
        return "-"
    bits = int(mask)
    words = [word for bit, word in CLOCK_EVENT_WORDS if bits & bit]
    known = sum(bit for bit, _ in CLOCK_EVENT_WORDS)
    if bits & ~known:
        words.append(f"0x{bits & ~known:x}")
    return ", ".join(words) or "none"


def sparkline(samples: Sequence[Sample], end_us: int, span_us: int, width: int, top: float,
              hold_us: int = 0) -> str:
    """``width`` columns over [end - span, end): each the largest sample in its slice of time, scaled to ``top``.

    Taking the largest sample rather than the last or the mean keeps a short spike visible when a
    column spans several samples.  A slice with no sample of its own shows the sample before it when
    that is at most ``hold_us`` older than the slice (columns narrower than the sampling interval),
    else it is blank.
    """
    if width <= 0:
        return ""
    start = end_us - span_us
    peaks: list[float | None] = [None] * width
    before: list[tuple[int, float] | None] = [None] * width   # the newest sample before each column
    for ts, value in samples:
        if value is None or ts >= end_us:
            continue
        if ts < start:
            before[0] = (ts, value)
            continue
        column = min(width - 1, (ts - start) * width // span_us)
        peak = peaks[column]
        peaks[column] = value if peak is None else max(peak, value)
        if column + 1 < width:
            before[column + 1] = (ts, value)
    cells = []
    last: tuple[int, float] | None = None
    for column, peak in enumerate(peaks):
        last = before[column] or last
        column_start = start + column * span_us // width
        if peak is None and last is not None and column_start - last[0] <= hold_us:
            peak = last[1]
        if peak is None:
            cells.append(BLOCKS[0])
            continue
        # eight heights of 1/8 of ``top`` each: the lowest for anything under 1/8, the full block from 7/8 up
        level = (7 if peak > 0 else 0) if top <= 0 else int(peak / top * 8)
        cells.append(BLOCKS[1 + max(0, min(7, level))])
    return "".join(cells)


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _fb(gpu: GpuState) -> tuple[float | None, float | None]:
    """(used, total) framebuffer in MiB; total is used + free."""
    used, free = gpu.latest("fb_used"), gpu.latest("fb_free")
    return used, (None if used is None or free is None else used + free)


def _power_limit(gpu: GpuState) -> float | None:
    limit = gpu.latest("power_limit")
    return limit if limit is not None else gpu.latest("power_limit_requested")


def _xid_text(node: NodeState, gpu: GpuState) -> str:
    if not node.serves("xid"):
        return "-"
    events = [v for _, v in gpu.samples("xid") if v]
    if not events:
        return "none"
    return f"{int(events[-1])} ({len(events)} in 5 min)"


def gpu_block(node: NodeState, gpu: GpuState, view: View, width: int, selected: bool = False) -> list[str]:
    """Three lines for one GPU: its readings, its throttle reasons and XIDs, and its utilisation sparkline."""
    used, total = _fb(gpu)
    fb = f"{_number(None if used is None else used / 1024, 1)}/{_number(None if total is None else total / 1024, 1)}"
    util = gpu.latest("util")
    first = (f"{'>' if selected else ' '}{gpu.name:<8} {gpu.model:<22} util {_number(util):>3}%  fb {fb} GiB  "
             f"power {_number(gpu.latest('power')):>4}/{_number(_power_limit(gpu))} W")
    second = (f"{'':10}temp {_number(gpu.latest('gpu_temp'))} C  mem {_number(gpu.latest('mem_temp'))} C  "
              f"sm {_number(gpu.latest('sm_clock'))} MHz  health {node.health_of(gpu.key)}  "
              f"throttle: {clock_event_words(gpu.latest('clock_events'))}  xid: {_xid_text(node, gpu)}")
    label = f"{'':10}util {_span_name(view.span_s):>4} "
    spark_width = max(0, width - len(label) - 2)
    third = label + "|" + sparkline(gpu.samples("util"), node.newest_us + 1, view.span_s * 1_000_000,
                                    spark_width, 100.0, _hold_us(node)) + "|"
    return [_fit(line, width) for line in (first, second, third)]


def _hold_us(node: NodeState) -> int:
    """How long a sample stands for the columns after it: one and a half sampling intervals."""
    interval = node.sample_interval_s()
    return 0 if interval is None else int(interval * 1.5e6)


def _span_name(span_s: int) -> str:
    return f"{span_s // 60}m" if span_s % 60 == 0 else f"{span_s}s"


def _fit(line: str, width: int) -> str:
    return line[:width].rstrip()


def sorted_gpus(node: NodeState, sort: str) -> list[GpuState]:
    """The GPUs in the order a view lists them: by id, or busiest, fullest or hungriest first."""
    gpus = sorted(node.gpus.values(), key=lambda g: (g.key[0], g.key[1] or ""))
    if sort == "util":
        gpus.sort(key=lambda g: -(g.latest("util") or 0))
    elif sort == "fb":
        gpus.sort(key=lambda g: -(g.latest("fb_used") or 0))
    elif sort == "power":
        gpus.sort(key=lambda g: -(g.latest("power") or 0))
    return gpus


def process_lines(node: NodeState, width: int, rows: int, gpu: GpuState | None = None) -> list[str]:
    """A table of the processes holding the most framebuffer (of one GPU, or all), at most ``rows`` of them."""
    if rows <= 0:
        return []
    if node.processes is None:
        return [_fit("processes: - (the collector serves no DCGM_EXP_PROCESS_* series: run it with --processes)",
                     width)]
    chosen: list[Process] = [p for p in node.processes if gpu is None or p.key == gpu.key]
    lines = [f"{'PID':>9} {'GPU':<8} {'NAME':<16} {'FB MiB':>9} {'SM %':>5}  POD/JOB"]
    for process in chosen[:max(0, rows - 1)]:
        gpu_name = str(process.key[0]) if process.key[1] is None else f"{process.key[0]}/{process.key[1]}"
        fb = "-" if process.fb_bytes is None else f"{process.fb_bytes / MIB:.0f}"
        lines.append(f"{process.pid:>9} {gpu_name:<8} {process.name or '-':<16} {fb:>9} "
                     f"{_number(process.sm_util):>5}  {process.workload or '-'}")
    if not chosen:
        lines.append("        (no processes)")
    return [_fit(line, width) for line in lines]


def title_line(node: NodeState, view: View, width: int) -> str:
    hosts = sorted({g.labels.get("hostname", "") for g in node.gpus.values()} - {""})
    count = f"{len(node.gpus)} GPU" + ("" if len(node.gpus) == 1 else "s")
    return _fit(f"dcgm-collector top  {view.url}  {', '.join(hosts) or '-'}  {count}  "
                f"span {_span_name(view.span_s)}  sort {view.sort}  health {node.node_health or '-'}", width)


def status_line(view: View, width: int) -> str:
    """The bottom line: the URL, the refresh rate, the last error, the keys."""
    rate = "-" if view.refresh_s is None else f"{1 / view.refresh_s:.0f} Hz" if view.refresh_s < 1 \
        else f"every {view.refresh_s:.1f} s"
    return _fit(f"{view.url}  refresh {rate}  {'error: ' + view.error if view.error else 'ok'}  "
                f"| q quit  s sort  up/down 0-9 GPU  +/- span  h help", width)


def overview_lines(node: NodeState, view: View, width: int, height: int | None) -> list[str]:
    """Every GPU's block, then the top processes, in ``height`` lines (all of them when None)."""
    lines = [title_line(node, view, width), ""]
    gpus = sorted_gpus(node, view.sort)
    if not gpus:
        lines.append("no GPU samples yet")
    for index, gpu in enumerate(gpus):
        if height is not None and len(lines) + 3 > height:
            lines.append(_fit(f"... {len(gpus) - index} more GPUs (a taller terminal shows them)", width))
            break
        lines.extend(gpu_block(node, gpu, view, width, selected=index == view.selected and height is not None))
    lines.append("")
    rows = 11 if height is None else height - len(lines)
    lines.extend(process_lines(node, width, rows))
    return lines if height is None else lines[:height]


def detail_lines(node: NodeState, gpu: GpuState, view: View, width: int, height: int) -> list[str]:
    """One GPU at length: its readings, a sparkline per reading over the span, its processes."""
    lines = [title_line(node, view, width), ""]
    lines.extend(gpu_block(node, gpu, view, width, selected=True)[:2])
    lines.append(_fit(f"{'':10}{gpu.labels.get('UUID', '-')}  {gpu.labels.get('pci_bus_id', '-')}", width))
    lines.append("")
    end, span = node.newest_us + 1, view.span_s * 1_000_000
    used, total = _fb(gpu)
    power_top = _power_limit(gpu) or max((v for _, v in gpu.samples("power") if v is not None), default=0.0)
    clock_top = max((v for _, v in gpu.samples("sm_clock") if v is not None), default=0.0)
    charts = (("util %", "util", 100.0), ("power W", "power", power_top), ("temp C", "gpu_temp", 100.0),
              ("sm MHz", "sm_clock", clock_top), ("fb MiB", "fb_used", total or 0.0))
    for label, name, top in charts:
        rows = [s for s in gpu.samples(name) if end - span <= s[0] < end and s[1] is not None]
        peak = max((v for _, v in rows), default=None)
        head = f"  {label:<8}{_number(gpu.latest(name)):>7} max {_number(peak):>6} "
        lines.append(_fit(head + "|" + sparkline(gpu.samples(name), end, span, max(0, width - len(head) - 2), top,
                                                    _hold_us(node)) + "|", width))
    lines.append("")
    lines.extend(process_lines(node, width, height - len(lines), gpu))
    return lines[:height]


def help_lines(width: int) -> list[str]:
    text = [
        "dcgm-collector top: keys",
        "",
        "  q          quit",
        "  s          sort the GPUs by id, utilisation, framebuffer used, power",
        "  up/down    move the selection (in the detail view: show the next GPU)",
        "  0-9        show that GPU's detail view",
        "  enter      open or close the selected GPU's detail view; esc closes it",
        "  + / -      longer or shorter span: 30 s, 1 min, 5 min",
        "  h          this help (any key closes it)",
        "",
        "Each sparkline column is the largest sample in its slice of the span, so a short spike shows.",
    ]
    return [_fit(line, width) for line in text]


def screen(node: NodeState, view: View, width: int, height: int) -> list[str]:
    """The whole live screen: ``height - 1`` lines of the current page, then the status line."""
    body = height - 1
    gpus = sorted_gpus(node, view.sort)
    if view.help:
        lines = help_lines(width)[:body]
    elif view.detail and gpus:
        lines = detail_lines(node, gpus[min(view.selected, len(gpus) - 1)], view, width, body)
    else:
        lines = overview_lines(node, view, width, body)
    return lines + [""] * (body - len(lines)) + [status_line(view, width)]


def snapshot(node: NodeState, view: View, width: int = 132) -> str:
    """The ``--once`` text: every GPU and the top processes, plain text."""
    return "\n".join(overview_lines(node, view, width, None)).rstrip("\n") + "\n"
