"""The DCGM binding: loading libdcgm.so.4, the handle and its calls, DCGM's errors.

``from dcgm_collector import dcgm`` gives the public API of the submodules:
:mod:`.library` (finding and loading the library), :mod:`.handle` (the
Pythonic calls, which re-exports the types of :mod:`.values`, :mod:`.results`
and :mod:`.groups`) and :mod:`.errors` (status codes as exceptions).  The cffi
extension ``dcgm_collector.dcgm._native`` is built from ``_build.py``.
"""

from importlib.util import find_spec
from pathlib import Path

if find_spec("dcgm_collector.dcgm._native") is None:   # the compiled extension every submodule needs
    _checkout = Path(__file__).resolve().parents[2]
    if (_checkout / "setup.py").is_file():
        raise ImportError(
            f"dcgm_collector is imported from the source folder {_checkout}, which has no compiled extension: "
            f"run `pip install -e .` there to build it in place, or run from outside the checkout to use the "
            f"installed package")
    raise ImportError("the compiled extension dcgm_collector.dcgm._native is missing: reinstall the package "
                      "(pip install dcgm-collector; building needs gcc and the Python headers)")

from dcgm_collector.dcgm.errors import status_name, status_text  # noqa: E402
from dcgm_collector.dcgm.handle import *  # noqa: E402,F403 - the handle module's __all__ is the binding's API
from dcgm_collector.dcgm.handle import MAX_FIELDS_PER_FIELD_GROUP
from dcgm_collector.dcgm.handle import __all__ as _handle_all
from dcgm_collector.dcgm.library import HOW_TO_FIX, LIBRARY_ENV, LIBRARY_NAME, STANDARD_DIRS

__all__ = [*_handle_all, "HOW_TO_FIX", "LIBRARY_ENV", "LIBRARY_NAME", "MAX_FIELDS_PER_FIELD_GROUP", "STANDARD_DIRS",
           "status_name", "status_text"]
