"""Helpers the tests that run real processes share: loopback ports, HTTP GETs,
waiting loops, stopping subprocesses, reading the collector's output, and Debian's Prometheus with its HTTP API
and its Alertmanager with a webhook receiver.

pytest puts tests/ on sys.path (no __init__.py, prepend import mode), so a
test module imports these with ``from support import ...``.
"""

from __future__ import annotations

import http.server
import json
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

PROMETHEUS = shutil.which("prometheus")
# Debian's victoria-metrics package: the single-node server, a remote-write receiver at /api/v1/write
VICTORIA_METRICS = shutil.which("victoria-metrics")

# What the tests run as processes, each as `python -m MODULE` with this interpreter.
COLLECTOR = "dcgm_collector"
ENGINE = "dcgm_collector.engine"
DASHBOARD = "dcgm_collector.dashboard"

# the line the collector logs once it serves, with the port it bound
SERVING = re.compile(r"serving http://127\.0\.0\.1:(\d+)/metrics")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that this process was not given before.

    The kernel may give a port just released to the next bind to port 0, so two calls before either port is
    listened on could otherwise return the same one (a test that starts many servers saw exactly that)."""
    for _ in range(1000):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError("no free port on 127.0.0.1 this process was not given before")


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """(status, body) of a GET; an HTTP error status is an answer, not an exception."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def is_ready(url: str, timeout: float = 2.0) -> bool:
    """Whether a GET of ``url`` answers 200; a refused or broken connection is a no."""
    try:
        return http_get(url, timeout)[0] == 200
    except OSError:
        return False


def get_json(url: str, timeout: float = 5.0) -> Any:
    """The JSON body of a GET that must answer 200."""
    status, body = http_get(url, timeout)
    assert status == 200, f"{url}: HTTP {status}: {body[:500]!r}"
    return json.loads(body)


def wait_until(what: str, check: Callable[[], object], process: subprocess.Popen, timeout: float = 30.0) -> None:
    """Poll ``check`` until it is true; fail if ``process`` exits first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what}: process exited with {process.returncode}")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what}: not ready after {timeout} s")


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0, what: str = "condition",
             log: Callable[[], str] | None = None, poll_s: float = 0.05) -> Any:
    """The first true value of ``predicate``; the test fails (with ``log()`` if given) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}" + (f"\n{log()}" if log else ""))
        time.sleep(poll_s)


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each sample line of a text exposition."""
    out = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            out.append((match[1], dict(LABEL.findall(match[2] or "")), float(match[3])))
    return out


def stop_process(process: subprocess.Popen, signum: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
    """Send ``signum`` to a running process, kill it if it outlives ``timeout``; its exit status."""
    if process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def close_and_print_logs(folder: Path, logs: Mapping[str, IO[bytes]]) -> None:
    """Close each ``folder/<name>.log`` and print its tail, for the report of a failed test."""
    for name, log in logs.items():
        log.close()
        print(f"--- {name}.log\n{(folder / f'{name}.log').read_text(errors='replace')[-3000:]}")


def write_scrape_config(path: Path, *targets: str) -> Path:
    """A Prometheus config that scrapes each of ``targets`` (host:port) every second as job "dcgm"."""
    listed = ", ".join(f"'{target}'" for target in targets)
    path.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "scrape_configs:\n  - job_name: dcgm\n"
                    f"    static_configs:\n      - targets: [{listed}]\n")
    return path


def start_prometheus(config: Path, workdir: Path, port: int, log: IO[bytes], *flags: str) -> subprocess.Popen:
    """Debian's prometheus on 127.0.0.1:``port``, its TSDB under ``workdir``, its output in ``log``."""
    assert PROMETHEUS is not None, "prometheus is not installed"
    return subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", *flags, "--log.level=warn"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT)


ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


class _Webhook(http.server.BaseHTTPRequestHandler):
    """Alertmanager's webhook receiver: every JSON notice goes on the server's queue."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.notices.put(json.loads(body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, queue.Queue]]:
    """A webhook on loopback for Alertmanager: its URL and the queue of the notices it was sent."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Webhook)
    server.notices = queue.Queue()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", server.notices  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def write_alerting_configs(folder: Path, hook: str, am_port: int, targets: Mapping[int, Mapping[str, str]],
                           group_by: Sequence[str]) -> None:
    """folder/alertmanager.yml sending every alert to ``hook`` at once, and folder/prometheus.yml scraping each
    collector port of ``targets`` every second under its labels, evaluating folder/rules.yml every second."""
    (folder / "alertmanager.yml").write_text(
        f"route:\n  receiver: hook\n  group_by: [{', '.join(group_by)}]\n"
        "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: '{hook}'\n")
    statics = "".join(f"      - targets: ['127.0.0.1:{port}']\n        labels: {{"
                      + ", ".join(f"{k}: '{v}'" for k, v in labels.items()) + "}\n"
                      for port, labels in targets.items())
    (folder / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
        "rule_files: [rules.yml]\n"
        f"alerting:\n  alertmanagers:\n    - static_configs: [{{targets: ['127.0.0.1:{am_port}']}}]\n"
        "scrape_configs:\n  - job_name: dcgm-collector\n    static_configs:\n" + statics)


def start_alertmanager(config: Path, workdir: Path, port: int, log: IO[bytes]) -> subprocess.Popen:
    """Debian's Alertmanager on 127.0.0.1:``port`` (no cluster), its data under ``workdir``; returns once ready.

    Start it before Prometheus: an alert that fires before Prometheus knows its Alertmanager is only sent
    again after the resend delay."""
    assert ALERTMANAGER is not None, "prometheus-alertmanager is not installed"
    process = subprocess.Popen(
        [ALERTMANAGER, f"--config.file={config}", f"--storage.path={workdir / 'am'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=warn"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    wait_until("alertmanager ready", lambda: is_ready(f"http://127.0.0.1:{port}/-/ready"), process, 30)
    return process


def start_victoria_metrics(workdir: Path, port: int, log: IO[bytes]) -> subprocess.Popen:
    """Debian's victoria-metrics on 127.0.0.1:``port``, its data under ``workdir``, its output in ``log``.

    Queries see a sample as soon as it is stored (no latency offset, no result cache); what it has
    received is searchable only after its in-memory buffer is flushed, about a second later.
    """
    assert VICTORIA_METRICS is not None, "victoria-metrics is not installed (Debian package 'victoria-metrics')"
    return subprocess.Popen(
        [VICTORIA_METRICS, f"-httpListenAddr=127.0.0.1:{port}", f"-storageDataPath={workdir / 'victoria-metrics'}",
         "-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=WARN"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT)


def prometheus_query(prometheus_url: str, promql: str) -> list[dict]:
    """The result vector of an instant query through Prometheus's HTTP API."""
    answer = get_json(f"{prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def command(module: str, *args: str) -> list[str]:
    """``python -m MODULE ARGS`` with this interpreter: how every test runs the collector, engine or dashboard.

    Run it from a folder outside the checkout (a tmp_path): ``python -m`` puts the
    working folder first on sys.path, and the source folder may lack the compiled
    extension the installed package has.
    """
    return [sys.executable, "-m", module, *args]


def launch(module: str, *args: str, cwd: Path, env: Mapping[str, str] | None = None, stdout: Any = None,
           stderr: Any = None, text: bool = False) -> subprocess.Popen:
    """Start ``python -m MODULE ARGS`` in ``cwd``; the caller stops it (stop_process)."""
    return subprocess.Popen(command(module, *args), cwd=cwd, env=None if env is None else dict(env), stdout=stdout,
                            stderr=stderr, text=text)


def last_line(text: str) -> str:
    """The last non-blank line of a command's output: where its one-line error is."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# the msg="..." (or bare msg=word) of a logfmt line, as the collector writes its log
_LOGFMT_MESSAGE = re.compile(r'(?:^| )msg=("(?:[^"\\]|\\.)*"|\S*)')


def log_messages(text: str) -> list[tuple[str, str]]:
    """(level, message) of each logfmt line in ``text``, the message unquoted."""
    out = []
    for line in text.splitlines():
        found = _LOGFMT_MESSAGE.search(line)
        level = re.search(r"(?:^| )level=(\S+)", line)
        if found and level:
            message = found.group(1)
            out.append((level.group(1), json.loads(message) if message.startswith('"') else message))
    return out


def lost_gpu_scenario(lost_at_s: float) -> str:
    """An engine scenario: GPU 1 of 3 H100s falls off the bus (XID 79) at ``lost_at_s``; the others carry on."""
    return f"""\
# GPU 1 of 3 falls off the bus; the others carry on.
seed = 3
[[gpu]]
model = "H100"
count = 3

[[event]]
at = {lost_at_s}
gpu = 1
kind = "lost"
xid = 79
"""


def gpu_ring_series(sampler: Any, gpu: int, fields: tuple[int, ...]) -> dict[int, tuple[Any, Any]]:
    """Each field's good samples on one GPU across a sampler's rings: {field: (timestamps us, values)}."""
    from dcgm_collector.dcgm import EntityType
    from dcgm_collector.rings.ring import SAMPLE_OK

    out = {}
    for ring in sampler.rings.values():
        rows = ring.rows_since(0)
        for field in fields:
            try:
                col = ring.index((int(EntityType.GPU), gpu, field))
            except (KeyError, ValueError):
                continue
            ok = rows.status[:, col] == SAMPLE_OK
            out[field] = (rows.ts[ok], rows.values[ok, col])
    return out


def write_recording(path: Path, rows: list[tuple], sidecar: dict[str, Any] | None = None,
                    start: float = 1_800_000_000.0) -> Path:
    """A flight recording at ``path`` (Parquet, the columns of model.RECORDING_COLUMNS) and its sidecar.

    Each row is (seconds after ``start``, gpu, field_id, value, status="OK"), a GPU entity's reading;
    a None value with the status left out is BLANK.  ``sidecar`` (a dict) is written as ``<path>.json``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dcgm_collector.model import RECORDING_COLUMNS, RECORDING_SIDECAR_SUFFIX, recording_schema

    schema = recording_schema(pa)
    records = []
    for row in rows:
        t, gpu, field, value, *rest = row
        status = rest[0] if rest else ("OK" if value is not None else "BLANK")
        records.append({"time": round((start + t) * 1e6), "entity_group": "GPU", "entity_id": gpu, "gpu": gpu,
                        "field_id": field, "field_name": f"field {field}", "metric": f"field_{field}",
                        "value": value, "status": status})
    columns = {name: [r[name] for r in records] for name, _ in RECORDING_COLUMNS}
    columns["time"] = pa.array(columns["time"], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table(columns, schema=schema), path)
    if sidecar is not None:
        path.with_name(path.name + RECORDING_SIDECAR_SUFFIX).write_text(json.dumps(sidecar))
    return path


CHECKOUT = Path(__file__).resolve().parents[1]


def copy_checkout(destination: Path) -> Path:
    """The checkout's tracked and unignored files, as a fresh clone with the reader's edits has them."""
    listed = subprocess.run(["git", "-C", str(CHECKOUT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True, timeout=60)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def self_signed_certificate(directory: Path, stem: str, common_name: str = "127.0.0.1",
                            ca: bool = True) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key, valid for a day, and that key, as ``directory/stem.pem``
    and ``directory/stem.key``; with ``ca`` it is marked a CA, so a client can trust it as its CA file."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                              critical=False))
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    cert = builder.sign(key, hashes.SHA256())
    cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path
