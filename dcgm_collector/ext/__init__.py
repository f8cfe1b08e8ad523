"""The compiled cffi extension ``dcgm_collector.ext._native``: the DCGM loader, the ring and the drain.

It sits below every stage: the rings use its ring code without loading the
DCGM binding, and the binding (:mod:`dcgm_collector.dcgm`) calls the loaded
library through it.  It is built from ``_build.py`` (``native/ext/`` holds its
C sources); importing this package fails with what to do when it was not built.
"""

from importlib.util import find_spec
from pathlib import Path

if find_spec("dcgm_collector.ext._native") is None:   # the compiled extension every submodule needs
    _checkout = Path(__file__).resolve().parents[2]
    if (_checkout / "setup.py").is_file():
        raise ImportError(
            f"dcgm_collector is imported from the source folder {_checkout}, which has no compiled extension: "
            f"run `pip install -e .` there to build it in place, or run from outside the checkout to use the "
            f"installed package")
    raise ImportError("the compiled extension dcgm_collector.ext._native is missing: reinstall the package "
                      "(pip install dcgm-collector; building needs gcc and the Python headers)")

