"""Calling an agent tool in process, as the MCP server does: its JSON result, or its error."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kbes import KnowledgeBaseStore, call_tool
from kbes.tools.codes import KbesError


def call(store: KnowledgeBaseStore, name: str, **arguments: Any) -> dict[str, Any]:
    """The tool's result as the JSON-ready builtins a client receives."""
    return msgspec.to_builtins(call_tool(store, name, arguments))


def fails(store: KnowledgeBaseStore, name: str, **arguments: Any) -> dict[str, Any]:
    """The error the call must raise, as the dict a client receives."""
    with pytest.raises(KbesError) as info:
        call_tool(store, name, arguments)
    return info.value.to_dict()
