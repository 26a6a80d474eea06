"""What a person reads before approving a write: a message they can trust.

The agent writes the arguments, so nothing in them may pass for the prompt's own text:

- every value is escaped: a backslash, a control or format character (a newline, a carriage
  return, U+202E) shows as a backslash escape, so no value can start a line of its own or turn
  text around; a run of spaces shows as its count, so padding cannot push text out of sight;
- an edit is shown as what it changes: the article's current title beside the new one, both
  lengths, whether the cited version is still the current one, and the changed lines of a
  unified diff of the content, each on its own indented line;
- the message is bounded, and says so: lines past the budget are counted, with their total
  length, never cut silently. A line longer than what remains is shown up to the budget and
  followed by how many of its characters are not shown.
"""

from __future__ import annotations

import re
import unicodedata
from uuid import UUID

import msgspec
from msgspec import UNSET

from kbes.domain.clock import format_timestamp
from kbes.domain.errors import (
    ArticleNotFound,
    ArticleUnpublished,
    DiffTooLarge,
    KnowledgeBaseNotFound,
)
from kbes.log.line_diff import bounded_unified_diff
from kbes.store.application import KnowledgeBaseStore
from kbes.store.results import CurrentArticle
from kbes.tools.tool import Admitted
from kbes.tools.wire import EditRequest

BUDGET = 3000
"""Most characters of values and changed lines one prompt shows; the rest is counted."""

_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "⟨": "\\u27e8"}
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"})
_SPACES = re.compile(r" {4,}")


def escape(text: str) -> str:
    """`text` on one line, every character a person could not see or that changes the layout
    escaped, and runs of four or more spaces shown as `⟨N spaces⟩`."""
    out: list[str] = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif unicodedata.category(char) in _HIDDEN:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return _SPACES.sub(lambda m: f"⟨{len(m.group())} spaces⟩", "".join(out))


def quoted(text: str) -> str:
    return f"“{escape(text)}” ({count(len(text), 'character')})"


def count(number: int, noun: str) -> str:
    """`1 line`, `2 lines`: a person reads the prompt."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


class Lines:
    """The prompt's lines under a budget: what does not fit is counted, not dropped unseen."""

    def __init__(self, budget: int = BUDGET) -> None:
        self.lines: list[str] = []
        self.left = budget
        self.hidden_lines = 0
        self.hidden_chars = 0

    @property
    def full(self) -> bool:
        """Whether every further line is only counted (so need not be escaped first)."""
        return bool(self.hidden_lines) or self.left <= 0

    def add(self, line: str, *, counted: int | None = None) -> None:
        """Add `line` (already escaped); `counted` is its length before escaping."""
        size = len(line) if counted is None else counted
        if self.full:
            self.hidden_lines += 1
            self.hidden_chars += size
            return
        if len(line) > self.left:
            shown = line[: self.left]
            more = count(len(line) - self.left, "more character")
            self.lines.append(f"{shown}… [this line goes on: {more} (escaped) not shown]")
            self.left = 0
            return
        self.lines.append(line)
        self.left -= len(line)

    def text(self) -> str:
        lines = list(self.lines)
        if self.hidden_lines:
            lines.append(
                f"[{count(self.hidden_lines, 'more line')} "
                f"({count(self.hidden_chars, 'character')}) "
                f"{'is' if self.hidden_lines == 1 else 'are'} not shown here; decline if you "
                "need to see them]"
            )
        return "\n".join(lines)


def approval_message(call: Admitted, store: KnowledgeBaseStore) -> str:
    """The prompt for approving `call` (already admitted by the grants). An edit shows the
    article it would replace, as the log has it now."""
    tool, request = call.tool, call.request
    head = f"An agent asks to run {tool.name} ({tool.title}). Accept to let kbes write it."
    if isinstance(request, EditRequest):
        current = current_article(store, call.knowledge_base, request)
        return f"{head}\n{edit_summary(request, current)}"
    lines = Lines()
    for key, value in msgspec.to_builtins(request).items():
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        lines.add(f"{key}: {quoted(text)}", counted=len(text))
    return f"{head}\n{lines.text()}"


def current_article(
    store: KnowledgeBaseStore, kb: UUID, request: EditRequest
) -> CurrentArticle | str:
    """The article as it stands, or why there is none to show (the edit will then be refused)."""
    try:
        return store.article_to_edit(kb, request.article_id)
    except (ArticleNotFound, KnowledgeBaseNotFound):
        return "there is no published article with this id, so kbes will refuse the edit"
    except ArticleUnpublished as e:
        return f"the article was unpublished at {e.unpublished_at}, so kbes will refuse the edit"


def edit_summary(request: EditRequest, current: CurrentArticle | str) -> str:
    lines = Lines()
    lines.add(f"Knowledge base: {escape(request.knowledge_base_id)}")
    lines.add(f"Article: {escape(request.article_id)}")
    new_title = None if request.title is UNSET else request.title
    if isinstance(current, str):
        lines.add(f"Now: {current}.")
        if new_title is not None:
            lines.add(f"New title: {quoted(new_title)}", counted=len(new_title))
        lines.add(f"New content: {count(len(request.content), 'character')}.")
        lines.add(f"Idempotency key: {quoted(request.idempotency_key)}")
        return lines.text()
    if new_title is None or new_title == current.title:
        lines.add(f"Title (unchanged): {quoted(current.title)}", counted=len(current.title))
    else:
        lines.add(f"Title now: {quoted(current.title)}", counted=len(current.title))
        lines.add(f"Title after: {quoted(new_title)}", counted=len(new_title))
    cited = format_timestamp(request.expected_version)
    if cited == current.updated_at:
        lines.add(f"Cited version: {cited} (the current one).")
    else:
        lines.add(
            f"Cited version: {cited}, but the article is at {current.updated_at} now, so kbes "
            "will refuse the edit as a version conflict."
        )
    lines.add(f"Idempotency key: {quoted(request.idempotency_key)}")
    old, new = current.content.split("\n"), request.content.split("\n")
    lines.add(
        f"Content: {count(len(current.content), 'character')} in {count(len(old), 'line')} "
        f"now, {count(len(request.content), 'character')} in {count(len(new), 'line')} after."
    )
    if current.content == request.content:
        lines.add("Content unchanged.")
        return lines.text()
    try:
        changed = bounded_unified_diff(old, new, n=0)
    except DiffTooLarge:
        lines.add(
            "Changed lines: too many, in too many places, for kbes to list them here; "
            "decline if you need to see them."
        )
        return lines.text()
    lines.add("Changed lines (- now, + after; \\t, \\u202e and the like are hidden characters):")
    # The first two lines name the files; a hunk's `@@` line says where the change is.
    for line in changed[2:]:
        if line.startswith("@@"):
            lines.add(f"    {line}")
        elif lines.full:  # counted only: no need to escape what is not shown
            lines.add("", counted=len(line) - 1)
        else:
            lines.add(f"    {line[0]} {escape(line[1:])}", counted=len(line) - 1)
    return lines.text()
