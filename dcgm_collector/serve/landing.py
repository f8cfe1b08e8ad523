"""The landing page at /: what the collector reads, its GPUs at a glance, live charts and every path it answers.

The page is plain HTML first: the version, the source, a tile per GPU with
its latest values (from the application's ``overview()``), then a link to
each path (/metrics, /health, each extra route that names a ``landing``
line, with its example query when it has one) and the HTML the application
adds (its recordings).  With JavaScript on, the page's own script
(``/static/live.js``, package data served from memory) draws per-GPU charts
of the last minutes on <canvas> from the history API and keeps the tiles'
values current; without it the page stays as it was sent.  The script and
its style sheet are the only things it loads, and the Content-Security-Policy
the page goes out with allows nothing else (no inline script or style, no
other origin).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dcgm_collector import __version__
from dcgm_collector.serve.routes import Route

__all__ = ["CSP", "STATIC", "GpuTile", "Overview", "StaticFile", "landing_page"]

# only the page's own script and style sheet, only requests back to the collector
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

# how far back the charts reach: the script's first query asks for this span
CHART_WINDOW_S = 300


class GpuTile(Protocol):
    """One GPU's latest values, as a tile shows them; None where the counters serve no such field."""

    gpu: int
    model: str
    util_pct: float | None
    fb_used_mib: float | None
    fb_total_mib: float | None
    temp_c: float | None
    power_w: float | None
    health: str            # DCGM's health result (PASS, WARN, FAIL) when served, else the collector's own


@dataclass(frozen=True)
class Overview:
    """What the page's head says: /health's state line, its source line, and a tile per GPU."""

    health: str
    source: str
    tiles: Sequence[GpuTile] = ()


@dataclass(frozen=True)
class StaticFile:
    content_type: str
    body: bytes


def _static(name: str, content_type: str) -> StaticFile:
    # beside this module (see catalog.fields.PACKAGE_DATA for why not importlib.resources)
    return StaticFile(content_type, (Path(__file__).parent / name).read_bytes())


# read once at import: the files are small and never change while the collector runs
STATIC: Mapping[str, StaticFile] = {
    "/static/live.js": _static("live.js", "text/javascript; charset=utf-8"),
    "/static/live.css": _static("live.css", "text/css; charset=utf-8"),
}


def _number(value: float | None, unit: str, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f} {unit}"


def _fb(tile: GpuTile) -> str:
    if tile.fb_used_mib is None:
        return "-"
    used = f"{tile.fb_used_mib / 1024:.1f}"
    return f"{used} / {tile.fb_total_mib / 1024:.0f} GiB" if tile.fb_total_mib else f"{used} GiB"


def _health_class(health: str) -> str:
    return {"PASS": "ok", "OK": "ok", "WARN": "warn"}.get(health, "bad" if health not in ("", "-") else "none")


def _tile(tile: GpuTile) -> str:
    cells = (("util", "util", _number(tile.util_pct, "%")), ("fb", "fb", _fb(tile)),
             ("temp", "temp", _number(tile.temp_c, "°C")), ("power", "power", _number(tile.power_w, "W")))
    values = "".join(f'<dt>{label}</dt><dd data-value="{key}">{html.escape(text)}</dd>' for key, label, text in cells)
    health = tile.health or "-"
    return (f'<li class="tile" data-gpu="{tile.gpu}"><h3>GPU {tile.gpu} <span class="model">'
            f'{html.escape(tile.model)}</span></h3>\n<dl>{values}<dt>health</dt>'
            f'<dd class="health {_health_class(health)}">{html.escape(health)}</dd></dl></li>\n')


def _head(overview: Overview | None) -> str:
    if overview is None:
        return ""
    count = len(overview.tiles)
    source = overview.source.removeprefix("source: ")
    state = "ok" if overview.health.startswith("OK") else "bad"
    return (f'<p class="summary"><span>source: <b>{html.escape(source or "-")}</b></span> '
            f'<span>{count} GPU{"s" if count != 1 else ""}</span> '
            f'<span class="health {state}">{html.escape(overview.health)}</span></p>\n'
            '<ul class="tiles" id="tiles">\n' + "".join(_tile(t) for t in overview.tiles) + "</ul>\n")


def _link(path: str, route: Route) -> str:
    name = html.escape(path.lstrip("/"))
    href = html.escape(path.lstrip("/") + route.example)
    example = f" (<code>{html.escape(route.example)}</code>)" if route.example else ""
    return f'<li><a href="{href}">{name}</a>: {html.escape(route.landing)}{example}</li>\n'


def _charts_source(routes: Mapping[str, Route]) -> str:
    """The element the script draws into: where the history API is, and how far back to read."""
    if "/api/v1/samples" not in routes:
        return ""
    return (f'<section id="charts" class="charts" data-api="api/v1/samples" data-window-s="{CHART_WINDOW_S}" '
            'hidden><h2>Last minutes</h2></section>\n'
            "<noscript><p>The live charts need JavaScript; the tiles show the values as this page was "
            "sent (reload for newer ones).</p></noscript>\n")


def landing_page(routes: Mapping[str, Route], extra: str, overview: Overview | None = None) -> str:
    """The page's HTML; ``extra`` is HTML of the application's, inserted after the list as it is."""
    version = html.escape(__version__)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>dcgm-collector {version}</title>\n"
        "<link rel=\"stylesheet\" href=\"static/live.css\">\n"
        "<script src=\"static/live.js\" defer></script>\n</head>\n"
        f"<body><h1>dcgm-collector {version}</h1>\n"
        "<p>DCGM GPU telemetry for Prometheus.</p>\n"
        + _head(overview) + _charts_source(routes)
        + "<h2>Paths</h2>\n<ul class=\"paths\">\n"
        "<li><a href=\"metrics\">metrics</a>: Prometheus text format (OpenMetrics on request)</li>\n"
        "<li><a href=\"health\">health</a>: 200 while DCGM answers and samples are fresh</li>\n"
        + "".join(_link(p, r) for p, r in routes.items() if r.landing)
        + "</ul>\n" + extra + "</body></html>\n"
    )
