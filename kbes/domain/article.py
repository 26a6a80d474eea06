"""The Article aggregate. One command is one event, and the timestamp of the latest event is
the article's `updated_at`: the version a citation names and an edit compares against."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from kbes.domain.aggregate import copy_aggregate
from kbes.domain.author import Author, upcast_no_author
from kbes.domain.clock import SystemClock, next_timestamp
from kbes.domain.errors import AlreadyPublished, NotPublished
from kbes.domain.limits import DEFAULT_LIMITS, Limits, require_content, require_title

_SYSTEM_CLOCK = SystemClock()


class Article(Aggregate):
    """A knowledge-base article; visible to agents only while published."""

    knowledge_base_id: UUID
    title: str
    content: str
    published: bool
    ever_published: bool

    class Event(Aggregate.Event):
        """Every article event names its knowledge base and its author (None in events
        written before kbes recorded authors: version 1, upcast as they load)."""

        knowledge_base_id: UUID
        author: Author | None

        class_version = 2
        upcast_v1_v2 = staticmethod(upcast_no_author)

    class Drafted(Event, Aggregate.Created):
        title: str
        content: str

    class Published(Event):
        def apply(self, article: Article) -> None:
            article.published = True
            article.ever_published = True

    class Saved(Event):
        content: str

        def apply(self, article: Article) -> None:
            article.content = self.content

    class Retitled(Event):
        title: str
        content: str

        def apply(self, article: Article) -> None:
            article.title = self.title
            article.content = self.content

    class Unpublished(Event):
        def apply(self, article: Article) -> None:
            article.published = False

    def __init__(self, knowledge_base_id: UUID, title: str, content: str) -> None:
        self.knowledge_base_id = knowledge_base_id
        self.title = title
        self.content = content
        self.published = False
        self.ever_published = False

    def __deepcopy__(self, memo: dict[int, object]) -> Article:
        return copy_aggregate(self, memo)

    @staticmethod
    def create_id(**_: object) -> UUID:
        return uuid4()

    @classmethod
    def draft(
        cls,
        knowledge_base_id: UUID,
        title: str,
        content: str,
        *,
        at: datetime | None = None,
        id: UUID | None = None,
        limits: Limits = DEFAULT_LIMITS,
        by: Author | None = None,
    ) -> Article:
        """Draft a new article; `id` lets an importer derive it from a stable key. The title
        rule and the `limits` (the store's) are checked here, for every door; not in
        `__init__`, which also folds the log, whose past events must always replay."""
        require_title(title, limits)
        require_content(content, limits)
        return cls._create(
            cls.Drafted,
            id=id,
            knowledge_base_id=knowledge_base_id,
            title=title,
            content=content,
            author=by,
            timestamp=at or _SYSTEM_CLOCK.now(),
        )

    @property
    def updated_at(self) -> datetime:
        return self.modified_on

    def _next(self, at: datetime | None) -> datetime:
        """The next event's time: the caller's clock reading, or now; never before the last."""
        return next_timestamp(_SYSTEM_CLOCK, self.updated_at) if at is None else at

    def publish(self, *, at: datetime | None = None, by: Author | None = None) -> None:
        if self.published:
            raise AlreadyPublished(self.id)
        self.trigger_event(
            self.Published,
            knowledge_base_id=self.knowledge_base_id,
            author=by,
            timestamp=self._next(at),
        )

    def save(
        self,
        content: str,
        title: str | None = None,
        *,
        at: datetime | None = None,
        limits: Limits = DEFAULT_LIMITS,
        by: Author | None = None,
    ) -> bool:
        """Replace the whole content; a changed title makes the one event a `Retitled`.

        A save that changes neither content nor title emits nothing and returns False: the
        version stays, so no citation of it turns stale for nothing, whichever door (an agent's
        edit, a person's save, an import) the save came through. A new title or content is
        held to the title rule and the `limits` (the store's). `by`: the event's author."""
        if content == self.content and title in (None, self.title):
            return False
        if title is not None and title != self.title:
            require_title(title, limits)
        if content != self.content:
            require_content(content, limits)
        if title is not None and title != self.title:
            self.trigger_event(
                self.Retitled,
                knowledge_base_id=self.knowledge_base_id,
                title=title,
                content=content,
                author=by,
                timestamp=self._next(at),
            )
        else:
            self.trigger_event(
                self.Saved,
                knowledge_base_id=self.knowledge_base_id,
                content=content,
                author=by,
                timestamp=self._next(at),
            )
        return True

    def unpublish(self, *, at: datetime | None = None, by: Author | None = None) -> None:
        if not self.published:
            raise NotPublished(self.id)
        self.trigger_event(
            self.Unpublished,
            knowledge_base_id=self.knowledge_base_id,
            author=by,
            timestamp=self._next(at),
        )


EVENT_TYPES: dict[type, str] = {
    Article.Drafted: "drafted",
    Article.Published: "published",
    Article.Saved: "saved",
    Article.Retitled: "retitled",
    Article.Unpublished: "unpublished",
}
"""The wire name of each article event, as the event feed reports it."""

EVENT_CLASSES: dict[str, type] = {name: cls for cls, name in EVENT_TYPES.items()}
"""Each article event's class by its wire name."""


PUBLISHING: dict[type, tuple[bool, bool]] = {
    Article.Published: (False, True),
    Article.Unpublished: (True, False),
}
"""The events that change whether an article is published: (before, after). An article is
published only while unpublished and unpublished only while published (`InvalidState`)."""

FEED_EVENTS = frozenset({Article.Published, Article.Saved, Article.Retitled, Article.Unpublished})
"""The article events an agent's feed can show: never the draft."""


def in_feed(event: type, published: bool) -> bool:
    """The feed's visibility rule: whether an agent's feed shows an article event of class
    `event`, given whether the article was published when it happened (just before it).
    Publishing and unpublishing always show; a save or a retitle only while the article is
    published, never in a draft nor after it was unpublished; the draft never does. The feed
    (`poll_resource_events`) and every history an agent is shown apply this one rule, so no tool
    shows an agent more than it could have polled."""
    return event in PUBLISHING or (published and event in FEED_EVENTS)


def markdown(title: str, content: str) -> str:
    """The Markdown form of an article: its title as a heading, then its content. Resources
    serve it and diffs compare it, so a client diffing two versions sees a retitle."""
    return f"# {title}\n\n{content}"
