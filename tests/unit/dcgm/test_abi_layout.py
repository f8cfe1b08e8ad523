"""Our own DCGM declarations against the layouts of the real DCGM 4.6 headers.

reference/dcgm/abi-layout.tsv was produced by compiling a probe against NVIDIA's
headers.  Here the same probe is generated for every row that names something
native/dcgm_abi.h declares, compiled against our header with the system C
compiler, and its output compared row by row.  The cffi extension's view of
the same structs is checked too, since that is what Python code reads.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEADER = ROOT / "native" / "dcgm_abi.h"
LAYOUT_TSV = ROOT / "reference" / "dcgm" / "abi-layout.tsv"

# Structs a collector or a common DCGM client passes across the ABI, the
# policy manager's included: all must be declared (and so checked).  PID and
# job structs are not used.
REQUIRED_STRUCTS = {
    "dcgmPolicy_v1", "dcgmPolicyConditionParams_t", "dcgmPolicyCallbackResponse_v2",
    "dcgmFieldValue_v1", "dcgmFieldValue_v2", "dcgmGroupEntityPair_t",
    "dcgmConnectV2Params_v1", "dcgmConnectV2Params_v2", "dcgmConnectV3Params_v1",
    "dcgmStartEmbeddedV2Params_v1", "dcgmStartEmbeddedV2Params_v2",
    "dcgmStartEmbeddedV2Params_v3", "dcgmDeviceAttributes_v3", "dcgmGroupInfo_v3",
    "dcgmFieldGroupInfo_v1", "dcgmAllFieldGroup_v1", "dcgmHealthResponse_v5",
    "dcgmHealthSetParams_v2", "dcgmMigHierarchy_v2", "dcgmCreateFakeEntities_v2",
    "dcgmInjectFieldValue_v1", "dcgm_field_meta_t", "dcgmProfGetMetricGroups_v3",
    "dcgmVersionInfo_v2", "dcgmHostengineHealth_v1",
}


def _layout_rows() -> list[list[str]]:
    return [line.split("\t") for line in LAYOUT_TSV.read_text().splitlines() if line.strip()]


def _declared_names() -> tuple[set[str], set[str]]:
    """Type names and constant names our header declares."""
    text = HEADER.read_text()
    types = set(re.findall(r"\}\s*(\w+)\s*;", text))
    types |= set(re.findall(r"typedef\s+[\w\s\*]+?\b(\w+)\s*;", text))
    consts = set(re.findall(r"#define\s+(\w+)\s", text))
    consts |= set(re.findall(r"^\s*(\w+)\s*=\s*-?\w+,?\s*$", text, re.M))
    return types, consts


def _probe_source(rows: list[list[str]], types: set[str], consts: set[str]) -> tuple[str, list[str]]:
    """C source printing each checkable row in the TSV's own format."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', f'#include "{HEADER}"', "int main(void) {"]
    expected = []
    for row in rows:
        kind = row[0]
        if kind == "S" and row[1] in types:
            lines.append(f'printf("S\\t{row[1]}\\t-\\t%zu\\t%zu\\n", sizeof({row[1]}), _Alignof({row[1]}));')
        elif kind == "M" and row[1] in types:
            t, m = row[1], row[2]
            lines.append(
                f'printf("M\\t{t}\\t{m}\\t%zu\\t%zu\\n", offsetof({t}, {m}), sizeof((({t} *)0)->{m}));'
            )
        elif kind == "V" and row[1] in consts:
            lines.append(f'printf("V\\t{row[1]}\\t0x%08x\\t%u\\n", (unsigned){row[1]}, (unsigned){row[1]});')
        elif kind == "E" and row[1] in consts:
            lines.append(f'printf("E\\t{row[1]}\\t%lld\\n", (long long){row[1]});')
            row = row[:3]
        elif kind == "C":
            name = row[1]
            m = re.fullmatch(r"sizeof\((\w+)\)", name)
            if m and m.group(1) in types:
                lines.append(f'printf("C\\t{name}\\t%zu\\n", sizeof({m.group(1)}));')
                row = row[:3]
            elif name in consts:
                value = row[2]
                if value.startswith('"'):
                    lines.append(f'printf("C\\t{name}\\t\\"%s\\"\\n", {name});')
                elif value.startswith("'"):
                    lines.append(f'printf("C\\t{name}\\t%d\\n", {name});')
                    row = [row[0], row[1], row[3]]
                elif "." in value:
                    lines.append(f'printf("C\\t{name}\\t%.1f\\n", (double){name});')
                else:
                    lines.append(f'printf("C\\t{name}\\t%llu\\n", (unsigned long long){name});')
                row = row[:3]
            else:
                continue
        else:
            continue
        expected.append("\t".join(row))
    lines.append("return 0; }")
    return "\n".join(lines) + "\n", expected


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    types, consts = _declared_names()
    source, expected = _probe_source(_layout_rows(), types, consts)
    work = tmp_path_factory.mktemp("abi")
    (work / "probe.c").write_text(source)
    subprocess.run([cc, "-std=gnu11", "-o", str(work / "probe"), str(work / "probe.c")], check=True)
    out = subprocess.run([str(work / "probe")], check=True, capture_output=True, text=True).stdout
    return expected, out.splitlines(), types


def test_every_checkable_row_matches(probe):
    expected, actual, _ = probe
    mismatches = [(e, a) for e, a in zip(expected, actual) if e != a]
    assert len(expected) == len(actual)
    assert len(expected) > len(REQUIRED_STRUCTS)   # a probe that checked nothing would match trivially
    assert mismatches == []


def test_every_required_struct_and_all_its_members_are_checked(probe):
    expected, _, types = probe
    assert REQUIRED_STRUCTS <= types
    rows = _layout_rows()
    for struct in REQUIRED_STRUCTS:
        members = [r for r in rows if r[0] == "M" and r[1] == struct]
        checked = [e for e in expected if e.startswith(f"M\t{struct}\t")]
        assert len(checked) == len(members) > 0 or struct == "dcgm_field_meta_t", struct


def test_every_declared_dcgm_struct_is_in_the_layout_file(probe):
    _, _, types = probe
    in_tsv = {r[1] for r in _layout_rows() if r[0] == "S"}
    text = HEADER.read_text()
    structs = set(re.findall(r"typedef\s+struct\s+\w+\s*\{[^}]*\}\s*(\w+)\s*;", text, re.S))
    # nested-struct typedefs also use this pattern; each must be known to the TSV
    assert structs and structs - in_tsv == set()


def test_all_version_stamps_and_return_codes_are_checked(probe):
    expected, _, _ = probe
    versions = [r for r in _layout_rows() if r[0] == "V"]
    checked = {e.split("\t")[1] for e in expected if e.startswith("V\t")}
    assert versions and checked
    missing = {r[1] for r in versions} - checked
    # PID, policy and job stamps belong to structs this project does not use
    assert {m for m in missing if not re.match(r"dcgm(Pid|Policy)", m)} == set()
    codes = {r[1] for r in _layout_rows() if r[0] == "E" and r[1].startswith("DCGM_ST_")}
    assert codes and codes <= {e.split("\t")[1] for e in expected if e.startswith("E\t")}


def test_cffi_extension_sees_the_same_layouts():
    native = pytest.importorskip("dcgm_collector.ext._native")
    ffi = native.ffi
    structs, members = set(), 0
    for row in _layout_rows():
        if row[0] == "S" and row[1] in REQUIRED_STRUCTS:
            assert ffi.sizeof(row[1]) == int(row[3]), row
            assert ffi.alignof(row[1]) == int(row[4]), row
            structs.add(row[1])
        elif row[0] == "M" and row[1] in REQUIRED_STRUCTS:
            path = row[2].split(".")
            assert ffi.offsetof(row[1], *path) == int(row[3]), row
            members += 1
    assert structs == set(REQUIRED_STRUCTS) and members > len(structs)   # every struct checked, with members
