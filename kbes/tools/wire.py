"""What agents send and receive, for all five tools. Requests forbid unknown fields; the tools'
JSON input schemas are generated from these structs, so the advertised contract and the enforced
one are one. The edit request carries the store's limits: `EditRequest` the defaults, and
`edit_request(limits)` the same struct under a store's own (`Request.under`)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, ClassVar, cast

import msgspec
from msgspec import UNSET, Meta, UnsetType

from kbes.domain.clock import to_utc
from kbes.domain.limits import (
    DEFAULT_LIMITS,
    Limits,
    content_problem,
    encodes,
    idempotency_key_problem,
    title_problem,
)
from kbes.tools.refusals import NOT_UNICODE, problem

MAX_SEQUENCE = 2**63 - 1
"""The largest notification id SQLite and PostgreSQL can store (a signed 64-bit integer)."""


class Wire(msgspec.Struct, kw_only=True, frozen=True):
    """Base of every wire type. Each subclass says `kw_only=True, frozen=True` again: msgspec
    applies `kw_only` only to the fields of the class that says it, and type checkers
    (`dataclass_transform`) take a subclass that does not say `frozen` for a mutable one."""


class Request(Wire, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Base of tool requests: an unknown argument is an error, not silently ignored."""

    stored_text: ClassVar[tuple[str, ...]] = ()
    """Text fields a write stores, which must be Unicode text (ids and queries that are not
    simply find nothing, and their errors echo them escaped)."""

    @classmethod
    def under(cls, limits: Limits) -> type[Request]:
        """This request as a store with `limits` parses and advertises it: itself, for a
        request whose fields no limit bounds."""
        return cls

    def __post_init__(self) -> None:
        """A time that parses but has no UTC instant (`0001-01-01T00:00:00+05:30`) is refused
        here, as msgspec's own errors are (it wraps the ValueError, naming the field), so no
        tool meets it later as an OverflowError."""
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name in self.stored_text and isinstance(value, str) and not encodes(value):
                # JSON can escape a lone surrogate ("\ud800"), which no UTF-8 text holds:
                # storing it in an event would fail half way through the write.
                raise ValueError(f"{NOT_UNICODE} - at `$.{name}`")
            if isinstance(value, datetime):
                try:
                    to_utc(value)
                except ValueError as e:
                    raise ValueError(f"{e} - at `$.{name}`") from None


KnowledgeBaseId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=64,
        description="ID of a granted knowledge base (as returned in citations).",
    ),
]
ArticleId = Annotated[
    str,
    Meta(min_length=1, max_length=64, description="Article ID from a search hit or citation."),
]
Timestamp = Annotated[
    str,
    Meta(
        description="RFC 3339 UTC timestamp with microseconds; the article's version.",
        examples=["2026-11-30T09:00:00.000000Z"],
    ),
]


class SearchRequest(Request, kw_only=True, frozen=True):
    knowledge_base_id: KnowledgeBaseId
    query: Annotated[
        str,
        Meta(
            min_length=2,
            max_length=200,
            description="Words to search for; matched as plain text, never as query syntax.",
        ),
    ]
    limit: Annotated[int, Meta(ge=1, le=20, description="Most hits to return.")] = 10


class ReadRequest(Request, kw_only=True, frozen=True):
    knowledge_base_id: KnowledgeBaseId
    article_id: ArticleId


Content = Annotated[
    str,
    Meta(
        min_length=1,
        description="The whole new content of the article (it replaces the old content).",
    ),
]
"""An edit's content, without its limit (`max_length`: the store's `content_chars`)."""
IdempotencyKey = Annotated[
    str,
    Meta(
        min_length=1,
        description=(
            "A key unique to this intended change; retrying with the same key "
            "never writes twice and returns the first result."
        ),
    ),
]
"""An edit's idempotency key, without its limit (the store's `idempotency_key_chars`)."""
Title = Annotated[
    str,
    Meta(
        min_length=1,
        description=(
            "New title, one line of visible text (no control or format characters); "
            "omit to keep it."
        ),
    ),
]
"""An edit's new title, without its limit (the store's `title_chars`)."""


class EditRequest(Request, kw_only=True, frozen=True):
    stored_text: ClassVar[tuple[str, ...]] = ("content", "title", "idempotency_key")
    limits: ClassVar[Limits] = DEFAULT_LIMITS
    """The limits the fields carry (`edit_request` builds the struct for others)."""

    knowledge_base_id: KnowledgeBaseId
    article_id: ArticleId
    content: Annotated[Content, Meta(max_length=DEFAULT_LIMITS.content_chars)]
    expected_version: Annotated[
        datetime,
        Meta(
            tz=True,
            description=(
                "The updated_at from the citation of a recent read_knowledge_article. "
                "The edit is rejected if the article changed since."
            ),
        ),
    ]
    idempotency_key: Annotated[
        IdempotencyKey, Meta(max_length=DEFAULT_LIMITS.idempotency_key_chars)
    ]
    title: Annotated[Title, Meta(max_length=DEFAULT_LIMITS.title_chars)] | UnsetType = UNSET

    @classmethod
    def under(cls, limits: Limits) -> type[EditRequest]:
        return edit_request(limits)

    def __post_init__(self) -> None:
        """The domain's title rule and limits (`kbes.domain.limits`), checked while parsing, so a
        refused edit is `invalid_argument` naming the field before the user is asked to
        approve it; the aggregate checks the same again for every other door."""
        super().__post_init__()
        limits = self.limits
        problems = {
            "title": None if self.title is UNSET else title_problem(self.title, limits),
            "content": content_problem(self.content, limits),
            "idempotency_key": idempotency_key_problem(self.idempotency_key, limits),
        }
        for name, fact in problems.items():
            if fact is not None:
                raise ValueError(f"{problem(fact)} - at `$.{name}`")


@functools.cache
def edit_request(limits: Limits) -> type[EditRequest]:
    """The edit request of a store with `limits`: `EditRequest` under the defaults, else a
    subclass built once per limits, whose fields and schema carry them."""
    if limits == DEFAULT_LIMITS:
        return EditRequest
    return limited_edit_request(limits)


def limited_edit_request(limits: Limits) -> type[EditRequest]:
    """`EditRequest` with its limited fields bounded by `limits` instead; every field is
    declared again, in `EditRequest`'s order, so the schema lists them alike."""
    limited: dict[str, Any] = {
        "content": Annotated[Content, Meta(max_length=limits.content_chars)],
        "idempotency_key": Annotated[IdempotencyKey, Meta(max_length=limits.idempotency_key_chars)],
        "title": Annotated[Title, Meta(max_length=limits.title_chars)] | UnsetType,
    }
    fields: list[Any] = []
    for field in msgspec.structs.fields(EditRequest):
        kind = limited.get(field.name, field.type)
        fields.append((field.name, kind) if field.required else (field.name, kind, field.default))
    struct = msgspec.defstruct(
        EditRequest.__name__,
        fields,
        bases=(EditRequest,),
        module=__name__,
        namespace={"limits": limits},
        kw_only=True,
    )
    # defstruct is typed to return type[Struct], whatever its bases.
    return cast(type[EditRequest], struct)


class PollRequest(Request, kw_only=True, frozen=True):
    resource_type: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=64,
            description="Kind of resource; this server supports 'knowledge_base'.",
        ),
    ]
    resource_id: Annotated[
        str, Meta(min_length=1, max_length=64, description="ID of the knowledge base.")
    ]
    after_sequence: Annotated[
        int,
        Meta(
            ge=0,
            le=MAX_SEQUENCE,
            description="Return events after this sequence: 0, or the last next_sequence.",
        ),
    ] = 0
    limit: Annotated[int, Meta(ge=1, le=100, description="Most events to return.")] = 100


class Citation(Wire, kw_only=True, frozen=True):
    """A version stamp: which article, in which knowledge base, as of which update."""

    knowledge_base_id: str
    article_id: str
    updated_at: Timestamp


def cite(knowledge_base_id: str, article_id: str, updated_at: str) -> Citation:
    """The citation of the article version an answer shows: read, search, edit and diff all
    hand one back, and spelling it once keeps them citing alike."""
    return Citation(
        knowledge_base_id=knowledge_base_id, article_id=article_id, updated_at=updated_at
    )


class SearchHit(Wire, kw_only=True, frozen=True):
    article_id: str
    title: str
    snippet: str
    updated_at: Timestamp
    citation: Citation


class SearchResult(Wire, kw_only=True, frozen=True):
    knowledge_base_id: str
    query: str
    hits: list[SearchHit]


class ArticleResult(Wire, kw_only=True, frozen=True):
    knowledge_base_id: str
    article_id: str
    title: str
    content: str
    updated_at: Timestamp
    citation: Citation


class EditResult(Wire, kw_only=True, frozen=True):
    knowledge_base_id: str
    article_id: str
    title: str
    updated_at: Timestamp
    citation: Citation
    replay: bool


class ResourceEvent(Wire, kw_only=True, frozen=True):
    sequence: int
    type: str
    article_id: str
    updated_at: Timestamp


class PollResult(Wire, kw_only=True, frozen=True):
    resource_type: str
    resource_id: str
    events: list[ResourceEvent]
    next_sequence: Annotated[
        int, Meta(description="Pass as after_sequence next time to resume after this page.")
    ]
    has_more: Annotated[
        bool, Meta(description="True when the page is full: poll again right away.")
    ]


class DiffRequest(Request, kw_only=True, frozen=True):
    knowledge_base_id: KnowledgeBaseId
    article_id: ArticleId
    since_version: Annotated[
        datetime,
        Meta(
            tz=True,
            description=(
                "The updated_at of your citation of this article: the version your answer "
                "relied on. The diff runs from it to the current version."
            ),
        ),
    ]


class ArticleChange(Wire, kw_only=True, frozen=True):
    """One event on the article since the cited version."""

    sequence: int
    type: str
    updated_at: Timestamp


class DiffResult(Wire, kw_only=True, frozen=True):
    knowledge_base_id: str
    article_id: str
    since_version: Timestamp
    updated_at: Timestamp
    title: str
    changed: Annotated[
        bool, Meta(description="False when the cited version is still the current one.")
    ]
    changes: Annotated[
        list[ArticleChange],
        Meta(description="Events since the cited version, oldest first."),
    ]
    diff: Annotated[
        str,
        Meta(
            description=(
                "Unified diff from the cited version to the current one; the first line of "
                "each side is '# <title>'. Empty when nothing changed."
            )
        ),
    ]
    citation: Citation
