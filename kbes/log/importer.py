"""Importing a folder of Markdown files, one article per file, and keeping a knowledge base in
step with the folder (`sync`).

Which files are read is `kbes.log.folder_files`'s rule, how each is read `kbes.log.markdown_file`'s.
A file that cannot be imported (not UTF-8, a name that is not UTF-8, front matter that is not
YAML, a title or a length the domain refuses) is reported in `ImportReport.refused` with the
fact, and the rest is imported; an empty file is skipped, not published.

Which article a file is: the folder's record in the log (`kbes.domain.folder_source`) maps each
path read to its article, so the same folder imported again finds each file's article and saves
only the files whose title or text changed. A path not yet in the record gets, in order: the
article its front matter's `id:` names; the article with the id `uuid5(knowledge base, path)`
(how every import named a new article before the record existed, so older imports are found);
with `sync`, the article of a file that went away and had the same content (a rename or a move);
else a new article. With `sync`, an article whose file went away is unpublished (once; an
article a person unpublished is left as it is), and only the articles in the record are ever
touched.

Into a SQLite log the whole import is one transaction: all of it is written, or none. Into a
PostgreSQL log it is written in batches of bounded size, each its own transaction
(`Settings.write_batch_chars`, docs/operations.md says why), the folder's record with the last;
an import that fails after a batch was written says how much it wrote (`ImportPartlyWritten`),
and importing the folder again writes the rest."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path
from uuid import NAMESPACE_URL, UUID, uuid4, uuid5

from kbes.domain.article import Article
from kbes.domain.author import Author, person_running
from kbes.domain.clock import next_timestamp
from kbes.domain.errors import InvalidArgument, NotFound
from kbes.domain.folder_source import FolderSource
from kbes.domain.limits import Limits, content_problem, encodes, title_problem
from kbes.log.folder_files import markdown_files
from kbes.log.markdown_file import read_markdown
from kbes.store.application import KnowledgeBaseStore

PIN_NAMESPACE = uuid5(NAMESPACE_URL, "https://kbes.invalid/pinned-article")

LINES = (
    "added",
    "saved",
    "retitled",
    "moved",
    "published",
    "republished",
    "unpublished",
    "unchanged",
    "left_unpublished",
)


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    retitled: list[str] = field(default_factory=list)
    """Those of `saved` whose heading changed: their one event is a `retitled`."""
    moved: list[str] = field(default_factory=list)
    """Files that keep the article of a file that went away (`moved_from` says which)."""
    published: list[str] = field(default_factory=list)
    republished: list[str] = field(default_factory=list)
    """Those of `published` whose file came back after a sync had unpublished its article."""
    unpublished: list[str] = field(default_factory=list)
    """With `sync`: paths whose file went away, their articles unpublished."""
    unchanged: list[str] = field(default_factory=list)
    left_unpublished: list[str] = field(default_factory=list)
    moved_from: dict[str, str] = field(default_factory=dict)
    article_ids: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Candidates not read or not published, each with the reason: symbolic links (never
    followed) and empty files."""
    refused: dict[str, InvalidArgument] = field(default_factory=dict)
    """Files that could not be imported, each with the fact that says why."""

    def take(self, batch: ImportReport) -> None:
        """Add a written batch's lines to this report."""
        for name in LINES:
            getattr(self, name).extend(getattr(batch, name))
        self.moved_from.update(batch.moved_from)
        self.article_ids.update(batch.article_ids)


def split_heading(text: str) -> tuple[str | None, str]:
    """The first `# ` heading, if any, and the text without that line and without leading or
    trailing blank lines (or a UTF-8 byte-order mark, which some editors write first): how
    `kbes article add/save --file` read a file."""
    lines = text.removeprefix("\ufeff").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("# ") and line[2:].strip():
            return line[2:].strip(), "\n".join(lines[:i] + lines[i + 1 :]).strip("\n")
    return None, text.removeprefix("\ufeff").strip("\n")


class NoMarkdown(InvalidArgument):
    """The folder holds no Markdown file to import."""

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


class PinTaken(InvalidArgument):
    """Two files' front matter name the same `id`."""

    field = "front_matter"

    def __init__(self, pin: str, other: str) -> None:
        super().__init__(pin, other)
        self.pin = pin
        self.other = other


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


def import_id(knowledge_base_id: UUID, relative_path: str) -> UUID:
    return uuid5(knowledge_base_id, relative_path)


def pinned_id(knowledge_base_id: UUID, pin: str) -> UUID:
    return uuid5(PIN_NAMESPACE, f"{knowledge_base_id.hex}:{pin}")


@dataclass(frozen=True)
class FileText:
    """One file read: its path in the folder, the article's title and content, its pin."""

    key: str
    title: str
    content: str
    pin: str | None


@dataclass
class FolderText:
    """What an import read from the folder."""

    files: list[FileText] = field(default_factory=list)
    present: set[str] = field(default_factory=set)
    """Paths of files still there, those refused included: their articles are not gone."""
    skipped: dict[str, str] = field(default_factory=dict)
    refused: dict[str, InvalidArgument] = field(default_factory=dict)
    candidates: int = 0


ReadCache = dict[str, tuple[tuple[int, int, int], FileText | str | InvalidArgument]]
"""A file's last reading by path, with the (inode, size, mtime) it was read at: a watcher
reads again only the files that changed."""


def read_folder(folder: Path, limits: Limits, cache: ReadCache | None = None) -> FolderText:
    """Every Markdown file of `folder` read, refused with the reason, or skipped."""
    listing = markdown_files(folder)
    read = FolderText(skipped=dict(listing.links), candidates=len(listing.files))
    for path in listing.files:
        key = path.relative_to(folder).as_posix()
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # gone since the folder was listed: as if never there
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        seen = cache.get(key) if cache is not None else None
        if seen is not None and seen[0] == stamp:
            outcome = seen[1]
        else:
            try:
                outcome = _read_one(path, key, limits)
            except FileNotFoundError:
                continue
            if cache is not None:
                cache[key] = (stamp, outcome)
        if isinstance(outcome, FileText):
            read.files.append(outcome)
            read.present.add(key)
        elif isinstance(outcome, str):
            read.skipped[key] = outcome
        else:
            read.refused[key] = outcome
            read.present.add(key)
    read.skipped = dict(sorted(read.skipped.items()))
    return read


EMPTY = "empty: no text besides front matter, so nothing to publish"


def _read_one(path: Path, key: str, limits: Limits) -> FileText | str | InvalidArgument:
    """The file as an article, the reason it is skipped, or the fact that refuses it."""
    if not encodes(key):
        return NameNotText(key)
    try:
        parsed = read_markdown(read_text(path), _stem(path.name))
    except InvalidArgument as e:
        return e if isinstance(e, FileNotText | FileBecameLink) else FileRefused(key, e)
    if parsed.empty:
        return EMPTY
    problem = title_problem(parsed.title, limits) or content_problem(parsed.content, limits)
    if problem is not None:
        return FileRefused(key, problem)
    return FileText(key, parsed.title, parsed.content, parsed.pinned_id)


def _stem(name: str) -> str:
    lower = name.lower()
    for suffix in (".markdown", ".md"):
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def source_name(folder: Path) -> str:
    """The default name of a folder's record: the folder's own name, so a clone of the same
    docs elsewhere (another checkout, CI) is the same source."""
    return Path(os.path.realpath(folder)).name or "/"


def import_folder(
    store: KnowledgeBaseStore,
    knowledge_base_id: str,
    folder: Path,
    *,
    publish: bool,
    sync: bool = False,
    dry_run: bool = False,
    source: str | None = None,
    cache: ReadCache | None = None,
    by: Author | None = None,
) -> ImportReport:
    """Import `folder` (see the module): all or nothing into SQLite, in bounded batches into
    PostgreSQL. Another process writing one of its articles or its record first (a second
    import, a person's save) means the import is planned again on fresh loads (the store's
    `last_writer_wins`), so it saves only what is still changed. `dry_run` plans and reports
    without writing anything. `by`: the person running the import, every event's author
    (default: `KBES_AUTHOR`, else the operating-system user)."""
    kb = store.require_knowledge_base(knowledge_base_id)
    by = by or person_running()
    read = read_folder(folder, store.limits, cache)
    if not read.candidates and not sync:
        raise NoMarkdown(folder)
    name = source or source_name(folder)
    report = ImportReport(skipped=dict(read.skipped), refused=dict(read.refused))
    store.last_writer_wins(
        lambda: _write(
            store, kb, name, read, report, publish=publish, sync=sync, dry_run=dry_run, by=by
        )
    )
    return report


@dataclass
class Change:
    """One article the import changes, with the report lines its write makes true."""

    article: Article
    lines: list[tuple[str, str]]
    moved_from: str | None = None


def _write(
    store: KnowledgeBaseStore,
    kb: UUID,
    name: str,
    read: FolderText,
    report: ImportReport,
    *,
    publish: bool,
    sync: bool,
    dry_run: bool,
    by: Author,
) -> None:
    """Plan on fresh loads and save what changed; the report takes each batch's lines only
    once it is written (a retry plans again)."""
    plan = ImportReport()
    planner = _Planner(store, kb, name, read, plan, publish=publish, sync=sync, by=by)
    changes, record = planner.plan()
    report.refused.update(plan.refused)
    if dry_run:
        report.take(plan)
        report.take(_lines(changes))
        return
    batches = _batches(changes, store.settings.write_batch_chars)
    written = 0
    for i, batch in enumerate(batches):
        objs: list[object] = [c.article for c in batch]
        if i == len(batches) - 1 and record.pending_events:
            objs.append(record)
        if objs:
            try:
                store.save(*objs)
            except Exception as e:
                if written:
                    raise ImportPartlyWritten(report, written, len(changes)) from e
                raise
        if i == 0:
            report.take(plan)
        report.take(_lines(batch))
        written += len(batch)


def _lines(changes: list[Change]) -> ImportReport:
    """The report lines of `changes`, once written."""
    done = ImportReport()
    for change in changes:
        for line, key in change.lines:
            getattr(done, line).append(key)
        if change.moved_from is not None:
            done.moved_from[change.lines[0][1]] = change.moved_from
    return done


def _batches(changes: list[Change], limit: int | None) -> list[list[Change]]:
    """`changes` in order, cut into runs of at most `limit` characters of titles and contents
    (a longer one alone); all in one when `limit` is None."""
    if limit is None:
        return [changes]
    batches: list[list[Change]] = [[]]
    size = 0
    for change in changes:
        chars = len(change.article.title) + len(change.article.content)
        if batches[-1] and size + chars > limit:
            batches.append([])
            size = 0
        batches[-1].append(change)
        size += chars
    return batches


def load_source(store: KnowledgeBaseStore, kb: UUID, name: str) -> FolderSource | None:
    """The folder's record as the log holds it now, or None before its first import."""
    return store.folder_source(kb, name)


class _Planner:
    """Which article each file is, and the events that bring the articles in step."""

    def __init__(
        self,
        store: KnowledgeBaseStore,
        kb: UUID,
        name: str,
        read: FolderText,
        report: ImportReport,
        *,
        publish: bool,
        sync: bool,
        by: Author,
    ) -> None:
        self.store, self.kb, self.read, self.report = store, kb, read, report
        self.publish, self.sync, self.by = publish, sync, by
        self.record = load_source(store, kb, name) or FolderSource.start(
            kb, name, at=store.clock.now(), by=by
        )
        self.tracked = dict(self.record.files)
        self.owner = {aid: path for path, aid in self.tracked.items()}
        self.gone = {p: a for p, a in self.tracked.items() if p not in read.present}
        self.claimed: dict[UUID, str] = {}
        self.changes: list[Change] = []

    def plan(self) -> tuple[list[Change], FolderSource]:
        mapped: dict[str, UUID] = {}
        revived: list[UUID] = []
        retired: list[UUID] = []
        pins: dict[str, str] = {}
        by_content = self._gone_by_content() if self.sync else {}
        for text in self.read.files:
            if text.pin is not None and text.pin in pins:
                self.report.refused[text.key] = FileRefused(
                    text.key, PinTaken(text.pin, pins[text.pin])
                )
                continue
            if text.pin is not None:
                pins[text.pin] = text.key
            aid, moved_from = self._article_for(text, by_content)
            self.claimed[aid] = text.key
            if self.tracked.get(text.key) != aid:
                mapped[text.key] = aid
            if self._bring(text, aid, moved_from):
                revived.append(aid)
        if self.sync:
            dropped = sorted(self.gone)
            for path in dropped:
                if self.gone[path] not in self.claimed and self._retire(path, self.gone[path]):
                    retired.append(self.gone[path])
        else:
            dropped = sorted(p for p, aid in self.gone.items() if aid in self.claimed)
        self.record.map(
            mapped, dropped, retired, revived, at=next_timestamp(self.store.clock, None), by=self.by
        )
        return self.changes, self.record

    def _gone_by_content(self) -> dict[str, list[UUID]]:
        found: dict[str, list[UUID]] = {}
        for aid in self.gone.values():
            article = self._load(aid)
            if article is not None:
                found.setdefault(article.content, []).append(aid)
        return found

    def _article_for(
        self, text: FileText, by_content: dict[str, list[UUID]]
    ) -> tuple[UUID, str | None]:
        """The file's article id, and the path it moved from if it is a gone file's."""
        if text.pin is not None:
            aid = pinned_id(self.kb, text.pin)
            before = self.owner.get(aid)
            if before is not None or self._load(aid) is not None:
                return aid, before if before != text.key else None
        if text.key in self.tracked:
            return self.tracked[text.key], None  # an `id:` added later keeps the article
        derived = import_id(self.kb, text.key)
        owner = self.owner.get(derived)
        if derived not in self.claimed:
            if self.sync and owner in self.gone:
                return derived, owner  # moved back to the path it was first imported from
            if owner is None and self._load(derived) is not None:
                return derived, None  # imported before the folder had a record
        for aid in by_content.get(text.content, []):
            if aid not in self.claimed:
                return aid, self.owner[aid]
        if text.pin is not None:
            return pinned_id(self.kb, text.pin), None
        if derived not in self.claimed and owner is None:
            return derived, None
        return uuid4(), None

    def _load(self, aid: UUID) -> Article | None:
        try:
            article = self.store.get_article(aid)
        except NotFound:
            return None
        return article if article.knowledge_base_id == self.kb else None

    def _bring(self, text: FileText, aid: UUID, moved_from: str | None) -> bool:
        """Plan the file's article; True if it republishes one this source had retired."""
        key, store, report = text.key, self.store, self.report
        report.article_ids[key] = str(aid)
        lines: list[tuple[str, str]] = []
        if moved_from is not None:
            lines.append(("moved", key))
        article = self._load(aid)
        if article is None:
            article = Article.draft(
                self.kb,
                text.title,
                text.content,
                at=next_timestamp(store.clock, None),
                id=aid,
                limits=store.limits,
                by=self.by,
            )
            lines.append(("added", key))
        else:
            old_title = article.title
            if article.save(
                text.content,
                text.title,
                at=next_timestamp(store.clock, article.updated_at),
                limits=store.limits,
                by=self.by,
            ):
                if old_title != text.title:
                    lines.append(("retitled", key))
                lines.append(("saved", key))
        revived = False
        if self.publish and not article.published:
            if article.ever_published and aid not in self.record.retired:
                lines.append(("left_unpublished", key))
            else:
                article.publish(at=next_timestamp(store.clock, article.updated_at), by=self.by)
                lines.append(("published", key))
                revived = aid in self.record.retired
                if revived:
                    lines.append(("republished", key))
        if article.pending_events:
            self.changes.append(Change(article, lines, moved_from))
        else:
            lines.append(("unchanged", key))
            for line, k in lines:
                getattr(report, line).append(k)
            if moved_from is not None:
                report.moved_from[key] = moved_from
        return revived

    def _retire(self, path: str, aid: UUID) -> bool:
        """Unpublish the article of a file that went away; True if it was published."""
        self.report.article_ids[path] = str(aid)
        article = self._load(aid)
        if article is None or not article.published:
            return False
        article.unpublish(at=next_timestamp(self.store.clock, article.updated_at), by=self.by)
        self.changes.append(Change(article, [("unpublished", path)]))
        return True


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
