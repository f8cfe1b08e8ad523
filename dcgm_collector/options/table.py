"""The option table: each flag's spellings, environment variable, default, parser and help.

:data:`OPTIONS` lists the options this collector implements; the defaults of the sampling and
window options come from the modules that use them (collect.options, expose.options, push.options).
:data:`UNSUPPORTED` lists dcgm-exporter's options that it does not implement yet, and what giving
one does (a warning, or a refusal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dcgm_collector.attribution.checkpoint import DEFAULT_DEVICE_CHECKPOINT
from dcgm_collector.catalog.counters import aggregations_argument
from dcgm_collector.collect.options import DEFAULT_COLLECT_INTERVAL_MS, DEFAULT_RETENTION_S, MAX_INTERVAL_MS
from dcgm_collector.expose.options import DEFAULT_COUNT_WINDOW_MS, DEFAULT_WINDOW_S
from dcgm_collector.model import DeviceSelection
from dcgm_collector.options.values import (
    _address,
    _gpu_id_type,
    _log_format,
    _nonempty,
    _number_between,
    _positive_float,
    _positive_int,
    _remote_write_label,
    _remote_write_url,
    _text,
    parse_bool,
    parse_devices,
)
from dcgm_collector.push.options import DEFAULT_AFTER_S as DEFAULT_RECORDER_AFTER_S
from dcgm_collector.push.options import DEFAULT_BEFORE_S as DEFAULT_RECORDER_BEFORE_S
from dcgm_collector.push.options import DEFAULT_MAX_BYTES as DEFAULT_RECORDER_MAX_BYTES
from dcgm_collector.series.idle import DEFAULT_HELD_FB_MIB, DEFAULT_UTIL_BELOW
from dcgm_collector.series.processes import DEFAULT_TOP as DEFAULT_PROCESSES_TOP
from dcgm_collector.series.warnings import WarningThresholds

_WARN = WarningThresholds()   # the warnings' defaults

DEFAULT_ADDRESS = ":9400"
DEFAULT_REMOTE = "localhost:5555"
# -x and --clock-events-count-window-size: a week is far past any alert's window (dcgm-exporter: 5 min)
MAX_COUNT_WINDOW_MS = 7 * 24 * 3600 * 1000
MAX_PROCESSES_TOP = 1024   # --processes-top: past this a GPU's series would outnumber every other family's


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
    "source": "source of the readings (with none of these: DCGM when libdcgm.so.4 loads, else the driver's NVML)",
    "devices": "devices",
    "window": "window aggregates (beside the last value dcgm-exporter serves)",
    "attribution": "Kubernetes and HPC job attribution",
    "web": "web",
    "remote_write": "Prometheus remote write (every sample, pushed; see docs/remote-write.md)",
    "recorder": "flight recorder (writes the samples around an XID, a lost GPU or a failed health check)",
    "warnings": "early warnings (see docs/warnings.md)",
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
    Option("processes", ("--processes",), "DCGM_COLLECTOR_PROCESSES", False, parse_bool,
           "per-process series (DCGM_EXP_PROCESS_*): each GPU's processes, their framebuffer, utilisation, "
           "CPU seconds and RSS (needs the host's PID namespace; see docs/processes.md)", "collection", "BOOL", True),
    Option("processes_top", ("--processes-top",), "DCGM_COLLECTOR_PROCESSES_TOP", DEFAULT_PROCESSES_TOP,
           _positive_int("processes", MAX_PROCESSES_TOP),
           "processes per GPU with series of their own, by framebuffer; the rest are summed into pid=\"other\" "
           "[default: %(default)s]", "collection", "N"),
    Option("idle_util_below", ("--idle-util-below",), "DCGM_COLLECTOR_IDLE_UTIL_BELOW", DEFAULT_UTIL_BELOW,
           _number_between("percent", 0, 100),
           "with --processes: a GPU sampled at a utilisation under this is idle in DCGM_EXP_GPU_IDLE_SECONDS_TOTAL, "
           "at or over it busy, in %% [default: %(default)g]", "collection", "PERCENT"),
    Option("idle_held_fb_mib", ("--idle-held-fb-mib",), "DCGM_COLLECTOR_IDLE_HELD_FB_MIB", DEFAULT_HELD_FB_MIB,
           _number_between("MiB", 0),
           "with --processes: an idle GPU whose processes hold at least this much framebuffer in all is "
           "idle_held, in MiB [default: %(default)g]", "collection", "MIB"),
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
           "source", "ADDRESS", repeatable=True),
    Option("dcgm_lib", ("--dcgm-lib",), "DCGM_COLLECTOR_LIBDCGM", None, _nonempty("path"),
           "read the GPUs through the libdcgm.so.4 at PATH (the file, or the directory holding it), never "
           "falling back to NVML", "source", "PATH"),
    Option("dcgm", ("--dcgm",), "DCGM_COLLECTOR_DCGM", False, parse_bool,
           "read the GPUs through NVIDIA DCGM's libdcgm.so.4 from the dynamic linker's search, then DCGM's "
           "install directories; never falling back to NVML (a missing library is an error)", "source", "BOOL",
           True),
    Option("sim", ("--sim",), "DCGM_COLLECTOR_SIM", None, _nonempty("scenario"),
           "use the simulated libdcgm shipped with the package: N H100s, a scenario file, the name of a "
           "shipped scenario (spikes, mixed, xid-burst, ...), or a flight recording (.parquet) to replay",
           "source", "N|SCENARIO"),
    Option("nvml", ("--nvml",), "DCGM_COLLECTOR_NVML", False, parse_bool,
           "read the GPUs through the driver's NVML (libnvidia-ml.so.1 from $DCGM_ENGINE_NVML_LIB, else the "
           "dynamic linker's search) with the package's engine, never DCGM", "source", "BOOL", True),
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
    Option("kubernetes", ("-k", "--kubernetes"), "DCGM_EXPORTER_KUBERNETES", False, parse_bool,
           "label each GPU's series with the pod, namespace and container holding it, from the kubelet's "
           "pod-resources API (refreshed every 10 s, not per scrape)", "attribution", "BOOL", True),
    Option("kubernetes_gpu_id_type", ("--kubernetes-gpu-id-type",), "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "uid",
           _gpu_id_type, "how the device plugin names GPUs: uid (GPU-<uuid>, NVIDIA's device plugin) or "
           "device-name (nvidia<N>, GKE) [default: %(default)s]", "attribution", "TYPE"),
    Option("pod_resources_kubelet_socket", ("--pod-resources-kubelet-socket",), "DCGM_POD_RESOURCES_KUBELET_SOCKET",
           "/var/lib/kubelet/pod-resources/kubelet.sock", _nonempty("path"),
           "the kubelet's pod-resources socket [default: %(default)s]", "attribution", "PATH"),
    Option("kubernetes_device_checkpoint", ("--kubernetes-device-checkpoint",),
           "DCGM_COLLECTOR_KUBERNETES_DEVICE_CHECKPOINT", DEFAULT_DEVICE_CHECKPOINT, _nonempty("path"),
           "the kubelet device manager's checkpoint, which names the pod UID of each container's GPUs: with -k and "
           "--processes, how a process's cgroup is matched to its pod [default: %(default)s]", "attribution",
           "PATH"),
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
    Option("early_warnings", ("--warnings",), "DCGM_COLLECTOR_WARNINGS", False, parse_bool,
           "early warnings (DCGM_EXP_GPU_WARNING by reason, DCGM_EXP_GPU_ERROR_RATE): precursors of GPU failures "
           "read from every sample; each starts the flight recorder (see docs/warnings.md)", "warnings", "BOOL", True),
    Option("warn_sbe_rate", ("--warn-sbe-rate",), "DCGM_COLLECTOR_WARN_SBE_RATE", _WARN.sbe_rate,
           _number_between("errors a second", 0), "correctable ECC errors a second, over a minute, that are a "
           "storm [default: %(default)g]", "warnings", "RATE"),
    Option("warn_sbe_acceleration", ("--warn-sbe-acceleration",), "DCGM_COLLECTOR_WARN_SBE_ACCELERATION",
           _WARN.sbe_acceleration, _number_between("ratio", 1),
           "the last minute's correctable ECC error rate over the minutes before that is accelerating "
           "[default: %(default)g]", "warnings", "RATIO"),
    Option("warn_pcie_ber", ("--warn-pcie-ber",), "DCGM_COLLECTOR_WARN_PCIE_BER", _WARN.pcie_ber,
           _number_between("bit error rate", 0, 1), "the PCIe bit error rate whose replays a minute, at the link's "
           "generation and width, are too many (DCGM's) [default: %(default)g]", "warnings", "BER"),
    Option("warn_nvlink_crc_rate", ("--warn-nvlink-crc-rate",), "DCGM_COLLECTOR_WARN_NVLINK_CRC_RATE",
           _WARN.nvlink_crc_rate, _number_between("errors a second", 0),
           "NvLink CRC errors a second, over a minute, that warn (DCGM's) [default: %(default)g]", "warnings", "RATE"),
    Option("warn_thermal_margin_c", ("--warn-thermal-margin",), "DCGM_COLLECTOR_WARN_THERMAL_MARGIN",
           _WARN.thermal_margin_c, _number_between("degrees", 0, 100),
           "degrees C below the slowdown temperature that warn [default: %(default)g]", "warnings", "C"),
    Option("warn_thermal_lead_s", ("--warn-thermal-lead",), "DCGM_COLLECTOR_WARN_THERMAL_LEAD",
           _WARN.thermal_lead_s, _number_between("seconds", 0, 3600),
           "warn when the heating rate of the last minute reaches the slowdown temperature within this many "
           "seconds [default: %(default)g]", "warnings", "S"),
    Option("warn_hw_slowdown_events", ("--warn-hw-slowdown-events",), "DCGM_COLLECTOR_WARN_HW_SLOWDOWN_EVENTS",
           _WARN.hw_slowdown_events, _positive_int("events", 100_000),
           "hardware slowdowns begun in 10 minutes that warn [default: %(default)s]", "warnings", "N"),
    Option("warn_power_over_limit_s", ("--warn-power-over-limit",), "DCGM_COLLECTOR_WARN_POWER_OVER_LIMIT",
           _WARN.power_over_limit_s, _positive_float("seconds", 3600),
           "seconds the power must stay over its limit to warn [default: %(default)g]", "warnings", "S"),
    Option("warn_hold_s", ("--warn-hold",), "DCGM_COLLECTOR_WARN_HOLD", _WARN.hold_s,
           _positive_float("seconds", 7 * 24 * 3600),
           "seconds an XID that needs a reset or an inspection keeps its warning up [default: %(default)g]",
           "warnings", "S"),
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
    why: str                     # what is missing: "<flag> is ignored: <why>", or "<flag> cannot be used: <why>"
    refuse: bool = False         # True: serving without it would be wrong, not merely less


# what a warning about a pod-label option says: labels from the pod itself are what is missing
_POD_LABELS = "the pods' own labels are not attached yet; pod, namespace and container are (with -k)"

UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported(("--kubernetes-enable-pod-labels",), "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", True, None,
                _POD_LABELS),
    Unsupported(("--kubernetes-enable-pod-uid",), "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", True, None,
                "the pod's UID is not attached yet; pod, namespace and container are (with -k)"),
    Unsupported(("--kubernetes-pod-label-allowlist-regex",), "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
                False, None, _POD_LABELS),
    Unsupported(("--kubernetes-virtual-gpus",), "KUBERNETES_VIRTUAL_GPUS", True, None,
                "per-pod copies of a shared GPU's series are not made yet"),
    Unsupported(("--kubernetes-enable-dra",), "KUBERNETES_ENABLE_DRA", True, None, "DRA labels are not attached yet"),
    Unsupported(("--fake-gpus",), "DCGM_EXPORTER_USE_FAKE_GPUS", True, None,
                "fake GPUs are not made (--sim simulates GPUs)"),
    Unsupported(("--enable-dcgm-log",), "DCGM_EXPORTER_ENABLE_DCGM_LOG", True, None,
                "DCGM's own log is not relayed yet"),
    Unsupported(("--dcgm-log-level",), "DCGM_EXPORTER_DCGM_LOG_LEVEL", False, "NONE",
                "DCGM's own log is not relayed yet"),
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
                "systemd socket activation is not implemented yet; listen with -a instead", refuse=True),
    Unsupported(("-m", "--configmap-data"), "DCGM_EXPORTER_CONFIGMAP_DATA", False, "none",
                "counters are not read from a ConfigMap yet; mount it as a file and give -f", refuse=True),
)


def _unsupported_dest(item: Unsupported) -> str:
    return "unsupported_" + item.flags[-1].lstrip("-").replace("-", "_")
