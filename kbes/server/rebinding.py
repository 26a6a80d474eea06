"""DNS rebinding: a server without tokens answers only requests addressed to its own address.

Without `--tokens` anyone who can reach the port is served, which `kbes serve` allows only on
loopback. A web page can still reach a loopback port: it points a name of its own at the
address (DNS rebinding), and the browser then sends `Host: evil.example` and the page's
`Origin`. The MCP SDK checks Host and Origin only when it serves 127.0.0.1, localhost or ::1,
so `--http 127.0.0.2:PORT` was served to any page (issue 35, defect 5). `local_only` gives
every address served without tokens the SDK's check, naming that address and the usual names
of loopback."""

from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def local_only(host: str) -> TransportSecuritySettings:
    """The SDK's Host/Origin check allowing `host` (as a URL writes it) and the loopback
    names, on any port (and without one, as a client of port 80 sends them)."""
    names = list(dict.fromkeys((host, *LOOPBACK_NAMES)))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for name in names for form in (name, f"{name}:*")],
        allowed_origins=[form for name in names for form in (f"http://{name}", f"http://{name}:*")],
    )
