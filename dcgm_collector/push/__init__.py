"""Pushing samples out of the collector: Prometheus remote write."""
