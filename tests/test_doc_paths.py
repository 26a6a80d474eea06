"""Every repository file and kbes module a page names exists, so the docs describe what is.

A page (README.md, docs/*.md, docs/upstream/*.md) may name:
- a path from the repository's top (`kbes/store/sqlite.py`, `cli/allocator.py`, `tests/`,
  `.ci/run`): it must exist. A path right after a commit and a colon (`5604125:studies/x.py`,
  as `git show` takes it) names a file of that commit and is not checked;
- a dotted name in a room of the `kbes` namespace (`kbes.cli.allocator`,
  `kbes.tools.call_tool`): a module, or a module and names defined in it;
- a bare file name in backquotes (`fold.py`): a file of that name must exist in the repository,
  and in an item of docs/architecture.md that names its folder first (`2. **Projections**
  (`projections/`): ...`), in that folder.
And docs/architecture.md names every module of kbes, by its path or in its folder's item."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "upstream").glob("*.md")),
]
TOPS = ("kbes", "cli", "projections", "sims", "tests", "docs", "studies", ".ci")
ROOMS = ("domain", "store", "log", "tools", "server", "projections", "cli", "sims")
SUFFIXES = {".py", ".md", ".toml", ".json", ".yml", ".yaml", ".txt", ".sh"}
SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules", ".pytest_cache", ".mypy_cache"}

PATH = re.compile(rf"(?<![\w./:~$-])(?:{'|'.join(re.escape(t) for t in TOPS)})/[\w./-]*")
DOTTED = re.compile(rf"(?<![\w.])kbes\.(?:{'|'.join(ROOMS)})(?:\.\w+)*")
BARE = re.compile(r"`([\w-]+\.py)`")
ROOM = re.compile(r"^(?:\d+\.|-) \*\*[^*]+\*\* \(`([\w/]+/)`\)")
SOURCES = ("kbes", "projections", "cli", "sims")


def named_paths(text: str) -> list[str]:
    """The repository paths a page names: files with a known suffix, folders, `.ci/run`."""
    found = []
    for match in PATH.finditer(text):
        path = match.group().rstrip(".-")
        if path.endswith("/") or Path(path).suffix in SUFFIXES or path == ".ci/run":
            found.append(path)
    return found


def resolves(dotted: str) -> bool:
    """Whether `dotted` is a module, or a module followed by names defined in it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as e:
            if e.name is not None and ".".join(parts[:cut]).startswith(e.name):
                continue
            raise
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def repository_files() -> set[str]:
    """The names of the files in the repository's own folders (no virtualenv, no build)."""
    names = {path.name for path in ROOT.iterdir() if path.is_file()}
    for top in TOPS:
        for _, subfolders, files in os.walk(ROOT / top):
            subfolders[:] = [s for s in subfolders if s not in SKIPPED_FOLDERS]
            names.update(files)
    return names


def room_items(text: str) -> list[tuple[str, str]]:
    """The list items of docs/architecture.md that name a folder first: (folder, item)."""
    items: list[tuple[str, str]] = []
    for line in text.splitlines():
        start = ROOM.match(line)
        if start:
            items.append((start.group(1), line))
        elif items and items[-1][0] and line.startswith(" ") and line.strip():
            items[-1] = (items[-1][0], items[-1][1] + "\n" + line)
        else:
            items.append(("", ""))
    return [(folder, item) for folder, item in items if folder]


def described(text: str) -> set[str]:
    """The modules docs/architecture.md names: by path, or by name in their folder's item."""
    named = set(named_paths(text))
    for folder, item in room_items(text):
        named.update(f"{folder}{name}" for name in BARE.findall(item))
    return named


def missing(page: Path, text: str, files: set[str]) -> list[str]:
    """What `text`, a page's words, names that does not exist."""
    wrong = [p for p in named_paths(text) if not (ROOT / p).exists()]
    wrong += [d for d in DOTTED.findall(text) if not resolves(d)]
    if page.parent.name != "upstream":  # those name the libraries' files too
        wrong += [name for name in BARE.findall(text) if name not in files]
    if page.name == "architecture.md":
        for folder, item in room_items(text):
            names = BARE.findall(item)
            wrong += [f"{folder}{n}" for n in names if not (ROOT / folder / n).exists()]
    return wrong


@pytest.fixture(scope="module")
def files() -> set[str]:
    return repository_files()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_name_only_what_exists(page: Path, files: set[str]) -> None:
    assert missing(page, page.read_text(encoding="utf-8"), files) == []


def test_the_architecture_names_every_module() -> None:
    modules = {
        path.relative_to(ROOT).as_posix()
        for top in SOURCES
        for path in (ROOT / top).rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert sorted(modules - described(text)) == []


def test_a_wrong_name_of_each_kind_is_found(files: set[str]) -> None:
    page = ROOT / "docs" / "architecture.md"
    text = (
        "See `kbes/cli/allocator.py`, `cli/allocator.py`, kbes.cli.allocator, kbes.cli.nope,\n"
        "kbes.tools.call_tool, kbes.tools.no_tool, `projections/search.py`,\n"
        "`5604125:studies/x.py`, `tests/`, `fold.py` and `no_such_file.py`.\n"
        "\n"
        "2. **Projections** (`projections/`): the folds (`fold.py`), the search index in\n"
        "   `search.py`.\n"
    )
    assert missing(page, text, files) == [
        "kbes/cli/allocator.py",
        "projections/search.py",
        "kbes.cli.nope",
        "kbes.tools.no_tool",
        "no_such_file.py",
        "projections/search.py",
    ]
