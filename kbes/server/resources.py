"""Articles and knowledge bases as addressable resources: their URIs, and what reading one
answers, as plain functions over the store and a caller's grants.

A citation `{knowledge_base_id, article_id, updated_at}` is already an address; these URIs only
spell it so an MCP client can read it back, cache it and subscribe to it. The rules are the
tools' rules, reached through the same store calls, so a resource can never show what a tool
would refuse: drafts, other knowledge bases and ungranted ones answer exactly as an unknown id.
Nothing here knows MCP's wire types; `kbes.server.resource_handlers` turns these answers into
them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from mcp.shared.uri_template import UriTemplate

from kbes.domain.article import markdown
from kbes.domain.errors import Gone
from kbes.domain.ids import canonical_id
from kbes.log.history import History
from kbes.store.application import KnowledgeBaseStore
from kbes.tools.codes import InvalidArgument
from kbes.tools.grants import Grants, admit
from kbes.tools.read import read
from kbes.tools.refusals import Asked, no_published_version, not_a_resource_uri, refusing
from kbes.tools.wire import Citation, ReadRequest

MIME_TYPE = "text/markdown"

KNOWLEDGE_BASE_TEMPLATE = "kbes://knowledge_bases/{knowledge_base_id}"
ARTICLE_TEMPLATE = f"{KNOWLEDGE_BASE_TEMPLATE}/articles/{{article_id}}"
VERSION_TEMPLATE = f"{ARTICLE_TEMPLATE}/versions/{{updated_at}}"

_KNOWLEDGE_BASE = UriTemplate.parse(KNOWLEDGE_BASE_TEMPLATE)
_ARTICLE = UriTemplate.parse(ARTICLE_TEMPLATE)
_VERSION = UriTemplate.parse(VERSION_TEMPLATE)


@dataclass(frozen=True)
class Template:
    """One URI template as `resources/templates/list` describes it."""

    name: str
    title: str
    uri_template: str
    description: str


TEMPLATES: tuple[Template, ...] = (
    Template(
        name="article",
        title="Knowledge article (current version)",
        uri_template=ARTICLE_TEMPLATE,
        description=(
            "The current published version of one article of a granted knowledge base, as "
            "Markdown (its title as a heading, then its content). Changes whenever the article "
            "is saved: read it again after a notifications/resources/updated for this URI. An "
            "unpublished article answers with an error saying when it was unpublished."
        ),
    ),
    Template(
        name="article_version",
        title="Knowledge article (one cited version)",
        uri_template=VERSION_TEMPLATE,
        description=(
            "One published version of an article, pinned by the updated_at of its citation: "
            "the title and content exactly as they were then, for good, even after later saves "
            "or an unpublish. Search hits and reads link to this URI for each citation."
        ),
    ),
)


# URIs --------------------------------------------------------------------------------------------


def knowledge_base_uri(knowledge_base_id: str) -> str:
    return _KNOWLEDGE_BASE.expand({"knowledge_base_id": knowledge_base_id})


def article_uri(knowledge_base_id: str, article_id: str) -> str:
    return _ARTICLE.expand({"knowledge_base_id": knowledge_base_id, "article_id": article_id})


def version_uri(citation: Citation) -> str:
    """The version-pinned URI of a citation (RFC 6570 expansion: `:` becomes `%3A`)."""
    return _VERSION.expand(
        {
            "knowledge_base_id": citation.knowledge_base_id,
            "article_id": citation.article_id,
            "updated_at": citation.updated_at,
        }
    )


@dataclass(frozen=True)
class Address:
    """What a kbes URI names: a knowledge base, an article, or one version of an article."""

    knowledge_base_id: str
    article_id: str | None = None
    updated_at: str | None = None

    @property
    def subscribable(self) -> bool:
        """Current things change; a pinned version never does."""
        return self.updated_at is None


MAX_URI_CHARS = 512
"""Longer than any kbes resource URI in any id spelling (a version URI is under 200): a longer
one names nothing, and is refused before it is matched or echoed."""
SHOWN_URI_CHARS = 120
"""How much of an over-long URI a refusal shows: a 1 MB URI was echoed three times in its
error (message, data.message, data.uri; issue 35)."""


def shown_uri(uri: str) -> str:
    """The URI as an error may echo it: whole if it could be a kbes URI, else its start."""
    if len(uri) <= MAX_URI_CHARS:
        return uri
    return f"{uri[:SHOWN_URI_CHARS]}… ({len(uri):,} characters)"


def parse_uri(uri: str) -> Address:
    """The address a URI spells; `invalid_argument` naming the templates otherwise. Ids are not
    checked here: an odd id reads as an unknown one, through the tools' own checks."""
    templates = (ARTICLE_TEMPLATE, VERSION_TEMPLATE, KNOWLEDGE_BASE_TEMPLATE)
    if len(uri) > MAX_URI_CHARS:
        raise not_a_resource_uri(shown_uri(uri), templates)
    for template in (_VERSION, _ARTICLE, _KNOWLEDGE_BASE):
        found = template.match(uri)
        if found is not None:
            values = {key: value for key, value in found.items() if isinstance(value, str)}
            return Address(
                knowledge_base_id=values["knowledge_base_id"],
                article_id=values.get("article_id"),
                updated_at=values.get("updated_at"),
            )
    raise not_a_resource_uri(uri, templates)


def canonical_uri(uri: str) -> str | None:
    """The one spelling of a current (subscribable) URI the server announces changes under, or
    None when the URI names nothing that can change (a pinned version, a malformed id)."""
    try:
        address = parse_uri(uri)
    except InvalidArgument:
        return None
    kb = canonical_id(address.knowledge_base_id)
    if kb is None or not address.subscribable:
        return None
    if address.article_id is None:
        return knowledge_base_uri(kb)
    article = canonical_id(address.article_id)
    return None if article is None else article_uri(kb, article)


# Reads -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceText:
    """What `resources/read` answers for one URI."""

    uri: str
    text: str
    last_modified: str | None
    """RFC 3339 UTC: the version's updated_at (None for a knowledge base)."""
    pinned: bool
    """True when the text can never change (a version-pinned URI)."""
    meta: dict[str, Any]


def read_resource(store: KnowledgeBaseStore, uri: str, grants: Grants = None) -> ResourceText:
    """The resource at `uri` as the caller with `grants` may see it. Raises the tools' errors:
    `not_found` (in the tools' very words for an unknown, ungranted, draft or foreign id),
    `gone` with `unpublished_at` for a current URI of an unpublished article, and
    `invalid_argument` for a URI that is not a kbes one. The grant check is the tools' one
    (`admit`), and an article is read by the read tool's own answer."""
    address = parse_uri(uri)
    kb = admit(address.knowledge_base_id, grants)
    asked = Asked(knowledge_base_id=address.knowledge_base_id, article_id=address.article_id)
    with refusing(asked):
        if address.article_id is None:
            return _read_knowledge_base(store, uri, kb)
        request = ReadRequest(
            knowledge_base_id=address.knowledge_base_id, article_id=address.article_id
        )
        if address.updated_at is None:
            current = read(store, request, kb)
            return _article_text(
                uri, current.title, current.content, current.citation, pinned=False
            )
        return _read_version(store, uri, request, kb, address.updated_at)


def _read_version(
    store: KnowledgeBaseStore, uri: str, request: ReadRequest, kb: UUID, updated_at: str
) -> ResourceText:
    # The current read decides visibility, so a pinned URI refuses exactly what the read tool
    # refuses; an unpublished article (gone) keeps every version it published.
    with contextlib.suppress(Gone):
        read(store, request, kb)
    state = History.of(store).article_at(request.article_id, updated_at)
    if not state.published or state.knowledge_base_id != str(kb):
        # A draft-era version was never visible to anyone: not a version of this resource.
        raise no_published_version(request.article_id, state.updated_at)
    citation = Citation(
        knowledge_base_id=state.knowledge_base_id,
        article_id=state.article_id,
        updated_at=state.updated_at,
    )
    return _article_text(uri, state.title, state.content, citation, pinned=True)


def _article_text(
    uri: str, title: str, content: str, citation: Citation, *, pinned: bool
) -> ResourceText:
    return ResourceText(
        uri=uri,
        text=markdown(title, content),
        last_modified=citation.updated_at,
        pinned=pinned,
        meta={
            "citation": {
                "knowledge_base_id": citation.knowledge_base_id,
                "article_id": citation.article_id,
                "updated_at": citation.updated_at,
            }
        },
    )


def _read_knowledge_base(store: KnowledgeBaseStore, uri: str, kb: UUID) -> ResourceText:
    # The poll tool's own check (unknown) and, in the same read, the log's head: the cursor
    # from which poll_resource_events misses nothing that happens after this read.
    store.require_knowledge_base(kb)
    head = store.head()
    store.catch_up()
    kb_text = str(kb)
    found = store.knowledge_base(kb)
    name = found.name if found is not None else kb_text
    text = (
        f"# {name}\n\n"
        f"Knowledge base {kb_text}. Search it with search_knowledge_base; its articles are at "
        f"{ARTICLE_TEMPLATE.replace('{knowledge_base_id}', kb_text)}.\n\n"
        "To learn of every change after this read, call poll_resource_events with "
        f"resource_type 'knowledge_base', resource_id {kb_text} and after_sequence {head}; "
        "or, while connected, listen to this URI.\n"
    )
    return ResourceText(
        uri=uri,
        text=text,
        last_modified=None,
        pinned=False,
        meta={"knowledge_base_id": kb_text, "name": name, "log_head": head},
    )


@dataclass(frozen=True)
class KnowledgeBaseListing:
    uri: str
    knowledge_base_id: str
    name: str
    published: int


def list_knowledge_bases(
    store: KnowledgeBaseStore, grants: Grants = None
) -> list[KnowledgeBaseListing]:
    """The knowledge bases the caller may read, one resource each (a handful, unlike articles)."""
    store.catch_up()
    return [
        KnowledgeBaseListing(
            uri=knowledge_base_uri(kb.knowledge_base_id),
            knowledge_base_id=kb.knowledge_base_id,
            name=kb.name,
            published=kb.published,
        )
        for kb in store.knowledge_bases()
        if grants is None or kb.knowledge_base_id in grants
    ]
