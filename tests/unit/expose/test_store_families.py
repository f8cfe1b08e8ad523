"""Series that come and go, from a store attached to a real target's exposition: what reaches /metrics,
the history API's JSON, a flight recording's rows and a remote-write request, under the names and
labels of the target's fixed series plus their own."""

from __future__ import annotations

import json
import re
import time

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text
from remote_write_standin import StandIn, write_request_module
from support import wait_for

from dcgm_collector.catalog.counters import parse_counters
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.view import target_view
from dcgm_collector.dcgm import EntityType
from dcgm_collector.expose import history
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.push.backlog import Backlog
from dcgm_collector.push.recording_file import Window, window_columns
from dcgm_collector.push.remote_write import RemoteWriteOptions, RemoteWriter
from dcgm_collector.rings.ring import SAMPLE_OK
from dcgm_collector.rings.series_store import SeriesStore, StoreKey

GPU = int(EntityType.GPU)
TEMP, POWER, FB_USED = 150, 155, 252
S = 1_000_000
NODE = 'seed = 3\n[[gpu]]\nmodel = "H100"\n[[gpu]]\nmodel = "T4"\n'
COUNTERS = """\
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W)., min|max|avg
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DRIVER_VERSION, label, Driver Version
"""


def process(pid: int, field: int = FB_USED, gpu: int = 0) -> StoreKey:
    return StoreKey(GPU, gpu, field, (("pid", str(pid)),))


@pytest.fixture
def target(open_node, tmp_path):
    """(exposition, store, now): a two-GPU manual node whose rings hold three injected rows of GPU 0's
    framebuffer and temperature before ``now`` (its own samples come after it, as in the golden tests),
    and an attached store holding three processes, one of which ended 6 s before ``now``."""
    spec = tmp_path / "node.toml"
    spec.write_text(NODE)
    handle = open_node(str(spec), mode="manual")
    sampler = Sampler(handle, parse_counters(COUNTERS), SamplingOptions(collect_interval_ms=1000))
    sampler.start(thread=False)
    try:
        # the node's own samples, from the start and the tick, are stamped after now
        now = time.time_ns() // 1000 - 500_000
        for k in range(3):
            handle.inject(GPU, 0, FB_USED, 30_000 + k, now - (3 - k) * S)
            handle.inject(GPU, 0, TEMP, 60 + k, now - (3 - k) * S)
        sampler.tick_once()
        exposition = Exposition(target_view(sampler), handle.gpus(), ExpositionOptions(hostname="node7"),
                                version="test")
        store = SeriesStore(8, 64, ttl_s=3.0, max_bytes=1 << 20)
        store.append(now - 6 * S, {process(99): 100})                                   # ended: 6 s ago
        store.append(now - 2 * S, {process(4242): 1024, process(7, gpu=1): 512, process(4242, POWER): 100.5})
        store.append(now - 1 * S, {process(4242): 2048, process(4242, POWER): 150.25})
        exposition.attach_store(store)
        yield exposition, store, now
    finally:
        sampler.stop()


def samples_of(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for family in parse_text(text) for s in family.samples if s.name == name]


def test_metrics_serve_store_series_after_the_fixed_ones_with_their_entity_labels_and_their_own(target):
    exposition, _, now = target
    text = exposition.render(now_us=now).decode()
    fb = samples_of(text, "DCGM_FI_DEV_FB_USED")
    gpu0 = next(labels for labels, _ in fb if "pid" not in labels)
    one = exposition.gpus[1]
    gpu1 = {**gpu0, "gpu": "1", "UUID": one.uuid, "pci_bus_id": one.pci_bus_id, "device": "nvidia1",
            "modelName": one.name}
    assert fb == [(gpu0, 30_002.0), ({**gpu0, "pid": "4242"}, 2048.0), ({**gpu1, "pid": "7"}, 512.0)]
    # one family: HELP and TYPE once, the store's lines after the ring's, their own labels last, %d as the field
    assert text.count("# TYPE DCGM_FI_DEV_FB_USED gauge") == 1
    lines = text.split("# HELP DCGM_FI_DEV_FB_USED")[1].split("# HELP")[0].splitlines()[2:]
    assert len(lines) == 3 and lines[0].endswith('"} 30002')
    assert re.search(r'hostname="node7",DCGM_FI_DRIVER_VERSION="[^"]+",pid="4242"\} 2048$', lines[1])
    # the process whose last sample is 6 s old is past the store's 3 s TTL
    assert "99" not in {labels.get("pid") for labels, _ in fb}
    assert list(parse_openmetrics(exposition.render(openmetrics=True, now_us=now).decode()))


def test_window_families_aggregate_a_store_series_over_the_window(target):
    exposition, _, now = target
    text = exposition.render(now_us=now).decode()
    for name, value in (("_min", 100.5), ("_max", 150.25), ("_avg", 125.375), ("", 150.25)):
        [(labels, got)] = [s for s in samples_of(text, "DCGM_FI_DEV_POWER_USAGE" + name) if "pid" in s[0]]
        assert labels["pid"] == "4242" and got == value, name
    assert exposition.window_families == 3


def test_a_series_past_the_ttl_leaves_metrics_though_no_row_expired_it(target):
    exposition, store, now = target
    later = now + 2_500_000   # 4242's last sample is 3.5 s old, 7's 4.5 s: both past the 3 s TTL
    text = exposition.render(now_us=later).decode()
    assert not [s for s in samples_of(text, "DCGM_FI_DEV_FB_USED") if "pid" in s[0]]
    assert store.live_series == 3   # the writer has not expired them: readers leave them out by themselves


def test_keys_that_cannot_be_served_are_left_out(target):
    exposition, store, now = target
    store.append(now - 500_000, {
        StoreKey(GPU, 5, FB_USED, (("pid", "1"),)): 1.0,            # a GPU this target does not serve
        StoreKey(GPU, 0, FB_USED, (("gpu", "3"),)): 2.0,            # a label its entity has already
        StoreKey(GPU, 0, FB_USED, (("bad-name", "x"),)): 3.0,       # not a Prometheus label name
        StoreKey(GPU, 0, 1001, (("pid", "1"),)): 4.0,               # a field the counters do not serve
        process(5150): 5.0,
    })
    text = exposition.render(now_us=now).decode()
    pids = [labels.get("pid") for labels, _ in samples_of(text, "DCGM_FI_DEV_FB_USED")]
    assert pids == [None, "4242", "5150", "7"]
    assert "bad-name" not in text and 'gpu="3"' not in text and "1001" not in text


def test_the_history_api_answers_store_series_with_their_labels_an_ended_process_included(target):
    exposition, _, now = target
    model = exposition.sample_model("node7")
    query = history.parse_query({"field": ["DCGM_FI_DEV_FB_USED"], "since": ["10s"]}, now_us=now)
    data = json.loads(history.answer([model], query).body)["data"]
    by_pid = {s["labels"].get("pid"): s for s in data["series"]}
    assert set(by_pid) == {None, "4242", "7", "99"}
    assert by_pid["4242"]["samples"] == [[now - 2 * S, 1024], [now - S, 2048]]   # integers, as the field is
    assert by_pid["99"]["samples"] == [[now - 6 * S, 100]]   # what happened, though it expired since
    assert by_pid["7"]["gpu"] == 1 and by_pid["7"]["entity"] == {"group": "GPU", "id": 1}
    assert by_pid["4242"]["labels"]["hostname"] == "node7" and by_pid["4242"]["field_id"] == FB_USED
    assert [s["labels"].get("pid") for s in data["series"]][0] is None   # the ring's series first


def test_history_pages_through_store_series_each_sample_once(target):
    exposition, store, now = target
    for k in range(40):
        store.append(now - S + 10_000 + k * 1_000, {process(4242): float(k), process(7, gpu=1): float(-k)})
    model = exposition.sample_model("node7")
    since, seen, pages = "10s", [], 0
    while True:
        query = history.parse_query({"field": ["DCGM_FI_DEV_FB_USED"], "since": [since], "limit": ["7"],
                                     "until": [f"{now / 1e6:.6f}"]}, now_us=now)
        data = json.loads(history.answer([model], query).body)["data"]
        seen += [(s["labels"].get("pid"), t, v) for s in data["series"] for t, v in s["samples"]]
        pages += 1
        if not data["truncated"]:
            break
        since = str(data["next_since"])
    assert pages > 10
    assert len(seen) == len(set(seen)) == 3 + 4 + 80
    assert sorted(v for pid, _, v in seen if pid == "7") == sorted([512] + [-k for k in range(40)])


def test_history_cursors_follow_store_series_each_sample_once(target):
    exposition, store, now = target
    model = exposition.sample_model("node7")
    query = history.parse_query({"field": ["DCGM_FI_DEV_FB_USED"], "since": ["10s"]}, now_us=now)
    cursor = json.loads(history.answer([model], query).body)["data"]["cursor"]
    seen = []
    for k in range(5):
        store.append(now + 10_000 + k * 1_000, {process(4242): float(k), process(31 + k % 2): float(-k)})
        query = history.parse_query({"field": ["DCGM_FI_DEV_FB_USED"], "cursor": [cursor]}, now_us=now)
        data = json.loads(history.answer([model], query).body)["data"]
        seen += [(s["labels"].get("pid"), t, v) for s in data["series"] for t, v in s["samples"]]
        cursor = data["cursor"]
    assert sorted(seen) == sorted([("4242", now + 10_000 + k * 1_000, k) for k in range(5)]
                                  + [(str(31 + k % 2), now + 10_000 + k * 1_000, -k) for k in range(5)])


def test_a_flight_recording_holds_store_samples_under_their_metric(target):
    exposition, _, now = target
    columns = window_columns(exposition.sample_model("node7"), Window(now - 3 * S, now, frozenset({1})))
    names = list(columns["names"])
    rows = [(int(t), int(e), names[m], float(v), int(st)) for t, e, m, v, st in zip(
        columns["time"], columns["entity_id"], columns["metric"], columns["value"], columns["status"])]
    assert rows == [(now - 2 * S, 1, "DCGM_FI_DEV_FB_USED", 512.0, SAMPLE_OK)]


def test_remote_write_sends_store_series_once_with_their_labels(target, tmp_path):
    exposition, store, now = target
    standin = StandIn(write_request_module(tmp_path)).start()
    writer = RemoteWriter(RemoteWriteOptions(standin.url, flush_interval_s=0.05),
                          lambda: [exposition.sample_model("node7")], "9.9")

    def store_samples() -> dict[str | None, list]:
        return {dict(labels).get("pid"): samples for labels, samples in standin.accepted().items()
                if dict(labels)["__name__"] == "DCGM_FI_DEV_FB_USED"}

    writer.start()
    try:
        wait_for(lambda: len(store_samples().get("4242", ())) == 2, timeout=10, what="the store's samples")
        store.append(now, {process(4242): 4096})
        wait_for(lambda: len(store_samples()["4242"]) == 3, timeout=10, what="the next store sample")
    finally:
        writer.stop()
        standin.stop()
    accepted = store_samples()
    assert accepted["4242"] == [((now - 2 * S) // 1000, 1024.0), ((now - S) // 1000, 2048.0), (now // 1000, 4096.0)]
    assert accepted["99"] == [((now - 6 * S) // 1000, 100.0)]
    [labels] = [dict(lb) for lb in standin.accepted() if dict(lb).get("pid") == "7"]
    assert labels["gpu"] == "1" and labels["hostname"] == "node7" and labels["__name__"] == "DCGM_FI_DEV_FB_USED"
    assert writer.lost == 0


def test_a_backlog_reads_a_store_attached_to_a_new_exposition_from_where_it_stopped(target):
    exposition, store, now = target
    backlog = Backlog()
    first = [s for s in backlog.read([exposition.sample_model("node7")], 10_000) if b"pid" in s.labels]
    reloaded = Exposition(exposition.view, exposition.gpus, ExpositionOptions(hostname="node7"), version="test")
    reloaded.attach_store(store)
    store.append(now + 1, {process(4242): 1.0})
    again = [s for s in backlog.read([reloaded.sample_model("node7")], 10_000) if b"pid" in s.labels]
    assert sum(len(s.ts_ms) for s in first) == 6   # every sample the store holds
    assert [(len(s.ts_ms), s.values.tolist()) for s in again] == [(1, [1.0])]
    assert backlog.lost == 0
