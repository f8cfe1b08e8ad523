"""The DCGM binding: loading libdcgm.so.4, the handle and its calls, DCGM's errors.

``from dcgm_collector import dcgm`` gives the public API of the submodules:
:mod:`.library` (finding and loading the library), :mod:`.handle` (the
Pythonic calls, which re-exports the types of :mod:`.values`, :mod:`.results`
and :mod:`.groups`) and :mod:`.errors` (status codes as exceptions).  The cffi
extension the binding calls is :mod:`dcgm_collector.ext`.
"""

import dcgm_collector.ext  # noqa: F401 - fails with what to do when the compiled extension is missing
from dcgm_collector.dcgm.errors import status_name, status_text
from dcgm_collector.dcgm.handle import *  # noqa: F403 - the handle module's __all__ is the binding's API
from dcgm_collector.dcgm.handle import MAX_FIELDS_PER_FIELD_GROUP
from dcgm_collector.dcgm.handle import __all__ as _handle_all
from dcgm_collector.dcgm.library import HOW_TO_FIX, LIBRARY_ENV, LIBRARY_NAME, STANDARD_DIRS

__all__ = [*_handle_all, "HOW_TO_FIX", "LIBRARY_ENV", "LIBRARY_NAME", "MAX_FIELDS_PER_FIELD_GROUP", "STANDARD_DIRS",
           "status_name", "status_text"]
