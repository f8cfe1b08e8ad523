"""The flight recorder's defaults, apart from the recorder so that the flag table reads them without loading it."""

from __future__ import annotations

__all__ = ["DEFAULT_AFTER_S", "DEFAULT_BEFORE_S", "DEFAULT_MAX_BYTES", "MAX_AFTER_S"]

DEFAULT_BEFORE_S = 300.0     # a recording keeps 5 minutes before its trigger
DEFAULT_AFTER_S = 60.0       # and 1 minute after it
DEFAULT_MAX_BYTES = 2**30    # the recordings' disk bound
MAX_AFTER_S = 600.0          # later triggers push a pending recording's end at most this far past its first
