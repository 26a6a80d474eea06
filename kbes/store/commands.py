"""People's commands: knowledge bases and articles created, published, unpublished and saved by
a person, last writer wins unless the person names the version they read
(`expected_version`): then the write is refused with the current version if the article moved
(`ArticleChanged`, the agents' rule, kbes.store.edit). Each event records its author: the
person the caller names (`by`), else the one running the process (`person_running`)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TypeVar
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from kbes.domain.article import Article
from kbes.domain.author import Author, person_running
from kbes.domain.clock import Clock, format_timestamp, next_timestamp
from kbes.domain.errors import (
    ArticleChanged,
    ArticleElsewhere,
    ArticleUnknown,
    NothingToSave,
    WriteContended,
)
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

    def create_knowledge_base(self, name: str, *, by: Author | None = None) -> UUID:
        """A new knowledge base; its name follows the title rule (`BlankName`, `TooLong`,
        `TitleCharacter` naming `name` otherwise). Names need not be unique: ids tell
        knowledge bases apart (`knowledge_bases_named` finds those a name already has)."""
        kb = KnowledgeBase.create(name, at=self.clock.now(), by=by or person_running())
        self.log.save(kb)
        self.known.add(kb.id)
        return kb.id

    def add_article(
        self,
        knowledge_base_id: UUID | str,
        title: str,
        content: str,
        *,
        publish: bool = False,
        by: Author | None = None,
    ) -> UUID:
        """Draft an article (and publish it at once if asked); returns its id."""
        kb = self.known.require(knowledge_base_id)
        title = _require_title(title)
        by = by or person_running()
        article = Article.draft(
            kb, title, content, at=next_timestamp(self.clock, None), limits=self.limits, by=by
        )
        if publish:
            article.publish(at=next_timestamp(self.clock, article.updated_at), by=by)
        self.log.save(article)
        return article.id

    def add_articles(
        self,
        knowledge_base_id: UUID | str,
        drafts: Iterable[tuple[str, str]],
        *,
        publish: bool,
        by: Author | None = None,
    ) -> list[UUID]:
        """Draft many articles in one transaction (imports and simulations)."""
        kb = self.known.require(knowledge_base_id)
        by = by or person_running()
        batch: list[Article] = []
        for title, content in drafts:
            article = Article.draft(
                kb,
                _require_title(title),
                content,
                at=next_timestamp(self.clock, None),
                limits=self.limits,
                by=by,
            )
            if publish:
                article.publish(at=next_timestamp(self.clock, article.updated_at), by=by)
            batch.append(article)
        self.log.save(*batch)
        return [article.id for article in batch]

    def publish_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        by: Author | None = None,
        expected_version: datetime | None = None,
    ) -> int:
        """Publish the article; with `expected_version`, only if it is still at that version
        (`ArticleChanged` otherwise, nothing written)."""
        by = by or person_running()

        def publish() -> int:
            article = self._article_at(knowledge_base_id, article_id, expected_version)
            article.publish(at=next_timestamp(self.clock, article.updated_at), by=by)
            return self._save_one(article)

        return self.last_writer_wins(publish, article_id)

    def unpublish_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        by: Author | None = None,
        expected_version: datetime | None = None,
    ) -> int:
        """Unpublish the article; `expected_version` as for `publish_article`."""
        by = by or person_running()

        def unpublish() -> int:
            article = self._article_at(knowledge_base_id, article_id, expected_version)
            article.unpublish(at=next_timestamp(self.clock, article.updated_at), by=by)
            return self._save_one(article)

        return self.last_writer_wins(unpublish, article_id)

    def save_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        content: str | None = None,
        title: str | None = None,
        by: Author | None = None,
        expected_version: datetime | None = None,
    ) -> int | None:
        """A person's save, last writer wins: one `Saved` or `Retitled` event, and its
        sequence; None when the save would change nothing (the article decides), so nothing
        was written. Another process's write of the article first means a fresh load and
        another try (`last_writer_wins`). With `expected_version` (the version the person
        read), a compare-and-swap instead: refused with `ArticleChanged` and the current
        version when the article is no longer at it, nothing written, as an agent's edit is."""
        by = by or person_running()

        def save() -> int | None:
            article = self._article_at(knowledge_base_id, article_id, expected_version)
            if content is None and title is None:
                raise NothingToSave()
            if not article.save(
                article.content if content is None else content,
                None if title is None else _require_title(title),
                at=next_timestamp(self.clock, article.updated_at),
                limits=self.limits,
                by=by,
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

    def _article_at(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        expected_version: datetime | None,
    ) -> Article:
        """The article for a person's write, refused (`ArticleChanged`) when the person named
        the version they read and the article is no longer at it."""
        article = self.article_for_person(knowledge_base_id, article_id)
        if expected_version is not None and article.updated_at != expected_version:
            raise ArticleChanged(
                article.id,
                format_timestamp(article.updated_at),
                format_timestamp(expected_version),
            )
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
