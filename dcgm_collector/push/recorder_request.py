"""What ``POST /recorder`` asks the flight recorder for: its JSON body, read within bounds.

The body is optional; when given it is one object with at most the keys
``reason`` (a string, logged and kept in the sidecar) and ``gpus`` (a
non-empty list of GPU ids; left out, every GPU is recorded).  Whatever else
a client sends is a RequestRefused whose str() is the one line the 400 says:
JSON the decoder cannot read (nested too deeply, an integer too long to
convert), an unknown key, ids that are not GPUs of this node.  The server
already caps the body's size, so decoding it costs little time and memory.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass

from dcgm_collector.model import id_ranges

__all__ = ["KEYS", "MAX_GPU_ID", "RecordRequest", "RequestRefused", "parse_request"]

KEYS = ("gpus", "reason")
MAX_GPU_ID = 1023   # before the GPUs are known (starting), ids are only checked to be plausible
MAX_REASON_CHARS = 200


class RequestRefused(ValueError):
    """A body the recorder cannot act on; str() is one line naming what is wrong."""


@dataclass(frozen=True)
class RecordRequest:
    reason: str                        # whitespace folded, at most MAX_REASON_CHARS; "" when not given
    gpus: tuple[int, ...] | None       # None: every GPU


def parse_request(body: bytes, known_gpus: Collection[int]) -> RecordRequest:
    """The request a POST /recorder body makes; ``known_gpus`` are this node's GPU ids (empty while starting)."""
    if not body.strip():
        return RecordRequest("", None)
    try:
        data = json.loads(body)
    except RecursionError:
        raise RequestRefused("the body is not a request: JSON nested too deeply") from None
    except ValueError as error:   # JSONDecodeError, bad UTF-8, an integer past the conversion limit
        raise RequestRefused(f"the body is not JSON it can read: {' '.join(str(error).split())[:200]}") from None
    if not isinstance(data, dict):
        raise RequestRefused("the body must be a JSON object")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise RequestRefused(f"unknown key {json.dumps(unknown[0])[:80]} (the keys are {', '.join(KEYS)})")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise RequestRefused('"reason" must be a string')
    gpus = data.get("gpus")
    if gpus is not None:
        gpus = _gpus(gpus, known_gpus)
    return RecordRequest(" ".join(reason.split())[:MAX_REASON_CHARS], gpus)


def _gpus(gpus: object, known: Collection[int]) -> tuple[int, ...]:
    if not isinstance(gpus, list) or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0
                                             for g in gpus):
        raise RequestRefused('"gpus" must be a list of GPU ids')
    if not gpus:
        raise RequestRefused("gpus: an empty list records nothing; leave it out to record every GPU")
    chosen = sorted(set(gpus))
    if known:
        unknown = [g for g in chosen if g not in known]
        if unknown:
            shown = ", ".join(map(_id_text, unknown[:8])) + (", ..." if len(unknown) > 8 else "")
            raise RequestRefused(f"no GPU {shown} here (GPUs {id_ranges(sorted(known))})")
    elif chosen[-1] > MAX_GPU_ID:
        raise RequestRefused(f'"gpus": {_id_text(chosen[-1])} is not a GPU id (0-{MAX_GPU_ID})')
    return tuple(chosen)


def _id_text(gpu: int) -> str:
    return str(gpu) if gpu < 10**12 else "a number of %d digits" % len(str(gpu))
