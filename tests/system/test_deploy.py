"""The deployment files in deploy/: Kubernetes manifests, systemd unit, Dockerfile.

The manifests are validated offline (tests/manifest_checks.py): the built-in
kinds against Kubernetes' own OpenAPI schemas (kubernetes-validate, strict, so
a misspelt field fails), the ServiceMonitor against a schema written from the
prometheus-operator CRD (monitoring.coreos.com/v1), which kubernetes-validate
does not carry; kubectl kustomize renders the folder's kustomization.  Then
the pieces must agree with each other: ports, names, selectors, the console
script, the environment variables the collector reads.
"""

from __future__ import annotations

import configparser
import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from manifest_checks import KUBERNETES_VERSIONS, SERVICE_MONITOR_SCHEMA, schema_errors
from support import COLLECTOR, command

from dcgm_collector.config import parse_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
UNIT = DEPLOY / "systemd" / "dcgm-collector.service"
ENV_FILE = DEPLOY / "systemd" / "dcgm-collector.env"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
PORT = 9400


KUSTOMIZATION = KUBERNETES / "kustomization.yaml"
KUBECTL = shutil.which("kubectl")
# CI installs kubectl (Debian's kubernetes-client): there a missing kubectl fails instead of skipping
needs_kubectl = pytest.mark.skipif(KUBECTL is None and os.environ.get("CI") != "true",
                                   reason="kubectl is not installed (Debian package 'kubernetes-client')")


def _manifests() -> list[Path]:
    return sorted(p for p in KUBERNETES.glob("*.yaml") if p != KUSTOMIZATION)


def _documents() -> list[dict]:
    docs = []
    for path in _manifests():
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def _kind(kind: str) -> dict:
    found = [doc for doc in _documents() if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


# --- Kubernetes: schemas -------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_built_in_kinds_pass_strict_schema_validation(version):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    kinds = set()
    for doc in _documents():
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            continue
        kubernetes_validate.validate(doc, version, strict=True)
        kinds.add(doc["kind"])
    assert {"DaemonSet", "Service", "Namespace"} <= kinds


def test_the_kubernetes_validator_catches_a_broken_daemonset():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    broken = copy.deepcopy(_kind("DaemonSet"))
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = str(PORT)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)
    misspelt = copy.deepcopy(_kind("DaemonSet"))
    misspelt["spec"]["template"]["spec"]["nodeSelectr"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(misspelt, KUBERNETES_VERSIONS[-1], strict=True)


def _service_monitor_errors(doc: dict) -> list[str]:
    return schema_errors(doc, SERVICE_MONITOR_SCHEMA)


def test_service_monitor_matches_the_crd_schema():
    assert _service_monitor_errors(_kind("ServiceMonitor")) == []


@pytest.mark.parametrize("path, value", [
    (("spec", "endpoints", 0, "interval"), "15 s"),
    (("spec", "endpoints", 0, "scheme"), "ftp"),
    (("spec", "endpoints", 0, "prot"), "metrics"),
    (("spec", "endpoints", 0, "relabelings", 0, "action"), "rename"),
])
def test_the_service_monitor_schema_catches_mistakes(path, value):
    broken = copy.deepcopy(_kind("ServiceMonitor"))
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _service_monitor_errors(broken)
    del broken["spec"]["selector"]
    assert any("'selector' is a required property" in e for e in _service_monitor_errors(broken))


# --- Kubernetes: kustomization -------------------------------------------------------------------------------

def test_kustomization_lists_every_manifest_namespace_first():
    kustomization = yaml.safe_load(KUSTOMIZATION.read_text())
    assert kustomization["kind"] == "Kustomization"
    resources = kustomization["resources"]
    assert sorted(resources) == [p.name for p in _manifests()], "a manifest of the folder is not listed, or twice"
    assert resources[0] == "namespace.yaml"
    (path,) = [p for p in _manifests() if p.name == resources[0]]
    assert [doc["kind"] for doc in yaml.safe_load_all(path.read_text()) if doc] == ["Namespace"]


def _kustomize(directory: Path) -> list[dict]:
    if KUBECTL is None:
        pytest.fail("kubectl is not installed (Debian package 'kubernetes-client'), and CI=true needs it")
    result = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@needs_kubectl
def test_kustomization_renders_every_object_of_the_folder():
    rendered = _kustomize(KUBERNETES)
    def key(doc: dict) -> tuple[str, str]:
        return doc["kind"], doc["metadata"]["name"]
    assert sorted(map(key, rendered)) == sorted(map(key, _documents()))
    # the namespace is created before the objects that live in it
    assert rendered[0]["kind"] == "Namespace"
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in rendered:
        if doc["kind"] == "ServiceMonitor":
            assert _service_monitor_errors(doc) == []
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[-1], strict=True)


@needs_kubectl
def test_kustomize_refuses_a_listed_file_that_is_missing(tmp_path):
    for path in _manifests():
        shutil.copy(path, tmp_path / path.name)
    listing = yaml.safe_load(KUSTOMIZATION.read_text())
    listing["resources"].append("podmonitor.yaml")
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(listing))
    result = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "podmonitor.yaml" in result.stderr


# --- Kubernetes: the pieces fit -------------------------------------------------------------------------------

def _container() -> dict:
    return _kind("DaemonSet")["spec"]["template"]["spec"]["containers"][0]


def test_port_names_and_selectors_line_up():
    daemonset, service, monitor = _kind("DaemonSet"), _kind("Service"), _kind("ServiceMonitor")
    pod_labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert daemonset["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    namespace = _kind("Namespace")["metadata"]["name"]
    assert daemonset["metadata"]["namespace"] == service["metadata"]["namespace"] == namespace

    (container_port,) = _container()["ports"]
    assert container_port == {"name": "metrics", "containerPort": PORT, "protocol": "TCP"}
    (service_port,) = service["spec"]["ports"]
    assert service_port["name"] == "metrics" and service_port["port"] == PORT
    assert service_port["targetPort"] in ("metrics", PORT)
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    env = {e["name"]: e.get("value") for e in _container()["env"]}
    assert env["DCGM_EXPORTER_LISTEN"] == f":{PORT}"
    # the alert rules find the collector's job by name
    assert "dcgm" in service["metadata"]["name"]


def test_daemonset_and_image_leave_the_source_to_the_collector():
    # no --sim, no forced source: the same manifest runs on a driver-only node (NVML) and a DCGM node
    from dcgm_collector.config import parse_config
    container = _container()
    argv = [*container.get("command", [])[1:], *container.get("args", [])]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    config = parse_config(argv, env)
    assert (config.sim, config.nvml, config.dcgm_lib, config.remote) == (None, False, None, None)
    assert not {"DCGM_COLLECTOR_SIM", "DCGM_COLLECTOR_NVML", "DCGM_COLLECTOR_LIBDCGM",
                "DCGM_REMOTE_HOSTENGINE_INFO"} & env.keys()
    assert container["image"] == "dcgm-collector:0.1.0", "the name the documented docker build gives"
    (cmd,) = [args for kind, args in _instructions() if kind == "CMD"]
    assert json.loads(cmd) == []
    dockerfile_env = " ".join(args for kind, args in _instructions() if kind == "ENV")
    assert "DCGM_COLLECTOR_" not in dockerfile_env and "DCGM_REMOTE_HOSTENGINE_INFO" not in dockerfile_env


def test_systemd_unit_says_how_to_install_from_a_checkout():
    header = UNIT.read_text().split("[Unit]")[0]
    assert "pip install dcgm-collector" not in header, "the package is not on a package index"
    venv = Path(_unit()["Service"]["ExecStart"].split()[0]).parent.parent
    assert f"python3 -m venv {venv} && {venv}/bin/pip install /path/to/checkout" in header


def test_daemonset_reads_pod_resources_read_only_on_gpu_nodes():
    pod = _kind("DaemonSet")["spec"]["template"]["spec"]
    host_volumes = {v["hostPath"]["path"]: v["name"] for v in pod["volumes"] if "hostPath" in v}
    # the pod-resources socket, and the device manager's checkpoint beside the device plugins' sockets
    assert set(host_volumes) == {"/var/lib/kubelet/pod-resources", "/var/lib/kubelet/device-plugins"}
    mounts = {m["name"]: m for m in _container()["volumeMounts"]}
    for path, name in host_volumes.items():
        assert mounts[name]["mountPath"] == path and mounts[name]["readOnly"] is True
    config = parse_config([], {})
    assert Path(config.kubernetes_device_checkpoint).parent == Path("/var/lib/kubelet/device-plugins")
    assert pod["nodeSelector"] and any(t["key"] == "nvidia.com/gpu" for t in pod["tolerations"])
    env = {e["name"]: e for e in _container()["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert "nvidia.com/gpu" not in _container()["resources"].get("limits", {}), "would take a GPU from workloads"


def test_probes_use_health_and_liveness_is_forgiving():
    container = _container()
    readiness, liveness = container["readinessProbe"], container["livenessProbe"]
    assert readiness["httpGet"] == {"path": "/health", "port": "metrics"}
    assert liveness.get("tcpSocket", {}).get("port") == "metrics" or liveness["httpGet"]["path"] == "/health"
    assert liveness["failureThreshold"] * liveness["periodSeconds"] >= 60


def _quantity(text: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(text))
    assert match, text
    return float(match.group(1)) * units.get(match.group(2), 1)


def test_resources_have_requests_under_limits():
    resources = _container()["resources"]
    for name in ("cpu", "memory"):
        assert _quantity(resources["requests"][name]) <= _quantity(resources["limits"][name])
    # the measured worst case on the simulator (32 GPUs, every window family): about 110 MiB
    assert _quantity(resources["requests"]["memory"]) >= 110 * 2**20


def test_container_is_locked_down():
    security = _container()["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    assert set(security["capabilities"].get("add", [])) <= {"SYS_ADMIN"}
    assert "privileged" not in security or security["privileged"] is False


# --- systemd ---------------------------------------------------------------------------------------------------

def _unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True, delimiters=("=",))
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_unit_restarts_on_failure_and_reads_an_environment_file():
    unit = _unit()
    assert set(unit.sections()) == {"Unit", "Service", "Install"}
    service = unit["Service"]
    assert service["Restart"] == "on-failure"
    assert service["EnvironmentFile"].lstrip("-").startswith("/etc/")
    assert Path(service["ExecStart"].split()[0]).name == "dcgm-collector"
    assert service.get("PrivateDevices", "no") == "no", "PrivateDevices hides /dev/nvidia*"
    assert "DevicePolicy" not in service and "DeviceAllow" not in service and "ProtectClock" not in service
    assert service["NoNewPrivileges"] == "yes" and service["ProtectSystem"] == "strict"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_environment_file_names_only_variables_the_collector_reads():
    help_text = subprocess.run(command(COLLECTOR, "--help"), cwd=ROOT / "deploy",
                               capture_output=True, text=True, timeout=60).stdout
    assert "DCGM_EXPORTER_LISTEN" in help_text
    names = re.findall(r"^#?([A-Z][A-Z0-9_]+)=", ENV_FILE.read_text(), flags=re.MULTILINE)
    assert "DCGM_EXPORTER_LISTEN" in names
    for name in names:
        assert name in help_text, f"{name} is not an option the collector documents"
    assert re.search(rf"^DCGM_EXPORTER_LISTEN=:{PORT}$", ENV_FILE.read_text(), flags=re.MULTILINE)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path):
    # verify insists that ExecStart exists: point it at a stand-in
    stand_in = tmp_path / "dcgm-collector"
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(0o755)
    exec_start = _unit()["Service"]["ExecStart"].split()[0]
    unit = tmp_path / "dcgm-collector.service"
    unit.write_text(UNIT.read_text().replace(exec_start, str(stand_in)))
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Unknown" not in output and "Failed" not in output, output


# --- Docker ----------------------------------------------------------------------------------------------------

def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) for each Dockerfile line, continuations joined, comments dropped."""
    logical, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    return [(words[0].upper(), words[1] if len(words) > 1 else "") for words in (s.split(None, 1) for s in logical)]


def _console_script() -> str:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    (name,) = [n for n, target in scripts.items() if target == "dcgm_collector.cli:run"]
    return name


def test_dockerfile_runs_the_console_script_on_the_metrics_port():
    instructions = _instructions()
    (entrypoint,) = [args for kind, args in instructions if kind == "ENTRYPOINT"]
    argv = json.loads(entrypoint)  # exec form: SIGTERM reaches the collector, not a shell
    assert Path(argv[0]).name == _console_script()
    assert [args for kind, args in instructions if kind == "EXPOSE"] == [str(PORT)]
    env = " ".join(args for kind, args in instructions if kind == "ENV")
    assert f"DCGM_EXPORTER_LISTEN=:{PORT}" in env.split()
    assert _container()["ports"][0]["containerPort"] == PORT


def test_dockerfile_builds_on_python_slim_and_runs_unprivileged():
    instructions = _instructions()
    args = dict(a.split("=", 1) for kind, a in instructions if kind == "ARG" and "=" in a)
    bases = [a.split()[0] for kind, a in instructions if kind == "FROM"]
    assert args["PYTHON_IMAGE"] == "python:3.11-slim"
    assert bases and all(b == "${PYTHON_IMAGE}" for b in bases)
    (user,) = [a for kind, a in instructions if kind == "USER"]
    assert user not in ("0", "root")
    copies = [a for kind, a in instructions if kind == "COPY"]
    assert any("pip install" in a for kind, a in instructions if kind == "RUN") and copies
