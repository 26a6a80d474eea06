"""What agents send and receive, for all five tools. Requests forbid unknown fields; the tools'
JSON input schemas are generated from these structs, so the advertised contract and the enforced
one are one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar

import msgspec
from msgspec import UNSET, Meta, UnsetType

from kbes.clock import to_utc
from kbes.limits import (
    LIMITS,
    content_problem,
    encodes,
    idempotency_key_problem,
    title_problem,
)

MAX_SEQUENCE = 2**63 - 1
"""The largest notification id SQLite and PostgreSQL can store (a signed 64-bit integer)."""


NOT_UNICODE = (
    "Expected text, got a lone surrogate (an escape such as \\ud800 alone), which is not "
    "Unicode text"
)


class Wire(msgspec.Struct, kw_only=True, frozen=True):
    """Base of every wire type."""


class Request(Wire, forbid_unknown_fields=True):
    """Base of tool requests: an unknown argument is an error, not silently ignored."""

    stored_text: ClassVar[tuple[str, ...]] = ()
    """Text fields a write stores, which must be Unicode text (ids and queries that are not
    simply find nothing, and their errors echo them escaped)."""

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


class SearchRequest(Request):
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


class ReadRequest(Request):
    knowledge_base_id: KnowledgeBaseId
    article_id: ArticleId


class EditRequest(Request):
    stored_text: ClassVar[tuple[str, ...]] = ("content", "title", "idempotency_key")

    knowledge_base_id: KnowledgeBaseId
    article_id: ArticleId
    content: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=LIMITS.content_chars,
            description="The whole new content of the article (it replaces the old content).",
        ),
    ]
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
        str,
        Meta(
            min_length=1,
            max_length=LIMITS.idempotency_key_chars,
            description=(
                "A key unique to this intended change; retrying with the same key "
                "never writes twice and returns the first result."
            ),
        ),
    ]
    title: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=LIMITS.title_chars,
                description=(
                    "New title, one line of visible text (no control or format characters); "
                    "omit to keep it."
                ),
            ),
        ]
        | UnsetType
    ) = UNSET

    def __post_init__(self) -> None:
        """The domain's title rule and limits (`kbes.limits`), checked while parsing, so a
        refused edit is `invalid_argument` naming the field before the user is asked to
        approve it; the aggregate checks the same again for every other door."""
        super().__post_init__()
        problems = {
            "title": None if self.title is UNSET else title_problem(self.title),
            "content": content_problem(self.content),
            "idempotency_key": idempotency_key_problem(self.idempotency_key),
        }
        for name, problem in problems.items():
            if problem is not None:
                raise ValueError(f"{problem} - at `$.{name}`")


class PollRequest(Request):
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


class Citation(Wire):
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


class SearchHit(Wire):
    article_id: str
    title: str
    snippet: str
    updated_at: Timestamp
    citation: Citation


class SearchResult(Wire):
    knowledge_base_id: str
    query: str
    hits: list[SearchHit]


class ArticleResult(Wire):
    knowledge_base_id: str
    article_id: str
    title: str
    content: str
    updated_at: Timestamp
    citation: Citation


class EditResult(Wire):
    knowledge_base_id: str
    article_id: str
    title: str
    updated_at: Timestamp
    citation: Citation
    replay: bool


class ResourceEvent(Wire):
    sequence: int
    type: str
    article_id: str
    updated_at: Timestamp


class PollResult(Wire):
    resource_type: str
    resource_id: str
    events: list[ResourceEvent]
    next_sequence: Annotated[
        int, Meta(description="Pass as after_sequence next time to resume after this page.")
    ]
    has_more: Annotated[
        bool, Meta(description="True when the page is full: poll again right away.")
    ]


class DiffRequest(Request):
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


class ArticleChange(Wire):
    """One event on the article since the cited version."""

    sequence: int
    type: str
    updated_at: Timestamp


class DiffResult(Wire):
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
