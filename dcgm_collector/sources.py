"""Where the readings come from, and why: NVIDIA DCGM, a hostengine, the driver's NVML or the simulated GPUs.

A flag (or its environment variable) names the source: ``-r`` a hostengine,
``--dcgm`` or ``--dcgm-lib`` NVIDIA DCGM's libdcgm.so.4, ``--nvml`` the
package's engine on the driver's libnvidia-ml.so.1, ``--sim`` the package's
engine on simulated GPUs (config checks that two of them do not contradict
each other).  With none the collector chooses: DCGM when libdcgm.so.4 loads,
else NVML when libnvidia-ml.so.1 does, else one error line naming both
searches.  :func:`load_source` loads the library and says which source runs
and why; the start-up log, /health and dcgm_collector_build_info say so.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from dcgm_collector import dcgm, engine
from dcgm_collector.config import Config
from dcgm_collector.dcgm import Library

__all__ = ["AUTO_DCGM", "AUTO_NVML", "GIVEN", "Source", "SourceError", "load_source"]

log = logging.getLogger("dcgm_collector")

# build_info's source_reason label: a few fixed values (the whole why is in /health and the log)
GIVEN = "given"                              # a flag or an environment variable named the source
AUTO_DCGM = "auto: libdcgm loaded"           # none named: libdcgm.so.4 loads
AUTO_NVML = "auto: no libdcgm, NVML loaded"  # none named: no libdcgm.so.4, but libnvidia-ml.so.1 loads


class SourceError(Exception):
    """The source cannot be loaded; str() is the one line the user sees."""


@dataclass(frozen=True)
class Source:
    """The source that runs: ``name`` and ``reason`` are build_info's labels, ``why`` one clause for people."""

    name: str      # "dcgm", "hostengine", "nvml" or "sim"
    reason: str    # GIVEN, AUTO_DCGM or AUTO_NVML
    why: str       # "chosen by --nvml", "chosen because libdcgm.so.4 loads", ...

    def describe(self) -> str:
        """The line /health and the start-up log give: ``source: nvml, chosen by --nvml``."""
        return f"source: {self.name}, {self.why}"


def load_source(config: Config) -> tuple[Library, Source]:
    """Load the library the configured (or chosen) source reads through; SourceError in one line if it cannot."""
    try:
        return _load(config)
    except dcgm.LibraryNotFoundError as error:
        raise SourceError(error.message) from None
    except (dcgm.DcgmError, FileNotFoundError, ValueError) as error:
        raise SourceError(f"cannot load libdcgm: {error}") from None


def _load(config: Config) -> tuple[Library, Source]:
    given = config.source_flag
    if given is None and os.environ.get(dcgm.LIBRARY_ENV):
        given = f"{dcgm.LIBRARY_ENV}={os.environ[dcgm.LIBRARY_ENV]}"
    if config.nvml:
        try:
            engine.check_nvml()
        except ValueError as error:
            raise SourceError(f"--nvml: {error}") from None
        os.environ[engine.SOURCE_ENV] = "nvml"
        return dcgm.load_library(engine.library_path()), Source("nvml", GIVEN, f"chosen by {given}")
    if config.sim is not None:   # with -r, the simulated libdcgm is the hostengine's client
        library = _load_simulator(config.sim)
    elif config.dcgm_lib is not None:
        library = dcgm.load_library(config.dcgm_lib, given_by="--dcgm-lib")
    elif given is not None:   # --dcgm, -r, $DCGM_COLLECTOR_LIBDCGM: DCGM's library or nothing
        library = dcgm.load_library()
    else:
        return _load_dcgm_or_nvml()
    return library, Source(_running(library, bool(config.remotes)), GIVEN, f"chosen by {given}")


def _running(library: Library, remote: bool) -> str:
    """What a loaded library reads: a hostengine, NVIDIA DCGM, or the package's engine on NVML or on its models."""
    if remote:
        return "hostengine"
    if not library.is_simulator:
        return "dcgm"
    return "nvml" if os.environ.get(engine.SOURCE_ENV) == "nvml" else "sim"


def _load_simulator(spec_given: str) -> Library:
    spec = engine.resolve_scenario(spec_given)
    unknown = engine.unknown_scenario(spec)
    if unknown is not None:
        raise SourceError(f"--sim {spec_given}: {unknown}")
    if engine.is_recording(spec):
        spec = _replay_recording(spec)
    try:
        engine.check_scenario(spec)
    except ValueError as error:
        raise SourceError(f"--sim {spec_given}: {error}") from None
    os.environ[engine.SCENARIO_ENV] = spec
    os.environ[engine.SOURCE_ENV] = "models"
    return dcgm.load_library(engine.library_path())


def _replay_recording(path: str) -> str:
    """The scenario that replays a flight recording; its errors already name the file."""
    try:
        spec, warnings = engine.replay_recording(path)
    except ValueError as error:
        raise SourceError(f"--sim {error}") from None
    for warning in warnings:
        log.warning("--sim %s", warning)
    return spec


def _load_dcgm_or_nvml() -> tuple[Library, Source]:
    """No source named: DCGM when its library loads, else the package's engine over the driver's NVML.

    A node with only the NVIDIA driver is the common case outside NVIDIA's own images, so the same
    command must work there.  A hostengine (-r) is a source named, reached only through DCGM's library.
    """
    try:
        library = dcgm.load_library()
    except dcgm.LibraryNotFoundError as not_found:
        searched = not_found.message.partition("; fix: ")[0]
        try:
            nvml = engine.check_nvml()
        except ValueError as no_nvml:
            why = re.split(r": install|; point", str(no_nvml))[0]
            raise SourceError(
                f"{searched}; and {engine.NVML_LIBRARY_NAME} (the NVIDIA driver's NVML) was not found either: "
                f"{why}; fix: install the NVIDIA driver (then the collector reads the GPUs through it), "
                f"or {dcgm.HOW_TO_FIX}") from None
    else:
        return library, Source(_running(library, False), AUTO_DCGM, f"chosen because {dcgm.LIBRARY_NAME} loads")
    log.info("no %s found: reading the GPUs through the driver's NVML (%s) with the package's engine, as "
             "--nvml does (give --dcgm or --dcgm-lib, or install DCGM, to use DCGM)", dcgm.LIBRARY_NAME, nvml)
    os.environ[engine.SOURCE_ENV] = "nvml"
    return dcgm.load_library(engine.library_path()), Source(
        "nvml", AUTO_NVML, f"chosen because {dcgm.LIBRARY_NAME} was not found and {nvml} loads")


def process_nvml_library(source: Source) -> str:
    """The libnvidia-ml.so.1 --processes reads: the one on the node the source shows.

    On the simulator the package's simulated NVML, which reads the same
    scenario (``DCGM_SIM_SCENARIO``, set when the simulator loads) and so
    lists the processes of the simulated GPUs; where the package's engine
    reads NVML (given by --nvml or chosen for want of libdcgm) the one it
    reads (``DCGM_ENGINE_NVML_LIB`` or the driver's); else the driver's, by name.
    """
    if source.name == "sim":
        return str(engine.nvml_library_path())
    if source.name == "nvml":
        return os.environ.get(engine.NVML_LIB_ENV) or engine.NVML_LIBRARY_NAME
    return engine.NVML_LIBRARY_NAME
