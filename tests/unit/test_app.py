"""The collector's wiring in process: scenario names, targets made from the config, options reaching the sampler."""

from __future__ import annotations

import logging
import threading
import time

from support import http_get, wait_for

from dcgm_collector import app, lifecycle
from dcgm_collector.collect import discovery
from dcgm_collector.config import parse_config
from dcgm_collector.serve.server import MetricsServer

# ---- the collector object in-process (the test process's simulator) ---------------------------

def test_remote_flag_makes_a_target_that_keeps_trying(monkeypatch):
    from dcgm_collector import dcgm
    from dcgm_collector.catalog.counters import parse_counters

    calls = []

    def fake_connect(address, **kwargs):
        calls.append(address)
        raise dcgm.DcgmError(-21, where=f"dcgmConnect_v2({address})")

    monkeypatch.setattr(dcgm.Handle, "connect", staticmethod(fake_connect))
    collector = app.Collector(parse_config(["-r", "node7:5555"], {}))
    [target] = collector._make_targets(parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n"))
    assert (target.name, target.address, target.remote) == ("node7", "node7:5555", True)
    target.start()   # not fatal: the supervisor keeps trying
    try:
        wait_for(lambda: target.state.value == "down", what="the first failed connect")
        ok, reason = target.health()
        assert not ok
        assert reason.startswith("cannot reach hostengine at node7:5555: DCGM_ST_CONNECTION_NOT_VALID (-21)")
    finally:
        target.stop()
    assert calls[0] == "node7:5555"


def test_node_attribution_with_several_hostengines_is_one_warning_saying_it_is_ignored(tmp_path, caplog):
    cases = ((["-k"], "-k is ignored"), (["--hpc-job-mapping-dir", str(tmp_path)], "--hpc-job-mapping-dir is ignored"),
             (["-k", "--hpc-job-mapping-dir", str(tmp_path)], "-k and --hpc-job-mapping-dir are ignored"))
    for flags, ignored in cases:
        caplog.clear()
        collector = app.Collector(parse_config(["-r", "node-a", "-r", "node-b", *flags], {}))
        with caplog.at_level("WARNING"):
            assert collector._start_attribution() is None
        assert [r.getMessage() for r in caplog.records] == [
            f"{ignored}: with several -r hostengines, this node's pods and jobs do not describe the others' GPUs"]


def test_intervals_and_retention_reach_the_sampler(handle, tmp_path):
    counters_file = tmp_path / "c.csv"
    counters_file.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n")
    collector = app.Collector(parse_config(["-c", "400", "--watch-interval", "100", "--retention", "30",
                                            "-d", "g:1", "-f", str(counters_file)], {}))
    collector._open_embedded = lambda library: handle
    [target] = collector._make_targets(collector._read_counters())
    target.start()
    try:
        sampler, exposition = target.generation.sampler, target.exposition
        assert sampler.plan.collect_interval_us == 400_000
        assert sampler.plan.update_freq_us == 100_000
        assert sampler.plan.retention_s == 30.0
        assert sampler.gpu_ids == (1,)
        assert exposition.options.window_s == 15.0
    finally:
        target.stop()


def test_profiling_rows_the_gpus_lack_are_dropped_with_a_warning(handle, tmp_path, caplog):
    supported = handle.supported_profiling_fields(0)
    assert 1001 in supported and 1024 not in supported   # the simulated H100 has no 8th NVDEC
    counters_file = tmp_path / "c.csv"
    counters_file.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, temp\n"
                             "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, graphics engine active\n"
                             "DCGM_FI_PROF_NVDEC_UTIL_7_RATIO, gauge, NVDEC 7\n")
    collector = app.Collector(parse_config(["-f", str(counters_file)], {}))
    with caplog.at_level("WARNING"):
        kept = discovery.drop_unsupported_profiling(handle, collector._read_counters(), None)
    assert [c.name for c in kept] == ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
    assert any(f"{counters_file}:3: skipping DCGM_FI_PROF_NVDEC_UTIL_7_RATIO" in r.getMessage()
               for r in caplog.records)


class _BrokenLabels:
    """An exposition whose label text cannot be encoded: what a bad label value did to every scrape."""

    def __init__(self) -> None:
        self.broken = True

    def write_families(self, parts: list[str], openmetrics: bool, now_us: int | None) -> None:
        parts.append('DCGM_FI_DEV_GPU_TEMP{hostname="node-\udcff"} 40\n' if self.broken
                     else 'DCGM_FI_DEV_GPU_TEMP{hostname="node"} 40\n')

    def health(self) -> tuple[bool, str]:
        return True, "OK"


def test_health_turns_503_while_metrics_cannot_be_rendered():
    collector = app.Collector(parse_config(["-a", "127.0.0.1:0"], {"NODE_NAME": "node"}))
    exposition = collector.exposition = _BrokenLabels()
    collector.registry.register(exposition)
    server = MetricsServer("127.0.0.1:0", collector.metrics, collector.health)
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert http_get(f"{base}/metrics")[0] == 500
        status, body = http_get(f"{base}/health")
        assert status == 503
        assert body.decode().startswith("rendering /metrics failed: UnicodeEncodeError")
        exposition.broken = False   # a good render makes it healthy again
        assert http_get(f"{base}/metrics")[0] == 200
        assert http_get(f"{base}/health") == (200, b"OK")
    finally:
        server.stop()


def test_health_names_the_source_on_a_line_of_its_own_healthy_or_not():
    from dcgm_collector.sources import AUTO_NVML, Source

    collector = app.Collector(parse_config(["-a", "127.0.0.1:0"], {"NODE_NAME": "node"}))
    collector.source = Source("nvml", AUTO_NVML, "chosen because libdcgm.so.4 was not found and "
                              "libnvidia-ml.so.1 loads")
    server = MetricsServer("127.0.0.1:0", collector.metrics, collector.health)
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        source_line = b"source: nvml, chosen because libdcgm.so.4 was not found and libnvidia-ml.so.1 loads"
        assert http_get(f"{base}/health") == (503, b"starting: no sampler yet\n" + source_line)
        exposition = collector.exposition = _BrokenLabels()
        collector.registry.register(exposition)
        exposition.broken = False
        assert http_get(f"{base}/health") == (200, b"OK\n" + source_line)
        exposition.health = lambda: (True, "OK; lost GPU 1 (its series stop)")
        assert http_get(f"{base}/health") == (200, b"OK; lost GPU 1 (its series stop)\n" + source_line)
    finally:
        server.stop()


class _SlowTicks:
    """An exposition whose render of every tick after the first holds until the test lets it finish."""

    def __init__(self) -> None:
        self.ticks = 0
        self.rendering, self.finish = threading.Event(), threading.Event()

    def write_families(self, parts: list[str], openmetrics: bool, now_us: int | None) -> None:
        if self.ticks:
            self.rendering.set()
            assert self.finish.wait(10)
        parts.append(f"DCGM_FI_DEV_GPU_TEMP of tick {self.ticks}\n")

    def health(self) -> tuple[bool, str]:
        return True, "OK"


def test_a_scrape_while_another_renders_a_new_tick_answers_with_the_tick_before():
    """Ten scrapers after a tick: one renders, the others answer at once with the body kept from the tick
    before (rendered within one collect interval), not queued behind the render; an older body is never served."""
    import dataclasses

    collector = app.Collector(parse_config(["-a", "127.0.0.1:0", "-c", "60000"], {"NODE_NAME": "node"}))
    exposition = collector.exposition = _SlowTicks()
    collector.registry.register(exposition)

    def body() -> bytes:
        return b"".join(collector.metrics(False))

    assert body().startswith(b"DCGM_FI_DEV_GPU_TEMP of tick 0\n")
    exposition.ticks = 1
    answers: list[bytes] = []
    leader = threading.Thread(target=lambda: answers.append(body()))
    leader.start()
    assert exposition.rendering.wait(10)
    assert body().startswith(b"DCGM_FI_DEV_GPU_TEMP of tick 0\n")   # at once, the render still runs
    exposition.finish.set()
    leader.join(10)
    assert answers[0].startswith(b"DCGM_FI_DEV_GPU_TEMP of tick 1\n")
    assert body().startswith(b"DCGM_FI_DEV_GPU_TEMP of tick 1\n")

    # a kept body older than one interval is not served: the scrape waits for the render and gets the new tick
    collector.config = dataclasses.replace(collector.config, collect_interval_ms=0)
    exposition.rendering.clear()
    exposition.finish.clear()
    exposition.ticks = 2
    leader = threading.Thread(target=lambda: answers.append(body()))
    leader.start()
    assert exposition.rendering.wait(10)
    follower = threading.Thread(target=lambda: answers.append(body()))
    follower.start()
    follower.join(0.3)
    assert follower.is_alive()   # waiting for the render
    exposition.finish.set()
    leader.join(10)
    follower.join(10)
    assert [a.split(b"\n")[0] for a in answers[1:]] == [b"DCGM_FI_DEV_GPU_TEMP of tick 2"] * 2


# ---- reloads and the stop never hold up the signals ---------------------------------------------

def test_sighups_during_a_reload_are_coalesced_into_one_more(caplog):
    release = threading.Event()
    calls = []

    def slow_reload():
        calls.append(len(calls))
        release.wait(5)

    caplog.set_level(logging.INFO, logger="dcgm_collector")
    reloads = lifecycle.Reloads(slow_reload)
    reloads.request()
    wait_for(lambda: calls == [0], what="the first reload")
    for _ in range(3):   # what the signal handler's loop does: returns at once
        reloads.request()
    assert calls == [0]
    assert caplog.text.count("a reload is under way") == 1
    release.set()
    wait_for(lambda: calls == [0, 1], what="the coalesced reload")
    time.sleep(0.2)
    assert calls == [0, 1]
    reloads.request()   # once idle, a SIGHUP reloads again
    wait_for(lambda: calls == [0, 1, 2], what="a later reload")


def test_a_stop_that_dcgm_holds_up_is_given_up_after_the_grace(monkeypatch):
    stuck = threading.Event()
    collector = app.Collector(parse_config(["--sim", "1"], {}))
    monkeypatch.setattr(collector, "stop", lambda: stuck.wait(30))
    started = time.monotonic()
    assert lifecycle.stop_within(collector, 0.3) is False
    assert 0.3 <= time.monotonic() - started < 1.0
    stuck.set()
    assert lifecycle.stop_within(app.Collector(parse_config(["--sim", "1"], {})), 1.0) is True   # nothing to stop


# ---- the history API's admission ------------------------------------------------------------------

class _OneRing:
    """A target stand-in whose sample model is one ring of GPU 0's power (what the registry reads)."""

    name = "node"

    def __init__(self) -> None:
        from dcgm_collector.rings.ring import EventRing, RingBuffer
        from dcgm_collector.series.samples import RingSeries, SampleModel, SeriesInfo

        ring = RingBuffer([(1, 0, 155)], capacity=8)
        ring.append([1_000_000, 2_000_000], [[300.0], [301.0]])
        info = SeriesInfo("DCGM_FI_DEV_POWER_USAGE", (("gpu", "0"),), (1, 0), 0, 155, "DCGM_FI_DEV_POWER_USAGE", False,
                          0)
        self.model = SampleModel("node", (), (RingSeries(ring, (info,)),), EventRing(4), ())

    def series(self):
        from types import SimpleNamespace

        return SimpleNamespace(name=self.name, view=None, model=self.model)


def test_history_answers_beyond_the_cap_are_503s_in_prometheus_shape_until_a_slot_comes_back():
    import json

    from dcgm_collector.serve.admission import Admission
    from dcgm_collector.serve.server import Request

    collector = app.Collector(parse_config(["-a", "127.0.0.1:0"], {"NODE_NAME": "node"}))
    collector.exposition = source = _OneRing()
    collector.registry.add_source(source)
    collector.admission = Admission(heavy_slots=1, queue_s=0.0)

    def ask(**query):
        return collector.samples(Request("GET", "/api/v1/samples", {k: [v] for k, v in query.items()}, b"", "client"))

    first = ask(field="155", since="0")
    assert first.status == 200 and first.sent is not None and collector.admission.heavy_in_flight == 1
    assert json.loads(b"".join(first.body))["data"]["series"][0]["samples"] == [[1_000_000, 300.0], [2_000_000, 301.0]]
    busy = ask(field="155", since="0")   # the slot is held until the server has sent the first answer
    assert busy.status == 503 and busy.headers == {"Retry-After": "1"} and busy.body.count(b"\n") == 1
    assert json.loads(busy.body) == {"status": "error", "errorType": "unavailable",
                                     "error": "busy: the history API is building or sending as many answers as it may "
                                              "at once (1); retry in 1 s"}
    bad = ask(field="155", since="1e308")   # a bad query costs no slot and is a 400 while the API is busy
    assert bad.status == 400 and json.loads(bad.body)["error"].startswith("since: '1e308' is out of range")
    first.sent()
    assert collector.admission.heavy_in_flight == 0
    again = ask(field="155", since="0")
    assert again.status == 200
    again.sent()
    unknown = ask(field="DCGM_FI_NOPE")   # found out while answering: the slot comes back at once
    assert unknown.status == 400 and collector.admission.heavy_in_flight == 0
