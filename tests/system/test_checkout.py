"""Running from a source checkout that was never built says exactly what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dcgm_collector

PACKAGE = Path(dcgm_collector.__file__).resolve().parent


def unbuilt_checkout(tmp_path: Path, keep_extension: bool = False) -> Path:
    """A copy of the package's Python sources beside a setup.py, as a fresh clone has them."""
    built = ("*.so.*", "lib") if keep_extension else ("*.so", "*.so.*", "lib")
    shutil.copytree(PACKAGE, tmp_path / "dcgm_collector", ignore=shutil.ignore_patterns("__pycache__", *built))
    (tmp_path / "setup.py").write_text("# the checkout's setup.py\n")
    return tmp_path


def run_in(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    return subprocess.run([sys.executable, *args], cwd=checkout, env=env, capture_output=True, text=True, timeout=60)


def test_the_binding_from_an_unbuilt_checkout_names_the_editable_install(tmp_path):
    checkout = unbuilt_checkout(tmp_path)
    result = run_in(checkout, "-m", "dcgm_collector", "--sim", "2", "-a", "127.0.0.1:0")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"dcgm-collector: error: dcgm_collector is imported from the source folder {checkout}, which has no "
        "compiled extension: run `pip install -e .` there to build it in place, or run from outside "
        "the checkout to use the installed package")


def test_the_engine_from_an_unbuilt_checkout_names_the_editable_install(tmp_path):
    checkout = unbuilt_checkout(tmp_path)
    result = run_in(checkout, "-m", "dcgm_collector.engine", "libdir")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: dcgm_collector is imported from the source folder {checkout}, which has no compiled extension: "
        "run `pip install -e .` there to build it in place, or run from outside the checkout to use the installed "
        "package")


def test_an_engine_library_missing_from_the_checkout_names_the_editable_install(tmp_path):
    checkout = unbuilt_checkout(tmp_path, keep_extension=True)
    result = run_in(checkout, "-m", "dcgm_collector.engine", "libdir")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: the engine's libdcgm.so.4 is not built in the source folder {checkout}: run `pip install -e .` "
        "there to build it in place, or run from outside the checkout to use the installed package")


def test_check_counters_needs_no_build(tmp_path):
    checkout = unbuilt_checkout(tmp_path)
    result = run_in(checkout, "-m", "dcgm_collector", "check-counters",
                    str(checkout / "dcgm_collector" / "data" / "default-counters.csv"))
    assert result.returncode == 0, result.stderr
    assert "26 rows" in result.stdout.splitlines()[-1]
