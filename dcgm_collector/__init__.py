"""dcgm-collector: a DCGM-backed GPU telemetry collector for Prometheus.

The DCGM binding lives in :mod:`dcgm_collector.dcgm`; the simulated
libdcgm.so.4 that ships with the package in :mod:`dcgm_collector.engine`.
"""

__version__ = "0.1.0"
