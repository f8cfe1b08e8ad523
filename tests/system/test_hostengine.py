"""The simulated nv-hostengine (``python -m dcgm_collector.engine hostengine``) through the binding.

A separate process owns the simulated GPUs; this process reaches it with
Handle.connect over TCP or a unix socket and must see what DCGM's clients
see: the node's GPUs and values, per-connection ownership, and the failures
of api-facts §4.2 (killed -> CONNECTION_NOT_VALID at once and for good,
stalled -> TIMEOUT, restarted -> a new connection works).
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dcgm_collector.ext._native import ffi, lib
from support import ENGINE, command, launch

from dcgm_collector.dcgm import DcgmConnectionError, DcgmError, DcgmTimeoutError, Handle

GPU_TEMP, POWER, GPU_UTIL, FB_USED = 150, 155, 203, 252
OK, NO_DATA, DUPLICATE_KEY, TIMEOUT = 0, -14, -26, -11
READY = re.compile(r"^listening on (\S+)$")


class Hostengine:
    """A hostengine subprocess and the address its one ready line named."""

    def __init__(self, process: subprocess.Popen, address: str) -> None:
        self.process = process
        self.address = address

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=10)


def _start(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Hostengine:
    # cwd outside the checkout: `python -m` puts the cwd first on sys.path, and the
    # source folder has no compiled extension
    process = launch(ENGINE, "hostengine", *args, cwd=cwd, env=dict(os.environ, **(env or {})),
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    ready = selector.select(timeout=30)
    selector.close()
    line = process.stdout.readline().strip() if ready else ""
    match = READY.match(line)
    if not match:
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"hostengine did not start: {line!r} {err!r}")
    address = match.group(1)
    return Hostengine(process, "unix://" + address[5:] if address.startswith("unix:") else address)


@pytest.fixture
def hostengine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Hostengine]]:
    """hostengine("--port", "0", ...) -> a running hostengine, stopped (SIGKILL if need be) afterwards."""
    monkeypatch.delenv("DCGM_SIM_SCENARIO", raising=False)
    started: list[Hostengine] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Hostengine:
        he = _start(tmp_path, *args, env=env)
        started.append(he)
        return he

    yield start
    for he in started:
        if he.process.poll() is None:
            he.process.kill()
        he.process.communicate(timeout=10)


def _connect(address: str, library, **kwargs) -> Handle:
    return Handle.connect(address, library=library, **kwargs)


# ---- reading a remote node ---------------------------------------------------------


def test_eight_gpus_read_over_tcp_carry_the_models_values(hostengine, library, open_node):
    he = hostengine("--port", "0")
    assert re.fullmatch(r"127\.0\.0\.1:\d+", he.address)
    with _connect(he.address, library) as h:
        start = ffi.new("long long *")
        assert lib.dcgmSimGetStartTime(start) == OK  # no embedded engine: the hostengine's
        assert h.gpu_ids() == list(range(8))
        assert {g.name for g in h.gpus()} == {"NVIDIA H100 80GB HBM3"}
        group = h.all_gpus()
        fields = h.create_field_groups([GPU_TEMP, POWER, GPU_UTIL, FB_USED], "remote-model")
        h.watch(group, fields, update_freq_us=100_000, max_keep_age_s=30.0)
        time.sleep(0.5)
        cursor, values = h.values_since(group, fields)
        latest = h.latest_values(group, fields)
        remote_start = start[0]
        # the same scenario in this process is the same model: its value-at answers for the hostengine
        open_node("")
        record = ffi.new("dcgmFieldValue_v1 *")
        assert all(v.status == OK for v in values)
        assert len({(v.entity_id, v.field_id) for v in values}) == 8 * 4
        for v in values:
            assert lib.dcgmSimGetValueAt(v.entity_id, v.field_id, v.ts - remote_start, record) == OK
            assert v.value == (record.value.dbl if v.field_type == "d" else record.value.i64), v
        # the hostengine's two views agree: a latest value at or before the cursor is in the series
        series = {(v.entity_id, v.field_id, v.ts): v.value for v in values}
        assert len(latest) == 8 * 4
        for v in latest:
            if v.ts < int(cursor):
                assert series[(v.entity_id, v.field_id, v.ts)] == v.value
        # the cursor is the server's: nothing is read twice
        _, again = h.values_since(group, fields, cursor)
        assert not {(v.entity_id, v.field_id, v.ts) for v in again if v.status == OK} & set(series)


def test_nvlink_p2p_status_over_tcp_is_the_embedded_engines(hostengine, library, open_node):
    he = hostengine("--port", "0")
    with _connect(he.address, library) as h:
        remote = h.nvlink_p2p_status()
    # eight H100s, each with NvLinks: every ordered pair is OK (0)
    assert remote == {gpu: {peer: 0 for peer in range(8) if peer != gpu} for gpu in range(8)}
    assert open_node("").nvlink_p2p_status() == remote


def test_unix_socket_serves_and_the_socket_file_goes_on_sigterm(hostengine, library, tmp_path):
    path = tmp_path / "he.sock"
    he = hostengine("--unix", str(path), "--scenario", "3")
    assert he.address == f"unix://{path}"
    with _connect(he.address, library) as h:
        assert h.gpu_ids() == [0, 1, 2]
    with _connect(str(path), library) as h:  # a bare path is a unix socket too
        assert len(h.gpus()) == 3
    assert he.stop(signal.SIGTERM) == 0
    assert not path.exists()


def test_values_since_delivers_one_no_data_record_for_an_empty_series(hostengine, library):
    he = hostengine("--port", "0", "--scenario", "2")
    with _connect(he.address, library) as h:
        group = h.all_gpus()
        fields = h.create_field_groups([230], "remote-xid")  # no XID ever happens on this node
        h.watch(group, fields, update_freq_us=100_000, max_keep_age_s=10.0)
        _, values = h.values_since(group, fields)
        assert [(v.entity_id, v.status) for v in values] == [(0, NO_DATA), (1, NO_DATA)]


def test_the_sampler_drains_a_remote_node_into_its_rings_exactly_once(hostengine, library):
    from dcgm_collector.catalog.counters import parse_counters
    from dcgm_collector.collect.options import SamplingOptions
    from dcgm_collector.collect.sampler import Sampler
    from dcgm_collector.rings.ring import SAMPLE_ABSENT, SAMPLE_OK

    he = hostengine("--port", "0", "--scenario", "3")
    counters = parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, p\n")
    with _connect(he.address, library) as h, Sampler(
        h, counters, SamplingOptions(collect_interval_ms=200, watch_interval_ms=100, retention_s=60)
    ) as sampler:
        deadline = time.monotonic() + 10
        while sampler.stats.ticks < 6:
            assert time.monotonic() < deadline, "the sampler did not tick"
            time.sleep(0.02)
        (ring,) = sampler.rings.values()
        rows = ring.rows_since(0)
        newest = int(rows.ts[-1])
        stored = set()
        for r, ts in enumerate(rows.ts.tolist()):
            for c, key in enumerate(ring.series):
                if int(rows.status[r, c]) != SAMPLE_ABSENT:
                    assert int(rows.status[r, c]) == SAMPLE_OK
                    stored.add((key.entity_id, key.field_id, ts, float(rows.values[r, c])))
        fields = h.create_field_groups([GPU_TEMP, POWER], "remote-sampler-check")
        _, values = h.values_since(sampler.group, fields)
        held = {(v.entity_id, v.field_id, v.ts, float(v.value)) for v in values if v.status == OK and v.ts <= newest}
        assert stored == held
        assert len(rows.ts) >= 10
        assert sampler.stats.errors_by_code == {}


# ---- ownership --------------------------------------------------------------------------


def test_what_a_connection_made_goes_when_it_disconnects_unless_it_persists(hostengine, library):
    he = hostengine("--port", "0", "--scenario", "2")
    first = _connect(he.address, library)
    second = _connect(he.address, library)
    first.create_field_groups([GPU_TEMP], "owned-by-first")
    with pytest.raises(DcgmError) as taken:
        second.create_field_groups([GPU_TEMP], "owned-by-first")
    assert taken.value.code == DUPLICATE_KEY
    lib.dcgmDisconnect(first._h())  # gone without cleaning up, as a crashed client would
    deadline = time.monotonic() + 5
    while True:
        try:
            second.create_field_groups([GPU_TEMP], "owned-by-first")
            break
        except DcgmError as e:
            assert e.code == DUPLICATE_KEY and time.monotonic() < deadline
            time.sleep(0.02)
    keeper = _connect(he.address, library, persist_after_disconnect=True)
    keeper.create_field_groups([GPU_TEMP], "kept")
    lib.dcgmDisconnect(keeper._h())
    time.sleep(0.2)
    with pytest.raises(DcgmError) as kept:
        second.create_field_groups([GPU_TEMP], "kept")
    assert kept.value.code == DUPLICATE_KEY
    second.close()


# ---- failures -----------------------------------------------------------------------------


def test_sigkill_fails_the_next_call_at_once_and_a_restart_serves_a_new_connection(hostengine, library):
    he = hostengine("--port", "0", "--scenario", "2")
    h = _connect(he.address, library)
    assert h.gpu_ids() == [0, 1]
    he.stop(signal.SIGKILL)
    began = time.monotonic()
    with pytest.raises(DcgmConnectionError):
        h.gpu_ids()
    assert time.monotonic() - began < 1.0
    with pytest.raises(DcgmConnectionError):  # no reconnect behind the caller's back
        h.gpu_ids()
    h.close()
    again = hostengine("--port", str(he.port), "--scenario", "5")
    assert again.port == he.port
    with _connect(again.address, library) as h2:
        assert h2.gpu_ids() == list(range(5))


def test_a_stalled_hostengine_times_out_then_the_handle_is_dead(hostengine, library, monkeypatch):
    he = hostengine("--port", "0", "--scenario", "1")
    monkeypatch.setenv("DCGM_SIM_REQUEST_TIMEOUT_MS", "500")  # read at connect
    h = _connect(he.address, library)
    monkeypatch.delenv("DCGM_SIM_REQUEST_TIMEOUT_MS")
    assert h.gpu_ids() == [0]
    he.process.send_signal(signal.SIGSTOP)
    try:
        time.sleep(0.1)
        began = time.monotonic()
        with pytest.raises(DcgmTimeoutError) as timed_out:
            h.gpu_ids()
        assert timed_out.value.code == TIMEOUT
        assert 0.4 < time.monotonic() - began < 3.0
    finally:
        he.process.send_signal(signal.SIGCONT)
    with pytest.raises(DcgmConnectionError):
        h.gpu_ids()
    h.close()
    with _connect(he.address, library) as fresh:
        assert fresh.gpu_ids() == [0]


def test_nothing_listening_fails_after_the_connect_timeout(hostengine, library):
    he = hostengine("--port", "0", "--scenario", "1")
    port = he.port
    assert he.stop() == 0
    began = time.monotonic()
    with pytest.raises(DcgmConnectionError):
        _connect(f"127.0.0.1:{port}", library, timeout_ms=300)
    assert 0.25 < time.monotonic() - began < 3.0


def test_a_bad_scenario_is_one_line_on_stderr_and_exit_1(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[gpu]]\nmodel = \"H100\"\ncount = 0\n")
    done = subprocess.run(
        command(ENGINE, "hostengine", "--port", "0", "--scenario", str(bad)),
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.toml" in lines[0]


def test_a_port_in_use_is_one_line_on_stderr_and_exit_1(hostengine, tmp_path):
    he = hostengine("--port", "0", "--scenario", "1")
    done = subprocess.run(
        command(ENGINE, "hostengine", "--port", str(he.port)),
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot listen" in lines[0]


def test_sigint_exits_0(hostengine):
    he = hostengine("--port", "0", "--scenario", "1")
    assert he.stop(signal.SIGINT) == 0


def test_a_shipped_scenario_goes_by_name_as_with_sim(hostengine, library):
    he = hostengine("--port", "0", "--scenario", "xid-burst")
    with _connect(he.address, library) as h:
        assert {g.name for g in h.gpus()} == {"NVIDIA A100-SXM4-80GB"} and h.gpu_ids() == [0, 1]   # 2 A100s


def test_log_options_name_the_debug_log_and_its_severity_over_the_environment(hostengine, tmp_path):
    # nv-hostengine's --log-filename / --log-level win over __DCGM_DBG_FILE / __DCGM_DBG_LVL
    chosen, ignored = tmp_path / "chosen.log", tmp_path / "ignored.log"
    he = hostengine("--port", "0", "--log-filename", str(chosen), "--log-level", "debug",
                    env={"__DCGM_DBG_FILE": str(ignored), "__DCGM_DBG_LVL": "ERROR"})
    he.stop()
    text = chosen.read_text()
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} DEBUG \[\d+:\d+\] ", text, re.M), text
    assert "module 1 (NvSwitch) loaded" in text
    assert not ignored.exists()


def test_without_options_the_environment_names_the_log_and_filters_it(hostengine, tmp_path):
    log = tmp_path / "env.log"
    he = hostengine("--port", "0", env={"__DCGM_DBG_FILE": str(log), "__DCGM_DBG_LVL": "info"})
    he.stop()
    text = log.read_text()
    assert " INFO [" in text and " DEBUG [" not in text, text
