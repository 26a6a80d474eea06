"""The agent contract: the five tools as plain functions over a store, with the live server's
names, limits, annotations and wire types, the grant check, and the words for models. The MCP
server, the CLI's `kbes tool` and the simulations all call this package; the application
beneath it speaks only in domain terms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbes.tools.diff import DIFF_TOOL
from kbes.tools.edit import EDIT_TOOL
from kbes.tools.grants import Grants, admit
from kbes.tools.messages import GRANTS_HINT
from kbes.tools.poll import POLL_TOOL
from kbes.tools.read import READ_TOOL
from kbes.tools.search import SEARCH_TOOL
from kbes.tools.tool import READ_ONLY, WRITE, Tool, inline_schema
from kbes.tools.wire import Wire

if TYPE_CHECKING:
    from kbes.application import KnowledgeBaseStore

TOOLS: dict[str, Tool] = {
    tool.name: tool for tool in (SEARCH_TOOL, READ_TOOL, EDIT_TOOL, POLL_TOOL)
}
"""The four tools every server serves: the live server's contract."""

HISTORY_TOOLS: list[Tool] = [DIFF_TOOL]
"""The opt-in history tools, served by `kbes serve --history-tools`."""

_EVERY_TOOL: dict[str, Tool] = {**TOOLS, **{tool.name: tool for tool in HISTORY_TOOLS}}


def call_tool(
    store: KnowledgeBaseStore,
    name: str,
    arguments: dict[str, Any] | bytes | str | None,
    grants: Grants = None,
) -> Wire:
    """Validate `arguments`, admit them past `grants`, and run the tool (any of the five).
    Raises a `KbesError` (with a stable code) for bad arguments and for every refusal; raises
    KeyError for an unknown tool name."""
    tool = _EVERY_TOOL[name]
    return tool.run(store, tool.parse(arguments), grants)


__all__ = [
    "GRANTS_HINT",
    "HISTORY_TOOLS",
    "READ_ONLY",
    "TOOLS",
    "WRITE",
    "Grants",
    "Tool",
    "admit",
    "call_tool",
    "inline_schema",
]
