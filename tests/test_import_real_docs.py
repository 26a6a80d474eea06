"""`kbes import` on a folder of real package READMEs and docs (tests/real_docs.py): every
file is imported or named as skipped with its reason, no title comes from a code block, and
no code block loses a line to a title (issue 33)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import ok
from click.testing import CliRunner
from npm_cache import npm_package
from real_docs import SUFFIXES, code_lines, npm_docs, real_docs

from kbes import open_store
from kbes.cli import main

MCPB = "@anthropic-ai/mcpb@2.1.2"
"""The npm package tests/test_bundle.py installs: its cached install serves both."""


def test_every_real_file_is_imported_or_named_and_no_title_is_code(
    runner: CliRunner, tmp_path: Path, db_path: Path
) -> None:
    check(runner, real_docs(tmp_path / "real"), db_path)


@pytest.mark.slow
def test_real_npm_readmes_too(runner: CliRunner, tmp_path: Path, db_path: Path) -> None:
    """The READMEs of an npm install (the MCP Bundle tool's dependencies, which the bundle
    tests install), as the issue's first try used."""
    installed = npm_package(MCPB) / "node_modules"
    check(runner, npm_docs(tmp_path / "npm-docs", installed), db_path)


def check(runner: CliRunner, folder: Path, db_path: Path) -> None:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES)
    assert len(files) >= 20, "too few real Markdown files installed to test on"
    kb = ok(runner, "kb", "create", "Real docs").strip()
    result = runner.invoke(main, ["import", str(folder), "--kb", kb, "--publish", "--json"])
    assert result.exit_code in (0, 3), result.output
    report = json.loads(result.stdout)
    imported = set(report["added"])
    skipped = report["skipped"]
    names = {p.relative_to(folder).as_posix() for p in files}
    assert imported | set(skipped) == names and not imported & set(skipped)
    assert all(reason.strip() for reason in skipped.values())
    assert (result.exit_code == 3) == any(
        not reason.startswith("empty") for reason in skipped.values()
    )

    store = open_store(db_path)
    try:
        for name in sorted(imported):
            text = (folder / name).read_text(encoding="utf-8")
            article = store.get_article(report["article_ids"][name])
            code = code_lines(text.replace("\r\n", "\n"))
            assert not any(
                line.lstrip().startswith("#") and line.lstrip("# ").strip() == article.title
                for line in code
            ), f"{name}: title {article.title!r} is a line of a code block"
            assert all(line in article.content for line in code if line.strip()), name
            assert not article.content.startswith("---\n"), f"{name}: front matter kept"
    finally:
        store.close()
    reasons: dict[str, int] = {}
    for reason in skipped.values():
        short = reason.split(";")[0].split(" (")[0]
        reasons[short] = reasons.get(short, 0) + 1
    print(f"\n{len(files)} real files: {len(imported)} imported, skipped by reason: {reasons}")
