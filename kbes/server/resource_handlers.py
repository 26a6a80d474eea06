"""The MCP face of `kbes.server.resources`: `resources/list`, `resources/templates/list` and
`resources/read` handlers for the lowlevel SDK `Server`, and the `resource_link` content items
that point a tool result's citations at their version-pinned URIs.

Grants come from the server per request (over HTTP, the bearer token's), so a resource shows
exactly what the tools show that caller."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import msgspec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from kbes.server.legacy_subscriptions import LegacySubscriptions
from kbes.server.push import DEFAULT_INTERVAL, Listen, LogTail, tail_lifespan
from kbes.server.resources import (
    MIME_TYPE,
    TEMPLATES,
    ResourceText,
    list_knowledge_bases,
    read_resource,
    shown_uri,
    version_uri,
)
from kbes.server.serve_limits import DEFAULT_MAX_SUBSCRIPTIONS
from kbes.server.standing import Standing, snapshot
from kbes.store.application import KnowledgeBaseStore
from kbes.tools.codes import Gone, InternalError, KbesError, Unavailable
from kbes.tools.grants import Grants
from kbes.tools.wire import ArticleResult, Citation, SearchResult

logger = logging.getLogger(__name__)

RESOURCE_GONE = -32010
"""JSON-RPC error code of a current article URI whose article was unpublished (in the band the
2026-07-28 revision leaves to implementations); `data` carries `unpublished_at`. An unknown
resource is -32602, as SEP-2164 asks."""

PINNED_TTL_MS = 365 * 24 * 3600 * 1000
"""A pinned version never changes; a year is "as long as you like" to any cache."""
CURRENT_TTL_MS = 0
"""A current URI may change at any moment: never serve it from a cache."""
TEMPLATES_TTL_MS = 24 * 3600 * 1000
"""The templates change only with a new kbes release."""


class ResourceHandlers:
    """The three resource handlers over one store; `grants` names the caller's grants."""

    def __init__(
        self,
        store: KnowledgeBaseStore,
        grants: Callable[[], Grants],
        limiter: anyio.CapacityLimiter,
    ) -> None:
        self.store = store
        self.grants = grants
        self.limiter = limiter
        self._templates = types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name=t.name,
                    title=t.title,
                    uri_template=t.uri_template,
                    description=t.description,
                    mime_type=MIME_TYPE,
                )
                for t in TEMPLATES
            ],
            ttl_ms=TEMPLATES_TTL_MS,
            cache_scope="public",
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return self._templates

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """The granted knowledge bases, never their articles: see docs/resources.md."""
        listing = await self._run(list_knowledge_bases, self.store, self.grants())
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=kb.name,
                    title=kb.name,
                    uri=kb.uri,
                    mime_type=MIME_TYPE,
                    description=(
                        f"Knowledge base {kb.knowledge_base_id} ({kb.published} published "
                        "articles). Listen to this URI to hear of any change in it; its "
                        "articles are resources by the article template."
                    ),
                )
                for kb in listing
            ],
            ttl_ms=0,
            cache_scope="private",
        )

    async def read(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = params.uri
        try:
            found = await self._run(read_resource, self.store, uri, self.grants())
        except KbesError as e:
            raise resource_error(uri, e) from None
        return read_result(found)

    async def _run(self, function: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(
            functools.partial(function, *args), limiter=self.limiter
        )


def read_result(found: ResourceText) -> types.ReadResourceResult:
    """The read's one Markdown content, its `lastModified` and citation in `_meta` (resource
    contents have no annotations in 2026-07-28), and a cache hint: a pinned version is
    immutable, a current URI immediately stale. `private`: what a caller may read depends on
    its grants, so no cache may share it across tokens."""
    meta = dict(found.meta)
    if found.last_modified is not None:
        meta["lastModified"] = found.last_modified
    meta["immutable"] = found.pinned
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(
                uri=found.uri, mime_type=MIME_TYPE, text=found.text, _meta=meta
            )
        ],
        ttl_ms=PINNED_TTL_MS if found.pinned else CURRENT_TTL_MS,
        cache_scope="private",
    )


def resource_error(uri: str, error: KbesError) -> MCPError:
    """A refused read as a protocol error whose data is the tools' error JSON and the URI."""
    if isinstance(error, Gone):
        code = RESOURCE_GONE
    elif isinstance(error, Unavailable | InternalError):
        code = types.INTERNAL_ERROR  # the store, not the URI: the same read may work later
    else:
        code = types.INVALID_PARAMS
    return MCPError(
        code=code, message=error.message, data={**error.to_dict(), "uri": shown_uri(uri)}
    )


def resource_links(result: msgspec.Struct) -> list[types.ResourceLink]:
    """One `resource_link` per citation of a search or read result, at its pinned URI."""
    if isinstance(result, SearchResult):
        cited = [(hit.title, hit.citation) for hit in result.hits]
    elif isinstance(result, ArticleResult):
        cited = [(result.title, result.citation)]
    else:
        return []
    return [resource_link(title, citation) for title, citation in cited]


def resource_link(title: str, citation: Citation) -> types.ResourceLink:
    return types.ResourceLink(
        name=title,
        title=title,
        uri=version_uri(citation),
        description=(
            f"Article {citation.article_id} as of {citation.updated_at}: the version this "
            "citation stands for, readable for good."
        ),
        mime_type=MIME_TYPE,
        annotations=types.Annotations(last_modified=citation.updated_at),
    )


def with_links(result: types.CallToolResult, tool_result: msgspec.Struct) -> types.CallToolResult:
    """`result` with the citations' resource links after its text; structuredContent as is."""
    links = resource_links(tool_result)
    if links:
        result.content.extend(links)
    return result


def resource_handlers(
    store: KnowledgeBaseStore,
    grants: Callable[[], Grants],
    limiter: anyio.CapacityLimiter,
    *,
    push_interval: float = DEFAULT_INTERVAL,
    max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS,
    standing: Standing | None = None,
) -> tuple[LogTail, LegacySubscriptions, dict[str, Any]]:
    """The log tail, the handshake-era subscriptions (whose `end_session` the HTTP transport
    calls) and the lowlevel `Server` keyword arguments serving resources and push: reads under
    the caller's grants on the tools' thread pool, and a tail on its own thread ringing
    listeners (and handshake-era subscribers, at most `max_subscriptions` per session) on
    change, each ring under the caller's grants as they stand then (`standing`; default: as
    they were when the stream opened)."""
    standing = snapshot(grants) if standing is None else standing
    reads = ResourceHandlers(store, grants, limiter)
    tail = LogTail(store, interval=push_interval, limiter=anyio.CapacityLimiter(1))
    legacy = LegacySubscriptions(tail, grants, limit=max_subscriptions, standing=standing)
    return (
        tail,
        legacy,
        {
            "lifespan": tail_lifespan(tail),
            "on_list_resources": reads.list_resources,
            "on_list_resource_templates": reads.list_templates,
            "on_read_resource": reads.read,
            "on_subscriptions_listen": Listen(tail, grants, standing),
            "on_subscribe_resource": legacy.subscribe,
            "on_unsubscribe_resource": legacy.unsubscribe,
        },
    )
