"""The process reader's NVML calls against the package's simulated libnvidia-ml.so.1.

Each read runs in a subprocess with the scenario in DCGM_SIM_SCENARIO and the
simulated clock frozen (DCGM_SIM_NVML_TIME_US), as the collector's own
process would see it under --sim.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from dcgm_collector import engine

T_US = 5_000_000

_READ = """
import json, sys
from dcgm_collector.collect.readers.nvml import Nvml, NvmlError
nvml = Nvml(sys.argv[1])
out = []
for index in range(nvml.device_count()):
    device = nvml.device(index)
    gpu = {"compute": sorted(p.pid for p in nvml.processes(device, graphics=False)),
           "graphics": sorted(p.pid for p in nvml.processes(device, graphics=True)),
           "migs": [sorted((p.pid, p.gpu_instance) for p in nvml.processes(m, graphics=False))
                    for m in nvml.mig_devices(device)]}
    try:
        samples = nvml.utilization(device, 0)
        gpu["sampled"] = sorted({s.pid for s in samples})
        gpu["after_newest"] = len(nvml.utilization(device, max(s.ts_us for s in samples))) if samples else None
    except NvmlError as error:
        gpu["sampled"] = [error.code]
    out.append(gpu)
nvml.close()
print(json.dumps(out))
"""


def _read(tmp_path, scenario: str) -> list[dict]:
    path = tmp_path / "node.toml"
    path.write_text(scenario)
    env = dict(os.environ, DCGM_SIM_SCENARIO=str(path), DCGM_SIM_NVML_COSTS="off", DCGM_SIM_NVML_TIME_US=str(T_US))
    # cwd outside the checkout: the source folder has no compiled extension on sys.path
    done = subprocess.run([sys.executable, "-c", _READ, str(engine.nvml_library_path())], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_list_longer_than_the_first_guess_comes_whole_and_graphics_apart(tmp_path):
    many = "".join(f'[[process]]\ngpu = 0\npid = {1000 + i}\nfb_bytes = 1048576\n' for i in range(40))
    (gpu,) = _read(tmp_path, '[[gpu]]\nmodel = "H200"\n' + many
                   + '[[process]]\ngpu = 0\npid = 5000\ntype = "graphics"\n')
    assert gpu["compute"] == list(range(1000, 1040))
    assert gpu["graphics"] == [5000]
    assert gpu["migs"] == []
    assert set(gpu["sampled"]) <= set(range(1000, 1040)) | {5000} and gpu["sampled"]
    assert gpu["after_newest"] == 0   # nothing is newer than the newest sample


def test_mig_device_handles_list_their_instances_and_utilisation_is_not_supported(tmp_path):
    (gpu,) = _read(tmp_path, '[[gpu]]\nmodel = "H100"\nmig_profiles = ["3g.40gb", "3g.40gb"]\n'
                   '[[process]]\ngpu = 0\npid = 11\ngpu_instance = 0\n'
                   '[[process]]\ngpu = 0\npid = 12\ngpu_instance = 1\n')
    assert gpu["compute"] == [11, 12]
    assert gpu["migs"] == [[[11, 0]], [[12, 1]]]
    assert gpu["sampled"] == [3]   # NVML_ERROR_NOT_SUPPORTED
