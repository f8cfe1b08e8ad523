"""DCGM status codes as Python exceptions.

Names come from the ``DCGM_ST_*`` constants compiled into the extension and
messages from the loaded library's own ``errorString``, so they read the same
as every other DCGM tool's.
"""

from __future__ import annotations

from dcgm_collector.ext._native import ffi, lib
from dcgm_collector.ext.status import status_name  # the names are the extension's, below every stage

DCGM_ST_OK: int = lib.DCGM_ST_OK
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def status_text(code: int) -> str:
    """The library's errorString for code, or the code's name when it has none."""
    if _INT32_MIN <= code <= _INT32_MAX:
        text = lib.errorString(code)
        if text != ffi.NULL:
            return ffi.string(text).decode("utf-8", "replace")
    return status_name(code)


class DcgmError(Exception):
    """A DCGM call answered a status other than DCGM_ST_OK.

    ``code`` is the status (e.g. -16), ``name`` its constant
    ("DCGM_ST_NOT_WATCHED"), ``message`` the library's text for it and
    ``where`` the call that failed.
    """

    def __init__(self, code: int, message: str | None = None, where: str | None = None) -> None:
        self.code = int(code)
        self.name = status_name(self.code)
        self.message = message if message is not None else status_text(self.code)
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.name} ({self.code}): {self.message}"
        return f"{text} [in {self.where}]" if self.where else text

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.where))

    @staticmethod
    def from_status(code: int, where: str | None = None, message: str | None = None) -> DcgmError:
        """The most specific DcgmError subclass for a status code."""
        return _BY_CODE.get(code, DcgmError)(code, message, where)


class DcgmConnectionError(DcgmError):
    """DCGM_ST_CONNECTION_NOT_VALID: the hostengine is gone; reconnect and rebuild."""


class DcgmTimeoutError(DcgmError):
    """DCGM_ST_TIMEOUT: the hostengine did not answer in time."""


class DcgmNotWatchedError(DcgmError):
    """DCGM_ST_NOT_WATCHED: a field was read on an entity nobody watches it on."""


class DcgmUnknownFieldError(DcgmError):
    """DCGM_ST_UNKNOWN_FIELD: a field id the library has no metadata for."""


class LibraryNotFoundError(DcgmError):
    """DCGM_ST_LIBRARY_NOT_FOUND: no libdcgm.so.4 could be loaded."""


class HandleClosedError(DcgmError, ValueError):
    """A method was called on a closed Handle (or a group of one)."""


_BY_CODE: dict[int, type[DcgmError]] = {
    lib.DCGM_ST_CONNECTION_NOT_VALID: DcgmConnectionError,
    lib.DCGM_ST_TIMEOUT: DcgmTimeoutError,
    lib.DCGM_ST_NOT_WATCHED: DcgmNotWatchedError,
    lib.DCGM_ST_UNKNOWN_FIELD: DcgmUnknownFieldError,
    lib.DCGM_ST_LIBRARY_NOT_FOUND: LibraryNotFoundError,
}


def check(status: int, where: str) -> None:
    """Raise the DcgmError for status unless it is DCGM_ST_OK."""
    if status != DCGM_ST_OK:
        raise DcgmError.from_status(status, where)
