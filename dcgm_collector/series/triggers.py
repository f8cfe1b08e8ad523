"""Triggers of the flight recorder: what the collect stage's trigger reader hands the recorder, and how.

The trigger reader (dcgm_collector.collect.readers.triggers) finds new XIDs,
lost GPUs and failed health checks on a sampler; the recorder
(dcgm_collector.push.recorder) writes the samples around them.  The type they
pass and the sink's signature live here, between the two, so that neither
imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Trigger", "TriggerSink"]


@dataclass(frozen=True)
class Trigger:
    """Why a recording is made: kind (xid, lost, health, signal, request), when, which GPUs (None: all)."""

    kind: str
    time_s: float
    gpus: frozenset[int] | None
    detail: str
    target: str | None = None     # None: every target


class TriggerSink(Protocol):
    """Takes a trigger: the flight recorder's ``Recorder.trigger``."""

    def __call__(self, kind: str, detail: str, gpus: Sequence[int] | None = None, target: str | None = None,
                 time_s: float | None = None) -> object: ...
