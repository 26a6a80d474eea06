"""Citation audit: what happened to each cited article version since it was given.

A citation `{knowledge_base_id, article_id, updated_at}` (optionally with the `quote` the answer
relied on) is classified by replaying an event source (the live store or an exported log, see
`kbes.log.history.EventSource`), up to an optional as-of instant:

- `current`: the cited version is still the latest one;
- `changed`: saved (or retitled) since; how often, when first, whether the quote survived;
- `gone`: unpublished since (and perhaps republished later);
- `invalid`: no such knowledge base or article, or the article never had a published version
  at that `updated_at` (a garbled or invented citation);
- `not_yet` (only with an as-of instant): a citation of a version written after it, which the
  whole log holds: not given yet at that instant, and no more invalid than it is changed.

"Changed" is not "wrong": the diff and `quote_intact` say whether the part the answer used moved.
A changed or gone citation lists every event since the cited version (`changes`): when, what,
and who wrote it (its author, `kbes.domain.author`; null for an event written before kbes
recorded authors).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import msgspec

from kbes.domain.author import Author
from kbes.domain.clock import format_timestamp, parse_timestamp
from kbes.domain.errors import DiffTooLarge
from kbes.domain.ids import parse_id
from kbes.log.byte_order_mark import without_bom
from kbes.log.history import CONTENT_EVENTS, ArticleHistory, ArticleState, History, unified_diff
from kbes.log.line_diff import DIFF_BUDGET

CLASSES = ("current", "changed", "gone", "invalid")
"""The classes of every audit."""
NOT_YET = "not_yet"
"""The class of a citation given after an audit's as-of instant: only with one."""


class CitationLine(msgspec.Struct, kw_only=True, frozen=True):
    """One line of a citations file; other keys (an answer id, a sequence) are ignored."""

    knowledge_base_id: str
    article_id: str
    updated_at: str
    quote: str | None = None


class CitationsFormatError(ValueError):
    """A citations file line that is not a citation; the message names the line and the fix."""


class AuditChange(msgspec.Struct, kw_only=True, frozen=True):
    """One event since the cited version: when, what, and who wrote it."""

    updated_at: str
    type: str
    author: Author | None
    """Null for an event written before kbes recorded authors."""


class AuditEntry(msgspec.Struct, kw_only=True, frozen=True):
    """The verdict on one citation. Fields that do not apply to its class are null."""

    line: int
    knowledge_base_id: str
    article_id: str
    updated_at: str
    status: str = msgspec.field(name="class")
    reason: str
    quote: str | None = None
    cited_title: str | None = None
    current_title: str | None = None
    current_updated_at: str | None = None
    """The article's latest version (at the as-of instant), whatever its state."""
    saves: int | None = None
    """Saves and retitles since the cited version."""
    first_save_at: str | None = None
    retitled: bool | None = None
    quote_in_cited: bool | None = None
    """Whether the quote is in the cited version at all (false: a misquote)."""
    quote_intact: bool | None = None
    """Whether the quote is still, verbatim, in the published article; null if unpublished."""
    unpublished_at: str | None = None
    republished_at: str | None = None
    now: str | None = None
    """For `gone`: `unpublished`, or republished and then `changed` or `current` (no saves)."""
    diff: str | None = None
    """Unified diff of the cited version against the current one, when it is published and
    the two can be diffed within the diff tool's bound (else the reason says so)."""
    changes: list[AuditChange] | None = None
    """For `changed` and `gone`: every event since the cited version, oldest first, with its
    author."""


class AuditReport(msgspec.Struct, kw_only=True, frozen=True):
    as_of: str | None
    summary: dict[str, int]
    citations: list[AuditEntry]

    def count(self, classes: Iterable[str]) -> int:
        wanted = set(classes)
        return sum(1 for entry in self.citations if entry.status in wanted)


def parse_citations(
    lines: Iterable[bytes | str], name: str = "citations"
) -> list[tuple[int, CitationLine]]:
    """Citations with their line numbers; blank lines are skipped. A line that is not a JSON
    object with string `knowledge_base_id`, `article_id` and `updated_at` raises
    `CitationsFormatError`. Values are not checked here: a citation naming nothing is `invalid`,
    which is an audit finding, not a file error. A UTF-8 byte-order mark starting the file (as
    some Windows editors write) is skipped; a UTF-16 one is named, since the file is not UTF-8."""
    decoder = msgspec.json.Decoder(CitationLine)
    out: list[tuple[int, CitationLine]] = []
    for number, raw in enumerate(lines, start=1):
        if number == 1:
            raw = without_bom(raw, name, CitationsFormatError)
        if not raw.strip():
            continue
        try:
            citation = decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            raise CitationsFormatError(
                f"{name} line {number}: {e}. Each line must be a JSON object "
                '{"knowledge_base_id": "…", "article_id": "…", "updated_at": '
                '"2026-11-30T09:00:00.000000Z"}, optionally with "quote": "…" '
                "(copy the citation a search or read returned)"
            ) from None
        if citation.quote is not None and not citation.quote.strip():
            raise CitationsFormatError(
                f'{name} line {number}: "quote" is empty; give the passage the answer relied '
                "on, or leave the key out"
            )
        out.append((number, citation))
    return out


def audit(
    citations: Sequence[tuple[int, CitationLine]],
    history: History,
    as_of: datetime | None = None,
) -> AuditReport:
    """Classify every citation against `history`, replayed up to `as_of` when given."""
    entries = [classify(number, citation, history, as_of) for number, citation in citations]
    summary = {name: 0 for name in classes(as_of is not None)}
    for entry in entries:
        summary[entry.status] += 1
    summary["total"] = len(entries)
    return AuditReport(
        as_of=None if as_of is None else format_timestamp(as_of),
        summary=summary,
        citations=entries,
    )


def classes(as_of: bool) -> tuple[str, ...]:
    """The classes an audit sorts citations into: `not_yet` too with an as-of instant."""
    return (*CLASSES, NOT_YET) if as_of else CLASSES


def classify(
    line: int, citation: CitationLine, history: History, as_of: datetime | None = None
) -> AuditEntry:
    """The verdict on one citation, from the log up to `as_of` (the whole log if None). A
    citation of a version after `as_of` is `not_yet` if the whole log holds it as a citable
    version (else `invalid`, as without `as_of`)."""
    if as_of is not None:
        try:
            cited_at: datetime | None = parse_timestamp(citation.updated_at)
        except ValueError:
            cited_at = None
        if cited_at is not None and cited_at > as_of:
            whole = classify(line, citation, history)
            if whole.status != "invalid":
                return AuditEntry(
                    line=line,
                    knowledge_base_id=citation.knowledge_base_id,
                    article_id=citation.article_id,
                    updated_at=citation.updated_at,
                    quote=citation.quote,
                    status=NOT_YET,
                    reason=(
                        f"not yet given by {format_timestamp(as_of)}: the cited version was "
                        f"written at {format_timestamp(cited_at)}"
                    ),
                )
    base: dict[str, Any] = {
        "line": line,
        "knowledge_base_id": citation.knowledge_base_id,
        "article_id": citation.article_id,
        "updated_at": citation.updated_at,
        "quote": citation.quote,
    }
    by = "" if as_of is None else f" by {format_timestamp(as_of)}"

    def invalid(reason: str) -> AuditEntry:
        return AuditEntry(**base, status="invalid", reason=reason)

    kb = parse_id(citation.knowledge_base_id)
    if kb is None:
        return invalid(f"knowledge_base_id {citation.knowledge_base_id!r} is not an id")
    if not history.knowledge_base_exists(kb, as_of):
        return invalid(f"knowledge base {kb} never existed{by}")
    article_id = parse_id(citation.article_id)
    if article_id is None:
        return invalid(f"article_id {citation.article_id!r} is not an id")
    article = history.history(article_id)
    if article is None or article.knowledge_base_id != kb:
        return invalid(f"article {article_id} never existed in knowledge base {kb}")
    versions = article.as_of(as_of)
    if not versions:
        return invalid(f"article {article_id} did not exist yet{by}")
    try:
        cited_at = parse_timestamp(citation.updated_at)
    except ValueError as e:
        return invalid(f"updated_at {citation.updated_at!r} is not an RFC 3339 time ({e})")
    cited = next((v for v in versions if v.at == cited_at), None)
    if cited is None:
        return invalid(f"the article never had a version at {citation.updated_at}{by}")
    old = history.state(article, cited)
    if not old.published:
        return invalid(
            f"the article was not published at {cited.updated_at} (that version is a "
            f"{cited.type} event), so no search or read could have cited it"
        )
    new = history.state(article, versions[-1])
    return _verdict(base, history, article, cited.version, old, new)


def _verdict(
    base: dict[str, Any],
    history: History,
    article: ArticleHistory,
    cited_version: int,
    old: ArticleState,
    new: ArticleState,
) -> AuditEntry:
    """The verdict on a citation of a published version `old`, the article now being `new`."""
    since = [v for v in article.versions if cited_version < v.version <= new.version]
    if since:
        base = {**base, "changes": _changes(history, article, cited_version, new.version)}
    saves = [v for v in since if v.type in CONTENT_EVENTS]
    unpublishes = [v for v in since if v.type == "unpublished"]
    quote: str | None = base["quote"]
    facts: dict[str, Any] = {
        "cited_title": old.title,
        "current_title": new.title,
        "current_updated_at": new.updated_at,
        "saves": len(saves),
        "first_save_at": saves[0].updated_at if saves else None,
        "retitled": any(v.type == "retitled" for v in saves),
        "quote_in_cited": None if quote is None else quote in old.content,
        "quote_intact": None if quote is None or not new.published else quote in new.content,
    }
    if unpublishes:
        republishes = [v for v in since if v.type == "published"]
        if new.published:
            now = "changed" if saves else "current"
            diff, too_changed = bounded_diff(old, new)
            entry = AuditEntry(
                **base,
                status="gone",
                reason=(
                    f"unpublished at {unpublishes[0].updated_at}, republished at "
                    f"{republishes[-1].updated_at}; "
                    + (_change_summary(facts, quote) if saves else "text as cited")
                    + too_changed
                ),
                **facts,
                unpublished_at=unpublishes[0].updated_at,
                republished_at=republishes[-1].updated_at,
                now=now,
                diff=diff,
            )
        else:
            entry = AuditEntry(
                **base,
                status="gone",
                reason=f"unpublished at {unpublishes[0].updated_at}",
                **facts,
                unpublished_at=unpublishes[0].updated_at,
                now="unpublished",
            )
        return entry
    if not since:
        reason = "no change since the cited version"
        if quote is not None and not facts["quote_in_cited"]:
            reason += "; the quote is not in the cited version"
        return AuditEntry(**base, status="current", reason=reason, **facts)
    diff, too_changed = bounded_diff(old, new)
    return AuditEntry(
        **base,
        status="changed",
        reason=_change_summary(facts, quote) + too_changed,
        **facts,
        diff=diff,
    )


def _changes(
    history: History, article: ArticleHistory, cited_version: int, last: int
) -> list[AuditChange]:
    """Every event after the cited version up to version `last`, with its author."""
    return [
        AuditChange(updated_at=v.updated_at, type=v.type, author=author)
        for v, author in history.authored(article.article_id, cited_version)
        if v.version <= last
    ]


def bounded_diff(old: ArticleState, new: ArticleState) -> tuple[str | None, str]:
    """The diff of a citation with the diff tool's bound on work (`kbes.log.line_diff`), and
    what the reason adds: two versions built to defeat the matcher took an audit 20 s for one
    citation (issue 35). Past the bound, no diff, and the reason says so."""
    try:
        return unified_diff(old, new, budget=DIFF_BUDGET), ""
    except DiffTooLarge as e:
        return None, (
            f"; too changed to diff ({e.old_lines} lines then, {e.new_lines} now differ in too "
            "many places)"
        )


def _change_summary(facts: dict[str, Any], quote: str | None) -> str:
    saves = facts["saves"]
    parts = [f"{saves} save{'s' if saves != 1 else ''} since, first at {facts['first_save_at']}"]
    if facts["retitled"]:
        parts.append(f"retitled {facts['cited_title']!r} -> {facts['current_title']!r}")
    if quote is not None:
        if not facts["quote_in_cited"]:
            parts.append("the quote is not in the cited version")
        else:
            parts.append("quote intact" if facts["quote_intact"] else "quote changed")
    return "; ".join(parts)
