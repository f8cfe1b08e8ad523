"""``dcgm-collector report`` on recordings the real collector wrote of shipped scenarios, and the same report
served by the running collector at /reports, linked from its landing page."""

from __future__ import annotations

import re
import signal
import urllib.error
import urllib.request
from functools import partial
from html import unescape
from html.parser import HTMLParser
from urllib.parse import quote

import pytest
from support import wait_for
from test_cli import collector as cli_collector
from test_cli import metrics_after_ticks, run_cli

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.slow

collector = partial(cli_collector, start_timeout=30, clean_exit=True)


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


def test_the_report_of_an_xid_burst_explains_the_xid_and_draws_the_charts(tmp_path):
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "xid-burst", "-a", "127.0.0.1:0", "--recorder-dir", str(out),
                   "--recorder-before", "5", "--recorder-after", "2") as c:
        [path] = wait_for(lambda: sorted(out.glob("recording-*.parquet"))[:1], timeout=40,
                          what="a recording", log=c.log, poll_s=0.2)
    html = tmp_path / "report.html"
    result = run_cli(tmp_path, "report", str(path), "-o", str(html))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "xid at " in text and ", GPUs 0: XID 13" in text
    assert "GPU 0: NVIDIA A100-SXM4-80GB (GPU-" in text
    assert re.search(r"GPU 0 XID 13 x5 from \+0\.0 to \+0\.4 s: graphics engine exception: .*Action: ", text)

    page = html.read_text()
    assert not re.search(r"https?://", page)
    parser = Tags()
    parser.feed(page)
    parser.close()
    assert parser.tags.count("svg") >= 5 and "script" not in parser.tags and "link" not in parser.tags
    assert "graphics engine exception" in page

    only_text = run_cli(tmp_path, "report", str(path), "--text")
    assert only_text.returncode == 0 and only_text.stdout == text


def test_a_file_that_is_not_a_recording_is_one_line(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet\n")
    result = run_cli(tmp_path, "report", str(bad))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"dcgm-collector report: error: {bad}: not a flight recording")
    assert len(result.stderr.splitlines()) == 1


class PageText(HTMLParser):
    """A page's links and its text as a reader sees it (tags dropped, entities read, white space collapsed)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.links: list[str] = []
        self._text: list[str] = []
        self.feed(page)
        self.close()
        self.text = " ".join(unescape(" ".join(self._text)).split())

    def handle_starttag(self, tag, attrs) -> None:
        self.links.extend(value for name, value in attrs if name == "href" and value)

    def handle_data(self, data) -> None:
        self._text.append(data)


def fetch(url: str) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def summary_lines(text: str, section: str) -> list[str]:
    """The indented lines under one heading of ``report --text`` (a finding without its "1. ")."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(section))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        block.append(re.sub(r"^\s+\d+\. ", "", line).strip())
    return block


def test_the_landing_page_links_each_recording_to_the_report_the_command_writes(tmp_path):
    """thermal-runaway: GPU 1 heats up from the start; 20 s in, SIGUSR2 records the window, whose findings the
    collector's /reports page and ``dcgm-collector report`` give alike."""
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "thermal-runaway", "-a", "127.0.0.1:0", "--recorder-dir", str(out),
                   "--recorder-before", "20", "--recorder-after", "1") as c:
        metrics_after_ticks(c, 20, timeout=60)
        c.proc.send_signal(signal.SIGUSR2)
        [path] = wait_for(lambda: sorted(out.glob("recording-*.parquet"))[:1], timeout=40,
                          what="a recording", log=c.log, poll_s=0.2)
        landing = wait_for(lambda: next((p for p in [c.get("/")[1]] if path.name in p), None), timeout=10,
                           what="the recording on the landing page", log=c.log)
        base = c.url("/")
        links = PageText(landing).links
        assert f"recordings?name={quote(path.name)}" in links
        assert f"reports?name={quote(path.name)}" in links
        status, page, headers = fetch(base + f"reports?name={quote(path.name)}")
        assert status == 200, page
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert "script-src" not in headers["Content-Security-Policy"]   # the page has none, and may run none
        assert fetch(base + f"reports?name={quote(path.name)}")[1] == page   # asked again: the same page

        # a name that is not a plain recording file of the folder is never opened; a parameter it does not take
        (out / "recording-dir.parquet").mkdir()
        (out / "recording-link.parquet").symlink_to(path)
        for name in ("../" + path.name, "recording-x.parquet", "health", path.name + "%00", "recording-dir.parquet",
                     "recording-link.parquet", ""):
            status, body, _ = fetch(base + f"reports?name={name}")
            assert (status, body) == (404, f"404 Not Found: no recording {name!r} in the recorder's "
                                           "folder\n".replace("%00", "\\x00").encode()), name
        for route in ("reports", "recordings"):
            status, body, _ = fetch(base + f"{route}?name={quote(path.name)}&gpu=0")
            assert (status, body) == (400, f"400 Bad Request: /{route} takes only name=, not 'gpu'\n".encode())

        # a file named like a recording that is not one: a one-line 500, counted on /metrics and noted on /health
        bad = out / "recording-20000101T000000.000000Z-bad.parquet"
        bad.write_bytes(b"not parquet\n")
        status, body, _ = fetch(base + f"reports?name={bad.name}")
        why = f"{bad.name}: not a flight recording: not a Parquet file"
        assert status == 500 and body.startswith(f"500 Internal Server Error: no report: {why}".encode())
        assert body.count(b"\n") == 1 and str(out).encode() not in body
        health_status, health = c.get("/health")
        assert health_status == 200 and f"; reports: building a report failed: {why}" in health
        assert health.splitlines()[0].endswith("(1 failure)")
        assert "dcgm_collector_report_failures_total 1\n" in c.metrics()

    written = tmp_path / "report.html"
    result = run_cli(tmp_path, "report", str(path), "-o", str(written))
    assert result.returncode == 0, result.stderr
    assert page == written.read_bytes()   # the page the command writes, byte for byte
    text = PageText(page.decode()).text
    triggers, findings = summary_lines(result.stdout, "Triggers:"), summary_lines(result.stdout, "Findings")
    assert triggers and triggers[0].startswith("signal at ") and "SIGUSR2" in triggers[0]
    assert any(f.startswith("GPU 1: memory temperature climbing") for f in findings), result.stdout
    for line in triggers + findings:
        assert line in text


def test_the_report_names_the_processes_that_ran_on_each_gpu(tmp_path):
    """processes (with --processes): GPU 0 runs a trainer and a leaking data loader; a recording's sidecar lists
    each GPU's processes of the window, and the report's GPU lines name them."""
    out = tmp_path / "recordings"
    with collector(tmp_path, "--sim", "processes", "--processes", "-a", "127.0.0.1:0", "--recorder-dir", str(out),
                   "--recorder-before", "10", "--recorder-after", "1") as c:
        metrics_after_ticks(c, 5, timeout=60)
        c.proc.send_signal(signal.SIGUSR2)
        [path] = wait_for(lambda: sorted(out.glob("recording-*.parquet"))[:1], timeout=40,
                          what="a recording", log=c.log, poll_s=0.2)
    result = run_cli(tmp_path, "report", str(path), "--text")
    assert result.returncode == 0, result.stderr
    [gpu0] = [line for line in summary_lines(result.stdout, "GPUs:") if line.startswith("GPU 0:")]
    assert "; processes: 4300001 (no name), 4300002 (no name)" in gpu0, gpu0   # NVML gives no names
