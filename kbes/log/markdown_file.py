"""One Markdown file read as an article: its title, its content and the identity its front
matter pins, parsed by markdown-it-py (CommonMark) rather than matched line by line, so a `# `
line inside a fenced code block is code, not a title.

- YAML front matter (a `---` line first, closed by `---` or `...`, read by PyYAML's safe
  loader) is not content. Two keys are read: `title`, the article's title, and `id`, text that
  pins the article's identity so the file keeps its article wherever it moves. Every other key
  (`tags`, `date`, ...) is ignored.
- The title is front matter's `title:`, else the first level-1 heading outside code and
  outside block quotes and lists (`# Title`, or `Title` over a `===` line), else the file
  name without its extension. A heading's title is its text: emphasis, code spans and links
  reduced to their text, images (such as badges) left out unless the heading has nothing but
  images (then their alternative text). The heading's lines are left out of the content.
- The content is the rest, without leading and trailing blank lines; a byte-order mark is
  dropped and line endings become `\\n`. A file with no text besides its front matter is
  empty: there is nothing to publish."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from kbes.domain.errors import InvalidArgument

_PARSER = MarkdownIt("commonmark").use(front_matter_plugin)


@dataclass(frozen=True)
class MarkdownFile:
    title: str
    content: str
    pinned_id: str | None
    """Front matter's `id`, if any."""
    empty: bool
    """No text besides front matter: not an article."""


class FrontMatterRefused(InvalidArgument):
    """A file's front matter cannot be read (`reason`), or names a `title` or an `id` that is
    not text."""

    field = "front_matter"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_markdown(text: str, stem: str) -> MarkdownFile:
    """The article a file holds; `stem` (the file name without its extension) is the title of
    last resort. `FrontMatterRefused` if its front matter is not a YAML mapping or its `title`
    or `id` is not text."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    tokens = _PARSER.parse(text)
    meta: dict[str, Any] = {}
    cut: list[tuple[int, int]] = []
    if tokens and tokens[0].type == "front_matter":
        meta = _front_matter(tokens[0].content)
        cut.append(_lines(tokens[0]))
    title = _text_field(meta, "title")
    pinned = _text_field(meta, "id")
    body_lines = _without(lines, cut)
    empty = not "\n".join(body_lines).strip()
    if title is None:
        found = _first_heading(tokens)
        if found is not None:
            title, span = found
            cut.append(span)
    content = "\n".join(_without(lines, cut)).strip("\n")
    return MarkdownFile(title or stem, content, pinned, empty)


def _front_matter(source: str) -> dict[str, Any]:
    try:
        meta = yaml.safe_load(source)
    except yaml.YAMLError as e:
        raise FrontMatterRefused(f"not valid YAML ({' '.join(str(e).split())})") from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise FrontMatterRefused(f"a YAML mapping of keys was expected, not {type(meta).__name__}")
    return meta


def _text_field(meta: dict[str, Any], key: str) -> str | None:
    """`key`'s value as text (a number reads as its digits); None if absent or blank."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise FrontMatterRefused(f"`{key}` must be text, not {type(value).__name__}")
    text = " ".join(str(value).split())
    return text or None


def _first_heading(tokens: Sequence[Token]) -> tuple[str, tuple[int, int]] | None:
    """The first top-level `h1`'s text and lines, if it has any text."""
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and token.level == 0:
            title = heading_text(tokens[i + 1].children or [])
            return (title, _lines(token)) if title else None
    return None


def heading_text(children: Sequence[Token]) -> str:
    """A heading's inline tokens as plain text: images left out, unless nothing else is."""
    words: list[str] = []
    alts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            words.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            words.append(" ")
        elif child.type == "image":
            alts.append(heading_text(child.children or []))
    text = " ".join("".join(words).split())
    return text or " ".join(" ".join(alts).split())


def _lines(token: Token) -> tuple[int, int]:
    assert token.map is not None  # block tokens always carry their lines
    return token.map[0], token.map[1]


def _without(lines: list[str], spans: list[tuple[int, int]]) -> list[str]:
    dropped = {n for start, end in spans for n in range(start, end)}
    return [line for n, line in enumerate(lines) if n not in dropped]
