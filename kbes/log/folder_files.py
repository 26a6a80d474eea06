"""Which files of a folder an import reads: Markdown (`.md` and `.markdown`, in any letter
case), not hidden (a name starting with `.`, file or folder, so `.git/` too), not in a
`node_modules` folder, and not excluded by the folder's `.gitignore` files (each applies to
its own folder and below, deeper ones winning, as in git; read with pathspec's gitignore
rules). Symbolic links are never followed: each is skipped and named with the reason."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

MARKDOWN_SUFFIXES = (".md", ".markdown")
SKIPPED_FOLDERS = frozenset({"node_modules"})


@dataclass
class Listing:
    files: list[Path] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    """Symbolic links skipped, by relative path, each with the reason."""


def is_markdown(name: str) -> bool:
    return name.lower().endswith(MARKDOWN_SUFFIXES)


def markdown_files(folder: Path) -> Listing:
    """The regular Markdown files under `folder` an import reads, and the links it skipped. No
    symbolic link is followed, to a file or a folder, leading out or staying in: an import
    must never publish what lies outside the folder (`ln -s /etc/hostname docs/host.md`), and
    a link that stays in would only import its target twice."""
    root = os.path.realpath(folder)
    listing = Listing()
    ignores: list[tuple[str, GitIgnoreSpec]] = []
    for directory, dirnames, filenames in os.walk(folder):
        here = Path(directory)
        at = here.relative_to(folder).as_posix()
        prefix = "" if at == "." else at + "/"
        ignores = [(p, s) for p, s in ignores if prefix.startswith(p)]
        if ".gitignore" in filenames and not os.path.islink(here / ".gitignore"):
            ignores.append((prefix, _gitignore(here / ".gitignore")))
        kept = []
        for name in sorted(dirnames):
            key = prefix + name
            if name.startswith(".") or name in SKIPPED_FOLDERS or _ignored(ignores, key + "/"):
                continue
            if os.path.islink(here / name):
                listing.links[key] = _link(here / name, root)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            key = prefix + name
            if name.startswith(".") or not is_markdown(name) or _ignored(ignores, key):
                continue
            path = here / name
            if os.path.islink(path):
                listing.links[key] = _link(path, root)
            elif stat.S_ISREG(os.lstat(path).st_mode):
                listing.files.append(path)
    listing.files.sort()
    listing.links = dict(sorted(listing.links.items()))
    return listing


def _gitignore(path: Path) -> GitIgnoreSpec:
    with open(path, encoding="utf-8", errors="replace") as f:
        return GitIgnoreSpec.from_lines(f.read().splitlines())


def _ignored(ignores: list[tuple[str, GitIgnoreSpec]], key: str) -> bool:
    """Whether the `.gitignore` files above `key` exclude it: the deepest that says wins."""
    verdict = False
    for prefix, spec in ignores:
        result = spec.check_file(key[len(prefix) :])
        if result.include is not None:
            verdict = result.include
    return verdict


def _link(path: Path, root: str) -> str:
    """Why a link was skipped; where it leads is not echoed (it may name a secret)."""
    if not os.path.exists(path):
        return "a dangling symbolic link"
    target = os.path.realpath(path)
    if os.path.commonpath([root, target]) == root:
        return "a symbolic link inside the folder (links are never followed)"
    return "a symbolic link to outside the folder (links are never followed)"
