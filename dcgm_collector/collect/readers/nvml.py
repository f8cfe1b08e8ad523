"""The NVML calls the process reader makes, declared once for cffi (ABI mode: the library is opened by path or name).

Which libnvidia-ml.so.1 is the caller's to say (app.py): the driver's (the
dynamic linker's search) on a real node, the package's simulated one under
``--sim``, so that the processes belong to the node the DCGM source shows.
Every call answers NVML's status code; :class:`Nvml` turns the codes the
reader cares about into :class:`NvmlError` with the code kept.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import cffi

__all__ = ["INSUFFICIENT_SIZE", "NOT_FOUND", "NOT_SUPPORTED", "NO_PERMISSION", "Nvml", "NvmlError", "NvmlProcess",
           "NvmlUtilization"]

SUCCESS = 0
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
GPU_IS_LOST = 15
MAX_LIST_TRIES = 4        # a list that keeps outgrowing the buffer NVML asked for: give up after this many tries
LIST_HEADROOM = 8         # entries beyond what NVML asked for, for processes that start meanwhile
UUID_BUFFER = 96          # NVML's UUID buffer size (80) with room to spare
MAX_LIST_ENTRIES = 65536  # NVML never asks for more than this; a bigger answer is an error, not an allocation

_DECLARATIONS = """
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId;
                 unsigned int computeInstanceId; } nvmlProcessInfo_t;
typedef struct { unsigned int pid; unsigned long long timeStamp; unsigned int smUtil; unsigned int memUtil;
                 unsigned int encUtil; unsigned int decUtil; } nvmlProcessUtilizationSample_t;
int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int result);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
int nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos);
int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos);
int nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *samples,
                                    unsigned int *count, unsigned long long lastSeenTimeStamp);
int nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending);
int nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
int nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *mig);
"""



@functools.cache
def _declared() -> cffi.FFI:
    """The declarations, parsed when the first :class:`Nvml` opens: cffi's C parser costs about 4 MiB
    resident, which a collector that never reads processes has no use for."""
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(_DECLARATIONS)
    return ffi


class NvmlError(Exception):
    """An NVML call answered an error; ``code`` is NVML's status."""

    def __init__(self, call: str, code: int, text: str) -> None:
        super().__init__(f"{call}: {text} (NVML status {code})")
        self.call, self.code = call, code


class NvmlProcess(NamedTuple):
    """One entry of a process list."""

    pid: int
    fb_bytes: int | None      # None: NVML does not say (not available under this mode)
    gpu_instance: int | None  # NVML's GPU instance id, None outside MIG


class NvmlUtilization(NamedTuple):
    """One per-process utilisation sample."""

    pid: int
    ts_us: int
    sm: int
    mem: int
    enc: int
    dec: int


_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF   # usedGpuMemory NVML cannot give (NVML_VALUE_NOT_AVAILABLE)
_NO_INSTANCE = 0xFFFFFFFF


class Nvml:
    """An initialised NVML: the process lists and per-process utilisation of its devices."""

    def __init__(self, library: str) -> None:
        self._ffi = _declared()
        self._lib = self._ffi.dlopen(library)   # OSError when it cannot be opened
        self._check("nvmlInit_v2", self._lib.nvmlInit_v2())

    def close(self) -> None:
        self._lib.nvmlShutdown()

    def _check(self, call: str, code: int) -> None:
        if code != SUCCESS:
            raise NvmlError(call, code, self._ffi.string(self._lib.nvmlErrorString(code)).decode("utf-8", "replace"))

    def device_count(self) -> int:
        count = self._ffi.new("unsigned int *")
        self._check("nvmlDeviceGetCount_v2", self._lib.nvmlDeviceGetCount_v2(count))
        return count[0]

    def device(self, index: int) -> object:
        handle = self._ffi.new("nvmlDevice_t *")
        self._check("nvmlDeviceGetHandleByIndex_v2", self._lib.nvmlDeviceGetHandleByIndex_v2(index, handle))
        return handle[0]

    def uuid(self, device: object) -> str:
        """The device's UUID (``GPU-...``, ``MIG-...`` for a MIG device)."""
        text = self._ffi.new("char[]", UUID_BUFFER)
        self._check("nvmlDeviceGetUUID", self._lib.nvmlDeviceGetUUID(device, text, UUID_BUFFER))
        return self._ffi.string(text).decode("ascii", "replace")

    def mig_devices(self, device: object) -> list[object]:
        """The MIG device handles of a GPU; [] when MIG is off or unknown.  (Their processes carry their
        GPU instance ids, so no nvmlDeviceGetGpuInstanceId, which not every NVML exports.)"""
        current, pending = self._ffi.new("unsigned int *"), self._ffi.new("unsigned int *")
        if self._lib.nvmlDeviceGetMigMode(device, current, pending) != SUCCESS or current[0] != 1:
            return []
        slots = self._ffi.new("unsigned int *")
        self._check("nvmlDeviceGetMaxMigDeviceCount", self._lib.nvmlDeviceGetMaxMigDeviceCount(device, slots))
        found = []
        for slot in range(slots[0]):
            mig = self._ffi.new("nvmlDevice_t *")
            code = self._lib.nvmlDeviceGetMigDeviceHandleByIndex(device, slot, mig)
            if code == NOT_FOUND:
                continue
            self._check("nvmlDeviceGetMigDeviceHandleByIndex", code)
            found.append(mig[0])
        return found

    def processes(self, device: object, graphics: bool) -> list[NvmlProcess]:
        """A device's compute (or graphics) processes, asking NVML for the size it needs (a bounded retry)."""
        call = "nvmlDeviceGetGraphicsRunningProcesses_v3" if graphics else "nvmlDeviceGetComputeRunningProcesses_v3"
        function = getattr(self._lib, call)
        count = self._ffi.new("unsigned int *", 0)
        size = 0
        infos = self._ffi.NULL
        for _ in range(MAX_LIST_TRIES):
            count[0] = size
            code = function(device, count, infos)
            if code == SUCCESS:
                return [NvmlProcess(p.pid, None if p.usedGpuMemory == _NOT_AVAILABLE else p.usedGpuMemory,
                                    None if p.gpuInstanceId == _NO_INSTANCE else p.gpuInstanceId)
                        for p in infos[0:count[0]]] if count[0] else []
            if code != INSUFFICIENT_SIZE or count[0] > MAX_LIST_ENTRIES:
                self._check(call, code if code != SUCCESS else INSUFFICIENT_SIZE)
            size = count[0] + LIST_HEADROOM
            infos = self._ffi.new("nvmlProcessInfo_t[]", size)
        self._check(call, INSUFFICIENT_SIZE)
        return []

    def utilization(self, device: object, last_seen_us: int) -> list[NvmlUtilization]:
        """Per-process utilisation samples newer than ``last_seen_us``; [] when there are none."""
        call = "nvmlDeviceGetProcessUtilization"
        count = self._ffi.new("unsigned int *", 0)
        code = self._lib.nvmlDeviceGetProcessUtilization(device, self._ffi.NULL, count, last_seen_us)
        if code == NOT_FOUND or (code == SUCCESS and count[0] == 0):
            return []
        if code not in (SUCCESS, INSUFFICIENT_SIZE) or count[0] > MAX_LIST_ENTRIES:
            self._check(call, code)
        for _ in range(MAX_LIST_TRIES):
            size = count[0] + LIST_HEADROOM
            samples = self._ffi.new("nvmlProcessUtilizationSample_t[]", size)
            count[0] = size
            code = self._lib.nvmlDeviceGetProcessUtilization(device, samples, count, last_seen_us)
            if code == SUCCESS:
                return [NvmlUtilization(s.pid, s.timeStamp, s.smUtil, s.memUtil, s.encUtil, s.decUtil)
                        for s in samples[0:count[0]]]
            if code == NOT_FOUND:
                return []
            if code != INSUFFICIENT_SIZE or count[0] > MAX_LIST_ENTRIES:
                self._check(call, code)
        self._check(call, INSUFFICIENT_SIZE)
        return []
