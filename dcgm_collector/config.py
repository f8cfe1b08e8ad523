"""The command line's flags and environment variables, turned into one typed :class:`Config`.

A node running ``dcgm-exporter -f FILE -a :9400 ...`` runs ``dcgm-collector``
with the same flags and environment.  Flags beat environment variables,
which beat defaults; an empty environment variable counts as unset.

The options themselves live in dcgm_collector.options: the value parsers
(options.values), the table of flags (options.table) and the argparse parser
with its help (options.parser).  This module reads them into a Config, checks
the values that only make sense together, and parses the -r hostengine
addresses and the hostname label; it re-exports the names the rest of the
package imports from here.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dcgm_collector.attribution.checkpoint import DEFAULT_DEVICE_CHECKPOINT
from dcgm_collector.catalog.counters import default_counters_path
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.model import DeviceSelection
from dcgm_collector.options.parser import (
    CHECK_COMMAND,
    DASHBOARD_COMMAND,
    EPILOG,
    EXPORTER_COUNTERS_PATH,
    PROG,
    REPORT_COMMAND,
    TOP_COMMAND,
    build_parser,
    go_style_argv,
)
from dcgm_collector.options.table import (
    DEFAULT_ADDRESS,
    DEFAULT_REMOTE,
    GROUPS,
    MAX_COUNT_WINDOW_MS,
    OPTIONS,
    UNSUPPORTED,
    Option,
    Unsupported,
    _unsupported_dest,
)
from dcgm_collector.options.values import MAX_DEVICE_ID, parse_bool, parse_devices
from dcgm_collector.push.options import DEFAULT_AFTER_S as DEFAULT_RECORDER_AFTER_S
from dcgm_collector.push.options import DEFAULT_BEFORE_S as DEFAULT_RECORDER_BEFORE_S
from dcgm_collector.push.options import DEFAULT_MAX_BYTES as DEFAULT_RECORDER_MAX_BYTES
from dcgm_collector.series.idle import DEFAULT_HELD_FB_MIB, DEFAULT_UTIL_BELOW
from dcgm_collector.series.processes import DEFAULT_TOP as DEFAULT_PROCESSES_TOP
from dcgm_collector.series.warnings import WarningThresholds

_WARN = WarningThresholds()   # the early warnings' defaults

# the names from dcgm_collector.options are listed too: the rest of the package and the tests import them from here
__all__ = [
    "CHECK_COMMAND", "DASHBOARD_COMMAND", "DEFAULT_ADDRESS", "DEFAULT_REMOTE", "EPILOG", "EXPORTER_COUNTERS_PATH",
    "GROUPS", "MAX_COUNT_WINDOW_MS", "MAX_DEVICE_ID", "OPTIONS", "PROG", "REPORT_COMMAND", "TOP_COMMAND",
    "UNSUPPORTED", "Config",
    "ConfigError",
    "DeviceSelection", "Option", "Unsupported", "build_parser", "go_style_argv", "parse_bool", "parse_config",
    "parse_devices",
]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


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
    nvml: bool
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
    kubernetes_device_checkpoint: str = DEFAULT_DEVICE_CHECKPOINT   # --kubernetes-device-checkpoint
    nvidia_resource_names: tuple[str, ...] = ()
    hpc_job_mapping_dir: str | None = None
    web_config_file: str | None = None
    use_old_namespace: bool = False
    switch_devices: DeviceSelection = DeviceSelection("f")
    cpu_devices: DeviceSelection = DeviceSelection("f")
    remote_write_urls: tuple[str, ...] = ()
    remote_write_username: str | None = None
    remote_write_password_file: str | None = None
    remote_write_bearer_token_file: str | None = None
    remote_write_ca_file: str | None = None
    remote_write_cert_file: str | None = None
    remote_write_key_file: str | None = None
    remote_write_batch_size: int = 2000
    remote_write_flush_interval_s: float = 1.0
    remote_write_queue_limit: int = 100_000
    remote_write_timeout_s: float = 10.0
    remote_write_labels: tuple[tuple[str, str], ...] = ()
    recorder_dir: str | None = None
    recorder_before_s: float = DEFAULT_RECORDER_BEFORE_S
    recorder_after_s: float = DEFAULT_RECORDER_AFTER_S
    recorder_max_bytes: int = DEFAULT_RECORDER_MAX_BYTES
    processes: bool = False                # --processes: per-process series
    processes_top: int = DEFAULT_PROCESSES_TOP   # --processes-top
    idle_util_below: float = DEFAULT_UTIL_BELOW     # --idle-util-below: % under which a sampled GPU is idle
    idle_held_fb_mib: float = DEFAULT_HELD_FB_MIB   # --idle-held-fb-mib: MiB its processes hold to make it held
    early_warnings: bool = False           # --warnings: the early-warning reader
    warn_sbe_rate: float = _WARN.sbe_rate
    warn_sbe_acceleration: float = _WARN.sbe_acceleration
    warn_pcie_ber: float = _WARN.pcie_ber
    warn_nvlink_crc_rate: float = _WARN.nvlink_crc_rate
    warn_thermal_margin_c: float = _WARN.thermal_margin_c
    warn_thermal_lead_s: float = _WARN.thermal_lead_s
    warn_hw_slowdown_events: int = _WARN.hw_slowdown_events
    warn_power_over_limit_s: float = _WARN.power_over_limit_s
    warn_hold_s: float = _WARN.hold_s
    dcgm: bool = False                     # --dcgm: DCGM's library from the search, no fallback to NVML
    source_flag: str | None = None         # the flag or variable that chose the source, as given; None: automatic

    @property
    def warning_thresholds(self) -> WarningThresholds:
        return WarningThresholds(
            sbe_rate=self.warn_sbe_rate, sbe_acceleration=self.warn_sbe_acceleration, pcie_ber=self.warn_pcie_ber,
            nvlink_crc_rate=self.warn_nvlink_crc_rate, thermal_margin_c=self.warn_thermal_margin_c,
            thermal_lead_s=self.warn_thermal_lead_s, hw_slowdown_events=self.warn_hw_slowdown_events,
            power_over_limit_s=self.warn_power_over_limit_s, hold_s=self.warn_hold_s)

    @property
    def sampling(self) -> SamplingOptions:
        return SamplingOptions(self.collect_interval_ms, self.watch_interval_ms, self.retention_s)


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
        if option.listed:
            value = tuple(value) if value is not None else _listed_from_env(option, environ)
        elif option.repeatable and value is not None:
            value = ",".join(value)
        if value is None:
            value = _from_env(option.env, option.parse, environ, option.default)
        values[option.dest] = value
    warnings = _unsupported_options(args, environ)
    remotes = parse_remotes(values["remote"], "-r" if args.remote is not None else "DCGM_REMOTE_HOSTENGINE_INFO")
    values["remote"] = ",".join(a.text for a in remotes) or None
    values["nvidia_resource_names"] = _name_list(values["nvidia_resource_names"])
    values["source_flag"] = _source_flag(args, values, environ)
    try:
        SamplingOptions(values["collect_interval_ms"], values["watch_interval_ms"], values["retention_s"])
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None
    if values["window_s"] > values["retention_s"]:
        raise ConfigError(f"--window {values['window_s']:g} s is longer than --retention {values['retention_s']:g} s: "
                          "the rings would not hold a whole window")
    if values["recorder_dir"] is not None:
        window = values["recorder_before_s"] + values["recorder_after_s"]
        if window > values["retention_s"]:
            raise ConfigError(f"--recorder-before {values['recorder_before_s']:g} s + --recorder-after "
                              f"{values['recorder_after_s']:g} s is longer than --retention {values['retention_s']:g} "
                              "s: the rings would not hold a recording's window")
    if args.dcgm_lib is None:
        # dcgm.load_library reads DCGM_COLLECTOR_LIBDCGM itself, and its error then names the variable
        values["dcgm_lib"] = None
    if values["collectors"] is None:
        values["collectors"] = default_counters_path()
    _check_remote_write(values)
    names = target_names(remotes, environ)
    if values["kubernetes"] and len(names) == 1:
        # as dcgm-exporter under --kubernetes: the node's name, not the hostengine's (a node-local Service
        # such as the GPU Operator's nvidia-dcgm would otherwise label every node's series alike)
        names = [environ.get("NODE_NAME") or socket.gethostname()]
    values["hostname"] = None if values["no_hostname"] else (names[0] if names else hostname_label(None, environ))
    for name in (values["hostname"], *names):
        _check_label_text(name, environ)
    return Config(**values, warnings=tuple(warnings), remotes=tuple(a.text for a in remotes),
                  target_names=tuple(names))


# The options that choose where the readings come from, and the pairs of them that contradict each other:
# -r reaches a hostengine through a libdcgm, which --dcgm, --dcgm-lib or --sim may name; NVML has no hostengine.
_SOURCE_OPTIONS = ("nvml", "dcgm", "sim", "dcgm_lib", "remote")
_CLASHES = (("nvml", "dcgm"), ("nvml", "sim"), ("nvml", "dcgm_lib"), ("nvml", "remote"), ("dcgm", "sim"),
            ("sim", "dcgm_lib"))


def _source_flag(args: argparse.Namespace, values: dict[str, Any], environ: Mapping[str, str]) -> str | None:
    """How the source was named (-r, --dcgm-lib, --dcgm, --sim or --nvml, with its value, as the user gave it),
    or None when the collector chooses; ConfigError naming both when two of them contradict each other."""
    named: dict[str, tuple[str, str]] = {}   # dest -> (the flag or VARIABLE=value, the same with the flag's value)
    for option in OPTIONS:
        value = values.get(option.dest) if option.dest in _SOURCE_OPTIONS else None
        if value is None or value is False or (option.dest == "dcgm_lib" and args.dcgm_lib is None):
            continue   # DCGM_COLLECTOR_LIBDCGM only says where libdcgm is (dcgm.load_library reads it)
        # -r's addresses are named on every line about their targets: the flag alone says it chose
        bare = option.boolean or option.dest == "remote"
        if getattr(args, option.dest) is not None:
            flag = option.flags[0]
            named[option.dest] = (flag, flag if bare else f"{flag} {value}")
        else:
            variable = f"{option.env}={environ.get(option.env or '', '')}"
            named[option.dest] = (variable, option.env if option.dest == "remote" else variable)
    for first, second in _CLASHES:
        if first in named and second in named:
            raise ConfigError(f"{named[first][0]} and {named[second][0]} each choose where the readings come from: "
                              "give one of them")
    return next((named[dest][1] for dest in ("remote", "dcgm_lib", "dcgm", "sim", "nvml") if dest in named), None)


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


def _name_list(text: str | None) -> tuple[str, ...]:
    """A comma-separated list (flags given several times arrive joined by commas)."""
    return tuple(name.strip() for name in (text or "").split(",") if name.strip())


def _listed_from_env(option: Option, environ: Mapping[str, str]) -> tuple[Any, ...]:
    raw = environ.get(option.env or "", "")
    return tuple(_from_env(option.env, option.parse, {option.env or "": item}, None)
                 for item in raw.split(",") if item.strip())


def _check_remote_write(values: dict[str, Any]) -> None:
    """The --remote-write-* flags that only make sense together (checked when there is a receiver)."""
    if not values["remote_write_urls"]:
        return
    names = [name for name, _ in values["remote_write_labels"]]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"--remote-write-label: {', '.join(repeated)} given twice")
    if len(set(values["remote_write_urls"])) != len(values["remote_write_urls"]):
        raise ConfigError("--remote-write-url: a URL is given twice")
    if values["remote_write_password_file"] and not values["remote_write_username"]:
        raise ConfigError("--remote-write-password-file needs --remote-write-username")
    if values["remote_write_username"] and values["remote_write_bearer_token_file"]:
        raise ConfigError("give --remote-write-username or --remote-write-bearer-token-file, not both")
    if bool(values["remote_write_cert_file"]) != bool(values["remote_write_key_file"]):
        raise ConfigError("--remote-write-cert-file and --remote-write-key-file go together")


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
        if item.refuse:
            raise ConfigError(f"{given_by} cannot be used: {item.why}")
        warnings.append(f"{given_by} is ignored: {item.why}")
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


def _check_label_text(value: str | None, environ: Mapping[str, str]) -> None:
    """A hostname label must be text the exposition can write (UTF-8, no control characters)."""
    if value is None:
        return
    where = "NODE_NAME" if environ.get("NODE_NAME") == value else "the host name"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise ConfigError(f"{where} {shown!r} is not UTF-8 text, so it cannot be the hostname label; "
                          "set NODE_NAME to the node's name, or give -n to leave the label out") from None
    if any(not c.isprintable() for c in value):
        raise ConfigError(f"{where} {value!r} holds control characters, so it cannot be the hostname label; "
                          "set NODE_NAME to the node's name, or give -n to leave the label out")


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


