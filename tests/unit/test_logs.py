"""--debug and --log-format set up the root logger."""

from __future__ import annotations

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
        assert '"msg": "hello there"' in root.handlers[0].format(record)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
