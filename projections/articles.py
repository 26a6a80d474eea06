"""Current article state and version history, folded from the log one event at a time.

`status` is `draft` (never published), `published`, or `unpublished`. Only published rows are
in the search index; the index shares the article row's `seq` as its rowid."""

from __future__ import annotations

from typing import Any

from kbes.projections import search

from kbes.article import EVENT_TYPES, Article
from kbes.clock import format_timestamp
from kbes.knowledge_base import KnowledgeBase

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS view_knowledge_bases ("
    "knowledge_base_id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL"
    ") WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS view_articles ("
    "seq INTEGER PRIMARY KEY, "
    "article_id TEXT NOT NULL UNIQUE, "
    "knowledge_base_id TEXT NOT NULL, "
    "title TEXT NOT NULL, "
    "content TEXT NOT NULL, "
    "status TEXT NOT NULL, "
    "version INTEGER NOT NULL, "
    "updated_at TEXT NOT NULL, "
    "created_at TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS view_articles_by_kb ON view_articles (knowledge_base_id, title)",
    "CREATE TABLE IF NOT EXISTS view_article_versions ("
    "article_id TEXT NOT NULL, "
    "version INTEGER NOT NULL, "
    "updated_at TEXT NOT NULL, "
    "type TEXT NOT NULL, "
    "notification_id INTEGER NOT NULL, "
    "PRIMARY KEY (article_id, version)) WITHOUT ROWID",
    "CREATE UNIQUE INDEX IF NOT EXISTS view_article_versions_by_time "
    "ON view_article_versions (article_id, updated_at)",
)

TABLES = ("view_knowledge_bases", "view_articles", "view_article_versions", "search_index")


def apply(c: Any, event: Any, notification_id: int) -> None:
    """Fold one domain event into the views (inside the caller's transaction)."""
    if isinstance(event, Article.Event):
        _apply_article_event(c, event, notification_id)
    elif isinstance(event, KnowledgeBase.Created):
        c.execute(
            "INSERT INTO view_knowledge_bases VALUES (?, ?, ?)",
            (str(event.originator_id), event.name, format_timestamp(event.timestamp)),
        )


def _apply_article_event(c: Any, event: Any, notification_id: int) -> None:
    article_id = str(event.originator_id)
    updated_at = format_timestamp(event.timestamp)
    c.execute(
        "INSERT INTO view_article_versions VALUES (?, ?, ?, ?, ?)",
        (
            article_id,
            event.originator_version,
            updated_at,
            EVENT_TYPES[type(event)],
            notification_id,
        ),
    )
    if isinstance(event, Article.Drafted):
        c.execute(
            "INSERT INTO view_articles (article_id, knowledge_base_id, title, content, status, "
            "version, updated_at, created_at) VALUES (?, ?, ?, ?, 'draft', ?, ?, ?)",
            (
                article_id,
                str(event.knowledge_base_id),
                event.title,
                event.content,
                event.originator_version,
                updated_at,
                updated_at,
            ),
        )
        return
    c.execute(
        "SELECT seq, title, content, status FROM view_articles WHERE article_id = ?",
        (article_id,),
    )
    seq, title, content, status = c.fetchone()
    if isinstance(event, Article.Published):
        status = "published"
        search.index(c, seq, title, content)
    elif isinstance(event, Article.Unpublished):
        status = "unpublished"
        search.unindex(c, seq)
    else:
        content = event.content
        if isinstance(event, Article.Retitled):
            title = event.title
        if status == "published":
            search.reindex(c, seq, title, content)
    c.execute(
        "UPDATE view_articles SET title = ?, content = ?, status = ?, version = ?, "
        "updated_at = ? WHERE seq = ?",
        (title, content, status, event.originator_version, updated_at, seq),
    )
