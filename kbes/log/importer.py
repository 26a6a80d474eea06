"""Importing a folder of Markdown files, one article per file.

An imported article's id is `uuid5(knowledge base, relative path)`, so importing the same
folder again finds each file's article and saves only the files whose title or text changed.
Into a SQLite log the whole import is one transaction: all of it is written, or none. Into a
PostgreSQL log it is written in batches of bounded size, each its own transaction
(`Settings.write_batch_chars`, docs/operations.md says why); an import that fails after a batch
was written says how much it wrote (`ImportPartlyWritten`), and importing the folder again
writes the rest."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from uuid import UUID, uuid5

from kbes.domain.article import Article
from kbes.domain.clock import next_timestamp
from kbes.domain.errors import InvalidArgument, NotFound
from kbes.domain.limits import encodes
from kbes.store.application import KnowledgeBaseStore


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
    skipped: dict[str, str] = field(default_factory=dict)
    """Candidates not read, each with the reason: symbolic links are never followed."""

    def take(self, batch: ImportReport) -> None:
        """Add a written batch's lines to this report."""
        for name in ("added", "saved", "retitled", "published", "unchanged", "left_unpublished"):
            getattr(self, name).extend(getattr(batch, name))
        self.article_ids.update(batch.article_ids)


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


def markdown_files(folder: Path) -> tuple[list[Path], dict[str, str]]:
    """The regular `*.md` files under `folder`, and the links skipped with the reason. No
    symbolic link is followed, to a file or a folder, leading out or staying in: an import
    must never publish what lies outside the folder (`ln -s /etc/hostname docs/host.md`),
    and a link that stays in would only import its target twice."""
    root = os.path.realpath(folder)
    files: list[Path] = []
    skipped: dict[str, str] = {}
    for directory, dirnames, filenames in os.walk(folder):
        here = Path(directory)
        for name in sorted(dirnames):
            if os.path.islink(here / name):
                skipped[(here / name).relative_to(folder).as_posix()] = _link(here / name, root)
        dirnames[:] = [d for d in dirnames if not os.path.islink(here / d)]
        for name in filenames:
            if not name.endswith(".md"):
                continue
            path = here / name
            if os.path.islink(path):
                skipped[path.relative_to(folder).as_posix()] = _link(path, root)
            elif stat.S_ISREG(os.lstat(path).st_mode):
                files.append(path)
    return sorted(files), dict(sorted(skipped.items()))


def _link(path: Path, root: str) -> str:
    """Why a link was skipped; where it leads is not echoed (it may name a secret)."""
    if not os.path.exists(path):
        return "a dangling symbolic link"
    target = os.path.realpath(path)
    if os.path.commonpath([root, target]) == root:
        return "a symbolic link inside the folder (links are never followed)"
    return "a symbolic link to outside the folder (links are never followed)"


class NoMarkdown(InvalidArgument):
    """The folder holds no `*.md` file to import."""

    field = "DIR"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.folder = folder


class NameNotText(InvalidArgument):
    """A file's name (relative to the folder) is not UTF-8, and the article's id is made from
    it."""

    field = "DIR"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class FileNotText(InvalidArgument):
    """A file is not UTF-8 text (`reason` says where)."""

    field = "DIR"

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


class FileBecameLink(InvalidArgument):
    """A file was swapped for a symbolic link after the folder was listed."""

    field = "DIR"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.path = path


def read_text(path: Path) -> str:
    """The file's UTF-8 text, opened without following a link: a file swapped for a symbolic
    link after the folder was listed is refused, not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FileBecameLink(path) from None
        raise
    try:
        with open(fd, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise FileNotText(path, str(e)) from None


def shown(name: str) -> str:
    """A file name as text that can always be printed: bytes that are not UTF-8 (kept by
    Python as surrogates) and control characters appear as backslash escapes."""
    raw = name.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class FileRefused(InvalidArgument):
    """The domain refused what the file `name` would store (`cause`: a title or a length)."""

    def __init__(self, name: str, cause: InvalidArgument) -> None:
        super().__init__(name, cause)
        self.name = name
        self.cause = cause
        self.field = cause.field


@contextmanager
def _naming(key: str) -> Iterator[None]:
    """The domain's refusal of a heading-derived title or an over-long file, naming the file:
    the import stops (it is all or nothing) and the person fixes that one file."""
    try:
        yield
    except InvalidArgument as e:
        raise FileRefused(key, e) from None


def import_id(knowledge_base_id: UUID, relative_path: str) -> UUID:
    return uuid5(knowledge_base_id, relative_path)


def import_folder(
    store: KnowledgeBaseStore, knowledge_base_id: str, folder: Path, *, publish: bool
) -> ImportReport:
    """Import `folder`: all or nothing into SQLite, in bounded batches into PostgreSQL (see
    the module). Another process writing one of its articles first (a second import of the
    folder, a person's save) means the batch is planned again on fresh loads (the store's
    `last_writer_wins`), so it saves only what is still changed."""
    kb = store.require_knowledge_base(knowledge_base_id)
    files, skipped = markdown_files(folder)
    if not files:
        raise NoMarkdown(folder)
    texts: list[tuple[str, str, str]] = []
    for path in files:
        key = path.relative_to(folder).as_posix()
        if not encodes(key):
            raise NameNotText(key)
        title, content = parse_markdown(path, read_text(path))
        texts.append((key, title, content))

    report = ImportReport(skipped=dict(skipped))
    batches = _batches(texts, store.settings.write_batch_chars)
    if len(batches) > 1:
        _check(store, kb, texts)  # a file the domain refuses stops the import before any write
    written = 0
    for batch in batches:
        try:
            store.last_writer_wins(partial(_write, store, kb, batch, publish, report))
        except Exception as e:
            if written:
                raise ImportPartlyWritten(report, written, len(texts)) from e
            raise
        written += len(batch)
    return report


def _write(
    store: KnowledgeBaseStore,
    kb: UUID,
    texts: list[tuple[str, str, str]],
    publish: bool,
    report: ImportReport,
) -> None:
    """Plan `texts` on fresh loads and save what changed, in one transaction; the report takes
    this batch's lines only once it is written (a retry plans it again)."""
    batch = ImportReport()
    changed = _plan(store, kb, texts, publish, batch)
    if changed:
        store.save(*changed)
    report.take(batch)


def _check(store: KnowledgeBaseStore, kb: UUID, texts: list[tuple[str, str, str]]) -> None:
    """Refuse, naming the file, any title or content the domain would refuse."""
    at = next_timestamp(store.clock, None)
    for key, title, content in texts:
        with _naming(key):
            Article.draft(kb, title, content, at=at, id=import_id(kb, key), limits=store.limits)


def _batches(
    texts: list[tuple[str, str, str]], limit: int | None
) -> list[list[tuple[str, str, str]]]:
    """`texts` in order, cut into runs of at most `limit` characters of titles and contents
    (a longer file alone); all in one when `limit` is None."""
    if limit is None:
        return [texts]
    batches: list[list[tuple[str, str, str]]] = [[]]
    size = 0
    for text in texts:
        chars = len(text[1]) + len(text[2])
        if batches[-1] and size + chars > limit:
            batches.append([])
            size = 0
        batches[-1].append(text)
        size += chars
    return batches


class ImportPartlyWritten(Exception):
    """An import into a PostgreSQL log failed after some of its batches were written."""

    def __init__(self, report: ImportReport, written: int, total: int) -> None:
        super().__init__(
            f"the import wrote {written:,} of {total:,} files before it failed; "
            "import the folder again to write the rest"
        )
        self.report = report
        self.written = written
        self.total = total


def _plan(
    store: KnowledgeBaseStore,
    kb: UUID,
    texts: list[tuple[str, str, str]],
    publish: bool,
    report: ImportReport,
) -> list[Article]:
    """The articles the import changes, loaded now, with their new events pending."""
    changed: list[Article] = []
    for key, title, content in texts:
        article_id = import_id(kb, key)
        report.article_ids[key] = str(article_id)
        try:
            article = store.get_article(article_id)
        except NotFound:
            with _naming(key):
                article = Article.draft(
                    kb,
                    title,
                    content,
                    at=next_timestamp(store.clock, None),
                    id=article_id,
                    limits=store.limits,
                )
            report.added.append(key)
        else:
            old_title = article.title
            with _naming(key):
                saved = article.save(
                    content,
                    title,
                    at=next_timestamp(store.clock, article.updated_at),
                    limits=store.limits,
                )
            if saved:
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
    return changed
