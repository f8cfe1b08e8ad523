"""native/'s folders keep their layering: the #include lines of its C sources and headers form no circle
between folders, native/nvml/ includes nothing of native/engine/, a folder is entered only through its
public header, and the node's one source list names every C file of native/node/.

A folder is a directory of native/ with the files directly in it (native/engine/ holds the engine's
façade, engine.h and engine.c; native/engine/core/ is a folder of its own).  The test programs in
native/tests/ are white-box: they may include any header, and C files, of any folder.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"

# The header(s) code outside a folder may include.  The API (engine/api/) is entered through the DCGM
# ABI it exports (native/dcgm_functions.h), never through a header of its own.
PUBLIC_HEADERS = {
    ".": {"dcgm_abi.h", "dcgm_functions.h", "dcgm_field_ids.h"},
    "ext": {"loader.h", "ring.h", "drain.h"},
    "node": {"node.h"},
    "nvml": {"nvml_abi.h"},
    "engine": {"engine.h"},
    "engine/api": set(),
    "engine/backends": {"backend.h"},
    "engine/core": {"core.h"},
    "engine/hostengine": {"hostengine.h"},
    "engine/remote": {"remote.h"},
    "engine/sources": {"source.h"},
    "engine/modules/admin": {"admin.h"},
    "engine/modules/config": {"config.h"},
    "engine/modules/cpu": {"cpu.h"},
    "engine/modules/health": {"health.h"},
    "engine/modules/imex": {"imex.h"},
    "engine/modules/nvlink": {"nvlink.h"},
    "engine/modules/policy": {"policy.h"},
    "engine/modules/topo": {"topo.h"},
}
WHITE_BOX = {"tests"}
ENGINE_TOP_LEVEL_MAX_C_FILES = 20
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SKIPPED = ("build", "build-asan")


def sources(native: Path) -> list[PurePosixPath]:
    """Every C source and header of native/, relative to it (build outputs left out)."""
    return sorted(PurePosixPath(path.relative_to(native).as_posix()) for path in native.rglob("*")
                  if path.suffix in (".c", ".h") and path.relative_to(native).parts[0] not in SKIPPED)


def folder(path: PurePosixPath) -> str:
    return str(path.parent)


def includes(native: Path) -> list[tuple[PurePosixPath, PurePosixPath]]:
    """(including file, included file) for every quoted #include, both relative to native/."""
    known = set(sources(native))
    edges = []
    for path in known:
        for name in INCLUDE.findall((native / path).read_text(encoding="utf-8", errors="replace")):
            target = PurePosixPath(*_normalized((path.parent / name).parts))
            if target not in known:
                raise AssertionError(f"native/{path}: #include \"{name}\" names no file of native/")
            edges.append((path, target))
    return edges


def _normalized(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            if not out:
                raise AssertionError(f"{'/'.join(parts)} leaves native/")
            out.pop()
        elif part != ".":
            out.append(part)
    return out


def folder_graph(native: Path) -> dict[str, dict[str, list[str]]]:
    """folder -> {folder it includes from -> the include lines that make the edge}."""
    graph: dict[str, dict[str, list[str]]] = {}
    for source, target in includes(native):
        a, b = folder(source), folder(target)
        graph.setdefault(a, {})
        if a != b:
            graph[a].setdefault(b, []).append(f"{source} -> {target}")
    return graph


def folder_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """A circle of folders (first folder repeated at the end), or None."""
    state: dict[str, int] = {}          # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def layering_problems(native: Path) -> list[str]:
    """Every breach of the layering in the tree at ``native``, one line each."""
    problems = []
    graph = folder_graph(native)
    cycle = folder_cycle(graph)
    if cycle:
        steps = [f"{a} -> {b} ({graph[a][b][0]})" for a, b in zip(cycle, cycle[1:])]
        problems.append("circle between folders: " + "; ".join(steps))
    for source, target in includes(native):
        a, b = folder(source), folder(target)
        if a == "nvml" and (b == "engine" or b.startswith("engine/")):
            problems.append(f"native/nvml includes the engine: {source} -> {target}")
        if a == b or a in WHITE_BOX:
            continue
        if b in WHITE_BOX:
            problems.append(f"{source} includes a test's file: {target}")
        elif b not in PUBLIC_HEADERS:
            problems.append(f"{source} -> {target}: folder {b} has no public header listed in this test")
        elif target.name not in PUBLIC_HEADERS[b]:
            public = ", ".join(sorted(PUBLIC_HEADERS[b])) or "none: nothing outside includes it"
            problems.append(f"{source} -> {target}: an internal header of {b} (its public header: {public})")
    return problems


def node_source_list(native: Path) -> tuple[list[str], list[str]]:
    """native/node/sources.txt as setup.py reads it (words ending in .c, ``#`` lines skipped) and as
    native/Makefile does (``$(filter %.c,...)`` of every word)."""
    text = (native / "node" / "sources.txt").read_text(encoding="utf-8")
    setup = [word for line in text.splitlines() if not line.lstrip().startswith("#")
             for word in line.split() if word.endswith(".c")]
    make = [word for word in text.split() if word.endswith(".c")]
    return setup, make


def test_native_folders_keep_their_layers():
    assert layering_problems(NATIVE) == []


def test_every_listed_public_header_exists():
    for name, headers in PUBLIC_HEADERS.items():
        assert (NATIVE / name).is_dir(), f"native/{name}"
        for header in headers:
            assert (NATIVE / name / header).is_file(), f"native/{name}/{header}"


def test_every_folder_with_sources_is_listed():
    folders = {folder(path) for path in sources(NATIVE)} - WHITE_BOX
    assert folders == set(PUBLIC_HEADERS), "add the folder and its public header to PUBLIC_HEADERS"


def test_the_node_is_one_folder_with_one_public_header():
    assert PUBLIC_HEADERS["node"] == {"node.h"}
    users = {folder(source) for source, target in includes(NATIVE)
             if folder(target) == "node" and folder(source) != "node"}
    assert {"nvml", "engine/core", "engine/sources"} <= users


def test_the_node_source_list_names_every_c_file_of_the_node():
    setup, make = node_source_list(NATIVE)
    on_disk = sorted(path.name for path in (NATIVE / "node").glob("*.c"))
    assert sorted(setup) == on_disk
    assert make == setup


def test_the_engine_top_level_is_small():
    top = sorted(path.name for path in (NATIVE / "engine").glob("*.c"))
    assert len(top) <= ENGINE_TOP_LEVEL_MAX_C_FILES, top


@pytest.fixture()
def native_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "native"
    shutil.copytree(NATIVE, copy, ignore=shutil.ignore_patterns(*SKIPPED))
    return copy


def _append_include(path: Path, name: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f'\n#include "{name}"\n', encoding="utf-8")


def test_a_circle_between_folders_fails(native_copy):
    # the core already includes the value sources: a source that includes the core closes a circle
    _append_include(native_copy / "engine" / "sources" / "source_models.c", "../core/core.h")
    problems = layering_problems(native_copy)
    assert any(p.startswith("circle between folders: ") and "engine/core -> engine/sources" in p
               for p in problems), problems


def test_nvml_including_the_engine_fails(native_copy):
    _append_include(native_copy / "nvml" / "nvml_core.c", "../engine/sources/source.h")
    problems = layering_problems(native_copy)
    assert "native/nvml includes the engine: nvml/nvml_core.c -> engine/sources/source.h" in problems


def test_an_internal_header_included_from_outside_fails(native_copy):
    _append_include(native_copy / "nvml" / "nvml_core.c", "../node/node_internal.h")
    problems = layering_problems(native_copy)
    assert any(p.startswith("nvml/nvml_core.c -> node/node_internal.h: an internal header of node")
               for p in problems), problems


def test_an_include_of_no_file_fails(native_copy):
    _append_include(native_copy / "node" / "node.c", "../engine/sim.h")
    with pytest.raises(AssertionError, match=r'native/node/node.c: #include "../engine/sim.h" names no file'):
        layering_problems(native_copy)
