"""What the common XIDs mean and what to do about one, for the report of a flight recording.

An XID is the driver's numbered report of a GPU error (field 230,
DCGM_FI_DEV_XID_ERROR, carries its number).  The source of these facts is
NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors, "Analyzing XID
errors"), with its immediate and investigatory actions; the meanings and the
advice here are written in this project's own words, shortened to what an
operator reading one report needs.  A number not listed is reported as
unknown, with a pointer to that catalogue.

Typical use::

    entry = xid_entry(79)       # XidEntry(number=79, name="GPU fell off the bus", ...)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["XID_CATALOGUE_URL", "XIDS", "XidEntry", "xid_entry"]

XID_CATALOGUE_URL = "docs.nvidia.com/deploy/xid-errors"   # named, never fetched: the report works offline


@dataclass(frozen=True)
class XidEntry:
    """One XID: its number, a short name, what it means and what to do."""

    number: int
    name: str
    meaning: str
    action: str
    needs: str = ""   # what the catalogue's action asks of the GPU: "reset" (or a reboot), "inspect", or nothing


XIDS: dict[int, XidEntry] = {e.number: e for e in (
    XidEntry(13, "graphics engine exception",
             "a kernel faulted on the GPU, most often the application's own fault (an out-of-range access, "
             "an illegal instruction); rarely the driver or the hardware",
             "debug the application (compute-sanitizer); if different programs hit it on this GPU only, "
             "run the DCGM diagnostics"),
    XidEntry(31, "GPU memory page fault",
             "a process touched GPU memory it has no mapping for; nearly always a bug in the application "
             "or a library it uses",
             "debug the application; suspect the GPU only if it repeats across unrelated jobs"),
    XidEntry(43, "GPU stopped processing",
             "the driver stopped one application's work after a fault of that application; the GPU "
             "itself is fine and other processes go on",
             "restart the application; no action on the GPU"),
    XidEntry(45, "preemptive cleanup",
             "the driver tore down a process's work on the GPU, because the process was killed or "
             "after another error; it follows the event that caused it",
             "look at the XIDs and the job just before it; on its own it needs nothing"),
    XidEntry(48, "double-bit ECC error",
             "an uncorrectable error in GPU memory; the data it hit is lost and the processes using "
             "that memory are stopped",
             "reset the GPU so the bad memory is retired or remapped (watch for XID 63/64); if it comes "
             "back, contact support", "reset"),
    XidEntry(61, "internal micro-controller breakpoint",
             "firmware on the GPU stopped at an internal check; a driver or firmware problem",
             "reset the GPU and keep the driver current; report it if it repeats", "reset"),
    XidEntry(62, "internal micro-controller halt",
             "firmware on the GPU halted; the GPU cannot run work until it is reset",
             "reset the GPU (or reboot the node); contact support if it repeats", "reset"),
    XidEntry(63, "memory row remapped (or page retired)",
             "the GPU recorded a memory row to replace with a spare (older GPUs: a page to retire); it "
             "is bookkeeping, no data was lost by it",
             "nothing now; the remap takes effect at the next GPU reset, so drain and reset when convenient"),
    XidEntry(64, "memory row remapping failed",
             "the GPU could not record a row to replace, for example because a bank ran out of spares",
             "reset the GPU; if it fails again, take the GPU out of service and contact support", "reset"),
    XidEntry(68, "video engine exception",
             "the video decoder or encoder raised an error; usually the application or the driver",
             "restart the application; update the driver if it repeats"),
    XidEntry(74, "NvLink error",
             "a link between GPUs (or to an NvSwitch) reported an error it could not recover",
             "read the NvLink error counters to find the link, reset the GPU, then check the peer, "
             "the NvSwitch and the cabling", "reset"),
    XidEntry(79, "GPU fell off the bus",
             "the GPU stopped answering on PCIe; the driver can no longer reach it",
             "drain and reboot the node; check power, cooling and the PCIe slot; contact support "
             "if it comes back", "reset"),
    XidEntry(92, "high single-bit ECC error rate",
             "correctable memory errors arrive faster than expected; each was corrected, but the rate "
             "can be an early sign of failing memory",
             "nothing immediate; watch the ECC counters and contact support if the rate stays high", "inspect"),
    XidEntry(94, "contained ECC error",
             "an uncorrectable memory error that the GPU kept to the applications using that memory",
             "restart the affected application; the GPU and the other applications can go on"),
    XidEntry(95, "uncontained ECC error",
             "an uncorrectable memory error that could not be kept to one application; every process "
             "on the GPU is affected",
             "drain the GPU and reset it", "reset"),
    XidEntry(119, "GSP RPC timeout",
             "the GPU System Processor (the firmware that runs the GPU) did not answer the driver in time",
             "reset the GPU; if it repeats, investigate the driver and firmware versions", "reset"),
    XidEntry(120, "GSP error",
             "the GPU System Processor reported an error of its own",
             "reset the GPU; if it repeats, investigate the driver and firmware versions", "reset"),
    XidEntry(140, "unrecoverable ECC error escaped",
             "an uncorrectable memory error was not contained where the GPU normally stops one",
             "drain the GPU and reset it", "reset"),
    XidEntry(154, "GPU recovery action changed",
             "the driver says what recovery the GPU now needs (none, a reset, a node reboot or a drain); "
             "informational, the action named with it is what counts",
             "do what the recovery action reported beside it says (the driver log has it)"),
)}


def xid_entry(number: int) -> XidEntry | None:
    """The catalogue's entry for XID ``number``; None for one it does not list."""
    return XIDS.get(int(number))
