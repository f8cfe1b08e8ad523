"""Small SVG charts of a recording, drawn here: one shared time axis (seconds from the first trigger), no script.

Each chart is one panel of the report: a line per GPU and series (a dashed
line for a limit), the trigger at 0 and each XID as a red mark.  The clock
event reasons are a band instead: one row per reason, filled where it was set.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

from dcgm_collector.report.recording import Series

__all__ = ["Line", "band_svg", "line_svg"]

WIDTH, HEIGHT = 560, 150
LEFT, RIGHT, TOP, BOTTOM = 52, 10, 8, 22
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")
MAX_POINTS = 1500   # a longer series is thinned to this many points per line


@dataclass(frozen=True)
class Line:
    label: str
    series: Series
    dashed: bool = False


def _x(t: float, since: float, until: float) -> float:
    return LEFT + (t - since) / max(until - since, 1e-9) * (WIDTH - LEFT - RIGHT)


def _axis(since: float, until: float, marks: list[float]) -> list[str]:
    """The time axis, the trigger line at 0 and the XID marks."""
    out = [f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#999"/>']
    step = _step(until - since)
    tick = np.ceil(since / step) * step
    while tick <= until + 1e-9:
        x = _x(tick, since, until)
        out.append(f'<text x="{x:.1f}" y="{HEIGHT - 6}" font-size="10" text-anchor="middle">{tick:+g} s</text>')
        tick += step
    if since <= 0 <= until:
        x = _x(0.0, since, until)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}" stroke="#000" '
                   'stroke-dasharray="3,2"><title>first trigger</title></line>')
    for t in marks:
        x = _x(t, since, until)
        out.append(f'<line class="xid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}" stroke="#d62728"'
                   f' stroke-width="1.5" opacity="0.7"><title>XID at {t:+.1f} s</title></line>')
    return out


def _step(span: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600):
        if span / step <= 8:
            return float(step)
    return 1200.0


def line_svg(lines: list[Line], since: float, until: float, unit: str, marks: list[float]) -> str:
    """An SVG chart of ``lines`` over [since, until] with a y axis in ``unit``."""
    values = np.concatenate([ln.series.v for ln in lines]) if lines else np.zeros(0)
    low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    if low > 0 and low < 0.5 * high:
        low = 0.0
    if high - low < 1e-9:
        low, high = low - 1.0, high + 1.0
    plot_h = HEIGHT - TOP - BOTTOM

    def y(v: np.ndarray) -> np.ndarray:
        return TOP + (1 - (v - low) / (high - low)) * plot_h

    # inline in HTML, an svg element needs no namespace attribute: the page names no address at all
    out = [f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">']
    for v in (low, high):
        out.append(f'<text x="{LEFT - 4}" y="{float(y(np.array(v))) + 4:.1f}" font-size="10" '
                   f'text-anchor="end">{_number(v)}</text>')
    out.append(f'<text x="4" y="{TOP + plot_h / 2:.0f}" font-size="10">{escape(unit)}</text>')
    out.extend(_axis(since, until, marks))
    for i, ln in enumerate(lines):
        t, v = ln.series.t, ln.series.v
        if len(t) > MAX_POINTS:
            pick = np.linspace(0, len(t) - 1, MAX_POINTS).astype(np.intp)
            t, v = t[pick], v[pick]
        xs = LEFT + (t - since) / max(until - since, 1e-9) * (WIDTH - LEFT - RIGHT)
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, y(v)))
        dash = ' stroke-dasharray="5,3"' if ln.dashed else ""
        colour = COLOURS[i % len(COLOURS)]
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{points}">'
                   f'<title>{escape(ln.label)}</title></polyline>')
    out.append("</svg>")
    return "".join(out)


def band_svg(rows: list[tuple[str, Series]], since: float, until: float, marks: list[float]) -> str:
    """The clock-event reasons as a band: one row per (label, 0/1 series), filled where set."""
    row_h = 14
    height = TOP + row_h * max(len(rows), 1) + BOTTOM
    out = [f'<svg width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img">']
    for i, (label, s) in enumerate(rows):
        top = TOP + i * row_h
        out.append(f'<text x="{LEFT - 4}" y="{top + 11}" font-size="10" text-anchor="end">{escape(label)}</text>')
        on = s.v > 0
        for j in np.flatnonzero(on):
            x0 = _x(float(s.t[j]), since, until)
            x1 = _x(float(s.t[j + 1]) if j + 1 < len(s.t) else until, since, until)
            out.append(f'<rect x="{x0:.1f}" y="{top + 2}" width="{max(x1 - x0, 1):.1f}" height="{row_h - 4}" '
                       f'fill="{COLOURS[1]}"/>')
    out.extend(line.replace(f'y2="{HEIGHT - BOTTOM}"', f'y2="{height - BOTTOM}"')
               .replace(f'y1="{HEIGHT - BOTTOM}"', f'y1="{height - BOTTOM}"')
               .replace(f'y="{HEIGHT - 6}"', f'y="{height - 6}"') for line in _axis(since, until, marks))
    out.append("</svg>")
    return "".join(out)


def _number(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:.1f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.0f}k"
    return f"{v:.0f}" if abs(v) >= 10 or v == int(v) else f"{v:.2f}"
