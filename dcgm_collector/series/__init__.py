"""The neutral stage between collection and the outputs.

The collect stage fills rings and counts; the outputs (/metrics, the history
API, remote write, the flight recorder, the self-metrics) read them.  Neither
side knows the other: they meet here, in types both may import.

* :mod:`.view`: :class:`~.view.TargetView`, what one target's sampler holds, read-only
  (its rings, events, counts, health, label values, P2P matrix and entities);
  the collect stage makes one per sampler (dcgm_collector.collect.view).
* :mod:`.stats`: the sampler's counts and DCGM's health checks as outputs read them.
* :mod:`.samples`: the sample model, every served series with its name, labels and ring column.
* :mod:`.text`: pieces of the Prometheus text format and OpenMetrics every output writes with.
* :mod:`.registry`: the families /metrics writes and the targets the outputs read, which every
  output registers with.
* :mod:`.triggers`: the flight recorder's triggers, as the collect stage's trigger reader hands them over.
"""
