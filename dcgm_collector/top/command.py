"""The ``top`` command's flags, its ``--once`` snapshot and the choice between the snapshot and the live screen."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from dcgm_collector.top.client import DEFAULT_URL, Connection, TopError
from dcgm_collector.top.feed import Feed
from dcgm_collector.top.render import View, snapshot

__all__ = ["main"]

PROG = "dcgm-collector top"
INSTALL_HINT = "pip install 'dcgm-collector[top]'"
ONCE_WIDTH = 132
ONCE_WAIT_S = 2.0    # --once waits this long for a second poll, so rates and the newest samples are there


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="A live terminal view of a dcgm-collector (or any server of its history API): "
                               "per GPU its readings and a sparkline, the top processes.",
        epilog="keys: q quit, s sort, up/down or 0-9 pick a GPU, enter/esc its detail view, +/- span, h help")
    parser.add_argument("url", nargs="?", default=DEFAULT_URL, metavar="URL",
                        help=f"the collector's base URL (default {DEFAULT_URL})")
    parser.add_argument("--once", action="store_true",
                        help="print one plain-text snapshot and exit (the default when stdout is not a terminal)")
    parser.add_argument("--ca-file", metavar="FILE", help="CA certificates (PEM) to verify an https collector with")
    parser.add_argument("--insecure", action="store_true", help="do not verify the collector's TLS certificate")
    parser.add_argument("--user", metavar="NAME", help="basic auth user name")
    password = parser.add_mutually_exclusive_group()
    password.add_argument("--password", metavar="TEXT", help="basic auth password")
    password.add_argument("--password-file", metavar="FILE", help="read the basic auth password from FILE")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                        help="seconds each request may take (default 5)")
    parser.add_argument("--width", type=int, default=ONCE_WIDTH, metavar="COLUMNS",
                        help=f"--once: the snapshot's width (default {ONCE_WIDTH})")
    return parser


def _connection(args: argparse.Namespace) -> Connection:
    if not args.url.startswith(("http://", "https://")):
        raise TopError(f"URL {args.url}: give http://HOST:PORT or https://HOST:PORT")
    if not args.timeout > 0:
        raise TopError(f"--timeout {args.timeout:g}: must be more than 0")
    if args.width < 40:
        raise TopError(f"--width {args.width}: must be at least 40")
    password = args.password
    if args.password_file is not None:
        try:
            with open(args.password_file, encoding="utf-8") as handle:
                password = handle.read().rstrip("\r\n")
        except OSError as error:
            raise TopError(f"--password-file {args.password_file}: {error.strerror or error}") from None
    if password is not None and args.user is None:
        raise TopError("--password needs --user")
    connection = Connection(args.url, ca_file=args.ca_file, insecure=args.insecure, user=args.user,
                            password=password, timeout=args.timeout)
    _ = connection.tls_context    # an unreadable --ca-file is a usage error, before any request
    return connection


def _once(feed: Feed, view: View, width: int) -> int:
    feed.poll()
    # a second poll: the sampling interval is known from the first one's samples, and /metrics was read once
    time.sleep(min(ONCE_WAIT_S, feed.refresh_s()))
    feed.poll()
    view.refresh_s = feed.refresh_s()
    try:
        sys.stdout.write(snapshot(feed.node, view, width))
        sys.stdout.flush()
    except BrokenPipeError:   # a reader that wanted only the first lines (| head) is no error
        # what is left unwritten goes nowhere, so the flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        connection = _connection(args)
    except TopError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    feed, view = Feed(connection), View(connection.url)
    if args.once or not sys.stdout.isatty():
        try:
            return _once(feed, view, args.width)
        except TopError as error:
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return 1
    try:
        from dcgm_collector.top.app import run
    except ModuleNotFoundError as error:
        if error.name != "blessed":
            raise
        print(f"{PROG}: error: the live view needs blessed: {INSTALL_HINT} (or --once for a plain snapshot)",
              file=sys.stderr)
        return 1
    try:
        return run(feed, view)
    except KeyboardInterrupt:
        return 0
