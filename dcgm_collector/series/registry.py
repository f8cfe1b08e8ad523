"""The registry every output registers with and reads from: the families /metrics writes, the targets' series.

/metrics is the text of every registered family set, in the order they were
registered (the exposition's DCGM families and self-metrics, then remote
write's, then the flight recorder's), with OpenMetrics' ``# EOF`` once at the
end: an output that has metrics of its own registers them here instead of
having its text spliced into another's body.

The outputs that read samples (the history API, remote write, the flight
recorder) find the targets here: each :class:`Source` names a target and gives,
while it samples, its :class:`TargetSeries` (its view and its sample model,
from the same sampler).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from dcgm_collector.series.samples import SampleModel
from dcgm_collector.series.view import TargetView

__all__ = ["EOF", "Families", "Registry", "Source", "TargetSeries", "body_pieces", "render_body"]

EOF = "# EOF\n"   # OpenMetrics' last line


class Families(Protocol):
    """Metric families that go into /metrics."""

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None) -> None:
        """Append the families' text (headers and samples) to ``parts``, never ``# EOF``.

        ``now_us`` is the time of the render (µs since the epoch); None is
        "now", which lets a family set reuse text it rendered since its data
        last changed.  A part is text, or text a family set keeps encoded
        already (UTF-8 bytes), so that a body reused from one scrape to the
        next is neither joined nor encoded again.
        """
        ...


@dataclass(frozen=True)
class TargetSeries:
    """One sampling target as the outputs read it: its name, its sampler's view and where its samples are."""

    name: str
    view: TargetView
    model: SampleModel


class Source(Protocol):
    """One target the outputs may read; it samples or not at any moment (connecting, reconnecting)."""

    @property
    def name(self) -> str: ...

    def series(self) -> TargetSeries | None:
        """The target's view and sample model now, both of one sampler; None while it does not sample."""
        ...


def body_pieces(families: Families, openmetrics: bool = False, now_us: int | None = None) -> list[bytes]:
    """A /metrics body of one family set as UTF-8 pieces, to be sent one after the other: the parts a family
    set keeps encoded as they are (the same objects, not copies), each run of text between them joined once."""
    parts: list[str | bytes] = []
    families.write_families(parts, openmetrics, now_us)
    if openmetrics:
        parts.append(EOF)
    pieces: list[bytes] = []
    text: list[str] = []
    for part in parts:
        if isinstance(part, str):
            text.append(part)
            continue
        if text:
            pieces.append("".join(text).encode())
            text.clear()
        pieces.append(part)
    if text:
        pieces.append("".join(text).encode())
    return pieces


def render_body(families: Families, openmetrics: bool = False, now_us: int | None = None) -> bytes:
    """A /metrics body of one family set: its text, then ``# EOF`` once in OpenMetrics."""
    return b"".join(body_pieces(families, openmetrics, now_us))


class Registry:
    """The families /metrics writes and the targets the outputs read.  Safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: tuple[Families, ...] = ()   # replaced, never mutated: a render iterates without the lock
        self._sources: tuple[Source, ...] = ()

    # -- families
    def register(self, families: Families) -> None:
        """Add a family set; /metrics writes it after those registered before it."""
        with self._lock:
            if any(f is families for f in self._families):
                raise ValueError(f"{families!r} is registered already")
            self._families = (*self._families, families)

    def unregister(self, families: Families) -> None:
        """Take a family set out of /metrics (one not registered: nothing happens)."""
        with self._lock:
            self._families = tuple(f for f in self._families if f is not families)

    @property
    def families(self) -> tuple[Families, ...]:
        return self._families

    def write(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        """Every registered family set's text, in registration order, without ``# EOF``."""
        for families in self._families:
            families.write_families(parts, openmetrics, now_us)

    def render(self, openmetrics: bool = False, now_us: int | None = None) -> bytes:
        """The /metrics body: every registered family, then ``# EOF`` once in OpenMetrics."""
        return render_body(self, openmetrics, now_us)

    def render_pieces(self, openmetrics: bool = False) -> list[bytes]:
        """The /metrics body as of now, as pieces to send one after the other (see :func:`body_pieces`)."""
        return body_pieces(self, openmetrics)

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        """The registry is itself a family set: every registered one's text (see :meth:`write`)."""
        self.write(parts, openmetrics, now_us)

    # -- targets
    def add_source(self, source: Source) -> None:
        """A target the outputs read from now on, after those added before it."""
        with self._lock:
            self._sources = (*self._sources, source)

    def sources(self) -> tuple[Source, ...]:
        """Every target, sampling or not, in the order they were added."""
        return self._sources

    def series(self) -> list[TargetSeries]:
        """The view and sample model of each target that samples now, in target order."""
        return [found for source in self._sources if (found := source.series()) is not None]

    def sample_models(self) -> list[SampleModel]:
        """The sample model of each target that samples now, in target order."""
        return [found.model for found in self.series()]
