"""A judged collection built offline from this machine's man pages (the search study's
construction, docs/performance.md): one article per page of /usr/share/man/man1 and man8,
titled by the command's name, its content the page's text without its NAME section; the
query for a page is its NAME line's description ("list directory contents"), asked as written
and as a question ("which command do I use to list directory contents?"). The one relevant
article is the page itself: a known-item task, judged by construction.

At most 15 pages per family (the name's first word: gcloud-*, llvm-*, ...) so no generated
family dominates. Weaknesses: one judged answer per query (a near-duplicate page counts as a
miss), and the description's words often recur in the page's own text, which favours
matching by words."""

from __future__ import annotations

import gzip
import random
import re
from dataclasses import dataclass
from pathlib import Path

FOLDERS = (Path("/usr/share/man/man1"), Path("/usr/share/man/man8"))
KEEP = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "TP", "IP", "PP", "LP", "P"}
FAMILY = 15
CONTENT_CHARS = 6000
QUESTION = "which command do I use to {}?"
MAX_QUERY = 200
"""The search tool's longest query; longer questions are left out."""


@dataclass(frozen=True)
class Page:
    title: str
    content: str
    description: str


@dataclass(frozen=True)
class Collection:
    pages: list[Page]
    queries: list[int]
    """The pages asked for, by index, in a fixed random order."""

    def asked(self, form: str) -> list[tuple[int, str]]:
        """(page, query) for `form` "written" or "question"."""
        out = []
        for i in self.queries:
            text = self.pages[i].description
            if form == "question":
                text = QUESTION.format(text[0].lower() + text[1:])
            if len(text) <= MAX_QUERY:
                out.append((i, text))
        return out


def _clean(line: str) -> str:
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line)
    line = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\(em", "-")
    line = re.sub(r"\\\(..", " ", line)
    line = re.sub(r"\\\[[^\]]*\]", " ", line)
    line = re.sub(r"\\[&|^0 ~:%]", " ", line)
    line = re.sub(r"\\[*n]\(..|\\[*n].", "", line)
    return line.replace("\\e", "\\").replace('\\"', "")


def parse(path: Path) -> Page | None:
    """The page at `path` (gzipped roff), or None if it is an alias, short or unnamed."""
    try:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except (OSError, EOFError):
        return None
    if raw.startswith(".so "):
        return None
    sections: dict[str, list[str]] = {}
    current = None
    for line in raw.split("\n"):
        if line.startswith(('.\\"', "'\\\"")):
            continue
        heading = re.match(r'^\.S[Hh]\s+"?([^"]*)"?', line)
        if heading:
            current = heading.group(1).strip().upper()
            sections.setdefault(current, [])
            continue
        if current is None:
            continue
        if line.startswith((".", "'")):
            parts = line[1:].split(None, 1)
            if len(parts) > 1 and parts[0] in KEEP:
                sections[current].append(_clean(parts[1].replace('"', "")))
            continue
        sections[current].append(_clean(line))
    name = " ".join(" ".join(sections.get("NAME", [])).split())
    named = re.match(r"^(.+?)\s+-+\s+(.+)$", name)
    if not named:
        return None
    commands, description = named.group(1), named.group(2).strip().rstrip(".")
    body = " ".join(" ".join(v) for k, v in sections.items() if k != "NAME")
    body = " ".join(body.split())
    if len(body) < 300 or len(description.split()) < 3:
        return None
    return Page(commands.split(",")[0].strip(), body[:CONTENT_CHARS], description)


def build(articles: int, queries: int, seed: int = 3) -> Collection:
    """Up to `articles` pages and `queries` of them asked for (fewer if the machine has
    fewer pages)."""
    files = sorted(p for folder in FOLDERS if folder.is_dir() for p in folder.glob("*.gz"))
    rng = random.Random(seed)
    rng.shuffle(files)
    pages: list[Page] = []
    titles: set[str] = set()
    descriptions: set[str] = set()
    families: dict[str, int] = {}
    for path in files:
        page = parse(path)
        if page is None or page.title in titles or page.description.lower() in descriptions:
            continue
        family = re.split(r"[-_. ]", page.title)[0]
        if families.get(family, 0) >= FAMILY:
            continue
        families[family] = families.get(family, 0) + 1
        titles.add(page.title)
        descriptions.add(page.description.lower())
        pages.append(page)
        if len(pages) == articles:
            break
    asked = rng.sample(range(len(pages)), min(queries, len(pages)))
    return Collection(pages, asked)


__all__ = ["Collection", "Page", "build"]
