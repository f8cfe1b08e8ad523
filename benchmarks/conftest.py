"""Benchmarks: ``pytest benchmarks/ --benchmark-only``.

Benchmark modules are named ``bench_*.py`` so that the test suite's run
never collects them; this hook collects them when benchmarks/ is asked for.
"""

from __future__ import annotations

import pytest


def pytest_collect_file(file_path, parent):
    # a file named on the command line is collected by pytest's own python plugin already
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None
