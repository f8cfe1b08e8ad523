"""The landing page at /: the server's version and a link to each path it answers.

/metrics and /health come first, then each extra route that names a
``landing`` line, then the HTML the application adds (its recordings).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from dcgm_collector import __version__
from dcgm_collector.serve.routes import Route


def landing_page(routes: Mapping[str, Route], extra: str) -> str:
    """The page's HTML; ``extra`` is HTML of the application's, inserted after the list as it is."""
    version = html.escape(__version__)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dcgm-collector</title></head>\n"
        f"<body><h1>dcgm-collector {version}</h1>\n"
        "<p>DCGM GPU telemetry for Prometheus.</p>\n<ul>\n"
        "<li><a href=\"metrics\">metrics</a>: Prometheus text format (OpenMetrics on request)</li>\n"
        "<li><a href=\"health\">health</a>: 200 while DCGM answers and samples are fresh</li>\n"
        + "".join(f"<li><a href=\"{html.escape(p.lstrip('/'))}\">{html.escape(p.lstrip('/'))}</a>: "
                  f"{html.escape(r.landing)}</li>\n" for p, r in routes.items() if r.landing)
        + "</ul>\n" + extra + "</body></html>\n"
    )
