"""A collector against a real simulated nv-hostengine process that dies, restarts and changes.

Both run as subprocesses (``python -m dcgm_collector.engine hostengine`` and
``python -m dcgm_collector -r ...``), so a SIGKILL is a real event: the
collector's connection breaks mid-read and DCGM answers
CONNECTION_NOT_VALID.  The collector's threads and file descriptors are
counted from /proc/<pid>.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from support import COLLECTOR, ENGINE, SERVING, http_get, launch, samples, stop_process
from support import wait_for as support_wait_for

LISTENING = re.compile(r"listening on (\S+)")
COUNTERS = "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\nDCGM_FI_DEV_POWER_USAGE, gauge, power\n"
FAST = ("-c", "200", "--watch-interval", "100", "-a", "127.0.0.1:0")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DCGM_EXPORTER_", "DCGM_COLLECTOR_", "DCGM_SIM_", "DCGM_REMOTE_"))}
    env["DCGM_SIM_REQUEST_TIMEOUT_MS"] = "1000"   # a stalled hostengine times out in 1 s, not 60 s
    env.update(extra)
    return env


def value(text: str, name: str, **labels: str) -> float | None:
    for n, found, v in samples(text):
        if n == name and all(found.get(k) == w for k, w in labels.items()):
            return v
    return None


# the faults here take longer to show than the CLI's start-up
wait_for = partial(support_wait_for, timeout=10.0)


class Proc:
    """A subprocess writing to a log file; wait_log finds a pattern in it."""

    def __init__(self, module: str, args: list[str], cwd: Path, env: dict[str, str], name: str) -> None:
        self.log_path = cwd / f"{name}-{time.monotonic_ns()}.log"
        with open(self.log_path, "wb") as out:
            self.proc = launch(module, *args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, pattern: re.Pattern, timeout: float = 15.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = pattern.search(self.log())
            if match:
                return match
            if self.proc.poll() is not None:
                pytest.fail(f"exited ({self.proc.returncode}) before {pattern.pattern!r}:\n{self.log()}")
            time.sleep(0.02)
        pytest.fail(f"no {pattern.pattern!r} within {timeout} s:\n{self.log()}")

    def end(self, signum: int = signal.SIGTERM) -> int:
        return stop_process(self.proc, signum)


class Hostengine(Proc):
    def __init__(self, cwd: Path, scenario: str = "2", port: int = 0, unix: Path | None = None) -> None:
        where = ["--unix", str(unix)] if unix is not None else ["--port", str(port)]
        super().__init__(ENGINE, ["hostengine", *where, "--scenario", scenario], cwd, _env(),
                         "hostengine")
        self.address = self.wait_log(LISTENING)[1]

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])


class Collector(Proc):
    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        from dcgm_collector.engine import library_path

        counters = cwd / "counters.csv"
        counters.write_text(COUNTERS)
        super().__init__(COLLECTOR, ["--dcgm-lib", str(library_path()), "-f", str(counters), *FAST,
                          *args], cwd, env or _env(), "collector")
        self.port = int(self.wait_log(SERVING)[1])

    def get(self, path: str = "/metrics") -> tuple[int, str]:
        status, body = http_get(f"http://127.0.0.1:{self.port}{path}", timeout=5)
        return status, body.decode()

    def metrics(self) -> str:
        status, body = self.get()
        assert status == 200, body
        return body

    def counts(self) -> tuple[int, int]:
        """(threads, open file descriptors) of the collector process."""
        pid = self.proc.pid
        return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))

    def settled_counts(self) -> tuple[int, int]:
        """counts() once two readings 0.3 s apart agree (a request thread may still be ending)."""
        previous = None
        for _ in range(20):
            now = self.counts()
            if now == previous:
                return now
            previous = now
            time.sleep(0.3)
        return previous  # type: ignore[return-value]


@contextmanager
def running(*procs_factory):
    started = []
    try:
        for factory in procs_factory:
            started.append(factory())
        yield started
    finally:
        for proc in reversed(started):
            proc.end()


def fresh(text: str, **labels: str) -> bool:
    """up 1 and a sample younger than a second for the target of ``labels`` (none: the only target)."""
    up = value(text, "dcgm_collector_up", **labels)
    age = value(text, "dcgm_collector_last_sample_age_seconds", **labels)
    return up == 1 and age is not None and age < 1.0


def gpu_series(text: str, name: str = "DCGM_FI_DEV_GPU_TEMP") -> dict[tuple[str, str], float]:
    return {(labels.get("hostname", ""), labels["gpu"]): v for n, labels, v in samples(text) if n == name}


# ---- the "done when" -----------------------------------------------------------------

def connected_lines(address: str, gpus: str) -> re.Pattern:
    """The log line of a (re)connection to the hostengine at ``address``: (re or None, series, MiB of rings)."""
    return re.compile(rf'msg="127\.0\.0\.1: (re)?connected to the hostengine at {re.escape(address)}: '
                      rf'{re.escape(gpus)}; (\d+) sampled series in (\d+\.\d) MiB of rings"')


def test_sigkill_restart_fresh_again_with_the_same_threads_and_fds(tmp_path):
    engine = Hostengine(tmp_path, "2")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address)
        wait_for(lambda: fresh(collector.metrics()), what="fresh samples", log=collector.log)
        # the connection says what it samples (the start-up lines may come before it, with nothing yet)
        figures = connected_lines(engine.address, "GPUs 0-1 (2 x NVIDIA H100 80GB HBM3)")
        startup = [m.groups() for m in figures.finditer(collector.log())]
        assert len(startup) == 1 and startup[0][0] is None, collector.log()
        assert int(startup[0][1]) == 4 and float(startup[0][2]) > 0   # temperature and power on 2 GPUs
        time.sleep(0.5)
        threads, fds = collector.settled_counts()
        before = collector.metrics()
        old = gpu_series(before)
        assert set(old) == {("127.0.0.1", "0"), ("127.0.0.1", "1")}
        samples_before = value(before, "dcgm_collector_samples_total")

        engine.end(signal.SIGKILL)
        killed_at = time.monotonic()
        status, body = wait_for(lambda: (r := collector.get("/health"))[0] == 503 and r,
                                what="/health 503", log=collector.log)
        assert f"hostengine at {engine.address}" in body
        # the old values are still served, flagged stale: up 0 and a growing age
        stale = collector.metrics()
        assert gpu_series(stale) == old
        assert value(stale, "dcgm_collector_up") == 0
        age = value(stale, "dcgm_collector_last_sample_age_seconds")
        time.sleep(0.4)
        later = collector.metrics()
        assert value(later, "dcgm_collector_last_sample_age_seconds") > age
        assert value(later, "dcgm_collector_reconnects_total") == 0
        assert value(later, "dcgm_collector_dcgm_errors_total", code="-21") >= 1

        engine = Hostengine(tmp_path, "2", port=engine.port)
        restarted_at = time.monotonic()
        text = wait_for(lambda: (t := collector.metrics()) and fresh(t) and t, what="fresh samples again",
                        log=collector.log)
        reconnect_s = time.monotonic() - restarted_at
        assert reconnect_s < 5.0, f"fresh again {reconnect_s:.1f} s after the restart"
        assert value(text, "dcgm_collector_reconnects_total") == 1
        assert value(text, "dcgm_collector_samples_total") > samples_before
        # the same GPUs again: the same rings, restated once
        assert [m.groups() for m in figures.finditer(collector.log())] == [startup[0], ("re", *startup[0][1:])]
        wait_for(lambda: collector.get("/health") == (200, "OK\nsource: hostengine, chosen by -r"),
                 what="/health 200", log=collector.log)
        time.sleep(0.5)
        assert collector.settled_counts() == (threads, fds)
        print(f"\nkill -> fresh: {time.monotonic() - killed_at:.2f} s; restart -> fresh: {reconnect_s:.2f} s; "
              f"threads {threads}, fds {fds}")
        assert collector.end() == 0
        assert "Traceback" not in collector.log()
    finally:
        engine.end()
        if collector is not None:
            collector.end()


def test_a_hostengine_restarted_with_more_gpus_is_rediscovered(tmp_path):
    engine = Hostengine(tmp_path, "2")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address)
        wait_for(lambda: fresh(collector.metrics()), what="fresh samples", log=collector.log)
        assert {gpu for _, gpu in gpu_series(collector.metrics())} == {"0", "1"}
        engine.end(signal.SIGKILL)
        wait_for(lambda: collector.get("/health")[0] == 503, what="/health 503")
        engine = Hostengine(tmp_path, "4", port=engine.port)
        text = wait_for(lambda: (t := collector.metrics()) and fresh(t) and len(gpu_series(t)) == 4 and t,
                        what="4 GPUs", log=collector.log)
        assert {gpu for _, gpu in gpu_series(text)} == {"0", "1", "2", "3"}
        assert "the GPUs changed (2 GPUs -> 4 GPUs)" in collector.log()
    finally:
        engine.end()
        if collector is not None:
            collector.end()


def test_two_targets_one_killed_the_other_stays_fresh(tmp_path):
    unix = tmp_path / "he.sock"
    with running(lambda: Hostengine(tmp_path, "1"), lambda: Hostengine(tmp_path, "2", unix=unix)) as engines:
        tcp, local = engines
        collector = Collector(tmp_path, "-r", tcp.address, "-r", f"unix://{unix}", env=_env(NODE_NAME="node-u"))
        try:
            text = wait_for(lambda: (t := collector.metrics()) and fresh(t, hostname="127.0.0.1")
                            and fresh(t, hostname="node-u") and t, what="both targets fresh", log=collector.log)
            assert set(gpu_series(text)) == {("127.0.0.1", "0"), ("node-u", "0"), ("node-u", "1")}
            assert text.count("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n") == 1
            assert text.count("# TYPE dcgm_collector_up gauge\n") == 1
            tcp.end(signal.SIGKILL)
            status, body = wait_for(lambda: (r := collector.get("/health"))[0] == 503 and r, what="/health 503")
            assert "127.0.0.1: " in body and "node-u" not in body
            time.sleep(1.0)
            text = collector.metrics()
            assert value(text, "dcgm_collector_up", hostname="127.0.0.1") == 0
            assert fresh(text, hostname="node-u")
            assert set(gpu_series(text)) == {("127.0.0.1", "0"), ("node-u", "0"), ("node-u", "1")}
        finally:
            collector.end()


def test_an_unreachable_hostengine_at_start_is_not_fatal(tmp_path):
    with socket.socket() as probe:   # a port nobody listens on (until the hostengine takes it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    collector = Collector(tmp_path, "-r", f"127.0.0.1:{port}")
    engine = None
    try:
        status, body = wait_for(lambda: (r := collector.get("/health"))[0] == 503 and "cannot reach" in r[1] and r,
                                what="cannot reach", log=collector.log)
        assert body.startswith(f"cannot reach hostengine at 127.0.0.1:{port}: DCGM_ST_CONNECTION_NOT_VALID")
        text = collector.metrics()   # the collector's own metrics only
        assert value(text, "dcgm_collector_up") == 0 and not gpu_series(text)
        assert re.search(r'^dcgm_collector_build_info\{version="[^"]+",dcgm_library="[^"]+",source="hostengine",'
                         r'source_reason="given"\} 1$', text, re.MULTILINE), text
        # nothing was connected when the start-up lines were written: the connection restates the figures
        log = collector.log()
        assert re.search(r'msg="counters \S+: 2 rows, 0 sampled series, 0 window families over 15 s \(1 target not '
                         r'up yet: counted when up\)"', log), log
        assert re.search(r'msg="draining DCGM every 200 ms, DCGM sampling every 100 ms; 3600 s of history in 0\.0 '
                         r'MiB of rings \(1 target not up yet: counted when up\)"', log), log
        engine = Hostengine(tmp_path, "1", port=port)
        wait_for(lambda: fresh(collector.metrics()), what="connected", log=collector.log)
        connected = [m.groups() for m in connected_lines(engine.address, "GPU 0 (1 x NVIDIA H100 80GB HBM3)")
                     .finditer(collector.log())]
        assert len(connected) == 1 and connected[0][:2] == (None, "2"), collector.log()   # temperature, power
        assert float(connected[0][2]) > 0
        assert collector.get("/health") == (200, "OK\nsource: hostengine, chosen by -r")
        assert value(collector.metrics(), "dcgm_collector_reconnects_total") == 0
    finally:
        if engine is not None:
            engine.end()
        collector.end()


def test_a_stalled_hostengine_times_out_and_is_reconnected_once_it_runs_again(tmp_path):
    engine = Hostengine(tmp_path, "1")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address)
        wait_for(lambda: fresh(collector.metrics()), what="fresh samples", log=collector.log)
        old = gpu_series(collector.metrics())
        engine.proc.send_signal(signal.SIGSTOP)   # stalls longer than the collect interval and the request timeout
        started = time.monotonic()
        body = wait_for(lambda: (r := collector.get("/health"))[0] == 503 and "DCGM_ST_TIMEOUT" in r[1] and r[1],
                        what="the read to time out", log=collector.log)
        assert body.startswith(f"lost the connection to the hostengine at {engine.address}: DCGM_ST_TIMEOUT")
        assert time.monotonic() - started < 5.0
        text = collector.metrics()   # scrapes never wait for DCGM
        assert gpu_series(text) == old and value(text, "dcgm_collector_up") == 0
        assert value(text, "dcgm_collector_dcgm_errors_total", code="-11") >= 1
        engine.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: fresh(collector.metrics()), what="fresh after SIGCONT", log=collector.log)
        assert value(collector.metrics(), "dcgm_collector_reconnects_total") == 1
    finally:
        if engine.proc.poll() is None:
            engine.proc.send_signal(signal.SIGCONT)
        engine.end()
        if collector is not None:
            collector.end()


# ---- stopping while the hostengine hangs: DCGM's own 60 s request timeout, not the tests' 1 s ----

def _dcgm_default_timeout_env() -> dict[str, str]:
    env = _env()
    del env["DCGM_SIM_REQUEST_TIMEOUT_MS"]   # every request to the stopped hostengine waits 60 s, as with DCGM
    return env


@contextmanager
def stopped_hostengine(tmp_path: Path, *collector_args: str):
    """A collector sampling a hostengine that then gets SIGSTOP; the hostengine is resumed and ended after."""
    engine = Hostengine(tmp_path, "4")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address, *collector_args, env=_dcgm_default_timeout_env())
        wait_for(lambda: fresh(collector.metrics()), what="fresh samples", log=collector.log)
        engine.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.5)   # two collect intervals: the sampler is now waiting inside a DCGM call
        yield engine, collector
    finally:
        if engine.proc.poll() is None:
            engine.proc.send_signal(signal.SIGCONT)
        engine.end()
        if collector is not None:
            collector.end(signal.SIGKILL)


def stop_timed(collector: Collector, timeout: float = 70.0) -> tuple[int, float]:
    """(exit code, seconds) of a SIGTERM; waits as long as a stuck DCGM call could hold it."""
    started = time.monotonic()
    collector.proc.send_signal(signal.SIGTERM)
    try:
        code = collector.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {timeout} s after SIGTERM:\n{collector.log()}")
    return code, time.monotonic() - started


def test_sigterm_while_the_hostengine_is_stopped_exits_within_2_s(tmp_path):
    with stopped_hostengine(tmp_path) as (_, collector):
        assert collector.metrics()   # scrapes go on meanwhile
        code, seconds = stop_timed(collector)
        print(f"\nSIGTERM -> exit with the hostengine stopped: {seconds:.2f} s")
        assert code == 0, collector.log()
        assert seconds < 2.0, collector.log()
        assert "Traceback" not in collector.log()
        assert "SIGTERM: shutting down" in collector.log()


def test_sighup_then_sigterm_while_the_hostengine_is_stopped_exits_within_2_s(tmp_path):
    with stopped_hostengine(tmp_path) as (_, collector):
        collector.proc.send_signal(signal.SIGHUP)   # the reload waits on the hostengine...
        time.sleep(0.3)
        collector.proc.send_signal(signal.SIGHUP)   # ...and a second one joins it
        time.sleep(0.3)
        status, _ = collector.get("/health")   # the server still answers meanwhile
        assert status in (200, 503)
        code, seconds = stop_timed(collector)   # ...but SIGTERM does not wait for it
        print(f"\nSIGHUP, SIGTERM -> exit with the hostengine stopped: {seconds:.2f} s")
        assert code == 0, collector.log()
        assert seconds < 2.0, collector.log()
        assert "Traceback" not in collector.log()


def test_sigterm_while_connecting_to_a_stopped_hostengine_exits_within_2_s(tmp_path):
    engine = Hostengine(tmp_path, "1")
    engine.proc.send_signal(signal.SIGSTOP)   # the kernel still accepts connections; nothing answers them
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address, env=_dcgm_default_timeout_env())
        time.sleep(2.5)   # past the connect timeout: the supervisor waits inside a request now
        code, seconds = stop_timed(collector)
        print(f"\nSIGTERM -> exit while connecting to a stopped hostengine: {seconds:.2f} s")
        assert code == 0, collector.log()
        assert seconds < 2.0, collector.log()
        assert "Traceback" not in collector.log()
    finally:
        engine.proc.send_signal(signal.SIGCONT)
        engine.end()
        if collector is not None:
            collector.end(signal.SIGKILL)
