"""Remote write: every sample the rings hold reaches a receiver once, under its /metrics name.

The collector runs as a process on the simulator, sampling every 100 ms, and
pushes to real receivers, each in turn (Debian's Prometheus with its
remote-write receiver on, and Debian's VictoriaMetrics), and to a stand-in
receiver on loopback (tests/remote_write_standin.py) that records each
request and answers what a test wants: 400s, 503s, nothing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text
from remote_write_standin import Hold, RawReceiver, StandIn, answer, write_request_module
from support import (
    COLLECTOR,
    PROMETHEUS,
    VICTORIA_METRICS,
    free_port,
    get_json,
    http_get,
    last_line,
    launch,
    log_messages,
    lost_gpu_scenario,
    samples,
    self_signed_certificate,
    start_prometheus,
    start_victoria_metrics,
    stop_process,
    wait_for,
    wait_until,
)

pytestmark = pytest.mark.slow
needs_prometheus = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian package "
                                                                 "'prometheus')")
# CI installs victoria-metrics and must not skip this (the CI variable is set there)
needs_victoria_metrics = pytest.mark.skipif(VICTORIA_METRICS is None and not os.environ.get("CI"),
                                            reason="victoria-metrics is not installed (Debian package "
                                                   "'victoria-metrics')")

# two GPUs; three XID 13 on GPU 0 two seconds in
SCENARIO = """seed = 5
[[gpu]]
model = "H100"
count = 2
workload = "training"

[[event]]
at = 2.0
gpu = 0
kind = "xid"
xid = 13
count = 3
interval = 0.1
"""
POWER = "DCGM_FI_DEV_POWER_USAGE"
# the families of a window aggregate on /metrics, which remote write does not send (it sends the samples)
WINDOW_SUFFIXES = ("_min", "_max", "_avg")


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    return write_request_module(tmp_path_factory.mktemp("proto"))


@pytest.fixture
def standin(messages):
    receiver = StandIn(messages).start()
    yield receiver
    receiver.stop()


@pytest.fixture
def raw(messages):
    """A receiver on a bare socket, for answers no HTTP server library gives."""
    receiver = RawReceiver(messages)
    yield receiver
    receiver.stop()


class Collector:
    """The collector process, sampling every 100 ms, with its log in a file."""

    def __init__(self, work: Path, *flags: str, scenario_text: str = SCENARIO) -> None:
        scenario = self.scenario = work / "scenario.toml"
        scenario.write_text(scenario_text)
        self.port = free_port()
        self.log_path = work / "collector.log"
        self.log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in end()
        self.proc = launch(COLLECTOR, "--sim", str(scenario), "-a", f"127.0.0.1:{self.port}", "-c", "100",
                           "--watch-interval", "100", *flags, cwd=work, stdout=self.log_file,
                           stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        wait_until("collector /health", lambda: http_get(f"{self.url}/health")[0] == 200, self.proc, 30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def metrics(self, openmetrics: bool = False) -> str:
        request = urllib.request.Request(f"{self.url}/metrics", headers={
            "Accept": "application/openmetrics-text; version=1.0.0" if openmetrics else "text/plain"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read().decode()

    def self_metric(self, name: str, **labels: str) -> float | None:
        """The sum of the series of one dcgm_collector_remote_write_* family whose labels include ``labels``."""
        found = [value for metric, have, value in samples(self.metrics())
                 if metric == f"dcgm_collector_remote_write_{name}" and labels.items() <= have.items()]
        return sum(found) if found else None

    def end(self, signum: int = signal.SIGTERM) -> int | None:
        code = stop_process(self.proc, signum)
        self.log_file.close()
        return code


def served_labels(collector: Collector, name: str) -> list[dict[str, str]]:
    return [labels for metric, labels, _ in samples(collector.metrics()) if metric == name]


def prometheus_samples(prometheus_url: str, selector: str, at: float) -> dict[tuple, list[tuple[int, float]]]:
    """The raw samples Prometheus stores for a selector over the hour before ``at``: {labels: [(ts ms, value)]}."""
    answer = get_json(f"{prometheus_url}/api/v1/query?" + urllib.parse.urlencode(
        {"query": f"{selector}[1h]", "time": f"{at:.3f}"}))
    assert answer["status"] == "success", answer
    return {tuple(sorted(series["metric"].items())): [(round(float(t) * 1000), float(v)) for t, v in series["values"]]
            for series in answer["data"]["result"]}


def standin_samples(standin: StandIn, name: str) -> dict[tuple, list[tuple[int, float]]]:
    return {tuple(sorted(labels)): values for labels, values in standin.accepted().items()
            if dict(labels)["__name__"] == name}


def in_window(series: dict[tuple, list], low_ms: int, high_ms: int) -> dict[tuple, list]:
    return {labels: [s for s in values if low_ms <= s[0] <= high_ms] for labels, values in series.items()}


class Receiver:
    """A real remote-write receiver on a loopback port, restartable on the same data folder."""

    def __init__(self, tmp_path: Path, name: str, launch: Callable[[int, IO[bytes]], subprocess.Popen],
                 ready_path: str, stored: Callable[[str, str], dict[tuple, list[tuple[int, float]]]]):
        self.tmp_path, self.name, self.launch = tmp_path, name, launch
        self.ready_path, self._stored = ready_path, stored
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.write_url = f"{self.url}/api/v1/write"
        self.proc: subprocess.Popen | None = None
        self.logs: list[IO[bytes]] = []

    def start(self) -> None:
        log = open(self.tmp_path / f"{self.name}-{len(self.logs)}.log", "wb")  # noqa: SIM115 - closed in close()
        self.logs.append(log)
        self.proc = self.launch(self.port, log)
        wait_until(f"{self.name} ready", lambda: http_get(f"{self.url}{self.ready_path}")[0] == 200, self.proc, 30)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def stored(self, selector: str) -> dict[tuple, list[tuple[int, float]]]:
        """What the receiver holds for a selector: {labels: [(ts ms, value)]}."""
        return self._stored(self.url, selector)

    def close(self) -> None:
        self.stop()
        for log in self.logs:
            log.close()


@pytest.fixture
def prometheus(tmp_path):
    """Prometheus with its remote-write receiver on."""
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\n")

    def launch(port: int, log: IO[bytes]) -> subprocess.Popen:
        return start_prometheus(config, tmp_path, port, log, "--web.enable-remote-write-receiver")

    server = Receiver(tmp_path, "prometheus", launch, "/-/ready",
                      lambda url, selector: prometheus_samples(url, selector, time.time()))
    server.start()
    yield server
    server.close()


@pytest.fixture
def victoria_metrics(tmp_path):
    """VictoriaMetrics (single node)."""
    server = Receiver(tmp_path, "victoria-metrics", lambda port, log: start_victoria_metrics(tmp_path, port, log),
                      "/health", victoria_samples)
    server.start()
    yield server
    server.close()


# the real receivers each end-to-end test runs against: a fixture name each
RECEIVERS = [pytest.param("prometheus", marks=needs_prometheus),
             pytest.param("victoria_metrics", marks=needs_victoria_metrics)]


@pytest.fixture
def receiver(request):
    """The running receiver that the test's parameter names (see RECEIVERS)."""
    return request.getfixturevalue(request.param)


def victoria_samples(url: str, selector: str) -> dict[tuple, list[tuple[int, float]]]:
    """The raw samples VictoriaMetrics stores for a selector over the last hour: {labels: [(ts ms, value)]}.

    /api/v1/export answers one JSON object a line, a series' labels with its samples in time order."""
    now = time.time()
    status, body = http_get(f"{url}/api/v1/export?" + urllib.parse.urlencode(
        {"match[]": selector, "start": f"{now - 3600:.3f}", "end": f"{now + 60:.3f}"}), timeout=5)
    assert status == 200, body[:500]
    out = {}
    for line in body.decode().splitlines():
        series = json.loads(line)
        out[tuple(sorted(series["metric"].items()))] = list(zip(series["timestamps"], map(float, series["values"])))
    return out


def newest(series: dict) -> int:
    """The time of the newest sample that every series has reached (0 when there is none)."""
    return min((max(t for t, _ in v) for v in series.values() if v), default=0)


def assert_one_sample_per_tick(labels: tuple, times: list[int]) -> None:
    """In time order, no repeats, no gaps: DCGM samples every 100 ms (its first samples may come closer, its
    clock drifts a few ms), so a step of 200 ms is a missing sample."""
    steps = [b - a for a, b in zip(times, times[1:])]
    assert steps and all(0 < step < 180 for step in steps), f"{labels}: steps {sorted(set(steps))}"


def caught_up(collector: Collector, url: str) -> bool:
    """Whether the sender to ``url`` holds nothing and its newest delivered sample is fresh."""
    lag = collector.self_metric("lag_seconds", url=url)
    return collector.self_metric("queue_samples", url=url) == 0 and lag is not None and lag < 1.5


def assert_stored_every_sample_once(collector: Collector, standin: StandIn,
                                    stored_of: Callable[[str], dict[tuple, list[tuple[int, float]]]]) -> None:
    """A receiver stores what /metrics serves, every sample once, the same samples the stand-in got.

    The collector pushes to that receiver and to ``standin`` with the label cluster="test";
    ``stored_of(selector)`` is what the receiver holds for a selector: {labels: [(ts ms, value)]}.
    """
    scraped = []   # (time, value) that /metrics served for GPU 0's power
    for _ in range(16):
        time.sleep(0.5)
        [value] = [v for name, labels, v in samples(collector.metrics()) if name == POWER and labels["gpu"] == "0"]
        scraped.append((time.time(), value))
    end_ms = round(scraped[-1][0] * 1000) + 500
    wait_for(lambda: newest(stored_of(POWER)) >= end_ms and newest(standin_samples(standin, POWER)) >= end_ms,
             timeout=15, what="both receivers past the last scrape", log=collector.log)
    stored = stored_of(POWER)
    received = standin_samples(standin, POWER)
    # the series are /metrics' series, with the extra label
    expected_labels = sorted(tuple(sorted({**labels, "__name__": POWER, "cluster": "test"}.items()))
                             for labels in served_labels(collector, POWER))
    assert sorted(stored) == expected_labels
    assert sorted(received) == expected_labels
    for labels, values in stored.items():
        times = [t for t, _ in values]
        assert times == sorted(set(times)), f"{labels}: duplicate or unordered samples"
        assert_one_sample_per_tick(labels, times)
        assert len(values) >= 70   # about 8 s at 10 Hz
    # the same samples as the other receiver got, over the same time
    high = min(max(t for t, _ in v) for v in stored.values())
    low = max(min(t for t, _ in v) for v in received.values())
    assert in_window(stored, low, high) == in_window(received, low, high)
    # what /metrics served was a sample of the series at the time
    gpu0 = next(v for labels, v in stored.items() if ("gpu", "0") in labels)
    for at, value in scraped:
        recent = [v for t, v in gpu0 if at * 1000 - 3000 <= t <= at * 1000 + 500]   # DCGM stamps it
        assert value in recent, (at, value, recent)
    # the XID events, as samples of the XID series at their own times
    xid = stored_of("DCGM_FI_DEV_XID_ERRORS")
    [(labels, values)] = xid.items()
    assert dict(labels)["gpu"] == "0" and dict(labels)["cluster"] == "test"
    assert [v for _, v in values] == [13.0, 13.0, 13.0]


def assert_stored_every_served_series(collector: Collector,
                                      stored_of: Callable[[str], dict[tuple, list[tuple[int, float]]]]) -> None:
    """Every series of every sampled family /metrics serves is stored with its labels (and cluster="test")
    and the value /metrics served: the newest sample of the series at the scrape (a field may be sampled
    seldom) or one taken about then.  /metrics writes %f (6 decimals); VictoriaMetrics keeps 12 significant
    digits."""
    before = time.time()
    served = [(name, labels, value) for name, labels, value in samples(collector.metrics())
              if name.startswith("DCGM_FI_") and not name.endswith(WINDOW_SUFFIXES)]
    after = time.time()
    assert {name for name, _, _ in served} >= {POWER, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_XID_ERRORS"}

    def key(name: str, labels: dict[str, str]) -> tuple:
        return tuple(sorted({**labels, "__name__": name, "cluster": "test"}.items()))

    def unmatched(stored: dict[tuple, list[tuple[int, float]]]) -> list[tuple]:
        out = []
        for name, labels, value in served:
            values = stored.get(key(name, labels), [])
            older = [v for t, v in values if t < before * 1000 - 3000][-1:]
            candidates = older + [v for t, v in values if before * 1000 - 3000 <= t <= after * 1000 + 500]
            if not any(abs(v - value) <= 5e-7 + 1e-11 * abs(value) for v in candidates):
                out.append((name, labels, value, candidates[-5:]))
        return out

    every_family = '{__name__=~"DCGM_FI_.*"}'
    deadline = time.monotonic() + 15   # until what was sent by then is stored and searchable
    while unmatched(stored_of(every_family)) and time.monotonic() < deadline:
        time.sleep(0.2)
    stored = stored_of(every_family)
    assert sorted(stored) == sorted(key(name, labels) for name, labels, _ in served)
    assert unmatched(stored) == []


@pytest.mark.parametrize("receiver", RECEIVERS, indirect=True)
def test_a_receiver_stores_every_sample_once_under_the_metrics_names(tmp_path, receiver, standin):
    collector = Collector(tmp_path, "--remote-write-url", receiver.write_url, "--remote-write-url", standin.url,
                          "--remote-write-label", "cluster=test")
    try:
        assert_stored_every_sample_once(collector, standin, receiver.stored)
        assert_stored_every_served_series(collector, receiver.stored)
        assert collector.self_metric("samples_dropped_total") == 0, collector.metrics() + collector.log()
        assert collector.self_metric("requests_failed_total", url=receiver.write_url) is None
        # the headers a receiver expects
        headers = standin.requests[0].headers
        assert headers["Content-Encoding"] == "snappy"
        assert headers["Content-Type"] == "application/x-protobuf"
        assert headers["X-Prometheus-Remote-Write-Version"] == "0.1.0"
        assert headers["User-Agent"].startswith("dcgm-collector/")
        assert f"remote write to {receiver.write_url}: every sample" in collector.log()
    finally:
        assert collector.end() == 0, collector.log()


@pytest.mark.parametrize("receiver", RECEIVERS, indirect=True)
def test_a_receiver_restart_leaves_no_gap(tmp_path, receiver, standin):
    collector = Collector(tmp_path, "--remote-write-url", receiver.write_url, "--remote-write-url", standin.url)
    try:
        wait_for(lambda: caught_up(collector, receiver.write_url), timeout=15, what="first samples stored",
                 log=collector.log)
        before_ms = round(time.time() * 1000)
        receiver.stop()
        time.sleep(4)
        failed = collector.self_metric("requests_failed_total", url=receiver.write_url)
        assert failed and failed > 0   # the sender noticed...
        assert served_labels(collector, POWER)   # ...while /metrics carried on
        receiver.start()
        restarted_ms = round(time.time() * 1000)
        wait_for(lambda: newest(receiver.stored(POWER)) > restarted_ms + 1000
                 and newest(standin_samples(standin, POWER)) > restarted_ms + 1000,
                 timeout=30, what="samples from after the restart in both receivers", log=collector.log)
        stored = receiver.stored(POWER)
        received = standin_samples(standin, POWER)
        low, high = before_ms - 1000, min(newest(stored), newest(received))
        outage = in_window(stored, low, high)
        assert outage == in_window(received, low, high)
        for labels, values in outage.items():
            times = [t for t, _ in values]
            assert_one_sample_per_tick(labels, times)
            assert times[0] < before_ms and times[-1] > restarted_ms   # across the whole outage
        assert collector.self_metric("samples_dropped_total") == 0
    finally:
        assert collector.end() == 0, collector.log()


def test_the_collector_pushes_to_an_https_receiver_it_trusts(tmp_path, messages):
    """The command, not the writer alone: the collector imports http.client without OpenSSL unless a remote
    write URL is https (cli), so this is what shows an https URL still gets its HTTPSConnection."""
    cert, key = self_signed_certificate(tmp_path, "receiver", "receiver")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    receiver = StandIn(messages).start(tls=server)
    assert receiver.url.startswith("https://")
    collector = Collector(tmp_path, "--remote-write-url", receiver.url, "--remote-write-ca-file", str(cert),
                          "--remote-write-flush-interval", "0.5")
    try:
        wait_for(lambda: standin_samples(receiver, POWER), timeout=15, what="samples over https", log=collector.log)
        assert collector.self_metric("samples_dropped_total") == 0
    finally:
        assert collector.end() == 0, collector.log()
        receiver.stop()


def test_a_reload_sends_no_sample_twice_and_skips_none(tmp_path, standin):
    collector = Collector(tmp_path, "--remote-write-url", standin.url, "--remote-write-flush-interval", "0.5")
    try:
        wait_for(lambda: standin_samples(standin, POWER), timeout=15, what="first samples", log=collector.log)
        reload_ms = round(time.time() * 1000)
        collector.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded" in collector.log(), timeout=15, what="the reload", log=collector.log)
        wait_for(lambda: all(v[-1][0] > reload_ms + 3000 for v in standin_samples(standin, POWER).values()),
                 timeout=15, what="samples well after the reload", log=collector.log)
        for labels, values in standin_samples(standin, POWER).items():
            times = [t for t, _ in values]
            assert times[0] < reload_ms < times[-1]
            assert times == sorted(set(times)), f"{labels}: a sample sent twice"
            assert_one_sample_per_tick(labels, times)
        assert collector.self_metric("samples_dropped_total") == 0
    finally:
        assert collector.end() == 0, collector.log()


def test_a_refused_batch_is_dropped_and_logged_once_and_5xx_is_retried(tmp_path, standin):
    answers = {2: (400, "out of order sample for series 12345"), 3: (400, "out of order sample for series 678"),
               5: (503, "busy"), 6: (503, "busy")}
    standin.answer = lambda n: answers.get(n, (204, ""))
    collector = Collector(tmp_path, "--remote-write-url", standin.url, "--remote-write-flush-interval", "0.5")
    try:
        wait_for(lambda: len(standin.requests) >= 10, timeout=30, what="ten requests", log=collector.log)
        requests = list(standin.requests)
        url = standin.url
        assert collector.self_metric("requests_failed_total", url=url, code="400") == 2
        assert collector.self_metric("requests_failed_total", url=url, code="503") == 2
        assert collector.self_metric("samples_dropped_total", url=url, reason="rejected") == \
            requests[1].samples + requests[2].samples
        assert collector.self_metric("samples_retried_total", url=url) == requests[4].samples * 2
        assert requests[4].series == requests[5].series == requests[6].series   # the same batch, sent again
        refused = [m for level, m in log_messages(collector.log()) if "HTTP 400" in m]
        assert len(refused) == 1, refused
        assert "out of order sample" in refused[0] and "DCGM_FI_" in refused[0]   # names a series
        # nothing sent twice once accepted, and the batches after the refused ones went on
        for labels, values in standin.accepted().items():
            times = [t for t, _ in values]
            assert times == sorted(set(times)), labels
        assert requests[3].status == 204 and requests[3].samples > 0
        # the self-metrics parse in both formats
        for parse, openmetrics in ((parse_text, False), (parse_openmetrics, True)):
            families = {f.name: f for f in parse(collector.metrics(openmetrics))}
            sent = families["dcgm_collector_remote_write_samples_sent"]
            assert sent.type == "counter"
            assert [s.name for s in sent.samples] == ["dcgm_collector_remote_write_samples_sent_total"]
            assert families["dcgm_collector_remote_write_queue_samples"].type == "gauge"
    finally:
        assert collector.end() == 0, collector.log()


def test_an_unanswering_receiver_holds_up_neither_scrapes_nor_sampling_nor_sigterm(tmp_path):
    with socket.socket() as silent:   # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        refused = free_port()         # nothing listens here
        collector = Collector(tmp_path, "--remote-write-url", f"http://127.0.0.1:{port}/api/v1/write",
                              "--remote-write-url", f"http://127.0.0.1:{refused}/api/v1/write")
        try:
            first = dict((name, v) for name, labels, v in samples(collector.metrics()))["dcgm_collector_samples_total"]
            wait_for(lambda: (collector.self_metric("requests_failed_total",
                                                    url=f"http://127.0.0.1:{refused}/api/v1/write") or 0) >= 2,
                     timeout=15, what="refused connections counted", log=collector.log)
            wait_for(lambda: dict((name, v) for name, labels, v in samples(collector.metrics()))[
                "dcgm_collector_samples_total"] > first + 100, timeout=15, what="sampling going on",
                log=collector.log)
            assert collector.self_metric("queue_samples", url=f"http://127.0.0.1:{port}/api/v1/write") > 0
            started = time.monotonic()
            collector.proc.send_signal(signal.SIGTERM)   # with a request in flight to the silent one
            code = collector.proc.wait(30)
            seconds = time.monotonic() - started
            print(f"\nSIGTERM -> exit with a receiver that never answers: {seconds:.2f} s")
            assert code == 0, collector.log()
            assert seconds < 2.0, collector.log()
            assert "Traceback" not in collector.log()
        finally:
            collector.end(signal.SIGKILL)


def assert_every_sample_once(receiver: RawReceiver) -> None:
    """The receiver accepted each power sample once, in order, with no gap: nothing lost, nothing sent twice."""
    def accepted_power() -> dict:
        return {labels: values for labels, values in receiver.accepted().items() if dict(labels)["__name__"] == POWER}
    # a batch sent again after a failure can hold a single sample of a series: wait for the next ones
    wait_for(lambda: accepted_power() and all(len(values) >= 3 for values in accepted_power().values()),
             timeout=15, what="three accepted samples of every power series")
    power = accepted_power()
    for labels, values in power.items():
        times = [t for t, _ in values]
        assert times == sorted(set(times)), f"{labels}: a sample sent twice"
        assert_one_sample_per_tick(labels, times)


def test_a_retry_after_of_other_than_ascii_digits_means_the_usual_backoff(tmp_path, raw):
    # '²' is a digit to str.isdigit() and not a number to float()
    raw.respond = lambda n: answer(503, "Retry-After: \u00b2", body=b"busy") if n in (2, 3) else answer(204)
    collector = Collector(tmp_path, "--remote-write-url", raw.url, "--remote-write-flush-interval", "0.5")
    try:
        wait_for(lambda: len(raw.requests) >= 6, timeout=30, what="six requests", log=collector.log)
        requests = list(raw.requests)
        assert requests[1].series == requests[2].series == requests[3].series   # the same batch, sent again
        assert requests[3].status == 204
        assert collector.self_metric("requests_failed_total", url=raw.url, code="503") == 2
        assert collector.self_metric("samples_dropped_total", url=raw.url) == 0
        assert_every_sample_once(raw)
        assert "Traceback" not in collector.log()
    finally:
        assert collector.end() == 0, collector.log()


@pytest.mark.parametrize("hold", [
    Hold(b"HTTP/1.1 204 No Content", b" "),             # the status line, a byte at a time, for ever
    Hold(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),      # 100 Continue, for ever
], ids=["trickled-status-line", "100-continue-for-ever"])
def test_a_request_the_receiver_holds_ends_at_the_timeout_and_sigterm_does_not_wait_for_one(tmp_path, raw, hold):
    holds = {2}
    raw.respond = lambda n: hold if n in holds else answer(204)
    collector = Collector(tmp_path, "--remote-write-url", raw.url, "--remote-write-flush-interval", "0.5",
                          "--remote-write-timeout", "2")
    try:
        wait_for(lambda: raw.held, timeout=20, what="the sender to give up the held request", log=collector.log)
        print(f"\nrequest held by the receiver ended after {raw.held[0]:.2f} s (--remote-write-timeout 2)")
        assert 1.5 < raw.held[0] < 5.0
        wait_for(lambda: len(raw.requests) >= 5, timeout=30, what="requests after the held one", log=collector.log)
        requests = list(raw.requests)
        assert requests[2].series == requests[1].series and requests[2].status == 204   # the batch, sent again
        assert collector.self_metric("requests_failed_total", url=raw.url, code="timeout") == 1
        assert collector.self_metric("samples_dropped_total", url=raw.url) == 0
        assert_every_sample_once(raw)
        timed_out = [m for level, m in log_messages(collector.log()) if "timed out" in m]
        assert len(timed_out) == 1 and "2 s" in timed_out[0], timed_out
        # once more, and SIGTERM while the receiver holds it
        holds.add(len(raw.requests) + 1)
        wait_for(lambda: len(raw.requests) in holds, timeout=15, what="a held request", log=collector.log)
        time.sleep(0.5)
        started = time.monotonic()
        collector.proc.send_signal(signal.SIGTERM)
        code = collector.proc.wait(30)
        seconds = time.monotonic() - started
        print(f"SIGTERM -> exit with a request held by the receiver: {seconds:.2f} s")
        assert code == 0, collector.log()
        assert seconds < 2.0, collector.log()
        assert "Traceback" not in collector.log()
    finally:
        collector.end(signal.SIGKILL)


def test_an_answer_that_never_ends_is_read_only_so_far(tmp_path, raw):
    # 100 Continue as fast as the socket takes it: the timeout (10 s by default) would come too late
    raw.respond = lambda n: Hold(b"", b"HTTP/1.1 100 Continue\r\n\r\n" * 64, every_s=0) if n == 2 else answer(204)
    collector = Collector(tmp_path, "--remote-write-url", raw.url, "--remote-write-flush-interval", "0.5")
    try:
        wait_for(lambda: raw.held, timeout=30, what="the sender to give up the answer", log=collector.log)
        assert raw.held[0] < 5.0
        wait_for(lambda: len(raw.requests) >= 4, timeout=30, what="requests after it", log=collector.log)
        requests = list(raw.requests)
        assert requests[2].series == requests[1].series and requests[2].status == 204   # the batch, sent again
        assert collector.self_metric("requests_failed_total", url=raw.url, code="network") == 1
        too_long = [m for level, m in log_messages(collector.log()) if "the answer is" in m]
        assert len(too_long) == 1 and "the answer is larger than 64 KiB" in too_long[0], too_long
        assert_every_sample_once(raw)
    finally:
        assert collector.end() == 0, collector.log()


def test_a_redirect_is_not_followed_its_batch_is_dropped_as_rejected(tmp_path, raw):
    answers = {2: answer(301, "Location: http://elsewhere.example/api/v1/write"), 3: answer(307, "Location: /w2")}
    raw.respond = lambda n: answers.get(n, answer(204))
    collector = Collector(tmp_path, "--remote-write-url", raw.url, "--remote-write-flush-interval", "0.5")
    try:
        wait_for(lambda: len(raw.requests) >= 5, timeout=30, what="five requests", log=collector.log)
        requests = list(raw.requests)
        assert requests[1].series != requests[2].series != requests[3].series   # none sent again
        assert collector.self_metric("requests_failed_total", url=raw.url, code="301") == 1
        assert collector.self_metric("requests_failed_total", url=raw.url, code="307") == 1
        assert collector.self_metric("samples_dropped_total", url=raw.url, reason="rejected") == \
            requests[1].samples + requests[2].samples
        assert requests[3].status == 204 and requests[3].samples > 0   # later batches still sent
        redirects = [m for level, m in log_messages(collector.log()) if "HTTP 30" in m]
        assert len(redirects) == 2, redirects
        assert "HTTP 301" in redirects[0] and "Location: http://elsewhere.example/api/v1/write" in redirects[0]
        assert "HTTP 307" in redirects[1] and "Location: /w2" in redirects[1]
    finally:
        assert collector.end() == 0, collector.log()


def test_health_says_which_receiver_is_failing_until_it_recovers(tmp_path, raw):
    failing = threading.Event()
    failing.set()
    raw.respond = lambda n: answer(503, body=b"down for maintenance") if failing.is_set() else answer(204)
    collector = Collector(tmp_path, "--remote-write-url", raw.url, "--remote-write-flush-interval", "0.5")
    health = f"{collector.url}/health"
    try:
        wait_for(lambda: http_get(health)[1].startswith(b"OK; "), timeout=15, what="a note", log=collector.log)
        time.sleep(1.5)
        status, body = http_get(health)
        assert status == 200
        assert re.fullmatch(rf"OK; remote write to {re.escape(raw.url)} failing for [1-9]\d* s: HTTP 503\n"
                            rf"source: sim, chosen by --sim {re.escape(str(collector.scenario))}", body.decode()), body
        failing.clear()
        wait_for(lambda: http_get(health)[1].decode() == f"OK\nsource: sim, chosen by --sim {collector.scenario}",
                 timeout=15, what="the note gone", log=collector.log)
        assert_every_sample_once(raw)
    finally:
        assert collector.end() == 0, collector.log()


def test_a_failing_receiver_s_note_follows_a_lost_gpu_s(tmp_path, raw):
    raw.respond = lambda n: answer(503, body=b"down for maintenance")
    collector = Collector(tmp_path, "--remote-write-url", raw.url, scenario_text=lost_gpu_scenario(1.0))
    try:
        body = wait_for(lambda: (b := http_get(f"{collector.url}/health")[1].decode()).startswith("OK; lost GPU 1")
                        and "remote write" in b and b, timeout=20, what="both notes", log=collector.log)
        assert re.fullmatch(rf"OK; lost GPU 1 \(its series stop\); remote write to {re.escape(raw.url)} failing for "
                            rf"\d+ s: HTTP 503\nsource: sim, chosen by --sim {re.escape(str(collector.scenario))}",
                            body), body
    finally:
        assert collector.end() == 0, collector.log()


@pytest.mark.parametrize("flags, code, message", [
    (["--remote-write-url", "udp://x/w"], 2, "argument --remote-write-url: 'udp://x/w': the URL must start with "
                                             "http:// or https://"),
    (["--remote-write-url", "http://x/w", "--remote-write-label", "a-b=1"], 2,
     "argument --remote-write-label: 'a-b=1': 'a-b' is not a label name"),
    (["--remote-write-url", "http://x/w", "--remote-write-bearer-token-file", "/nonexistent/token"], 1,
     "--remote-write-bearer-token-file /nonexistent/token: cannot read it: No such file or directory"),
    (["--remote-write-url", "https://x/w", "--remote-write-ca-file", "/nonexistent/ca.pem"], 1,
     "--remote-write-ca-file /nonexistent/ca.pem: No such file or directory"),
])
def test_bad_remote_write_flags_are_one_line_errors(tmp_path, flags, code, message):
    proc = launch(COLLECTOR, "--sim", "1", "-a", f"127.0.0.1:{free_port()}", *flags, cwd=tmp_path,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert re.fullmatch(r"dcgm-collector: error: .*", last_line(err)), err
    assert message in last_line(err)
    assert "Traceback" not in err
