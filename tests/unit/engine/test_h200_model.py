"""The H200 model against one real H200's NVML readings, through both value sources.

reference/hardware/h200-2026-11-30/ holds what NVML answered on a real H200 SXM
at idle (attrs.json: the device getters; fields.json: every field id through
nvmlDeviceGetFieldValues).  The simulated libnvidia-ml.so.1, read by
nvidia-ml-py in a subprocess, must answer the same for an idle H200, and the
simulated libdcgm must give the same numbers in DCGM's units: both read the
one model table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_nvml_clients import _env, _run

RECORDING = Path(__file__).resolve().parents[3] / "reference" / "hardware" / "h200-2026-11-30"
MIB = 1024 * 1024
SCENARIO = '[[gpu]]\nmodel = "H200"\ncount = 1\nworkload = "idle"\n'

# nvidia-ml-py reads every attribute attrs.json has that the simulated library implements,
# each as a value or {"error": <NVML's message>}, the form attrs.json uses.
_READ = """
import json, pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
def get(f, *a):
    try:
        return f(h, *a)
    except n.NVMLError as e:
        return {"error": str(e)}
CLOCKS = {"GRAPHICS": n.NVML_CLOCK_GRAPHICS, "SM": n.NVML_CLOCK_SM, "MEM": n.NVML_CLOCK_MEM,
          "VIDEO": n.NVML_CLOCK_VIDEO}
out = {"Name": get(n.nvmlDeviceGetName)}
m = n.nvmlDeviceGetMemoryInfo(h)
out["MemoryInfo"] = {"total": m.total, "free": m.free, "used": m.used}
for k in ("PowerManagementLimit", "PowerManagementLimitConstraints", "PowerManagementDefaultLimit",
          "EnforcedPowerLimit", "CurrPcieLinkGeneration", "CurrPcieLinkWidth", "MaxPcieLinkGeneration",
          "MaxPcieLinkWidth", "EccMode", "MigMode", "CudaComputeCapability", "VbiosVersion",
          "InforomImageVersion", "Brand", "Architecture", "FanSpeed", "NumFans", "PerformanceState",
          "MaxMigDeviceCount", "PersistenceMode", "ComputeMode"):
    v = get(getattr(n, "nvmlDeviceGet" + k))
    out[k] = list(v) if isinstance(v, tuple) else v
for k in ("MaxClockInfo", "ApplicationsClock", "DefaultApplicationsClock", "ClockInfo"):
    out[k] = {name: get(getattr(n, "nvmlDeviceGet" + k), t) for name, t in CLOCKS.items()}
out["TemperatureThresholds"] = {str(i): get(n.nvmlDeviceGetTemperatureThreshold, i) for i in range(8)}
out["NvLink"] = {str(i): {"state": get(n.nvmlDeviceGetNvLinkState, i)} for i in range(18)}
p = n.nvmlDeviceGetPciInfo(h)
out["PciInfo"] = {"pciDeviceId": p.pciDeviceId, "pciSubSystemId": p.pciSubSystemId}
out["GpmSupport"] = {"isSupportedDevice": n.nvmlGpmQueryDeviceSupport(h).isSupportedDevice}
UNION = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
out["fields"] = {str(i + 1): {"ret": f.nvmlReturn, "type": f.valueType, "value": getattr(f.value, UNION[f.valueType])}
                 for i, f in enumerate(n.nvmlDeviceGetFieldValues(h, list(range(1, 303))))}
n.nvmlShutdown()
print(json.dumps(out))
"""

_DCGM = """
import json
from dcgm_collector import dcgm, engine
from dcgm_collector.ext._native import ffi, lib
with dcgm.Handle.embedded(library=engine.library_path()):
    record = ffi.new("dcgmFieldValue_v1 *")
    out = {}
    for field in (50, 58, 59, 63, 85, 110, 111, 113, 114, 115, 151, 152, 158, 159, 161, 162, 163, 164,
                  235, 236, 250, 300, 301):
        assert lib.dcgmSimGetValueAt(0, field, 7000000, record) == 0
        if record.fieldType == ord("s"):
            out[field] = ffi.string(record.value.str).decode()
        elif record.fieldType == ord("d"):
            out[field] = record.value.dbl
        else:
            out[field] = record.value.i64
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def recording() -> tuple[dict, dict]:
    return (json.loads((RECORDING / "attrs.json").read_text()),
            json.loads((RECORDING / "fields.json").read_text()))


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("h200") / "h200.toml"
    path.write_text(SCENARIO)
    return str(path)


@pytest.fixture(scope="module")
def nvml(scenario, tmp_path_factory) -> dict:
    pytest.importorskip("pynvml")
    return _run(_READ, _env(scenario), tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="module")
def dcgm(scenario, tmp_path_factory) -> dict:
    import os
    return _run(_DCGM, dict(os.environ, DCGM_SIM_SCENARIO=scenario), tmp_path_factory.mktemp("cwd"))


def _error(value) -> bool:
    return isinstance(value, dict) and "error" in value


def test_nvml_attributes_are_the_recorded_ones(nvml, recording):
    attrs, _ = recording
    for key in ("Name", "PowerManagementLimit", "PowerManagementLimitConstraints", "PowerManagementDefaultLimit",
                "EnforcedPowerLimit", "CurrPcieLinkGeneration", "CurrPcieLinkWidth", "MaxPcieLinkGeneration",
                "MaxPcieLinkWidth", "EccMode", "MigMode", "CudaComputeCapability", "VbiosVersion",
                "InforomImageVersion", "Brand", "Architecture", "NumFans", "PerformanceState",
                "MaxMigDeviceCount", "PersistenceMode", "ComputeMode", "MaxClockInfo", "ClockInfo"):
        assert nvml[key] == attrs[key], key
    for key in ("ApplicationsClock", "DefaultApplicationsClock"):     # video: NOT_SUPPORTED on both
        for clock, want in attrs[key].items():
            assert _error(nvml[key][clock]) if _error(want) else nvml[key][clock] == want, (key, clock)
    for sensor, want in attrs["TemperatureThresholds"].items():
        got = nvml["TemperatureThresholds"][sensor]
        assert _error(got) if _error(want) else got == want, sensor
    assert _error(nvml["FanSpeed"]) and _error(attrs["FanSpeed"])
    assert all(_error(link["state"]) for link in nvml["NvLink"].values())
    assert all(_error(link["state"]) for link in attrs["NvLink"].values())
    assert nvml["PciInfo"] == {k: attrs["PciInfo"][k] for k in ("pciDeviceId", "pciSubSystemId")}
    assert nvml["GpmSupport"]["isSupportedDevice"] == attrs["GpmSupport"]["isSupportedDevice"] == 1


def test_memory_is_the_recorded_size(nvml, recording):
    attrs, _ = recording
    got, want = nvml["MemoryInfo"], attrs["MemoryInfo"]
    assert got["total"] == want["total"] == 143771 * MIB
    assert got["total"] == got["free"] + got["used"]
    # the simulator counts in whole MiB: idle use (all of it reserved) within one MiB of the card's
    assert abs(got["used"] - want["used"]) < MIB


def test_nvml_supports_the_fields_the_card_supports(nvml, recording):
    _, fields = recording
    real = {int(i) for i, f in fields.items() if f["ret"] == 0}
    simulated = {int(i) for i, f in nvml["fields"].items() if f["ret"] == 0}
    assert simulated - real == set(), "served, but NOT_SUPPORTED on the card"
    assert real - simulated == set(), "supported on the card, NOT_SUPPORTED here"
    unsupported = 0
    for i, f in nvml["fields"].items():
        if fields[i]["ret"] == 3:           # NOT_SUPPORTED on the card: the same answer here
            assert f["ret"] == 3, (i, fields[i]["name"])
            unsupported += 1
    assert len(real) >= 50 and unsupported >= 10   # the recording's fields were read, both kinds


# Field ids whose idle reading is a property of the board rather than of its history: ECC mode
# and counts, limits in mW, thresholds on the T.Limit scale (signed), capabilities, reset status,
# PCIe link counts since boot, slowdown times the card had not yet run up.
STATIC_AT_IDLE = ({1, 2, 3, 4, 5, 6, 76, 77, 79, 94, 95, 142, 143, 144, 145, 147, 169}
                  | set(range(173, 185)) | {187, 188, 189, 190, 192, 193, 194, 195, 196, 199}
                  | set(range(226, 231)) | {269, 270, 271, 301, 302})


def test_nvml_fields_have_the_cards_value_types(nvml, recording):
    _, fields = recording
    compared = 0
    for i, want in fields.items():
        if want["ret"] == 0:
            assert nvml["fields"][i]["type"] == want["type"], (i, want["name"])
            compared += 1
    assert compared >= 50   # the card supported 61 of its fields


def test_nvml_static_fields_read_what_the_idle_card_read(nvml, recording):
    _, fields = recording
    for i in sorted(STATIC_AT_IDLE):
        assert fields[str(i)]["ret"] == 0
        assert nvml["fields"][str(i)]["value"] == fields[str(i)]["value"], (i, fields[str(i)]["name"])


def test_dcgm_gives_the_same_numbers_in_its_units(dcgm, recording):
    attrs, _ = recording
    low, high = attrs["PowerManagementLimitConstraints"]
    pci = attrs["PciInfo"]
    assert dcgm == {
        "50": attrs["Name"],
        "58": pci["pciDeviceId"],
        "59": pci["pciSubSystemId"],
        "63": attrs["CudaComputeCapability"][0] << 16 | attrs["CudaComputeCapability"][1],
        "85": attrs["VbiosVersion"],
        "110": attrs["ApplicationsClock"]["SM"],
        "111": attrs["ApplicationsClock"]["MEM"],
        "113": attrs["MaxClockInfo"]["SM"],
        "114": attrs["MaxClockInfo"]["MEM"],
        "115": attrs["MaxClockInfo"]["VIDEO"],
        "151": attrs["TemperatureThresholds"]["2"],     # memory max
        "152": attrs["TemperatureThresholds"]["3"],     # GPU max operating
        "158": attrs["TemperatureThresholds"]["1"],     # slowdown
        "159": attrs["TemperatureThresholds"]["0"],     # shutdown
        "161": low / 1000,
        "162": high / 1000,
        "163": attrs["PowerManagementDefaultLimit"] / 1000,
        "164": attrs["EnforcedPowerLimit"] / 1000,
        "235": attrs["MaxPcieLinkGeneration"],
        "236": attrs["MaxPcieLinkWidth"],
        "250": attrs["MemoryInfo"]["total"] // MIB,
        "300": attrs["EccMode"][0],
        "301": attrs["EccMode"][1],
    }


# The kernel workloads through the simulated NVML: the recorded card under each load
# (reference/hardware/h200-2026-11-30/trace.csv, phase medians) read through nvidia-ml-py.
_LOADS = (
    'seed = 4\n[[gpu]]\nmodel = "H200"\nworkload = "tensor"\n[[gpu]]\nmodel = "H200"\nworkload = "fp32"\n'
    '[[gpu]]\nmodel = "H200"\nworkload = "memory_bound"\n[[gpu]]\nmodel = "H200"\nworkload = "idle_context"\n'
)
_READ_LOADS = """
import json, pynvml as n
n.nvmlInit()
out = []
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    u = n.nvmlDeviceGetUtilizationRates(h)
    out.append({"reasons": n.nvmlDeviceGetCurrentClocksEventReasons(h),
                "sm": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM), "mw": n.nvmlDeviceGetPowerUsage(h),
                "temp": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU), "util": u.gpu, "mem": u.memory})
n.nvmlShutdown()
print(json.dumps(out))
"""


def test_nvml_reads_the_recorded_load_phases(tmp_path):
    pytest.importorskip("pynvml")
    scenario = tmp_path / "loads.toml"
    scenario.write_text(_LOADS)
    tensor, fp32, copies, context = _run(_READ_LOADS, _env(str(scenario)), tmp_path)
    # recorded medians: tensor 692 W, 1455 MHz, 0x4, 60 C, 100/25 %; fp32 687 W, 1980 MHz, 0,
    # 61 C, 100/7 %; copies 475 W, 1980 MHz, 0, 47 C, 100/100 %; open context 121 W, 1980 MHz, 0
    assert tensor["reasons"] & 0x4 and 1215 <= tensor["sm"] < 1600
    assert 623_000 <= tensor["mw"] <= 707_000 and 54 <= tensor["temp"] <= 66
    assert (tensor["util"], tensor["mem"]) == (100, 25)
    assert not fp32["reasons"] & 0x4 and fp32["sm"] == 1980 and 618_000 <= fp32["mw"] < 700_000
    assert (fp32["util"], fp32["mem"]) == (100, 7)
    assert copies["sm"] == 1980 and 427_000 <= copies["mw"] <= 523_000 and copies["mem"] == 100
    assert context["reasons"] == 0 and context["sm"] == 1980 and 109_000 <= context["mw"] <= 133_000
    assert context["util"] == 0
