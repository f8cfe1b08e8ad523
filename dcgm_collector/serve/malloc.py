"""Few malloc arenas for a process that serves HTTP from a thread per connection.

glibc gives threads that allocate at once arenas of their own, up to eight
per core, and an arena keeps the high-water mark of what its threads ever
held: the server makes a thread per connection, so under many clients a
few megabytes of answer each, spread over sixteen arenas on a two-core
node, stay resident long after the answers are gone (measured: +106 MiB of
RSS under 64 history clients, against +31 MiB with two arenas; see
benchmarks/README.md).  Python threads take turns under the GIL, so more
arenas buy little.  :func:`limit_arenas` sets the cap glibc reads from
MALLOC_ARENA_MAX, unless the operator set that variable (then glibc has
read it already) or the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import logging
import os

__all__ = ["MALLOC_ARENAS", "limit_arenas"]

log = logging.getLogger(__name__)

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8   # glibc's malloc.h


def limit_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``arenas``, early, before the threads start; True if it was set."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        if not hasattr(libc, "gnu_get_libc_version"):   # not glibc: its mallopt takes other options
            return False
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    if mallopt(_M_ARENA_MAX, arenas) != 1:
        log.debug("mallopt(M_ARENA_MAX, %d) refused", arenas)
        return False
    return True
