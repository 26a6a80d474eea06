"""Historical reads: an article as it was at one of its versions, and the list of its versions.

Every answer here comes from an `EventSource`: either the live store (its version history for
the list of versions, its `article_at_version` for the article at one of them) or an exported
log (`kbes.log.export.LogSource`). Both sources hand back the `Article` aggregate folded by its
own events, so an audit against either gives the same answer."""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID
from weakref import WeakKeyDictionary

from kbes.domain.article import EVENT_CLASSES, PUBLISHING, Article, in_feed, markdown
from kbes.domain.author import Author
from kbes.domain.clock import format_timestamp, parse_timestamp
from kbes.domain.errors import ArticleNotInLog, DiffTooLarge, NotATime, VersionNotFound
from kbes.domain.ids import parse_id
from kbes.log.line_diff import bounded_unified_diff
from kbes.store.application import KnowledgeBaseStore

CONTENT_EVENTS = frozenset({"saved", "retitled"})
"""Event types that change what an article says (its title or content)."""

REPLAYED_MAXSIZE = 512
"""Replayed historical versions kept per store (see `StoreSource.article_at_version`)."""
_REPLAYED: WeakKeyDictionary[KnowledgeBaseStore, OrderedDict[tuple[UUID, int], Article]] = (
    WeakKeyDictionary()
)
_REPLAYED_LOCK = threading.Lock()


@dataclass(frozen=True)
class Version:
    """One version of an article: the event that made it and when."""

    version: int
    updated_at: str
    """Canonical RFC 3339 UTC with microseconds, as citations carry it."""
    at: datetime
    type: str
    sequence: int
    """The notification id of the event in the log."""


@dataclass(frozen=True)
class ArticleHistory:
    """Every version of one article, oldest first."""

    article_id: UUID
    knowledge_base_id: UUID
    versions: tuple[Version, ...]

    def as_of(self, instant: datetime | None) -> tuple[Version, ...]:
        """The versions that existed at `instant` (all of them when None)."""
        if instant is None:
            return self.versions
        return tuple(v for v in self.versions if v.at <= instant)

    def polled(self) -> tuple[Version, ...]:
        """The versions the event feed (`poll_resource_events`) shows, by the feed's own rule
        (`kbes.domain.article.in_feed`): so no other tool shows an agent more than it could
        have polled."""
        shown: list[Version] = []
        published = False
        for version in self.versions:
            kind = EVENT_CLASSES.get(version.type)
            if kind is None:
                continue
            if in_feed(kind, published):
                shown.append(version)
            if kind in PUBLISHING:
                published = PUBLISHING[kind][1]
        return tuple(shown)

    def at(self, instant: datetime) -> Version | None:
        """The version whose `updated_at` is exactly `instant`, compared as instants."""
        for version in self.versions:
            if version.at == instant:
                return version
        return None


@dataclass(frozen=True)
class ArticleState:
    """The article as it was at one version."""

    knowledge_base_id: str
    article_id: str
    version: int
    updated_at: str
    type: str
    title: str
    content: str
    published: bool


class EventSource(Protocol):
    """Where historical answers come from: the live store or an exported log.

    Both implementations must agree on every answer for the same history; audit and the diff
    tool use nothing else."""

    def knowledge_base_created_at(self, knowledge_base_id: UUID) -> datetime | None:
        """When the knowledge base was created, or None if it never existed."""
        ...

    def article_history(self, article_id: UUID) -> ArticleHistory | None:
        """Every version of the article, or None if it never existed."""
        ...

    def article_at_version(self, article_id: UUID, version: int) -> Article:
        """The aggregate folded from the article's first `version` events."""
        ...

    def article_authors(self, article_id: UUID, after: int = 0) -> dict[int, Author | None]:
        """Who wrote each of the article's versions after version `after` (None: written
        before kbes recorded authors)."""
        ...


class StoreSource:
    """The live store as an event source: its version history lists versions, and
    `article_at_version` replays the article up to one of them."""

    def __init__(self, store: KnowledgeBaseStore, *, catch_up: bool = True) -> None:
        self.store = store
        self._latest: dict[UUID, int] = {}
        with _REPLAYED_LOCK:
            self._replayed = _REPLAYED.setdefault(store, OrderedDict())
        if catch_up:
            # Versions come from the projection, so bring it to the head first; every version
            # number it lists is then also in the event store.
            store.catch_up()

    def knowledge_base_created_at(self, knowledge_base_id: UUID) -> datetime | None:
        found = self.store.knowledge_base(knowledge_base_id)
        return None if found is None else parse_timestamp(found.created_at)

    def article_history(self, article_id: UUID) -> ArticleHistory | None:
        found = self.store.version_history(article_id)
        if found is None:
            return None
        versions = tuple(
            Version(
                version=v.version,
                updated_at=v.updated_at,
                at=parse_timestamp(v.updated_at),
                type=v.type,
                sequence=v.sequence,
            )
            for v in found.versions
        )
        if versions:
            self._latest[article_id] = versions[-1].version
        return ArticleHistory(article_id, found.knowledge_base_id, versions)

    def article_authors(self, article_id: UUID, after: int = 0) -> dict[int, Author | None]:
        return self.store.article_authors(article_id, after)

    def article_at_version(self, article_id: UUID, version: int) -> Article:
        if self._latest.get(article_id) == version:
            # The latest version (what a diff compares against) comes from the aggregate
            # cache, fast-forwarded by one query, rather than by replaying the whole history.
            latest = self.store.get_article(article_id)
            if latest.version == version:
                return latest
        # An earlier version never changes (the log is append-only), so a replay of it is kept
        # for the next diff or audit that cites it. Callers must not mutate it.
        key = (article_id, version)
        with _REPLAYED_LOCK:
            article = self._replayed.get(key)
            if article is not None:
                self._replayed.move_to_end(key)
                return article
        article = self.store.article_at_version(article_id, version)
        with _REPLAYED_LOCK:
            self._replayed[key] = article
            while len(self._replayed) > REPLAYED_MAXSIZE:
                self._replayed.popitem(last=False)
        return article


class History:
    """Historical reads over one event source, memoised for the life of this object (an audit
    run, one tool call), since several citations often name the same article."""

    def __init__(self, source: EventSource) -> None:
        self.source = source
        self._histories: dict[UUID, ArticleHistory | None] = {}
        self._states: dict[tuple[UUID, int], ArticleState] = {}

    @classmethod
    def of(cls, store: KnowledgeBaseStore) -> History:
        return cls(StoreSource(store))

    def knowledge_base_exists(self, knowledge_base_id: UUID, as_of: datetime | None = None) -> bool:
        created = self.source.knowledge_base_created_at(knowledge_base_id)
        return created is not None and (as_of is None or created <= as_of)

    def history(self, article_id: UUID) -> ArticleHistory | None:
        if article_id not in self._histories:
            self._histories[article_id] = self.source.article_history(article_id)
        return self._histories[article_id]

    def state(self, history: ArticleHistory, version: Version) -> ArticleState:
        """The article as it was at `version` (one of `history.versions`)."""
        key = (history.article_id, version.version)
        if key not in self._states:
            article = self.source.article_at_version(history.article_id, version.version)
            if article.version != version.version:
                raise RuntimeError(
                    f"article {history.article_id}: asked for version {version.version}, "
                    f"the event source replayed to {article.version}"
                )
            self._states[key] = ArticleState(
                knowledge_base_id=str(article.knowledge_base_id),
                article_id=str(article.id),
                version=article.version,
                updated_at=format_timestamp(article.updated_at),
                type=version.type,
                title=article.title,
                content=article.content,
                published=article.published,
            )
        return self._states[key]

    def versions(self, article_id: UUID | str) -> list[Version]:
        """Every version of the article with its time and event type; `not_found` if none."""
        return list(self._require(article_id).versions)

    def authored(
        self, article_id: UUID | str, after: int = 0
    ) -> list[tuple[Version, Author | None]]:
        """The article's versions after version `after`, each with its author (None for an
        event written before kbes recorded authors); `not_found` if there is no article."""
        history = self._require(article_id)
        authors = self.source.article_authors(history.article_id, after)
        return [(v, authors.get(v.version)) for v in history.versions if v.version > after]

    def article_at(self, article_id: UUID | str, updated_at: datetime | str) -> ArticleState:
        """The article as it was at exactly `updated_at`; `invalid` if it never had that
        version, `not_found` if there is no such article."""
        history = self._require(article_id)
        instant = _instant(updated_at)
        version = history.at(instant)
        if version is None:
            raise VersionNotFound(history.article_id, format_timestamp(instant))
        return self.state(history, version)

    def article_as_of(self, article_id: UUID | str, instant: datetime | str) -> ArticleState | None:
        """The article as it stood at `instant` (its latest version then), or None if it did
        not exist yet."""
        history = self._require(article_id)
        versions = history.as_of(_instant(instant))
        return self.state(history, versions[-1]) if versions else None

    def _require(self, article_id: UUID | str) -> ArticleHistory:
        parsed = parse_id(article_id)
        history = None if parsed is None else self.history(parsed)
        if history is None:
            raise ArticleNotInLog(article_id)
        return history


def article_versions(store: KnowledgeBaseStore, article_id: UUID | str) -> list[Version]:
    """Every version of an article in the live store, oldest first."""
    return History.of(store).versions(article_id)


def article_at(
    store: KnowledgeBaseStore, article_id: UUID | str, updated_at: datetime | str
) -> ArticleState:
    """The article in the live store as it was at exactly `updated_at`."""
    return History.of(store).article_at(article_id, updated_at)


def unified_diff(
    old: ArticleState, new: ArticleState, *, context: int = 3, budget: int | None = None
) -> str:
    """A unified diff of the article from `old` to `new`, labelled `<article_id>@<updated_at>`;
    empty when title and content are the same. With a `budget`, `DiffTooLarge` (naming the
    two versions) when the diff would take more than that many matcher steps
    (`kbes.log.line_diff`)."""
    a = markdown(old.title, old.content).splitlines()
    b = markdown(new.title, new.content).splitlines()
    names = {"fromfile": f"{old.article_id}@{old.updated_at}"}
    names["tofile"] = f"{new.article_id}@{new.updated_at}"
    if budget is None:
        lines = list(difflib.unified_diff(a, b, n=context, lineterm="", **names))
    else:
        try:
            lines = bounded_unified_diff(a, b, n=context, budget=budget, **names)
        except DiffTooLarge as e:
            versions = {"since_version": old.updated_at, "updated_at": new.updated_at}
            raise DiffTooLarge(e.old_lines, e.new_lines, e.budget, **versions) from None
    text = "\n".join(lines)
    return f"{text}\n" if text else ""


def _instant(value: datetime | str) -> datetime:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    try:
        return parse_timestamp(value) if isinstance(value, str) else _naive(value)
    except ValueError as e:
        raise NotATime(value, str(e), "updated_at") from None


def _naive(value: datetime) -> datetime:
    raise ValueError("a naive datetime is ambiguous")
