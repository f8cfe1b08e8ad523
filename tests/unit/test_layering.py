"""The package's layering (pyproject.toml's [tool.importlinter]) holds, and a forbidden import breaks it.

import-linter reads the source; the fresh-interpreter tests check what an import really loads at run time:
every module of the outputs and of the neutral stages imports without the DCGM binding or the collect stage.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dcgm_collector

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(dcgm_collector.__file__).resolve().parent
# the stages that must load neither the binding nor the collect stage, and what they must not load
DOWNSTREAM_OF_SERIES = ("expose", "push", "serve", "dashboard", "top", "report", "series", "rings", "catalog",
                        "recordings")
NEVER_LOADED = ("dcgm_collector.dcgm", "dcgm_collector.collect", "dcgm_collector.collect.sampler")
# at least this many modules in those stages (there are more): an empty walk must fail, not pass
MIN_DOWNSTREAM_MODULES = 50


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
    assert "5 kept, 0 broken" in result.stdout


def _plant(parent: Path, module: str, line: str) -> None:
    path = parent / "dcgm_collector" / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402,F401\n")


def test_rendering_that_imports_the_binding_breaks_the_layers(tmp_path):
    parent = copy_of_package(tmp_path)
    _plant(parent, "expose.labels", "from dcgm_collector.dcgm import Handle")
    result = lint_imports(parent, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the outputs never import the collect stage or the DCGM binding BROKEN" in result.stdout
    assert "dcgm_collector.expose.labels -> dcgm_collector.dcgm" in result.stdout


def test_a_stage_that_imports_upstream_breaks_the_layers(tmp_path):
    parent = copy_of_package(tmp_path)
    _plant(parent, "rings.ring", "from dcgm_collector.expose import labels")
    result = lint_imports(parent, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "each stage imports only the stages below it BROKEN" in result.stdout


def test_an_indirect_import_of_the_sampler_breaks_the_contracts(tmp_path):
    """An output that reaches the sampler through a third module is caught, not only a direct import."""
    parent = copy_of_package(tmp_path)
    _plant(parent, "series.text", "import dcgm_collector.collect.sampler")   # series.text is what push imports
    result = lint_imports(parent, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "the outputs never import the collect stage or the DCGM binding BROKEN" in out
    assert "the neutral stages never import the collect stage or the DCGM binding BROKEN" in out
    assert "dcgm_collector.push" in out and "dcgm_collector.series.text -> dcgm_collector.collect.sampler" in out


def test_push_that_imports_expose_breaks_the_contracts(tmp_path):
    parent = copy_of_package(tmp_path)
    _plant(parent, "push.wire", "from dcgm_collector.expose import labels")
    result = lint_imports(parent, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "push never imports expose (both read dcgm_collector.series) BROKEN" in result.stdout


def downstream_modules() -> list[str]:
    """Every module of the stages below the collect stage's readers, found by walking the package's folders."""
    modules = []
    for stage in DOWNSTREAM_OF_SERIES:
        for path in sorted((PACKAGE / stage).rglob("*.py")):
            parts = path.relative_to(PACKAGE).with_suffix("").parts
            if parts[-1] == "__main__":   # runs its command when imported
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules.append(".".join(("dcgm_collector", *parts)))
    return modules


def test_the_walk_finds_every_downstream_stage():
    modules = downstream_modules()
    assert len(modules) >= MIN_DOWNSTREAM_MODULES, modules
    for stage in DOWNSTREAM_OF_SERIES:
        assert f"dcgm_collector.{stage}" in modules
        assert sum(m.startswith(f"dcgm_collector.{stage}.") for m in modules) >= 1, stage


def loaded_by(module: str, cwd: Path) -> subprocess.CompletedProcess:
    """Import ``module`` in a fresh interpreter; its stdout lists the modules of NEVER_LOADED it loaded."""
    probe = (f"import sys, importlib; importlib.import_module({module!r}); "
             f"print(','.join(m for m in {NEVER_LOADED!r} if m in sys.modules))")
    return subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("module", downstream_modules())
def test_a_downstream_module_loads_neither_the_binding_nor_the_sampler(module, tmp_path):
    """What import-linter checks in the source holds at run time: importing the module, in a fresh interpreter,
    loads neither dcgm_collector.dcgm nor dcgm_collector.collect (the sampler)."""
    result = loaded_by(module, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"importing {module} loaded {result.stdout.strip()}"


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


def test_python_m_help_loads_neither_the_http_server_nor_ssl(tmp_path):
    """The command as a user runs it: ``python -m dcgm_collector --help``, with every import it makes listed."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "dcgm_collector", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
    imported = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "dcgm_collector.cli" in imported   # the listing works: the command's own module is in it
    # the counters checks of check-counters (collect.servable) may load, the sampler and the binding may not
    unwanted = {"ssl", "http.server", "dcgm_collector.serve.server", "dcgm_collector.dcgm",
                "dcgm_collector.collect.sampler"}
    assert not imported & unwanted, f"--help loaded {sorted(imported & unwanted)}"
