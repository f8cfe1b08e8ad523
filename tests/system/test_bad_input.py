"""Bad input from an operator's point of view: the real CLI process, what it prints and what it keeps serving.

test_cli.py and test_server.py check the parsers and the HTTP server one
piece at a time; here each kind of bad input goes to ``python -m
dcgm_collector`` as a subprocess (cwd=tmp_path, so the installed package is
what runs), and each test asserts the one line an operator sees and that a
running collector keeps serving what it has.  The HTTP cases share one
collector process.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from support import COLLECTOR, launch, log_messages
from test_faults import SERVING, Hostengine, Proc, _env, fresh, gpu_series, value, wait_for
from test_faults import Collector as _FaultsCollector

COUNTERS = ("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
            "DCGM_FI_DEV_POWER_USAGE, gauge, power\n"
            "DCGM_FI_DEV_SM_CLOCK, gauge, SM clock\n")
FAMILIES = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK"}
ERROR_PREFIX = "dcgm-collector: error: "


class Collector(_FaultsCollector):
    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.counters = cwd / "bad-input-counters.csv"
        self.counters.write_text(COUNTERS)
        flags = ["-a", "127.0.0.1:0", "-c", "200", "--watch-interval", "100", "-f", str(self.counters)]
        if "--sim" not in args:
            from dcgm_collector.engine import library_path
            flags += ["--dcgm-lib", str(library_path())]
        Proc.__init__(self, COLLECTOR, [*flags, *args], cwd, env or _env(), "collector")
        self.port = int(self.wait_log(SERVING)[1])

    def families(self) -> set[str]:
        return {line.split("{", 1)[0] for line in self.metrics().splitlines() if line.startswith("DCGM_")}

    def raw(self, data: bytes, timeout: float = 5.0) -> bytes:
        """Send bytes, read until the server closes the connection."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)

    def request(self, method: str, path: str) -> tuple[http.client.HTTPResponse, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request(method, path, body=b"x=1" if method in ("POST", "PUT", "PATCH") else None)
            response = conn.getresponse()
            return response, response.read()
        finally:
            conn.close()


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return launch(COLLECTOR, "-a", "127.0.0.1:0", *args, cwd=cwd, env=env or _env(), stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)


def finished(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    """(exit code, stderr) of each; they ran at the same time (each is mostly interpreter start-up)."""
    out = []
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"{proc.args} did not exit: {err}")
        out.append((proc.returncode, err))
    return out


def body_of(reply: bytes) -> bytes:
    return reply.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in reply else b""


# ---- start-up refusals: one line, exit 1 --------------------------------------------------------

MALFORMED_REMOTES = [
    ("[::1", "no closing ']'"),
    ("[::1]:5555x", "port '5555x' is not a number"),
    ("http://node:5555", "unknown scheme http://"),
    ("node:", "port '' is not a number"),
    ("node:65536", "port '65536' is not a number from 1 to 65535"),
    ("unix://", "no socket path after unix://"),
    ("a b:5555", "'a b' is not a host name"),
    ("::ffff:1.2.3.4:x", "an IPv6 address with a port is written [ADDRESS]:PORT"),
]


def test_malformed_remote_addresses_are_one_line_and_exit_1(tmp_path):
    procs = [run_cli(tmp_path, "-r", "node-a:5555", "-r", text) for text, _ in MALFORMED_REMOTES]
    procs.append(run_cli(tmp_path, env=_env(DCGM_REMOTE_HOSTENGINE_INFO="node-a:5555, node-b:x")))
    results = finished(procs)
    for (text, why), (code, err) in zip(MALFORMED_REMOTES, results):
        assert code == 1, (text, err)
        assert err.count("\n") == 1, f"not one line for -r {text!r}: {err!r}"
        assert err.startswith(f"{ERROR_PREFIX}-r: bad hostengine address {text!r}: {why}"), err
        assert "; expected HOST, HOST:PORT, [IPv6]:PORT" in err
    code, err = results[-1]
    assert code == 1 and err.count("\n") == 1
    # the item is quoted as written in the list (a blank after the comma may show)
    assert re.match(rf"{ERROR_PREFIX}DCGM_REMOTE_HOSTENGINE_INFO: bad hostengine address ' ?node-b:x': port 'x'", err)


def test_a_missing_remote_value_is_a_usage_error(tmp_path):
    (code, err), = finished([run_cli(tmp_path, "-r")])
    assert code == 2
    assert err.splitlines()[-1] == f"{ERROR_PREFIX}argument -r/--remote-hostengine-info: expected one argument"


MISTYPED = [
    (["--colectors", "x.csv"], "--colectors x.csv (did you mean --collectors?)"),
    (["--colector=x.csv"], "--colector=x.csv (did you mean --collectors?)"),
    (["-colectors", "x.csv"], "-colectors x.csv (did you mean --collectors?)"),
    (["-no-hostnam"], "-no-hostnam (did you mean --no-hostname?)"),
    (["--nvm"], "--nvm (did you mean --nvml?)"),
    (["--debg", "--retension=60"], "--debg --retension=60 (did you mean --debug for --debg, --retention for "
                                   "--retension?)"),
    (["check-counter", "x.csv"], "check-counter x.csv (did you mean check-counters?)"),
    (["dashbord"], "dashbord (did you mean dashboard?)"),
    (["--no-such-flag-at-all"], "--no-such-flag-at-all"),   # nothing near: nothing suggested
]


def test_a_mistyped_flag_or_command_is_a_usage_error_suggesting_the_nearest(tmp_path):
    results = finished([launch(COLLECTOR, *args, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for args, _ in MISTYPED])
    for (args, said), (code, err) in zip(MISTYPED, results):
        assert code == 2, (args, err)
        assert err.splitlines()[-1] == f"{ERROR_PREFIX}unrecognized arguments: {said}", (args, err)
        assert err.splitlines()[0].startswith("usage: dcgm-collector [OPTIONS]"), err
    (code, err), = finished([launch(COLLECTOR, "check-counters", "x.csv", "--hepl", cwd=tmp_path, env=_env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)])
    assert code == 2 and err.splitlines()[-1] == ("dcgm-collector check-counters: error: unrecognized arguments: "
                                                  "--hepl (did you mean --help?)"), err


BAD_SCENARIOS = {
    # name: (text, line, what the line says)
    "unterminated.toml": ('seed = 1\n[[gpu]]\nmodel = "H100\n', 3, None),
    "plain-table.toml": ('seed = 1\n[gpu]\nmodel = "H100"\n', 2, "plain [tables] are not supported"),
    "unknown-model.toml": ('seed = 1\n\n[[gpu]]\nmodel = "GH9000"\n', 4, 'unknown model "GH9000" (known: H100'),
    "too-many.toml": ("[[gpu]]\ncount = 40\n", 2, "'count' = 40 is out of range (1 to 32)"),
    "unknown-key.toml": ('[[gpu]]\nmodel = "A100"\ncolour = "green"\n', 3, "colour"),
    # the line of the [[event]] header, not of its gpu key
    "event-no-gpu.toml": ('[[gpu]]\ncount = 2\n[[event]]\nat = 1.0\ngpu = 5\nkind = "lost"\n', 3,
                          "gpu 5 does not exist (the scenario has 2 GPUs"),
}


def test_bad_scenario_files_name_the_file_and_line_and_exit_1(tmp_path):
    for name, (text, _, _) in BAD_SCENARIOS.items():
        (tmp_path / name).write_text(text)
    results = finished([run_cli(tmp_path, "--sim", name) for name in BAD_SCENARIOS])
    for (name, (_, line, what)), (code, err) in zip(BAD_SCENARIOS.items(), results):
        assert code == 1, (name, err)
        assert err.count("\n") == 1, f"{name}: not one line: {err!r}"
        assert err.startswith(f"{ERROR_PREFIX}--sim {name}: "), err
        # file:line for syntax (tomllib) and schema (the simulator) errors alike
        assert re.search(rf"{re.escape(name)}:{line}: ", err), err
        if what is not None:
            assert what in err, err


def test_files_named_by_flags_that_are_fifos_are_refused_at_once(tmp_path):
    """A FIFO where a file is expected would block the open for ever: each is one line at once, naming the file."""
    fifos = {name: tmp_path / name for name in ("web.yml", "scenario.toml")}
    for path in fifos.values():
        os.mkfifo(path)
    cases = [
        (["--sim", "1", "--web-config-file", str(fifos["web.yml"])],
         f"{fifos['web.yml']}: not a regular file (a FIFO)"),
        (["--sim", str(fifos["scenario.toml"])],
         f"{fifos['scenario.toml']}: cannot read scenario: not a regular file (a FIFO)"),
    ]
    results = finished([run_cli(tmp_path, *flags) for flags, _ in cases])
    for (flags, line), (code, err) in zip(cases, results):
        assert code == 1, (flags, err)
        assert err.count("\n") == 1, err
        assert err.startswith(ERROR_PREFIX) and line in err, err


# ---- unreachable targets: keeps serving the others, /health says which ----------------------------

def test_unreachable_targets_beside_a_live_one(tmp_path):
    with socket.socket() as probe:   # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    missing = tmp_path / "no-such-hostengine.sock"
    engine = Hostengine(tmp_path, "2")
    collector = None
    try:
        collector = Collector(tmp_path, "-r", engine.address, "-r", f"localhost:{port}", "-r", f"unix://{missing}",
                              env=_env(NODE_NAME="node-u"))
        status, body = wait_for(lambda: (r := collector.get("/health"))[0] == 503 and r[1].count("cannot reach") == 2
                                and r, what="both unreachable targets in /health", log=collector.log)
        # one reason per target that is down, in -r order (the server writes the body on one line)
        assert body.startswith(f"localhost: cannot reach hostengine at localhost:{port}: "
                               "DCGM_ST_CONNECTION_NOT_VALID"), body
        assert re.search(rf"\snode-u: cannot reach hostengine at {re.escape(f'unix://{missing}')}: ", body), body
        assert "127.0.0.1" not in body
        text = wait_for(lambda: (t := collector.metrics()) and fresh(t, hostname="127.0.0.1") and t,
                        what="the live target fresh", log=collector.log)
        assert set(gpu_series(text)) == {("127.0.0.1", "0"), ("127.0.0.1", "1")}
        assert value(text, "dcgm_collector_up", hostname="localhost") == 0
        assert value(text, "dcgm_collector_up", hostname="node-u") == 0
        # retried quietly: one warning per unreachable target, however many attempts
        time.sleep(1.5)
        log = collector.log()
        for address in (f"localhost:{port}", f"unix://{missing}"):
            warnings = [line for line in log.splitlines() if f"cannot reach hostengine at {address}" in line]
            assert len(warnings) == 1, warnings
        assert "Traceback" not in log
        assert fresh(collector.metrics(), hostname="127.0.0.1")
    finally:
        engine.end()
        if collector is not None:
            assert collector.end() == 0
            assert "Traceback" not in collector.log()


# ---- one running collector for the HTTP and reload cases ----------------------------------------

@pytest.fixture(scope="module")
def running(tmp_path_factory):
    collector = Collector(tmp_path_factory.mktemp("bad-input"), "--sim", "2")
    wait_for(lambda: collector.families() == FAMILIES, what="the first samples", log=collector.log)
    yield collector
    assert collector.end() == 0
    assert "Traceback" not in collector.log()


@pytest.fixture
def collector(running):
    """The shared collector; after each test it must still serve every family, fresh, and be healthy."""
    yield running
    assert running.proc.poll() is None, running.log()
    assert running.families() == FAMILIES
    assert fresh(running.metrics())
    assert running.get("/health") == (200, "OK\nsource: sim, chosen by --sim 2")


@pytest.mark.parametrize("path", ["/nope", "/metrics/", "/metricsx", "/healthz", "/../../etc/passwd", "/%00",
                                  "/" + "a" * 2000])
def test_unknown_paths_are_404(collector, path):
    response, body = collector.request("GET", path)
    assert response.status == 404
    assert body.count(b"\n") == 1 and body.startswith(b"404 ")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"])
def test_methods_other_than_get_and_head_are_405(collector, method):
    response, body = collector.request(method, "/metrics")
    assert response.status == 405
    assert response.getheader("Allow") == "GET, HEAD"
    assert body.count(b"\n") == 1
    response, body = collector.request("HEAD", "/metrics")
    assert response.status == 200 and body == b""


def test_connect_is_405_too(collector):
    reply = collector.raw(b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 405 ")
    assert body_of(reply).count(b"\n") == 1


@pytest.mark.parametrize("headers", [
    b"".join(b"X-Filler-%d: %s\r\n" % (i, b"a" * 1000) for i in range(40)),   # many headers, 40 KB in all
    b"Cookie: " + b"c" * 100_000 + b"\r\n",                                     # one huge line
], ids=["many", "one-huge"])
def test_oversized_headers_get_431(collector, headers):
    reply = collector.raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 431 ")
    assert body_of(reply).count(b"\n") == 1


@pytest.mark.parametrize("data", [
    b"\x00\xff\xfe\x16\x03\x01garbage\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(32)) + b"\r\n\r\n",   # a TLS ClientHello's start
    b"GET\r\n\r\n",
    b"GET /metrics HTTP/9.9\r\n\r\n",
    b"GET /metrics HTTP/1.1 extra\r\n\r\n",
], ids=["binary", "tls-hello", "no-path", "bad-version", "extra-words"])
def test_garbage_request_lines_get_400_and_a_closed_connection(collector, data):
    reply = collector.raw(data)   # returns only once the server closed the connection
    status = reply.split(b"\r\n", 1)[0]
    assert re.fullmatch(rb"HTTP/1\.[01] (400|505) .*", status), reply[:200]
    assert body_of(reply).count(b"\n") == 1


def test_clients_that_send_nothing_do_not_hold_up_the_others(collector):
    threads_before, fds_before = collector.settled_counts()
    silent = [socket.create_connection(("127.0.0.1", collector.port), timeout=5) for _ in range(20)]
    half = [socket.create_connection(("127.0.0.1", collector.port), timeout=5) for _ in range(5)]
    try:
        for sock in half:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")   # the headers never end
        # let the accept loop take them all first: the listen backlog is small (see test_load.py), and
        # a connect that overflows it waits a SYN retry (1 s), which is not what this test is about
        wait_for(lambda: collector.counts()[0] >= threads_before + len(silent) + len(half),
                 what="a thread per held connection", log=collector.log)
        latencies = []
        for _ in range(10):
            started = time.monotonic()
            status, body = collector.get()
            latencies.append(time.monotonic() - started)
            assert status == 200 and "DCGM_FI_DEV_GPU_TEMP{" in body
        assert collector.get("/health") == (200, "OK\nsource: sim, chosen by --sim 2")
        assert max(latencies) < 0.5, latencies
    finally:
        for sock in silent + half:
            sock.close()
    # their threads end once the clients go
    wait_for(lambda: collector.settled_counts() == (threads_before, fds_before), what="threads and fds back",
             log=collector.log)


# ---- a counters file reloaded broken (SIGHUP) ---------------------------------------------------

@pytest.mark.parametrize("broken, expected", [
    (COUNTERS.replace("DCGM_FI_DEV_POWER_USAGE, gauge", "DCGM_FI_DEV_POWER_USAGE, gaug"),
     r"{path}:2: "),
    ("DCGM_FI_DEV_GPU_TEMP, gauge, temperature\nDCGM_FI_DEV_GPU_TEMP, gaug, again\n", r"{path}:2: "),
    ("DCGM_FI_DEV_GPU_TEMP, gauge\n", r"{path}:1: "),
    (b"\xff\xfe\x00garbage\n", r"{path}"),
    (None, r"{path}: cannot read counters file: No such file or directory"),
], ids=["bad-type", "bad-type-in-a-repeated-row", "two-columns", "binary", "deleted"])
def test_a_counters_file_reloaded_broken_keeps_the_old_metrics(collector, broken, expected):
    path = collector.counters
    try:
        if broken is None:
            path.unlink()
        elif isinstance(broken, bytes):
            path.write_bytes(broken)
        else:
            path.write_text(broken)
        mark = len(collector.log())
        collector.proc.send_signal(signal.SIGHUP)
        pattern = re.compile(r"reload failed, still serving the previous counters: " +
                             expected.format(path=re.escape(str(path))))
        wait_for(lambda: any(pattern.match(m) for _, m in log_messages(collector.log()[mark:])),
                 what="the reload error", log=collector.log)
        time.sleep(0.3)
        new = log_messages(collector.log()[mark:])
        assert len(new) == 1 and new[0][0] == "ERROR", f"more than one line logged, or not at ERROR:\n{new}"
        assert collector.families() == FAMILIES
        assert fresh(collector.metrics())
    finally:
        path.write_text(COUNTERS)   # the running configuration never changed: no reload needed


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "huge"])
def test_a_counters_file_replaced_by_something_else_on_reload_keeps_the_old_metrics(collector, kind):
    path = collector.counters
    path.unlink()
    try:
        if kind == "fifo":
            os.mkfifo(path)
            problem = "not a regular file (a FIFO)"
        elif kind == "dev-zero":
            path.symlink_to("/dev/zero")
            problem = "not a regular file (a character device)"
        elif kind == "directory":
            path.mkdir()
            problem = "not a regular file (a directory)"
        else:
            with open(path, "wb") as out:   # sparse: 4 GiB that take no disk
                out.write(COUNTERS.encode())
                out.truncate(4 << 30)
            problem = "larger than 1 MiB"
        mark = len(collector.log())
        collector.proc.send_signal(signal.SIGHUP)
        message = f"reload failed, still serving the previous counters: {path}: {problem}"
        wait_for(lambda: ("ERROR", message) in log_messages(collector.log()[mark:]), what="the reload error",
                 log=collector.log)
        assert collector.families() == FAMILIES
        assert fresh(collector.metrics())
    finally:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
        path.write_text(COUNTERS)   # the running configuration never changed: no reload needed
