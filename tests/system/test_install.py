"""Installing from source on a machine without a compiler fails with one clear line saying what to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_building_without_a_compiler_says_what_to_install(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv*", ".ci-venv", "build", "native",
                                                                 "*.so", "*.so.*", "__pycache__", "tests"))
    shutil.copytree(ROOT / "native", source / "native", ignore=shutil.ignore_patterns("build*"))
    env = dict(os.environ, CC=str(tmp_path / "no-such-compiler"))
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                             "-w", str(tmp_path / "wheels"), str(source)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert (f"error: no C compiler ({tmp_path / 'no-such-compiler'} is not on PATH); building dcgm-collector from "
            "source needs a C compiler and the Python headers: on Debian or Ubuntu `apt-get install gcc python3-dev`, "
            "on RHEL, Rocky or Fedora `dnf install gcc python3-devel`; or install a binary wheel, which needs neither"
            ) in output
