"""The flight recorder, end to end: the real collector on the simulated engine writes Parquet files a user opens.

Each test runs ``python -m dcgm_collector --sim ... --recorder-dir DIR`` with
short windows (--recorder-before/--recorder-after are the user's to set) and
reads what lands in DIR with pyarrow (and pandas when it is installed), as
a user would after an incident.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path

import pytest
from support import (
    COLLECTOR,
    command,
    last_line,
    lost_gpu_scenario,
    samples,
    stop_process,
    wait_for,
)
from test_cli import Running, clean_env
from test_cli import collector as cli_collector

from dcgm_collector import __version__
from dcgm_collector.model import RECORDING_COLUMNS, RECORDING_FORMAT_VERSION

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.slow

SHORT = ("--recorder-before", "5", "--recorder-after", "2")
# bcrypt of "secret" at a cheap cost, so start-up stays quick
WEB_CONFIG = "basic_auth_users:\n  prom: $2b$04$3CVng5Jo8ynM1x1CBGG8WOt3h3ypFaT1lOcmLtXfdqnUrbJFSbkEi\n"
SERVED_PRECISION = 5e-7    # /metrics writes a non-integer value with 6 decimals


# the CLI tests' collector process, given longer to start (a recorder checks pyarrow first) and required to exit 0
collector = partial(cli_collector, start_timeout=30, clean_exit=True)


def recordings(directory: Path) -> list[Path]:
    return sorted(directory.glob("recording-*.parquet"))


def wait_recordings(c: Running, directory: Path, n: int, timeout: float = 40.0) -> list[Path]:
    return wait_for(lambda: len(recordings(directory)) >= n and recordings(directory), timeout=timeout,
                    what=f"{n} recording(s) in {directory}", log=c.log, poll_s=0.2)


def sidecar(path: Path) -> dict:
    return json.loads(Path(f"{path}.json").read_text())


def iso_s(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def post(url: str, body: bytes, user: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    if user is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def metric_value(text: str, name: str) -> float:
    return next(value for n, _, value in samples(text) if n == name)


def test_an_xid_storm_writes_one_recording_of_the_window_around_it(tmp_path):
    """xid-burst: five XID 13 on GPU 0, 100 ms apart at 10 s -> one file of GPU 0 with the samples /metrics served."""
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "xid-burst", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT) as c:
        # the scrapes made while the recording is pending: each must be one of its rows
        scrapes: list[tuple[float, str]] = []
        wait_for(lambda: re.search(r"flight recorder: XID 13", c.log()), timeout=30, what="the XID trigger",
                 log=c.log)
        while not recordings(out):
            text = c.get()[1]
            # stamped once the answer is in: a scrape stamped before the window's end was served before it
            scrapes.append((time.time(), text))
            assert c.proc.poll() is None, c.log()
            time.sleep(0.2)
        [path] = wait_recordings(c, out, 1)
        side = sidecar(path)
        table = pq.read_table(path)
        _, after = c.get()
        _, landing = c.get("/")

    # the sidecar names the trigger, the GPU and what produced the file
    assert side["format_version"] == RECORDING_FORMAT_VERSION
    assert side["trigger"]["kind"] == "xid" and side["trigger"]["detail"] == "XID 13"
    assert side["trigger"]["gpus"] == [0]
    assert [t["detail"] for t in side["triggers"]] == ["XID 13"] * 5   # the storm joined one recording
    assert [g["gpu"] for g in side["gpus"]] == [0]
    assert side["gpus"][0]["model"] == "NVIDIA A100-SXM4-80GB" and side["gpus"][0]["uuid"].startswith("GPU-")
    assert side["counters"].endswith("default-counters.csv")
    assert side["collector_version"] == __version__
    assert side["rows"] == table.num_rows
    since, until, fired = iso_s(side["since"]), iso_s(side["until"]), iso_s(side["trigger"]["time"])
    assert since == pytest.approx(fired - 5) and until == pytest.approx(iso_s(side["triggers"][-1]["time"]) + 2)

    # the columns shared with the replay, one row per sample, all of GPU 0
    assert [(f.name, str(f.type)) for f in table.schema] == list(RECORDING_COLUMNS)
    rows = table.to_pylist()
    assert {r["gpu"] for r in rows} == {0} and {r["entity_group"] for r in rows} == {"GPU"}
    assert all(since <= r["time"].timestamp() <= until for r in rows)
    xids = [r for r in rows if r["field_id"] == 230]
    assert [(r["metric"], r["value"], r["status"]) for r in xids] == [("DCGM_FI_DEV_XID_ERRORS", 13.0, "OK")] * 5
    assert [r["time"].timestamp() for r in xids] == pytest.approx([iso_s(t["time"]) for t in side["triggers"]])

    # one sample per series per sample time: the series sampled together (one DCGM watch, one ring) share their
    # times, so each such group holds rows x series samples
    sampled = [r for r in rows if r["field_id"] != 230]
    series = {(r["metric"], r["entity_id"]) for r in sampled}
    times_of = {key: sorted(r["time"] for r in sampled if (r["metric"], r["entity_id"]) == key) for key in series}
    groups: dict = {}
    for key, times in times_of.items():
        groups.setdefault(tuple(times), []).append(key)
    assert sum(len(times) * len(keys) for times, keys in groups.items()) == len(sampled)
    assert all(len(set(times)) == len(times) for times in groups)
    assert max(len(times) for times in groups) >= 6

    # each scrape made during the window served, for each group, the values of one of the group's rows
    value_at = {(r["metric"], r["entity_id"], r["time"]): r["value"] for r in sampled}
    checked = 0
    for scraped_at, text in scrapes:
        if scraped_at > until:
            continue
        served = {name: value for name, labels, value in samples(text) if labels.get("gpu") == "0"}
        for times, keys in groups.items():
            wanted = {name: served[name] for name, _ in keys}
            assert any(all(value_at.get((name, 0, t)) is not None and abs(value_at[(name, 0, t)] - value)
                           <= SERVED_PRECISION for name, value in wanted.items()) for t in times), \
                f"no recorded row holds the values a scrape served at {scraped_at}: {wanted}"
        checked += 1
    assert checked > 0

    pandas = _optional("pandas")
    if pandas is not None:
        frame = pandas.read_parquet(path)
        assert len(frame) == table.num_rows and list(frame.columns) == [name for name, _ in RECORDING_COLUMNS]

    # the collector says what it wrote: its own metrics and the landing page
    assert metric_value(after, "dcgm_collector_recordings_written_total") >= 1
    assert metric_value(after, "dcgm_collector_recorder_failures_total") == 0
    assert metric_value(after, "dcgm_collector_recorder_bytes") >= path.stat().st_size
    assert path.name in landing and "XID 13" in landing


def _optional(module: str):
    try:
        return __import__(module)
    except ImportError:
        return None


def test_sigusr2_records_every_gpu_and_openmetrics_stays_valid(tmp_path):
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT) as c:
        wait_for(lambda: metric_value(c.get()[1], "dcgm_collector_ticks_total") >= 3, timeout=20, what="3 ticks")
        c.proc.send_signal(signal.SIGUSR2)
        wait_for(lambda: metric_value(c.get()[1], "dcgm_collector_recorder_pending") == 1, timeout=10,
                 what="a pending recording", log=c.log)
        [path] = wait_recordings(c, out, 1)
        request = urllib.request.Request(c.url("/metrics"), headers={
            "Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            openmetrics = answer.read().decode()
        log = c.log()
        landing = c.get("/")[1]
    assert re.search(r"recordings?, \d+\.\d MiB of 1 GiB", landing), landing   # the landing page's bound too
    # its bound on disk as people write it
    assert (f'msg="flight recorder: {out}, 5 s before and 2 s after each XID, lost GPU, failed health check, SIGUSR2 '
            'or POST /recorder; at most 1 GiB on disk"') in log, log
    side = sidecar(path)
    assert side["trigger"]["kind"] == "signal" and side["trigger"]["detail"] == "SIGUSR2"
    assert side["trigger"]["gpus"] == [0, 1] and [g["gpu"] for g in side["gpus"]] == [0, 1]
    table = pq.read_table(path)
    assert set(table.column("gpu").to_pylist()) == {0, 1} and table.num_rows == side["rows"] > 0
    # the recorder's families sit inside the OpenMetrics body, before its # EOF
    assert openmetrics.endswith("# EOF\n") and openmetrics.count("# EOF") == 1
    assert "# TYPE dcgm_collector_recordings_written counter\ndcgm_collector_recordings_written_total 1\n" \
        in openmetrics


def test_a_lost_gpu_and_its_failed_health_check_record_that_gpu(tmp_path):
    """GPU 1 of 3: a double-bit ECC error (XID 48, health FAIL), then it falls off the bus: one recording of GPU 1."""
    scenario = tmp_path / "lost.toml"
    scenario.write_text(lost_gpu_scenario(9.0) + "\n[[event]]\nat = 3.0\ngpu = 1\nkind = \"xid\"\nxid = 48\n")
    counters = tmp_path / "counters.csv"
    counters.write_text(Path(default_counters()).read_text()
                        + "DCGM_EXP_GPU_HEALTH_STATUS, gauge, DCGM reported health status\n")
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", str(scenario), "-f", str(counters), "-a", "127.0.0.1:0",
                   "--recorder-dir", str(out), "--recorder-before", "3", "--recorder-after", "8") as c:
        [path] = wait_recordings(c, out, 1)
        side = sidecar(path)
        table = pq.read_table(path)
    kinds = {t["kind"]: t["detail"] for t in side["triggers"]}
    assert side["trigger"]["gpus"] == [1] and [g["gpu"] for g in side["gpus"]] == [1]
    assert [t["detail"] for t in side["triggers"] if t["kind"] == "xid"] == ["XID 48", "XID 79"]
    assert kinds.get("lost") == "GPU 1 lost"
    assert kinds.get("health", "").startswith("health FAIL on GPU 1: "), side["triggers"]
    assert set(table.column("gpu").to_pylist()) == {1}
    # after the loss the GPU's fields come back blank: recorded as such, without a value
    statuses = set(zip(table.column("status").to_pylist(), [v is None for v in table.column("value").to_pylist()]))
    assert ("OK", False) in statuses and ("BLANK", True) in statuses


def default_counters() -> str:
    from dcgm_collector.catalog.counters import default_counters_path

    return default_counters_path()


def test_sigusr2_without_the_recorder_is_one_line_and_no_exit(tmp_path):
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0") as c:
        c.proc.send_signal(signal.SIGUSR2)
        wait_for(lambda: "SIGUSR2: the flight recorder is off (turn it on with --recorder-dir)" in c.log(),
                 timeout=10, what="the SIGUSR2 line", log=c.log)
        status, _ = c.get()
        assert status == 200 and c.proc.poll() is None
        with open(f"/proc/{c.proc.pid}/maps") as maps:   # pyarrow is loaded only with --recorder-dir
            assert "arrow" not in maps.read()
        status, _ = post(c.url("/recorder"), b"")
    assert status == 405   # no such route: the recorder is off


def test_a_recording_pending_at_the_stop_is_written_with_the_samples_so_far(tmp_path):
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out)) as c:
        wait_for(lambda: metric_value(c.get()[1], "dcgm_collector_ticks_total") >= 3, timeout=20, what="3 ticks")
        c.proc.send_signal(signal.SIGUSR2)
        wait_for(lambda: metric_value(c.get()[1], "dcgm_collector_recorder_pending") == 1, timeout=10,
                 what="a pending recording", log=c.log)
        assert stop_process(c.proc) == 0
    [path] = recordings(out)
    side = sidecar(path)
    assert iso_s(side["until"]) < iso_s(side["trigger"]["time"]) + 60   # cut at the stop
    assert pq.read_table(path).num_rows == side["rows"] > 0
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_post_recorder_needs_basic_auth_users(tmp_path):
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT) as c:
        status, body = post(c.url("/recorder"), b"")
    assert status == 403
    assert body.decode().strip() == "POST /recorder needs basic_auth_users in --web-config-file"
    assert recordings(out) == []


def test_post_recorder_with_credentials_records_the_gpus_asked_for(tmp_path):
    out = tmp_path / "recordings"
    web = tmp_path / "web.yml"
    web.write_text(WEB_CONFIG)
    with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT,
                   "--web-config-file", str(web)) as c:
        refused, _ = post(c.url("/recorder"), b'{"gpus": [1]}')
        wrong, _ = post(c.url("/recorder"), b'{"gpus": [1]}', user="prom:wrong")
        bad, bad_body = post(c.url("/recorder"), b'{"gpus": "all"}', user="prom:secret")
        absent, absent_body = post(c.url("/recorder"), b'{"gpus": [1, 7]}', user="prom:secret")
        time.sleep(2)   # samples before the trigger
        status, body = post(c.url("/recorder"), b'{"reason": "job 42 slowed down", "gpus": [1]}', user="prom:secret")
        assert status == 202, body
        answer = json.loads(body)
        [path] = wait_recordings(c, out, 1)
    assert (refused, wrong) == (401, 401)
    assert bad == 400 and b'"gpus" must be a list of GPU ids' in bad_body
    assert (absent, absent_body) == (400, b"POST /recorder: no GPU 7 here (GPUs 0-1)\n")
    assert answer["file"] == path.name
    side = sidecar(path)
    assert side["trigger"]["kind"] == "request" and side["trigger"]["gpus"] == [1]
    assert side["trigger"]["detail"].endswith(": job 42 slowed down")
    assert set(pq.read_table(path).column("gpu").to_pylist()) == {1}


def test_the_oldest_recordings_go_first_past_max_bytes(tmp_path):
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "--recorder-dir", str(out), "--recorder-before", "2",
                   "--recorder-after", "1", "--recorder-max-bytes", "1") as c:
        written = []
        for n in range(1, 4):
            c.proc.send_signal(signal.SIGUSR2)
            wait_for(lambda n=n: metric_value(c.get()[1], "dcgm_collector_recordings_written_total") >= n,
                     timeout=20, what=f"recording {n}", log=c.log)
            written.extend(p.name for p in recordings(out) if p.name not in written)
        left = recordings(out)
        _, text = c.get()
    # each new recording pushes the older ones out (the newest stays even alone over the bound), sidecars too
    assert len(written) == 3 and [p.name for p in left] == [written[-1]]
    assert sorted(p.name for p in out.iterdir()) == [written[-1], f"{written[-1]}.json"]
    assert metric_value(text, "dcgm_collector_recorder_bytes") == sum(p.stat().st_size for p in out.iterdir())


@contextmanager
def tiny_filesystem(path: Path, size: str = "256k"):
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(directory: Path) -> Path:
    """Fill the filesystem of ``directory`` up to its last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for block in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * block)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_costs_one_error_line_and_no_partial_file(tmp_path):
    with tiny_filesystem(tmp_path / "small") as out:
        with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT) as c:
            filler = _fill(out)
            c.proc.send_signal(signal.SIGUSR2)
            wait_for(lambda: metric_value(c.get()[1], "dcgm_collector_recorder_failures_total") == 1, timeout=20,
                     what="the failed recording", log=c.log)
            left = sorted(p.name for p in out.iterdir())
            errors = [line for line in c.log().splitlines() if "level=ERROR" in line]
            status, _ = c.get()
            failing = c.get("/health")
            # room again: the next trigger is written
            filler.unlink()
            c.proc.send_signal(signal.SIGUSR2)
            [path] = wait_recordings(c, out, 1)
            rows, side = pq.read_table(path).num_rows, sidecar(path)
            healed = c.get("/health")
    assert left == ["filler"]   # nothing half written
    # /health stays 200 (the GPUs are fine) but says which output fails, until a recording is written again
    assert failing == (200, "OK; flight recorder: writing failed: No space left on device (1 failure)\n"
                            "source: sim, chosen by --sim 2")
    assert healed == (200, "OK\nsource: sim, chosen by --sim 2")
    assert len(errors) == 1 and "flight recorder: cannot write recording-" in errors[0] \
        and "No space left on device" in errors[0], errors
    assert status == 200
    assert rows == side["rows"] > 0


def test_a_recorder_dir_that_cannot_be_written_stops_start_up(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    run = subprocess.run(command(COLLECTOR, "--sim", "1", "-a", "127.0.0.1:0", "--recorder-dir", str(blocker / "sub")),
                         cwd=tmp_path, capture_output=True, text=True, env=clean_env(), timeout=30)
    assert run.returncode == 1
    assert last_line(run.stderr).startswith(
        f"dcgm-collector: error: --recorder-dir {blocker / 'sub'}: cannot create it")


def test_a_window_longer_than_the_retention_is_refused(tmp_path):
    run = subprocess.run(command(COLLECTOR, "--sim", "1", "--recorder-dir", str(tmp_path), "--retention", "60",
                                 "--recorder-before", "300"), cwd=tmp_path, capture_output=True, text=True,
                         env=clean_env(), timeout=30)
    assert run.returncode == 2
    assert last_line(run.stderr) == ("dcgm-collector: error: --recorder-before 300 s + --recorder-after 60 s is longer "
                                     "than --retention 60 s: the rings would not hold a recording's window")


def test_without_pyarrow_the_recorder_names_the_extra_to_install(tmp_path):
    hidden = tmp_path / "no-pyarrow"
    (hidden / "pyarrow").mkdir(parents=True)
    # a stand-in that fails to import, first on the path, as on a machine without the package
    (hidden / "pyarrow" / "__init__.py").write_text("raise ImportError(\"No module named 'pyarrow'\")\n")
    run = subprocess.run(command(COLLECTOR, "--sim", "1", "-a", "127.0.0.1:0", "--recorder-dir", str(tmp_path / "r")),
                         cwd=tmp_path, capture_output=True, text=True, timeout=30,
                         env=clean_env(PYTHONPATH=str(hidden)))
    assert run.returncode == 1
    assert last_line(run.stderr) == ("dcgm-collector: error: --recorder-dir needs pyarrow (No module named "
                                     "'pyarrow'): pip install pyarrow (in a checkout: pip install '.[recorder]')")


def test_without_pyarrow_a_replay_names_the_package_to_install(tmp_path):
    hidden = tmp_path / "no-pyarrow"
    (hidden / "pyarrow").mkdir(parents=True)
    (hidden / "pyarrow" / "__init__.py").write_text("raise ImportError(\"No module named 'pyarrow'\")\n")
    recording = tmp_path / "recording.parquet"
    recording.write_bytes(b"PAR1")
    run = subprocess.run(command(COLLECTOR, "--sim", str(recording), "-a", "127.0.0.1:0"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=30, env=clean_env(PYTHONPATH=str(hidden)))
    assert run.returncode == 1
    assert last_line(run.stderr) == (f"dcgm-collector: error: --sim {recording}: replaying a flight recording needs "
                                     "pyarrow: pip install pyarrow (in a checkout: pip install '.[recorder]')")


# -- what others place in --recorder-dir, and what clients send


def get_as(url: str, user: str = "prom:secret", timeout: float = 5.0) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={
        "Authorization": "Basic " + base64.b64encode(user.encode()).decode()})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@contextmanager
def immutable(path: Path):
    """``path`` made undeletable even by root (chattr +i), as a file the collector may not remove."""
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a file immutable here: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


OLD = "recording-20200101T000000.000000Z-xid.parquet"


def test_entries_it_cannot_remove_cost_a_failure_each_and_the_recorder_goes_on(tmp_path):
    """A directory and an immutable file named like old recordings: new recordings still appear, /health says why."""
    out = tmp_path / "recordings"
    out.mkdir()
    (out / OLD).mkdir()                                   # named like a recording: skipped, never removed
    (out / OLD / "inside").write_text("kept")
    stuck = out / "recording-20200102T000000.000000Z-xid.parquet"
    stuck.write_bytes(b"x" * 1000)
    removable = out / "recording-20200103T000000.000000Z-xid.parquet"
    removable.write_bytes(b"x" * 1000)
    Path(f"{removable}.json").write_text("{}")
    web = tmp_path / "web.yml"
    web.write_text(WEB_CONFIG)
    with immutable(stuck), collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT,
                                     "--recorder-max-bytes", "1", "--web-config-file", str(web)) as c:
        files = []
        for n in (1, 2):
            status, body = post(c.url("/recorder"), b'{"reason": "look"}', user="prom:secret")
            assert status == 202, body
            files.append(json.loads(body)["file"])
            wait_for(lambda: (out / files[-1]).is_file() and Path(f"{out / files[-1]}.json").is_file(), timeout=30,
                     what=f"{files[-1]} on disk", log=c.log)
            wait_for(lambda n=n: metric_value(get_as(c.url("/metrics"))[1],
                                              "dcgm_collector_recordings_written_total") == n,
                     timeout=10, what=f"{n} written", log=c.log)
        metrics = get_as(c.url("/metrics"))[1]
        health = get_as(c.url("/health"))
        log = c.log()
    left = sorted(p.name for p in out.iterdir())
    # the second recording pushed the first out; the entries it may not remove are still there, nothing else
    assert left == sorted([OLD, stuck.name, files[1], f"{files[1]}.json"]), left
    assert metric_value(metrics, "dcgm_collector_recorder_failures_total") == 2   # the immutable file, each time
    assert health == (200, f"OK; flight recorder: removing an old recording failed: {stuck.name}: Operation not "
                           "permitted (1 failure)\nsource: sim, chosen by --sim 2")
    errors = [line for line in log.splitlines() if "level=ERROR" in line]
    assert len(errors) == 1 and f"{stuck.name}: Operation not permitted" in errors[0], errors   # said once
    assert "Traceback" not in log
    assert f"{OLD} (a directory)" in log


def test_the_landing_page_and_scrapes_never_read_the_recorder_dir(tmp_path):
    """A FIFO sidecar, sidecars linked to /dev/zero and out of the folder, 20,000 recordings: prompt answers."""
    out = tmp_path / "recordings"
    out.mkdir()
    for n in range(20_000):
        (out / f"recording-2020{n:010d}-xid.parquet").touch()
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"trigger": {"detail": "not from this folder"}}')
    bad = {"fifo": None, "zero": Path("/dev/zero"), "outside": outside}
    for n, (kind, target) in enumerate(bad.items()):
        recording = out / f"recording-2099010{n}T000000.000000Z-{kind}.parquet"
        recording.write_bytes(b"x" * 100)
        if target is None:
            os.mkfifo(f"{recording}.json")
        else:
            os.symlink(target, f"{recording}.json")
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT) as c:
        wait_for(lambda: "20003 recordings" in c.get("/")[1], timeout=20, what="the recorder's first scan",
                 log=c.log)
        slowest = 0.0
        for path in ("/", "/metrics", "/health") * 3:
            started = time.monotonic()
            status, body = c.get(path)   # 5 s timeout: a FIFO opened on the request path would hang it
            slowest = max(slowest, time.monotonic() - started)
            assert status == 200, (path, body)
        landing, metrics = c.get("/")[1], c.get("/metrics")[1]
        with open(f"/proc/{c.proc.pid}/status") as status_file:
            rss_mib = int(re.search(r"VmRSS:\s+(\d+)", status_file.read())[1]) / 1024
        log = c.log()
    assert slowest < 2.0   # generous: each answers in milliseconds; an open of the FIFO never answers
    assert rss_mib < 500   # reading the /dev/zero link took 2 GiB
    assert landing.count("<li>recording-") == 50 and "and 19953 older recordings not listed" in landing
    assert "recording-20990102T000000.000000Z-outside.parquet: 0.1 KiB, ?" in landing   # no trigger from outside
    assert "not from this folder" not in landing
    assert metric_value(metrics, "dcgm_collector_recorder_bytes") == 300
    for kind, problem in (("fifo", "not a regular file (a FIFO)"), ("zero", "a symbolic link out of"),
                          ("outside", "a symbolic link out of")):
        [line] = [line for line in log.splitlines() if f"-{kind}.parquet.json" in line]
        assert "level=WARN" in line and problem in line, line


def test_post_recorder_refuses_bodies_it_cannot_act_on_with_one_line(tmp_path):
    out = tmp_path / "recordings"
    web = tmp_path / "web.yml"
    web.write_text(WEB_CONFIG)
    with collector(tmp_path, "--sim", "2", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT,
                   "--web-config-file", str(web)) as c:
        answers = {body: post(c.url("/recorder"), body, user="prom:secret") for body in (
            b"[" * 2000, b"{" * 1000, b'{"gpus": []}', b'{"gpus": [0], "gpu": 1}', b'{"gpus": [123456789012345]}',
            b'{"reason": ' + b"9" * 4000 + b"}", b"\xff\xfe{", b'{"gpus": [0.5]}', b"null")}
        metrics = get_as(c.url("/metrics"))[1]
        log = c.log()
    lines = {body[:30]: (status, text.decode()) for body, (status, text) in answers.items()}
    assert all(status == 400 for status, _ in lines.values()), lines
    assert all(text.startswith("POST /recorder: ") and text.count("\n") == 1 for _, text in lines.values()), lines
    assert lines[b"[" * 30][1] == "POST /recorder: the body is not a request: JSON nested too deeply\n"
    assert lines[b'{"gpus": []}'][1] == ("POST /recorder: gpus: an empty list records nothing; leave it out to "
                                         "record every GPU\n")
    assert lines[b'{"gpus": [0], "gpu": 1}'][1] == 'POST /recorder: unknown key "gpu" (the keys are gpus, reason)\n'
    assert lines[b'{"gpus": [123456789012345]}'][1] == "POST /recorder: no GPU a number of 15 digits here (GPUs 0-1)\n"
    assert metric_value(metrics, "dcgm_collector_recorder_pending") == 0 and not out.exists() or recordings(out) == []
    assert "Traceback" not in log


def test_a_flood_of_requests_joins_one_recording_that_lists_a_hundred(tmp_path):
    out = tmp_path / "recordings"
    web = tmp_path / "web.yml"
    web.write_text(WEB_CONFIG)
    accepted = []
    with collector(tmp_path, "--sim", "1", "-a", "127.0.0.1:0", "--recorder-dir", str(out), *SHORT,
                   "--web-config-file", str(web)) as c:
        until = time.monotonic() + 3

        def flood():
            while time.monotonic() < until:
                status, body = post(c.url("/recorder"), b'{"reason": "' + b"x" * 190 + b'"}', user="prom:secret")
                if status == 202:
                    accepted.append(json.loads(body)["file"])

        threads = [threading.Thread(target=flood) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        [path] = wait_recordings(c, out, 1)
    side = sidecar(path)
    assert len(accepted) > 200 and set(accepted) == {path.name}   # every request joined the one recording
    assert len(side["triggers"]) == 100 and side["more_triggers"] == len(accepted) - 100
