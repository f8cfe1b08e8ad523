"""Bad flags of ``dcgm-collector top``: one line naming the flag, exit 2, before any request."""

from __future__ import annotations

import pytest

from dcgm_collector.top.command import main


@pytest.mark.parametrize("args, line", [
    (["--timeout", "0"], "--timeout 0: must be more than 0"),
    (["localhost:9400"], "URL localhost:9400: give http://HOST:PORT or https://HOST:PORT"),
    (["--password", "x"], "--password needs --user"),
    (["--width", "10", "--once"], "--width 10: must be at least 40"),
    (["https://node7:9400", "--ca-file", "/nonexistent/ca.pem"],
     "--ca-file /nonexistent/ca.pem: cannot read it as PEM certificates: No such file or directory"),
    (["--user", "u", "--password-file", "/nonexistent/pw"],
     "--password-file /nonexistent/pw: No such file or directory"),
])
def test_a_bad_flag_is_one_line(args, line, capsys):
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err == f"dcgm-collector top: error: {line}\n"
    assert captured.out == ""
