"""The notification log as JSON Lines, and that file read back as an event source.

`export_log` writes one line per stored event, in sequence order:

    {"sequence": 7, "type": "saved", "topic": "kbes.article:Article.Saved",
     "originator_id": "…", "originator_version": 3, "knowledge_base_id": "…",
     "timestamp": "2026-11-30T09:14:03.000000Z",
     "author": {"kind": "person", "name": "alice", "how": "env", "approved": false},
     "payload": {"content": "…"}}

`author` is who wrote the event (`kbes.domain.author`); a line of an event written before kbes
recorded authors has none. `payload` is the rest of the event (what `type` and the ids above do
not already say).
`LogSource` reads such a file (or several exports concatenated, e.g. a full export followed by
`--after N` increments) and rebuilds each article with the `Article` aggregate's own event
handlers, through the same mapper the store uses, so an auditor holding only the file gets
the answers the live database gives."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, Any
from uuid import UUID

import msgspec
from eventsourcing.persistence import MapperDeserialisationError, StoredEvent
from eventsourcing.utils import get_topic

from kbes.domain.article import EVENT_TYPES, Article
from kbes.domain.author import Author
from kbes.domain.clock import format_timestamp, parse_timestamp
from kbes.domain.folder_source import FolderSource
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.domain.receipt import EditReceipt
from kbes.log.byte_order_mark import without_bom
from kbes.log.history import ArticleHistory, Version
from kbes.store.application import KnowledgeBaseStore
from kbes.store.mapper import MsgspecMapper

LOG_TYPES: dict[type, str] = {
    **EVENT_TYPES,
    KnowledgeBase.Created: "knowledge_base_created",
    EditReceipt.Recorded: "edit_recorded",
    FolderSource.Started: "folder_source_started",
    FolderSource.Mapped: "folder_mapped",
}
"""The `type` of each stored event class in an export."""

_CLASSES: dict[str, type] = {name: cls for cls, name in LOG_TYPES.items()}
_ARTICLE_TYPES = frozenset(EVENT_TYPES.values())
_HEADER_FIELDS = frozenset(
    {
        "originator_id",
        "originator_version",
        "timestamp",
        "knowledge_base_id",
        "originator_topic",
        "author",
    }
)


class LogEvent(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One line of an exported log. `author` is left out for an event that has none (written
    before kbes recorded authors), so such a line is as that kbes exported it."""

    sequence: int
    type: str
    topic: str
    originator_id: UUID
    originator_version: int
    knowledge_base_id: UUID | None
    timestamp: str
    author: Author | None = None
    payload: dict[str, Any]


class LogFormatError(ValueError):
    """An exported log that cannot be read, or that lacks part of an article's history."""


def log_events(
    store: KnowledgeBaseStore,
    *,
    knowledge_base_id: UUID | None = None,
    after: int = 0,
) -> Iterator[LogEvent]:
    """Every event after sequence `after` up to the head of the log as it was when called,
    optionally only those of one knowledge base (its creation, its articles, its receipts)."""
    for sequence, event in store.logged_events(after):
        line = to_log_event(sequence, event)
        if knowledge_base_id is None or line.knowledge_base_id == knowledge_base_id:
            yield line


def to_log_event(sequence: int, event: Any) -> LogEvent:
    """The export line of one stored domain event."""
    cls = type(event)
    state = vars(event)
    if isinstance(event, KnowledgeBase.Created):
        kb = event.originator_id
    else:
        kb = state.get("knowledge_base_id")
    payload = {
        key: format_timestamp(value) if isinstance(value, datetime) else value
        for key, value in state.items()
        if key not in _HEADER_FIELDS
    }
    return LogEvent(
        sequence=sequence,
        type=LOG_TYPES.get(cls, get_topic(cls)),
        topic=get_topic(cls),
        originator_id=event.originator_id,
        originator_version=event.originator_version,
        knowledge_base_id=kb,
        timestamp=format_timestamp(event.timestamp),
        author=state.get("author"),
        payload=payload,
    )


def export_log(
    store: KnowledgeBaseStore,
    out: IO[bytes],
    *,
    knowledge_base_id: UUID | None = None,
    after: int = 0,
) -> int:
    """Write the log as JSON Lines to `out`; returns the number of events written."""
    encoder = msgspec.json.Encoder()
    buffer = bytearray()
    count = 0
    for line in log_events(store, knowledge_base_id=knowledge_base_id, after=after):
        encoder.encode_into(line, buffer, -1)
        buffer.extend(b"\n")
        count += 1
        if len(buffer) > 1 << 20:
            out.write(buffer)
            buffer.clear()
    out.write(buffer)
    return count


class LogSource:
    """An exported log as an event source (see `kbes.log.history.EventSource`)."""

    def __init__(self, events: Iterable[LogEvent]) -> None:
        by_sequence: dict[int, LogEvent] = {}
        for event in events:
            seen = by_sequence.get(event.sequence)
            if seen is not None and seen != event:
                raise LogFormatError(
                    f"two different events carry sequence {event.sequence}; the files mix "
                    "exports of different databases"
                )
            by_sequence[event.sequence] = event
        self._knowledge_bases: dict[UUID, datetime] = {}
        self._articles: dict[UUID, list[LogEvent]] = {}
        for sequence in sorted(by_sequence):
            event = by_sequence[sequence]
            if event.type == "knowledge_base_created":
                self._knowledge_bases[event.originator_id] = _timestamp(event)
            elif event.type in _ARTICLE_TYPES:
                self._articles.setdefault(event.originator_id, []).append(event)
        for article_id, article_events in self._articles.items():
            versions = [e.originator_version for e in article_events]
            if versions != list(range(1, len(versions) + 1)):
                raise LogFormatError(
                    f"the log holds versions {_ranges(versions)} of article {article_id}, not "
                    "its whole history; export without --after, or concatenate every export"
                )
        self._mapper = MsgspecMapper()
        self._folded: dict[UUID, list[Any]] = {}

    @classmethod
    def from_lines(cls, lines: Iterable[bytes | str], name: str = "log") -> LogSource:
        """Parse JSON Lines; a bad line raises `LogFormatError` naming it."""
        decoder = msgspec.json.Decoder(LogEvent)

        def parse() -> Iterator[LogEvent]:
            for number, raw in enumerate(lines, start=1):
                if number == 1:  # as a citations file's (kbes.log.byte_order_mark)
                    raw = without_bom(raw, name, LogFormatError)
                if not raw.strip():
                    continue
                try:
                    yield decoder.decode(raw)
                except (msgspec.ValidationError, msgspec.DecodeError) as e:
                    raise LogFormatError(
                        f"{name} line {number}: {e}; each line must be an event as written by "
                        "`kbes log export`"
                    ) from None

        return cls(parse())

    @classmethod
    def from_path(cls, path: str) -> LogSource:
        with open(path, "rb") as f:
            return cls.from_lines(f, name=path)

    def knowledge_base_created_at(self, knowledge_base_id: UUID) -> datetime | None:
        return self._knowledge_bases.get(knowledge_base_id)

    def article_history(self, article_id: UUID) -> ArticleHistory | None:
        events = self._articles.get(article_id)
        if not events:
            return None
        kb = events[0].knowledge_base_id
        if kb is None:
            raise LogFormatError(f"sequence {events[0].sequence}: no knowledge_base_id")
        versions = tuple(
            Version(
                version=e.originator_version,
                updated_at=format_timestamp(_timestamp(e)),
                at=_timestamp(e),
                type=e.type,
                sequence=e.sequence,
            )
            for e in events
        )
        return ArticleHistory(article_id, kb, versions)

    def article_authors(self, article_id: UUID, after: int = 0) -> dict[int, Author | None]:
        return {
            e.originator_version: e.author
            for e in self._articles.get(article_id, [])
            if e.originator_version > after
        }

    def article_at_version(self, article_id: UUID, version: int) -> Article:
        events = self._domain_events(article_id)
        article: Article | None = None
        for event in events[:version]:
            article = event.mutate(article)
        if article is None:
            raise LogFormatError(f"no version {version} of article {article_id} in the log")
        return article

    def _domain_events(self, article_id: UUID) -> list[Any]:
        """The article's lines turned back into stored events and decoded by the store's own
        mapper, so the aggregate folds exactly what `repository.get` would."""
        if article_id not in self._folded:
            self._folded[article_id] = [self._domain_event(e) for e in self._articles[article_id]]
        return self._folded[article_id]

    def _domain_event(self, line: LogEvent) -> Any:
        cls = _CLASSES[line.type]
        fields = {f.name for f in dataclasses.fields(cls)}
        state: dict[str, Any] = {**line.payload, "timestamp": line.timestamp}
        if "knowledge_base_id" in fields:
            state["knowledge_base_id"] = line.knowledge_base_id
        if "originator_topic" in fields:
            # Never taken from the file: an export names no code to import.
            state["originator_topic"] = get_topic(Article)
        if line.author is not None:
            # A line with an author is of the event's current version; one without is of the
            # version before authors, which the mapper upcasts as it would the stored event.
            state["author"] = line.author
            state["class_version"] = getattr(cls, "class_version", 1)
        stored = StoredEvent(
            originator_id=line.originator_id,
            originator_version=line.originator_version,
            topic=get_topic(cls),
            state=msgspec.json.encode(state),
        )
        try:
            return self._mapper.to_domain_event(stored)
        except MapperDeserialisationError as e:
            raise LogFormatError(f"sequence {line.sequence}: {e}") from None


def _timestamp(event: LogEvent) -> datetime:
    try:
        return parse_timestamp(event.timestamp)
    except ValueError as e:
        raise LogFormatError(f"sequence {event.sequence}: bad timestamp ({e})") from None


def _ranges(numbers: list[int]) -> str:
    if not numbers:
        return "none"
    return f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])
