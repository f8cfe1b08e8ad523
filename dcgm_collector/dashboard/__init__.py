"""The ``dcgm-collector dashboard`` command: a Grafana dashboard for a counters file."""

from dcgm_collector.dashboard.generator import build_dashboard, dashboard_json, main

__all__ = ["build_dashboard", "dashboard_json", "main"]
