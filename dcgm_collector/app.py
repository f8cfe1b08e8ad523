"""The running collector: counters file, HTTP listener, DCGM library, targets, signals.

Start-up order: counters file -> HTTP listener -> libdcgm -> targets.  Which
libdcgm, and so where the readings come from and why, is
dcgm_collector.sources' choice; the log, /health and build_info name it.  A
target (dcgm_collector.collect.target) is the embedded engine or one -r
hostengine: handle -> GPUs -> profiling support -> sampler -> exposition.
The listener comes early so that a busy port fails before DCGM is touched;
until the targets exist /metrics and /health answer 503.  The embedded engine
failing to start is fatal, as it is for dcgm-exporter; a hostengine that
cannot be reached is not: its target keeps trying (and reconnects whenever a
connection is lost) while /health says why.

/metrics, the history API, remote write and the flight recorder all go
through one registry (dcgm_collector.series.registry): the exposition, remote
write and the recorder register their families with it, and the outputs that
read samples find the targets' views and sample models there.

SIGHUP re-reads the counters file (reload()): a bad file is logged in one
line and the running configuration keeps serving; a good one gets a new
sampler and exposition, swapped in at once.  SIGUSR2 starts a flight
recording of every GPU when --recorder-dir is on (record_now()).  Signals,
threads and the exit deadline are dcgm_collector.lifecycle's.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter as Tally
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from dcgm_collector import __version__, dcgm, engine
from dcgm_collector.attribution.checkpoint import DeviceCheckpoint
from dcgm_collector.attribution.copies import GpuAttribution
from dcgm_collector.attribution.hpc import HpcJobMapper
from dcgm_collector.attribution.processes import ProcessAttribution
from dcgm_collector.catalog.counters import CountersError, CounterSet, load_counters
from dcgm_collector.collect.readers.idle import IdleReader
from dcgm_collector.collect.readers.nvml import Nvml
from dcgm_collector.collect.readers.processes import ProcessReader
from dcgm_collector.collect.readers.triggers import TriggerReader
from dcgm_collector.collect.readers.warnings import WarningReader
from dcgm_collector.collect.sampler import Sampler
from dcgm_collector.collect.servable import load_warnings
from dcgm_collector.collect.target import CONNECT_TIMEOUT_MS, RETRY_START_CODES, Target, TargetError
from dcgm_collector.collect.view import target_view
from dcgm_collector.config import Config, hostname_label
from dcgm_collector.dcgm import DcgmError, Handle, Library
from dcgm_collector.expose import history
from dcgm_collector.expose.exposition import Exposition, ExpositionOptions
from dcgm_collector.expose.multi import MultiExposition
from dcgm_collector.expose.overview import gpu_readings
from dcgm_collector.files import size_text
from dcgm_collector.model import EntityType, GpuInfo, id_ranges
from dcgm_collector.series.idle import IDLE_FAMILIES
from dcgm_collector.series.processes import PROCESS_FAMILIES
from dcgm_collector.series.registry import Registry
from dcgm_collector.series.warnings import WARNING_FAMILIES
from dcgm_collector.serve import malloc
from dcgm_collector.serve.admission import Admission
from dcgm_collector.serve.landing import Overview
from dcgm_collector.serve.server import ListenError, MetricsServer, Reply, Request, Route, Unavailable
from dcgm_collector.serve.singleflight import SingleFlight
from dcgm_collector.sources import Source, SourceError, load_source, process_nvml_library

if TYPE_CHECKING:   # optional features, imported when they are on (see _read_web_config, _make_recorder, ...)
    from dcgm_collector.push.recorder import Recorder
    from dcgm_collector.push.remote_write import RemoteWriter
    from dcgm_collector.report.served import ReportPages
    from dcgm_collector.serve.webconfig import WebConfig

__all__ = ["Collector", "STOP_GRACE_S", "StartupError", "library_version"]

log = logging.getLogger("dcgm_collector")
JSON_TYPE = "application/json"
# how the start-up lines name the entities sampled beside the GPUs: one, several
_LEVEL_NAMES = {EntityType.LINK: ("NvLink", "NvLinks"), EntityType.SWITCH: ("NvSwitch", "NvSwitches"),
                EntityType.CPU: ("CPU", "CPUs"), EntityType.CPU_CORE: ("CPU core", "CPU cores")}


def _api_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    """A JSON API's error in Prometheus' shape, on one line."""
    problem = {"status": "error", "errorType": kind, "error": message}
    return Reply(status, json.dumps(problem).encode() + b"\n", JSON_TYPE, headers=headers or {})


def _recording_name(request: Request) -> tuple[str, Reply | None]:
    """The ``name`` a recording route is asked for, or its 400 for a parameter it does not take."""
    unknown = sorted(set(request.query) - {"name"})
    if unknown:
        return "", Reply(400, f"400 Bad Request: {request.path} takes only name=, not {unknown[0]!r}\n".encode())
    return request.query.get("name", [""])[-1], None


def _no_recording(name: str) -> Reply:
    return Reply(404, f"404 Not Found: no recording {name!r} in the recorder's folder\n".encode())


def _entity_count(level: EntityType, n: int) -> str:
    return f"{n} {_LEVEL_NAMES[level][n != 1]}"

# How long SIGTERM waits for DCGM to stop cleanly before the process exits anyway: short enough
# that the whole exit stays well within 2 s, long enough for a healthy DCGM to stop.
STOP_GRACE_S = 1.0


def with_notes(answer: tuple[bool, str], *notes: str | None) -> tuple[bool, str]:
    """A healthy /health answer with each failing output's note appended ("OK; ..."): still 200, but said."""
    ok, reason = answer
    said = [note for note in notes if note]
    if not ok or not said:
        return answer
    earlier = [reason.removeprefix("OK; ")] if reason.startswith("OK; ") else []   # a lost GPU, say
    return True, "OK; " + "; ".join(earlier + said)


class StartupError(Exception):
    """Start-up cannot go on; str() is the one line the user sees."""


class Collector:
    """Owns the server and the targets (the embedded engine, or one per -r hostengine)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.server: MetricsServer | None = None
        self.library: Library | None = None
        self.library_version = "unknown"
        self.source: Source | None = None   # what the readings come from and why, once the library is loaded
        self.targets: list[Any] = []
        self.exposition: Any = None     # MultiExposition over the targets, once they exist
        # what /metrics writes (every output's families) and where the outputs find the targets' samples
        self.registry = Registry()
        self.pods: Any = None           # PodMapper (-k)
        self.attribution: Any = None    # GpuAttribution (-k, --hpc-job-mapping-dir), or None
        self.process_attribution: ProcessAttribution | None = None   # the same for each process (--processes)
        self.recorder: Recorder | None = None   # the flight recorder (--recorder-dir), or None
        self._reports: ReportPages | None = None   # its recordings' reports (GET /reports), with it
        self._web: WebConfig | None = None
        self._renders: SingleFlight[list[bytes]] = SingleFlight()
        # per format: (id of the registry, the body, time.monotonic() it was rendered at)
        self._last_bodies: dict[bool, tuple[int, list[bytes], float]] = {}
        self._render_failure: str | None = None   # why the last render of /metrics failed, until one succeeds
        self._stopping = threading.Event()   # set once stop() begins: a reload still running then gives up
        self.remote_writers: list[RemoteWriter] = []   # one per --remote-write-url
        # history answers in flight (built or being sent), and /metrics ahead of them; shared with the server
        self.admission = Admission()

    # -- what the server calls (on request threads)
    def metrics(self, openmetrics: bool) -> list[bytes]:
        """Every family registered with the registry: the exposition's, then remote write's and the recorder's, as
        the pieces of the body (the families text kept between two ticks is the same bytes object each time)."""
        if self.exposition is None:
            raise Unavailable("starting: no sampler yet")
        registry = self.registry
        within_s = self.config.collect_interval_ms / 1000

        def render() -> list[bytes]:
            pieces = registry.render_pieces(openmetrics)
            self._last_bodies[openmetrics] = (id(registry), pieces, time.monotonic())
            return pieces

        def recent() -> list[bytes] | None:
            kept = self._last_bodies.get(openmetrics)
            if kept is None or kept[0] != id(registry) or time.monotonic() - kept[2] > within_s:
                return None
            return kept[1]

        try:
            # One render at a time: a scrape that arrives while another renders answers with the body before it,
            # when that is under one collect interval old (as if it had come a moment earlier), or else waits
            # for the render and shares its body; each would otherwise render the families and the self-metrics
            # again, one after another under the GIL.
            body = self._renders.do((id(registry), openmetrics), render, recent)
        except Exception as error:
            # the server answers 500 and logs it; /health must say so too, or an orchestrator sees a healthy
            # collector that serves nothing
            self._render_failure = f"rendering /metrics failed: {type(error).__name__}: {error}"
            raise
        self._render_failure = None
        return body

    def health(self) -> tuple[bool, str]:
        """The state on the first line (one line per target that is not up), the source and why on the last."""
        ok, reason = self._health_state()
        source = self.source
        return ok, reason if source is None else f"{reason}\n{source.describe()}"

    def _health_state(self) -> tuple[bool, str]:
        exposition = self.exposition
        if exposition is None:
            return False, "starting: no sampler yet"
        failure = self._render_failure
        if failure is not None:
            return False, failure
        # a failing output leaves the collector healthy (it still samples and serves) and says so in a note
        recorder = self.recorder
        notes = [writer.problem() for writer in self.remote_writers]
        notes.append(recorder.problem() if recorder is not None else None)
        notes.append(self._reports.problem() if self._reports is not None else None)
        return with_notes(exposition.health(), *notes)

    def observe_scrape(self, seconds: float) -> None:
        exposition = self.exposition
        if exposition is not None:
            exposition.observe_scrape(seconds)

    def samples(self, request: Request) -> Reply:
        """GET /api/v1/samples: the rings' samples as JSON (expose.history).

        At most ``admission.heavy_slots`` answers are built or sent at once;
        a request beyond them waits up to ``admission.queue_s`` for a slot,
        then gets a 503 with Retry-After in Prometheus' error shape.  The slot
        goes back when the server has sent the answer (Reply.sent).  Each
        answer has ANSWER_BUDGET_S to be built (then it is cut, truncated
        with next_since) and pauses for /metrics between its series.
        """
        if self.exposition is None:
            raise Unavailable("starting: no sampler yet")
        try:
            query = history.parse_query(request.query)
        except history.QueryError as error:
            return _api_error(400, "bad_data", str(error))
        slot = self.admission.heavy()
        if slot is None:
            wait = self.admission.retry_after_s
            return _api_error(503, "unavailable", "busy: the history API is building or sending as many answers as "
                              f"it may at once ({self.admission.heavy_slots}); retry in {wait} s",
                              {"Retry-After": str(wait)})
        try:
            answer = history.answer(self.registry.sample_models(), query,
                                    deadline=time.monotonic() + history.ANSWER_BUDGET_S,
                                    pause=self.admission.yield_to_light)
        except history.QueryError as error:
            slot.release()
            return _api_error(400, "bad_data", str(error))
        except BaseException:
            slot.release()
            raise
        return Reply(200, answer.pieces, JSON_TYPE, compressible=True, sent=slot.release)

    def overview(self) -> Overview:
        """The landing page's head: /health's state and source lines and each GPU's newest values."""
        if self.exposition is None:
            raise Unavailable("starting: no sampler yet")
        ok, reason = self.health()
        state, _, source = reason.partition("\n")
        tiles = gpu_readings(self.registry.series(), "OK" if ok else "-")
        return Overview(health=state, source=source.splitlines()[-1] if source else "", tiles=tiles)

    def _recording(self, request: Request) -> Reply:
        """GET /recordings?name=recording-...parquet: a recording of the recorder's folder, to download."""
        recorder = self.recorder
        name, refused = _recording_name(request)
        body = recorder.read_recording(name) if recorder is not None and refused is None else None
        if body is None:
            return refused or _no_recording(name)
        return Reply(200, body, "application/vnd.apache.parquet",
                     headers={"Content-Disposition": f"attachment; filename*=UTF-8''{quote(name)}"})

    def _report(self, request: Request) -> Reply:
        """GET /reports?name=recording-...parquet: the HTML report of a recording of the recorder's folder (the page
        ``dcgm-collector report -o`` writes), built within dcgm_collector.report.served's bounds."""
        recorder, pages = self.recorder, self._reports
        name, refused = _recording_name(request)
        found = recorder.recording_version(name) if recorder is not None and refused is None else None
        if found is None or pages is None:
            return refused or _no_recording(name)
        # loaded with the recorder (start()): its pages import the report's modules when they build one
        from dcgm_collector.report.served import CSP, RecordingFile, ReportRefused

        try:
            body = pages.page(RecordingFile(name, *found))
        except ReportRefused as error:
            return Reply(error.status, f"{error}\n".encode(), headers=error.headers)
        return Reply(200, body, "text/html; charset=utf-8", compressible=True,
                     headers={"Content-Security-Policy": CSP})

    def _routes(self) -> dict[str, Route]:
        """The paths served beside /metrics, /health and /."""
        routes = {
            "/api/v1/samples": Route(self.samples, landing="every sample the rings hold, as JSON",
                                     example="?field=DCGM_FI_DEV_POWER_USAGE&gpu=0&since=5m"),
        }
        if self.recorder is not None:
            routes["/recorder"] = Route(self._recorder_request, methods=("POST",), max_body=4096)
            routes["/recordings"] = Route(self._recording)
            routes["/reports"] = Route(self._report)
        return routes

    # -- start-up
    def start(self) -> None:
        config = self.config
        malloc.limit_arenas()   # before the request threads: answers built on many threads stay bounded in RSS
        counters = self._read_counters()
        web = self._web = self._read_web_config()
        self.recorder = self._make_recorder()
        if self.recorder is not None:
            # with the recorder only; the report's own modules (the findings, the charts) load with the first report
            from dcgm_collector.report.served import ReportPages

            self._reports = ReportPages()
        landing_extra = self.recorder.landing_html if self.recorder is not None else None
        self.server = MetricsServer(config.address, self.metrics, self.health, self.observe_scrape,
                                    routes=self._routes(), landing_extra=landing_extra, admission=self.admission,
                                    landing_overview=self.overview,
                                    **(web.server_options() if web is not None else {}))
        try:
            self.server.start()
        except ListenError as error:
            self.server = None
            raise StartupError(str(error)) from None
        self.remote_writers = self._make_remote_writers()   # before DCGM: a bad file or flag fails fast
        self.library = self._load_library()
        self.library_version = library_version(self.library)
        self.attribution = self._start_attribution()
        self.targets = self._make_targets(counters)
        for target in self.targets:
            self._start_target(target)
        source = self.source
        exposition = MultiExposition(self.targets, version=__version__, library_version=self.library_version,
                                     source=source.name if source else "",
                                     source_reason=source.reason if source else "")
        # /metrics writes the families in the order they are registered: DCGM's and the collector's own, remote
        # write's, the recorder's; all of them before /metrics serves (self.exposition), so no scrape misses one
        self.registry.register(exposition)
        for source in exposition.sources():
            self.registry.add_source(source)
        if self.remote_writers:
            from dcgm_collector.push.remote_write import RemoteWriteFamilies

            self.registry.register(RemoteWriteFamilies(self.remote_writers))
        if self.recorder is not None:
            self.recorder.start(self.registry)
        if self._reports is not None:
            self.registry.register(self._reports)
        self.exposition = exposition
        for line in self._summary(counters, web):
            log.info("%s", line)
        for writer in self.remote_writers:
            if self._stopping.is_set():
                break
            writer.start()
            log.info("remote write to %s: every sample, in requests of at most %d samples every %g s",
                     writer.url, writer.options.batch_size, writer.options.flush_interval_s)

    def _make_remote_writers(self) -> list[RemoteWriter]:
        config = self.config
        if not config.remote_write_urls:
            return []
        try:
            import cramjam  # noqa: F401 -- snappy, which every request is compressed with
        except ImportError:
            raise StartupError("--remote-write-url needs the cramjam package (pip install cramjam)") from None
        from dcgm_collector.push.remote_write import RemoteWriteError, RemoteWriteOptions, RemoteWriter

        writers = []
        for url in config.remote_write_urls:
            options = RemoteWriteOptions(
                url, username=config.remote_write_username, password_file=config.remote_write_password_file,
                bearer_token_file=config.remote_write_bearer_token_file, ca_file=config.remote_write_ca_file,
                cert_file=config.remote_write_cert_file, key_file=config.remote_write_key_file,
                batch_size=config.remote_write_batch_size, flush_interval_s=config.remote_write_flush_interval_s,
                queue_limit=config.remote_write_queue_limit, timeout_s=config.remote_write_timeout_s,
                labels=config.remote_write_labels)
            try:
                writers.append(RemoteWriter(options, self.registry.sample_models, __version__,
                                            forget_after_s=max(3600.0, 2 * config.retention_s)))
            except RemoteWriteError as error:
                raise StartupError(str(error)) from None
        return writers

    def _summary(self, counters: CounterSet, web: WebConfig | None) -> list[str]:
        """What the collector runs on, one fact a line: library, GPUs, counters, history, listener."""
        config, library = self.config, self.library
        kind = "NVIDIA DCGM"
        if library is not None and library.is_simulator:
            running = engine.source_name(library)
            if running.startswith("nvml"):
                kind = f"the engine reading NVML ({running.partition(' ')[2]})"
            elif self.source is not None and self.source.name == "nvml":   # not started (NVML not ready): retried
                kind = "the engine reading NVML, not started yet"
            else:
                kind = "dcgm-collector's simulated engine"
        lines = [f"dcgm-collector {__version__}; DCGM library {library.path if library else '?'} "
                 f"({kind}, version {self.library_version})"]
        if self.source is not None:
            lines.append(self.source.describe())
        series = windows = ring_bytes = 0
        for target in self.targets:
            where = f"hostengine at {target.address} (hostname {target.name})" if target.remote else "embedded DCGM"
            generation = target.generation
            if generation is None:
                lines.append(f"{where}: {target.reason}")
                continue
            lines.append(f"{where}: {generation.topology.gpus_line()}")
            instances = generation.sampler.instances
            if instances:
                lines.append(f"{where}: MIG GPU instances {id_ranges([i.entity_id for i in instances])} ("
                             + ", ".join(f"GPU {i.gpu_id} GI {i.instance_id} {i.profile or '?'}" for i in instances)
                             + ")")
            if generation.topology.levels:
                kinds = Tally(entity.level for entity in generation.topology.levels)
                lines.append(f"{where}: " + ", ".join(_entity_count(level, n) for level, n in kinds.items()))
            unsupported = generation.sampler.unsupported_counters()
            if unsupported:
                every = "GPU and MIG instance" if generation.sampler.instances else "GPU"
                lines.append(f"{where}: not served, NOT_SUPPORTED on every {every} ({len(unsupported)}): "
                             f"{', '.join(unsupported)}")
                rows = {c.name: c for c in counters}
                for name in unsupported:   # a row that cannot be served is a warning naming its file and line
                    row = rows[name]
                    log.warning("%s:%d: not serving %s: %s answers NOT_SUPPORTED for it on every GPU",
                                row.path, row.line, name, where)
            rows_by_name = {c.name: c for c in counters}
            for name in generation.sampler.unsupported_level_counters():
                row = rows_by_name[name]
                log.warning("%s:%d: not serving %s: %s answers NOT_SUPPORTED for it on every NvLink, NvSwitch, "
                            "CPU or core it is kept for", row.path, row.line, name, where)
            series += generation.series
            ring_bytes += generation.ring_bytes
            windows += generation.exposition.window_families
        # a target not up yet has nothing to count: it logs its own figures once it is
        waiting = sum(target.generation is None for target in self.targets)
        later = f" ({waiting} target{'s' * (waiting != 1)} not up yet: counted when up)" if waiting else ""
        lines.append(f"counters {counters.path}: {len(counters)} rows, {series} sampled series, "
                     f"{windows} window families over {config.window_s:g} s{later}")
        sampling = config.sampling
        lines.append(f"draining DCGM every {sampling.collect_interval_ms:g} ms, DCGM sampling every "
                     f"{sampling.watch_ms:g} ms; {sampling.retention_s:g} s of history in "
                     f"{ring_bytes / 2**20:.1f} MiB of rings{later}")
        where = self.server.describe() if self.server else "?"
        security = web.describe() if web is not None else "no TLS, no auth"
        # one parenthesis: the listener's own note (every interface, ...) and the TLS and auth state
        lines.append(f"serving {where[:-1]}; {security})" if where.endswith(")") else f"serving {where} ({security})")
        recorder = self.recorder
        if recorder is not None:
            lines.append(f"flight recorder: {recorder.directory}, {config.recorder_before_s:g} s before and "
                         f"{config.recorder_after_s:g} s after each XID, lost GPU, failed health check, SIGUSR2 or "
                         f"POST /recorder; at most {size_text(config.recorder_max_bytes)} on disk")
        return lines

    def _make_recorder(self) -> Recorder | None:
        config = self.config
        if config.recorder_dir is None:
            return None
        # optional feature, imported only when on: pyarrow is large and a plain node never needs it
        from dcgm_collector.push.recorder import Recorder, RecorderError
        from dcgm_collector.push.recording_file import PyarrowMissing

        try:
            return Recorder(config.recorder_dir, before_s=config.recorder_before_s, after_s=config.recorder_after_s,
                            max_bytes=config.recorder_max_bytes, retention_s=config.retention_s,
                            counters_path=config.collectors, version=__version__,
                            host=config.hostname or hostname_label(None, os.environ),
                            name_targets=len(config.remotes) > 1)
        except (PyarrowMissing, RecorderError) as error:
            raise StartupError(str(error)) from None

    def record_now(self, why: str) -> None:
        """SIGUSR2: record every entity of every target around now (called off the main thread)."""
        recorder = self.recorder
        if recorder is None:
            log.info("%s: the flight recorder is off (turn it on with --recorder-dir)", why)
            return
        recorder.trigger("signal", why)

    def _recorder_request(self, request: Request) -> Reply:
        """POST /recorder: record around now; optional JSON body {"reason": "...", "gpus": [0, 1]}."""
        recorder = self.recorder
        web = self._web
        if recorder is None:
            raise Unavailable("the flight recorder is off")
        if web is None or not web.users:
            # anyone who reaches the port could otherwise fill the disk
            return Reply(403, b"POST /recorder needs basic_auth_users in --web-config-file\n")
        # optional feature, imported only when on (with the recorder)
        from dcgm_collector.push.recorder_request import RequestRefused, parse_request

        known = {g.gpu_id for t in self.targets if (e := t.exposition) is not None for g in e.gpus}
        try:
            asked = parse_request(request.body, known)
        except RequestRefused as error:
            return Reply(400, f"POST /recorder: {error}\n".encode())
        detail = f"POST /recorder from {request.client}" + (f": {asked.reason}" if asked.reason else "")
        files = recorder.trigger("request", detail, asked.gpus)
        answer = {"file": files[0] if files else None, "files": files, "directory": recorder.directory}
        return Reply(202, (json.dumps(answer) + "\n").encode(), "application/json")

    def _read_web_config(self) -> WebConfig | None:
        path = self.config.web_config_file
        if path is None:
            return None
        # optional feature, imported only when on: bcrypt and PyYAML cost memory a plain node never uses
        from dcgm_collector.serve.webconfig import WebConfigError, load

        try:
            return load(path)
        except WebConfigError as error:
            raise StartupError(str(error)) from None

    def _start_attribution(self) -> GpuAttribution | None:
        config = self.config
        if len(config.remotes) > 1 and (config.kubernetes or config.hpc_job_mapping_dir):
            # the kubelet and the job directory describe this node, not the others'
            given = " and ".join(flag for flag, on in (("-k", config.kubernetes),
                                                       ("--hpc-job-mapping-dir", config.hpc_job_mapping_dir)) if on)
            log.warning("%s %s ignored: with several -r hostengines, this node's pods and jobs do not describe the "
                        "others' GPUs", given, "are" if " and " in given else "is")
            return None
        jobs = HpcJobMapper(config.hpc_job_mapping_dir) if config.hpc_job_mapping_dir else None
        if config.kubernetes:
            # optional feature, imported only when on: gRPC and protobuf are most of an idle collector's memory
            from dcgm_collector.attribution.podresources import PodMapper

            self.pods = PodMapper(config.pod_resources_kubelet_socket, config.kubernetes_gpu_id_type,
                                  config.nvidia_resource_names, old_names=config.use_old_namespace)
            self.pods.start()
            log.info("pod labels from the kubelet at %s (GPU ids: %s), refreshed every %g s",
                     config.pod_resources_kubelet_socket, config.kubernetes_gpu_id_type, self.pods.refresh_s)
        if jobs is not None:
            log.info("hpc_job labels from %s, re-read every %g s", jobs.directory, jobs.refresh_s)
        if self.pods is None and jobs is None:
            return None
        if config.processes:
            # a process's own pod and job, from its cgroup: the checkpoint names the pod UIDs a cgroup gives
            checkpoint = DeviceCheckpoint(config.kubernetes_device_checkpoint) if self.pods is not None else None
            self.process_attribution = ProcessAttribution(self.pods, jobs, checkpoint)
        return GpuAttribution(self.pods, jobs)

    def _allocated(self, gpu_index: int, uuid: str, instance_id: int | None) -> bool:
        """Whether a pod (-k) or an HPC job (a job file) holds the GPU, or its MIG instance: the idle reader's
        allocated_no_process (collect does not import attribution, so the question comes in as this callable)."""
        attribution = self.attribution
        if attribution is None:
            return False
        pods, jobs = attribution.pods, attribution.jobs
        if pods is not None:
            held = (pods.labels_for(gpu_index, uuid) if instance_id is None
                    else pods.labels_for_instance(gpu_index, instance_id, uuid))
            if held:
                return True
        return jobs is not None and bool(jobs.jobs_for(gpu_index, instance_id))

    def _read_counters(self) -> CounterSet:
        path = self.config.collectors
        try:
            counters = load_counters(path)
        except CountersError as error:
            raise StartupError(str(error)) from None
        except OSError as error:
            raise StartupError(f"{path}: cannot read counters file: {error.strerror or error}") from None
        for warning in load_warnings(counters):   # the lines check-counters prints too
            log.warning("%s", warning)
        totals = counters.running_totals()
        if self.config.aggregations and totals:
            log.warning("--aggregations %s applies to gauges: the counter rows %s get no window families "
                        "(query them with increase() or rate())", ",".join(self.config.aggregations),
                        ", ".join(f"{c.name} ({c.path}:{c.line})" for c in totals))
        return counters

    def _load_library(self) -> Library:
        try:
            library, self.source = load_source(self.config)
        except SourceError as error:
            raise StartupError(str(error)) from None
        return library

    def _make_targets(self, counters: CounterSet) -> list[Target]:
        config, library, recorder = self.config, self.library, self.recorder

        def make(name: str, address: str | None, connect) -> Target:
            hostname = None if config.no_hostname else name
            # each sampler of the target hands its XIDs, lost GPUs and failed health checks to the recorder
            readers = [TriggerReader.factory(recorder.trigger, name)] if recorder is not None else []
            if config.early_warnings:   # each warning that starts starts a recording too
                readers.append(WarningReader.factory(config.warning_thresholds,
                                                     recorder.trigger if recorder is not None else None, name))
            if config.processes and address is None:
                assert self.source is not None   # loaded with the library
                nvml_library = process_nvml_library(self.source)
                attribute = self.process_attribution
                readers.append(ProcessReader.factory(lambda: Nvml(nvml_library), config.processes_top, attribute,
                                                     attribute.blank() if attribute is not None else ()))
                # after the process reader, so that it classifies with this tick's process lists
                readers.append(IdleReader.factory(self._allocated, config.idle_util_below, config.idle_held_fb_mib))
            return Target(name, counters, connect=connect, devices=config.devices, sampling=config.sampling,
                          switch_devices=config.switch_devices, cpu_devices=config.cpu_devices,
                          expose=lambda sampler, gpus: self._expose(sampler, gpus, hostname), address=address,
                          readers=readers)

        if not config.remotes:
            name = config.hostname or hostname_label(None, os.environ)
            return [make(name, None, lambda: self._open_embedded(library))]
        if config.processes:
            log.warning("--processes lists the processes of this machine's GPUs: with -r the GPUs are the "
                        "hostengines', so no process series are served")
        return [make(name, address, lambda address=address: Handle.connect(
                    address, timeout_ms=CONNECT_TIMEOUT_MS, library=library))
                for address, name in zip(config.remotes, config.target_names)]

    def _start_target(self, target: Target) -> None:
        try:
            target.start()
        except TargetError as error:
            raise StartupError(str(error)) from None
        except (DcgmError, RuntimeError, ValueError) as error:
            raise StartupError(f"cannot start sampling: {error}") from None

    @staticmethod
    def _open_embedded(library: Library) -> Handle:
        try:
            return dcgm.Handle.embedded(library=library)
        except dcgm.DcgmError as error:
            if error.code in RETRY_START_CODES:
                raise   # the target retries (NVML not ready yet)
            raise StartupError(f"cannot start DCGM embedded: {error}") from None
        except ValueError as error:
            raise StartupError(f"cannot start DCGM embedded: {error}") from None

    def _expose(self, sampler: Sampler, gpus: tuple[GpuInfo, ...], hostname: str | None) -> Exposition:
        config = self.config
        options = ExpositionOptions(
            window_s=config.window_s, aggregations=config.aggregations, hostname=hostname,
            replace_blanks_in_model_name=config.replace_blanks_in_model_name,
            use_old_namespace=config.use_old_namespace,
            xid_count_window_ms=config.xid_count_window_ms,
            clock_events_count_window_ms=config.clock_events_count_window_ms,
            attribution=self.attribution,
        )
        exposition = Exposition(target_view(sampler), gpus, options, version=__version__,
                                library_version=self.library_version)
        for reader in sampler.readers:
            if isinstance(reader, ProcessReader):   # a new exposition (a reload) serves the same store
                exposition.attach_store(reader.store, PROCESS_FAMILIES)
            elif isinstance(reader, IdleReader):
                exposition.attach_store(reader.store, IDLE_FAMILIES, sized=False)
            elif isinstance(reader, WarningReader):
                exposition.attach_store(reader.store, WARNING_FAMILIES, sized=False)
        return exposition

    # -- reload
    def reload(self) -> bool:
        """Re-read the counters file; on any problem the running configuration keeps serving."""
        try:
            counters = self._read_counters()
        except StartupError as error:
            log.error("reload failed, still serving the previous counters: %s", error)
            return False
        if self._stopping.is_set():
            return False
        ok = all([target.reload(counters) for target in self.targets])
        if ok:
            log.info("reloaded %d metrics from %s", len(counters), self.config.collectors)
        return ok

    # -- shutdown
    def stop(self) -> None:
        """Stop serving and collecting.  It may wait as long as a DCGM call blocks: see lifecycle.stop_within()."""
        self._stopping.set()
        for writer in self.remote_writers:
            writer.request_stop()   # all at once; each cuts off its request in flight
        if self.remote_writers:
            from dcgm_collector.push.remote_write import STOP_WAIT_S

            for writer in self.remote_writers:
                writer.stop(STOP_WAIT_S / len(self.remote_writers))
        if self.recorder is not None:
            self.recorder.stop()
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.pods is not None:
            self.pods.stop()
            self.pods = None
        for target in self.targets:
            target.request_stop()   # all at once: a supervisor may be inside a connect attempt
        for target in reversed(self.targets):
            target.stop()


def library_version(library: Library) -> str:
    """The version a loaded DCGM library reports, for dcgm_collector_build_info; "unknown" when it cannot say."""
    try:
        return library.version_info().get("version", "unknown")
    except (DcgmError, AttributeError):
        return "unknown"
