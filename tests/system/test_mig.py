"""MIG end to end: the collector on a simulated node with GPU instances, scraped over HTTP.

The node (``--sim`` with a scenario) has an H200 split into three GPU
instances by profile and a whole H100; a kubelet stand-in gives two GPU
instances (one by GKE's ``nvidia0/gi1`` device id, one by its ``MIG-<uuid>``
as NVIDIA's device plugin lists it) and the whole GPU to pods.  Flex
mode serves the H200 through its instances only, each series labelled with the
H200's GPU labels, its profile and its GPU-instance id, as dcgm-exporter does.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from kubelet_standin import Container, KubeletStandIn, Pod
from support import COLLECTOR, SERVING, http_get, launch, samples, stop_process, wait_for
from test_cli import collector

from dcgm_collector.collect.discovery import mig_instances

NODE = """\
seed = 5
[[gpu]]
model = "H200"
mig_profiles = ["3g.71gb", "2g.35gb", "1g.18gb"]
[[gpu]]
model = "H100"
"""
COUNTERS = """\
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB)., max
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_DRIVER_VERSION, label, Driver Version
"""
GPU_LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName"]


def _label_order(line: str) -> list[str]:
    inner = line[line.index("{") + 1:line.rindex("}")]
    return [part.split("=", 1)[0] for part in inner.split('",') if "=" in part]


def test_mig_instances_served_with_their_labels_and_pods(tmp_path, open_node):
    (tmp_path / "mig.toml").write_text(NODE)
    (tmp_path / "counters.csv").write_text(COUNTERS)
    # the MIG device UUID of GPU instance 2, as the device plugin would list it (the node is seeded)
    handle = open_node(str(tmp_path / "mig.toml"))
    mig_uuid = mig_instances(handle)[2].uuid
    handle.close()
    assert mig_uuid.startswith("MIG-")
    kubelet = KubeletStandIn(tmp_path / "kubelet.sock", pods=[
        Pod("infer-0", "serving", [Container("model", {"nvidia.com/mig-2g.35gb": ["nvidia0/gi1"]})]),
        Pod("infer-1", "serving", [Container("model", {"nvidia.com/mig-1g.18gb": [mig_uuid]})]),
        Pod("train-0", "ml", [Container("main", {"nvidia.com/gpu": ["nvidia1"]})]),
    ]).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "NODE_NAME"))}
    log = tmp_path / "collector.log"
    with open(log, "wb") as out:
        proc = launch(COLLECTOR, "--sim", str(tmp_path / "mig.toml"), "-a", "127.0.0.1:0", "-c", "200",
                      "-f", str(tmp_path / "counters.csv"), "-k", "--pod-resources-kubelet-socket",
                      str(tmp_path / "kubelet.sock"), "--kubernetes-gpu-id-type", "device-name", cwd=tmp_path,
                      env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        port = int(wait_for(lambda: SERVING.search(log.read_text()), timeout=30, what="serving",
                            log=log.read_text)[1])

        def attributed() -> str | None:
            status, body = http_get(f"http://127.0.0.1:{port}/metrics", timeout=5)
            text = body.decode()
            pods = ('pod="infer-0"', 'pod="infer-1"', 'pod="train-0"')
            return text if status == 200 and all(pod in text for pod in pods) else None

        text = wait_for(attributed, timeout=30, what="pod labels on the MIG series", log=log.read_text)
    finally:
        stop_process(proc)
        kubelet.stop()
    startup = log.read_text()
    assert "MIG GPU instances 0-2 (GPU 0 GI 0 3g.71gb, GPU 0 GI 1 2g.35gb, GPU 0 GI 2 1g.18gb)" in startup
    # each physical GPU counted once, by model, and the MIG one said to be read through its instances
    assert ('msg="embedded DCGM: GPUs 0-1 (1 x NVIDIA H100 80GB HBM3, 1 x NVIDIA H200): GPU 1 whole, GPU 0 with '
            'MIG through its 3 GPU instances"') in startup
    assert "Traceback" not in startup

    parsed = samples(text)
    fb_used = [(labels, value) for name, labels, value in parsed if name == "DCGM_FI_DEV_FB_USED"]
    # GPU 0 (the H200) only through its three instances, GPU 1 whole
    assert [(labels["gpu"], labels.get("GPU_I_ID"), labels.get("GPU_I_PROFILE")) for labels, _ in fb_used] == [
        ("0", "0", "3g.71gb"), ("0", "1", "2g.35gb"), ("0", "2", "1g.18gb"), ("1", None, None)]
    h200 = [labels for labels, _ in fb_used if labels["gpu"] == "0"]
    assert {labels["modelName"] for labels in h200} == {"NVIDIA H200"}
    assert {labels["device"] for labels in h200} == {"nvidia0"}
    assert len({labels["UUID"] for labels in h200}) == 1 and h200[0]["UUID"].startswith("GPU-")
    # the instance labels sit after modelName and before hostname, as in dcgm-exporter's template
    first = next(line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_FB_USED{"))
    assert _label_order(first)[:8] == [*GPU_LABELS, "GPU_I_PROFILE", "GPU_I_ID", "hostname"]

    # framebuffer per instance: its profile's share of the H200's, used + free
    free = {labels.get("GPU_I_ID"): value for name, labels, value in parsed
            if name == "DCGM_FI_DEV_FB_FREE" and labels["gpu"] == "0"}
    used = {labels.get("GPU_I_ID"): value for labels, value in fb_used if labels["gpu"] == "0"}
    totals = {gi: used[gi] + free[gi] for gi in used}
    assert totals["0"] > totals["1"] > totals["2"] > 0
    assert abs(totals["0"] - 2 * totals["1"]) <= 2 and abs(totals["1"] - 2 * totals["2"]) <= 2
    # window families per instance, profiling per instance, no whole-GPU utilisation on an instance
    assert sum(1 for name, labels, _ in parsed if name == "DCGM_FI_DEV_FB_USED_max" and "GPU_I_ID" in labels) == 3
    assert sum(1 for name, labels, _ in parsed
               if name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and "GPU_I_ID" in labels) == 3
    assert [labels["gpu"] for name, labels, _ in parsed if name == "DCGM_FI_DEV_GPU_UTIL"] == ["1"]

    # pods: the instances the kubelet lists, and the whole GPU; the other instance has none
    pods = {(labels["gpu"], labels.get("GPU_I_ID")): labels.get("pod") for labels, _ in fb_used}
    assert pods == {("0", "0"): None, ("0", "1"): "infer-0", ("0", "2"): "infer-1", ("1", None): "train-0"}


@pytest.mark.parametrize(("devices", "line"), [
    ("f", "GPUs 0-3 (3 x NVIDIA H100 80GB HBM3, 1 x NVIDIA H200): GPU 3 whole, GPUs 0-2 with MIG through their 12 "
          "GPU instances"),
    ("g", "GPUs 0-3 (3 x NVIDIA H100 80GB HBM3, 1 x NVIDIA H200)"),
    ("i:0,2,16", "GPUs 0,2 (1 x NVIDIA H100 80GB HBM3, 1 x NVIDIA H200): GPUs 0,2 with MIG through their 3 GPU "
                 "instances"),
    ("g:3", "GPU 3 (1 x NVIDIA H100 80GB HBM3)"),
])
def test_the_start_up_line_counts_each_physical_gpu_once_and_says_which_are_read_through_mig(tmp_path, devices,
                                                                                               line):
    """The shipped mig scenario: H100s split 3g+2g+1g and into seven 1g, an H200 split 4g+3g, a whole H100."""
    with collector(tmp_path, "--sim", "mig", "-a", "127.0.0.1:0", "-d", devices) as c:
        log = c.log()
    assert f'msg="embedded DCGM: {line}"' in log, log
