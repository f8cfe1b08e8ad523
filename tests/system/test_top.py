"""``dcgm-collector top``: the live view in a real terminal (tmux) and its --once snapshot, against real collectors.

One collector runs the shipped ``spikes`` scenario sampled every 100 ms, so the utilisation sparkline must show
the 300 ms bursts as full blocks among low ones; a second runs a power-capped ``tensor`` GPU behind TLS and basic
auth, so the throttle reason must be named in words and the client must verify and authenticate.  The view runs
in a tmux session of 160 x 50 cells; the test reads the screen with ``capture-pane`` and types with ``send-keys``.
"""

from __future__ import annotations

import datetime
import itertools
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import bcrypt
import pytest
from support import COLLECTOR, command, free_port, launch, stop_process

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux): no terminal to run "
                                                     "the live view in")
pytestmark = pytest.mark.slow

TENSOR_SCENARIO = """\
# one H200 on dense bf16 matrix products: it would draw past its limit, so the SW power cap holds it there
seed = 3
name = "power-capped"

[[gpu]]
model = "H200"
count = 1
workload = "tensor"
"""
# the shipped counters file plus the clock-event reasons and the power limit, which the view names and shows
EXTRA_COUNTERS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Clock event reasons (bit mask).\n"
                  "DCGM_FI_DEV_POWER_MGMT_LIMIT, gauge, Power management limit (in W).\n")
USER, PASSWORD = "viewer", "s3cret-top"


class Collector:
    def __init__(self, proc: subprocess.Popen, log: Path, url: str) -> None:
        self.proc, self.log, self.url = proc, log, url


@contextmanager
def collector(folder: Path, *args: str, scheme: str = "http") -> Iterator[Collector]:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, *args, "-a", "127.0.0.1:0", cwd=folder, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r"serving https?://127\.0\.0\.1:(\d+)/metrics", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield Collector(proc, log, f"{scheme}://127.0.0.1:{found[1]}")
    finally:
        stop_process(proc)


def shipped_counters_with_extras(folder: Path) -> Path:
    from dcgm_collector.catalog.counters import default_counters_path

    path = folder / "counters.csv"
    path.write_text(Path(default_counters_path()).read_text() + EXTRA_COUNTERS)
    return path


@pytest.fixture(scope="module")
def spikes(tmp_path_factory) -> Iterator[Collector]:
    with collector(tmp_path_factory.mktemp("spikes"), "--sim", "spikes", "-c", "100", "--watch-interval", "100") as c:
        yield c


def write_pki(folder: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key): a CA and a server certificate for 127.0.0.1."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("top test CA")).issuer_name(name("top test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder().subject_name(name("collector")).issuer_name(ca.subject)
              .public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                             critical=False)
              .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.crt", folder / "server.crt", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


@pytest.fixture(scope="module")
def capped(tmp_path_factory) -> Iterator[tuple[Collector, Path, Path]]:
    """The power-capped GPU behind TLS and basic auth: (collector, CA file, password file)."""
    folder = tmp_path_factory.mktemp("capped")
    ca, cert, key = write_pki(folder)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web = folder / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
                   f"basic_auth_users:\n  {USER}: {hashed}\n")
    scenario = folder / "power-capped.toml"
    scenario.write_text(TENSOR_SCENARIO)
    password = folder / "password"
    password.write_text(PASSWORD + "\n")
    with collector(folder, "--sim", str(scenario), "-f", str(shipped_counters_with_extras(folder)),
                   "--web-config-file", str(web), scheme="https") as c:
        yield c, ca, password


def top(cwd: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(command(COLLECTOR, "top", *args), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


_SERVERS = itertools.count()


class Terminal:
    """A tmux server of its own with one 160 x 50 session running a command."""

    def __init__(self, folder: Path, argv: list[str]) -> None:
        # a server of its own each time: a server told to exit may still hold its socket for a moment
        self.socket = str(folder / f"tmux-{next(_SERVERS)}.sock")
        self.tmux(["new-session", "-d", "-s", "top", "-x", "160", "-y", "50", "-c", str(folder),
                   shlex.join(argv)])

    def tmux(self, args: list[str], check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([TMUX, "-S", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=check, timeout=10)

    def screen(self) -> str:
        return self.tmux(["capture-pane", "-p", "-t", "top"]).stdout

    def keys(self, *keys: str) -> None:
        self.tmux(["send-keys", "-t", "top", *keys])

    def running(self) -> bool:
        return self.tmux(["has-session", "-t", "top"], check=False).returncode == 0

    def wait(self, what: str, check: Callable[[str], object], timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen() if self.running() else ""
            if check(text):
                return text
            if time.monotonic() > deadline:
                pytest.fail(f"the screen never showed {what}:\n{text}")
            time.sleep(0.2)

    def close(self) -> None:
        self.tmux(["kill-server"], check=False)


@contextmanager
def terminal(folder: Path, *args: str) -> Iterator[Terminal]:
    term = Terminal(folder, command(COLLECTOR, "top", *args))
    try:
        yield term
    finally:
        term.close()


SPARK = re.compile(r"^ {10}util +1m \|(.*)\|$", re.MULTILINE)


def spike_among_lows(text: str) -> bool:
    """Every GPU's sparkline has a full block and low blocks (the floor between the bursts)."""
    lines = SPARK.findall(text)
    return len(lines) == 4 and all("█" in line and ("▁" in line or "▂" in line) for line in lines)


@needs_tmux
def test_the_live_view_shows_the_spikes_and_answers_its_keys(spikes, tmp_path):
    with terminal(tmp_path, spikes.url) as term:
        screen = term.wait("a spike in every GPU's sparkline", spike_among_lows)
        assert screen.splitlines()[0].startswith(f"dcgm-collector top  {spikes.url}  ")
        assert re.search(r"^ GPU 3 +NVIDIA H100 80GB HBM3 +util +\d+%", screen, re.MULTILINE), screen
        status = screen.rstrip("\n").splitlines()[-1]
        assert status.startswith(f"{spikes.url}  refresh 10 Hz  ok  | q quit"), status

        term.keys("2")     # GPU 2's detail view: its UUID and a chart per reading
        screen = term.wait("GPU 2's detail view", lambda s: re.search(r"^ {2}util % .*\|", s, re.MULTILINE))
        assert re.search(r"^>GPU 2 ", screen, re.MULTILINE) and "GPU-" in screen, screen
        assert "power W" in screen and "sm MHz" in screen
        term.keys("Escape")
        term.wait("the overview again", spike_among_lows)

        term.keys("s")
        term.wait("the sort by utilisation", lambda s: " sort util " in s)
        term.keys("+")
        term.wait("the 5 minute span", lambda s: " span 5m " in s and "util   5m |" in s)
        term.keys("h")
        term.wait("the help", lambda s: s.startswith("dcgm-collector top: keys"))
        term.keys("x")
        term.wait("the help closed", lambda s: " sort util " in s)

        term.keys("q")
        deadline = time.monotonic() + 10
        while term.running():
            assert time.monotonic() < deadline, "q did not quit:\n" + term.screen()
            time.sleep(0.1)


def test_once_prints_a_plain_snapshot(spikes, tmp_path):
    for args in (("--once",), ()):           # a stdout that is no terminal gets the snapshot without --once
        result = top(tmp_path, spikes.url, *args)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"dcgm-collector top  {spikes.url}  ") and " 4 GPUs " in lines[0]
        assert sum(line.startswith(" GPU ") for line in lines) == 4
        assert len(SPARK.findall(result.stdout)) == 4
        assert "\x1b" not in result.stdout and result.stderr == ""


def test_a_collector_that_is_down_is_one_line_and_exit_1(tmp_path):
    port = free_port()
    result = top(tmp_path, f"http://127.0.0.1:{port}", "--once")
    assert result.returncode == 1
    assert result.stderr == (f"dcgm-collector top: error: http://127.0.0.1:{port}: connection refused "
                             f"(is the collector running?)\n")
    assert result.stdout == ""


def test_tls_and_basic_auth_and_the_power_cap_in_words(capped, tmp_path):
    c, ca, password = capped
    result = top(tmp_path, c.url, "--once", "--ca-file", str(ca), "--user", USER, "--password-file", str(password))
    assert result.returncode == 0, result.stderr
    assert re.search(r"^ GPU 0 +NVIDIA H200 .* power +\d+/700 W$", result.stdout, re.MULTILINE), result.stdout
    assert "throttle: power cap  " in result.stdout

    unauthenticated = top(tmp_path, c.url, "--once", "--ca-file", str(ca))
    assert (unauthenticated.returncode, unauthenticated.stderr) == (
        1, f"dcgm-collector top: error: {c.url}: 401 Unauthorized (give --user and --password)\n")
    unverified = top(tmp_path, c.url, "--once", "--user", USER, "--password", PASSWORD)
    assert (unverified.returncode, unverified.stderr) == (
        1, f"dcgm-collector top: error: {c.url}: TLS: certificate not verified: unable to get local issuer "
           f"certificate (give --ca-file, or --insecure to skip it)\n")
    insecure = top(tmp_path, c.url, "--once", "--insecure", "--user", USER, "--password", PASSWORD)
    assert insecure.returncode == 0 and "throttle: power cap" in insecure.stdout, insecure.stderr


@needs_tmux
def test_the_live_view_over_tls_and_its_401_in_the_status_line(capped, tmp_path):
    c, ca, password = capped
    with terminal(tmp_path, c.url, "--ca-file", str(ca), "--user", USER, "--password-file", str(password)) as term:
        screen = term.wait("the capped GPU", lambda s: "throttle: power cap" in s)
        assert screen.rstrip("\n").splitlines()[-1].startswith(f"{c.url}  refresh every 1.0 s  ok  |")
    with terminal(tmp_path, c.url, "--ca-file", str(ca), "--user", USER, "--password", "wrong") as term:
        screen = term.wait("the 401", lambda s: "401" in s)
        assert screen.rstrip("\n").splitlines()[-1].startswith(
            f"{c.url}  refresh every 1.0 s  error: {c.url}: 401 Unauthorized (wrong --user or --password)")
        assert "no GPU samples yet" in screen


def test_without_blessed_the_live_view_says_how_to_install_it(spikes, tmp_path):
    """On a terminal, with blessed hidden from the interpreter: one line naming the extra; --once still works."""
    import os
    import pty
    import sys

    hide = ("import sys; sys.modules['blessed'] = None; from dcgm_collector import cli; "
            "sys.exit(cli.main(sys.argv[1:]))")
    controller, terminal_side = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-c", hide, "top", spikes.url], cwd=tmp_path, stdout=terminal_side,
                              stderr=subprocess.PIPE, text=True, timeout=30)
    finally:
        os.close(terminal_side)
        os.close(controller)
    assert proc.returncode == 1
    assert proc.stderr == ("dcgm-collector top: error: the live view needs blessed: pip install "
                           "'dcgm-collector[top]' (or --once for a plain snapshot)\n")
    once = subprocess.run([sys.executable, "-c", hide, "top", spikes.url, "--once"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert once.returncode == 0 and " 4 GPUs " in once.stdout.splitlines()[0], once.stderr
