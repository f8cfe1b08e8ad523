"""Every shell block of README.md and docs/*.md runs as written, from the checkout root after the quick start.

A shell block is a fenced block marked ``sh``, ``bash`` or ``console`` (in a console block the
commands are the lines that start with ``$ ``).  The blocks run with ``bash -e`` in one working
copy of the checkout (its tracked and unignored files, copied to a temporary folder), in whose root
the quick start's first block ran first, as written: it made ``.venv``, installed the package into
it and started the collector.  So ``.venv/bin/...``, ``counters/...`` and the files a block writes
mean what they mean to a reader who typed the quick start in the checkout root; the blocks of a
page run in the order the page gives them, and a page's later block may use what an earlier one
made.

An HTML comment on the line above a block says how the block runs, when it needs more than that:

``<!-- test: background, port 9400 -->``
``<!-- test: background 2, tcp 5555, port 9400 -->``
    the block's first command line (or first 2; a line ending in a backslash goes on on the
    next) keeps running, as a server does in a terminal of its own: it is started in a process
    group of its own, and the test waits until each listed port answers on 127.0.0.1 (``port N``:
    ``GET /health`` answers 200, the collector is sampling; ``port N as USER:PASSWORD``: the same
    with basic auth; ``tcp N``: it accepts a connection), then runs the rest of the block, which
    must exit 0, then sends SIGTERM to the group, which must be gone within 15 s.  A port that is
    taken before the block starts fails the test under CI (``CI=true``) and skips it elsewhere.
``<!-- test: skip: REASON -->``
    not run; only the blocks SKIPPED lists (whole) may say so.

The collector's listen address is pinned to loopback for every block (``DCGM_EXPORTER_LISTEN``,
which a block's own ``-a`` would override), so the default ``:9400`` of the docs listens on
127.0.0.1:9400 only.  docs/deploying.md is tested by tests/system/test_deploy_docs.py; every other
page is tested here, which test_every_page_is_tested_by_one_of_the_two holds true.  The Python
example of docs/binding.md runs too, with the venv's interpreter.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import copy_checkout

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_PAGE = "docs/deploying.md"          # tested with the deploy files it describes
DEPLOY_PAGE_TEST = "tests/system/test_deploy_docs.py"
SKIPPED = {
    # the test suite itself; tests/system/test_readme.py holds its commands equal to .ci/run's
    "python3 -m venv .venv && .venv/bin/pip install '.[test]'\n"
    ".venv/bin/pytest tests/unit && .venv/bin/pytest tests --ignore=tests/unit\n",
}
QUICK_START_WAIT_S = 1500.0   # the first block builds the package's C code before the collector answers
SERVER_WAIT_S = 120.0
COMMAND_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Block:
    page: str          # relative to the checkout root
    line: int          # of the opening fence
    kind: str          # sh, bash or console
    text: str          # the commands, as bash reads them
    annotation: str    # what follows "test:" in the comment above, or ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages_tested_here() -> list[str]:
    return ["README.md", *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")
                                 if f"docs/{page.name}" != DEPLOY_PAGE)]


def shell_blocks(page: str) -> list[Block]:
    lines = (ROOT / page).read_text().splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = re.fullmatch(r"```(sh|bash|console)\s*", lines[index])
        if not opening:
            index += 1
            continue
        end = lines.index("```", index + 1)
        body = lines[index + 1:end]
        if opening.group(1) == "console":
            body = [line[2:] for line in body if line.startswith("$ ")]
        above = next((line for line in reversed(lines[:index]) if line.strip()), "")
        note = re.fullmatch(r"<!-- test: (.*) -->", above.strip())
        blocks.append(Block(page, index + 1, opening.group(1), "\n".join(body) + "\n",
                            note.group(1) if note else ""))
        index = end + 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in pages_tested_here() for block in shell_blocks(page)]


def quick_start_block() -> Block:
    text = (ROOT / "README.md").read_text()
    section_line = text[:text.index("## Quick start\n")].count("\n") + 1
    return next(block for block in shell_blocks("README.md") if block.line > section_line)


# -- running a block


@dataclass(frozen=True)
class Background:
    lines: int                          # how many of the block's first lines keep running
    ports: tuple[tuple[str, int, str], ...]  # ("port" | "tcp", number, "user:password" or ""), in order


def background(annotation: str) -> Background | None:
    parts = [part.strip() for part in annotation.split(",")]
    head = re.fullmatch(r"background(?: (\d+))?", parts[0])
    if head is None:
        return None
    ports = []
    for part in parts[1:]:
        match = re.fullmatch(r"(port|tcp) (\d+)(?: as (\S+:\S+))?", part)
        assert match, f"test annotation {annotation!r}: {part!r} is neither 'port N [as USER:PASSWORD]' nor 'tcp N'"
        ports.append((match.group(1), int(match.group(2)), match.group(3) or ""))
    assert ports, f"test annotation {annotation!r} names no port to wait for"
    return Background(int(head.group(1) or 1), tuple(ports))


def logical_lines(text: str) -> list[str]:
    """The block's commands, a line ending in a backslash joined with the next, as bash reads it."""
    lines: list[str] = []
    for line in text.splitlines():
        if lines and lines[-1].endswith("\\"):
            lines[-1] += "\n" + line
        else:
            lines.append(line)
    return lines


def port_taken(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def answers(kind: str, port: int, credentials: str) -> bool:
    if kind == "tcp" or not port_taken(port):
        return kind == "tcp" and port_taken(port)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/health")
    if credentials:
        request.add_header("Authorization", "Basic " + base64.b64encode(credentials.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except OSError:   # an HTTP error (503 while starting), or the listener is up and the server not yet
        return False


def block_env() -> dict[str, str]:
    env = dict(os.environ, DCGM_EXPORTER_LISTEN="127.0.0.1:9400")
    for inherited in ("DCGM_COLLECTOR_LIBDCGM", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(inherited, None)   # the reader's shell after the quick start has none of these
    return env


def run_commands(block: Block, text: str, cwd: Path) -> None:
    run = subprocess.run(["bash", "-e", "-c", text], cwd=cwd, env=block_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT_S)
    assert run.returncode == 0, f"{block.where}: exit status {run.returncode}:\n{text}\n--- output:\n{run.stdout}"


def run_block(block: Block, cwd: Path, logs: Path, wait_s: float = SERVER_WAIT_S) -> None:
    serving = background(block.annotation)
    if serving is None:
        run_commands(block, block.text, cwd)
        return
    for _, port, _ in serving.ports:
        if port_taken(port):
            message = f"{block.where} needs 127.0.0.1:{port}, which another process holds"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
    lines = logical_lines(block.text)
    head, rest = "\n".join(lines[:serving.lines]) + "\n", "\n".join(lines[serving.lines:]) + "\n"
    log_path = logs / f"{Path(block.page).stem}-{block.line}.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(["bash", "-e", "-c", head], cwd=cwd, env=block_env(), stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + wait_s
        for kind, port, credentials in serving.ports:
            while not answers(kind, port, credentials):
                assert server.poll() is None, \
                    f"{block.where}: {head.strip()!r} exited {server.returncode} before :{port} answered:\n" \
                    f"{log_path.read_text(errors='replace')}"
                assert time.monotonic() < deadline, f"{block.where}: :{port} did not answer within " \
                    f"{wait_s:g} s:\n{log_path.read_text(errors='replace')}"
                time.sleep(0.2)
        if rest.strip():
            run_commands(block, rest, cwd)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            pytest.fail(f"{block.where}: {head.strip()!r} was still running 15 s after SIGTERM")
        # what the group left running (a backgrounded hostengine whose shell is gone) stops too
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def logs(tmp_path_factory) -> Path:
    """Where the output of the blocks' servers goes (shown when one fails)."""
    return tmp_path_factory.mktemp("block-logs")


@pytest.fixture(scope="session")
def checkout(tmp_path_factory, logs) -> Path:
    """A working copy where the quick start's first block ran as written (venv, install, the collector)."""
    copy = copy_checkout(tmp_path_factory.mktemp("checkout"))
    run_block(quick_start_block(), copy, logs, wait_s=QUICK_START_WAIT_S)
    return copy


# -- the tests


def test_the_quick_start_installs_and_serves_the_simulator(checkout):
    block = quick_start_block()
    assert background(block.annotation) is not None, f"{block.where} must be annotated as a background block"
    assert (checkout / ".venv" / "bin" / "dcgm-collector").is_file()


@pytest.mark.parametrize("page", [page for page in pages_tested_here()
                                  if any(block != quick_start_block() for block in shell_blocks(page))])
def test_the_shell_blocks_of_the_page_run_as_written(page, checkout, logs):
    for block in shell_blocks(page):
        if block == quick_start_block():
            continue   # the fixture ran it
        if block.annotation.startswith("skip"):
            assert block.text in SKIPPED, f"{block.where}: only the blocks SKIPPED lists may skip"
            continue
        run_block(block, checkout, logs)


def test_every_page_is_tested_by_one_of_the_two():
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert pages, "docs/ has no pages"
    for page in sorted(pages):
        if page == DEPLOY_PAGE:
            deploy_test = ROOT / DEPLOY_PAGE_TEST
            assert deploy_test.is_file() and DEPLOY_PAGE in deploy_test.read_text(), \
                f"{DEPLOY_PAGE} has no test: {DEPLOY_PAGE_TEST} must run its blocks"
        else:
            assert page in pages_tested_here()


def test_every_annotation_is_one_this_test_reads():
    for block in all_blocks():
        note = block.annotation
        assert not note or note.startswith("skip: ") or background(note) is not None, \
            f"{block.where}: unknown test annotation {note!r}"
    assert any(background(block.annotation) for block in all_blocks())   # the grammar is in use


def test_every_skipped_block_is_one_the_list_allows():
    skipped = [block for block in all_blocks() if block.annotation.startswith("skip")]
    assert {block.text for block in skipped} == SKIPPED


def test_every_scrape_job_in_the_docs_is_one_the_collector_down_alert_watches():
    rules = (ROOT / "deploy" / "prometheus" / "gpu-alerts.yml").read_text()
    [pattern] = re.findall(r'up\{job=~"([^"]+)"\}', rules)
    pages = ["README.md", *sorted(f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md"))]
    jobs = [(page, job) for page in pages
            for job in re.findall(r"job_name:\s*['\"]?([^'\"\s]+)", (ROOT / page).read_text())]
    assert jobs, "no scrape configuration in README.md or docs/"
    for page, job in jobs:
        assert re.fullmatch(pattern, job), f"{page}: scrape job {job!r} does not match the alert's job=~{pattern!r}"


def test_every_relative_link_of_the_docs_names_a_file_of_the_checkout():
    for page in pages_tested_here():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / page).read_text()):
            if re.match(r"[a-z]+:", target):
                continue   # a URL
            path = (ROOT / page).parent / target
            assert path.exists(), f"{page}: the link to {target} names no file"


def test_the_binding_example_runs_as_written(checkout):
    text = (ROOT / "docs" / "binding.md").read_text()
    [example] = re.findall(r"```python\n(.*?)```", text, re.S)
    run = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-I", "-"], input=example, cwd=checkout,
                         env=block_env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    assert run.returncode == 0, run.stderr
    printed = {tuple(line.split()[:2]) for line in run.stdout.splitlines()}
    # GPU 0's utilisation, power and temperature, as the example's comment says
    assert {("0", "203"), ("0", "155"), ("0", "150")} <= printed, run.stdout
