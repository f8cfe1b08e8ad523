"""cffi builder (API mode) for ``dcgm_collector.ext._native``.

The declarations are read from the project's C headers rather than retyped:
the ``CDEF-BEGIN``/``CDEF-END`` regions of ``native/dcgm_abi.h``,
``native/ext/loader.h``, ``native/ext/ring.h`` and ``native/ext/drain.h``, and one prototype per ``DCGM_FN``
row of ``native/dcgm_functions.h``.  The module source maps each DCGM name onto the
loader's forwarder, so Python calls ``lib.dcgmInit()`` and reaches whichever
libdcgm.so.4 was dlopen'd at run time.

Run directly (``python dcgm_collector/ext/_build.py [DIR]``) to build the
extension into DIR without installing, e.g. while working on the loader.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NamedTuple

from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
CDEF_REGION = re.compile(r"/\* CDEF-BEGIN \*/(.*?)/\* CDEF-END \*/", re.DOTALL)


class FunctionRow(NamedTuple):
    """One ``DCGM_FN(ret, name, (params), (args), missing)`` row."""

    ret: str
    name: str
    params: str
    args: str
    missing: str

    def prototype(self) -> str:
        return f"{self.ret} {self.name}{self.params};"


def cdef_region(header: Path) -> str:
    """The text between the CDEF markers of ``header``."""
    match = CDEF_REGION.search(header.read_text())
    if match is None:
        raise RuntimeError(f"{header}: no /* CDEF-BEGIN */ ... /* CDEF-END */ region")
    return match.group(1)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def function_rows(header: Path) -> list[FunctionRow]:
    """Every DCGM_FN row of ``header``, in file order."""
    rows = []
    for number, line in enumerate(header.read_text().splitlines(), 1):
        line = line.strip().rstrip("\\").strip()
        if not line.startswith("DCGM_FN("):
            continue
        if not line.endswith(")"):
            raise RuntimeError(f"{header}:{number}: a DCGM_FN row must fit on one line")
        parts = _split_top_level(line[len("DCGM_FN(") : -1])
        if (
            len(parts) != 5
            or not re.fullmatch(r"[A-Za-z_]\w*", parts[1])
            or not parts[2].startswith("(")
            or not parts[3].startswith("(")
        ):
            raise RuntimeError(f"{header}:{number}: cannot read DCGM_FN row: {line}")
        rows.append(FunctionRow(*parts))
    if not rows:
        raise RuntimeError(f"{header}: no DCGM_FN rows found")
    return rows


def make_builder(native: Path = NATIVE, relative: bool = True) -> FFI:
    ext = native / "ext"  # the extension's C sources; the DCGM ABI headers are in native itself
    rows = function_rows(native / "dcgm_functions.h")
    cdef = "\n".join(
        [
            cdef_region(native / "dcgm_abi.h"),
            "\n".join(row.prototype() for row in rows),
            cdef_region(ext / "loader.h"),
            cdef_region(ext / "ring.h"),
            cdef_region(ext / "drain.h"),
            cdef_region(ext / "ticker.h"),
        ]
    )
    # After the headers, every DCGM name the generated code calls becomes its forwarder.
    redirects = "\n".join(f"#define {row.name} dcgmc_fwd_{row.name}" for row in rows)
    where = _source_path if relative else str
    ffi = FFI()
    ffi.cdef(cdef)
    ffi.set_source(
        "dcgm_collector.ext._native",
        f'#include "loader.h"\n#include "drain.h"\n#include "ticker.h"\n{redirects}\n',
        sources=[where(ext / name) for name in ("loader.c", "ring.c", "ring_blocks.c", "block_codec.c", "drain.c",
                                                      "ticker.c")],
        include_dirs=[where(ext)],
        depends=[where(ext / name) for name in ("loader.h", "ring.h", "ring_internal.h", "ring_blocks.h",
                                                "block_codec.h", "block_bits.h", "drain.h", "ticker.h")]
        + [where(native / name) for name in ("dcgm_abi.h", "dcgm_functions.h")],
        libraries=["dl"],
        extra_compile_args=["-std=gnu11", "-fvisibility=hidden"],
    )
    return ffi


def _source_path(path: Path) -> str:
    """Relative to the working directory when below it: setuptools prefers relative sources."""
    cwd = Path.cwd().resolve()
    if path.is_relative_to(cwd):
        return str(path.relative_to(cwd))
    return str(path)


ffibuilder = make_builder()

if __name__ == "__main__":
    # cffi compiles from inside tmpdir, so paths must not be relative here.
    make_builder(relative=False).compile(tmpdir=sys.argv[1] if len(sys.argv) > 1 else ".", verbose=True)
