"""The command line's flags and environment variables, turned into one typed :class:`Config`.

A node running ``dcgm-exporter -f FILE -a :9400 ...`` runs ``dcgm-collector``
with the same flags and environment.  Flags beat environment variables,
which beat defaults; an empty environment variable counts as unset.  Boolean
values follow Go's strconv.ParseBool (1 t T TRUE true True / 0 f F FALSE false
False), and, as with Go's flag package, any option may be written with one or
two dashes (``-collectors``, ``--f``) and a value after ``=`` or as the next
argument.

One table (:data:`OPTIONS`) gives each option its flags, variable, default,
parser and help; the defaults of the sampling and window options come from
the modules that use them (collect.options, expose.options).
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import socket
import sys
import textwrap
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dcgm_collector import __version__
from dcgm_collector.collect.counters import aggregations_argument, default_counters_path
from dcgm_collector.collect.options import (
    DEFAULT_COLLECT_INTERVAL_MS,
    DEFAULT_RETENTION_S,
    MAX_INTERVAL_MS,
    SamplingOptions,
)
from dcgm_collector.expose.options import DEFAULT_COUNT_WINDOW_MS, DEFAULT_WINDOW_S
from dcgm_collector.model import DeviceSelection
from dcgm_collector.numbers import parse_decimal, parse_whole
from dcgm_collector.push.options import DEFAULT_AFTER_S as DEFAULT_RECORDER_AFTER_S
from dcgm_collector.push.options import DEFAULT_BEFORE_S as DEFAULT_RECORDER_BEFORE_S
from dcgm_collector.push.options import DEFAULT_MAX_BYTES as DEFAULT_RECORDER_MAX_BYTES
from dcgm_collector.serve.addresses import parse_listen_address

__all__ = ["Config", "ConfigError", "DeviceSelection", "build_parser", "parse_bool", "parse_config", "parse_devices"]

PROG = "dcgm-collector"
CHECK_COMMAND = "check-counters"
DASHBOARD_COMMAND = "dashboard"
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

DEFAULT_ADDRESS = ":9400"
DEFAULT_REMOTE = "localhost:5555"
EXPORTER_COUNTERS_PATH = "/etc/dcgm-exporter/default-counters.csv"
# -x and --clock-events-count-window-size: a week is far past any alert's window (dcgm-exporter: 5 min)
MAX_COUNT_WINDOW_MS = 7 * 24 * 3600 * 1000

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


# ---- value parsers (shared by flags and environment variables) ------------------------------

def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (use true or false, 1 or 0)")


def _positive_int(what: str, most: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = parse_whole(text.strip(), signed=True)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {what} (ASCII digits)") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0 {what}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{text!r}: must be at most {most} {what}")
        return value
    return parse


def _positive_float(what: str, most: float | None = None) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = parse_decimal(text.strip(), signed=True)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what} (ASCII digits, finite)") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number of {what}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{text!r}: must be at most {most:g} {what}")
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


# ---- --remote-write-* -------------------------------------------------------------------------

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _remote_write_url(text: str) -> str:
    value = text.strip()
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port   # noqa: B018 -- raises on a bad port
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise argparse.ArgumentTypeError(f"{text!r}: the URL must start with http:// or https://")
    if not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r}: the URL has no host")
    if parts.fragment:
        raise argparse.ArgumentTypeError(f"{text!r}: a receiver URL has no #fragment")
    return value


def _remote_write_label(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
        raise argparse.ArgumentTypeError(f"{text!r}: {name!r} is not a label name (letters, digits and _, not "
                                         "starting with a digit or __)")
    if not value or any(not c.isprintable() for c in value):
        raise argparse.ArgumentTypeError(f"{text!r}: the value must be printable text, not empty")
    return name, value


# ---- -d/--devices ------------------------------------------------------------------------------

# DCGM numbers at most DCGM_MAX_NUM_DEVICES (32) GPUs and 8 instances per GPU, so a real id is far
# below this; the bound is checked before a range is expanded, so "g:0-4294967296" is a usage error
# rather than billions of ints.
MAX_DEVICE_ID = 1023


def parse_devices(text: str) -> DeviceSelection:
    """dcgm-exporter's device grammar: ``f``, ``g``, ``g:0,1``, ``g:0-3``, ``g:0,2-4``, ``i``, ``i:...``.

    Ids go from 0 to MAX_DEVICE_ID.
    """
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
    ids: dict[int, None] = {}   # ordered and without repeats, at most MAX_DEVICE_ID + 1 keys
    for item in ranges.split(","):
        ids.update(dict.fromkeys(_range_item(text, item)))
    return DeviceSelection(letter, tuple(ids))


def _range_item(text: str, item: str) -> range:
    start, dash, end = item.strip().partition("-")
    if not _ascii_digits(start) or (dash and not _ascii_digits(end)):
        what = "an empty item" if not item.strip() else repr(item)
        raise argparse.ArgumentTypeError(f"{text!r}: {what} is not N or N-M")
    first, last = _device_id(text, start), _device_id(text, end) if dash else _device_id(text, start)
    if last < first:
        raise argparse.ArgumentTypeError(f"{text!r}: range {item.strip()!r} runs backwards")
    return range(first, last + 1)


def _ascii_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()   # str.isdigit alone takes any script's digits, and '²'


def _device_id(text: str, digits: str) -> int:
    # the length is checked first: int() of thousands of digits is slow, or refused
    if len(digits.lstrip("0")) > len(str(MAX_DEVICE_ID)) or int(digits) > MAX_DEVICE_ID:
        spec = text if len(text) <= 60 else f"{text[:60]}..."
        shown = digits if len(digits) <= 20 else f"{digits[:20]}..."
        raise argparse.ArgumentTypeError(f"{spec!r}: id {shown} is too large (ids go from 0 to {MAX_DEVICE_ID})")
    return int(digits)


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
    listed: bool = False         # repeatable, kept as a tuple of parsed values (its variable: a comma list)


GROUPS = {
    "collection": "collection",
    "connection": "connection to DCGM",
    "devices": "devices",
    "window": "window aggregates (beside the last value dcgm-exporter serves)",
    "simulator": "simulator",
    "attribution": "Kubernetes and HPC job attribution",
    "web": "web",
    "remote_write": "Prometheus remote write (every sample, pushed; see README)",
    "recorder": "flight recorder (writes the samples around an XID, a lost GPU or a failed health check)",
    "logging": "logging",
}

OPTIONS: tuple[Option, ...] = (
    Option("collectors", ("-f", "--collectors"), "DCGM_EXPORTER_COLLECTORS", None, _nonempty("path"),
           "counters file (dcgm-exporter's counters.csv grammar, plus an optional 4th column "
           "min|max|avg) [default: the file shipped with the package]", "collection", "FILE"),
    Option("collect_interval_ms", ("-c", "--collect-interval"), "DCGM_EXPORTER_INTERVAL", DEFAULT_COLLECT_INTERVAL_MS,
           _positive_int("milliseconds", MAX_INTERVAL_MS),
           "how often the sampler drains DCGM, in ms [default: %(default)s]",
           "collection", "MS"),
    Option("watch_interval_ms", ("--watch-interval",), "DCGM_COLLECTOR_WATCH_INTERVAL", None,
           _positive_float("milliseconds", MAX_INTERVAL_MS),
           "how often DCGM samples each field, in ms; at most the collect interval "
           "[default: the collect interval]", "collection", "MS"),
    Option("retention_s", ("--retention",), "DCGM_COLLECTOR_RETENTION", DEFAULT_RETENTION_S,
           _positive_float("seconds"), "how much history the ring buffers keep, in s [default: %(default)g]",
           "collection", "S"),
    Option("xid_count_window_ms", ("-x", "--xid-count-window-size"), "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE",
           DEFAULT_COUNT_WINDOW_MS, _positive_int("milliseconds", MAX_COUNT_WINDOW_MS),
           "window of DCGM_EXP_XID_ERRORS_COUNT, in ms [default: %(default)s]", "collection", "MS"),
    Option("clock_events_count_window_ms", ("--clock-events-count-window-size",),
           "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", DEFAULT_COUNT_WINDOW_MS,
           _positive_int("milliseconds", MAX_COUNT_WINDOW_MS),
           "window of DCGM_EXP_CLOCK_EVENTS_COUNT, in ms [default: %(default)s]", "collection", "MS"),
    Option("no_hostname", ("-n", "--no-hostname"), "DCGM_EXPORTER_NO_HOSTNAME", False, parse_bool,
           "leave the hostname label out (it is $NODE_NAME, else the host's name)", "collection", "BOOL", True),
    Option("replace_blanks_in_model_name", ("-rbmn", "--replace-blanks-in-model-name"),
           "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", False, parse_bool,
           "write modelName with '-' for blanks (NVIDIA-H100-80GB-HBM3)", "collection", "BOOL", True),
    Option("use_old_namespace", ("-o", "--use-old-namespace"), "DCGM_EXPORTER_USE_OLD_NAMESPACE", False, parse_bool,
           "dcgm-exporter 1.x label names: uuid for UUID, pod_name, pod_namespace and container_name for the pod "
           "labels (metric names stay the counters file's; use a 1.x counters file for dcgm_* names)",
           "collection", "BOOL", True),
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
           "GPUs to sample: f (every GPU, a MIG GPU through its GPU instances), g (all GPUs, whole), g:0,1 or "
           "g:0-3 (those GPUs), i or i:0,2-4 (those MIG GPU instances, by entity id); ids 0-1023 [default: f]",
           "devices", "SPEC"),
    Option("switch_devices", ("-s", "--switch-devices"), "DCGM_EXPORTER_OTHER_DEVICES_STR", DeviceSelection("f"),
           parse_devices, "NvSwitches and their NvLinks to sample, in -d's grammar: f (all), g or g:0,2-3 (those "
           "switches, all their Up ports), i or i:0-7 (those ports, on every switch); GPU NvLinks follow -d "
           "[default: f]", "devices", "SPEC"),
    Option("cpu_devices", ("-p", "--cpu-devices"), "DCGM_EXPORTER_CPU_DEVICES_STR", DeviceSelection("f"),
           parse_devices, "CPUs and CPU cores to sample, in -d's grammar: f (all), g or g:0,1 (those CPUs, all "
           "their cores), i or i:0-71 (those cores) [default: f]", "devices", "SPEC"),
    Option("window_s", ("--window",), "DCGM_COLLECTOR_WINDOW", DEFAULT_WINDOW_S, _positive_float("seconds"),
           "length of the trailing window of the _min/_max/_avg families, in s [default: %(default)g]",
           "window", "S"),
    Option("aggregations", ("--aggregations",), "DCGM_COLLECTOR_AGGREGATIONS", (), aggregations_argument,
           "window families for every numeric row, e.g. max or min,max,avg, on top of each row's 4th column "
           "[default: none]", "window", "LIST"),
    Option("sim", ("--sim",), "DCGM_COLLECTOR_SIM", None, _nonempty("scenario"),
           "use the simulated libdcgm shipped with the package: N H100s, a scenario file, the name of a "
           "shipped scenario (spikes, mixed, xid-burst, ...), or a flight recording (.parquet) to replay",
           "simulator", "N|SCENARIO"),
    Option("nvml", ("--nvml",), "DCGM_COLLECTOR_NVML", False, parse_bool,
           "run the package's engine on the driver's NVML (libnvidia-ml.so.1 from $DCGM_ENGINE_NVML_LIB, else "
           "the dynamic linker's search) instead of NVIDIA DCGM or the simulated GPUs", "simulator", "BOOL", True),
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
    Option("remote_write_urls", ("--remote-write-url",), "DCGM_COLLECTOR_REMOTE_WRITE_URL", (), _remote_write_url,
           "push every sample to this Prometheus remote-write receiver, e.g. http://prometheus:9090/api/v1/write "
           "(give it several times for several receivers, each sent to on its own)", "remote_write", "URL",
           repeatable=True, listed=True),
    Option("remote_write_username", ("--remote-write-username",), "DCGM_COLLECTOR_REMOTE_WRITE_USERNAME", None,
           _nonempty("user name"), "basic auth user for the receivers", "remote_write", "USER"),
    Option("remote_write_password_file", ("--remote-write-password-file",),
           "DCGM_COLLECTOR_REMOTE_WRITE_PASSWORD_FILE", None, _nonempty("path"),
           "file holding the basic auth password", "remote_write", "FILE"),
    Option("remote_write_bearer_token_file", ("--remote-write-bearer-token-file",),
           "DCGM_COLLECTOR_REMOTE_WRITE_BEARER_TOKEN_FILE", None, _nonempty("path"),
           "file holding a bearer token (re-read for every request)", "remote_write", "FILE"),
    Option("remote_write_ca_file", ("--remote-write-ca-file",), "DCGM_COLLECTOR_REMOTE_WRITE_CA_FILE", None,
           _nonempty("path"), "CA certificates to check an https receiver with (default: the system's)",
           "remote_write", "FILE"),
    Option("remote_write_cert_file", ("--remote-write-cert-file",), "DCGM_COLLECTOR_REMOTE_WRITE_CERT_FILE", None,
           _nonempty("path"), "client certificate for an https receiver (with --remote-write-key-file)",
           "remote_write", "FILE"),
    Option("remote_write_key_file", ("--remote-write-key-file",), "DCGM_COLLECTOR_REMOTE_WRITE_KEY_FILE", None,
           _nonempty("path"), "the client certificate's private key", "remote_write", "FILE"),
    Option("remote_write_batch_size", ("--remote-write-batch-size",), "DCGM_COLLECTOR_REMOTE_WRITE_BATCH_SIZE", 2000,
           _positive_int("samples", 1_000_000), "samples per request at most [default: %(default)s]",
           "remote_write", "N"),
    Option("remote_write_flush_interval_s", ("--remote-write-flush-interval",),
           "DCGM_COLLECTOR_REMOTE_WRITE_FLUSH_INTERVAL", 1.0, _positive_float("seconds", 3600),
           "how often new samples are read and sent [default: %(default)g s]", "remote_write", "SECONDS"),
    Option("remote_write_queue_limit", ("--remote-write-queue-limit",), "DCGM_COLLECTOR_REMOTE_WRITE_QUEUE_LIMIT",
           100_000, _positive_int("samples", 100_000_000),
           "samples read from the rings into memory at most; the rest waits in the rings [default: %(default)s]",
           "remote_write", "N"),
    Option("remote_write_timeout_s", ("--remote-write-timeout",), "DCGM_COLLECTOR_REMOTE_WRITE_TIMEOUT", 10.0,
           _positive_float("seconds", 600), "how long one request may take [default: %(default)g s]",
           "remote_write", "SECONDS"),
    Option("remote_write_labels", ("--remote-write-label",), "DCGM_COLLECTOR_REMOTE_WRITE_LABEL", (),
           _remote_write_label, "NAME=VALUE label added to every series sent (give it several times; the "
           "variable takes a comma list)", "remote_write", "NAME=VALUE", repeatable=True, listed=True),
    Option("recorder_dir", ("--recorder-dir",), "DCGM_COLLECTOR_RECORDER_DIR", None, _nonempty("path"),
           "turn the flight recorder on: on an XID, a lost GPU, a failed health check, SIGUSR2 or an authenticated "
           "POST /recorder, write the samples around it into this directory as Parquet [default: off]",
           "recorder", "DIR"),
    Option("recorder_before_s", ("--recorder-before",), "DCGM_COLLECTOR_RECORDER_BEFORE", DEFAULT_RECORDER_BEFORE_S,
           _positive_float("seconds"), "seconds of samples a recording keeps before its trigger [default: %(default)g]",
           "recorder", "S"),
    Option("recorder_after_s", ("--recorder-after",), "DCGM_COLLECTOR_RECORDER_AFTER", DEFAULT_RECORDER_AFTER_S,
           _positive_float("seconds"), "seconds of samples a recording keeps after its trigger; it is written once "
           "they have passed [default: %(default)g]", "recorder", "S"),
    Option("recorder_max_bytes", ("--recorder-max-bytes",), "DCGM_COLLECTOR_RECORDER_MAX_BYTES",
           DEFAULT_RECORDER_MAX_BYTES, _positive_int("bytes"),
           "disk the recordings may take; the oldest are removed first [default: %(default)s (1 GiB)]",
           "recorder", "BYTES"),
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
    Unsupported(("-m", "--configmap-data"), "DCGM_EXPORTER_CONFIGMAP_DATA", False, "none",
                "counters are not read from a ConfigMap yet; mount it as a file and use -f", refuse=True),
)


def _unsupported_dest(item: Unsupported) -> str:
    return "unsupported_" + item.flags[-1].lstrip("-").replace("-", "_")


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
    if values["nvml"] and (values["sim"] is not None or args.dcgm_lib is not None):
        raise ConfigError("give --nvml, --sim or --dcgm-lib, not two")
    if values["sim"] is not None and args.dcgm_lib is not None:
        raise ConfigError("give --sim or --dcgm-lib, not both")
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
    values["hostname"] = None if values["no_hostname"] else (names[0] if names else hostname_label(None, environ))
    for name in (values["hostname"], *names):
        _check_label_text(name, environ)
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


