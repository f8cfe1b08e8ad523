"""The sampler's readers: each periodic side read of a sampler, besides the drain of DCGM's sample cache.

A reader is one thing a sampler reads now and then, behind one small
interface (:class:`Reader`, in ``reader.py``):

- ``name``: how logs and ``SamplerStats.reader_failures`` name it;
- how often: ``every_s`` (seconds of the sampler's clock; 0 means every tick)
  or ``every_ticks`` (every N ticks);
- ``start(now)``: called once when the sampler starts (by default the first
  read), ``due(now)``: whether the tick at monotonic time ``now`` reads,
  ``read(now)``: the read, returning False when a DCGM call failed (counted
  with ``Reader.count``; the tick then is not good), ``close()``: remove what
  it made in DCGM when the sampler stops;
- what it writes: the sampler's state objects (``Sampler.labels``, ``p2p``,
  ``health``, ``stats``), replaced whole, never mutated, because other threads
  read them.  Time comes from ``Sampler.clock`` (dcgm_collector.clock), never
  from the time module, so tests run it on a manual clock.

A tick drains DCGM, then runs each due reader in order.  A reader that raises
is logged once per cause, counted (``SamplerStats.tick_failures`` and
``reader_failures[name]``), and the other readers and the tick go on; a
reader's DcgmError is counted by status code as the sampler's own are.  Once
the hostengine connection is lost only the readers with ``reads_dcgm`` False
run.

The sampler's own readers are :data:`DEFAULT_READERS`, factories that make a
sampler's reader or None when its counters do not ask for it: labels, P2P
status, health checks, the engine's field costs, lost-GPU detection.  More come
in through ``Sampler(readers=...)`` (a target passes its own to each of its
samplers): the flight recorder's triggers (triggers.py) and the processes of --processes
(processes.py, its NVML calls in nvml.py), both injected by app.py.
Adding one (an early-warning detector) is one module
here with a Reader subclass, and a factory passed in; the tick does not change::

    class Throttling(Reader):
        name = "throttling"
        every_s = 2.0

        def read(self, now: float) -> bool:
            ...   # read from self.sampler, write the result on the sampler's state
            return True

    Sampler(handle, counters, options, readers=[Throttling])
"""

from __future__ import annotations

from dcgm_collector.collect.readers.field_costs import FieldCostsReader
from dcgm_collector.collect.readers.health import HealthReader
from dcgm_collector.collect.readers.labels import LabelsReader
from dcgm_collector.collect.readers.lost_gpus import LostGpusReader
from dcgm_collector.collect.readers.p2p import P2PReader
from dcgm_collector.collect.readers.reader import Reader, ReaderFactory, run_readers, start_readers
from dcgm_collector.collect.readers.triggers import TriggerReader, TriggersSeen

__all__ = ["DEFAULT_READERS", "FieldCostsReader", "HealthReader", "LabelsReader", "LostGpusReader", "P2PReader",
           "Reader", "ReaderFactory", "TriggerReader", "TriggersSeen", "run_readers", "start_readers"]

# In the order a tick runs them: the health check before the lost-GPU search, as the tick always did,
# and a target's own readers (the triggers) after all of these, so that they see this tick's results.
DEFAULT_READERS: tuple[ReaderFactory, ...] = (
    LabelsReader.for_sampler,
    P2PReader.for_sampler,
    HealthReader.for_sampler,
    FieldCostsReader.for_sampler,
    LostGpusReader.for_sampler,
)
