"""Listen addresses as dcgm-exporter (Go) writes them: ``:9400``, ``127.0.0.1:9400``, ``[::1]:9400``.

Apart from the server so that the flag table can check ``-a`` without
loading the HTTP server, http.server and ssl (``--help`` needs none of them).
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["parse_listen_address"]


def parse_listen_address(address: str) -> tuple[str, int]:
    """``host:port`` -> (host, port); host "" means every interface.  ValueError if malformed."""
    if not isinstance(address, str):
        raise TypeError(f"address must be a str, not {type(address).__name__}")
    text = address.strip()
    example = "write it as host:port, e.g. :9400, 127.0.0.1:9400 or [::1]:9400"
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or not text.startswith(":", close + 1):
            raise ValueError(f"bad listen address {address!r}: {example}")
        host, port_text = text[1:close], text[close + 2:]
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"bad listen address {address!r}: {host!r} is not an IPv6 address") from None
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ValueError(f"bad listen address {address!r}: missing port; {example}")
        if ":" in host:
            raise ValueError(f"bad listen address {address!r}: put an IPv6 address in brackets, e.g. [::1]:9400")
    if not re.fullmatch(r"[0-9]{1,5}", port_text, re.ASCII) or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"bad listen address {address!r}: the port must be a number from 0 to 65535")
    if any(c.isspace() or c in "/[]" for c in host):
        raise ValueError(f"bad listen address {address!r}: {host!r} is not a host name or IP address")
    return host, int(port_text)
