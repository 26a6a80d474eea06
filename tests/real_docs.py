"""A folder of real Markdown for the import tests: the READMEs of the Python packages
installed beside kbes (each distribution's long description, when it is Markdown) and the
Markdown files those packages ship, copied as they are. Real files, written by many hands,
with the badges, code blocks, HTML and odd headings hand-made fixtures leave out."""

from __future__ import annotations

import re
import shutil
import sysconfig
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

SUFFIXES = (".md", ".markdown")


def real_docs(folder: Path) -> Path:
    """Fill `folder` (readmes/NAME.md, shipped/PATH) and return it."""
    readmes = folder / "readmes"
    readmes.mkdir(parents=True)
    for dist in distributions():
        meta: Any = dist.metadata  # an email.message.Message: .get and .get_payload
        kind = meta.get("Description-Content-Type") or ""
        text = meta.get_payload() or meta.get("Description") or ""
        name = re.sub(r"[^A-Za-z0-9._-]", "_", meta.get("Name") or "")
        if "markdown" in kind and text.strip() and name:
            (readmes / f"{name}.md").write_text(text, encoding="utf-8")
    site = Path(sysconfig.get_paths()["purelib"])
    for path in sorted(site.rglob("*")):
        hidden = any(part.startswith(".") for part in path.relative_to(site).parts)
        if path.suffix.lower() in SUFFIXES and path.is_file() and not hidden:
            if path.is_symlink() or "kbes" in path.relative_to(site).parts[0]:
                continue
            target = folder / "shipped" / path.relative_to(site)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return folder


def npm_docs(folder: Path, node_modules: Path) -> Path:
    """Fill `folder` with the Markdown files of an npm install's `node_modules` (the folder
    renamed `npm`, which an import would skip by its name) and return it."""
    for path in sorted(node_modules.rglob("*")):
        if path.suffix.lower() in SUFFIXES and path.is_file() and not path.is_symlink():
            target = folder / "npm" / path.relative_to(node_modules)
            if any(part.startswith(".") or part == "node_modules" for part in target.parts):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return folder


def code_lines(text: str) -> set[str]:
    """The lines inside fenced code blocks (``` or ~~~), found without a Markdown parser: a
    check of the parser, not a second copy of it."""
    inside: str | None = None
    found: set[str] = set()
    for line in text.splitlines():
        fence = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if inside is None and fence:
            inside = fence.group(1)[0] * len(fence.group(1))
        elif (
            inside is not None
            and line.strip().startswith(inside)
            and not line.strip(inside[0]).strip()
        ):
            inside = None
        elif inside is not None:
            found.add(line)
    return found
