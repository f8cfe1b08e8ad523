"""The ``dcgm-collector`` command: dcgm-exporter's flags, env vars and signals.

A node running ``dcgm-exporter -f FILE -a :9400 ...`` runs ``dcgm-collector``
with the same flags and environment.  Flags beat environment variables,
which beat defaults; an empty environment variable counts as unset.  Boolean
values follow Go's strconv.ParseBool (1 t T TRUE true True / 0 f F FALSE false
False), and, as with Go's flag package, any option may be written with one or
two dashes (``-collectors``, ``--f``) and a value after ``=`` or as the next
argument.

Start-up order: counters file -> HTTP listener -> libdcgm -> targets.  A
target (dcgm_collector.target) is the embedded engine or one -r hostengine:
handle -> GPUs -> profiling support -> sampler -> exposition.  The listener
comes early so that a busy port fails before DCGM is touched; until the
targets exist /metrics and /health answer 503.  The embedded engine failing
to start is fatal, as it is for dcgm-exporter; a hostengine that cannot be
reached is not: its target keeps trying (and reconnects whenever a
connection is lost) while /health says why.

SIGTERM / SIGINT stop everything and exit 0.  SIGHUP re-reads the counters
file: a bad file is logged in one line and the running configuration keeps
serving; a good one gets a new sampler and exposition, swapped in at once.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import math
import os
import queue
import signal
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dcgm_collector import __version__
from dcgm_collector.counters import (
    CountersError,
    CounterSet,
    aggregations_argument,
    default_counters_path,
    load_counters,
)
from dcgm_collector.server import ListenError, MetricsServer, Unavailable, parse_listen_address
from dcgm_collector.singleflight import SingleFlight

__all__ = ["Config", "DeviceSelection", "main", "parse_bool", "parse_config", "parse_devices"]

log = logging.getLogger("dcgm_collector")

PROG = "dcgm-collector"
CHECK_COMMAND = "check-counters"
DASHBOARD_COMMAND = "dashboard"
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

DEFAULT_ADDRESS = ":9400"
DEFAULT_COLLECT_INTERVAL_MS = 1000     # dcgm-exporter: 30000 (see the help's epilog)
DEFAULT_WINDOW_MS = 300_000
DEFAULT_WINDOW_S = 15.0
DEFAULT_RETENTION_S = 900.0
DEFAULT_REMOTE = "localhost:5555"
EXPORTER_COUNTERS_PATH = "/etc/dcgm-exporter/default-counters.csv"

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class StartupError(Exception):
    """Start-up cannot go on; str() is the one line the user sees."""


# ---- value parsers (shared by flags and environment variables) ------------------------------

def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (use true or false, 1 or 0)")


def _positive_int(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {what}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0 {what}")
        return value
    return parse


def _positive_float(what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number of {what}")
        return value
    return parse


def _address(text: str) -> str:
    try:
        parse_listen_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text.strip()


def _log_format(text: str) -> str:
    if text not in ("text", "json"):
        raise argparse.ArgumentTypeError(f"{text!r}: choose text or json")
    return text


def _text(text: str) -> str:
    return text


def _gpu_id_type(text: str) -> str:
    value = text.strip()
    if value not in ("uid", "device-name"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a GPU id type (use uid or device-name)")
    return value


def _name_list(text: str | None) -> tuple[str, ...]:
    """A comma-separated list (flags given several times arrive joined by commas)."""
    return tuple(name.strip() for name in (text or "").split(",") if name.strip())


def _nonempty(what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"empty {what}")
        return text.strip()
    return parse


# ---- -d/--devices ------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceSelection:
    """What -d selects: ``f`` (flex), ``g`` (GPUs) or ``i`` (GPU instances); ids None means all."""

    kind: str
    ids: tuple[int, ...] | None = None

    def __str__(self) -> str:
        if self.ids is None:
            return self.kind
        return f"{self.kind}:{','.join(map(str, self.ids))}"


def parse_devices(text: str) -> DeviceSelection:
    """dcgm-exporter's device grammar: ``f``, ``g``, ``g:0,1``, ``g:0-3``, ``g:0,2-4``, ``i``, ``i:...``."""
    spec = text.strip()
    letter, colon, ranges = spec.partition(":")
    if ":" in ranges:
        raise argparse.ArgumentTypeError(f"{text!r}: only one ':<range>' is allowed")
    if letter == "f":
        if colon:
            raise argparse.ArgumentTypeError(f"{text!r}: the flex option 'f' takes no range")
        return DeviceSelection("f")
    if letter not in ("g", "i"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected f, g, g:<range>, i or i:<range> (a range is N, N-M or a comma list of them; "
            "g and i cannot be combined)")
    if not colon:
        return DeviceSelection(letter)
    ids: list[int] = []
    for item in ranges.split(","):
        ids.extend(_range_item(text, item))
    return DeviceSelection(letter, tuple(dict.fromkeys(ids)))


def _range_item(text: str, item: str) -> range:
    start, dash, end = item.strip().partition("-")
    if not start.isdigit() or (dash and not end.isdigit()):
        what = "an empty item" if not item.strip() else repr(item)
        raise argparse.ArgumentTypeError(f"{text!r}: {what} is not N or N-M")
    first, last = int(start), int(end) if dash else int(start)
    if last < first:
        raise argparse.ArgumentTypeError(f"{text!r}: range {item.strip()!r} runs backwards")
    return range(first, last + 1)


# ---- the option table ------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    dest: str
    flags: tuple[str, ...]
    env: str | None
    default: Any
    parse: Callable[[str], Any]
    help: str
    group: str
    metavar: str | None = None
    boolean: bool = False
    repeatable: bool = False     # may be given several times (argparse collects a list)


GROUPS = {
    "collection": "collection",
    "connection": "connection to DCGM",
    "devices": "devices",
    "window": "window aggregates (beside the last value dcgm-exporter serves)",
    "simulator": "simulator",
    "attribution": "Kubernetes and HPC job attribution",
    "web": "web",
    "logging": "logging",
}

OPTIONS: tuple[Option, ...] = (
    Option("collectors", ("-f", "--collectors"), "DCGM_EXPORTER_COLLECTORS", None, _nonempty("path"),
           "counters file (dcgm-exporter's counters.csv grammar, plus an optional 4th column "
           "min|max|avg) [default: the file shipped with the package]", "collection", "FILE"),
    Option("collect_interval_ms", ("-c", "--collect-interval"), "DCGM_EXPORTER_INTERVAL", DEFAULT_COLLECT_INTERVAL_MS,
           _positive_int("milliseconds"), "how often the sampler drains DCGM, in ms [default: %(default)s]",
           "collection", "MS"),
    Option("watch_interval_ms", ("--watch-interval",), "DCGM_COLLECTOR_WATCH_INTERVAL", None,
           _positive_float("milliseconds"),
           "how often DCGM samples each field, in ms; at most the collect interval "
           "[default: the collect interval]", "collection", "MS"),
    Option("retention_s", ("--retention",), "DCGM_COLLECTOR_RETENTION", DEFAULT_RETENTION_S,
           _positive_float("seconds"), "how much history the ring buffers keep, in s [default: %(default)g]",
           "collection", "S"),
    Option("xid_count_window_ms", ("-x", "--xid-count-window-size"), "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE",
           DEFAULT_WINDOW_MS, _positive_int("milliseconds"),
           "window of DCGM_EXP_XID_ERRORS_COUNT, in ms [default: %(default)s]", "collection", "MS"),
    Option("clock_events_count_window_ms", ("--clock-events-count-window-size",),
           "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", DEFAULT_WINDOW_MS, _positive_int("milliseconds"),
           "window of DCGM_EXP_CLOCK_EVENTS_COUNT, in ms [default: %(default)s]", "collection", "MS"),
    Option("no_hostname", ("-n", "--no-hostname"), "DCGM_EXPORTER_NO_HOSTNAME", False, parse_bool,
           "leave the hostname label out (it is $NODE_NAME, else the host's name)", "collection", "BOOL", True),
    Option("replace_blanks_in_model_name", ("-rbmn", "--replace-blanks-in-model-name"),
           "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", False, parse_bool,
           "write modelName with '-' for blanks (NVIDIA-H100-80GB-HBM3)", "collection", "BOOL", True),
    Option("remote", ("-r", "--remote-hostengine-info"), "DCGM_REMOTE_HOSTENGINE_INFO", None, _text,
           f"connect to an nv-hostengine (HOST:PORT, [IPv6]:PORT, /path/to.sock or unix:///path) instead of "
           f"running DCGM embedded; used only when given.  Give it several times (or a comma-separated list) "
           f"to collect from several hostengines, each labelled with its own hostname "
           f"[dcgm-exporter's nominal default: {DEFAULT_REMOTE}]",
           "connection", "ADDRESS", repeatable=True),
    Option("dcgm_lib", ("--dcgm-lib",), "DCGM_COLLECTOR_LIBDCGM", None, _nonempty("path"),
           "libdcgm.so.4 to load (a file or its directory) [default: the dynamic linker's search, then "
           "DCGM's install directories]", "connection", "PATH"),
    Option("devices", ("-d", "--devices"), "DCGM_EXPORTER_DEVICES_STR", DeviceSelection("f"), parse_devices,
           "GPUs to sample: f (all), g (all GPUs), g:0,1 or g:0-3 (those GPUs), i or i:0,2-4 (the GPUs holding "
           "those MIG instances; per-instance series come later) [default: f]", "devices", "SPEC"),
    Option("window_s", ("--window",), "DCGM_COLLECTOR_WINDOW", DEFAULT_WINDOW_S, _positive_float("seconds"),
           "length of the trailing window of the _min/_max/_avg families, in s [default: %(default)g]",
           "window", "S"),
    Option("aggregations", ("--aggregations",), "DCGM_COLLECTOR_AGGREGATIONS", (), aggregations_argument,
           "window families for every numeric row, e.g. max or min,max,avg, on top of each row's 4th column "
           "[default: none]", "window", "LIST"),
    Option("sim", ("--sim",), "DCGM_COLLECTOR_SIM", None, _nonempty("scenario"),
           "use the simulated libdcgm shipped with the package: N H100s, a scenario file, or the name of a "
           "shipped scenario (spikes, mixed, xid-burst, ...)", "simulator", "N|SCENARIO"),
    Option("kubernetes", ("-k", "--kubernetes"), "DCGM_EXPORTER_KUBERNETES", False, parse_bool,
           "label each GPU's series with the pod, namespace and container holding it, from the kubelet's "
           "pod-resources API (refreshed every 10 s, not per scrape)", "attribution", "BOOL", True),
    Option("kubernetes_gpu_id_type", ("--kubernetes-gpu-id-type",), "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "uid",
           _gpu_id_type, "how the device plugin names GPUs: uid (GPU-<uuid>, NVIDIA's device plugin) or "
           "device-name (nvidia<N>, GKE) [default: %(default)s]", "attribution", "TYPE"),
    Option("pod_resources_kubelet_socket", ("--pod-resources-kubelet-socket",), "DCGM_POD_RESOURCES_KUBELET_SOCKET",
           "/var/lib/kubelet/pod-resources/kubelet.sock", _nonempty("path"),
           "the kubelet's pod-resources socket [default: %(default)s]", "attribution", "PATH"),
    Option("nvidia_resource_names", ("--nvidia-resource-names",), "NVIDIA_RESOURCE_NAMES", None, _text,
           "extended resources that are GPUs besides nvidia.com/gpu and nvidia.com/mig-* (comma-separated, "
           "or give it several times), e.g. nvidia.com/a100", "attribution", "NAMES", repeatable=True),
    Option("hpc_job_mapping_dir", ("--hpc-job-mapping-dir",), "DCGM_HPC_JOB_MAPPING_DIR", None, _nonempty("path"),
           "directory of files named by GPU id, each listing the jobs on that GPU, one per line: every series "
           "of the GPU is served once per job with an hpc_job label", "attribution", "DIR"),
    Option("web_config_file", ("--web-config-file",), "DCGM_EXPORTER_WEB_CONFIG_FILE", None, _nonempty("path"),
           "exporter-toolkit web config: TLS (tls_server_config), client certificates, basic auth "
           "(basic_auth_users, bcrypt); checked at start", "web", "FILE"),
    Option("address", ("-a", "--address"), "DCGM_EXPORTER_LISTEN", DEFAULT_ADDRESS, _address,
           "listen address: :9400 (every interface, IPv6 and IPv4), 0.0.0.0:9400, 127.0.0.1:9400, [::1]:9400, "
           "localhost:9400 [default: %(default)s]", "web", "ADDRESS"),
    Option("debug", ("--debug",), "DCGM_EXPORTER_DEBUG", False, parse_bool, "log at debug level",
           "logging", "BOOL", True),
    Option("log_format", ("--log-format",), "DCGM_EXPORTER_LOG_FORMAT", "text", _log_format,
           "text or json [default: %(default)s]", "logging", "FORMAT"),
)


@dataclass(frozen=True)
class Unsupported:
    """A dcgm-exporter option this collector does not implement yet."""

    flags: tuple[str, ...]
    env: str | None
    boolean: bool
    default: str | None          # dcgm-exporter's default: giving it changes nothing, so no warning
    why: str
    refuse: bool = False         # True: serving without it would be wrong, not merely less


UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported(("--kubernetes-enable-pod-labels",), "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", True, None,
                "pod labels are not attached yet"),
    Unsupported(("--kubernetes-enable-pod-uid",), "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", True, None,
                "pod labels are not attached yet"),
    Unsupported(("--kubernetes-pod-label-allowlist-regex",), "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
                False, None, "pod labels are not attached yet"),
    Unsupported(("--kubernetes-virtual-gpus",), "KUBERNETES_VIRTUAL_GPUS", True, None,
                "per-pod copies of shared GPUs are not made yet"),
    Unsupported(("--kubernetes-enable-dra",), "KUBERNETES_ENABLE_DRA", True, None, "DRA labels are not attached yet"),
    Unsupported(("-s", "--switch-devices"), "DCGM_EXPORTER_OTHER_DEVICES_STR", False, "f",
                "NvSwitch metrics are not collected yet"),
    Unsupported(("-p", "--cpu-devices"), "DCGM_EXPORTER_CPU_DEVICES_STR", False, "f",
                "CPU metrics are not collected yet"),
    Unsupported(("--fake-gpus",), "DCGM_EXPORTER_USE_FAKE_GPUS", True, None, "fake GPUs are not made"),
    Unsupported(("--enable-dcgm-log",), "DCGM_EXPORTER_ENABLE_DCGM_LOG", True, None, "DCGM's own log is not relayed"),
    Unsupported(("--dcgm-log-level",), "DCGM_EXPORTER_DCGM_LOG_LEVEL", False, "NONE", "DCGM's own log is not relayed"),
    Unsupported(("--disable-startup-validate",), "DISABLE_STARTUP_VALIDATE", True, None,
                "there is no separate start-up validation to skip"),
    Unsupported(("--enable-gpu-bind-unbind-watch",), "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", True, None,
                "bind/unbind events are not watched yet"),
    Unsupported(("--gpu-bind-unbind-poll-interval",), "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", False, "1s",
                "bind/unbind events are not watched yet"),
    Unsupported(("--enable-pprof",), "DCGM_EXPORTER_ENABLE_PPROF", True, None, "there is no pprof endpoint"),
    Unsupported(("--dump-enabled",), "DCGM_EXPORTER_DUMP_ENABLED", True, None, "debug dumps are not written"),
    Unsupported(("--dump-directory",), "DCGM_EXPORTER_DUMP_DIRECTORY", False, "/tmp/dcgm-exporter-debug",
                "debug dumps are not written"),
    Unsupported(("--dump-retention",), "DCGM_EXPORTER_DUMP_RETENTION", False, "24", "debug dumps are not written"),
    Unsupported(("--dump-compression",), "DCGM_EXPORTER_DUMP_COMPRESSION", True, "true",
                "debug dumps are not written"),
    Unsupported(("--web-systemd-socket",), "DCGM_EXPORTER_SYSTEMD_SOCKET", True, None,
                "systemd socket activation is not supported yet; use -a", refuse=True),
    Unsupported(("-o", "--use-old-namespace"), "DCGM_EXPORTER_USE_OLD_NAMESPACE", True, None,
                "the old label names (uuid, pod_name, ...) are not written yet", refuse=True),
    Unsupported(("-m", "--configmap-data"), "DCGM_EXPORTER_CONFIGMAP_DATA", False, "none",
                "counters are not read from a ConfigMap yet; mount it as a file and use -f", refuse=True),
)


def _unsupported_dest(item: Unsupported) -> str:
    return "unsupported_" + item.flags[-1].lstrip("-").replace("-", "_")


EPILOG = f"""\
commands:
  {PROG} {CHECK_COMMAND} FILE   validate a counters file and list what it exports
  {PROG} {DASHBOARD_COMMAND} -f FILE   print a Grafana dashboard for that counters file

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
  -d i selects the GPUs that hold the listed MIG instances.
  -r may be given several times (or as a comma-separated list): one collector
     for several hostengines, each target's series labelled hostname=its host
     (its address where two targets share a host), dcgm_collector_* series too.
  A hostengine that goes away is reconnected with capped backoff while the
     collected samples are still served (dcgm_collector_up 0); dcgm-exporter
     exits.  An unreachable hostengine at start-up is retried, not fatal.

dcgm-exporter options not implemented yet:
  Accepted with a warning (the output only lacks what they add):
    -k/--kubernetes and the --kubernetes-*, --pod-resources-kubelet-socket,
    --nvidia-resource-names, --hpc-job-mapping-dir options; -s, -p,
    --fake-gpus, --enable-dcgm-log, --dcgm-log-level, --disable-startup-validate,
    --enable-gpu-bind-unbind-watch, --gpu-bind-unbind-poll-interval,
    --enable-pprof, --dump-*.
  Refused (serving without them would be wrong): --web-config-file (TLS, basic
    auth), --web-systemd-socket, -o/--use-old-namespace, -m/--configmap-data.
"""


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
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=(f"%(prog)s [OPTIONS]\n       %(prog)s {CHECK_COMMAND} FILE\n"
               f"       %(prog)s {DASHBOARD_COMMAND} [-f FILE]"),
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
        out.append(arg)
    return out


# ---- configuration ---------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    collectors: str
    collect_interval_ms: int
    watch_interval_ms: float | None
    retention_s: float
    xid_count_window_ms: int
    clock_events_count_window_ms: int
    no_hostname: bool
    replace_blanks_in_model_name: bool
    remote: str | None
    dcgm_lib: str | None
    devices: DeviceSelection
    window_s: float
    aggregations: tuple[str, ...]
    sim: str | None
    address: str
    debug: bool
    log_format: str
    hostname: str | None = None
    warnings: tuple[str, ...] = field(default=())
    remotes: tuple[str, ...] = ()          # -r addresses, one per target (remote: them joined by commas)
    target_names: tuple[str, ...] = ()     # each remote target's name: its hostname label, unique
    kubernetes: bool = False
    kubernetes_gpu_id_type: str = "uid"
    pod_resources_kubelet_socket: str = "/var/lib/kubelet/pod-resources/kubelet.sock"
    nvidia_resource_names: tuple[str, ...] = ()
    hpc_job_mapping_dir: str | None = None
    web_config_file: str | None = None


class ConfigError(Exception):
    """A bad flag or environment value; str() is one line."""

    exit_code = EXIT_USAGE


class AddressError(ConfigError):
    """A malformed -r / DCGM_REMOTE_HOSTENGINE_INFO address."""

    exit_code = EXIT_ERROR


def parse_config(argv: Sequence[str], environ: Mapping[str, str] | None = None,
                 parser: argparse.ArgumentParser | None = None) -> Config:
    """Flags, then environment, then defaults.  argparse exits on bad flags; ConfigError on bad env values."""
    environ = os.environ if environ is None else environ
    parser = parser or build_parser()
    args = parser.parse_args(go_style_argv(argv, parser))
    values: dict[str, Any] = {}
    for option in OPTIONS:
        value = getattr(args, option.dest)
        if option.repeatable and value is not None:
            value = ",".join(value)
        if value is None:
            value = _from_env(option.env, option.parse, environ, option.default)
        values[option.dest] = value
    warnings = _unsupported_options(args, environ)
    remotes = parse_remotes(values["remote"], "-r" if args.remote is not None else "DCGM_REMOTE_HOSTENGINE_INFO")
    values["remote"] = ",".join(a.text for a in remotes) or None
    values["nvidia_resource_names"] = _name_list(values["nvidia_resource_names"])
    if values["sim"] is not None and args.dcgm_lib is not None:
        raise ConfigError("give --sim or --dcgm-lib, not both")
    if values["watch_interval_ms"] is not None and values["watch_interval_ms"] > values["collect_interval_ms"]:
        raise ConfigError(f"--watch-interval {values['watch_interval_ms']:g} ms must not be longer than "
                          f"-c/--collect-interval {values['collect_interval_ms']} ms")
    if values["window_s"] > values["retention_s"]:
        raise ConfigError(f"--window {values['window_s']:g} s is longer than --retention {values['retention_s']:g} s: "
                          "the rings would not hold a whole window")
    if args.dcgm_lib is None:
        # dcgm.load_library reads DCGM_COLLECTOR_LIBDCGM itself, and its error then names the variable
        values["dcgm_lib"] = None
    if values["collectors"] is None:
        values["collectors"] = default_counters_path()
    names = target_names(remotes, environ)
    values["hostname"] = None if values["no_hostname"] else (names[0] if names else hostname_label(None, environ))
    return Config(**values, warnings=tuple(warnings), remotes=tuple(a.text for a in remotes),
                  target_names=tuple(names))


def _from_env(name: str | None, parse: Callable[[str], Any], environ: Mapping[str, str], default: Any) -> Any:
    if not name:
        return default
    raw = environ.get(name, "")
    if raw == "":
        return default
    try:
        return parse(raw)
    except (argparse.ArgumentTypeError, ValueError) as error:
        raise ConfigError(f"environment variable {name}: {error}") from None


def _unsupported_options(args: argparse.Namespace, environ: Mapping[str, str]) -> list[str]:
    warnings = []
    for item in UNSUPPORTED:
        value = getattr(args, _unsupported_dest(item))
        given_by = "/".join(item.flags)
        if value is None and item.env:
            raw = environ.get(item.env, "")
            if raw:
                value = parse_bool(raw) if item.boolean else raw
                given_by = f"{item.env}={raw}"
        if value is None or value is False or (item.default is not None and str(value).lower() == item.default.lower()):
            continue
        message = f"{given_by} is not supported yet: {item.why}"
        if item.refuse:
            raise ConfigError(message)
        warnings.append(f"ignoring {message}")
    return warnings


REMOTE_FORMS = "HOST, HOST:PORT, [IPv6]:PORT, tcp://HOST:PORT, /path/to.sock or unix:///path/to.sock"


@dataclass(frozen=True)
class RemoteAddress:
    text: str               # as given, stripped: what dcgmConnect gets
    host: str | None        # None for a unix socket


def parse_remotes(text: str | None, given_by: str) -> list[RemoteAddress]:
    """The comma-separated -r addresses; AddressError naming the bad one and the accepted forms."""
    if text is None:
        return []
    addresses = [parse_remote(part, given_by) for part in text.split(",")]
    seen: set[str] = set()
    for address in addresses:
        if address.text in seen:
            raise AddressError(f"{given_by}: hostengine address {address.text!r} is given twice")
        seen.add(address.text)
    return addresses


def parse_remote(text: str, given_by: str = "-r") -> RemoteAddress:
    """One hostengine address, in the forms dcgm-exporter (DCGM) accepts."""
    value = text.strip()

    def bad(why: str) -> AddressError:
        return AddressError(f"{given_by}: bad hostengine address {text!r}: {why}; expected {REMOTE_FORMS}")

    if not value:
        raise bad("empty")
    scheme, sep, rest = value.partition("://")
    if sep:
        if scheme.lower() == "unix":
            if not rest:
                raise bad("no socket path after unix://")
            return RemoteAddress(value, None)
        if scheme.lower() != "tcp":
            raise bad(f"unknown scheme {scheme}://")
        if not rest:
            raise bad("no host after tcp://")
        return RemoteAddress(value, _host_of(rest, bad))
    if value.startswith("/"):
        return RemoteAddress(value, None)
    return RemoteAddress(value, _host_of(value, bad))


def _host_of(text: str, bad: Callable[[str], AddressError]) -> str:
    """The host of HOST, HOST:PORT, [IPv6], [IPv6]:PORT or a bare IPv6 address."""
    port: str | None = None
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise bad("no closing ']'")
        host, rest = text[1:close], text[close + 1:]
        if not _is_ipv6(host):
            raise bad(f"{host!r} is not an IPv6 address")
        if rest:
            if not rest.startswith(":"):
                raise bad(f"{rest!r} after ']' (write [IPv6]:PORT)")
            port = rest[1:]
    elif text.count(":") >= 2:
        if not _is_ipv6(text):
            raise bad("an IPv6 address with a port is written [ADDRESS]:PORT")
        host = text
    else:
        host, colon, rest = text.partition(":")
        port = rest if colon else None
        if not host:
            raise bad("no host")
        if any(c.isspace() or c in "/[]@" for c in host):
            raise bad(f"{host!r} is not a host name")
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise bad(f"port {port!r} is not a number from 1 to 65535")
    return host


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


def target_names(remotes: Sequence[RemoteAddress], environ: Mapping[str, str]) -> list[str]:
    """Each target's hostname label: its host (unix sockets: this host); the address where two would clash."""
    local = environ.get("NODE_NAME") or socket.gethostname()
    names = [address.host or local for address in remotes]
    return [address.text if names.count(name) > 1 else name for address, name in zip(remotes, names)]


def hostname_label(remote: str | None, environ: Mapping[str, str]) -> str:
    """The hostname label as dcgm-exporter picks it: -r's host in remote mode, else $NODE_NAME, else the host name."""
    if remote:
        host = remote_host(remote)
        if host:
            return host
    return environ.get("NODE_NAME") or socket.gethostname()


def remote_host(remote: str) -> str | None:
    """The host part of a -r address; None for a unix socket."""
    text = remote.strip()
    scheme, sep, rest = text.partition("://")
    if sep:
        if scheme.lower() == "unix":
            return None
        text = rest
    if text.startswith("/"):
        return None
    if text.startswith("["):
        close = text.find("]")
        return text[1:close] if close > 0 else None
    host, _, _ = text.partition(":") if text.count(":") == 1 else (text, "", "")
    return host or None


# ---- logging --------------------------------------------------------------------------------

class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "msg": record.getMessage()}
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def _setup_logging(config: Config) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if config.log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if config.debug else logging.INFO)


# ---- check-counters ---------------------------------------------------------------------

def _kind(counter) -> str:
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
    parser = argparse.ArgumentParser(
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
    return EXIT_OK


def _counters_table(counters: CounterSet) -> str:
    header = ("LINE", "NAME", "TYPE", "FIELD", "KIND", "AGGREGATIONS")
    rows = [header]
    for c in counters:
        field_id = "-" if c.field is None else str(c.field.id)
        rows.append((str(c.line), c.name, c.prom_type, field_id, _kind(c), "|".join(c.aggregations) or "-"))
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


# ---- the running collector ---------------------------------------------------------------

class Collector:
    """Owns the server and the targets (the embedded engine, or one per -r hostengine)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.server: MetricsServer | None = None
        self.library = None
        self.targets: list[Any] = []
        self.exposition: Any = None     # MultiExposition over the targets, once they exist
        self.pods: Any = None           # PodMapper (-k)
        self.attribution: Any = None    # GpuAttribution (-k, --hpc-job-mapping-dir), or None
        self._renders: SingleFlight[bytes] = SingleFlight()

    # -- what the server calls (on request threads)
    def metrics(self, openmetrics: bool) -> bytes:
        exposition = self.exposition
        if exposition is None:
            raise Unavailable("starting: no sampler yet")
        return self._renders.do((id(exposition), openmetrics), lambda: exposition.render(openmetrics))

    def health(self) -> tuple[bool, str]:
        exposition = self.exposition
        if exposition is None:
            return False, "starting: no sampler yet"
        return exposition.health()

    def observe_scrape(self, seconds: float) -> None:
        exposition = self.exposition
        if exposition is not None:
            exposition.observe_scrape(seconds)

    # -- start-up
    def start(self) -> None:
        from dcgm_collector.exposition import MultiExposition, library_version

        config = self.config
        counters = self._read_counters()
        web = self._read_web_config()
        self.server = MetricsServer(config.address, self.metrics, self.health, self.observe_scrape,
                                    **(web.server_options() if web is not None else {}))
        try:
            self.server.start()
        except ListenError as error:
            self.server = None
            raise StartupError(str(error)) from None
        self.library = self._load_library()
        self.attribution = self._start_attribution()
        self.targets = self._make_targets(counters)
        for target in self.targets:
            self._start_target(target)
        self.exposition = MultiExposition(self.targets, version=__version__,
                                          library_version=library_version(self.library))
        for target in self.targets:
            if target.remote:
                log.info("collecting %d rows of %s from the hostengine at %s every %d ms (hostname %s)",
                         len(counters), counters.path, target.address, config.collect_interval_ms, target.name)
            else:
                log.info("collecting %d rows of %s on GPUs %s every %d ms", len(counters), counters.path,
                         ",".join(map(str, target.generation.sampler.gpu_ids)), config.collect_interval_ms)
        log.info("serving %s%s", self.server.describe(), f" with {web.describe()}" if web is not None else "")

    def _read_web_config(self):
        from dcgm_collector.webconfig import WebConfigError, load

        path = self.config.web_config_file
        if path is None:
            return None
        try:
            return load(path)
        except WebConfigError as error:
            raise StartupError(str(error)) from None

    def _start_attribution(self):
        from dcgm_collector.attribution import GpuAttribution
        from dcgm_collector.hpc import HpcJobMapper
        from dcgm_collector.podresources import PodMapper

        config = self.config
        if len(config.remotes) > 1 and (config.kubernetes or config.hpc_job_mapping_dir):
            # the kubelet and the job directory describe this node, not the others'
            log.warning("-k and --hpc-job-mapping-dir describe this node only: ignored with several -r hostengines")
            return None
        jobs = HpcJobMapper(config.hpc_job_mapping_dir) if config.hpc_job_mapping_dir else None
        if config.kubernetes:
            self.pods = PodMapper(config.pod_resources_kubelet_socket, config.kubernetes_gpu_id_type,
                                  config.nvidia_resource_names)
            self.pods.start()
            log.info("pod labels from the kubelet at %s (GPU ids: %s), refreshed every %g s",
                     config.pod_resources_kubelet_socket, config.kubernetes_gpu_id_type, self.pods.refresh_s)
        if jobs is not None:
            log.info("hpc_job labels from %s, re-read every %g s", jobs.directory, jobs.refresh_s)
        if self.pods is None and jobs is None:
            return None
        return GpuAttribution(self.pods, jobs)

    def _read_counters(self) -> CounterSet:
        path = self.config.collectors
        try:
            return load_counters(path)
        except CountersError as error:
            raise StartupError(str(error)) from None
        except OSError as error:
            raise StartupError(f"{path}: cannot read counters file: {error.strerror or error}") from None

    def _load_library(self):
        from dcgm_collector import dcgm, sim

        config = self.config
        try:
            if config.sim is not None:
                spec = _scenario_spec(config.sim)
                try:
                    sim.check_scenario(spec)
                except ValueError as error:
                    raise StartupError(f"--sim {config.sim}: {error}") from None
                os.environ[sim.SCENARIO_ENV] = spec
                return dcgm.load_library(sim.library_path())
            return dcgm.load_library(config.dcgm_lib)
        except dcgm.LibraryNotFoundError as error:
            raise StartupError(error.message) from None
        except (dcgm.DcgmError, FileNotFoundError, ValueError) as error:
            raise StartupError(f"cannot load libdcgm: {error}") from None

    def _make_targets(self, counters: CounterSet) -> list:
        from dcgm_collector.dcgm import Handle
        from dcgm_collector.target import CONNECT_TIMEOUT_MS, Target

        config, library = self.config, self.library
        options = {"collect_interval_ms": config.collect_interval_ms, "watch_interval_ms": config.watch_interval_ms,
                   "retention_s": config.retention_s}

        def make(name: str, address: str | None, connect) -> Target:
            hostname = None if config.no_hostname else name
            return Target(name, counters, connect=connect, discover=self._discover,
                          expose=lambda sampler, gpus: self._expose(sampler, gpus, hostname),
                          sampler_options=options, address=address)

        if not config.remotes:
            name = config.hostname or hostname_label(None, os.environ)
            return [make(name, None, lambda: self._open_embedded(library))]
        return [make(name, address, lambda address=address: Handle.connect(
                    address, timeout_ms=CONNECT_TIMEOUT_MS, library=library))
                for address, name in zip(config.remotes, config.target_names)]

    def _start_target(self, target) -> None:
        from dcgm_collector.dcgm import DcgmError
        from dcgm_collector.target import TargetError

        try:
            target.start()
        except TargetError as error:
            raise StartupError(str(error)) from None
        except (DcgmError, RuntimeError, ValueError) as error:
            raise StartupError(f"cannot start sampling: {error}") from None

    @staticmethod
    def _open_embedded(library):
        from dcgm_collector import dcgm

        try:
            return dcgm.Handle.embedded(library=library)
        except (dcgm.DcgmError, ValueError) as error:
            raise StartupError(f"cannot start DCGM embedded: {error}") from None

    def _discover(self, handle, counters: CounterSet):
        """The GPUs -d selects on this handle's node, and the counters they support."""
        from dcgm_collector.target import Topology

        gpu_ids = select_gpus(handle, self.config.devices)
        counters = drop_unsupported_profiling(handle, counters, gpu_ids)
        ids = gpu_ids if gpu_ids is not None else handle.gpu_ids(supported_only=True)
        by_id = {gpu.gpu_id: gpu for gpu in handle.gpus()}
        return Topology(tuple(ids), tuple(by_id[gpu] for gpu in ids if gpu in by_id), counters)

    def _expose(self, sampler, gpus, hostname: str | None):
        from dcgm_collector.exposition import Exposition, ExpositionOptions

        config = self.config
        options = ExpositionOptions(
            window_s=config.window_s, aggregations=config.aggregations, hostname=hostname,
            replace_blanks_in_model_name=config.replace_blanks_in_model_name,
            xid_count_window_ms=config.xid_count_window_ms,
            clock_events_count_window_ms=config.clock_events_count_window_ms,
            attribution=self.attribution,
        )
        return Exposition(sampler, gpus, options, version=__version__)

    # -- reload
    def reload(self) -> bool:
        """Re-read the counters file; on any problem the running configuration keeps serving."""
        try:
            counters = self._read_counters()
        except StartupError as error:
            log.error("reload failed, still serving the previous counters: %s", error)
            return False
        ok = all([target.reload(counters) for target in self.targets])
        if ok:
            log.info("reloaded %d metrics from %s", len(counters), self.config.collectors)
        return ok

    # -- shutdown
    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.pods is not None:
            self.pods.stop()
            self.pods = None
        for target in self.targets:
            target.request_stop()   # all at once: a supervisor may be inside a connect attempt
        for target in reversed(self.targets):
            target.stop()


def select_gpus(handle, selection: DeviceSelection) -> list[int] | None:
    """GPU ids -d selects on the handle's node (None: every supported GPU); TargetError for ids it lacks."""
    from dcgm_collector.target import TargetError

    present = handle.gpu_ids(supported_only=False)
    if selection.kind == "i":
        return _gpus_of_instances(handle, selection)
    if selection.kind == "f" or selection.ids is None:
        return None
    missing = [gpu for gpu in selection.ids if gpu not in present]
    if missing:
        raise TargetError(f"-d {selection}: no GPU {', '.join(map(str, missing))} on this node "
                          f"(it has {_id_ranges(present) or 'none'})")
    return list(selection.ids)


def _gpus_of_instances(handle, selection: DeviceSelection) -> list[int]:
    from dcgm_collector.target import TargetError

    instances = {row.entity_id: row.parent_id for row in handle.mig_hierarchy()
                 if row.nvml_compute_instance_id == 0xFFFFFFFF}
    if not instances:
        raise TargetError(f"-d {selection}: no GPU has MIG instances on this node; use -d f or -d g")
    wanted = sorted(instances) if selection.ids is None else list(selection.ids)
    missing = [i for i in wanted if i not in instances]
    if missing:
        raise TargetError(f"-d {selection}: no GPU instance {', '.join(map(str, missing))} "
                          f"(there are {_id_ranges(sorted(instances))})")
    log.warning("-d %s: MIG instances are not sampled on their own yet; sampling the GPUs that hold them",
                selection)
    return list(dict.fromkeys(instances[i] for i in wanted))


def drop_unsupported_profiling(handle, counters: CounterSet, gpu_ids: Sequence[int] | None) -> CounterSet:
    """The counters without the profiling rows the node's GPUs lack (each dropped with a warning)."""
    from dcgm_collector import dcgm

    if not any(c.field is not None and c.field.is_profiling for c in counters):
        return counters
    gpu = (gpu_ids or handle.gpu_ids(supported_only=True) or [0])[0]
    try:
        supported = handle.supported_profiling_fields(gpu)
    except dcgm.DcgmError as error:
        if error.code in _connection_codes():
            raise
        log.warning("cannot ask DCGM which profiling metrics GPU %d has (%s); skipping profiling rows", gpu, error)
        supported = frozenset()
    return counters.without_unsupported_profiling(supported, warn=log.warning)


def _connection_codes() -> frozenset[int]:
    from dcgm_collector.sampler import CONNECTION_CODES

    return CONNECTION_CODES


def _scenario_spec(spec: str) -> str:
    """A GPU count or a scenario file as given; a bare name picks a scenario shipped with the package."""
    if spec.isdigit() or os.path.exists(spec) or "/" in spec:
        return spec
    from dcgm_collector import sim

    shipped = Path(sim.__file__).resolve().parent / "scenarios" / (spec if spec.endswith(".toml") else f"{spec}.toml")
    return str(shipped) if shipped.is_file() else spec


def _id_ranges(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    parts = []
    start = prev = None
    for i in ids + [None]:
        if start is None:
            start = prev = i
        elif i is not None and i == prev + 1:
            prev = i
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    return ",".join(parts)


# ---- signals and the main loop -----------------------------------------------------------

def _install_signals(events: queue.SimpleQueue) -> None:
    def handler(signum: int, _frame: Any) -> None:
        events.put(signum)   # SimpleQueue.put is safe in a signal handler; the main loop does the work

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, handler)


def serve(config: Config) -> int:
    events: queue.SimpleQueue = queue.SimpleQueue()
    _install_signals(events)
    collector = Collector(config)
    try:
        try:
            collector.start()
        except StartupError as error:
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return EXIT_ERROR
        except Exception as error:
            log.debug("start-up failed", exc_info=True)
            print(f"{PROG}: error: start-up failed: {type(error).__name__}: {error}", file=sys.stderr)
            return EXIT_ERROR
        while True:
            try:
                signum = events.get(timeout=1.0)
            except queue.Empty:
                continue
            if signum == signal.SIGHUP:
                collector.reload()
                continue
            log.info("%s: shutting down", signal.Signals(signum).name)
            return EXIT_OK
    finally:
        collector.stop()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == CHECK_COMMAND:
        return check_counters(argv[1:])
    if argv and argv[0] == DASHBOARD_COMMAND:
        from dcgm_collector.dashboard import main as dashboard_main

        return dashboard_main(argv[1:])
    parser = build_parser()
    try:
        config = parse_config(argv, os.environ, parser)
    except ConfigError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_code
    _setup_logging(config)
    for warning in config.warnings:
        log.warning("%s", warning)
    return serve(config)


if __name__ == "__main__":
    sys.exit(main())
