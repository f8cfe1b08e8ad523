"""The registry: /metrics is every registered family set, in order, with one ``# EOF``; the targets the outputs read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

from dcgm_collector.expose.multi import MultiExposition
from dcgm_collector.push.remote_write import (
    RemoteWriteFamilies,
    RemoteWriteOptions,
    RemoteWriter,
    render_remote_write_metrics,
)
from dcgm_collector.series.registry import EOF, Registry, TargetSeries
from dcgm_collector.series.stats import SamplerStats

NOW_US = 1_700_000_000_000_000


def _collector_families() -> MultiExposition:
    """The collector's own families over one target that has not sampled yet (self-metrics only)."""
    stats = SamplerStats(ticks=3, samples=12, last_sample_time=NOW_US / 1e6 - 0.5)
    target = SimpleNamespace(name="node", remote=False, stats=stats, reconnects=0, exposition=None,
                             health=lambda now_s=None: (True, "OK"))
    return MultiExposition([target], version="test")


def _writer() -> RemoteWriter:
    writer = RemoteWriter(RemoteWriteOptions("http://127.0.0.1:9/api/v1/write"), lambda: [], "test")
    writer.sent, writer.newest_sent_ms = 40, NOW_US // 1000 - 2000
    writer.failed["503"] += 2
    return writer


class _Source:
    def __init__(self, name: str, found: TargetSeries | None) -> None:
        self.name, self.found = name, found

    def series(self) -> TargetSeries | None:
        return self.found


@pytest.mark.parametrize("openmetrics", [False, True])
def test_metrics_holds_every_output_s_families_as_the_spliced_body_did(tmp_path, openmetrics):
    """Byte for byte what /metrics served when remote write's and the recorder's text was spliced in before
    OpenMetrics' # EOF: the exposition's families, remote write's, the recorder's, then # EOF once."""
    pytest.importorskip("pyarrow")
    from dcgm_collector.push.recorder import Recorder

    exposition, writer = _collector_families(), _writer()
    recorder = Recorder(str(tmp_path), host="node")
    registry = Registry()
    registry.register(exposition)
    registry.register(RemoteWriteFamilies([writer]))
    recorder.start(registry)   # the recorder registers its own families
    try:
        body = registry.render(openmetrics, NOW_US)
    finally:
        recorder.stop()
    spliced = exposition.render(openmetrics, NOW_US)
    extra = render_remote_write_metrics([writer], openmetrics, NOW_US / 1e6) + recorder.render_metrics(openmetrics)
    if openmetrics:
        spliced = spliced[: -len(EOF)] + extra.encode() + EOF.encode()
    else:
        spliced += extra.encode()
    assert body == spliced
    text = body.decode()
    assert 'dcgm_collector_remote_write_samples_sent_total{url="http://127.0.0.1:9/api/v1/write"} 40' in text
    assert text.index("dcgm_collector_build_info") < text.index("dcgm_collector_remote_write_") \
        < text.index("dcgm_collector_recordings_written_total")
    if openmetrics:
        assert text.count("# EOF") == 1 and text.endswith("# EOF\n")
        names = {family.name for family in parse_openmetrics(text)}
        assert {"dcgm_collector_up", "dcgm_collector_remote_write_samples_sent", "dcgm_collector_recorder_pending"
                } <= names
    else:
        assert "# EOF" not in text


def test_a_family_set_is_registered_once_and_leaves_metrics_when_unregistered():
    exposition, remote = _collector_families(), RemoteWriteFamilies([_writer()])
    registry = Registry()
    registry.register(exposition)
    registry.register(remote)
    with pytest.raises(ValueError, match="registered already"):
        registry.register(remote)
    assert b"dcgm_collector_remote_write_" in registry.render(now_us=NOW_US)
    registry.unregister(remote)
    assert registry.families == (exposition,)
    assert registry.render(True, NOW_US) == exposition.render(True, NOW_US)
    assert Registry().render(True) == b"# EOF\n"   # nothing registered: an empty, valid OpenMetrics body


def test_the_outputs_read_the_targets_that_sample_and_name_every_target():
    model = SimpleNamespace(target="a")
    sampling = TargetSeries("a", SimpleNamespace(), model)   # the registry hands them on, it does not read them
    registry = Registry()
    registry.add_source(_Source("a", sampling))
    registry.add_source(_Source("b", None))   # connecting: named (the recorder files triggers for it), not read
    assert [s.name for s in registry.sources()] == ["a", "b"]
    assert registry.series() == [sampling]
    assert registry.sample_models() == [model]
