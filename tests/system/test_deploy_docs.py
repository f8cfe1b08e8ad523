"""Every ```sh block of docs/deploying.md runs, as written, in document order.

What is real and what is stood in:

* Each block runs under ``bash -euo pipefail`` in a fresh copy of the
  checkout's files (so ``pip install .`` really builds the package, and the
  files a block writes stay out of the checkout).  ``cp``, ``python3 -m venv``,
  ``pip``, ``openssl`` and the rest are the real programs.
* A block that writes where a host's ``/etc/systemd/``, ``/etc/default/`` or
  ``/opt/dcgm-collector`` would be gets those paths moved under a temporary
  root: the test rewrites just those prefixes in the block's text before it
  runs it, since a test must not install a service on the machine it runs on.
* ``kubectl``, ``helm``, ``docker`` and ``systemctl`` need a cluster, a Docker
  daemon or a running systemd, so tests/deploy_standins/ puts programs of
  those names first on PATH.  Each does the offline part of exactly the
  command given and refuses anything else (exit 2 with one line), so a typo
  in the document fails here:
  - ``kubectl apply -k DIR`` renders the kustomization (``resources`` only)
    and validates every object; ``apply -f`` validates the files' objects
    (tests/manifest_checks.py: Kubernetes' schemas, strict; the
    ServiceMonitor's CRD schema); ``create secret tls`` checks the PEM files;
    ``patch clusterpolicy/cluster-policy`` checks the patch names the GPU
    Operator's ``dcgmExporter``/``dcgm`` switches;
  - ``helm install|upgrade`` renders a local chart with Helm's SDK from the
    -f/--set/--set-string/--set-file values and validates every object; for
    ``nvidia/gpu-operator`` (not renderable offline) it checks each value is
    one the document relies on (``dcgmExporter.enabled``, ``dcgm.enabled``);
  - ``docker build`` parses the Dockerfile and checks its COPY sources;
    ``docker run`` checks its options, that the image was built above, and
    reads the arguments after the image with the collector's own parser;
  - ``systemctl enable|start ...`` finds the unit where the block copied it,
    checks ExecStart's program and the EnvironmentFile are installed, and runs
    ``systemd-analyze verify`` where it is installed.
  Nothing is started, deployed or pulled: what a block would do on a real
  node or cluster is not checked here (the chart and manifests have their own
  tests in test_helm_chart.py and test_deploy.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import copy_checkout

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploying.md"
STANDINS = ROOT / "tests" / "deploy_standins"
CHART_VALUES = ROOT / "deploy" / "helm" / "dcgm-collector" / "values.yaml"
# host paths a block may write: moved under the test's root
HOST_PREFIXES = ("/etc/systemd/", "/etc/default/", "/opt/dcgm-collector")
STOOD_IN = ("kubectl", "helm", "docker", "systemctl")


def _blocks() -> list[tuple[int, str]]:
    """(line number, text) of each ```sh block."""
    text = DOC.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1))
            for m in re.finditer(r"^```sh\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)]


def _environment(tmp: Path) -> dict[str, str]:
    # the stand-ins, then this interpreter (python3 with the test dependencies), then the rest
    path = os.pathsep.join([str(STANDINS), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "PYTHON"))}
    return {**environ, "PATH": path, "DEPLOY_STANDIN_STATE": str(tmp / "state"),
            "DEPLOY_STANDIN_ROOT": str(tmp / "root"), "HOME": str(tmp / "home")}


def _rerooted(block: str, root: Path) -> str:
    for prefix in HOST_PREFIXES:
        block = block.replace(prefix, f"{root}{prefix}")
    return block


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> list[tuple[int, str, subprocess.CompletedProcess]]:
    tmp = tmp_path_factory.mktemp("deploy-docs")
    work = tmp / "checkout"
    copy_checkout(work)
    root = tmp / "root"
    for host_dir in ("etc/systemd/system", "etc/default", "opt"):   # as on any host
        (root / host_dir).mkdir(parents=True)
    (tmp / "home").mkdir()
    environ = _environment(tmp)
    ran = []
    for line, block in _blocks():
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", _rerooted(block, root)], cwd=work, env=environ,
                                capture_output=True, text=True, timeout=600)
        ran.append((line, block, result))
    return ran


def test_the_page_has_its_sections_and_blocks():
    headings = re.findall(r"^##+ (.+)$", DOC.read_text(), flags=re.MULTILINE)
    for wanted in ("Container image", "systemd", "Kubernetes with kustomize", "Helm",
                   "Beside or instead of the GPU Operator's dcgm-exporter"):
        assert wanted in headings
    commands = " ".join(block for _, block in _blocks())
    for program in (*STOOD_IN, "pip install"):
        assert program in commands
    assert "sudo" not in commands, "the page says to run the blocks as root; sudo would escape the stand-in root"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_shell_block_runs(results):
    failures = [f"docs/deploying.md:{line}: exit {r.returncode}\n{block}\n{r.stdout}{r.stderr}"
                for line, block, r in results if r.returncode != 0]
    assert not failures, "\n\n".join(failures)
    # each stood-in command said what it checked
    output = "".join(r.stdout for _, _, r in results)
    for said in ("parsed, COPY sources present", "arguments accepted", "verified" if shutil.which(
            "systemd-analyze") else "files present", "validated (stand-in: not applied)",
                 "rendered and validated", "values ['dcgmExporter.enabled'] checked"):
        assert said in output


def test_the_values_table_names_values_the_chart_has():
    values = yaml.safe_load(CHART_VALUES.read_text())
    table = DOC.read_text().split("| value | default | what it does |")[1].split("\n\n")[0]
    names = re.findall(r"^\| `([^`]+)`(?:, `([^`]+)`)?", table, flags=re.MULTILINE)
    assert len(names) >= 15
    for pair in names:
        for name in filter(None, pair):
            node = values
            for key in name.split("."):
                assert isinstance(node, dict) and key in node, f"{name} is not a value of the chart"
                node = node[key]


# --- the stand-ins refuse what the real tools would -------------------------------------------------------------

@pytest.fixture()
def standin_env(tmp_path) -> dict[str, str]:
    (tmp_path / "root").mkdir()
    (tmp_path / "home").mkdir()
    return _environment(tmp_path)


def _standin(environ: dict[str, str], command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("command, code, message", [
    ("kubectl aply -k deploy/kubernetes/", 2, "kubectl (stand-in): unknown command 'aply'"),
    ("kubectl apply -k deploy/kubernetes/ --prune", 2, "kubectl (stand-in): unknown flag '--prune'"),
    ("kubectl apply -f deploy/kubernetes/daemonset.yaml", 1, "namespace 'gpu-monitoring' is not created before it"),
    ("helm install x deploy/helm/dcgm-collector --sett a=b", 2, "helm (stand-in): unknown flag '--sett'"),
    ("helm install x deploy/helm/dcgm-collector --set source.mode=bogus", 1,
     "at '/source/mode': value must be one of 'auto', 'nvml', 'dcgm', 'remote'"),
    ("helm upgrade gpu-operator nvidia/gpu-operator --reuse-values --set dcgmExporter.enable=false", 1,
     "does not know the values ['dcgmExporter.enable']"),
    ("docker run --gpu all dcgm-collector:0.1.0", 2, "docker (stand-in): unknown flag '--gpu'"),
    ("docker run dcgm-collector:0.1.0", 1, "Unable to find image 'dcgm-collector:0.1.0'"),
    ("docker build -f deploy/docker/Dockerfile -t dcgm-collector:0.1.0 . && "
     "docker run dcgm-collector:0.1.0 --nvml --sim 8", 1,
     "--nvml and --sim each choose where the readings come from: give one of them"),
    ("systemctl enable --now dcgm-collector", 1, "Unit dcgm-collector.service does not exist"),
    ("systemctl enabel dcgm-collector", 2, "systemctl (stand-in): unknown command 'enabel'"),
])
def test_a_standin_refuses_what_the_real_tool_would(standin_env, command, code, message):
    result = _standin(standin_env, command)
    assert result.returncode == code, result.stdout + result.stderr
    assert message in result.stderr


def test_the_docker_standin_checks_copy_sources(standin_env, tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM python:3.11-slim\nCOPY missing.txt /x\n")
    result = _standin(standin_env, f"docker build -f {dockerfile} -t t:1 {tmp_path}")
    assert result.returncode == 1 and f"{dockerfile}:2: COPY source missing.txt is not in {tmp_path}" in result.stderr
