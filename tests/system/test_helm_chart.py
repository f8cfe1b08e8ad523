"""The Helm chart in deploy/helm/dcgm-collector, rendered and checked with real tools.

Helm's own Go SDK renders and lints it (helm-python-sdk; there is no helm
binary in Debian or on PyPI).  Every rendered object passes the offline
schema checks of tests/manifest_checks.py, the PrometheusRule's groups pass
``promtool check rules``, and the DaemonSet's arguments and environment are
read by the collector's own option parser, so the values are shown to select
the source, port, counters file and web config they say.
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
from pathlib import Path

import bcrypt
import helm_python
import pytest
import yaml
from manifest_checks import object_errors, render_chart
from support import COLLECTOR, command

from dcgm_collector.catalog.counters import default_counters_path
from dcgm_collector.config import parse_config

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "dcgm-collector"
ALERTS = ROOT / "deploy" / "prometheus" / "gpu-alerts.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None and os.environ.get("CI") != "true",
                                    reason="promtool is not installed (Debian package 'prometheus')")
HOSTENGINE = "nvidia-dcgm.gpu-operator.svc:5555"
HASH = bcrypt.hashpw(b"scrape-secret", bcrypt.gensalt(4)).decode()
CUSTOM_CSV = ("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
              "DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n")

AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H200"]}]}]}}}

VALUE_SETS = {
    "default": {},
    "nvml": {"source": {"mode": "nvml"}},
    "remote": {"source": {"mode": "remote", "hostengine": HOSTENGINE}},
    "remote with the host's DCGM": {"source": {"mode": "remote", "hostengine": HOSTENGINE,
                                               "dcgmLibrary": {"hostPath": "/usr/lib/x86_64-linux-gnu"}}},
    "dcgm": {"source": {"mode": "dcgm", "dcgmLibrary": {"hostPath": "/usr/lib/x86_64-linux-gnu",
                                                        "file": "libdcgm.so.4"}}},
    "tls and basic auth": {"webConfig": {"tls": {"secretName": "collector-tls"},
                                         "basicAuth": {"users": {"prometheus": HASH}}},
                           "serviceMonitor": {"enabled": True, "tlsConfig": {"insecureSkipVerify": True}}},
    "monitor and rules": {"serviceMonitor": {"enabled": True, "additionalLabels": {"release": "prometheus"}},
                          "prometheusRule": {"enabled": True}},
    "custom counters": {"counters": {"csv": CUSTOM_CSV}, "podLabels": {"team": "gpu"}, "affinity": AFFINITY},
    "no pod attribution, port 9401": {"kubernetes": {"podAttribution": False}, "port": 9401,
                                       "hostNetwork": True, "extraArgs": ["-c", "500"],
                                       "extraEnv": [{"name": "DCGM_COLLECTOR_WINDOW", "value": "30"}],
                                       "nodeSelector": None, "tolerations": []},
}


def _render(values: dict) -> list[dict]:
    return render_chart(CHART, values)


def _one(docs: list[dict], kind: str) -> dict:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {[d['metadata']['name'] for d in found]}"
    return found[0]


def _container(docs: list[dict]) -> dict:
    (container,) = _one(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"]
    return container


def _collector_config(docs: list[dict]):
    """What the collector would run with: the container's args and literal env through its own parser."""
    container = _container(docs)
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    return parse_config(container["args"], env)


def _volumes(docs: list[dict]) -> dict[str, dict]:
    pod = _one(docs, "DaemonSet")["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in _container(docs)["volumeMounts"]}
    assert set(mounts) == {v["name"] for v in pod["volumes"]}, "a volume without a mount, or the reverse"
    return {v["name"]: {**v, "mount": mounts[v["name"]]} for v in pod["volumes"]}


# --- the chart as a whole ---------------------------------------------------------------------------------------

def test_helm_lint_finds_nothing_above_info():
    report = helm_python.lint(str(CHART), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("copy, original", [
    ("files/gpu-alerts.yml", ALERTS),
    ("files/default-counters.csv", Path(default_counters_path())),
])
def test_the_chart_copies_match_their_originals(copy, original):
    # Helm reads nothing outside the chart: these copies must not drift from the files they copy
    assert (CHART / copy).read_bytes() == original.read_bytes(), f"copy {original} to {CHART / copy} again"


@pytest.mark.parametrize("values", VALUE_SETS.values(), ids=VALUE_SETS.keys())
def test_every_rendered_object_passes_the_schemas(values):
    docs = _render(values)
    assert object_errors(docs) == []
    assert {"DaemonSet", "Service", "ServiceAccount", "ConfigMap"} <= {d["kind"] for d in docs}
    assert {d["metadata"]["namespace"] for d in docs} == {"gpu-monitoring"}


def test_the_schema_check_sees_a_broken_render():
    docs = _render({"podLabels": {"team": "gpu"}})
    daemonset = _one(docs, "DaemonSet")
    daemonset["spec"]["template"]["spec"]["nodeSelectr"] = {}
    assert any("nodeSelectr" in e for e in object_errors(docs))


# --- the source, port and files the values select -------------------------------------------------------------

def test_default_leaves_the_source_to_the_collector():
    docs = _render({})
    config = _collector_config(docs)
    assert (config.sim, config.nvml, config.dcgm_lib, config.remote) == (None, False, None, None)
    assert config.kubernetes is True and config.address == ":9400"
    assert config.collectors == "/etc/dcgm-collector/counters.csv"
    assert _volumes(docs)["counters"]["mount"]["mountPath"] == config.collectors
    assert _container(docs)["image"] == "dcgm-collector:0.1.0"
    pod = _one(docs, "DaemonSet")["spec"]["template"]["spec"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert "nvidia.com/gpu" not in _container(docs)["resources"].get("limits", {}), "would take a GPU from workloads"


def test_nvml_mode_forces_nvml():
    config = _collector_config(_render(VALUE_SETS["nvml"]))
    assert config.nvml is True and config.remote is None and config.dcgm_lib is None


def test_remote_mode_connects_to_the_hostengine():
    config = _collector_config(_render(VALUE_SETS["remote"]))
    assert config.remotes == (HOSTENGINE,) and config.nvml is False and config.dcgm_lib is None


def test_a_host_dcgm_library_is_mounted_read_only_and_named():
    docs = _render(VALUE_SETS["dcgm"])
    config = _collector_config(docs)
    assert config.dcgm_lib == "/opt/dcgm/libdcgm.so.4" and config.remote is None
    library = _volumes(docs)["dcgm-library"]
    assert library["hostPath"] == {"path": "/usr/lib/x86_64-linux-gnu", "type": "Directory"}
    assert library["mount"] == {"name": "dcgm-library", "mountPath": "/opt/dcgm", "readOnly": True}
    remote = _collector_config(_render(VALUE_SETS["remote with the host's DCGM"]))
    assert remote.remotes == (HOSTENGINE,) and remote.dcgm_lib == "/opt/dcgm"


def test_pod_attribution_off_drops_the_host_path():
    docs = _render(VALUE_SETS["no pod attribution, port 9401"])
    config = _collector_config(docs)
    assert config.kubernetes is False and config.address == ":9401" and config.collect_interval_ms == 500
    assert config.window_s == 30
    assert not [v for v in _volumes(docs).values() if "hostPath" in v]
    assert _container(docs)["ports"] == [{"name": "metrics", "containerPort": 9401, "protocol": "TCP"}]
    (port,) = _one(docs, "Service")["spec"]["ports"]
    assert port["port"] == 9401 and port["targetPort"] == "metrics"
    pod = _one(docs, "DaemonSet")["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and "nodeSelector" not in pod and "tolerations" not in pod


def test_pod_attribution_reads_the_kubelet_socket_from_the_host_path():
    docs = _render({})
    config = _collector_config(docs)
    pod_resources = _volumes(docs)["pod-resources"]
    assert pod_resources["hostPath"]["path"] == "/var/lib/kubelet/pod-resources"
    assert pod_resources["mount"]["readOnly"] is True
    assert Path(config.pod_resources_kubelet_socket).parent == Path(pod_resources["mount"]["mountPath"])
    device_plugins = _volumes(docs)["device-plugins"]
    assert device_plugins["hostPath"]["path"] == "/var/lib/kubelet/device-plugins"
    assert device_plugins["mount"]["readOnly"] is True
    assert Path(config.kubernetes_device_checkpoint).parent == Path(device_plugins["mount"]["mountPath"])


def test_counters_config_map_holds_the_shipped_file_or_your_own():
    pod = _one(_render(VALUE_SETS["custom counters"]), "DaemonSet")["spec"]["template"]
    assert pod["spec"]["affinity"] == AFFINITY and pod["metadata"]["labels"]["team"] == "gpu"
    shipped = _one(_render({}), "ConfigMap")["data"]["counters.csv"]
    assert shipped.strip() == Path(default_counters_path()).read_text().strip()
    docs = _render(VALUE_SETS["custom counters"])
    assert _one(docs, "ConfigMap")["data"]["counters.csv"].strip() == CUSTOM_CSV.strip()
    annotation = "checksum/counters"
    assert (_one(docs, "DaemonSet")["spec"]["template"]["metadata"]["annotations"][annotation]
            != _one(_render({}), "DaemonSet")["spec"]["template"]["metadata"]["annotations"][annotation])


@pytest.mark.parametrize("values", [{}, VALUE_SETS["custom counters"]], ids=["shipped", "custom"])
def test_the_counters_config_map_is_a_file_the_collector_accepts(values, tmp_path):
    path = tmp_path / "counters.csv"
    path.write_text(_one(_render(values), "ConfigMap")["data"]["counters.csv"])
    result = subprocess.run(command(COLLECTOR, "check-counters", str(path)), cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "DCGM_FI_DEV_GPU_TEMP" in result.stdout


def _self_signed(directory: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dcgm-collector")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                          serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))


def test_tls_and_basic_auth_give_a_web_config_the_collector_accepts(tmp_path):
    from dcgm_collector.serve import webconfig

    docs = _render(VALUE_SETS["tls and basic auth"])
    config = _collector_config(docs)
    volumes = _volumes(docs)
    assert Path(config.web_config_file).parent == Path(volumes["web-config"]["mount"]["mountPath"])
    secret = _one(docs, "Secret")
    assert volumes["web-config"]["secret"]["secretName"] == secret["metadata"]["name"]
    assert volumes["tls"]["secret"]["secretName"] == "collector-tls"
    text = secret["stringData"][Path(config.web_config_file).name]
    # the collector's own loader, with the mounted TLS Secret's files in a temporary folder
    tls_dir = Path(volumes["tls"]["mount"]["mountPath"])
    _self_signed(tmp_path)
    path = tmp_path / "web-config.yml"
    path.write_text(text.replace(str(tls_dir), str(tmp_path)))
    loaded = webconfig.load(path)
    assert loaded.tls is not None
    assert yaml.safe_load(text)["basic_auth_users"] == {"prometheus": HASH}
    # basic auth guards /health: the readiness probe only connects; HTTPS for the scrape
    container = _container(docs)
    assert container["readinessProbe"]["tcpSocket"] == {"port": "metrics"}
    (endpoint,) = _one(docs, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https" and endpoint["tlsConfig"] == {"insecureSkipVerify": True}


def test_tls_alone_probes_health_over_https():
    docs = _render({"webConfig": {"tls": {"secretName": "collector-tls"}}})
    assert _container(docs)["readinessProbe"]["httpGet"] == {"path": "/health", "port": "metrics", "scheme": "HTTPS"}
    text = _one(docs, "Secret")["stringData"]["web-config.yml"]
    assert "basic_auth_users" not in yaml.safe_load(text)


def test_no_web_config_no_secret():
    docs = _render({})
    assert "Secret" not in {d["kind"] for d in docs}
    assert _collector_config(docs).web_config_file is None


# --- ServiceMonitor and PrometheusRule --------------------------------------------------------------------------

def test_service_monitor_scrapes_the_service_port():
    docs = _render(VALUE_SETS["monitor and rules"])
    monitor, service = _one(docs, "ServiceMonitor"), _one(docs, "Service")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["spec"]["selector"].items() <= (
        _one(docs, "DaemonSet")["spec"]["template"]["metadata"]["labels"].items())
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in service["spec"]["ports"]]
    # DcgmCollectorDown finds the job (the Service's name) by "dcgm"
    assert "dcgm" in service["metadata"]["name"]
    assert {"ServiceMonitor", "PrometheusRule"}.isdisjoint(d["kind"] for d in _render({}))


def test_prometheus_rule_holds_the_shipped_alert_rules():
    rule = _one(_render(VALUE_SETS["monitor and rules"]), "PrometheusRule")
    assert rule["spec"]["groups"] == yaml.safe_load(ALERTS.read_text())["groups"]


@needs_promtool
def test_prometheus_rule_groups_pass_promtool(tmp_path):
    if PROMTOOL is None:
        pytest.fail("promtool is not installed (Debian package 'prometheus'), and CI=true needs it")
    rule = _one(_render(VALUE_SETS["monitor and rules"]), "PrometheusRule")
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# --- bad values -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values, message", [
    ({"source": {"mode": "bogus"}}, "at '/source/mode': value must be one of 'auto', 'nvml', 'dcgm', 'remote'"),
    ({"source": {"mode": "remote"}},
     "source.mode=remote needs source.hostengine (HOST:PORT, e.g. nvidia-dcgm.gpu-operator.svc:5555)"),
    ({"source": {"mode": "auto", "hostengine": HOSTENGINE}},
     "source.hostengine is set but source.mode is auto: set source.mode=remote to use the hostengine"),
    ({"source": {"mode": "dcgm"}},
     "source.mode=dcgm needs source.dcgmLibrary.hostPath: the image holds no libdcgm.so.4"),
    ({"port": "9400"}, "at '/port': got string, want integer"),
    ({"webConfig": {"basicAuth": {"users": {"prometheus": "password"}}}},
     "at '/webConfig/basicAuth/users/prometheus'"),
    ({"serviceMonitor": {"enabled": True}, "service": {"enabled": False}},
     "serviceMonitor.enabled needs service.enabled: a ServiceMonitor selects the Service"),
])
def test_a_bad_value_stops_the_render_with_one_clear_line(values, message):
    with pytest.raises(helm_python.HelmError) as raised:
        _render(values)
    assert message in str(raised.value)
