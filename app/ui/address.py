"""Which client a request comes from, for the bounds a served page keeps per address (disk, queue, uploads).

The address is the socket's peer as uvicorn reports it; uvicorn itself takes X-Forwarded-For only from a proxy on
this machine (its FORWARDED_ALLOW_IPS, 127.0.0.1 by default), so a visitor cannot name their own address. On a
Hugging Face Space every request arrives from the Space's proxy, so there, and only there, the address is the last
public one in X-Forwarded-For: the one the proxy saw (anything a visitor wrote into the header comes before it). An
IPv6 address counts as its /64, the block one machine usually holds.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, MutableMapping

UNKNOWN = "unknown"


def from_forwarded(forwarded_for: str) -> str | None:
    """The last public address in an X-Forwarded-For header, or None when it has none."""
    for part in reversed(forwarded_for.split(",")):
        try:
            ip = ipaddress.ip_address(part.strip())
        except ValueError:
            continue
        if ip.is_global:
            return str(ip)
    return None


def client_address(peer: str | None, forwarded_for: str | None = None, on_space: bool | None = None) -> str:
    """The address a request counts against: its peer, or on a Space the proxy's X-Forwarded-For; IPv6 as a /64."""
    on_space = bool(os.environ.get("SPACE_ID")) if on_space is None else on_space
    address = (from_forwarded(forwarded_for) if on_space and forwarded_for else None) or peer or UNKNOWN
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def scope_address(scope: MutableMapping[str, Any]) -> str:
    """The address an ASGI request counts against (client_address of its peer and X-Forwarded-For)."""
    forwarded = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"x-forwarded-for"),
                     None)
    return client_address((scope.get("client") or (None,))[0], forwarded)


def address_of(request: Any) -> str | None:
    """The client address of a Gradio or Starlette request (None without one)."""
    client = getattr(request, "client", None) if request is not None else None
    if client is None:
        return None
    headers = getattr(request, "headers", None) or {}
    return client_address(getattr(client, "host", None), headers.get("x-forwarded-for"))
