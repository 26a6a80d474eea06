"""The agent contract: the five tools as plain functions over a store, with the live server's
names, limits, annotations and wire types, the grant check, and the words for models. The MCP
server, the CLI's `kbes tool` and the simulations all call this package; the application
beneath it speaks only in domain terms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast, overload

from kbes.domain.author import Author
from kbes.tools.diff import DIFF_TOOL
from kbes.tools.edit import EDIT_TOOL
from kbes.tools.grants import Grants, admit
from kbes.tools.poll import POLL_TOOL
from kbes.tools.read import READ_TOOL
from kbes.tools.refusals import GRANTS_HINT
from kbes.tools.search import SEARCH_TOOL
from kbes.tools.tool import READ_ONLY, WRITE, Admitted, Tool, inline_schema
from kbes.tools.wire import (
    ArticleResult,
    DiffResult,
    EditResult,
    PollResult,
    SearchResult,
    Wire,
)

if TYPE_CHECKING:
    from kbes.store.application import KnowledgeBaseStore

TOOLS: dict[str, Tool] = {
    tool.name: tool for tool in (SEARCH_TOOL, READ_TOOL, EDIT_TOOL, POLL_TOOL)
}
"""The four tools every server serves: the live server's contract."""

HISTORY_TOOLS: list[Tool] = [DIFF_TOOL]
"""The opt-in history tools, served by `kbes serve --history-tools`."""

_EVERY_TOOL: dict[str, Tool] = {**TOOLS, **{tool.name: tool for tool in HISTORY_TOOLS}}


Arguments = dict[str, Any] | bytes | str | None
"""A tool's raw arguments: decoded JSON, or JSON text."""


# One overload per tool, so a caller's type checker knows each answer's type (a test keeps
# them in step with the tools' names and result types).
@overload
def call_tool(
    store: KnowledgeBaseStore,
    name: Literal["search_knowledge_base"],
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> SearchResult: ...
@overload
def call_tool(
    store: KnowledgeBaseStore,
    name: Literal["read_knowledge_article"],
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> ArticleResult: ...
@overload
def call_tool(
    store: KnowledgeBaseStore,
    name: Literal["edit_knowledge_article"],
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> EditResult: ...
@overload
def call_tool(
    store: KnowledgeBaseStore,
    name: Literal["poll_resource_events"],
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> PollResult: ...
@overload
def call_tool(
    store: KnowledgeBaseStore,
    name: Literal["diff_knowledge_article"],
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> DiffResult: ...
@overload
def call_tool(
    store: KnowledgeBaseStore,
    name: str,
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> Wire: ...
def call_tool(
    store: KnowledgeBaseStore,
    name: str,
    arguments: Arguments,
    grants: Grants = None,
    *,
    author: Author | None = None,
) -> Wire:
    """Validate `arguments`, admit them past `grants`, and run the tool (any of the five).
    Raises a `KbesError` (with a stable code) for bad arguments and for every refusal; raises
    KeyError for an unknown tool name. An edit's events record `author` (default: the person
    running the process, `kbes.domain.author.person_running`)."""
    call = _EVERY_TOOL[name].admit(arguments, grants, store.limits)
    answer = call.by(author).answer(store)
    # The five tools all answer with wire types; `Tool.answer` is typed for any struct, as
    # a server may serve other tools.
    return cast(Wire, answer)


__all__ = [
    "GRANTS_HINT",
    "HISTORY_TOOLS",
    "READ_ONLY",
    "TOOLS",
    "WRITE",
    "Admitted",
    "Grants",
    "Tool",
    "admit",
    "call_tool",
    "inline_schema",
]
