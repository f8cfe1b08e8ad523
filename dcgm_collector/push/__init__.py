"""Outputs that ship the collector's samples somewhere other than a scrape: Prometheus remote write and
the flight recorder's files."""
