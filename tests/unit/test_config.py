"""The flag and environment table turned into a Config: grammar, defaults, precedence, errors."""

from __future__ import annotations

import argparse
import re
import socket
import time

import pytest
from support import last_line

from dcgm_collector.catalog.counters import default_counters_path
from dcgm_collector.config import (
    OPTIONS,
    REMOTE_FORMS,
    UNSUPPORTED,
    AddressError,
    ConfigError,
    DeviceSelection,
    build_parser,
    go_style_argv,
    hostname_label,
    parse_bool,
    parse_config,
    parse_devices,
    remote_host,
)


@pytest.mark.parametrize("text, expected", [
    ("f", DeviceSelection("f")), ("g", DeviceSelection("g")), ("i", DeviceSelection("i")),
    ("g:0,1", DeviceSelection("g", (0, 1))), ("g:0-3", DeviceSelection("g", (0, 1, 2, 3))),
    ("g:0,2-4", DeviceSelection("g", (0, 2, 3, 4))), ("i:1", DeviceSelection("i", (1,))),
    ("g:3,3,1", DeviceSelection("g", (3, 1))),
])
def test_device_grammar(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize("text, message", [
    ("f:0", "takes no range"), ("g:0:1", "only one"), ("x", "expected f, g"), ("g:0,i:1", "only one"),
    ("g+i", "expected f, g"), ("g:", "empty item"), ("g:0,,1", "empty item"), ("g:a", "'a' is not N or N-M"),
    ("g:1-2-3", "is not N or N-M"), ("g:-1", "is not N or N-M"), ("g:3-1", "runs backwards"),
])
def test_device_grammar_errors(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_devices(text)


@pytest.mark.parametrize("text", ["g:0-4294967296", "g:0-50000000", "i:1024", "g:4294967296-4294967297",
                                  "g:0," + "9" * 5000, "g:" + "1" * 100 + "-" + "2" * 100])
def test_device_ids_past_the_bound_are_refused_at_once(text):
    started = time.monotonic()
    with pytest.raises(argparse.ArgumentTypeError, match=r"is too large \(ids go from 0 to 1023\)") as info:
        parse_devices(text)
    assert time.monotonic() - started < 0.1
    assert len(str(info.value)) < 200   # one line, not the whole argument echoed back


def test_device_ids_up_to_the_bound_are_kept():
    assert parse_devices("g:1023") == DeviceSelection("g", (1023,))
    assert parse_devices("i:0-1023").ids == tuple(range(1024))
    assert parse_devices("g:0007") == DeviceSelection("g", (7,))
    # repeats are dropped as they come, so many overlapping ranges stay cheap
    assert parse_devices("g:" + ",".join(["0-1023"] * 200)).ids == tuple(range(1024))


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_true(text):
    assert parse_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_go_false(text):
    assert parse_bool(text) is False


@pytest.mark.parametrize("text", ["yes", "on", "tRuE", "2", " true"])
def test_not_go_booleans(text):
    with pytest.raises(argparse.ArgumentTypeError, match="not a boolean"):
        parse_bool(text)


def test_defaults():
    config = parse_config([], {})
    assert config.collectors == default_counters_path()
    assert config.address == ":9400"
    assert config.collect_interval_ms == 1000
    assert config.devices == DeviceSelection("f")
    assert config.window_s == 15.0 and config.retention_s == 3600.0 and config.watch_interval_ms is None
    assert config.aggregations == ()
    assert config.xid_count_window_ms == config.clock_events_count_window_ms == 300_000
    assert config.remote is None and config.sim is None and config.dcgm_lib is None
    assert config.hostname == socket.gethostname()
    assert not config.no_hostname and not config.replace_blanks_in_model_name and not config.debug
    assert config.log_format == "text" and config.warnings == ()
    assert config.recorder_dir is None and (config.recorder_before_s, config.recorder_after_s) == (300.0, 60.0)
    assert config.recorder_max_bytes == 2**30


# (flags, env var, its value, config attribute, value from the env, value from the flag)
FLAG_ENV_CASES = [
    (["-f", "a.csv"], "DCGM_EXPORTER_COLLECTORS", "b.csv", "collectors", "b.csv", "a.csv"),
    (["-a", "127.0.0.1:1"], "DCGM_EXPORTER_LISTEN", "[::1]:2", "address", "[::1]:2", "127.0.0.1:1"),
    (["-c", "250"], "DCGM_EXPORTER_INTERVAL", "500", "collect_interval_ms", 500, 250),
    (["-r", "node7:5555"], "DCGM_REMOTE_HOSTENGINE_INFO", "node8:5555", "remote", "node8:5555", "node7:5555"),
    (["-d", "g:1"], "DCGM_EXPORTER_DEVICES_STR", "g:0-1", "devices", DeviceSelection("g", (0, 1)),
     DeviceSelection("g", (1,))),
    (["-s", "g:1"], "DCGM_EXPORTER_OTHER_DEVICES_STR", "i:0-2", "switch_devices", DeviceSelection("i", (0, 1, 2)),
     DeviceSelection("g", (1,))),
    (["-p", "i:3"], "DCGM_EXPORTER_CPU_DEVICES_STR", "g", "cpu_devices", DeviceSelection("g"),
     DeviceSelection("i", (3,))),
    (["-n=false"], "DCGM_EXPORTER_NO_HOSTNAME", "true", "no_hostname", True, False),
    (["-rbmn=0"], "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", "T", "replace_blanks_in_model_name", True, False),
    (["-o=false"], "DCGM_EXPORTER_USE_OLD_NAMESPACE", "1", "use_old_namespace", True, False),
    (["-x", "100"], "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", "200", "xid_count_window_ms", 200, 100),
    (["--clock-events-count-window-size", "300"], "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", "400",
     "clock_events_count_window_ms", 400, 300),
    (["--sim", "2"], "DCGM_COLLECTOR_SIM", "mixed", "sim", "mixed", "2"),
    (["--nvml=false"], "DCGM_COLLECTOR_NVML", "true", "nvml", True, False),
    (["--dcgm=false"], "DCGM_COLLECTOR_DCGM", "true", "dcgm", True, False),
    # the variable is left to dcgm.load_library, which reads it itself (and names it in its error)
    (["--dcgm-lib", "/x/libdcgm.so.4"], "DCGM_COLLECTOR_LIBDCGM", "/y", "dcgm_lib", None, "/x/libdcgm.so.4"),
    (["--window", "5"], "DCGM_COLLECTOR_WINDOW", "7.5", "window_s", 7.5, 5.0),
    (["--aggregations", "max"], "DCGM_COLLECTOR_AGGREGATIONS", "avg,min", "aggregations", ("min", "avg"), ("max",)),
    (["--retention", "60"], "DCGM_COLLECTOR_RETENTION", "120", "retention_s", 120.0, 60.0),
    (["--watch-interval", "50"], "DCGM_COLLECTOR_WATCH_INTERVAL", "100", "watch_interval_ms", 100.0, 50.0),
    (["--recorder-dir", "/a"], "DCGM_COLLECTOR_RECORDER_DIR", "/b", "recorder_dir", "/b", "/a"),
    (["--recorder-before", "30"], "DCGM_COLLECTOR_RECORDER_BEFORE", "40", "recorder_before_s", 40.0, 30.0),
    (["--recorder-after", "5"], "DCGM_COLLECTOR_RECORDER_AFTER", "6", "recorder_after_s", 6.0, 5.0),
    (["--recorder-max-bytes", "1000"], "DCGM_COLLECTOR_RECORDER_MAX_BYTES", "2000", "recorder_max_bytes", 2000, 1000),
    (["--debug=false"], "DCGM_EXPORTER_DEBUG", "1", "debug", True, False),
    (["--log-format", "text"], "DCGM_EXPORTER_LOG_FORMAT", "json", "log_format", "json", "text"),
    (["-k=false"], "DCGM_EXPORTER_KUBERNETES", "true", "kubernetes", True, False),
    (["--kubernetes-gpu-id-type", "uid"], "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "device-name",
     "kubernetes_gpu_id_type", "device-name", "uid"),
    (["--pod-resources-kubelet-socket", "/a.sock"], "DCGM_POD_RESOURCES_KUBELET_SOCKET", "/b.sock",
     "pod_resources_kubelet_socket", "/b.sock", "/a.sock"),
    (["--kubernetes-device-checkpoint", "/a/cp"], "DCGM_COLLECTOR_KUBERNETES_DEVICE_CHECKPOINT", "/b/cp",
     "kubernetes_device_checkpoint", "/b/cp", "/a/cp"),
    (["--nvidia-resource-names", "nvidia.com/a100", "--nvidia-resource-names", "nvidia.com/h100"],
     "NVIDIA_RESOURCE_NAMES", "nvidia.com/x, nvidia.com/y", "nvidia_resource_names",
     ("nvidia.com/x", "nvidia.com/y"), ("nvidia.com/a100", "nvidia.com/h100")),
    (["--hpc-job-mapping-dir", "/run/jobs"], "DCGM_HPC_JOB_MAPPING_DIR", "/var/jobs", "hpc_job_mapping_dir",
     "/var/jobs", "/run/jobs"),
    (["--web-config-file", "w.yml"], "DCGM_EXPORTER_WEB_CONFIG_FILE", "/etc/w.yml", "web_config_file",
     "/etc/w.yml", "w.yml"),
    (["--remote-write-url", "http://a:9090/api/v1/write", "--remote-write-url", "https://b/w?x=1,2"],
     "DCGM_COLLECTOR_REMOTE_WRITE_URL", "http://c/w, http://d/w", "remote_write_urls", ("http://c/w", "http://d/w"),
     ("http://a:9090/api/v1/write", "https://b/w?x=1,2")),
    (["--remote-write-username", "u"], "DCGM_COLLECTOR_REMOTE_WRITE_USERNAME", "v", "remote_write_username", "v",
     "u"),
    (["--remote-write-password-file", "/p"], "DCGM_COLLECTOR_REMOTE_WRITE_PASSWORD_FILE", "/q",
     "remote_write_password_file", "/q", "/p"),
    (["--remote-write-bearer-token-file", "/t"], "DCGM_COLLECTOR_REMOTE_WRITE_BEARER_TOKEN_FILE", "/s",
     "remote_write_bearer_token_file", "/s", "/t"),
    (["--remote-write-ca-file", "/ca"], "DCGM_COLLECTOR_REMOTE_WRITE_CA_FILE", "/cb", "remote_write_ca_file", "/cb",
     "/ca"),
    (["--remote-write-cert-file", "/c"], "DCGM_COLLECTOR_REMOTE_WRITE_CERT_FILE", "/d", "remote_write_cert_file",
     "/d", "/c"),
    (["--remote-write-key-file", "/k"], "DCGM_COLLECTOR_REMOTE_WRITE_KEY_FILE", "/l", "remote_write_key_file", "/l",
     "/k"),
    (["--remote-write-batch-size", "500"], "DCGM_COLLECTOR_REMOTE_WRITE_BATCH_SIZE", "700", "remote_write_batch_size",
     700, 500),
    (["--remote-write-flush-interval", "0.5"], "DCGM_COLLECTOR_REMOTE_WRITE_FLUSH_INTERVAL", "2",
     "remote_write_flush_interval_s", 2.0, 0.5),
    (["--remote-write-queue-limit", "1000"], "DCGM_COLLECTOR_REMOTE_WRITE_QUEUE_LIMIT", "2000",
     "remote_write_queue_limit", 2000, 1000),
    (["--remote-write-timeout", "3"], "DCGM_COLLECTOR_REMOTE_WRITE_TIMEOUT", "4", "remote_write_timeout_s", 4.0, 3.0),
    (["--processes=false"], "DCGM_COLLECTOR_PROCESSES", "true", "processes", True, False),
    (["--processes-top", "4"], "DCGM_COLLECTOR_PROCESSES_TOP", "8", "processes_top", 8, 4),
    (["--idle-util-below", "5"], "DCGM_COLLECTOR_IDLE_UTIL_BELOW", "2.5", "idle_util_below", 2.5, 5.0),
    (["--idle-held-fb-mib", "0"], "DCGM_COLLECTOR_IDLE_HELD_FB_MIB", "512", "idle_held_fb_mib", 512.0, 0.0),
    (["--warnings"], "DCGM_COLLECTOR_WARNINGS", "false", "early_warnings", False, True),
    (["--warn-sbe-rate", "50"], "DCGM_COLLECTOR_WARN_SBE_RATE", "20", "warn_sbe_rate", 20.0, 50.0),
    (["--warn-sbe-acceleration", "4"], "DCGM_COLLECTOR_WARN_SBE_ACCELERATION", "2", "warn_sbe_acceleration",
     2.0, 4.0),
    (["--warn-pcie-ber", "1e-11"], "DCGM_COLLECTOR_WARN_PCIE_BER", "1e-13", "warn_pcie_ber", 1e-13, 1e-11),
    (["--warn-nvlink-crc-rate", "10"], "DCGM_COLLECTOR_WARN_NVLINK_CRC_RATE", "50", "warn_nvlink_crc_rate", 50.0,
     10.0),
    (["--warn-thermal-margin", "3"], "DCGM_COLLECTOR_WARN_THERMAL_MARGIN", "8", "warn_thermal_margin_c", 8.0, 3.0),
    (["--warn-thermal-lead", "60"], "DCGM_COLLECTOR_WARN_THERMAL_LEAD", "300", "warn_thermal_lead_s", 300.0, 60.0),
    (["--warn-hw-slowdown-events", "3"], "DCGM_COLLECTOR_WARN_HW_SLOWDOWN_EVENTS", "9", "warn_hw_slowdown_events",
     9, 3),
    (["--warn-power-over-limit", "2"], "DCGM_COLLECTOR_WARN_POWER_OVER_LIMIT", "10", "warn_power_over_limit_s",
     10.0, 2.0),
    (["--warn-hold", "60"], "DCGM_COLLECTOR_WARN_HOLD", "900", "warn_hold_s", 900.0, 60.0),
    (["--remote-write-label", "cluster=a,b", "--remote-write-label", "site=x"], "DCGM_COLLECTOR_REMOTE_WRITE_LABEL",
     "cluster=c,site=y", "remote_write_labels", (("cluster", "c"), ("site", "y")), (("cluster", "a,b"), ("site", "x"))),
]


@pytest.mark.parametrize("flags, env, value, attribute, from_env, from_flag", FLAG_ENV_CASES,
                         ids=[case[1] for case in FLAG_ENV_CASES])
def test_env_var_and_flag_beats_it(flags, env, value, attribute, from_env, from_flag):
    assert getattr(parse_config([], {env: value}), attribute) == from_env
    assert getattr(parse_config(flags, {env: value}), attribute) == from_flag


def test_every_option_is_covered_by_the_table():
    assert {case[1] for case in FLAG_ENV_CASES} == {o.env for o in OPTIONS if o.env}


def test_empty_env_value_counts_as_unset():
    assert parse_config([], {"DCGM_EXPORTER_INTERVAL": "", "DCGM_EXPORTER_NO_HOSTNAME": ""}).collect_interval_ms == 1000


@pytest.mark.parametrize("env, value, message", [
    ("DCGM_EXPORTER_NO_HOSTNAME", "yes", "DCGM_EXPORTER_NO_HOSTNAME: 'yes' is not a boolean"),
    ("DCGM_EXPORTER_INTERVAL", "0", "DCGM_EXPORTER_INTERVAL: '0': must be more than 0"),
    ("DCGM_EXPORTER_DEVICES_STR", "g:x", "DCGM_EXPORTER_DEVICES_STR: 'g:x'"),
    ("DCGM_EXPORTER_DEVICES_STR", "g:0-4294967296", "DCGM_EXPORTER_DEVICES_STR: 'g:0-4294967296': id 4294967296"),
    ("DCGM_EXPORTER_LISTEN", "9400", "DCGM_EXPORTER_LISTEN: bad listen address"),
    ("DCGM_COLLECTOR_AGGREGATIONS", "p99", "DCGM_COLLECTOR_AGGREGATIONS: unknown aggregation 'p99'"),
    ("DCGM_COLLECTOR_WINDOW", "nan", "DCGM_COLLECTOR_WINDOW: 'nan' is not a number of seconds (ASCII digits, finite)"),
    ("DCGM_EXPORTER_INTERVAL", "\u0661\u0660\u0660",
     "DCGM_EXPORTER_INTERVAL: '\u0661\u0660\u0660' is not a whole number of milliseconds (ASCII digits)"),
    ("DCGM_EXPORTER_LOG_FORMAT", "xml", "DCGM_EXPORTER_LOG_FORMAT: 'xml': choose text or json"),
    ("DCGM_COLLECTOR_PROCESSES_TOP", "0", "DCGM_COLLECTOR_PROCESSES_TOP: '0': must be more than 0 processes"),
    ("DCGM_COLLECTOR_PROCESSES_TOP", "5000", "DCGM_COLLECTOR_PROCESSES_TOP: '5000': must be at most 1024 processes"),
    ("DCGM_COLLECTOR_IDLE_UTIL_BELOW", "101", "DCGM_COLLECTOR_IDLE_UTIL_BELOW: '101': must be from 0 to 100 percent"),
    ("DCGM_COLLECTOR_IDLE_HELD_FB_MIB", "-1", "DCGM_COLLECTOR_IDLE_HELD_FB_MIB: '-1': must be at least 0 MiB"),
])
def test_bad_env_values(env, value, message):
    with pytest.raises(ConfigError) as info:
        parse_config([], {env: value})
    assert str(info.value).startswith(f"environment variable {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("argv, message", [
    (["-c", "abc"], "argument -c/--collect-interval: 'abc' is not a whole number of milliseconds"),
    (["-d", "g:0:1"], "argument -d/--devices: 'g:0:1': only one ':<range>' is allowed"),
    (["-d", "g:0-4294967296"], "argument -d/--devices: 'g:0-4294967296': id 4294967296 is too large"),
    (["-a", "nohost"], "argument -a/--address: bad listen address 'nohost'"),
    (["--aggregations", "median"], "argument --aggregations: unknown aggregation 'median'"),
    (["-n=maybe"], "argument -n/--no-hostname: 'maybe' is not a boolean"),
    # what int() and float() take but a person did not mean: other scripts' digits, '_', '²', infinity
    (["-c", "1_000"], "argument -c/--collect-interval: '1_000' is not a whole number of milliseconds (ASCII digits)"),
    (["-c", "\u0661\u0660\u0660"], "argument -c/--collect-interval: '\u0661\u0660\u0660' is not a whole number"),
    (["--window", "\u0661\u0665"], "argument --window: '\u0661\u0665' is not a number of seconds (ASCII digits"),
    (["--retention", "1e400"], "argument --retention: '1e400' is not a number of seconds (ASCII digits, finite)"),
    (["-d", "g:\u00b2"], "argument -d/--devices: 'g:\u00b2': '\u00b2' is not N or N-M"),
    (["-d", "g:\u0661"], "argument -d/--devices: 'g:\u0661': '\u0661' is not N or N-M"),
    (["--idle-util-below", "-5"], "argument --idle-util-below: '-5': must be from 0 to 100 percent"),
    (["--idle-util-below", "ten"], "argument --idle-util-below: 'ten' is not a number of percent (ASCII digits"),
    (["--idle-held-fb-mib", "nan"], "argument --idle-held-fb-mib: 'nan' is not a number of MiB (ASCII digits"),
])
def test_bad_flag_values_are_one_line_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse_config(argv, {})
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert last_line(err).startswith(f"dcgm-collector: error: {message}")


@pytest.mark.parametrize("argv, message", [
    (["--watch-interval", "300", "-c", "200"], "--watch-interval 300 ms must not be longer than"),
    (["--window", "100", "--retention", "50"], "--window 100 s is longer than --retention 50 s"),
    (["--recorder-dir", "/r", "--recorder-after", "700", "--retention", "900"],
     "--recorder-before 300 s + --recorder-after 700 s is longer than --retention 900 s"),
])
def test_inconsistent_options(argv, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(argv, {})


CHOOSE_ONE = "each choose where the readings come from: give one of them"


@pytest.mark.parametrize("argv, env, both", [
    (["--nvml", "--dcgm"], {}, "--nvml and --dcgm"),
    (["--nvml", "--sim", "2"], {}, "--nvml and --sim"),
    (["--nvml", "--dcgm-lib", "/x"], {}, "--nvml and --dcgm-lib"),
    (["--nvml", "-r", "node-a:5555"], {}, "--nvml and -r"),
    (["--sim", "2"], {"DCGM_COLLECTOR_NVML": "true"}, "DCGM_COLLECTOR_NVML=true and --sim"),
    ([], {"DCGM_COLLECTOR_NVML": "1", "DCGM_REMOTE_HOSTENGINE_INFO": "node-a"},
     "DCGM_COLLECTOR_NVML=1 and DCGM_REMOTE_HOSTENGINE_INFO=node-a"),
    (["--dcgm", "--sim", "mig"], {}, "--dcgm and --sim"),
    (["--sim", "2"], {"DCGM_COLLECTOR_DCGM": "t"}, "DCGM_COLLECTOR_DCGM=t and --sim"),
    (["--sim", "2", "--dcgm-lib", "/x"], {}, "--sim and --dcgm-lib"),
])
def test_two_sources_that_contradict_each_other_are_named_in_one_line(argv, env, both):
    with pytest.raises(ConfigError) as info:
        parse_config(argv, env)
    assert str(info.value) == f"{both} {CHOOSE_ONE}"
    assert info.value.exit_code == 2


@pytest.mark.parametrize("argv, env, flag", [
    ([], {}, None),
    ([], {"DCGM_COLLECTOR_LIBDCGM": "/opt/dcgm"}, None),   # where libdcgm is, read by the binding itself
    (["--nvml=false"], {"DCGM_COLLECTOR_NVML": "false"}, None),
    (["--nvml"], {}, "--nvml"),
    ([], {"DCGM_COLLECTOR_NVML": "true"}, "DCGM_COLLECTOR_NVML=true"),
    (["--dcgm"], {}, "--dcgm"),
    (["--dcgm", "--dcgm-lib", "/opt/dcgm"], {}, "--dcgm-lib /opt/dcgm"),
    (["--sim", "xid-burst"], {}, "--sim xid-burst"),
    (["-r", "node-a:5555", "--dcgm"], {}, "-r"),
    ([], {"DCGM_REMOTE_HOSTENGINE_INFO": "node-a"}, "DCGM_REMOTE_HOSTENGINE_INFO"),
    (["--sim", "2", "-r", "node-a"], {}, "-r"),   # the simulated libdcgm as a hostengine's client
])
def test_the_flag_that_chose_the_source_is_kept_as_given(argv, env, flag):
    assert parse_config(argv, env).source_flag == flag


def test_go_style_spellings():
    parser = build_parser()
    assert go_style_argv(["-collectors", "x", "--f=y", "-rbmn", "--n", "--", "-collectors"], parser) == [
        "--collectors", "x", "-f=y", "-rbmn", "-n", "--", "-collectors"]
    config = parse_config(["-collect-interval", "300", "--d", "g:1", "-no-hostname"], {})
    assert (config.collect_interval_ms, config.devices, config.no_hostname) == (300, DeviceSelection("g", (1,)), True)


def test_unsupported_options_warn_or_refuse():
    env = {"DCGM_EXPORTER_ENABLE_PPROF": "true", "DCGM_EXPORTER_DUMP_DIRECTORY": "/tmp/dcgm-exporter-debug"}
    config = parse_config(["--kubernetes-enable-pod-uid", "--dump-enabled", "-s", "f"], env)
    assert config.warnings == (
        "--kubernetes-enable-pod-uid is ignored: the pod's UID is not attached yet; pod, namespace and container are "
        "(with -k)",
        "DCGM_EXPORTER_ENABLE_PPROF=true is ignored: there is no pprof endpoint",
        "--dump-enabled is ignored: debug dumps are not written",
    )
    # -s f and DCGM_EXPORTER_DUMP_DIRECTORY at dcgm-exporter's defaults: nothing to warn about
    refused = ((["-m", "ns:cm"], {}, "-m/--configmap-data cannot be used: counters are not read from a ConfigMap "
                "yet; mount it as a file and give -f"),
               ([], {"DCGM_EXPORTER_SYSTEMD_SOCKET": "1"}, "DCGM_EXPORTER_SYSTEMD_SOCKET=1 cannot be used: systemd "
                "socket activation is not implemented yet; listen with -a instead"))
    for argv, env, message in refused:
        with pytest.raises(ConfigError) as info:
            parse_config(argv, env)
        assert str(info.value) == message
    assert parse_config(["-o=false", "-m", "none"], {}).warnings == ()


def test_use_old_namespace_from_flag_or_environment():
    assert parse_config([], {}).use_old_namespace is False
    assert parse_config(["-o"], {}).use_old_namespace is True
    assert parse_config(["--use-old-namespace"], {}).use_old_namespace is True
    assert parse_config([], {"DCGM_EXPORTER_USE_OLD_NAMESPACE": "true"}).use_old_namespace is True
    assert parse_config(["-o=false"], {"DCGM_EXPORTER_USE_OLD_NAMESPACE": "true"}).use_old_namespace is False
    assert parse_config(["-o"], {}).warnings == ()


def test_hostname_label():
    assert hostname_label(None, {"NODE_NAME": "node-a"}) == "node-a"
    assert hostname_label(None, {}) == socket.gethostname()
    assert hostname_label("gpu-host-3:5555", {"NODE_NAME": "node-a"}) == "gpu-host-3"    # as dcgm-exporter
    assert hostname_label("unix:///run/he.sock", {"NODE_NAME": "node-a"}) == "node-a"
    assert parse_config(["-n"], {"NODE_NAME": "node-a"}).hostname is None
    assert parse_config(["-r", "10.0.0.7:5555"], {}).hostname == "10.0.0.7"


@pytest.mark.parametrize("address, host", [
    ("node7", "node7"), ("node7:5555", "node7"), ("[::1]:5555", "::1"), ("tcp://node8:5555", "node8"),
    ("/run/nv-hostengine.sock", None), ("unix:///run/he.sock", None), ("::1", "::1"),
])
def test_remote_host(address, host):
    assert remote_host(address) == host


@pytest.mark.parametrize("value, why", [
    ("host:99999", "port '99999' is not a number from 1 to 65535"),
    ("host:0", "port '0' is not a number from 1 to 65535"),
    ("host:", "port '' is not a number"),
    ("host:http", "port 'http' is not a number"),
    ("[::1", "no closing ']'"),
    ("[::1]x", "'x' after ']'"),
    ("[nothost]:5555", "'nothost' is not an IPv6 address"),
    ("1:2:3:zz", "an IPv6 address with a port is written [ADDRESS]:PORT"),
    ("tcp://", "no host after tcp://"),
    ("unix://", "no socket path after unix://"),
    ("http://node:5555", "unknown scheme http://"),
    ("", "empty"),
    ("  ", "empty"),
    (":5555", "no host"),
    ("a b:5555", "'a b' is not a host name"),
])
def test_malformed_remote_addresses(value, why):
    with pytest.raises(AddressError) as info:
        parse_config(["-r", value], {})
    message = str(info.value)
    assert message.startswith(f"-r: bad hostengine address {value!r}: {why}")
    assert message.endswith(f"; expected {REMOTE_FORMS}") and "\n" not in message


def test_several_remotes_each_named_by_its_host():
    env = {"NODE_NAME": "here"}
    config = parse_config(["-r", "gpu1:5555", "-r", "[fe80::1%eth0]:5555,unix:///run/he.sock", "-r", "/run/b.sock"],
                          env)
    assert config.remotes == ("gpu1:5555", "[fe80::1%eth0]:5555", "unix:///run/he.sock", "/run/b.sock")
    assert config.remote == ",".join(config.remotes)
    # two unix sockets on this host would share a name: each is then named by its address
    assert config.target_names == ("gpu1", "fe80::1%eth0", "unix:///run/he.sock", "/run/b.sock")
    assert config.hostname == "gpu1"
    config = parse_config([], {"DCGM_REMOTE_HOSTENGINE_INFO": "a:1, b:2", **env})
    assert (config.remotes, config.target_names) == (("a:1", "b:2"), ("a", "b"))
    assert parse_config(["-r", "node:1", "-r", "node:2"], env).target_names == ("node:1", "node:2")
    assert parse_config(["-r", "::1"], env).target_names == ("::1",)
    assert parse_config(["-r", "tcp://node9:7"], env).target_names == ("node9",)
    with pytest.raises(AddressError, match="hostengine address 'a:1' is given twice"):
        parse_config(["-r", "a:1", "-r", "a:1"], env)


def test_kubernetes_gpu_id_type_is_checked():
    with pytest.raises(ConfigError, match="not a GPU id type"):
        parse_config([], {"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "index"})


def test_the_helps_list_of_missing_options_is_the_parsers_own():
    """Every option the parser implements is absent from the "not implemented" list; every one it lacks is there."""
    text = build_parser().format_help()
    missing = text[text.index("dcgm-exporter options not implemented yet:"):]
    warned = missing[:missing.index("Refused")]
    refused = missing[missing.index("Refused"):]
    flat = " ".join(missing.split())
    assert len(UNSUPPORTED) >= 10 and len(OPTIONS) >= 30
    for item in UNSUPPORTED:
        assert "/".join(item.flags) in " ".join((refused if item.refuse else warned).split()), item.flags
    for option in OPTIONS:
        for flag in option.flags:
            assert f"{flag}," not in flat and f"{flag}:" not in flat and f"{flag}/" not in flat, flag


@pytest.mark.parametrize("argv, env, message", [
    (["-c", "99999999999999999"], {}, "argument -c/--collect-interval: '99999999999999999': must be at most "
                                      "86400000 milliseconds"),
    ([], {"DCGM_EXPORTER_INTERVAL": "99999999999999999"}, "environment variable DCGM_EXPORTER_INTERVAL: "
                                                          "'99999999999999999': must be at most 86400000 milliseconds"),
    (["-x", "99999999999999999999"], {}, "argument -x/--xid-count-window-size: '99999999999999999999': must be at "
                                         "most 604800000 milliseconds"),
    (["--retention", "1e300"], {}, "--retention 1e+300 s at a 1000 ms watch interval is 1.0e+300 rows per ring, "
                                   "more than the 10,000,000 a ring holds; lower --retention or raise "
                                   "--watch-interval"),
    (["--retention", "9000000", "--watch-interval", "100"], {},
     "--retention 9e+06 s at a 100 ms watch interval is 90,000,000 rows per ring"),
])
def test_huge_numbers_are_one_line_errors_naming_the_option(argv, env, message, capsys):
    try:
        parse_config(argv, env)
    except SystemExit as exit_:
        assert exit_.code == 2
        assert message in last_line(capsys.readouterr().err)
    except ConfigError as error:
        assert message in str(error) and "\n" not in str(error)
    else:
        pytest.fail("accepted")


@pytest.mark.parametrize("argv, message", [
    (["--remote-write-url", "ftp://p/w"], "argument --remote-write-url: 'ftp://p/w': the URL must start with "
                                          "http:// or https://"),
    (["--remote-write-url", "http:///w"], "argument --remote-write-url: 'http:///w': the URL has no host"),
    (["--remote-write-url", "http://p:99999/w"], "argument --remote-write-url: 'http://p:99999/w' is not a URL"),
    (["--remote-write-label", "9x=1"], "argument --remote-write-label: '9x=1': '9x' is not a label name"),
    (["--remote-write-label", "__name__=1"], "argument --remote-write-label: '__name__=1': '__name__' is not a label"),
    (["--remote-write-label", "cluster"], "argument --remote-write-label: 'cluster' is not NAME=VALUE"),
    (["--remote-write-batch-size", "0"], "argument --remote-write-batch-size: '0': must be more than 0 samples"),
])
def test_bad_remote_write_flags_are_one_line_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_config(argv, {})
    assert exit_.value.code == 2
    assert message in last_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv, message", [
    (["--remote-write-label", "a=1", "--remote-write-label", "a=2"], "--remote-write-label: a given twice"),
    (["--remote-write-url", "http://a/w"], "--remote-write-url: a URL is given twice"),
    (["--remote-write-password-file", "/p"], "--remote-write-password-file needs --remote-write-username"),
    (["--remote-write-username", "u", "--remote-write-bearer-token-file", "/t"],
     "give --remote-write-username or --remote-write-bearer-token-file, not both"),
    (["--remote-write-cert-file", "/c"], "--remote-write-cert-file and --remote-write-key-file go together"),
])
def test_remote_write_flags_that_do_not_go_together(argv, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        parse_config(["--remote-write-url", "http://a/w", *argv], {})


def test_under_kubernetes_a_hostengine_s_series_carry_the_node_s_name():
    # the GPU Operator's nvidia-dcgm Service is node-local: its name would label every node's series alike
    env = {"NODE_NAME": "gpu-node-7"}
    config = parse_config(["-k", "-r", "nvidia-dcgm.gpu-operator.svc:5555"], env)
    assert (config.hostname, config.target_names) == ("gpu-node-7", ("gpu-node-7",))
    assert parse_config(["-r", "nvidia-dcgm.gpu-operator.svc:5555"], env).hostname == "nvidia-dcgm.gpu-operator.svc"
    assert parse_config(["-k", "-r", "h:5555"], {}).hostname == socket.gethostname()
