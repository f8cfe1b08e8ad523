"""Faults that come from the simulated node or its hostengine, seen from /metrics and /health.

Each test runs the real CLI (``python -m dcgm_collector``) as a subprocess,
on the embedded simulator (``--sim FILE``) when the fault is the GPUs' own,
or against a simulated nv-hostengine process (``-r``) when the fault is the
hostengine's.  What tests/system/test_faults.py already shows (a kill -9 between
reads, a restart with more GPUs, two targets, an unreachable hostengine, a
stall past a short request timeout) is not repeated here; these add a GPU
that falls off the bus, an XID storm, the scrape latency during stalls of
both kinds, and a kill while a large read is blocked half way.
"""

from __future__ import annotations

import signal
import statistics
import time
from pathlib import Path

import pytest
from support import COLLECTOR, SERVING, lost_gpu_scenario, samples
from test_faults import Collector as _FaultsCollector
from test_faults import Hostengine, Proc, _env, fresh, gpu_series, value, wait_for

pytestmark = pytest.mark.slow

LOST_AT_S = 1.0     # node time at which the lost GPU falls off the bus
STALE_AFTER_S = 5.0   # exposition.MIN_STALE_AFTER_S: -c 200 makes 3 intervals less than that

LOST_SCENARIO = lost_gpu_scenario(LOST_AT_S)
LOST_GPU_1 = "OK; lost GPU 1 (its series stop)"   # /health's first line while the other GPUs stay fresh

# Two overlapping bursts on GPU 0 (XID 31 ends last, at 1.6 + 29 * 0.01 = 1.89 s),
# one on GPU 1; GPU 2 stays clean.
STORM = {(0, 13): 40, (0, 31): 30, (1, 43): 7}
STORM_SCENARIO = """\
seed = 5
[[gpu]]
model = "A100"
count = 3

[[event]]
at = 1.0
gpu = 0
kind = "xid"
xid = 13
count = 40
interval = 0.02

[[event]]
at = 1.6
gpu = 0
kind = "xid"
xid = 31
count = 30
interval = 0.01

[[event]]
at = 1.2
gpu = 1
kind = "xid"
xid = 43
count = 7
interval = 0.05
"""
STORM_ENDS_S = 1.89

SMALL_COUNTERS = ("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
                  "DCGM_FI_DEV_POWER_USAGE, gauge, power\n"
                  "DCGM_FI_DEV_XID_ERRORS, gauge, last XID\n"
                  "DCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs in the window\n")


class Collector(_FaultsCollector):
    """The CLI as a subprocess, with the counters and flags a test gives (no --dcgm-lib: --sim or -r)."""

    def __init__(self, cwd: Path, *args: str, counters: str | None = SMALL_COUNTERS,
                 env: dict[str, str] | None = None) -> None:
        flags = ["-a", "127.0.0.1:0", "-c", "200", "--watch-interval", "100"]
        if counters is not None:
            path = cwd / "scenario-counters.csv"
            path.write_text(counters)
            flags += ["-f", str(path)]
        if not any(a == "--sim" for a in args):
            from dcgm_collector.engine import library_path
            flags += ["--dcgm-lib", str(library_path())]
        Proc.__init__(self, COLLECTOR, [*flags, *args], cwd, env or _env(), "collector")
        self.port = int(self.wait_log(SERVING)[1])

    def timed_get(self, path: str = "/metrics") -> tuple[float, int, str]:
        started = time.monotonic()
        status, body = self.get(path)
        return time.monotonic() - started, status, body


def xid_counts(text: str) -> dict[tuple[int, int], float]:
    return {(int(labels["gpu"]), int(labels["xid"])): v for name, labels, v in samples(text)
            if name == "DCGM_EXP_XID_ERRORS_COUNT" and "xid" in labels}


def last_xids(text: str) -> dict[int, tuple[str, str, float]]:
    return {int(labels["gpu"]): (labels["err_code"], labels["err_msg"], v) for name, labels, v in samples(text)
            if name == "DCGM_FI_DEV_XID_ERRORS"}


def error_codes(text: str) -> set[str]:
    return {labels["code"] for name, labels, _ in samples(text) if name == "dcgm_collector_dcgm_errors_total"}


def temps(text: str) -> dict[str, float]:
    return {gpu: v for (_, gpu), v in gpu_series(text).items()}



# ---- a GPU falls off the bus ------------------------------------------------------------------

def test_a_lost_gpu_drops_out_at_its_first_blank_sample_while_the_others_stay_fresh(tmp_path):
    (tmp_path / "lost.toml").write_text(LOST_SCENARIO)
    # --window 1: the last-value lookback is max(window, stale after) = 5 s instead of 15 s
    collector = Collector(tmp_path, "--sim", "lost.toml", "--window", "1")
    try:
        text = wait_for(lambda: (t := collector.metrics()) and 1 in last_xids(t) and t, what="XID 79 on GPU 1",
                        log=collector.log)
        seen_lost = time.monotonic()
        assert last_xids(text) == {1: ("79", "GPU has fallen off the bus", 79.0)}
        samples_then = value(text, "dcgm_collector_samples_total")
        while "1" in temps(text := collector.metrics()):
            assert set(temps(text)) == {"0", "1", "2"}
            assert fresh(text), "a lost GPU must not make the target stale"
            assert collector.get("/health") in ((200, "OK\nsource: sim, chosen by --sim lost.toml"),
                                                (200, f"{LOST_GPU_1}\nsource: sim, chosen by --sim lost.toml"))
            assert time.monotonic() - seen_lost < STALE_AFTER_S + 3, "GPU 1 never dropped out"
            time.sleep(0.2)
        gone_after = time.monotonic() - seen_lost
        # DCGM stores a blank for every field of a lost GPU at each sample, and a blank last value
        # is left out: the series stop at once instead of lingering for the lookback
        assert gone_after < STALE_AFTER_S - 1.5, f"GPU 1 dropped out only {gone_after:.1f} s after it was lost"
        assert set(temps(text)) == {"0", "2"}
        assert {gpu for n, labels, _ in samples(text) if n == "DCGM_FI_DEV_POWER_USAGE"
                for gpu in (labels["gpu"],)} == {"0", "2"}
        # the XID that said why stays (an event row keeps its last value however old)
        assert last_xids(text) == {1: ("79", "GPU has fallen off the bus", 79.0)}
        assert xid_counts(text) == {(1, 79): 1.0}
        # documented behaviour: /health and up are about DCGM answering with fresh samples, not about
        # every GPU reporting; a lost GPU shows as its missing series, its XID 79 and a note on /health
        assert fresh(text) and value(text, "dcgm_collector_up") == 1
        # the sampler asks GPU statuses in its once-a-second housekeeping, when blanks went up
        wait_for(lambda: collector.get("/health") == (200, f"{LOST_GPU_1}\nsource: sim, chosen by --sim lost.toml"),
                 what="/health naming GPU 1",
                 log=collector.log)
        # and sampling goes on for the others (read again: the loss and the XID can land in one tick)
        text = collector.metrics()
        assert value(text, "dcgm_collector_samples_total") > samples_then
        assert not error_codes(text)
        assert "Traceback" not in collector.log()
    finally:
        collector.end()


# ---- an XID storm -----------------------------------------------------------------------------

def test_an_xid_storm_is_counted_exactly_and_the_last_code_is_kept(tmp_path):
    (tmp_path / "storm.toml").write_text(STORM_SCENARIO)
    window_ms = 3000
    collector = Collector(tmp_path, "--sim", "storm.toml", "-x", str(window_ms))
    try:
        def storm_counted():
            text = collector.metrics()
            counts = xid_counts(text)
            for key, n in counts.items():   # never more than happened, never a code that did not
                assert key in STORM and n <= STORM[key], counts
            return counts == STORM and text
        text = wait_for(storm_counted, timeout=STORM_ENDS_S + 5, what="every XID of the storm", log=collector.log)
        counted_at = time.monotonic()
        last = last_xids(text)
        assert {gpu: code for gpu, (code, _, _) in last.items()} == {0: "31", 1: "43"}
        assert last[0][2] == 31 and last[1][2] == 43
        assert all(msg for _, msg, _ in last.values())
        lines = [line for line in text.splitlines() if line.startswith("DCGM_EXP_XID_ERRORS_COUNT{")]
        assert 'gpu="2"' in lines[-1] and 'xid="' not in lines[-1] and lines[-1].endswith(" 0")
        assert all(f'window_size_in_ms="{window_ms}"' in line for line in lines)
        assert fresh(text) and collector.get("/health") == (200, "OK\nsource: sim, chosen by --sim storm.toml")
        # once the window has slid past the storm the counts are gone; the last code is not
        text = wait_for(lambda: (t := collector.metrics()) and not xid_counts(t) and t,
                        timeout=window_ms / 1000 + 3, what="the window to pass the storm", log=collector.log)
        assert time.monotonic() - counted_at > window_ms / 1000 - 1.5
        assert {gpu: code for gpu, (code, _, _) in last_xids(text).items()} == {0: "31", 1: "43"}
        assert sum(1 for line in text.splitlines() if line.startswith("DCGM_EXP_XID_ERRORS_COUNT{")) == 3
        assert "Traceback" not in collector.log()
    finally:
        collector.end()


# ---- a hostengine that stalls -------------------------------------------------------------------

@pytest.mark.parametrize("request_timeout_ms, stall", [
    # DCGM's own 60 s: the read just waits; the samples go stale, nothing fails, no reconnect
    (60_000, "stale"),
    # shorter than the stall (3 collect intervals and more): the read times out, the target reconnects
    (300, "timeout"),
])
def test_scrapes_stay_fast_while_the_hostengine_stalls(tmp_path, request_timeout_ms, stall):
    engine = Hostengine(tmp_path, "2")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address,
                              env=_env(DCGM_SIM_REQUEST_TIMEOUT_MS=str(request_timeout_ms)))
        wait_for(lambda: fresh(collector.metrics()), what="fresh samples", log=collector.log)
        engine.proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        time.sleep(0.5)   # a tick that was under way has finished or is now blocked
        old = gpu_series(collector.metrics())
        latencies: list[float] = []
        down_at = None
        # SIGSTOP for at least 3 collect intervals, and until up says 0
        while time.monotonic() - stopped < (STALE_AFTER_S + 3 if stall == "stale" else 3):
            took, status, text = collector.timed_get()
            latencies.append(took)
            assert status == 200 and gpu_series(text) == old   # what was collected is still served
            if value(text, "dcgm_collector_up") == 0 and time.monotonic() - stopped > 0.6:
                down_at = time.monotonic() - stopped
                break
            time.sleep(0.05)
        assert down_at is not None, f"up never went 0 during a {stall} stall:\n{collector.log()}"
        took, status, reason = collector.timed_get("/health")
        latencies.append(took)
        assert status == 503
        if stall == "stale":
            assert down_at > STALE_AFTER_S - 1.0
            assert reason.startswith("no sample for ") and f"(stale after {STALE_AFTER_S:g} s)" in reason
            assert not error_codes(text), "a stall within the request timeout is no DCGM error"
        else:
            assert down_at < 2.5
            assert reason.startswith(f"lost the connection to the hostengine at {engine.address}: DCGM_ST_TIMEOUT")
            assert "-11" in error_codes(text)
        for _ in range(5):
            took, status, _ = collector.timed_get()
            latencies.append(took)
        print(f"\n{stall} stall: up 0 after {down_at:.2f} s; {len(latencies)} scrapes, "
              f"p50 {statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
        assert max(latencies) < 0.5, "a scrape waited on DCGM"

        engine.proc.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        text = wait_for(lambda: (t := collector.metrics()) and fresh(t) and t, what="fresh after SIGCONT",
                        log=collector.log)
        assert time.monotonic() - resumed < 4.0
        assert value(text, "dcgm_collector_reconnects_total") == (0 if stall == "stale" else 1)
        wait_for(lambda: collector.get("/health") == (200, "OK\nsource: hostengine, chosen by -r"),
                 what="/health 200", log=collector.log)
        assert "Traceback" not in collector.log()
    finally:
        if engine.proc.poll() is None:
            engine.proc.send_signal(signal.SIGCONT)
        engine.end()
        if collector is not None:
            collector.end()


# ---- kill -9 with a large read in flight --------------------------------------------------------

def test_a_kill_during_a_large_read_is_seen_at_once_not_after_the_request_timeout(tmp_path):
    """Every default counter on 8 GPUs sampled every 10 ms and drained once a second: each tick reads
    ~100 samples per field and GPU, ~19k samples.  SIGSTOP first, so that a tick is certainly blocked on its answer
    (possibly half sent), then SIGKILL: only the socket's EOF can tell the collector, since the
    request timeout is DCGM's 60 s."""
    engine = Hostengine(tmp_path, "8")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address, "-c", "1000", "--watch-interval", "10", counters=None,
                              env=_env(DCGM_SIM_REQUEST_TIMEOUT_MS="60000"))
        wait_for(lambda: (t := collector.metrics()) and fresh(t) and len(gpu_series(t)) == 8,
                 what="8 fresh GPUs", log=collector.log)
        engine.proc.send_signal(signal.SIGSTOP)
        time.sleep(1.5)   # past the next tick: its read is now waiting on the stopped hostengine
        before = collector.metrics()
        old = gpu_series(before)
        assert len(old) == 8 and value(before, "dcgm_collector_up") == 1   # not stale yet
        samples_before = value(before, "dcgm_collector_samples_total")
        engine.proc.send_signal(signal.SIGKILL)
        engine.proc.wait(5)
        killed = time.monotonic()
        status, reason = wait_for(lambda: (r := collector.get("/health"))[0] == 503 and r, timeout=5,
                                  what="/health 503", log=collector.log)
        noticed_s = time.monotonic() - killed
        assert noticed_s < 1.5, f"the kill was noticed after {noticed_s:.1f} s"
        assert reason.startswith(f"lost the connection to the hostengine at {engine.address}: "
                                 "DCGM_ST_CONNECTION_NOT_VALID")
        text = collector.metrics()
        assert gpu_series(text) == old and value(text, "dcgm_collector_up") == 0
        # the read that broke half way stored nothing
        assert value(text, "dcgm_collector_samples_total") == samples_before
        assert "-21" in error_codes(text) and "-11" not in error_codes(text)

        engine = Hostengine(tmp_path, "8", port=engine.port)
        text = wait_for(lambda: (t := collector.metrics()) and fresh(t) and t, timeout=8,
                        what="fresh after the restart", log=collector.log)
        assert value(text, "dcgm_collector_reconnects_total") == 1
        assert set(gpu_series(text)) == set(old)
        assert value(text, "dcgm_collector_samples_total") > samples_before
        wait_for(lambda: collector.get("/health") == (200, "OK\nsource: hostengine, chosen by -r"),
                 what="/health 200", log=collector.log)
        print(f"\nkill during a blocked read noticed after {noticed_s * 1000:.0f} ms")
        assert "Traceback" not in collector.log()
    finally:
        engine.end()
        if collector is not None:
            collector.end()
