"""The package's layering (pyproject.toml's [tool.importlinter]) holds, and a forbidden import breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dcgm_collector

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(dcgm_collector.__file__).resolve().parent


def lint_imports(package_parent: Path, config: Path) -> subprocess.CompletedProcess:
    """import-linter's command over the dcgm_collector package found in ``package_parent``."""
    env = dict(os.environ, PYTHONPATH=str(package_parent))
    command = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
               "sys.exit(lint_imports_command())", "--config", str(config), "--no-cache"]
    return subprocess.run(command, cwd=package_parent, env=env, capture_output=True, text=True, timeout=120)


def copy_of_package(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "dcgm_collector", ignore=shutil.ignore_patterns("*.so", "*.so.*", "__pycache__",
                                                                                          "lib", "*.c"))
    return tmp_path


def test_the_package_keeps_its_layers(tmp_path):
    result = lint_imports(copy_of_package(tmp_path), ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_rendering_that_imports_the_binding_breaks_the_layers(tmp_path):
    parent = copy_of_package(tmp_path)
    text = parent / "dcgm_collector" / "expose" / "text.py"
    text.write_text(text.read_text() + "\nfrom dcgm_collector.dcgm import Handle  # noqa: E402,F401\n")
    result = lint_imports(parent, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rendering never calls the DCGM binding (it reads rings and neutral types) BROKEN" in result.stdout
    assert "dcgm_collector.expose.text -> dcgm_collector.dcgm" in result.stdout


def test_a_stage_that_imports_upstream_breaks_the_layers(tmp_path):
    parent = copy_of_package(tmp_path)
    ring = parent / "dcgm_collector" / "collect" / "ring.py"
    ring.write_text(ring.read_text() + "\nfrom dcgm_collector.expose import text  # noqa: E402,F401\n")
    result = lint_imports(parent, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "each stage imports only the stages below it BROKEN" in result.stdout


def test_help_loads_neither_the_http_server_nor_ssl(tmp_path):
    """--help reads the flag table only: no HTTP server, no TLS, no DCGM binding, in a fresh interpreter."""
    probe = ("import contextlib, io, sys\n"
             "from dcgm_collector import cli\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
             "    cli.main(['--help'])\n"
             "assert 'usage:' in out.getvalue()\n"
             "loaded = [m for m in ('ssl', 'http.server', 'dcgm_collector.serve.server', 'dcgm_collector.dcgm')\n"
             "          if m in sys.modules]\n"
             "print(','.join(loaded))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"--help loaded {result.stdout.strip()}"
