"""Several targets (one collector, several hostengines) in one /metrics body and one /health answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol

from dcgm_collector.expose.exposition import Exposition
from dcgm_collector.expose.families import Family
from dcgm_collector.expose.self_metrics import SelfLines, SelfRow, render_self_metrics
from dcgm_collector.series.registry import Source, TargetSeries, render_body
from dcgm_collector.series.samples import SampleModel
from dcgm_collector.series.stats import SamplerStats
from dcgm_collector.series.text import Header, label_text

__all__ = ["MultiExposition", "ServedTarget"]


class ServedTarget(Protocol):
    """What MultiExposition reads of a target (dcgm_collector.collect.target.Target)."""

    name: str
    remote: bool
    stats: SamplerStats
    reconnects: int

    @property
    def exposition(self) -> Exposition | None: ...

    def health(self, now_s: float | None = None) -> tuple[bool, str]: ...


class _TargetSource:
    """One target as the outputs read it through the registry (series.registry.Source)."""

    def __init__(self, target: ServedTarget) -> None:
        self._target = target

    @property
    def name(self) -> str:
        return self._target.name

    def series(self) -> TargetSeries | None:
        exposition = self._target.exposition   # read once: a reconnect may replace it meanwhile
        return None if exposition is None else exposition.target_series(self._target.name)


class MultiExposition:
    """The /metrics body and /health of one collector and its targets (one or several).

    Reads each target's current exposition at every scrape, so a target
    that reconnects or changes its GPUs shows up without a rebuild here.  A
    target that never connected contributes its own metrics only.
    """

    def __init__(self, targets: Sequence[ServedTarget], *, version: str, library_version: str = "unknown",
                 labelled: bool | None = None, source: str = "", source_reason: str = "") -> None:
        if not targets:
            raise ValueError("no targets")
        self.targets = tuple(targets)
        # with one target the collector's own series keep the names they always had
        self.labelled = len(self.targets) > 1 if labelled is None else labelled
        self._target_labels = [label_text([("hostname", t.name)]) if self.labelled else "" for t in self.targets]
        # source and source_reason: what the readings come from and why (dcgm_collector.sources), when known
        self._build_info = label_text([("version", version), ("dcgm_library", library_version),
                                       *((name, value) for name, value in (("source", source),
                                                                           ("source_reason", source_reason)) if value)])
        self._last_scrape_s: float | None = None
        self._plan_lock = threading.Lock()
        self._plan: tuple[tuple, list[tuple[str, Header, list[tuple[int, Family]]]]] | None = None
        # per format: (data version, its families as UTF-8 text)
        self._families_text: dict[bool, tuple[tuple, bytes]] = {}
        self._self_lines = SelfLines()

    def render(self, openmetrics: bool = False, now_us: int | None = None) -> bytes:
        return render_body(self, openmetrics, now_us)

    def write_families(self, parts: list[str | bytes], openmetrics: bool, now_us: int | None = None) -> None:
        """Every target's families, then the self-metrics, without OpenMetrics' ``# EOF`` (series.registry)."""
        reuse = now_us is None
        now_us = time.time_ns() // 1000 if now_us is None else int(now_us)
        expositions = [t.exposition for t in self.targets]
        for exposition in expositions:
            if exposition is not None:
                exposition._refresh_families()
        # The rings change once per tick: between ticks every scrape would render the same
        # DCGM families, so the text is kept per format until a target ticks again (the
        # windows are then as of the scrape that rendered them, at most one tick earlier).
        # Self-metrics (sample age, scrape duration) are always rendered afresh.  The text is
        # kept encoded: a scrape between ticks hands the same bytes on, without a copy.
        version = tuple((id(e), id(e._families) if e is not None else None, t.stats.ticks,
                         e.stores_written if e is not None else None, e.rings_written if e is not None else None)
                        for e, t in zip(expositions, self.targets))
        if reuse:
            parts.append(self._families_bytes(expositions, openmetrics, now_us, version))
        else:
            parts.append(self._render_families(expositions, openmetrics, now_us).encode())
        now_s = now_us / 1e6
        rows = [SelfRow(labels, t.stats, t.health(now_s)[0], t.reconnects if t.remote else None,
                        e.view.rings if (e := t.exposition) is not None else ())
                for labels, t in zip(self._target_labels, self.targets)]
        render_self_metrics(parts, openmetrics, now_s, rows, self._last_scrape_s, self._build_info,
                            self._self_lines)

    def _families_bytes(self, expositions: Sequence[Exposition | None], openmetrics: bool, now_us: int,
                        version: tuple) -> bytes:
        """The families text of ``version``: rendered once, then the same bytes until a target ticks again.

        Concurrent scrapes do not reach here together: the collector renders
        one /metrics at a time (app.Collector.metrics), and a scrape that
        comes meanwhile answers with the body before.
        """
        cached = self._families_text.get(openmetrics)
        if cached is not None and cached[0] == version:
            return cached[1]
        text = self._render_families(expositions, openmetrics, now_us).encode()
        self._families_text[openmetrics] = (version, text)
        return text

    def _render_families(self, expositions: Sequence[Exposition | None], openmetrics: bool, now_us: int) -> str:
        scrapes = [e.scrape(now_us) if e is not None else None for e in expositions]
        parts: list[str] = []
        for _, header, members in self._family_plan(expositions):
            lines: list[str] = []
            for index, family in members:
                lines.extend(family.lines(scrapes[index]))  # type: ignore[arg-type]
            if lines:
                parts.append(header.get(openmetrics))
                parts.extend(lines)
        return "".join(parts)

    def sample_models(self) -> list[SampleModel]:
        """The sample model of each target that has an exposition now, in target order."""
        return [e.sample_model(t.name) for t in self.targets if (e := t.exposition) is not None]

    def sources(self) -> tuple[Source, ...]:
        """Each target as the outputs read it (its view and sample model), for the registry, in target order."""
        return tuple(_TargetSource(t) for t in self.targets)

    def health(self) -> tuple[bool, str]:
        """OK when every target is up and fresh; else one line per target that is not."""
        now_s = time.time()
        answers = [(t, *t.health(now_s)) for t in self.targets]
        bad = [(t, reason) for t, ok, reason in answers if not ok]
        if not bad:
            # healthy, with what a healthy target still wants said (GPUs it lost)
            notes = [(t, reason.removeprefix("OK; ")) for t, _, reason in answers if reason != "OK"]
            if not notes:
                return True, "OK"
            if len(self.targets) == 1:
                return True, f"OK; {notes[0][1]}"
            return True, "OK; " + "; ".join(f"{t.name}: {note}" for t, note in notes)
        if len(self.targets) == 1:
            return False, bad[0][1]
        return False, "\n".join(f"{t.name}: {reason}" for t, reason in bad)

    def observe_scrape(self, seconds: float) -> None:
        self._last_scrape_s = float(seconds)

    def _family_plan(self, expositions: Sequence[Exposition | None]) -> list[tuple[str, Header, list]]:
        """Families by name in a merged order, each with (target index, family) of the targets that have it.

        Cached until a target's family tuple changes (new labels, a reconnect, a reload).
        """
        key = tuple(None if e is None else e._families for e in expositions)
        plan = self._plan
        if plan is not None and len(plan[0]) == len(key) and all(a is b for a, b in zip(plan[0], key)):
            return plan[1]
        order: list[str] = []
        entries: dict[str, tuple[str, Header, list[tuple[int, Family]]]] = {}
        for index, families in enumerate(key):
            at = 0   # a family new to the plan goes after the previous family of the same target
            for family in families or ():
                entry = entries.get(family.name)
                if entry is None:
                    entry = entries[family.name] = (family.name, family.header, [])
                    order.insert(at, family.name)
                at = order.index(family.name) + 1
                entry[2].append((index, family))
        merged = [entries[name] for name in order]
        with self._plan_lock:
            self._plan = (key, merged)
        return merged

