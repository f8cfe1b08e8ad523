"""The sampler's counts as the outputs read them: DCGM's status names without the binding."""

from __future__ import annotations

import subprocess
import sys

from dcgm_collector.series.stats import SamplerStats


def test_failed_calls_are_named_by_their_dcgm_status():
    stats = SamplerStats()
    stats.count_error(-16)
    stats.count_error(-16)
    stats.count_error(-999_999)
    assert stats.errors == 3
    assert stats.error_names == {-16: "DCGM_ST_NOT_WATCHED", -999_999: "DCGM_ST_UNKNOWN_-999999"}


def test_a_reader_names_the_statuses_without_loading_the_binding(tmp_path):
    """The self-metrics and /health name each failed call's status; reading the counts must not load the binding."""
    probe = ("import sys\n"
             "from dcgm_collector.series.stats import SamplerStats\n"
             "stats = SamplerStats(errors_by_code={-16: 2})\n"
             "print(stats.error_names[-16], 'dcgm_collector.dcgm' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["DCGM_ST_NOT_WATCHED", "False"]
