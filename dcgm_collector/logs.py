"""Log output: the text or JSON format chosen by --log-format, at the level --debug asks for."""

from __future__ import annotations

import json
import logging
import sys

__all__ = ["JsonFormatter", "setup_logging"]


class JsonFormatter(logging.Formatter):
    """--log-format json: one JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "msg": record.getMessage()}
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def setup_logging(log_format: str, debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
