"""The simulated NVML's own declarations against the layouts of the real NVML 13 header.

reference/nvml/abi-layout-nvml13.tsv was produced by compiling a probe against
NVIDIA's nvml.h.  Here the same kind of probe is generated for every struct,
enumerator and macro that native/nvml/nvml_abi.h declares, compiled against
our header with the system C compiler, and its output compared row by row.
A declared name the table does not record must be on a short allowlist, and a
one-byte change to the header must make the comparison fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEADER = ROOT / "native" / "nvml" / "nvml_abi.h"
LAYOUT_TSV = ROOT / "reference" / "nvml" / "abi-layout-nvml13.tsv"

# Declared, but the reference probe did not record them (values are NVML's documented ones).
NOT_IN_REFERENCE = {
    "DCGM_SIM_NVML_ABI_H",  # include guard
    "nvmlComputeMode_t", "NVML_COMPUTEMODE_DEFAULT", "NVML_COMPUTEMODE_EXCLUSIVE_THREAD",
    "NVML_COMPUTEMODE_PROHIBITED", "NVML_COMPUTEMODE_EXCLUSIVE_PROCESS",
    "nvmlDriverModel_t", "NVML_DRIVER_WDDM", "NVML_DRIVER_WDM", "NVML_DRIVER_MCDM",
}

# What an NVML reader passes across the ABI: all must be declared, so all are checked.
REQUIRED_STRUCTS = {
    "nvmlPciInfo_t", "nvmlUtilization_t", "nvmlMemory_t", "nvmlMemory_v2_t", "nvmlValue_t", "nvmlFieldValue_t",
    "nvmlEventData_t", "nvmlProcessInfo_t", "nvmlViolationTime_t", "nvmlTemperature_t", "nvmlGpmSupport_t",
    "nvmlGpmMetric_t", "nvmlGpmMetricsGet_t", "nvmlProcessInfo_v1_t", "nvmlProcessUtilizationSample_t",
}


def _rows() -> list[list[str]]:
    return [line.split("\t") for line in LAYOUT_TSV.read_text().splitlines() if line.strip()]


def _declarations(text: str) -> tuple[set[str], dict[str, str], set[str]]:
    """(type names, enumerator -> its enum's typedef name, macro names) the header declares."""
    types = set(re.findall(r"\}\s*(\w+)\s*;", text)) | set(re.findall(r"typedef\s+[\w\s\*]+?\b(\w+)\s*;", text))
    enumerators = {}
    for body, name in re.findall(r"typedef\s+enum\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        for enumerator in re.findall(r"^\s*(\w+)\s*=", body, re.M):
            enumerators[enumerator] = name
    macros = set(re.findall(r"^#define\s+(\w+)\s", text, re.M))
    return types, enumerators, macros


def _probe(header: Path, rows: list[list[str]], tmp_path: Path) -> tuple[list[str], list[str]]:
    """(expected rows, probe output rows) for everything the header declares that the table records."""
    types, enumerators, macros = _declarations(header.read_text())
    lines = ["#include <stddef.h>", "#include <stdio.h>", f'#include "{header}"', "int main(void) {"]
    expected = []
    for row in rows:
        kind, type_name, member = row[0], row[1], row[2]
        if kind == "sizeof" and type_name in types:
            lines.append(f'printf("sizeof\\t{type_name}\\t\\t%zu\\t%zu\\n", sizeof({type_name}), '
                         f"_Alignof({type_name}));")
        elif kind == "offsetof" and type_name in types:
            lines.append(f'printf("offsetof\\t{type_name}\\t{member}\\t%zu\\t%zu\\n", offsetof({type_name}, {member}), '
                         f"sizeof((({type_name} *)0)->{member}));")
        elif kind == "enum" and member in enumerators:
            # the enumerator's own enum type is part of the row: a value moved between enums fails
            lines.append(f'printf("enum\\t{enumerators[member]}\\t{member}\\t%lld\\n", (long long){member});')
        elif kind == "macro" and member in macros:
            lines.append(f'printf("macro\\t\\t{member}\\t%lld\\t0x%llx\\n", (long long)({member}), '
                         f"(unsigned long long)(long long)({member}));")
        else:
            continue
        expected.append("\t".join(row))
    lines.append("return 0; }")
    (tmp_path / "probe.c").write_text("\n".join(lines) + "\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror", "-o", str(tmp_path / "probe"), str(tmp_path / "probe.c")],
                   check=True)
    out = subprocess.run([str(tmp_path / "probe")], check=True, capture_output=True, text=True).stdout
    return expected, out.splitlines()


@pytest.fixture(scope="module")
def compiler():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")


def test_every_declared_struct_and_constant_matches_the_nvml13_layout(compiler, tmp_path):
    expected, got = _probe(HEADER, _rows(), tmp_path)
    mismatches = [(want, have) for want, have in zip(expected, got) if want != have]
    assert len(expected) == len(got)
    assert not mismatches, "\n".join(f"want {w!r}\n got {h!r}" for w, h in mismatches[:20])
    assert len(expected) > 150  # the probe really checked the declarations


def test_every_declared_name_is_in_the_reference_or_allowlisted(compiler):
    types, enumerators, macros = _declarations(HEADER.read_text())
    recorded = set()
    for row in _rows():
        recorded.update({row[1], row[2]})
    opaque_or_plain = {"nvmlDevice_t", "nvmlEventSet_t", "nvmlGpmSample_t", "nvmlDeviceArchitecture_t"}
    unrecorded = (set(enumerators) | macros) - recorded - NOT_IN_REFERENCE
    assert not unrecorded, f"declared but not in {LAYOUT_TSV.name}: {sorted(unrecorded)}"
    struct_types = {t for t in types if t.endswith("_t")} - opaque_or_plain - set(enumerators.values())
    missing = struct_types - recorded - NOT_IN_REFERENCE
    assert not missing, f"structs the reference has no layout for: {sorted(missing)}"
    assert REQUIRED_STRUCTS <= types, f"missing structs: {sorted(REQUIRED_STRUCTS - types)}"


@pytest.mark.parametrize("change", [
    ("char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];", "char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE + 1];"),
    ("    unsigned int gpu; ", "    unsigned int gpu; char pad; "),
    ("NVML_ERROR_GPU_IS_LOST = 15,", "NVML_ERROR_GPU_IS_LOST = 16,"),
    ("#define NVML_FI_DEV_MEMORY_TEMP 82", "#define NVML_FI_DEV_MEMORY_TEMP 83"),
], ids=["pci-bus-id-one-byte-longer", "utilization-one-byte-inserted", "return-code", "field-id"])
def test_a_one_byte_change_to_the_header_fails_the_comparison(compiler, tmp_path, change):
    old, new = change
    text = HEADER.read_text()
    assert old in text
    mutated = tmp_path / "nvml_abi.h"
    mutated.write_text(text.replace(old, new, 1))
    expected, got = _probe(mutated, _rows(), tmp_path)
    assert [w for w, h in zip(expected, got) if w != h], "the probe did not notice the change"
