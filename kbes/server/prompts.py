"""The MCP face of `kbes.tools.prompts`: `prompts/list`, `prompts/get` and `completion/complete`
for the lowlevel SDK `Server`. A knowledge-base argument completes to the knowledge bases the
caller may see (over HTTP, its bearer token's), in a prompt and in the resource templates alike;
any other argument completes to nothing, as an unknown prompt's does."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from kbes.server.resources import TEMPLATES
from kbes.store.application import KnowledgeBaseStore
from kbes.tools.codes import InternalError, KbesError, Unavailable
from kbes.tools.grants import Grants
from kbes.tools.prompts import PROMPTS, Prompt, knowledge_base_completions
from kbes.tools.refusals import unknown_prompt

PROMPTS_TTL_MS = 24 * 3600 * 1000
"""The prompts change only with a new kbes release."""
MAX_COMPLETIONS = 100
"""The most values one completion may carry (the protocol's limit)."""
_KNOWLEDGE_BASE_TEMPLATES = frozenset(
    t.uri_template for t in TEMPLATES if "{knowledge_base_id}" in t.uri_template
)


def mcp_prompt(prompt: Prompt) -> types.Prompt:
    """The `prompts/list` entry of a prompt."""
    return types.Prompt(
        name=prompt.name,
        title=prompt.title,
        description=prompt.description,
        arguments=[
            types.PromptArgument(
                name=a.name, title=a.title, description=a.description, required=a.required
            )
            for a in prompt.arguments
        ],
    )


def list_result() -> types.ListPromptsResult:
    """The same for every caller, so any cache may share it."""
    return types.ListPromptsResult(
        prompts=[mcp_prompt(p) for p in PROMPTS.values()],
        ttl_ms=PROMPTS_TTL_MS,
        cache_scope="public",
    )


def get_result(prompt: Prompt, text: str) -> types.GetPromptResult:
    return types.GetPromptResult(
        description=prompt.description,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )


def completion_result(values: list[str]) -> types.CompleteResult:
    return types.CompleteResult(
        completion=types.Completion(
            values=values[:MAX_COMPLETIONS],
            total=len(values),
            has_more=len(values) > MAX_COMPLETIONS,
        )
    )


def completes_knowledge_bases(params: types.CompleteRequestParams) -> bool:
    """Whether the argument asked for is a knowledge-base id."""
    ref, name = params.ref, params.argument.name
    if isinstance(ref, types.PromptReference):
        prompt = PROMPTS.get(ref.name)
        return prompt is not None and any(a.name == name and a.completes for a in prompt.arguments)
    return ref.uri in _KNOWLEDGE_BASE_TEMPLATES and name == "knowledge_base_id"


def prompt_error(error: KbesError) -> MCPError:
    """A refused `prompts/get` as a protocol error whose data is the tools' error JSON."""
    code = (
        types.INTERNAL_ERROR
        if isinstance(error, Unavailable | InternalError)
        else types.INVALID_PARAMS
    )
    return MCPError(code=code, message=error.message, data=error.to_dict())


class PromptHandlers:
    """The three handlers over one store; `grants` names the caller's grants, `tools` the names
    of the tools the server serves (a prompt's steps name only those)."""

    def __init__(
        self,
        store: KnowledgeBaseStore,
        grants: Callable[[], Grants],
        limiter: anyio.CapacityLimiter,
        tools: Collection[str],
    ) -> None:
        self.store = store
        self.grants = grants
        self.limiter = limiter
        self.tools = frozenset(tools)
        self._listing = list_result()

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return self._listing

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt = PROMPTS.get(params.name)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, unknown_prompt(params.name, list(PROMPTS)))
        try:
            text = await self._run(
                prompt.text, self.store, params.arguments, self.grants(), self.tools
            )
        except KbesError as e:
            raise prompt_error(e) from None
        return get_result(prompt, text)

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        if not completes_knowledge_bases(params):
            return completion_result([])
        values = await self._run(
            knowledge_base_completions, self.store, self.grants(), params.argument.value
        )
        return completion_result(values)

    async def _run(self, function: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(
            functools.partial(function, *args), limiter=self.limiter
        )


def prompt_handlers(
    store: KnowledgeBaseStore,
    grants: Callable[[], Grants],
    limiter: anyio.CapacityLimiter,
    tools: Collection[str],
) -> dict[str, Any]:
    """The lowlevel `Server` keyword arguments serving the prompts and completions."""
    handlers = PromptHandlers(store, grants, limiter, tools)
    return {
        "on_list_prompts": handlers.list_prompts,
        "on_get_prompt": handlers.get_prompt,
        "on_completion": handlers.complete,
    }
