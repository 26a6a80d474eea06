"""How a server treats the tools that write: ask the user each time, allow, or deny. Kept apart
from kbes.server.mcp_server so `kbes serve` can check the option without importing the MCP SDK."""

from __future__ import annotations

from typing import Literal

EditPolicy = Literal["ask", "allow", "deny"]
EDIT_POLICIES: tuple[EditPolicy, ...] = ("ask", "allow", "deny")
