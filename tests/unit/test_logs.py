"""--debug and --log-format set up the root logger."""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime

from dcgm_collector import logs
from dcgm_collector.config import parse_config


def test_debug_and_log_format_set_up_logging():
    import logging

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        debug = parse_config(["--debug"], {})
        logs.setup_logging(debug.log_format, debug.debug)
        assert root.level == logging.DEBUG
        json_logs = parse_config([], {"DCGM_EXPORTER_LOG_FORMAT": "json"})
        logs.setup_logging(json_logs.log_format, json_logs.debug)
        assert root.level == logging.INFO
        assert isinstance(root.handlers[0].formatter, logs.JsonFormatter)
        record = logging.LogRecord("x", logging.WARNING, __file__, 1, "hello %s", ("there",), None)
        assert '"msg":"hello there"' in root.handlers[0].format(record)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)


def _record(message: str, *args: object, level: int = logging.INFO, exc_info=None) -> logging.LogRecord:
    record = logging.LogRecord("dcgm_collector", level, __file__, 1, message, args, exc_info)
    record.created = 1764581400.1239   # 2025-12-01T09:30:00.123Z
    return record


def test_text_logs_are_logfmt_with_rfc3339_utc_times():
    formatter = logs.LogfmtFormatter()
    assert formatter.format(_record("serving http://%s/metrics", "[::]:9400")) == \
        'time=2025-12-01T09:30:00.123Z level=INFO msg="serving http://[::]:9400/metrics"'
    assert formatter.format(_record("ready", level=logging.WARNING)) == \
        "time=2025-12-01T09:30:00.123Z level=WARNING msg=ready"
    assert formatter.format(_record('a "quoted" = thing\nand a line')) == \
        'time=2025-12-01T09:30:00.123Z level=INFO msg="a \\"quoted\\" = thing\\nand a line"'


def test_json_logs_are_one_object_per_line_with_rfc3339_utc_times():
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record("start-up failed", level=logging.ERROR, exc_info=sys.exc_info())
    line = logs.JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert list(entry) == ["time", "level", "msg", "error"]
    assert (entry["time"], entry["level"], entry["msg"]) == ("2025-12-01T09:30:00.123Z", "ERROR", "start-up failed")
    assert entry["error"].endswith("ValueError: boom")
    assert datetime.fromisoformat(entry["time"].replace("Z", "+00:00")).tzinfo is not None
