"""The DCGM-compatible engine (libdcgm.so.4) that ships inside this package.

The library is a plain C shared library exporting DCGM's C ABI; any DCGM
client can use it, e.g. ``LD_LIBRARY_PATH=$(python -m dcgm_collector.engine
libdir) some-dcgm-client``.  It has two value sources, chosen by
``DCGM_ENGINE_SOURCE`` when the embedded engine starts: ``models`` (the
default) simulates a node from ``DCGM_SIM_SCENARIO`` (empty for 8 H100s
training, a number for that many GPUs, or the path of a scenario file, see
``scenarios/README.md``); ``nvml`` reads the real GPUs through the driver's
``libnvidia-ml.so.1`` (``DCGM_ENGINE_NVML_LIB`` to name it).  A flight
recording (``.parquet``) plays back as the scenario ``replay_recording``
writes for it (``recording.py``).

Beside it ships a simulated ``libnvidia-ml.so.1`` (NVML) on the same node and
scenario: ``LD_LIBRARY_PATH=$(python -m dcgm_collector.engine nvml-libdir)
some-nvml-client`` (nvidia-smi-like tools, nvidia-ml-py).  Its own settings
(per-call costs, NO_PERMISSION, a frozen clock) are in ``native/nvml/README.md``.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import threading
from pathlib import Path

from dcgm_collector.files import read_regular_file

LIBRARY_NAME = "libdcgm.so.4"
NVML_LIBRARY_NAME = "libnvidia-ml.so.1"
SCENARIO_ENV = "DCGM_SIM_SCENARIO"
# the engine's value source: "models" (default) or "nvml" (the driver's libnvidia-ml.so.1)
SOURCE_ENV = "DCGM_ENGINE_SOURCE"
NVML_LIB_ENV = "DCGM_ENGINE_NVML_LIB"

__all__ = [
    "LIBRARY_NAME", "NVML_LIBRARY_NAME", "NVML_LIB_ENV", "SCENARIO_ENV", "SOURCE_ENV", "check_nvml",
    "check_scenario", "is_recording", "library_dir", "library_path", "nvml_library_dir", "nvml_library_path",
    "remove_replay_files", "replay_recording", "resolve_scenario", "shipped_scenarios", "source_name",
    "unknown_scenario",
]

MAX_SCENARIO_BYTES = 16 << 20   # a scenario is a few KiB of TOML; its traces are files of their own

# The temporary folders replay_recording made, until remove_replay_files removes them.
_replay_folders: list[Path] = []
_replay_folders_lock = threading.Lock()


def _built_library_dir(name: str) -> Path:
    directory = Path(__file__).resolve().parent / "lib"
    if not (directory / name).is_file():
        checkout = directory.parents[2]
        if (checkout / "setup.py").is_file():
            raise FileNotFoundError(
                f"the engine's {name} is not built in the source folder {checkout}: run `pip install -e .` "
                "there to build it in place, or run from outside the checkout to use the installed package")
        raise FileNotFoundError(
            f"the engine's {name} is missing: expected {directory / name}; "
            "reinstall the package (pip install dcgm-collector) to build it")
    return directory


def library_dir() -> Path:
    """The directory holding the simulated libdcgm.so.4."""
    return _built_library_dir(LIBRARY_NAME)


def library_path() -> Path:
    """Full path of the simulated libdcgm.so.4."""
    return library_dir() / LIBRARY_NAME


def nvml_library_dir() -> Path:
    """The directory holding the simulated libnvidia-ml.so.1 (put it on LD_LIBRARY_PATH for NVML clients)."""
    return _built_library_dir(NVML_LIBRARY_NAME)


def nvml_library_path() -> Path:
    """Full path of the simulated libnvidia-ml.so.1."""
    return nvml_library_dir() / NVML_LIBRARY_NAME


def resolve_scenario(spec: str) -> str:
    """A GPU count or a scenario file as given; a bare name (``spikes``, ``xid-burst``) picks a shipped scenario."""
    if spec.isdigit() or os.path.exists(spec) or "/" in spec:
        return spec
    shipped = Path(__file__).resolve().parent / "scenarios" / (spec if spec.endswith(".toml") else f"{spec}.toml")
    return str(shipped) if shipped.is_file() else spec


def shipped_scenarios() -> list[str]:
    """The names of the scenarios shipped with the package, as --sim takes them (``spikes``, ``xid-burst``)."""
    return sorted(path.stem for path in (Path(__file__).resolve().parent / "scenarios").glob("*.toml"))


def unknown_scenario(spec: str) -> str | None:
    """Why ``spec`` names no scenario when it is a bare name that is neither shipped nor a file, else None."""
    if spec.isdigit() or os.path.exists(spec) or "/" in spec or spec.endswith(".parquet"):
        return None
    return (f"no shipped scenario is named {spec}: give a shipped scenario ({', '.join(shipped_scenarios())}), "
            "a number N (N simulated H100s), or the path of a scenario file (.toml) or of a flight recording "
            "(.parquet)")


def is_recording(spec: str) -> bool:
    """Whether a scenario spec names a flight recording (a ``.parquet`` file) rather than a scenario."""
    from dcgm_collector.engine import recording
    return recording.is_recording(spec)


def replay_recording(path: str) -> tuple[str, tuple[str, ...]]:
    """A scenario replaying the flight recording at ``path``, and one line per thing the replay cannot keep.

    The scenario (and its traces) lives in a temporary folder that
    remove_replay_files() removes at exit (an exit by os._exit skips atexit:
    the collector's _exit_now calls it first).  ValueError ``path: problem``
    (one line) when the recording or its sidecar cannot be read.
    """
    import tempfile

    from dcgm_collector.engine import recording  # imports pyarrow, only for a recording
    folder = Path(tempfile.mkdtemp(prefix="dcgm-replay-"))
    with _replay_folders_lock:
        if not _replay_folders:
            atexit.register(remove_replay_files)
        _replay_folders.append(folder)
    try:
        written = recording.write_scenario(path, folder)
    except BaseException:
        _remove_folder(folder)
        raise
    return str(written.path), written.warnings


def remove_replay_files() -> None:
    """Remove every temporary folder replay_recording made; safe to call more than once, from any thread."""
    with _replay_folders_lock:
        folders = list(_replay_folders)
        _replay_folders.clear()
    for folder in folders:
        _remove_tree(folder)


def _remove_folder(folder: Path) -> None:
    with _replay_folders_lock:
        if folder in _replay_folders:
            _replay_folders.remove(folder)
    _remove_tree(folder)


def _remove_tree(folder: Path) -> None:
    # shutil (with bz2 and lzma) and tempfile are imported by a replay only: a collector on a live node
    # never holds them (about 1 MiB resident with the modules they import)
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def check_scenario(spec: str | os.PathLike[str]) -> None:
    """Validate a scenario spec (a GPU count or a scenario file); raise ValueError if it is bad.

    TOML syntax is checked here (with line numbers), the schema by the
    simulator itself, so the answer is the one the engine would give.
    """
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"scenario spec must be a str or path, not {type(spec).__name__}")
    text = os.fspath(spec)
    if "\0" in text:
        raise ValueError("scenario spec contains a NUL character")
    if text and not text.isdigit():
        _check_toml_syntax(Path(text))
    _check_with_simulator(text)


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)$")


def _check_toml_syntax(path: Path) -> None:
    try:  # Python 3.11+
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = read_regular_file(path, MAX_SCENARIO_BYTES)   # a FIFO in its place must not hold up start-up
    except OSError as e:
        problem = getattr(e, "problem", None) or e.strerror or e
        raise ValueError(f"{path}: cannot read scenario: {problem}") from None
    try:
        tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        # the same file:line form as the simulator's own schema errors
        where = _TOML_POSITION.search(str(e))
        if where is None:
            raise ValueError(f"{path}: {e}") from None
        message = str(e)[:where.start()].strip()
        raise ValueError(f"{path}:{where[1]}: {message} (column {where[2]})") from None


def _check_with_simulator(spec: str) -> None:
    # A private ABI-level dlopen of the simulator (reference counted by the
    # dynamic linker), so checking works whichever libdcgm this process loaded.
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("int dcgmSimCheckScenario(const char *spec, char *errorText, int errorTextLen);")
    library = ffi.dlopen(str(library_path()))
    try:
        error = ffi.new("char[]", 1024)
        status = library.dcgmSimCheckScenario(spec.encode(), error, len(error))
    finally:
        ffi.dlclose(library)
    if status != 0:
        message = ffi.string(error).decode("utf-8", "replace").strip()
        raise ValueError(message or f"{spec}: invalid scenario (status {status})")


def source_name(library: object) -> str:
    """What the embedded engine in ``library`` (a loaded libdcgm.so.4) reads: "models", "nvml PATH" or ""."""
    path = getattr(library, "path", None)
    if not path:
        return ""
    # ctypes, not cffi's ABI mode: declaring one function with cffi loads its C parser, about 4 MiB resident for
    # the rest of the process.  The same path is the loader's same instance, so this reaches the running engine
    # (ctypes never closes it: one more reference to a library the process holds anyway).
    try:
        function = ctypes.CDLL(str(path)).dcgmSimSourceName
    except (OSError, AttributeError):
        return ""
    function.argtypes = (ctypes.c_char_p, ctypes.c_int)
    function.restype = ctypes.c_int
    name = ctypes.create_string_buffer(600)
    status = function(name, len(name))
    return name.value.decode("utf-8", "replace") if status == 0 else ""


def check_nvml() -> str:
    """The NVML library the engine's NVML source will open: ``$DCGM_ENGINE_NVML_LIB``, else the
    dynamic linker's search for libnvidia-ml.so.1.  ValueError (one line) when there is none."""
    given = os.environ.get(NVML_LIB_ENV, "")
    from dcgm_collector.dcgm.library import probe_library  # the binding, only once --nvml is asked for

    why = probe_library(given or NVML_LIBRARY_NAME)
    if why is not None:
        if given:
            raise ValueError(f"cannot open {NVML_LIB_ENV}={given} ({why}); point {NVML_LIB_ENV} at the "
                             f"driver's {NVML_LIBRARY_NAME}, or leave out --nvml")
        raise ValueError(f"no {NVML_LIBRARY_NAME} found by the dynamic linker (LD_LIBRARY_PATH, the ld.so cache, "
                         f"the system library directories): install the NVIDIA driver, set {NVML_LIB_ENV} to "
                         f"the library's path, or leave out --nvml")
    return given or NVML_LIBRARY_NAME
