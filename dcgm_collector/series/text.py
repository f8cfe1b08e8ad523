"""Pieces of the Prometheus text format and OpenMetrics: escaping, label text, family headers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Header", "escape_help", "escape_label_value", "family_types", "label_text"]


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str, openmetrics: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if openmetrics else text


def label_text(pairs: Sequence[tuple[str, str]]) -> str:
    return ",".join(f'{key}="{escape_label_value(value)}"' for key, value in pairs)


def family_types(prom_type: str, name: str, exporter: bool = False) -> tuple[str, str]:
    """(text format type, OpenMetrics type) of a counters-file row."""
    if prom_type == "counter":
        return "counter", "counter" if name.endswith("_total") else "unknown"
    if prom_type == "gauge" or exporter:
        return "gauge", "gauge"
    return "untyped", "unknown"


@dataclass(frozen=True)
class Header:
    text: str
    openmetrics: str

    @classmethod
    def of(cls, name: str, help_text: str, text_type: str, om_type: str) -> Header:
        om_name = name[: -len("_total")] if om_type == "counter" else name
        return cls(f"# HELP {name} {escape_help(help_text)}\n# TYPE {name} {text_type}\n",
                   f"# HELP {om_name} {escape_help(help_text, True)}\n# TYPE {om_name} {om_type}\n")

    def get(self, openmetrics: bool) -> str:
        return self.openmetrics if openmetrics else self.text
