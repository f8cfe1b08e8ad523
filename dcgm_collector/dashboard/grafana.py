"""The pieces of Grafana's classic dashboard JSON model the generator writes: panels and their queries.

A :class:`Panel` is everything about a panel but its id and position, which
the generator's layout gives it; ``Panel.to_json`` writes the panel as
Grafana's JSON model has it, styled for its kind (time series, stat, state
timeline, table).  Kept apart from the generator so that the modules that
make panels for one part of the dashboard (per-process series, idle time)
build them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GRAPH", "GRID_WIDTH", "STAT", "TABLE", "Panel", "Target"]

GRID_WIDTH = 24
GRAPH = (12, 8)     # width, height in grid units (24 columns, 30 px rows)
STAT = (6, 4)
TABLE = (12, 8)
# the column Grafana gives an instant query's value in a table
VALUE_FIELD = "Value"


@dataclass
class Target:
    expr: str
    legend: str = ""
    table: bool = False   # an instant query shown as a table (one row per series)

    def to_json(self, ref_id: str, datasource: dict) -> dict:
        target = {"refId": ref_id, "datasource": datasource, "expr": self.expr, "legendFormat": self.legend}
        if self.table:
            target.update(instant=True, range=False, format="table")
        else:
            target.update(instant=False, range=True, format="time_series")
        return target


@dataclass
class Panel:
    """A panel before layout: everything but its id and position."""
    kind: str                      # Grafana panel type
    title: str
    targets: list[Target]
    unit: str = "short"
    description: str = ""
    min: float | None = None
    max: float | None = None
    thresholds: tuple[tuple[float, str], ...] = ()
    threshold_line: bool = False
    stepped: bool = False
    mappings: list[dict] = field(default_factory=list)
    size: tuple[int, int] = GRAPH
    base_color: str = "green"
    # a table's label columns, in this order (labels a series lacks stay out)
    columns: tuple[str, ...] = ()
    # a table's value column, under this header, sorted largest first; None: no value column
    value_column: str | None = None

    def to_json(self, panel_id: int, grid: dict, datasource: dict) -> dict:
        defaults: dict = {"unit": self.unit, "color": {"mode": "palette-classic"}}
        if self.min is not None:
            defaults["min"] = self.min
        if self.max is not None:
            defaults["max"] = self.max
        defaults["thresholds"] = {"mode": "absolute", "steps": [{"color": self.base_color, "value": None}] + [
            {"color": color, "value": value} for value, color in self.thresholds]}
        if self.mappings:
            defaults["mappings"] = self.mappings
        panel = {"id": panel_id, "type": self.kind, "title": self.title, "description": self.description,
                 "datasource": datasource, "gridPos": grid,
                 "fieldConfig": {"defaults": defaults, "overrides": []},
                 "options": {}, "targets": [t.to_json(_ref_id(i), datasource) for i, t in enumerate(self.targets)]}
        PANEL_STYLERS[self.kind](self, panel)
        return panel


def _ref_id(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _style_timeseries(panel: Panel, out: dict) -> None:
    defaults = out["fieldConfig"]["defaults"]
    defaults["custom"] = {
        "drawStyle": "line", "lineInterpolation": "stepAfter" if panel.stepped else "linear",
        "lineWidth": 1, "fillOpacity": 0, "showPoints": "never", "spanNulls": False,
        "thresholdsStyle": {"mode": "line" if panel.threshold_line else "off"},
    }
    out["fieldConfig"]["overrides"] = [{
        # the window series (legend "... max" / "... min") dashed, beside the solid last value
        "matcher": {"id": "byRegexp", "options": ".* (max|min)$"},
        "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}],
    }]
    out["options"] = {
        "legend": {"showLegend": True, "displayMode": "table", "placement": "bottom",
                   "calcs": ["lastNotNull", "max"]},
        "tooltip": {"mode": "multi", "sort": "desc"},
    }


def _style_stat(panel: Panel, out: dict) -> None:
    out["fieldConfig"]["defaults"]["color"] = {"mode": "thresholds"}
    out["options"] = {
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
        "colorMode": "value", "graphMode": "area", "justifyMode": "auto", "orientation": "auto",
        "textMode": "auto",
    }


def _style_state_timeline(panel: Panel, out: dict) -> None:
    out["fieldConfig"]["defaults"]["color"] = {"mode": "thresholds"}
    out["fieldConfig"]["defaults"]["custom"] = {"fillOpacity": 80, "lineWidth": 0}
    out["options"] = {"mergeValues": True, "showValue": "never", "alignValue": "left", "rowHeight": 0.9,
                      "legend": {"showLegend": False}, "tooltip": {"mode": "single", "sort": "none"}}


def _style_table(panel: Panel, out: dict) -> None:
    out["options"] = {"showHeader": True, "cellHeight": "sm", "footer": {"show": False}}
    names = list(panel.columns)
    if panel.value_column is None:
        out["transformations"] = [{"id": "filterFieldsByName", "options": {"include": {"names": names}}}]
        return
    # Grafana puts the labels in alphabetical order and the value last: put the
    # columns in the panel's order and name the value after what it is
    names.append(VALUE_FIELD)
    out["transformations"] = [
        {"id": "filterFieldsByName", "options": {"include": {"names": names}}},
        {"id": "organize", "options": {"excludeByName": {}, "indexByName": {n: i for i, n in enumerate(names)},
                                       "renameByName": {VALUE_FIELD: panel.value_column}}},
    ]
    out["options"]["sortBy"] = [{"displayName": panel.value_column, "desc": True}]


PANEL_STYLERS = {"timeseries": _style_timeseries, "stat": _style_stat,
                 "state-timeline": _style_state_timeline, "table": _style_table}
