"""Content negotiation: which exposition format and which coding a scraper's Accept headers ask for.

Read as Go's server (dcgm-exporter's) reads them; a q-value is read strictly
(RFC 9110 12.4.2: 0 to 1 with at most three decimals, ASCII digits), and one
that is not is taken as "not acceptable", never as an error.
"""

from __future__ import annotations

import re

__all__ = ["OPENMETRICS_TYPE", "OPENMETRICS_VERSIONS", "accepts_gzip", "openmetrics_content_type",
           "openmetrics_version", "wants_openmetrics"]

OPENMETRICS_TYPE = "application/openmetrics-text"
OPENMETRICS_VERSIONS = ("0.0.1", "1.0.0")
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?", re.ASCII)


def _media_ranges(header_values: list[str] | None):
    """(lower-case media type or coding, params dict, q) for each item of Accept-like headers."""
    for value in header_values or ():
        for item in value.split(","):
            parts = [p.strip() for p in item.split(";")]
            if not parts[0]:
                continue
            params = {}
            for part in parts[1:]:
                key, _, val = part.partition("=")
                params[key.strip().lower()] = val.strip().strip('"')
            q_text = params.get("q", "1")
            q = float(q_text) if _QVALUE.fullmatch(q_text) else 0.0
            yield parts[0].lower(), params, q


def openmetrics_version(accept: list[str] | None) -> str | None:
    """The OpenMetrics version to serve for these Accept header values, or None for the 0.0.4 text format.

    As Go's client (dcgm-exporter's) negotiates: the version asked for is served
    when it is one this server writes (0.0.1 and 1.0.0 have the same text), no
    version means 1.0.0, and among acceptable versions the highest q wins (the
    newer version on a tie).  Ties with text, wildcards and no header at all go to
    the text format, the one every scraper reads; a version this server does not
    write counts as not acceptable.
    """
    best: tuple[float, str] | None = None
    q_text = 0.0
    for media, params, q in _media_ranges(accept):
        if media == OPENMETRICS_TYPE:
            version = params.get("version", OPENMETRICS_VERSIONS[-1])
            if version in OPENMETRICS_VERSIONS and q > 0:
                candidate = (q, version)   # same q: the later (newer) version sorts higher
                best = candidate if best is None else max(best, candidate)
        elif media in ("text/plain", "text/*", "*/*"):
            q_text = max(q_text, q)
    if best is None or best[0] <= q_text:
        return None
    return best[1]


def wants_openmetrics(accept: list[str] | None) -> bool:
    """True when the Accept header values prefer OpenMetrics (a version served here) to the 0.0.4 text format."""
    return openmetrics_version(accept) is not None


def openmetrics_content_type(version: str) -> str:
    return f"{OPENMETRICS_TYPE}; version={version}; charset=utf-8"


def accepts_gzip(accept_encoding: list[str] | None) -> bool:
    """True when the Accept-Encoding header values allow gzip (an explicit q=0 refuses it)."""
    explicit = None
    wildcard = 0.0
    for coding, _, q in _media_ranges(accept_encoding):
        if coding in ("gzip", "x-gzip"):
            explicit = q if explicit is None else max(explicit, q)
        elif coding == "*":
            wildcard = q
    return (explicit if explicit is not None else wildcard) > 0
