"""Short descriptions of NVIDIA XID errors, for the ``err_msg`` label.

dcgm-exporter labels its DCGM_FI_DEV_XID_ERRORS series with the XID number
(``err_code``) and a description (``err_msg``); the descriptions here are
this project's own one-line summaries of the XIDs seen most on data-centre
GPUs.  NVIDIA's XID catalogue is the authority on what each one means and
what to do about it.
"""

from __future__ import annotations

__all__ = ["UNKNOWN_XID", "XID_MESSAGES", "xid_message"]

UNKNOWN_XID = "Unknown Error"  # dcgm-exporter's text for a number outside its table

XID_MESSAGES: dict[int, str] = {
    8: "GPU stopped responding (engine timeout)",
    13: "Graphics engine exception, usually an application fault such as an out-of-range access",
    31: "GPU memory page fault: an application touched an address it does not own",
    32: "Invalid or corrupted command stream (push buffer)",
    38: "Driver firmware error",
    43: "GPU stopped processing a channel, usually because the application faulted",
    45: "Channel torn down early because of an earlier error",
    48: "Double-bit (uncorrectable) ECC error",
    56: "Display engine error",
    57: "Error while programming the video memory interface",
    58: "Video memory interface is unstable",
    61: "Internal micro-controller breakpoint or warning",
    62: "Internal micro-controller halted",
    63: "ECC page retirement or row remap recorded",
    64: "ECC page retirement or row remap could not be recorded",
    65: "Video processor exception",
    68: "Video decoder (NVDEC) exception",
    69: "Graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "High rate of single-bit ECC errors",
    94: "Contained ECC error: the affected application was stopped",
    95: "Uncontained ECC error: the GPU needs a reset",
    109: "Context switch timeout",
    119: "GSP firmware did not answer a request in time",
    120: "GSP firmware error",
    121: "Corrected error on the chip-to-chip (C2C) link",
    140: "Unrecovered ECC error",
    143: "GPU initialisation failed",
    144: "NVLink error (SAW unit)",
    145: "NVLink error (RLW unit)",
    146: "NVLink error (TLW unit)",
    147: "NVLink error (TREX unit)",
    148: "NVLink error (NVLPW control unit)",
    149: "NVLink error (NETIR unit)",
    150: "NVLink error (MSE unit)",
    154: "GPU recovery action changed: the GPU needs attention (reset or reboot)",
}


def xid_message(xid: int) -> str:
    """The description of an XID number, or "Unknown Error"."""
    return XID_MESSAGES.get(int(xid), UNKNOWN_XID)
