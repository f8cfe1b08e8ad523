"""The run-time loader: finding libdcgm.so.4, forwarding, missing symbols.

Loading is once per process, so anything that needs a process without a
library (or with another one) runs in a child interpreter that imports the
same dcgm_collector package as this one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from dcgm_collector.ext._native import ffi, lib

import dcgm_collector
from dcgm_collector.dcgm import STANDARD_DIRS, DcgmError, Handle, Library, load_library
from dcgm_collector.dcgm.errors import LibraryNotFoundError, status_text

PACKAGE_PARENT = str(Path(dcgm_collector.__file__).resolve().parent.parent)
ROOT = Path(__file__).resolve().parents[3]
NATIVE = ROOT / "native"


def _load_builder():
    """The checkout's cffi builder (an installed copy has no native/ headers beside it)."""
    spec = importlib.util.spec_from_file_location("_build_native", ROOT / "dcgm_collector" / "ext" / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_build_native = _load_builder()


def run_child(code: str, tmp_path: Path, **env_changes: str | None) -> dict:
    """Run code in a fresh interpreter; it prints one JSON object, which is returned."""
    env = dict(os.environ)
    env.pop("DCGM_COLLECTOR_LIBDCGM", None)
    env.pop("DCGM_SIM_SCENARIO", None)
    env["PYTHONPATH"] = PACKAGE_PARENT
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )
    assert result.returncode == 0, f"child failed:\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout.strip().splitlines()[-1])


NOT_FOUND_CHILD = """
    import json
    from dcgm_collector.ext._native import lib
    from dcgm_collector.dcgm import LibraryNotFoundError, load_library
    from dcgm_collector.dcgm.errors import status_text
    out = {"init": lib.dcgmInit(), "text": status_text(-21), "loaded": lib.dcgmc_loaded()}
    try:
        load_library()
    except LibraryNotFoundError as e:
        out.update(code=e.code, name=e.name, message=e.message, text_of_error=str(e))
    print(json.dumps(out))
"""


def test_without_a_library_the_module_imports_and_one_error_says_what_was_searched(tmp_path):
    if any(os.path.exists(os.path.join(d, "libdcgm.so.4")) for d in STANDARD_DIRS):
        pytest.skip("this machine has DCGM installed")
    out = run_child(NOT_FOUND_CHILD, tmp_path, LD_LIBRARY_PATH="")
    assert out["loaded"] == 0
    assert out["init"] == lib.DCGM_ST_FUNCTION_NOT_FOUND   # forwarders answer without a library
    assert out["text"] == "DCGM_ST_CONNECTION_NOT_VALID"   # no errorString yet: the name stands in
    assert out["code"] == -25 and out["name"] == "DCGM_ST_LIBRARY_NOT_FOUND"
    message = out["message"]
    for searched in ["libdcgm.so.4", "LD_LIBRARY_PATH", "ld.so.cache", *STANDARD_DIRS]:
        assert searched in message
    for fix in ["datacenter-gpu-manager-4", "--dcgm-lib", "DCGM_COLLECTOR_LIBDCGM", "--sim"]:
        assert fix in message
    assert "\n" not in out["text_of_error"]


def test_env_var_names_the_library(tmp_path, sim_lib):
    out = run_child(
        """
        import json
        from dcgm_collector.dcgm import load_library
        lib = load_library()
        print(json.dumps({"path": lib.path, "sim": lib.is_simulator, "again": load_library() is lib}))
        """,
        tmp_path, DCGM_COLLECTOR_LIBDCGM=str(sim_lib),
    )
    assert out == {"path": str(sim_lib.resolve()), "sim": True, "again": True}


def test_env_var_pointing_nowhere_is_reported_with_the_fixes(tmp_path):
    missing = tmp_path / "nowhere" / "libdcgm.so.4"
    out = run_child(NOT_FOUND_CHILD, tmp_path, DCGM_COLLECTOR_LIBDCGM=str(missing))
    assert out["code"] == -25
    assert str(missing) in out["message"] and "DCGM_COLLECTOR_LIBDCGM" in out["message"]
    assert "--sim" in out["message"]


def test_soname_search_through_ld_library_path(tmp_path, sim_lib):
    out = run_child(
        """
        import json
        from dcgm_collector.dcgm import load_library
        print(json.dumps({"path": load_library().path}))
        """,
        tmp_path, LD_LIBRARY_PATH=str(sim_lib.parent),
    )
    assert out["path"] == str(sim_lib.resolve())


def test_a_directory_and_a_relative_path_both_work(tmp_path, sim_lib):
    out = run_child(
        f"""
        import json, os
        from dcgm_collector.dcgm import load_library
        a = load_library({str(sim_lib.parent)!r})
        os.chdir({str(sim_lib.parent.parent)!r})
        b = load_library("lib/libdcgm.so.4")
        print(json.dumps({{"a": a.path, "same": a == b}}))
        """,
        tmp_path,
    )
    assert out == {"a": str(sim_lib.resolve()), "same": True}


def test_a_library_without_dcgm_symbols_answers_function_not_found(tmp_path):
    """libm has none of DCGM's symbols: every forwarder must answer its row's missing value."""
    out = run_child(
        """
        import json
        from dcgm_collector.ext._native import ffi, lib
        from dcgm_collector.dcgm import DcgmError, Handle, load_library
        loaded = load_library("libm.so.6")
        out = {"has": loaded.has("dcgmInit"), "meta_null": lib.DcgmFieldGetById(150) == ffi.NULL,
               "error_string_null": lib.errorString(-1) == ffi.NULL}
        try:
            Handle.embedded(library=loaded)
        except DcgmError as e:
            out.update(code=e.code, where=e.where, text=str(e))
        print(json.dumps(out))
        """,
        tmp_path,
    )
    assert out["has"] is False and out["meta_null"] and out["error_string_null"]
    assert out["code"] == lib.DCGM_ST_FUNCTION_NOT_FOUND and out["where"] == "dcgmInit"
    assert out["text"].startswith("DCGM_ST_FUNCTION_NOT_FOUND (-20): ")


def test_loading_the_same_library_again_is_a_no_op(library, sim_lib, tmp_path):
    assert load_library(sim_lib) == library
    assert load_library(str(sim_lib)) == library
    assert load_library() == library
    link = tmp_path / "libdcgm.so.4"
    link.symlink_to(sim_lib)
    assert load_library(link) == library       # another name for the same file


def test_loading_another_library_while_one_is_loaded_is_refused(library, sim_lib, tmp_path):
    copy = tmp_path / "libdcgm.so.4"
    shutil.copy(sim_lib, copy)
    with pytest.raises(DcgmError) as info:
        load_library(copy)
    assert info.value.code == lib.DCGM_ST_IN_USE
    assert str(copy) in str(info.value) and library.path in str(info.value)
    assert load_library() == library            # still the first one


def test_bad_library_arguments(library):
    with pytest.raises(TypeError):
        load_library(42)
    with pytest.raises(ValueError):
        load_library("bad\0path")
    with pytest.raises(ValueError):
        Handle.embedded(library=Library("/not/the/loaded/one.so"))
    with pytest.raises(TypeError):
        library.has(b"dcgmInit")


def test_library_reports_its_path_and_symbols(library, sim_lib):
    assert library.path == str(sim_lib.resolve())
    assert ffi.string(lib.dcgmc_loaded_path()).decode() == library.path
    assert library.is_simulator
    for row in _build_native.function_rows(NATIVE / "dcgm_functions.h"):
        assert library.has(row.name), row.name         # the simulator defines every row
    assert not library.has("dcgmNoSuchFunction")
    assert status_text(lib.DCGM_ST_CONNECTION_NOT_VALID) == ffi.string(lib.errorString(-21)).decode()


def test_every_function_row_is_declared_under_its_real_name():
    rows = _build_native.function_rows(NATIVE / "dcgm_functions.h")
    text = (NATIVE / "dcgm_functions.h").read_text()
    assert len(rows) == len(re.findall(r"^DCGM_FN\(", text, re.MULTILINE)) > 50
    for row in rows:
        assert callable(getattr(lib, row.name)), row.name
    assert "errorString" in {r.name for r in rows}
    assert ffi.typeof(lib.dcgmGetValuesSince_v2).args[3].cname == "long long"


def test_the_extension_never_links_libdcgm():
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    import dcgm_collector.ext._native as native

    dynamic = subprocess.run([nm, "-D", native.__file__], capture_output=True, text=True, check=True).stdout
    undefined = {line.split()[-1] for line in dynamic.splitlines() if " U " in line}
    assert not {s for s in undefined if s.lower().startswith(("dcgm", "errorstring"))}
    exported = {line.split()[-1] for line in dynamic.splitlines() if " T " in line}
    assert exported == {"PyInit__native"}


def test_dcgm_error_pickles_and_formats():
    import pickle

    error = DcgmError(lib.DCGM_ST_NOT_WATCHED, where="dcgmGetValuesSince_v2")
    assert str(error) == f"DCGM_ST_NOT_WATCHED (-16): {error.message} [in dcgmGetValuesSince_v2]"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.name, copy.message, copy.where) == (error.code, error.name, error.message, error.where)
    assert isinstance(LibraryNotFoundError(-25, "x"), DcgmError)
    assert DcgmError(-99999).name == "DCGM_ST_UNKNOWN_-99999"
    assert DcgmError(2**40).message == "DCGM_ST_UNKNOWN_1099511627776"
