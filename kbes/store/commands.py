"""People's commands: knowledge bases and articles created, published, unpublished and saved by
a person, last writer wins. No versions are compared here: that is the agents' edit
(kbes.store.edit)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from typing import TypeVar
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from kbes.domain.article import Article
from kbes.domain.clock import Clock, next_timestamp
from kbes.domain.errors import ArticleElsewhere, ArticleUnknown, NothingToSave, WriteContended
from kbes.domain.ids import require_id
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.domain.limits import Limits
from kbes.store.event_log import EventLog
from kbes.store.knowledge_bases import KnownKnowledgeBases

R = TypeVar("R")

WRITE_ATTEMPTS = 10
"""How many times a person's write is tried, each on a fresh load, while other processes keep
writing the same article first; then `WriteContended`, nothing written."""


class PeopleCommands:
    """The commands the CLI, imports and simulations give on a person's behalf."""

    def __init__(
        self, log: EventLog, known: KnownKnowledgeBases, clock: Clock, limits: Limits
    ) -> None:
        self.log = log
        self.known = known
        self.clock = clock
        self.limits = limits

    def create_knowledge_base(self, name: str) -> UUID:
        """A new knowledge base; its name follows the title rule (`BlankName`, `TooLong`,
        `TitleCharacter` naming `name` otherwise). Names need not be unique: ids tell
        knowledge bases apart (`knowledge_bases_named` finds those a name already has)."""
        kb = KnowledgeBase.create(name, at=self.clock.now())
        self.log.save(kb)
        self.known.add(kb.id)
        return kb.id

    def add_article(
        self, knowledge_base_id: UUID | str, title: str, content: str, *, publish: bool = False
    ) -> UUID:
        """Draft an article (and publish it at once if asked); returns its id."""
        kb = self.known.require(knowledge_base_id)
        title = _require_title(title)
        article = Article.draft(
            kb, title, content, at=next_timestamp(self.clock, None), limits=self.limits
        )
        if publish:
            article.publish(at=next_timestamp(self.clock, article.updated_at))
        self.log.save(article)
        return article.id

    def add_articles(
        self, knowledge_base_id: UUID | str, drafts: Iterable[tuple[str, str]], *, publish: bool
    ) -> list[UUID]:
        """Draft many articles in one transaction (imports and simulations)."""
        kb = self.known.require(knowledge_base_id)
        batch: list[Article] = []
        for title, content in drafts:
            article = Article.draft(
                kb,
                _require_title(title),
                content,
                at=next_timestamp(self.clock, None),
                limits=self.limits,
            )
            if publish:
                article.publish(at=next_timestamp(self.clock, article.updated_at))
            batch.append(article)
        self.log.save(*batch)
        return [article.id for article in batch]

    def publish_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> int:
        def publish() -> int:
            article = self.article_for_person(knowledge_base_id, article_id)
            article.publish(at=next_timestamp(self.clock, article.updated_at))
            return self._save_one(article)

        return self.last_writer_wins(publish, article_id)

    def unpublish_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> int:
        def unpublish() -> int:
            article = self.article_for_person(knowledge_base_id, article_id)
            article.unpublish(at=next_timestamp(self.clock, article.updated_at))
            return self._save_one(article)

        return self.last_writer_wins(unpublish, article_id)

    def save_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        content: str | None = None,
        title: str | None = None,
    ) -> int | None:
        """A person's save, last writer wins: one `Saved` or `Retitled` event, and its
        sequence; None when the save would change nothing (the article decides), so nothing
        was written. Another process's write of the article first means a fresh load and
        another try (`last_writer_wins`)."""

        def save() -> int | None:
            article = self.article_for_person(knowledge_base_id, article_id)
            if content is None and title is None:
                raise NothingToSave()
            if not article.save(
                article.content if content is None else content,
                None if title is None else _require_title(title),
                at=next_timestamp(self.clock, article.updated_at),
                limits=self.limits,
            ):
                return None
            return self._save_one(article)

        return self.last_writer_wins(save, article_id)

    def last_writer_wins(self, write: Callable[[], R], article_id: object = None) -> R:
        """Run `write` (which loads what it changes, changes it and saves it) until no other
        process has written one of its articles in between: eventsourcing refuses a version
        already taken (`IntegrityError`), and the next load brings the other write in (the
        cache fast-forwards), so the last writer wins. At most `WRITE_ATTEMPTS` tries, a few
        milliseconds apart, then `WriteContended`: nothing was written."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                return write()
            except IntegrityError:
                if attempt == WRITE_ATTEMPTS:
                    raise WriteContended(WRITE_ATTEMPTS, article_id) from None
                time.sleep(random.uniform(0.001, 0.005) * attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def article_for_person(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> Article:
        """The article, drafts and unpublished ones included; `not_found` if it is not in
        that knowledge base."""
        kb = self.known.require(knowledge_base_id)
        article = self.get_article(article_id)
        if article.knowledge_base_id != kb:
            raise ArticleElsewhere(article_id, kb)
        return article

    def get_article(self, article_id: UUID | str) -> Article:
        """The article aggregate as it stands now, drafts included; `not_found` if none."""
        article = self.log.get(require_id(article_id, "article_id"), Article)
        if article is None:
            raise ArticleUnknown(article_id)
        return article

    def _save_one(self, article: Article) -> int:
        recordings = self.log.save(article)
        return recordings[-1].notification.id


def _require_title(title: str) -> str:
    """A person's title without the spaces around it; the aggregate applies the title rule."""
    return title.strip()


__all__ = ["PeopleCommands"]
