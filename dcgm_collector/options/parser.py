"""The argparse parser of the command line: its help text and Go-style flag spellings.

As with Go's flag package, any option may be written with one or two dashes (``-collectors``,
``--f``) and a value after ``=`` or as the next argument (:func:`go_style_argv`).  The help shows
each option's real default and environment variable, and ends with the commands, the differences
from dcgm-exporter and the dcgm-exporter options not implemented yet.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from dcgm_collector import __version__
from dcgm_collector.options.table import GROUPS, OPTIONS, UNSUPPORTED, Option, _unsupported_dest
from dcgm_collector.options.values import parse_bool

PROG = "dcgm-collector"
CHECK_COMMAND = "check-counters"
DASHBOARD_COMMAND = "dashboard"
TOP_COMMAND = "top"
REPORT_COMMAND = "report"
EXPORTER_COUNTERS_PATH = "/etc/dcgm-exporter/default-counters.csv"


def _not_implemented_help() -> str:
    """The help's list of dcgm-exporter options not implemented, made from UNSUPPORTED (one line per reason)."""
    sections = []
    for refuse, title in ((False, "Accepted with a warning (the output only lacks what they add):"),
                          (True, "Refused (serving without them would be wrong):")):
        reasons: dict[str, list[str]] = {}
        for item in UNSUPPORTED:
            if item.refuse == refuse:
                reasons.setdefault(item.why, []).append("/".join(item.flags))
        lines = [f"  {title}"]
        for why, flags in reasons.items():
            lines.extend(textwrap.wrap(f"{', '.join(flags)}: {why}", width=78, initial_indent="    ",
                                       subsequent_indent="      ", break_on_hyphens=False))
        sections.append("\n".join(lines))
    return "dcgm-exporter options not implemented yet:\n" + "\n".join(sections) + "\n"


EPILOG = f"""\
commands:
  {PROG} {CHECK_COMMAND} FILE   validate a counters file and list what it exports
  {PROG} {DASHBOARD_COMMAND} -f FILE   print a Grafana dashboard for that counters file
  {PROG} {TOP_COMMAND} [URL]   a live terminal view of a collector (--once: one plain snapshot)
  {PROG} {REPORT_COMMAND} RECORDING.parquet [-o REPORT.html]   a flight recording's findings and XIDs

environment:
  Every option has the environment variable shown in its help; a flag beats
  its variable, and an empty variable counts as unset.  Boolean options take
  no value, or =true / =false (Go's spellings: 1, t, T, TRUE, true, True and
  0, f, F, FALSE, false, False).  Options may be written with one dash or two,
  as Go's flags (-collectors, --f).  NODE_NAME sets the hostname label (else
  the host's name; with -r, the hostengine's host, as dcgm-exporter does).

signals:
  SIGHUP re-reads the counters file (a bad file keeps the running one);
  SIGTERM and SIGINT stop cleanly (exit 0).

differences from dcgm-exporter:
  -c defaults to 1000 ms (dcgm-exporter: 30000): the sampler keeps every sample
     DCGM takes, so a short interval costs little and feeds the window families.
  -f defaults to the counters file shipped with this package, not
     {EXPORTER_COUNTERS_PATH}; pass -f to use that one.
  -n works (dcgm-exporter 4.8 parses it but still writes the label).
  -r may be given several times (or as a comma-separated list): one collector
     for several hostengines, each target's series labelled hostname=its host
     (its address where two targets share a host), dcgm_collector_* series too.
  A hostengine that goes away is reconnected with capped backoff while the
     collected samples are still served (dcgm_collector_up 0); dcgm-exporter
     exits.  An unreachable hostengine at start-up is retried, not fatal.

""" + _not_implemented_help()


class SuggestingParser(argparse.ArgumentParser):
    """argparse's parser, whose error for unknown arguments suggests the nearest flag or command by name.

    Python 3.11's argparse has no ``suggest_on_error``; the suggestion is difflib's closest spelling among the
    parser's own (``--colectors`` -> ``--collectors``), one dash or two alike as Go's flags, and for a first
    argument that is no flag, among ``commands``.  The error is argparse's: usage, one line, exit 2.
    """

    FLAG_CUTOFF = 0.75   # difflib's ratio a flag must reach to be suggested

    def __init__(self, *args: Any, commands: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = tuple(commands)
        self.typed: dict[str, str] = {}   # an argument go_style_argv respelled for argparse -> as the user typed it

    def parse_args(self, args: Sequence[str] | None = None,   # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        given = list(sys.argv[1:] if args is None else args)
        parsed, extras = self.parse_known_args(given, namespace)
        if extras:
            extras = [self.typed.get(extra, extra) for extra in extras]
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._suggestion(given, extras)}")
        return parsed

    def _suggestion(self, given: Sequence[str], extras: Sequence[str]) -> str:
        flags = {spelling.lstrip("-"): spelling for spelling in self._option_string_actions}
        pairs = []
        for index, extra in enumerate(extras):
            if extra.startswith("-") and len(extra) > 1:
                name = extra.partition("=")[0]
                near = _close_matches(name.lstrip("-"), list(flags), n=1, cutoff=self.FLAG_CUTOFF)
                if near:
                    pairs.append((name, flags[near[0]]))
            elif index == 0 and given and extra == given[0] and self.commands:
                near = _close_matches(extra, self.commands, n=1, cutoff=0.6)
                if near:
                    pairs.append((extra, near[0]))
        if not pairs:
            return ""
        if len(pairs) == 1:
            return f" (did you mean {pairs[0][1]}?)"
        return " (did you mean " + ", ".join(f"{near} for {typed}" for typed, near in pairs) + "?)"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=36, width=min(100, _terminal_width()))

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if action.nargs == "?" and action.const is True:   # a boolean: -n, or -n=false
            return ", ".join(action.option_strings)
        return super()._format_action_invocation(action)


def _terminal_width() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return 100


def _option_help(option: Option) -> str:
    """The help line with the real default and the env var (argparse would show None: flags default to None
    so that an unset flag can fall back to its env var)."""
    default = option.default
    text = option.help.replace("%(default)g", f"{default:g}" if isinstance(default, float) else str(default))
    text = text.replace("%(default)s", str(default))
    if option.env:
        text += f" (env {option.env})"
    return text.replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog=PROG, commands=(CHECK_COMMAND, DASHBOARD_COMMAND, TOP_COMMAND, REPORT_COMMAND),
        usage=(f"%(prog)s [OPTIONS]\n       %(prog)s {CHECK_COMMAND} FILE\n"
               f"       %(prog)s {DASHBOARD_COMMAND} [-f FILE]\n       %(prog)s {TOP_COMMAND} [URL]"),
        description="DCGM GPU telemetry for Prometheus: a drop-in for dcgm-exporter that keeps every\n"
                    "sample DCGM takes between scrapes and serves window aggregates beside the last value.",
        epilog=EPILOG, formatter_class=_HelpFormatter, allow_abbrev=False, add_help=False,
    )
    general = parser.add_argument_group("general")
    general.add_argument("-h", "--help", action="help", help="show this help and exit")
    general.add_argument("-v", "--version", action="version", version=f"{PROG} {__version__}",
                         help="show the version and exit")
    groups = {key: parser.add_argument_group(title) for key, title in GROUPS.items()}
    for option in OPTIONS:
        kwargs: dict[str, Any] = {"dest": option.dest, "default": None, "help": _option_help(option),
                                  "type": option.parse, "metavar": option.metavar}
        if option.boolean:
            kwargs.update(nargs="?", const=True, metavar="true|false")
        if option.repeatable:
            kwargs.update(action="append")
        groups[option.group].add_argument(*option.flags, **kwargs)
    hidden = parser.add_argument_group("not implemented")
    for item in UNSUPPORTED:
        kwargs = {"dest": _unsupported_dest(item), "default": None, "help": argparse.SUPPRESS}
        if item.boolean:
            kwargs.update(nargs="?", const=True, type=parse_bool)
        hidden.add_argument(*item.flags, **kwargs)
    return parser


def go_style_argv(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """Go's flag package takes -name and --name alike; argparse needs the declared spelling."""
    known = set(parser._option_string_actions)
    out = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + list(argv[i:])
        name, eq, value = arg.partition("=")
        if name.startswith("-") and name not in known and len(name) > 1:
            bare = name.lstrip("-")
            for candidate in (f"--{bare}", f"-{bare}"):
                if candidate in known:
                    arg = candidate + eq + value
                    break
            else:
                arg = _unknown_long_flag(arg, name, parser)
        out.append(arg)
    return out


def _close_matches(word: str, possibilities: Sequence[str], n: int, cutoff: float) -> list[str]:
    import difflib  # imported when a flag is looked up, not by every run

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


def _unknown_long_flag(arg: str, name: str, parser: argparse.ArgumentParser) -> str:
    """A one-dash flag that is no flag but is near a long one (-no-hostnam) stays one unknown flag for argparse,
    which would read it as -n with the value o-hostnam; the error then names it as typed and suggests the flag."""
    if name.startswith("--") or len(name) < 4 or not isinstance(parser, SuggestingParser):
        return arg
    longs = [spelling.lstrip("-") for spelling in parser._option_string_actions if len(spelling.lstrip("-")) > 2]
    if not _close_matches(name[1:], longs, n=1, cutoff=SuggestingParser.FLAG_CUTOFF):
        return arg   # -c500 and the like: argparse's own reading
    parser.typed[f"-{arg}"] = arg
    return f"-{arg}"
