"""Importing a folder of Markdown files, one article per file.

An imported article's id is `uuid5(knowledge base, relative path)`, so importing the same
folder again finds each file's article and saves only the files whose title or text changed.
The whole import is one transaction: all of it is written, or none."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID, uuid5

from eventsourcing.application import AggregateNotFoundError

from kbes.application import KnowledgeBaseStore
from kbes.article import Article
from kbes.clock import next_timestamp
from kbes.errors import InvalidArgument


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    retitled: list[str] = field(default_factory=list)
    """Those of `saved` whose heading changed: their one event is a `retitled`."""
    published: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    left_unpublished: list[str] = field(default_factory=list)
    article_ids: dict[str, str] = field(default_factory=dict)


def parse_markdown(path: Path, text: str) -> tuple[str, str]:
    """Title from the first `# ` heading (that line is removed from the content), else the
    file name without its extension."""
    heading, content = split_heading(text)
    return heading or path.stem, content


def split_heading(text: str) -> tuple[str | None, str]:
    """The first `# ` heading, if any, and the text without that line and without leading or
    trailing blank lines (or a UTF-8 byte-order mark, which some editors write first)."""
    lines = text.removeprefix("\ufeff").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# ") and line[2:].strip():
            return line[2:].strip(), "\n".join(lines[:i] + lines[i + 1 :]).strip("\n")
    return None, text.removeprefix("\ufeff").strip("\n")


def import_id(knowledge_base_id: UUID, relative_path: str) -> UUID:
    return uuid5(knowledge_base_id, relative_path)


def import_folder(
    store: KnowledgeBaseStore, knowledge_base_id: str, folder: Path, *, publish: bool
) -> ImportReport:
    kb = store.require_knowledge_base(knowledge_base_id)
    files = sorted(p for p in folder.rglob("*.md") if p.is_file())
    if not files:
        raise InvalidArgument(f"no Markdown (*.md) files in {folder}", field="DIR")
    report = ImportReport()
    changed: list[Article] = []
    for path in files:
        key = path.relative_to(folder).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise InvalidArgument(f"{path} is not UTF-8 text: {e}", field="DIR") from None
        title, content = parse_markdown(path, text)
        article_id = import_id(kb, key)
        report.article_ids[key] = str(article_id)
        try:
            article: Article = store.repository.get(article_id)
        except AggregateNotFoundError:
            article = Article.draft(
                kb, title, content, at=next_timestamp(store.clock, None), id=article_id
            )
            report.added.append(key)
        else:
            old_title = article.title
            if article.save(content, title, at=next_timestamp(store.clock, article.updated_at)):
                if old_title != title:
                    report.retitled.append(key)
                report.saved.append(key)
        if publish and not article.published:
            if article.ever_published:
                report.left_unpublished.append(key)
            else:
                article.publish(at=next_timestamp(store.clock, article.updated_at))
                report.published.append(key)
        if article.pending_events:
            changed.append(article)
        else:
            report.unchanged.append(key)
    if changed:
        store.save(*changed)
    return report
