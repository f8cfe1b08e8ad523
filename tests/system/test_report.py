"""``dcgm-collector report`` on a recording the real collector wrote of the shipped xid-burst scenario."""

from __future__ import annotations

import re
from functools import partial
from html.parser import HTMLParser

import pytest
from support import wait_for
from test_cli import collector as cli_collector
from test_cli import run_cli

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
