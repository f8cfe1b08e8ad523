"""Finding and loading libdcgm.so.4: one library per process, loaded with dlopen.

Kept apart from the DCGM API (handle.py and the rest of this package) because
it is the one place that knows about the machine: where DCGM installs its
library, the environment variable that points at another one, and what to tell
an operator when none is found.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from dcgm_collector.dcgm.errors import DCGM_ST_OK, DcgmError, LibraryNotFoundError, check
from dcgm_collector.ext._native import ffi, lib
from dcgm_collector.files import FileRefused, open_regular_file

__all__ = ["HOW_TO_FIX", "LIBRARY_ENV", "LIBRARY_NAME", "STANDARD_DIRS", "Library", "load_library",
           "loaded_library"]

LIBRARY_NAME = "libdcgm.so.4"
LIBRARY_ENV = "DCGM_COLLECTOR_LIBDCGM"
# Where DCGM's packages put the library, for systems whose loader cache lacks it.
STANDARD_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/dcgm/lib64")
HOW_TO_FIX = (
    "install DCGM (package datacenter-gpu-manager-4), "
    f"or give the library's path (--dcgm-lib PATH or {LIBRARY_ENV}=PATH), "
    "or use the simulator (--sim)"
)


@dataclass(frozen=True)
class Library:
    """The libdcgm.so.4 loaded into this process (one per process)."""

    path: str

    def has(self, symbol: str) -> bool:
        """Whether the library exports symbol (one of the DCGM functions this binding knows)."""
        if not isinstance(symbol, str):
            raise TypeError(f"symbol must be a str, not {type(symbol).__name__}")
        return bool(lib.dcgmc_has(symbol.encode()))

    @property
    def is_simulator(self) -> bool:
        """True for the simulated library (it exports the dcgmSim* extensions)."""
        return self.has("dcgmSimCheckScenario")

    def version_info(self) -> dict[str, str]:
        """The library's build info (``dcgmVersionInfo``), as key/value pairs."""
        info = ffi.new("dcgmVersionInfo_t *", {"version": lib.dcgmVersionInfo_version})
        check(lib.dcgmVersionInfo(info), "dcgmVersionInfo")
        return _parse_build_info(_c_string(info.rawBuildInfoString))


_load_lock = threading.RLock()
_library: Library | None = None


def loaded_library() -> Library | None:
    """The library loaded in this process, if any."""
    return _library


def load_library(path: str | os.PathLike[str] | None = None, *, given_by: str = "path") -> Library:
    """Load libdcgm.so.4 once per process and return it.

    With ``path`` (a file, or a directory holding libdcgm.so.4) that library;
    else the library already loaded; else ``$DCGM_COLLECTOR_LIBDCGM``; else the
    normal search (the dynamic linker's, then DCGM's install directories).
    Loading the library already loaded is a no-op; another one is an error.
    ``given_by`` is how the errors name where ``path`` came from (a flag).
    """
    global _library
    with _load_lock:
        if path is None:
            if _library is not None:
                return _library
            env = os.environ.get(LIBRARY_ENV)
            loaded = _load_explicit(env, LIBRARY_ENV) if env else _load_by_search()
        else:
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"library path must be a str or path, not {type(path).__name__}")
            loaded = _load_explicit(os.fspath(path), given_by)
        _library = loaded
        return loaded


def _load_explicit(path: str, given_by: str) -> Library:
    if "\0" in path or not path:
        raise ValueError(f"bad library path {path!r}")
    if os.path.isdir(path):
        path = os.path.join(path, LIBRARY_NAME)
    if os.path.exists(path):
        path = os.path.abspath(path)  # so a relative path is not taken for a soname
        problem = _not_loadable(path)
        if problem is not None:
            raise LibraryNotFoundError(
                lib.DCGM_ST_LIBRARY_NOT_FOUND, f"cannot load {path} (from {given_by}): {problem}; fix: {HOW_TO_FIX}"
            )
    elif "/" in path:
        raise LibraryNotFoundError(
            lib.DCGM_ST_LIBRARY_NOT_FOUND,
            f"{path} (from {given_by}) does not exist; fix: {HOW_TO_FIX}",
        )
    status, why = _dlopen(path)
    if status != DCGM_ST_OK:
        raise LibraryNotFoundError(
            lib.DCGM_ST_LIBRARY_NOT_FOUND, f"cannot load {path} (from {given_by}): {why}; fix: {HOW_TO_FIX}"
        )
    return Library(_c_string(lib.dcgmc_loaded_path()))


def _not_loadable(path: str) -> str | None:
    """Why the file at ``path`` cannot be a library (not a regular file, unreadable), or None.

    Opened without blocking and checked before dlopen sees it: dlopen of a FIFO (or of a file on a
    hung mount) waits inside the dynamic linker with its lock held, where no thread of this process
    can be created and so no stop can run.  The open here waits, if it must, outside that lock.
    """
    try:
        os.close(open_regular_file(path))
    except FileRefused as refused:
        return refused.problem
    except OSError as error:
        return error.strerror or str(error)
    return None


def _load_by_search() -> Library:
    attempts = []
    status, why = _dlopen(LIBRARY_NAME)
    if status == DCGM_ST_OK:
        return Library(_c_string(lib.dcgmc_loaded_path()))
    ld_path = os.environ.get("LD_LIBRARY_PATH")
    ld_path = "LD_LIBRARY_PATH unset" if ld_path is None else f"LD_LIBRARY_PATH={ld_path!r}"
    attempts.append(f"the dynamic linker's path ({ld_path}, /etc/ld.so.cache, /lib, /usr/lib): {why}")
    for directory in STANDARD_DIRS:
        candidate = os.path.join(directory, LIBRARY_NAME)
        if not os.path.exists(candidate):
            attempts.append(f"{candidate}: no such file")
            continue
        problem = _not_loadable(candidate)
        if problem is not None:
            attempts.append(f"{candidate}: {problem}")
            continue
        status, why = _dlopen(candidate)
        if status == DCGM_ST_OK:
            return Library(_c_string(lib.dcgmc_loaded_path()))
        attempts.append(f"{candidate}: {why}")
    raise LibraryNotFoundError(
        lib.DCGM_ST_LIBRARY_NOT_FOUND,
        f"{LIBRARY_NAME} was not found; searched: {'; '.join(attempts)}; fix: {HOW_TO_FIX}",
    )


def probe_library(path: str) -> str | None:
    """Whether another shared library loads: None, or the dynamic linker's reason it does not.

    The load runs in the extension without the GIL (Python's own dlopen wrappers hold it), so a
    load that blocks holds up the calling thread alone, and SIGTERM still stops the process.  A path
    (not a bare soname for the linker's search) must first be a regular file, as for libdcgm.
    """
    if "/" in path or os.path.exists(path):
        problem = _not_loadable(path)
        if problem is not None:
            return problem
    error = ffi.new("char[]", 1024)
    if lib.dcgmc_probe_library(path.encode(), error, len(error)) == 0:
        return None
    return _c_string(error) or "dlopen failed"


def _dlopen(path: str) -> tuple[int, str]:
    error = ffi.new("char[]", 1024)
    status = lib.dcgmc_load(path.encode(), error, len(error))
    if status == lib.DCGM_ST_IN_USE:
        raise DcgmError(
            status,
            f"cannot load {path}: {_c_string(error)}; this process cannot switch libraries",
            "load_library",
        )
    return status, _c_string(error)


def _require_library(library: Library | str | os.PathLike[str] | None) -> Library:
    if isinstance(library, Library):
        if _library is None or library.path != _library.path:
            raise ValueError(f"{library.path} is not the library loaded in this process")
        return library
    return load_library(library)


def _parse_build_info(raw: str) -> dict[str, str]:
    pairs = (item.partition(":") for item in raw.split(";") if item.strip())
    return {key.strip(): value.strip() for key, _, value in pairs}


def _c_string(pointer: Any) -> str:
    return ffi.string(pointer).decode("utf-8", "replace")
