"""The report of one recording: its plain-text summary and its self-contained HTML page.

Both say the same things: the triggers, the GPUs, the findings (ranked) and
each XID in the window with what it means.  The page adds the charts, one
panel per kind of reading the recording has, on one time axis; a panel whose
fields the recording lacks is a line in the "not recorded" note instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from html import escape

import numpy as np

from dcgm_collector.catalog.xids import XID_CATALOGUE_URL, xid_entry
from dcgm_collector.report.charts import Line, band_svg, line_svg
from dcgm_collector.report.findings import Finding, early_warnings, find, when
from dcgm_collector.report.recording import Recording, Series

__all__ = ["PANELS", "Panel", "XidEvent", "html_page", "text_summary", "xid_events"]

XID_FIELD = 230
CLOCK_EVENT_FIELD = 112
# DCGM's clock-event reason bits, in the band's order
CLOCK_EVENT_BITS: tuple[tuple[int, str], ...] = (
    (0x4, "SW power cap"), (0x80, "HW power brake"), (0x8, "HW slowdown"), (0x20, "SW thermal"),
    (0x40, "HW thermal"), (0x10, "sync boost"), (0x2, "app clocks"), (0x1, "idle"),
)


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    fields: tuple[tuple[int, str, bool], ...]   # (field id, label, dashed)


PANELS: tuple[Panel, ...] = (
    Panel("Power", "W", ((155, "power", False), (164, "enforced limit", True), (160, "requested limit", True))),
    Panel("Temperature", "°C", ((150, "GPU", False), (140, "memory", False), (158, "slowdown threshold", True))),
    Panel("SM clock", "MHz", ((100, "SM clock", False),)),
    Panel("Utilisation", "%", ((203, "GPU utilisation", False), (204, "memory copy", False))),
    Panel("Framebuffer", "MiB", ((252, "used", False), (251, "free", False))),
    Panel("ECC errors", "count", ((310, "SBE volatile", False), (311, "DBE volatile", False),
                                  (312, "SBE aggregate", False), (313, "DBE aggregate", False))),
    Panel("Row remapping", "rows", ((394, "correctable", False), (393, "uncorrectable", False),
                                    (395, "failed", False), (396, "pending", False))),
    Panel("PCIe replays", "count", ((202, "replays", False),)),
    Panel("NvLink errors", "count", ((409, "CRC flit", False), (419, "CRC data", False), (429, "replay", False),
                                     (439, "recovery", False))),
)


@dataclass(frozen=True)
class XidEvent:
    gpu: int
    t: float
    number: int


def xid_events(rec: Recording) -> list[XidEvent]:
    """Every XID in the window, oldest first."""
    out = [XidEvent(gpu, float(t), int(v)) for (gpu, f), s in rec.series.items() if f == XID_FIELD
           for t, v in zip(s.t, s.v)]
    return sorted(out, key=lambda e: (e.t, e.gpu))


def _gpu_line(rec: Recording, gpu: int) -> str:
    info = next((g for g in rec.gpus if g.gpu == gpu), None)
    if info is None:
        return f"GPU {gpu}"
    line = f"GPU {gpu}: {info.model or 'model not recorded'}" + (f" ({info.uuid})" if info.uuid else "")
    if info.pods:
        line += "; pods: " + ", ".join(_pod_words(p) for p in info.pods)
    if info.processes:
        line += "; processes: " + ", ".join(
            f"{p.get('pid', '?')} {p.get('name') or '(no name)'}"
            + (f" ({_pod_words(p)})" if _pod_words(p) else "") for p in info.processes)
    return line


def _pod_words(labels: dict) -> str:
    """A pod as namespace/pod (container), or an HPC job as job NAME; "" for neither."""
    pod = "/".join(str(labels[k]) for k in ("namespace", "pod") if labels.get(k))
    if pod and labels.get("container"):
        pod += f" ({labels['container']})"
    job = f"job {labels['hpc_job']}" if labels.get("hpc_job") else ""
    return ", ".join(w for w in (pod, job) if w)


def _trigger_lines(rec: Recording) -> list[str]:
    if not rec.triggers:
        return ["no sidecar: the trigger is unknown, the time axis starts at the first sample"]
    lines = []
    for t in [*rec.earlier, *rec.triggers]:
        gpus = f", GPUs {', '.join(str(g) for g in t.gpus)}" if t.gpus else ""
        before = " (before the recording's own trigger)" if t in rec.earlier else ""
        lines.append(f"{t.kind} at {t.time} ({t.t:+.1f} s){gpus}: {t.detail}{before}")
    if rec.more_triggers:
        lines.append(f"and {rec.more_triggers} more triggers not listed")
    return lines


def _xid_lines(events: list[XidEvent]) -> list[str]:
    """One line per GPU and XID number (a storm repeats one), with its times and what it means."""
    groups: dict[tuple[int, int], list[float]] = {}
    for e in events:
        groups.setdefault((e.gpu, e.number), []).append(e.t)
    lines = []
    for (gpu, number), times in groups.items():
        entry = xid_entry(number)
        at = f"at {times[0]:+.1f} s" if len(times) == 1 else f"x{len(times)} from {times[0]:+.1f} to {times[-1]:+.1f} s"
        if entry is None:
            lines.append(f"GPU {gpu} XID {number} {at}: not in this catalogue; see {XID_CATALOGUE_URL}")
        else:
            lines.append(f"GPU {gpu} XID {number} {at}: {entry.name}: {entry.meaning}. Action: {entry.action}.")
    return lines


def _missing(rec: Recording) -> list[str]:
    notes = []
    for panel in PANELS:
        if not any(rec.has_field(f) for f, _, _ in panel.fields):
            notes.append(f"{panel.title}: not recorded")
    if not rec.has_field(CLOCK_EVENT_FIELD):
        notes.append("Clock-event reasons: not recorded")
    if not rec.has_field(XID_FIELD):
        notes.append("XIDs: none in the window")
    return notes


def _findings(rec: Recording) -> list[Finding]:
    """The collector's early warnings before the trigger first, then what the samples show."""
    return early_warnings([*rec.earlier, *rec.triggers]) + find(rec.series, rec.gpu_numbers())


def text_summary(rec: Recording) -> str:
    """The plain-text report: what the terminal shows."""
    lines = [f"Recording {os.path.basename(rec.path)}" + (f" (host {rec.host})" if rec.host else ""),
             f"window {rec.since:+.1f} s to {rec.until:+.1f} s around the first trigger, {rec.rows} samples", "",
             "Triggers:"]
    lines += [f"  {line}" for line in _trigger_lines(rec)]
    lines += ["", "GPUs:"] + [f"  {_gpu_line(rec, g)}" for g in rec.gpu_numbers()]
    findings = _findings(rec)
    lines += ["", "Findings (most telling first):" if findings else "Findings: none (no power cap, thermal "
              "slowdown, climbing memory temperature, accelerating error counter or pulled-down clock before the "
              "trigger)"]
    lines += [f"  {i}. {f.sentence()}" for i, f in enumerate(findings, 1)]
    events = xid_events(rec)
    lines += ["", "XIDs in the window:" if events else "XIDs in the window: none"]
    lines += [f"  {line}" for line in _xid_lines(events)]
    missing = _missing(rec)
    if missing:
        lines += ["", "Not in the recording:"] + [f"  {m}" for m in missing]
    return "\n".join(lines) + "\n"


def _panel_svg(rec: Recording, panel: Panel, gpus: list[int], marks: list[float]) -> str | None:
    lines = []
    for gpu in gpus:
        for field_id, label, dashed in panel.fields:
            s = rec.get(gpu, field_id)
            if s is not None and len(s.t):
                lines.append(Line(f"GPU {gpu} {label}", s, dashed))
    if not lines:
        return None
    return line_svg(lines, rec.since, rec.until, panel.unit, marks)


def _band(rec: Recording, gpus: list[int], marks: list[float]) -> str | None:
    rows = []
    for gpu in gpus:
        s = rec.get(gpu, CLOCK_EVENT_FIELD)
        if s is None:
            continue
        bits = s.v.astype(np.int64)
        for mask, label in CLOCK_EVENT_BITS:
            on = (bits & mask) != 0
            if on.any():
                rows.append((f"GPU {gpu} {label}", Series(s.t, on.astype(np.float64))))
        if not rows:
            rows.append((f"GPU {gpu} none set", Series(s.t, np.zeros(len(s.t)))))
    return band_svg(rows, rec.since, rec.until, marks) if rows else None


STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.4em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
.charts{display:flex;flex-wrap:wrap;gap:10px}.chart{border:1px solid #ddd;padding:4px}
.chart h3{font-size:.9em;margin:2px 0}.note{color:#666}ol li{margin:2px 0}.legend{font-size:.8em;color:#555}
"""


def _finding_html(f: Finding) -> str:
    """A finding as the text says it, its kind in bold (once: where the text names it, there)."""
    if f.text.startswith(f.kind):
        return f"GPU {f.gpu}: <b>{escape(f.kind)}</b>{escape(f.text[len(f.kind):])}, {escape(when(f.before_s))}"
    return f"<b>{escape(f.kind)}</b> GPU {f.gpu}: {escape(f.text)}, {escape(when(f.before_s))}"


def html_page(rec: Recording) -> str:
    """The self-contained HTML report: inline style and SVG, no script, no address outside the file."""
    gpus = rec.gpu_numbers()
    events = xid_events(rec)
    marks = [e.t for e in events]
    name = escape(os.path.basename(rec.path))
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>Report: {name}</title>",
           f"<style>{STYLE}</style></head><body>", f"<h1>Flight recording {name}</h1>",
           f"<p>{escape(rec.host and 'host ' + rec.host + ', ')}window {rec.since:+.1f} s to {rec.until:+.1f} s "
           f"around the first trigger, {rec.rows} samples.</p>", "<h2>Triggers</h2><ul>"]
    out += [f"<li>{escape(line)}</li>" for line in _trigger_lines(rec)]
    out += ["</ul><h2>GPUs</h2><ul>"] + [f"<li>{escape(_gpu_line(rec, g))}</li>" for g in gpus] + ["</ul>"]
    findings = _findings(rec)
    out.append("<h2>Findings</h2>")
    if findings:
        out.append("<ol>" + "".join(f"<li>{_finding_html(f)}</li>" for f in findings) + "</ol>")
    else:
        out.append('<p class="note">None: nothing in the window before the trigger points at a cause.</p>')
    out.append("<h2>XIDs in the window</h2>")
    if events:
        out.append("<table><tr><th>GPU</th><th>time</th><th>XID</th><th>meaning</th><th>action</th></tr>")
        for e in events:
            entry = xid_entry(e.number)
            meaning = f"{entry.name}: {entry.meaning}" if entry else f"not in this catalogue; see {XID_CATALOGUE_URL}"
            action = entry.action if entry else ""
            out.append(f"<tr><td>{e.gpu}</td><td>{e.t:+.1f} s</td><td>{e.number}</td><td>{escape(meaning)}</td>"
                       f"<td>{escape(action)}</td></tr>")
        out.append("</table>")
    else:
        out.append('<p class="note">None.</p>')
    out.append('<h2>Readings</h2><p class="legend">Seconds from the first trigger (dashed black line); '
               'red lines: XIDs; dashed coloured lines: limits. Hover a line for its name.</p><div class="charts">')
    for panel in PANELS:
        svg = _panel_svg(rec, panel, gpus, marks)
        if svg is not None:
            out.append(f'<div class="chart"><h3>{escape(panel.title)} ({escape(panel.unit)})</h3>{svg}</div>')
        if panel.title == "SM clock":
            band = _band(rec, gpus, marks)
            if band is not None:
                out.append(f'<div class="chart"><h3>Clock-event reasons</h3>{band}</div>')
    out.append("</div>")
    missing = _missing(rec)
    if missing:
        out.append('<h2>Not in the recording</h2><ul class="note">' +
                   "".join(f"<li>{escape(m)}</li>" for m in missing) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
