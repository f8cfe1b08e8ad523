"""A target: one source of DCGM samples, and the state machine that keeps it collecting.

A target is the embedded engine, or one nv-hostengine named by -r.  It owns
its handle, its sampler (and so its rings), the GPUs it found and the name
its series are labelled with; the exposition reads whatever the target holds
at the moment of a scrape.

A remote target is looked after by a supervisor thread of its own::

    connecting --built--> up --connection lost or timed out--> down --backoff--> connecting ...
         `--connect or build failed--> down --backoff--> connecting ...

DCGM never reconnects by itself (api-facts §4.2): a handle that answered
CONNECTION_NOT_VALID or TIMEOUT stays dead, and the hostengine dropped the
groups, field groups and watches of that connection.  So the supervisor
stops the sampler, disconnects, waits (capped, jittered, exponential), then
connects again, rediscovers the GPUs and builds a new sampler.  Meanwhile the
rings stay as they were: /metrics keeps serving what was collected, marked
stale by ``dcgm_collector_up 0`` and a growing sample age.  When the GPUs
come back the same (ids and UUIDs) the new sampler resumes the old one: same
rings, same cursors, so a hostengine that kept its cache gives no duplicate
and no gap.  When they changed, the new sampler has rings of its own and the
old series go away.

A failed connect at start-up is one more "down": the collector serves its
own metrics and /health says why.  An embedded target's start-up works or
fails the collector's start-up, except when DCGM answers INIT_ERROR (the
driver not loaded yet, as while it is installed or reloaded; NVML's init
failed): then a supervisor retries with the same backoff as for a lost
hostengine, and the target runs unsupervised once it is up.

Threads: at most two per remote target at any time (the supervisor and the
current sampler); a sampler is joined before the next one starts, and each
dead handle is closed before a new one is opened.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dcgm_collector.catalog.counters import CounterSet
from dcgm_collector.collect.discovery import DiscoveryError, Topology, discover
from dcgm_collector.collect.options import SamplingOptions
from dcgm_collector.collect.readers import ReaderFactory
from dcgm_collector.collect.sampler import Sampler, SamplerStats
from dcgm_collector.dcgm import DcgmError, GpuInfo, Handle
from dcgm_collector.dcgm.errors import status_name
from dcgm_collector.ext._native import lib
from dcgm_collector.model import DeviceSelection

__all__ = ["RETRY_START_CODES", "Backoff", "Generation", "State", "Target", "TargetError", "Topology"]

log = logging.getLogger(__name__)

# A hostengine on the same rack answers in milliseconds; DCGM's own default
# (5 s, retried every 50 ms inside the call) only slows down shutdown.
CONNECT_TIMEOUT_MS = 2000
# Statuses of an embedded start worth retrying: DCGM (or its NVML) could not initialise,
# e.g. the driver is not loaded yet; anything else is a configuration the user must fix.
RETRY_START_CODES = frozenset({int(lib.DCGM_ST_INIT_ERROR)})
# How long stop() waits for a supervisor stuck in a DCGM call.
STOP_TIMEOUT_S = CONNECT_TIMEOUT_MS / 1000 + 3.0


class State(enum.Enum):
    CONNECTING = "connecting"
    UP = "up"
    DOWN = "down"


ALL_DEVICES = DeviceSelection("f")
TargetError = DiscoveryError   # what a target raises when its node lacks what -d asks for


@dataclass(frozen=True)
class Generation:
    """What one connection built; replaced whole, never mutated (readers take it without a lock)."""

    handle: Handle
    sampler: Sampler
    exposition: Any
    topology: Topology
    started: float                     # time.time() it went up

    @property
    def series(self) -> int:
        """Series the sampler keeps in its rings."""
        return sum(ring.n_series for ring in self.sampler.rings.values())

    @property
    def ring_bytes(self) -> int:
        """Memory of the sampler's rings and its event ring."""
        return sum(ring.nbytes for ring in self.sampler.rings.values()) + self.sampler.events.nbytes

    def figures(self) -> str:
        """What this connection samples, for the log line of a (re)connect: GPUs, series, ring memory."""
        return (f"{self.topology.gpus_line()}; {self.series} sampled series in {self.ring_bytes / 2**20:.1f} MiB "
                "of rings")


class Backoff:
    """Capped exponential delays with jitter: first_s, first_s*factor, ... up to cap_s, each times 1±jitter."""

    def __init__(self, first_s: float = 0.5, cap_s: float = 10.0, factor: float = 2.0, jitter: float = 0.2,
                 rng: random.Random | None = None) -> None:
        if not 0 < first_s <= cap_s or factor < 1 or not 0 <= jitter < 1:
            raise ValueError("need 0 < first_s <= cap_s, factor >= 1 and 0 <= jitter < 1")
        self.first_s, self.cap_s, self.factor, self.jitter = first_s, cap_s, factor, jitter
        self._rng = rng or random.Random()
        self.failures = 0

    def next(self) -> float:
        # the exponent stops growing once the cap is reached, so it never overflows
        base = min(self.cap_s, self.first_s * self.factor ** min(self.failures, 64))
        self.failures += 1
        return base * (1.0 + self._rng.uniform(-self.jitter, self.jitter))

    def reset(self) -> None:
        self.failures = 0

    @property
    def longest_s(self) -> float:
        return self.cap_s * (1.0 + self.jitter)


class _Stopping(Exception):
    """The target is stopping: whatever was being built is given up."""


class _Failed(Exception):
    """One attempt to connect and build failed; str() is the reason /health shows."""


Connect = Callable[[], Handle]
Expose = Callable[[Sampler, tuple[GpuInfo, ...]], Any]


class Target:
    """One DCGM source: its handle, sampler, GPUs and name, kept collecting across reconnects.

    ``connect()`` opens a handle; on each connection the target discovers the
    GPUs ``devices`` selects and the counters they support (TargetError or
    DcgmError when it cannot); ``expose(sampler, gpus)`` makes the exposition
    of one sampler.  ``sampling`` goes to every Sampler (intervals, retention).
    ``address`` is None for the embedded engine, which is not supervised.
    ``readers`` go to every Sampler too: periodic side reads of the target's own (collect.readers).
    """

    def __init__(self, name: str, counters: CounterSet, *, connect: Connect, expose: Expose,
                 devices: DeviceSelection = ALL_DEVICES, sampling: SamplingOptions | None = None,
                 address: str | None = None,
                 switch_devices: DeviceSelection = ALL_DEVICES, cpu_devices: DeviceSelection = ALL_DEVICES,
                 backoff: Backoff | None = None, readers: Sequence[ReaderFactory] = ()) -> None:
        self.name = name
        self.address = address
        self.remote = address is not None
        self.counters = counters
        self._connect = connect
        self.devices = devices
        self.switch_devices = switch_devices   # -s: the NvSwitches and their links
        self.cpu_devices = cpu_devices         # -p: the CPUs and their cores
        self._expose = expose
        self.sampling = sampling if sampling is not None else SamplingOptions()
        self.backoff = backoff or Backoff()
        self.readers = tuple(readers)
        self.stats = SamplerStats()        # shared by every sampler of this target: counts go on
        self.reconnects = 0                # connections made after a lost one
        self.state = State.CONNECTING
        self.reason = f"connecting to the hostengine at {address}" if self.remote else "starting DCGM"
        self.generation: Generation | None = None
        self._connected_once = False
        self._lock = threading.RLock()     # one change of generation at a time (supervisor, reload, stop)
        self._wake = threading.Event()     # a sampler lost its connection, a rebuild is due, or stop
        self._rebuild = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"Target({self.name!r}, {self.address or 'embedded'}, {self.state.value})"

    # -- what readers use (any thread)
    @property
    def exposition(self) -> Any:
        generation = self.generation
        return None if generation is None else generation.exposition

    def health(self, now_s: float | None = None) -> tuple[bool, str]:
        """(ok, reason): ok while connected and the newest sample is fresh."""
        generation = self.generation
        if self.state is not State.UP or generation is None:
            return False, self.reason
        code = generation.sampler.connection_lost
        if code is not None and self.remote:
            # the sampler saw the connection die; the supervisor is about to mark the target down
            # with this same reason, and until then a failed read would be the wrong story
            return False, f"{self._drop_reason(code)}; reconnecting"
        return generation.exposition.health(now_s)

    # -- life cycle
    def start(self) -> None:
        """Remote: start the supervisor, which connects (start() does not wait for it).

        Embedded: connect and build now; TargetError or DcgmError if that fails.
        """
        if self._thread is not None or self._stop.is_set():
            raise RuntimeError("a Target starts once")
        if not self.remote:
            try:
                handle = self._connect()
            except DcgmError as error:
                if error.code not in RETRY_START_CODES:
                    raise
                self._count(error)
                self._failed(f"cannot start DCGM embedded: {error}")
                self._start_supervisor(first_wait_s=self.backoff.next())
                return
            try:
                with self._lock:
                    self._build(handle, self.counters)
            except BaseException:
                handle.close()
                raise
            self._connected_once = True
            self._set_state(State.UP, "OK")
            return
        self._start_supervisor()

    def _start_supervisor(self, first_wait_s: float = 0.0) -> None:
        def run() -> None:
            if not self._stop.wait(first_wait_s):
                self._supervise()

        self._thread = threading.Thread(target=run, name=f"dcgm-target-{self.name}", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Tell the supervisor to stop, without waiting (stop() waits); lets several targets stop at once."""
        self._stop.set()
        self._wake.set()

    def stop(self) -> None:
        """Stop the supervisor and the sampler, close the handle.  The rings stay readable."""
        self.request_stop()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_TIMEOUT_S)
            if thread.is_alive():
                log.warning("%s: the supervisor did not stop within %.1f s (a DCGM call is stuck)",
                            self.name, STOP_TIMEOUT_S)
        with self._lock:
            generation = self.generation
            if generation is not None:
                generation.sampler.stop()
                generation.handle.close()

    def reload(self, counters: CounterSet) -> bool:
        """New counters: a new sampler on the same connection; on failure the previous counters go on."""
        with self._lock:
            generation = self.generation
            if self.state is not State.UP or generation is None:
                self.counters = counters    # the next connection uses them
                return True
            try:
                self._build(generation.handle, counters, stop_first=generation.sampler)
            except _Stopping:
                return False
            except Exception as error:  # whatever broke, the target must keep collecting
                log.error("%sreload failed: %s", self._prefix(), error,
                          exc_info=not isinstance(error, (DcgmError, TargetError)))
                if not generation.sampler.running:
                    self._restore(generation)
                return False
            self.counters = counters
            return True

    def _restore(self, failed: Generation) -> None:
        log.info("%srestarting the previous counters", self._prefix())
        try:
            self._build(failed.handle, failed.topology.counters)
        except Exception as error:
            if self.remote:
                log.error("%scannot restart the previous counters either (%s); reconnecting", self._prefix(), error)
                self._rebuild = True
                self._wake.set()
            else:
                log.error("cannot restart the previous counters either (%s); serving the last samples", error)

    def _prefix(self) -> str:
        return f"{self.name}: " if self.remote else ""

    # -- building one generation
    def _build(self, handle: Handle, counters: CounterSet, stop_first: Sampler | None = None) -> None:
        """Discover, then start a sampler and its exposition on ``handle``; the caller holds the lock.

        ``stop_first`` (the running sampler of the same handle) is stopped before the new
        one watches: DCGM keys watches by connection, so its unwatch would remove the new ones.
        """
        topology = discover(handle, counters, self.devices, self.switch_devices, self.cpu_devices)
        previous = self.generation
        resume = None
        if (previous is not None and previous.topology.identity == topology.identity
                and previous.topology.levels == topology.levels):
            resume = previous.sampler
        elif previous is not None:
            log.warning("%sthe GPUs changed (%s -> %s): new series for the new GPUs", self._prefix(),
                        _describe(previous.topology), _describe(topology))
        sampler = Sampler(handle, topology.counters, self.sampling, gpu_ids=topology.gpu_ids,
                          instances=topology.instances, levels=topology.levels, stats=self.stats,
                          resume=resume, on_connection_lost=self._lost if self.remote else None,
                          readers=self.readers)
        if stop_first is not None:
            stop_first.stop()
            # A DCGM call that outlasts stop() still holds the old sampler's thread, and a ring has one
            # writer: wait for the call to return (a reload runs on a thread of its own, so only it waits).
            while not stop_first.join(1.0):
                if self._stop.is_set():
                    raise _Stopping()
        sampler.start()
        try:
            exposition = self._expose(sampler, topology.gpus)
        except BaseException:
            sampler.stop()
            raise
        self.generation = Generation(handle, sampler, exposition, topology, time.time())

    # -- the supervisor (remote targets)
    def _lost(self, status: int) -> None:
        """Called by the sampler's thread, which then ends."""
        self._wake.set()

    def _supervise(self) -> None:
        while not self._stop.is_set():
            if self.state is not State.UP:
                if not self._attempt():
                    self._stop.wait(self.backoff.next())
                continue
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            generation = self.generation
            if generation is None:
                continue
            code = generation.sampler.connection_lost
            if code is None and not self._rebuild:
                continue
            self._rebuild = False
            self._drop(generation, code)
            self._stop.wait(self.backoff.next())

    def _attempt(self) -> bool:
        """Connect and build once; True when up."""
        if not self.remote:
            return self._attempt_embedded()
        self._set_state(State.CONNECTING, self.reason if self._connected_once else
                        f"connecting to the hostengine at {self.address}")
        try:
            handle = self._connect()
        except (DcgmError, ValueError, OSError) as error:
            self._count(error)
            return self._failed(f"cannot reach hostengine at {self.address}: {error}")
        if not self._build_new(handle, f"hostengine at {self.address}"):
            return False
        # the start-up lines were written before any connection: here are the figures they could not give
        if self._connected_once:
            self.reconnects += 1
        log.info("%s%s to the hostengine at %s: %s", self._prefix(),
                 "reconnected" if self._connected_once else "connected", self.address,
                 self.generation.figures())   # type: ignore[union-attr]
        self._connected_once = True
        self._set_state(State.UP, "OK")
        return True

    def _attempt_embedded(self) -> bool:
        """Start the embedded engine once more (it answered INIT_ERROR before); True when up."""
        try:
            handle = self._connect()
        except DcgmError as error:
            self._count(error)
            return self._failed(f"cannot start DCGM embedded: {error}")
        except Exception as error:   # the opener's own refusal of another status: say it, keep trying
            return self._failed(str(error))
        if not self._build_new(handle, "DCGM embedded"):
            return False
        log.info("DCGM embedded started after %d failed attempts: %s", self.backoff.failures,
                 self.generation.figures())   # type: ignore[union-attr]
        self._connected_once = True
        self.backoff.reset()
        self._set_state(State.UP, "OK")
        return True

    def _build_new(self, handle: Handle, what: str) -> bool:
        """A generation on a freshly opened handle; False (the handle closed) when stopping or it fails."""
        try:
            with self._lock:
                if self._stop.is_set():
                    handle.close()
                    return False
                self._build(handle, self.counters)
        except (DcgmError, TargetError, RuntimeError, ValueError) as error:
            self._count(error)
            handle.close()
            return self._failed(f"{what}: cannot start sampling: {error}")
        except BaseException:
            handle.close()
            raise
        return True

    def _failed(self, reason: str) -> bool:
        first = self.backoff.failures == 0   # later failures of the same outage go to the debug log
        self._set_state(State.DOWN, reason)
        (log.warning if first else log.debug)("%s%s; retrying", self._prefix(), reason)
        return False

    def _drop(self, generation: Generation, code: int | None) -> None:
        """The connection is dead (or its sampler could not be rebuilt): stop, disconnect, mark down."""
        reason = self._drop_reason(code)
        with self._lock:
            self._set_state(State.DOWN, f"{reason}; reconnecting")
            generation.sampler.stop()
            generation.handle.close()
        log.warning("%s%s; serving the samples collected so far, reconnecting", self._prefix(), reason)
        # a connection that delivered data was a good one: start the delays from the shortest again
        good = self.stats.last_good_tick_time
        if good is not None and good >= generation.started:
            self.backoff.reset()

    def _drop_reason(self, code: int | None) -> str:
        what = "lost the connection to" if code is not None else "rebuilding the sampler of"
        reason = f"{what} the hostengine at {self.address}"
        if code is not None:
            reason += f": {status_name(code)}"
        return reason

    def _set_state(self, state: State, reason: str) -> None:
        # reason first: a reader that sees the new state sees its reason
        self.reason = reason
        self.state = state

    def _count(self, error: BaseException) -> None:
        if isinstance(error, DcgmError):
            self.stats.count_error(error.code)


def _describe(topology: Topology) -> str:
    gpus = f"{len(topology.gpus)} GPUs" if topology.gpus else "no GPU"
    return f"{gpus}, {len(topology.instances)} MIG GPU instances" if topology.instances else gpus
