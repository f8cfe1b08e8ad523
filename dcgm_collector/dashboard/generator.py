"""A Grafana dashboard generated from the counters file the collector runs with.

``python -m dcgm_collector.dashboard -f FILE > dashboard.json`` writes a
classic Grafana dashboard (JSON model, schemaVersion 36: Grafana 9 and
later import it, newer ones migrate it on load) whose panels are exactly
the families that file makes the collector export:

* a row the file leaves out gives no panel, and a row the dashboard has no
  special view for (an unknown field) gets a plain panel under
  "Other metrics", in the field's unit;
* beside the last value of a row with window aggregates (the fourth column,
  or ``--aggregations`` as given to the collector, which a counters file
  cannot tell) it draws the ``<name>_max`` spike series, and for clocks the
  ``_min`` dip series, each as the max (min) over the panel's step, so a
  spike between two points of a zoomed-out graph still shows;
* variables ``instance`` (from ``dcgm_collector_up``, which every collector
  serves) and ``gpu``, both multi-value with "All"; legends name the host
  and the GPU (``{{hostname}} GPU {{gpu}}``);
* rows for what a counters file cannot tell: ``--mig`` per-instance panels
  for GPUs split into MIG instances, ``--processes`` the row of per-process
  series and idle time (:mod:`dcgm_collector.dashboard.processes`) for
  collectors run with ``--processes``.

Why plain JSON and not grafana-foundation-sdk: the SDK needs Python 3.11
while the collector supports 3.10; it is a public preview whose PyPI
versioning resolves to Grafana 10.1 types unless pinned by epoch; and it
would be a dependency for what is a small, stable document (a list of
panels with a position, a unit and some PromQL).  A few helper functions
(here and in :mod:`dcgm_collector.dashboard.grafana`) build that document directly, and the tests check it against the
classic model's rules and run every query against a real Prometheus.

Library use: :func:`build_dashboard` returns the dashboard as a dict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from dcgm_collector.catalog.counters import (
    AGGREGATIONS,
    Counter,
    CountersError,
    CounterSet,
    aggregations_argument,
    default_counters_path,
    load_counters,
)
from dcgm_collector.catalog.fields import FieldTable, field_table
from dcgm_collector.dashboard.grafana import GRID_WIDTH, STAT, Panel, Target
from dcgm_collector.dashboard.panels import (
    CLOCK_EVENT_REASONS,
    COLLECTOR,
    FRAMEBUFFER,
    FRAMEBUFFER_USED_PERCENT,
    HEALTH_RESULTS,
    LEVELS,
    MIG,
    MIG_FIELDS,
    MIG_INSTANCES,
    OTHER,
    OVERVIEW,
    PROCESSES,
    SECTIONS,
    STYLES,
    TEMPERATURE_ALERT_C,
    Level,
    Style,
    grafana_unit,
)
from dcgm_collector.dashboard.processes import process_panels

__all__ = ["DEFAULT_TITLE", "DEFAULT_UID", "SCHEMA_VERSION", "build_dashboard", "dashboard_json", "main"]

PROG = "dcgm-collector dashboard"
DEFAULT_TITLE = "GPUs (dcgm-collector)"
DEFAULT_UID = "dcgm-collector-gpus"
SCHEMA_VERSION = 36
DATASOURCE_VARIABLE = "${datasource}"

LEGEND = "{{hostname}} GPU {{gpu}}"
GPU_SELECTOR = '{instance=~"$instance", gpu=~"$gpu"}'
INSTANCE_SELECTOR = '{instance=~"$instance"}'
# whole GPUs (and, on a node with MIG, every series a GPU's instances serve)
GPU = Level("", 'gpu=~"$gpu"', LEGEND)
# Grafana's rate window: at least four scrapes, so a rate always has two samples
RATE_WINDOW = "$__rate_interval"

ROW_HEIGHT = 1

# Families that say which GPUs a collector has, best first: always sampled,
# present on every model, never blank on a healthy GPU.
GPU_VARIABLE_PREFERENCE = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK",
                           "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")
XID_TABLE_COLUMNS = ("hostname", "gpu", "err_code", "err_msg")
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


# ---- small builders for the classic JSON model ------------------------------------------

def _number(value: float) -> str:
    """A factor as PromQL text: 1000000, not 1e+06."""
    return f"{value:.15g}" if abs(value) < 1e15 else repr(value)


def _scaled(expr: str, factor: float) -> str:
    return expr if factor == 1 else f"{expr} * {_number(factor)}"



def _row(panel_id: int, title: str, y: int) -> dict:
    return {"id": panel_id, "type": "row", "title": title, "collapsed": False, "panels": [],
            "gridPos": {"x": 0, "y": y, "w": GRID_WIDTH, "h": ROW_HEIGHT}}


def _layout(sections: Sequence[tuple[str, list[Panel]]], datasource: dict) -> list[dict]:
    """Rows top to bottom, each followed by its panels left to right, wrapping at 24 columns."""
    out: list[dict] = []
    y = 0
    for title, panels in sections:
        if not panels:
            continue
        out.append(_row(len(out) + 1, title, y))
        y += ROW_HEIGHT
        x, line_height = 0, 0
        for panel in panels:
            width, height = panel.size
            if x + width > GRID_WIDTH:
                x, y, line_height = 0, y + line_height, 0
            out.append(panel.to_json(len(out) + 1, {"x": x, "y": y, "w": width, "h": height}, datasource))
            x += width
            line_height = max(line_height, height)
        y += line_height
    return out


# ---- panels from counters rows ---------------------------------------------------------

@dataclass(frozen=True)
class _Row:
    """One counters row the collector serves as series, with how to show it."""
    counter: Counter
    style: Style
    aggregations: tuple[str, ...]
    rank: int             # place within its section: the catalogue's order, then the file's
    level: Level = GPU    # which entities its series belong to: their selector and legend

    @property
    def selector(self) -> str:
        return _selector(self.level)


def _selector(level: Level) -> str:
    return f'{{instance=~"$instance", {level.selector}}}' if level.selector else INSTANCE_SELECTOR


def _catalogue(table: FieldTable) -> dict[int | str, tuple[int, Style]]:
    """STYLES keyed by field id (DCGM_EXP_* names stay names), with each entry's rank."""
    out: dict[int | str, tuple[int, Style]] = {}
    for rank, (name, style) in enumerate(STYLES.items()):
        field_ = table.lookup(name)
        out[field_.id if field_ is not None else name] = (rank, style)
    return out


def _series_rows(counters: CounterSet, aggregations: Iterable[str], table: FieldTable) -> list[_Row]:
    wanted_everywhere = set(aggregations)
    catalogue = _catalogue(table)
    rows = []
    for position, counter in enumerate(counters):
        field_ = counter.field
        if counter.exporter is not None:
            known = catalogue.get(counter.exporter)
            if known is not None:
                rows.append(_Row(counter, known[1], (), known[0]))
            continue
        if field_ is None or counter.is_label or not field_.is_numeric:
            continue
        rank, style = catalogue.get(field_.id) or (len(catalogue) + position, _generic_style(counter))
        # links, switches and CPUs: the level's own section, selector and legend
        level = LEVELS.get(field_.entity_level, GPU)
        if level is not GPU:
            style = replace(style, section=level.section)
        # as the exposition does: event fields (XID) have no window families, and --aggregations
        # gives them to gauges only, never to counters
        everywhere = wanted_everywhere if counter.served_type != "counter" else set()
        wanted = set() if field_.is_event else set(counter.aggregations) | everywhere
        rows.append(_Row(counter, style, tuple(a for a in AGGREGATIONS if a in wanted), rank, level))
    return sorted(rows, key=lambda row: row.rank)


def _generic_style(counter: Counter) -> Style:
    title = counter.help.strip().rstrip(".").strip()
    if not title or len(title) > 60:
        title = counter.name
    view = "total" if counter.served_type == "counter" else "value"
    return Style(OTHER, title, view=view)


def _unit(row: _Row) -> tuple[str, float]:
    field_ = row.counter.field
    return grafana_unit(row.style.unit or (field_.unit if field_ is not None else None))


def _value_panel(row: _Row) -> Panel:
    name, style, selector, legend = row.counter.name, row.style, row.selector, row.level.legend
    unit, factor = _unit(row)
    targets = [Target(_scaled(name + selector, factor), legend)]
    for aggregate, over_time in (("max", "max_over_time"), ("min", "min_over_time")):
        if aggregate in row.aggregations and (aggregate == "max" or style.dips):
            expr = f"{over_time}({name}_{aggregate}{selector}[{RATE_WINDOW}])"
            targets.append(Target(_scaled(expr, factor), f"{legend} {aggregate}"))
    return _graph(row, targets, unit)


def _graph(row: _Row, targets: list[Target], unit: str, **overrides) -> Panel:
    style = row.style
    settings = {"unit": unit, "description": _description(row), "min": style.min, "max": style.max,
                "thresholds": style.thresholds, "threshold_line": style.threshold_line}
    settings.update(overrides)
    return Panel("timeseries", style.title, targets, **settings)


def _description(row: _Row) -> str:
    text = row.style.description or row.counter.help
    return f"{row.counter.name}: {text}" if text else row.counter.name


def _field_panel(row: _Row) -> Panel:
    name, view, legend = row.counter.name, row.style.view, row.level.legend
    selected = name + row.selector
    if view == "value":
        return _value_panel(row)
    if view == "total":
        return _graph(row, [Target(selected, legend)], _unit(row)[0], stepped=True)
    if view == "time_share":
        expr = f"rate({selected}[{RATE_WINDOW}]) / 1000000000"
        return _graph(row, [Target(expr, legend)], "percentunit")
    if view == "power":
        # mJ per second is mW
        return _graph(row, [Target(f"rate({selected}[{RATE_WINDOW}]) / 1000", legend)], "watt")
    if view == "reasons":
        targets = [Target(f"floor({selected} / {bit}) % 2", f"{legend} {reason}")
                   for reason, bit in CLOCK_EVENT_REASONS]
        mappings = [{"type": "value", "options": {
            "0": {"text": "no", "color": "transparent", "index": 0},
            "1": {"text": "yes", "color": "red", "index": 1}}}]
        return Panel("state-timeline", row.style.title, targets, unit="none", description=_description(row),
                     mappings=mappings)
    if view == "xid_last":
        return Panel("table", row.style.title, [Target(selected, table=True)], unit="none",
                     description=_description(row), columns=XID_TABLE_COLUMNS)
    raise ValueError(f"unknown view {view!r} for {name}")


def _exporter_panel(row: _Row) -> Panel:
    name, exporter = row.counter.name, row.counter.exporter
    selected = name + GPU_SELECTOR
    if exporter == "DCGM_EXP_GPU_HEALTH_STATUS":
        mappings = [{"type": "value", "options": {
            str(value): {"text": text, "color": color, "index": i}
            for i, (value, text, color) in enumerate(HEALTH_RESULTS)}}]
        return Panel("state-timeline", row.style.title,
                     [Target(f"max by (instance, hostname, gpu) ({selected})", LEGEND)],
                     unit="none", description=_description(row), mappings=mappings)
    # windowed counts: a series per GPU and XID (clock event) only while one happened
    extra = " XID {{xid}}" if exporter == "DCGM_EXP_XID_ERRORS_COUNT" else " {{clock_event}}"
    return _graph(row, [Target(f"{selected} > 0", LEGEND + extra)], "short", stepped=True)


def _framebuffer_percent(rows: Sequence[_Row], table: FieldTable, level: Level = GPU,
                         title: str = "Framebuffer used (% of usable)") -> Panel | None:
    """FB used as a share of usable memory (used + free), as the alert rules see it."""
    by_id = {r.counter.field.id: r for r in rows if r.counter.field is not None}
    used, free = (by_id.get(table.lookup(n).id) for n in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"))
    if used is None or free is None:
        return None
    used_name, free_name, selector, legend = used.counter.name, free.counter.name, _selector(level), level.legend
    usable = f"({used_name}{selector} + {free_name}{selector})"
    targets = [Target(f"100 * {used_name}{selector} / {usable}", legend)]
    if "max" in used.aggregations:
        targets.append(Target(f"100 * max_over_time({used_name}_max{selector}[{RATE_WINDOW}]) / {usable}",
                              f"{legend} max"))
    return Panel("timeseries", title, targets, unit="percent", min=0, max=100,
                 thresholds=((FRAMEBUFFER_USED_PERCENT, "orange"),), threshold_line=True,
                 description=f"{used_name} / ({used_name} + {free_name}); the alert rules page above "
                             f"{FRAMEBUFFER_USED_PERCENT} %.")


def _mig_rows(rows: Sequence[_Row], table: FieldTable) -> list[_Row]:
    """The GPU rows a MIG instance serves of its own: its framebuffer share and the profiling fields."""
    own = {table.lookup(name).id for name in MIG_FIELDS}  # type: ignore[union-attr]
    return [replace(row, level=MIG, style=replace(row.style, section=MIG_INSTANCES,
                                                  title=f"{row.style.title} per instance"))
            for row in rows
            if row.level is GPU and row.counter.exporter is None and row.counter.field is not None
            and (row.counter.field.id in own or row.counter.field.is_profiling)]


def _mig_panels(rows: Sequence[_Row], table: FieldTable) -> list[Panel]:
    """Per-instance panels: framebuffer used, free and its share, and the profiling fields."""
    mig_rows = _mig_rows(rows, table)
    panels = [_field_panel(row) for row in mig_rows]
    percent = _framebuffer_percent(mig_rows, table, MIG, "Framebuffer used per instance (% of usable)")
    if percent is not None:
        panels.insert(0, percent)
    return panels


def _mig_family(rows: Sequence[_Row], table: FieldTable) -> str | None:
    """The family the gpu_instance variable reads GPU_I_ID from: FB used, else the first instance row."""
    mig_rows = _mig_rows(rows, table)
    fb_used = table.lookup("DCGM_FI_DEV_FB_USED").id  # type: ignore[union-attr]
    for row in mig_rows:
        if row.counter.field.id == fb_used:  # type: ignore[union-attr]
            return row.counter.name
    return mig_rows[0].counter.name if mig_rows else None


def _overview(rows: Sequence[_Row], gpu_family: str | None, table: FieldTable) -> list[Panel]:
    by_id = {r.counter.field.id: r.counter.name for r in rows if r.counter.field is not None}

    def name_of(field_name: str) -> str | None:
        return by_id.get(table.lookup(field_name).id)  # type: ignore[union-attr]

    up = f"dcgm_collector_up{INSTANCE_SELECTOR}"
    panels = [Panel("stat", "Collectors up", [Target(f"sum({up}) / count({up})")],
                    unit="percentunit", min=0, max=1, thresholds=((1, "green"),), base_color="red", size=STAT,
                    description="Share of the selected collectors whose last read from DCGM succeeded.")]
    if gpu_family is not None:
        # counted per (instance, gpu): a family may have several series per GPU (MIG, XID numbers)
        panels.append(Panel("stat", "GPUs reporting",
                            [Target(f"count(count by (instance, gpu) ({gpu_family}{GPU_SELECTOR}))")],
                            size=STAT, description=f"Selected GPUs with a current {gpu_family} sample."))
    wanted = (
        ("DCGM_FI_DEV_GPU_TEMP", "Hottest GPU", "max", "celsius", ((TEMPERATURE_ALERT_C, "red"),)),
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (sum)", "sum", "watt", ()),
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilisation (mean)", "avg", "percent", ()),
    )
    for field_name, title, how, unit, thresholds in wanted:
        name = name_of(field_name)
        if name is not None:
            panels.append(Panel("stat", title, [Target(f"{how}({name}{GPU_SELECTOR})")], unit=unit,
                                thresholds=thresholds, size=STAT, description=f"{how} of {name} over the selection."))
    _share_width(panels)
    return panels


def _share_width(panels: Sequence[Panel]) -> None:
    """One line of panels across the full width (at most six; more wrap)."""
    count = min(len(panels), GRID_WIDTH // 4)
    for i, panel in enumerate(panels):
        panel.size = (GRID_WIDTH // count + (1 if i % count < GRID_WIDTH % count else 0), panel.size[1])


def _collector_panels() -> list[Panel]:
    return [
        Panel("timeseries", "Collector up", [Target(f"dcgm_collector_up{INSTANCE_SELECTOR}", "{{instance}}")],
              min=0, max=1, stepped=True, description="1 while the collector reads DCGM and its samples are fresh."),
        Panel("timeseries", "Age of the newest sample",
              [Target(f"dcgm_collector_last_sample_age_seconds{INSTANCE_SELECTOR}", "{{instance}}")],
              unit="s", min=0, description="Seconds since the newest sample DCGM took."),
    ]


def _gpu_family(rows: Sequence[_Row], table: FieldTable) -> str | None:
    """The family the gpu variable reads its values from."""
    values = [r for r in rows if r.counter.field is not None and not r.counter.field.is_event]
    for preferred in GPU_VARIABLE_PREFERENCE:
        field_id = table.lookup(preferred).id  # type: ignore[union-attr]
        for row in values:
            if row.counter.field.id == field_id:  # type: ignore[union-attr]
                return row.counter.name
    ordered = values + [r for r in rows if r.counter.exporter is not None] + list(rows)
    return ordered[0].counter.name if ordered else None


# ---- the dashboard -----------------------------------------------------------------------

def _query_variable(name: str, label: str, query: str, datasource: dict, sort: int) -> dict:
    return {
        "name": name, "label": label, "type": "query", "datasource": datasource,
        "query": query, "definition": query, "refresh": 2, "regex": "", "sort": sort,
        "multi": True, "includeAll": True, "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "options": [], "hide": 0,
    }


def _variables(gpu_family: str | None, datasource: dict, fixed_datasource: bool,
               mig_family: str | None = None) -> list[dict]:
    variables = []
    if not fixed_datasource:
        variables.append({"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
                          "regex": "", "current": {}, "options": [], "refresh": 1, "hide": 0})
    variables.append(_query_variable("instance", "Instance", "label_values(dcgm_collector_up, instance)",
                                     datasource, sort=1))
    if gpu_family is not None:
        variables.append(_query_variable("gpu", "GPU", f'label_values({gpu_family}{{instance=~"$instance"}}, gpu)',
                                         datasource, sort=3))
    if mig_family is not None:
        selector = '{instance=~"$instance", gpu=~"$gpu", GPU_I_ID!=""}'
        variables.append(_query_variable("gpu_instance", "GPU instance",
                                         f"label_values({mig_family}{selector}, GPU_I_ID)", datasource, sort=3))
    return variables


def build_dashboard(counters: CounterSet, *, title: str = DEFAULT_TITLE, uid: str = DEFAULT_UID,
                    datasource_uid: str | None = None, aggregations: Iterable[str] = (),
                    mig: bool = False, processes: bool = False, table: FieldTable | None = None) -> dict:
    """The classic Grafana dashboard model for what ``counters`` makes the collector export.

    ``aggregations`` is the collector's --aggregations (window families on
    every numeric row).  ``mig`` adds the "MIG instances" row (per-instance
    framebuffer and profiling panels) and a ``gpu_instance`` variable: a
    counters file cannot tell whether the GPUs are split, and on a node
    without instances those panels would only say "No data".  Rows of link,
    switch and CPU fields get their level's row whenever the file has them.
    ``processes`` adds the "Processes and idle time" row, for a collector
    run with --processes (the file cannot tell that either): top processes
    by framebuffer and SM share, and the GPUs and owners whose idle time grew.
    With ``datasource_uid`` the panels use that Prometheus data source;
    without, a ``datasource`` variable chooses one.
    """
    aggregations = tuple(aggregations)
    unknown = [a for a in aggregations if a not in AGGREGATIONS]
    if unknown:
        raise ValueError(f"unknown aggregation {unknown[0]!r}; expected {', '.join(AGGREGATIONS)}")
    table = table if table is not None else field_table()
    fixed = datasource_uid is not None
    datasource = {"type": "prometheus", "uid": datasource_uid if fixed else DATASOURCE_VARIABLE}
    rows = _series_rows(counters, aggregations, table)
    gpu_family = _gpu_family(rows, table)
    sections: dict[str, list[Panel]] = {section: [] for section in SECTIONS}
    sections[OVERVIEW] = _overview(rows, gpu_family, table)
    for row in rows:
        panel = _exporter_panel(row) if row.counter.exporter is not None else _field_panel(row)
        sections[row.style.section].append(panel)
    percent = _framebuffer_percent(rows, table)
    if percent is not None:
        sections[FRAMEBUFFER].insert(0, percent)
    mig_family = _mig_family(rows, table) if mig else None
    if mig_family is not None:
        sections[MIG_INSTANCES] = _mig_panels(rows, table)
    if processes:
        sections[PROCESSES] = process_panels()
    sections[COLLECTOR] = _collector_panels()
    source = os.path.basename(counters.path)
    description = f"Generated by {PROG} from {source}"
    options = ([f"--aggregations {','.join(aggregations)}"] if aggregations else []) + (["--mig"] if mig else []) + (
        ["--processes"] if processes else [])
    if options:
        description += " with " + " ".join(options)
    return {
        "id": None, "uid": uid, "title": title, "description": description + ".",
        "tags": ["gpu", "dcgm", "dcgm-collector"], "timezone": "browser", "editable": True,
        "graphTooltip": 1, "time": {"from": "now-1h", "to": "now"}, "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION, "version": 1, "links": [],
        "annotations": {"list": []},
        "templating": {"list": _variables(gpu_family, datasource, fixed, mig_family)},
        "panels": _layout(list(sections.items()), datasource),
    }


def dashboard_json(dashboard: dict) -> str:
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


# ---- command line --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Write a Grafana dashboard (JSON) for the metrics a counters file exports.")
    parser.add_argument("-f", "--collectors", metavar="FILE",
                        help="counters file, as given to the collector (default: the shipped default-counters.csv)")
    parser.add_argument("--aggregations", type=aggregations_argument, default=(), metavar="LIST",
                        help="the collector's --aggregations (min,max,avg), if it runs with any")
    parser.add_argument("--mig", action="store_true",
                        help="add per-instance panels for GPUs split into MIG instances, and a GPU instance variable")
    parser.add_argument("--processes", action="store_true",
                        help="add the processes and idle time row, for collectors run with --processes")
    parser.add_argument("--title", default=DEFAULT_TITLE, help=f"dashboard title (default: {DEFAULT_TITLE})")
    parser.add_argument("--uid", default=DEFAULT_UID, help=f"dashboard uid (default: {DEFAULT_UID})")
    parser.add_argument("--datasource-uid", metavar="UID",
                        help="use this Prometheus data source instead of a data source variable")
    parser.add_argument("-o", "--output", metavar="PATH", help="write here instead of standard output")
    parser.add_argument("--check", metavar="PATH",
                        help="exit 1 if PATH differs from what would be generated, else 0; writes nothing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    path = args.collectors if args.collectors is not None else default_counters_path()
    try:
        counters = load_counters(path)
    except CountersError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as error:
        print(f"{PROG}: error: {path}: cannot read counters file: {error.strerror or error}", file=sys.stderr)
        return EXIT_ERROR
    text = dashboard_json(build_dashboard(counters, title=args.title, uid=args.uid,
                                          datasource_uid=args.datasource_uid, aggregations=args.aggregations,
                                          mig=args.mig, processes=args.processes))
    if args.check is not None:
        return _check(args.check, text)
    if args.output is None:
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    return EXIT_OK


def _check(path: str, text: str) -> int:
    try:
        with open(path, encoding="utf-8") as handle:
            current = handle.read()
    except OSError as error:
        print(f"{PROG}: error: {path}: {error.strerror or error}", file=sys.stderr)
        return EXIT_ERROR
    if current != text:
        print(f"{PROG}: {path} is out of date; regenerate it with the same options and -o {path}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK

