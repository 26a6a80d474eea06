"""The four agent tools as plain functions over a store, with the live server's names, limits
and annotations. The MCP server, the CLI's `kbes tool` and the simulations all call these."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kbes.application import Grants, KnowledgeBaseStore
from kbes.errors import KbesError, invalid_argument
from kbes.wire import (
    ArticleResult,
    EditRequest,
    EditResult,
    PollRequest,
    PollResult,
    ReadRequest,
    Request,
    SearchRequest,
    SearchResult,
    Wire,
)

READ_ONLY = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "openWorldHint": False,
}
WRITE = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": True,
    "openWorldHint": True,
}


@dataclass(frozen=True)
class Tool:
    """One agent tool: its contract and the store method that runs it."""

    name: str
    title: str
    description: str
    request: type[Request]
    result: type[Wire]
    annotations: dict[str, bool]
    run: Callable[[KnowledgeBaseStore, Any, Grants], Wire] = field(repr=False)

    def input_schema(self) -> dict[str, Any]:
        return inline_schema(self.request)

    def output_schema(self) -> dict[str, Any]:
        return inline_schema(self.result)

    def parse(self, arguments: dict[str, Any] | bytes | str | None) -> Request:
        """Validate raw arguments against the request struct; `invalid_argument` otherwise."""
        try:
            if isinstance(arguments, bytes | str):
                return msgspec.json.decode(arguments, type=self.request)
            return msgspec.convert(arguments or {}, self.request)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            raise invalid_argument(e) from None


def inline_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """msgspec's JSON schema for `struct`, with the top-level `$ref` resolved in place, as MCP
    clients expect an object schema at the top."""
    schema = msgspec.json.schema(struct)
    defs = schema.pop("$defs", {})
    top = dict(defs.pop(struct.__name__))
    top.pop("title", None)
    if defs:
        top["$defs"] = defs
    return top


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="search_knowledge_base",
            title="Search knowledge base",
            description=(
                "Search current published articles in one granted knowledge base. Results are "
                "ranked, and each hit carries the article ID, its title, a snippet, and its "
                "updated_at with a citation {knowledge_base_id, article_id, updated_at}; cite "
                "that, since updated_at is the version you read. This is a live read: drafts "
                "and unpublished articles never appear. The query is plain text (2-200 "
                "characters); no search operators."
            ),
            request=SearchRequest,
            result=SearchResult,
            annotations=READ_ONLY,
            run=lambda store, request, grants: store.search(request, grants),
        ),
        Tool(
            name="read_knowledge_article",
            title="Read knowledge article",
            description=(
                "Read one current published article by ID from a granted knowledge base and "
                "return its full content with a stable citation {knowledge_base_id, "
                "article_id, updated_at}. The updated_at is the version to pass as "
                "expected_version to edit_knowledge_article. An article that was unpublished "
                "returns the error code 'gone'; an unknown one 'not_found'."
            ),
            request=ReadRequest,
            result=ArticleResult,
            annotations=READ_ONLY,
            run=lambda store, request, grants: store.read(request, grants),
        ),
        Tool(
            name="edit_knowledge_article",
            title="Edit knowledge article",
            description=(
                "Replace an article's whole content and optionally its title. Pass the "
                "updated_at from a recent read_knowledge_article as expected_version: if the "
                "article changed since, the edit is rejected with 'version_conflict' and the "
                "current version, so read it again, re-apply your change to the current "
                "content, and retry with the new version (a citation an hour old fails about "
                "four times in ten). Pass a fresh idempotency_key for each intended change: "
                "retrying a call with the same key is safe, never writes twice, and returns "
                "the first result marked replay=true. The saved article is what every "
                "assistant and search in the workspace answers from next."
            ),
            request=EditRequest,
            result=EditResult,
            annotations=WRITE,
            run=lambda store, request, grants: store.edit(request, grants),
        ),
        Tool(
            name="poll_resource_events",
            title="Poll resource events",
            description=(
                "Resume the event feed of one granted knowledge base (resource_type "
                "'knowledge_base', resource_id its ID) after a sequence number. Returns up to "
                "`limit` events {sequence, type, article_id, updated_at} of type published, "
                "saved, retitled or unpublished, and next_sequence: keep that one integer and "
                "pass it as after_sequence next time, instead of re-reading every cited "
                "article. A citation whose article appears with a later updated_at has "
                "changed; 'unpublished' means it is gone. Start from 0, or from the sequence "
                "you stored with your citations."
            ),
            request=PollRequest,
            result=PollResult,
            annotations=READ_ONLY,
            run=lambda store, request, grants: store.poll(request, grants),
        ),
    )
}


def call_tool(
    store: KnowledgeBaseStore,
    name: str,
    arguments: dict[str, Any] | bytes | str | None,
    grants: Grants = None,
) -> Wire:
    """Validate `arguments` and run the tool. Raises a `KbesError` (with a stable code) for
    bad arguments and for every domain refusal; raises KeyError for an unknown tool name."""
    tool = TOOLS[name]
    request = tool.parse(arguments)
    return tool.run(store, request, grants)


def error_json(error: KbesError) -> dict[str, Any]:
    return error.to_dict()
