"""What a POST /recorder body may ask for, and the one line each body it cannot act on gets."""

from __future__ import annotations

import pytest

from dcgm_collector.push.recorder_request import RecordRequest, RequestRefused, parse_request

GPUS = {0, 1}


@pytest.mark.parametrize("body, problem", [
    (b"[" * 100_000, "the body is not a request: JSON nested too deeply"),
    (b'{"gpus": [' + b"9" * 5000 + b"]}", "the body is not JSON it can read: Exceeds the limit (4300 digits)"),
    (b"\xff\xfe\xff", "the body is not JSON it can read: "),
    (b"[1]", "the body must be a JSON object"),
    (b'{"gpus": []}', "gpus: an empty list records nothing; leave it out to record every GPU"),
    (b'{"reason": "x", "why": 1}', 'unknown key "why" (the keys are gpus, reason)'),
    (b'{"gpus": [true]}', '"gpus" must be a list of GPU ids'),
    (b'{"gpus": [-1]}', '"gpus" must be a list of GPU ids'),
    (b'{"gpus": [3, 2, 1]}', "no GPU 2, 3 here (GPUs 0-1)"),
    (b'{"reason": 7}', '"reason" must be a string'),
])
def test_a_body_it_cannot_act_on_is_one_line(body, problem):
    with pytest.raises(RequestRefused) as refused:
        parse_request(body, GPUS)
    assert str(refused.value).startswith(problem) and "\n" not in str(refused.value)


def test_while_the_gpus_are_unknown_ids_are_only_checked_to_be_plausible():
    assert parse_request(b'{"gpus": [5, 5]}', set()) == RecordRequest("", (5,))
    with pytest.raises(RequestRefused, match=r'^"gpus": a number of 20 digits is not a GPU id \(0-1023\)$'):
        parse_request(b'{"gpus": [12345678901234567890]}', set())


def test_an_empty_body_records_every_gpu_and_the_reason_is_one_short_line():
    assert parse_request(b"  ", GPUS) == RecordRequest("", None)
    asked = parse_request(b'{"reason": "job 42\\n slowed   ' + b"x" * 300 + b'", "gpus": [1]}', GPUS)
    assert asked.gpus == (1,) and asked.reason.startswith("job 42 slowed x") and len(asked.reason) == 200
