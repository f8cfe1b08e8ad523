"""Build steps pyproject.toml cannot express.

1. The cffi extension ``dcgm_collector.ext._native`` (API mode), from
   ``dcgm_collector/ext/_build.py``.
2. The simulated ``libdcgm.so.4`` from ``native/engine/**/*.c`` and the node's
   sources: a plain shared library (not a Python extension) installed as
   ``dcgm_collector/engine/lib/libdcgm.so.4``, so that ``--sim`` and any DCGM
   client can dlopen it.  Built with the same compiler setuptools uses for
   the extension, with the flags of ``native/Makefile``.
3. The simulated ``libnvidia-ml.so.1`` (NVML) from ``native/nvml/*.c`` and the
   node's sources, installed beside it as
   ``dcgm_collector/engine/lib/libnvidia-ml.so.1``.

The node's sources are those ``native/node/sources.txt`` lists, the one list
``native/Makefile`` reads too.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SIM_SOURCES = "native/engine"
SIM_MAP = "native/engine/libdcgm.map"
# what the engine's sources include: its own headers, the node's and the shared DCGM ABI headers
SIM_HEADERS = ("native/engine/**/*.h", "native/node/*.h", "native/*.h")
SIM_LIBRARY = "libdcgm.so.4"
SIM_PACKAGE = "dcgm_collector.engine"
NVML_SOURCES = "native/nvml"
NVML_MAP = "native/nvml/libnvidia-ml.map"
NVML_HEADERS = ("native/nvml/*.h", "native/node/*.h", "native/*.h")
NVML_LIBRARY = "libnvidia-ml.so.1"
# the simulated node (physics, GPU models, scenarios, field metadata), compiled into both
# libraries so that both give the same values: the sources its list names
NODE_DIR = "native/node"
NODE_SOURCE_LIST = "native/node/sources.txt"


def node_sources() -> list[str]:
    """The node's C sources, as ``native/node/sources.txt`` names them (``#`` lines are comments)."""
    path = HERE / NODE_SOURCE_LIST
    if not path.is_file():
        raise RuntimeError(f"{NODE_SOURCE_LIST} is missing: it lists the node's C sources")
    names = [word for line in path.read_text(encoding="utf-8").splitlines()
             if not line.lstrip().startswith("#") for word in line.split() if word.endswith(".c")]
    if not names:
        raise RuntimeError(f"{NODE_SOURCE_LIST} names no C sources")
    return [f"{NODE_DIR}/{name}" for name in names]


class build_ext_with_simulator(build_ext):
    """build_ext that also builds the simulated libdcgm.so.4 into the package."""

    def run(self) -> None:
        _require_build_tools()
        super().run()
        for library, built in ((SIM_LIBRARY, self._build_simulator()), (NVML_LIBRARY, self._build_nvml())):
            if self.inplace:
                # editable installs import the package from the source tree
                target = self._inplace_simulator_path(library)
                self.mkpath(os.path.dirname(target))
                self.copy_file(built, target, level=self.verbose)

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        for library in (SIM_LIBRARY, NVML_LIBRARY):
            outputs.append(self._inplace_simulator_path(library) if self.inplace else self._simulator_path(library))
        return outputs

    def get_output_mapping(self) -> dict[str, str]:
        mapping = super().get_output_mapping()
        if self.inplace:
            for library in (SIM_LIBRARY, NVML_LIBRARY):
                mapping[self._simulator_path(library)] = self._inplace_simulator_path(library)
        return mapping

    def _simulator_path(self, library: str = SIM_LIBRARY) -> str:
        return os.path.join(self.build_lib, *SIM_PACKAGE.split("."), "lib", library)

    def _inplace_simulator_path(self, library: str = SIM_LIBRARY) -> str:
        package_dir = self.get_finalized_command("build_py").get_package_dir(SIM_PACKAGE)
        return os.path.join(package_dir, "lib", library)

    def _build_simulator(self) -> str:
        # the engine's top level and every sub-folder (api/, core/, modules/*/, ...)
        sources = sorted(str(p.relative_to(HERE)) for p in (HERE / SIM_SOURCES).rglob("*.c"))
        if not sources:
            raise RuntimeError(f"no C sources in {SIM_SOURCES}")
        return self._build_shared_library(SIM_LIBRARY, sources + node_sources(), SIM_HEADERS + (NODE_SOURCE_LIST,),
                                          SIM_MAP, "sim")

    def _build_nvml(self) -> str:
        sources = sorted(str(p.relative_to(HERE)) for p in (HERE / NVML_SOURCES).glob("*.c"))
        if not sources:
            raise RuntimeError(f"no C sources in {NVML_SOURCES}")
        return self._build_shared_library(NVML_LIBRARY, sources + node_sources(),
                                          NVML_HEADERS + (NODE_SOURCE_LIST,), NVML_MAP, "nvml")

    def _build_shared_library(self, library: str, sources: list[str], header_globs: tuple[str, ...],
                              version_script: str, temp_name: str) -> str:
        if not (HERE / version_script).is_file():
            raise RuntimeError(f"{version_script} is missing: it names the symbols {library} exports")
        output = self._simulator_path(library)
        headers = sorted(str(p.relative_to(HERE)) for pattern in header_globs for p in HERE.glob(pattern))
        depends = sources + headers + [version_script]
        if not self.force and _up_to_date(output, depends):
            return output
        compiler = self.compiler
        objects = compiler.compile(
            sources,
            # one object folder per library: both compile the node's sources
            output_dir=os.path.join(self.build_temp, temp_name),
            extra_postargs=["-std=gnu11", "-O2", "-fPIC", "-pthread"],
            depends=depends,
        )
        os.makedirs(os.path.dirname(output), exist_ok=True)
        compiler.link_shared_object(
            objects,
            output,
            libraries=["dl", "m"],
            extra_postargs=[
                "-pthread",
                f"-Wl,-soname,{library}",
                f"-Wl,--version-script={version_script}",
            ],
        )
        return output


BUILD_TOOLS_HELP = (
    "building dcgm-collector from source needs a C compiler and the Python headers: "
    "on Debian or Ubuntu `apt-get install gcc python3-dev`, on RHEL, Rocky or Fedora `dnf install gcc python3-devel`; "
    "or install a binary wheel, which needs neither"
)


def _require_build_tools() -> None:
    """Fail with one clear line, not setuptools' generic compiler error, when gcc or Python.h is missing."""
    compiler = os.environ.get("CC", sysconfig.get_config_var("CC") or "cc").split()[0]
    missing = []
    if shutil.which(compiler) is None:
        missing.append(f"no C compiler ({compiler} is not on PATH)")
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        missing.append(f"no Python headers ({headers} is missing)")
    if missing:
        raise SystemExit(f"error: {' and '.join(missing)}; {BUILD_TOOLS_HELP}")


def _up_to_date(output: str, inputs: list[str]) -> bool:
    if not os.path.exists(output):
        return False
    built = os.path.getmtime(output)
    return all(os.path.getmtime(path) <= built for path in inputs)


setup(
    cffi_modules=["dcgm_collector/ext/_build.py:ffibuilder"],
    cmdclass={"build_ext": build_ext_with_simulator},
)
