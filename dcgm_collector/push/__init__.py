"""Outputs that ship the collector's samples somewhere other than a scrape: the flight recorder's files."""
