"""Reading files that a user or another process can place: never blocking, never unbounded.

Every file the collector reads at someone else's say-so (a counters file, a
recording, a sidecar, a token or password file, a job mapping) goes through
:func:`read_regular_file`:

* it is opened with O_NONBLOCK, so a FIFO in its place does not wait for a
  writer for ever (a blocked open cannot be interrupted by SIGTERM);
* the checks are made on the opened descriptor (fstat), so the file cannot be
  swapped for another between the check and the read: it must be a regular
  file of at most ``limit`` bytes, and a file that grows after the check is
  still read only that far;
* with ``folder``, the path must stay inside that folder once symbolic links
  are resolved, so a link placed in a watched folder cannot point the
  collector at /dev/zero or at a file outside it.

Errors are :class:`FileRefused`, an OSError whose str() is one line naming the
file and the problem.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["FileRefused", "file_kind", "open_regular_file", "read_regular_file", "size_text"]


class FileRefused(OSError):
    """A file that cannot be read as asked; str() is one line: ``path: problem``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(errno.EINVAL, problem, path)
        self.path = path
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def file_kind(mode: int) -> str:
    """What a file of this st_mode is, in words (for "not a regular file (...)")."""
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
    return next((kind for test, kind in kinds if test(mode)), f"file type 0o{stat.S_IFMT(mode):o}")


def size_text(size: int) -> str:
    """A byte count as the messages write it for people: 1 GiB, 64 KiB, 300 bytes; a count that is no whole number
    of its unit is given exactly as well: 1.5 GiB (1610612736 bytes)."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift:
            whole, part = divmod(size, 1 << shift)
            return f"{whole} {unit}" if not part else f"{size / (1 << shift):.1f} {unit} ({size} bytes)"
    return "1 byte" if size == 1 else f"{size} bytes"


def _inside(path: str, folder: str) -> bool:
    real_folder = os.path.realpath(folder)
    real = os.path.realpath(path)
    return real == real_folder or real.startswith(real_folder.rstrip(os.sep) + os.sep)


def open_regular_file(path: str | os.PathLike[str], limit: int | None = None, *,
                      folder: str | os.PathLike[str] | None = None) -> int:
    """A descriptor (O_RDONLY, O_CLOEXEC) of a regular file of at most ``limit`` bytes; the caller closes it.

    FileRefused for a FIFO, device, socket or directory, a file over the limit, or (with ``folder``) a
    path whose symbolic links lead out of ``folder``; other OSErrors (missing, no permission) pass through.
    """
    name = os.fspath(path)
    if folder is not None and not _inside(name, os.fspath(folder)):
        raise FileRefused(name, f"a symbolic link out of {os.fspath(folder)}")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as error:
        if error.errno == errno.ENXIO:   # what opening a Unix socket answers
            try:
                kind = file_kind(os.stat(name).st_mode)
            except OSError:
                kind = "a socket"
            raise FileRefused(name, f"not a regular file ({kind})") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(name, f"not a regular file ({file_kind(info.st_mode)})")
        if limit is not None and info.st_size > limit:
            raise FileRefused(name, f"larger than {size_text(limit)}")
        os.set_blocking(fd, True)   # a regular file: reads never wait on a writer
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_file(path: str | os.PathLike[str], limit: int, *,
                      folder: str | os.PathLike[str] | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (see :func:`open_regular_file`)."""
    name = os.fspath(path)
    fd = open_regular_file(name, limit, folder=folder)
    try:
        chunks = []
        left = limit + 1   # a file that grows after the fstat is still read only this far
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FileRefused(name, f"larger than {size_text(limit)}")
    return data
