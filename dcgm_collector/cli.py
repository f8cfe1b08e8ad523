"""The ``dcgm-collector`` command: serve metrics, or check a counters file, or print a dashboard.

``dcgm-collector [OPTIONS]`` parses the flags and environment into a Config
(dcgm_collector.config) and runs the collector (dcgm_collector.app);
``check-counters FILE``, ``dashboard``, ``top [URL]`` (a live view of a collector
over HTTP) and ``report RECORDING`` (a flight recording summarised) run without DCGM.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from dcgm_collector.catalog.counters import Counter, CountersError, CounterSet, load_counters
from dcgm_collector.collect.servable import load_warnings
from dcgm_collector.config import (
    CHECK_COMMAND,
    DASHBOARD_COMMAND,
    EXIT_ERROR,
    EXIT_OK,
    PROG,
    REPORT_COMMAND,
    TOP_COMMAND,
    ConfigError,
    build_parser,
    parse_config,
)
from dcgm_collector.dashboard import main as dashboard_main
from dcgm_collector.logs import exit_flushed, setup_logging
from dcgm_collector.options.parser import SuggestingParser
from dcgm_collector.report import main as report_main
from dcgm_collector.top import main as top_main

__all__ = ["check_counters", "main", "run"]

log = logging.getLogger("dcgm_collector")


def _kind(counter: Counter) -> str:
    if counter.exporter is not None:
        return "exporter"
    if counter.is_label:
        return "label"
    if counter.field.is_profiling:
        return "profiling"
    if counter.field.is_event:
        return "event"
    return "value"


def check_counters(argv: Sequence[str]) -> int:
    parser = SuggestingParser(
        prog=f"{PROG} {CHECK_COMMAND}",
        description="Validate a counters file and list what it would export; exit 1 with file:line on an error.")
    parser.add_argument("file", metavar="FILE", help="counters file (counters.csv grammar)")
    args = parser.parse_args(argv)
    try:
        counters = load_counters(args.file)
    except CountersError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as error:
        print(f"{PROG}: error: {args.file}: cannot read counters file: {error.strerror or error}", file=sys.stderr)
        return EXIT_ERROR
    print(_counters_table(counters))
    for warning in load_warnings(counters):   # the lines the collector logs for the same file
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    return EXIT_OK


def _counters_table(counters: CounterSet) -> str:
    header = ("LINE", "NAME", "TYPE", "FIELD", "KIND", "AGGREGATIONS")
    rows = [header]
    for c in counters:
        field_id = "-" if c.field is None else str(c.field.id)
        # the TYPE /metrics serves (a rate typed counter is served as a gauge, and warned about)
        rows.append((str(c.line), c.name, c.served_type, field_id, _kind(c), "|".join(c.aggregations) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {0, 3}
    lines = ["  ".join(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                       for i, cell in enumerate(row)).rstrip() for row in rows]
    kinds = [_kind(c) for c in counters]
    series = sum(k in ("value", "profiling", "event") for k in kinds)
    windowed = sum(1 for c in counters if c.aggregations)
    lines.append(f"{counters.path}: {len(counters)} rows: {series} metrics ({windowed} with window aggregates), "
                 f"{kinds.count('label')} label rows, {kinds.count('exporter')} DCGM_EXP_* counters")
    return "\n".join(lines)


def _import_http_client_without_openssl() -> None:
    """Import http.client before anything else does, with ``ssl`` unimportable meanwhile.

    The server is built on http.server, which imports http.client, which
    imports ssl for its HTTPSConnection: OpenSSL loaded and initialised is
    about 5 MiB resident, a tenth of the collector.  Only a remote write to
    an https URL uses HTTPSConnection (the caller imports normally then);
    TLS on the listener (--web-config-file) imports ssl itself when it is
    configured, which works as usual once this has returned.  A module
    that is None in sys.modules raises ImportError when imported, which
    http.client answers by leaving HTTPSConnection out.
    """
    if "http.client" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None   # type: ignore[assignment]
    try:
        import http.client  # noqa: F401
    finally:
        del sys.modules["ssl"]


def run() -> None:
    """The ``dcgm-collector`` command (and ``python -m dcgm_collector``): :func:`main`, then its exit status."""
    code = main()
    if "pyarrow" in sys.modules:
        # Arrow's thread pools can still be winding down when the C++ runtime destroys them at exit, and the
        # process then aborts (SIGABRT, "terminate called without an active exception") after its work is done
        # (apache/arrow#34314, open).  What the interpreter's exit would do for us is done here, then the
        # process ends without the runtime's destructors.
        import atexit

        atexit._run_exitfuncs()   # among them the engine's replay files
        exit_flushed(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == CHECK_COMMAND:
        return check_counters(argv[1:])
    if argv and argv[0] == DASHBOARD_COMMAND:
        return dashboard_main(argv[1:])
    if argv and argv[0] == TOP_COMMAND:
        return top_main(argv[1:])
    if argv and argv[0] == REPORT_COMMAND:
        return report_main(argv[1:])
    parser = build_parser()
    try:
        config = parse_config(argv, os.environ, parser)
    except ConfigError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_code
    setup_logging(config.log_format, config.debug)
    for warning in config.warnings:
        log.warning("%s", warning)
    if not any(url.lower().startswith("https:") for url in config.remote_write_urls):
        _import_http_client_without_openssl()
    # The one deliberate lazy import: the running collector loads the C extension and libdcgm,
    # which --help, check-counters, dashboard and top must not need.
    try:
        from dcgm_collector.lifecycle import serve
    except ImportError as error:   # an unbuilt checkout: the error says what to run
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    return serve(config)


if __name__ == "__main__":
    sys.exit(main())
