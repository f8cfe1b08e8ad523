"""Log output in dcgm-exporter's formats, at the level --debug asks for.

dcgm-exporter logs through Go's log/slog: ``--log-format text`` is logfmt
(``time=... level=INFO msg="..."``), ``json`` one object per line with the
same keys.  Both write the time as RFC 3339 in UTC with milliseconds, so the
pipelines that parse dcgm-exporter's logs parse these unchanged.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import NoReturn

__all__ = ["JsonFormatter", "LogfmtFormatter", "exit_flushed", "rfc3339", "setup_logging"]


def rfc3339(created: float) -> str:
    """A record's time as RFC 3339 in UTC with milliseconds: 2026-12-01T09:30:00.123Z."""
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _fields(record: logging.LogRecord, formatter: logging.Formatter) -> dict[str, str]:
    fields = {"time": rfc3339(record.created), "level": record.levelname, "msg": record.getMessage()}
    if record.exc_info:
        fields["error"] = formatter.formatException(record.exc_info)
    return fields


class JsonFormatter(logging.Formatter):
    """--log-format json: one JSON object per line (slog's JSON handler: time, level, msg)."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record, self), separators=(",", ":"), ensure_ascii=False)


class LogfmtFormatter(logging.Formatter):
    """--log-format text: logfmt, one ``key=value`` pair per field, as slog's text handler writes it."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_logfmt_value(value)}" for key, value in _fields(record, self).items())


def _logfmt_value(value: str) -> str:
    # quoted (with Go's escapes) when empty or holding a space, '=', '"' or a control character
    if value and not any(c in ' ="\\' or not c.isprintable() for c in value):
        return value
    return json.dumps(value, ensure_ascii=False)


def setup_logging(log_format: str, debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)


def exit_flushed(code: int) -> NoReturn:
    """End the process at once with ``code`` (os._exit: no interpreter or C++ runtime clean-up, no waiting for
    threads), after flushing every log handler, stdout and stderr, which that exit would not."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: what was written is what the reader got
            pass
    os._exit(code)
