"""`kbes import --sync` keeps a knowledge base in step with its folder (issue 33), checked
through the agents' own tools: after files are deleted, renamed, moved and edited, search and
read answer exactly what the folder holds, a citation of a deleted file answers `gone`, and a
renamed file with the same content keeps its article's id. Articles the folder did not import,
and one a person unpublished, are left as they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from cli_harness import head, ok
from click.testing import CliRunner

from kbes import Article, KbesError, open_store
from kbes.cli import main
from kbes.log.folder_files import markdown_files
from kbes.log.importer import import_id
from kbes.log.markdown_file import read_markdown
from kbes.tools import call_tool

COMMON = "handbook"
"""A word every file of the folder holds, so one search lists them all (fewer than 20)."""


def write(folder: Path, name: str, title: str, body: str, front: str = "") -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{front}# {title}\n\n{body} ({COMMON})\n")


def agents_view(db: Path, kb: str) -> dict[str, tuple[str, str]]:
    """What an agent finds: every article a search returns, read through the read tool."""
    store = open_store(db)
    try:
        hits = call_tool(
            store, "search_knowledge_base", {"knowledge_base_id": kb, "query": COMMON, "limit": 20}
        ).hits
        view = {}
        for hit in hits:
            read = call_tool(
                store,
                "read_knowledge_article",
                {"knowledge_base_id": kb, "article_id": hit.article_id},
            )
            view[hit.article_id] = (read.title, read.content)
        return view
    finally:
        store.close()


def folder_view(folder: Path) -> list[tuple[str, str]]:
    """What the folder holds, read as the import reads it."""
    found = []
    for path in markdown_files(folder).files:
        read = read_markdown(path.read_text(), path.stem)
        if not read.empty:
            found.append((read.title, read.content))
    return sorted(found)


def sync(runner: CliRunner, folder: Path, kb: str, *more: str) -> dict[str, Any]:
    result = runner.invoke(
        main, ["import", str(folder), "--kb", kb, "--publish", "--sync", "--json", *more]
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def ids(report: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = report["article_ids"]
    return found


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(folder, "refunds.md", "Refunds", "Refunds take 5 days.")
    write(folder, "shipping.md", "Shipping", "We ship in 2 days.")
    write(folder, "faq/password.md", "Reset your password", "Open Settings > Security.")
    write(folder, "faq/invoices.md", "Invoices", "Invoices are emailed monthly.")
    write(folder, "team.md", "Team", "The team page.", front="---\nid: team-page\n---\n")
    write(folder, "old-policy.md", "Old policy", "Refunds take 4 days.")
    write(folder, "legal.md", "Legal", "Terms of service.")
    return folder


def test_sync_keeps_agents_in_step_with_the_folder(
    runner: CliRunner, docs: Path, db_path: Path
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    first = ids(sync(runner, docs, kb))
    assert sorted(agents_view(db_path, kb).values()) == folder_view(docs)
    other = ok(runner, "article", "add", "--kb", kb, "--title", "Status", "--content",
               f"All systems up ({COMMON}).", "--publish").strip()  # fmt: skip
    ok(runner, "article", "unpublish", "--kb", kb, first["legal.md"])

    (docs / "old-policy.md").unlink()  # deleted
    (docs / "shipping.md").rename(docs / "delivery.md")  # renamed, same content
    (docs / "faq").rename(docs / "help")  # a folder moved: both files keep their articles
    write(docs, "refunds.md", "Refunds", "Refunds take 3 days.")  # edited
    (docs / "team.md").unlink()  # renamed and edited, its front matter id kept
    write(docs, "about/people.md", "Our team", "Who we are.", front="---\nid: team-page\n---\n")
    (docs / "legal.md").unlink()  # a person had unpublished it: it stays unpublished

    before = head(db_path)
    preview = runner.invoke(main, ["import", str(docs), "--kb", kb, "--publish", "--sync",
                                   "--dry-run"])  # fmt: skip
    assert preview.exit_code == 0, preview.output
    assert preview.stdout.splitlines()[-1].endswith("(dry run: nothing was written)")
    assert "unpublished" in preview.stdout and "old-policy.md" in preview.stdout
    assert head(db_path) == before  # a dry run writes nothing

    report = sync(runner, docs, kb)
    now = ids(report)
    assert report["unpublished"] == ["old-policy.md"]
    assert sorted(report["moved"]) == [
        "about/people.md",
        "delivery.md",
        "help/invoices.md",
        "help/password.md",
    ]
    assert now["delivery.md"] == first["shipping.md"]
    assert now["help/password.md"] == first["faq/password.md"]
    assert now["about/people.md"] == first["team.md"]
    assert now["refunds.md"] == first["refunds.md"]
    assert sorted(report["saved"]) == ["about/people.md", "refunds.md"]

    view = agents_view(db_path, kb)
    assert sorted(v for a, v in view.items() if a != other) == folder_view(docs)
    assert view[other] == ("Status", f"All systems up ({COMMON}).")  # not the folder's: kept

    store = open_store(db_path)
    try:
        for gone in (first["old-policy.md"], first["legal.md"]):
            with pytest.raises(KbesError) as error:
                call_tool(store, "read_knowledge_article",
                          {"knowledge_base_id": kb, "article_id": gone})  # fmt: skip
            assert error.value.code == "gone"
    finally:
        store.close()

    again = sync(runner, docs, kb)
    assert again["added"] == again["saved"] == again["unpublished"] == []  # in step: a no-op


def test_a_file_that_comes_back_is_published_again_but_not_one_a_person_unpublished(
    runner: CliRunner, docs: Path, db_path: Path
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    first = ids(sync(runner, docs, kb))
    ok(runner, "article", "unpublish", "--kb", kb, first["legal.md"])
    kept = {name: (docs / name).read_text() for name in ("refunds.md", "legal.md")}
    for name in kept:
        (docs / name).unlink()
    assert sync(runner, docs, kb)["unpublished"] == ["refunds.md"]  # legal.md already was
    for name, text in kept.items():
        (docs / name).write_text(text)
    back = sync(runner, docs, kb)
    assert back["republished"] == ["refunds.md"]
    assert back["left_unpublished"] == ["legal.md"]
    assert ids(back)["refunds.md"] == first["refunds.md"]
    assert ids(back)["legal.md"] == first["legal.md"]


def test_another_folder_in_the_same_knowledge_base_is_never_touched(
    runner: CliRunner, docs: Path, tmp_path: Path, db_path: Path
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    wiki = tmp_path / "wiki"
    write(wiki, "onboarding.md", "Onboarding", "Day one.")
    sync(runner, docs, kb)
    sync(runner, wiki, kb)
    shutil.rmtree(docs)
    docs.mkdir()
    emptied = sync(runner, docs, kb)
    assert len(emptied["unpublished"]) == 7
    assert [v[0] for v in agents_view(db_path, kb).values()] == ["Onboarding"]


def test_without_sync_nothing_is_unpublished(runner: CliRunner, docs: Path, db_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    ok(runner, "import", str(docs), "--kb", kb, "--publish")
    (docs / "old-policy.md").unlink()
    out = ok(runner, "import", str(docs), "--kb", kb, "--publish")
    assert out.splitlines()[-1] == "0 added, 0 saved, 0 published, 6 unchanged"
    assert len(agents_view(db_path, kb)) == 7
    synced = sync(runner, docs, kb)  # the record kept the path: a later sync finds it gone
    assert synced["unpublished"] == ["old-policy.md"]


def test_an_import_from_before_the_record_is_found_again(
    runner: CliRunner, docs: Path, db_path: Path
) -> None:
    """A folder imported by an older kbes has no record: its articles' ids were derived from
    the knowledge base and the path, so the first sync finds each file's article (and from
    then on the record knows them)."""
    kb = ok(runner, "kb", "create", "Support").strip()
    store = open_store(db_path)
    try:
        for path in markdown_files(docs).files:  # what the older import wrote
            read = read_markdown(path.read_text(), path.stem)
            key = path.relative_to(docs).as_posix()
            article = Article.draft(UUID(kb), read.title, read.content, id=import_id(UUID(kb), key))
            article.publish()
            store.save(article)
    finally:
        store.close()
    first = sync(runner, docs, kb)
    assert first["added"] == [] and len(first["unchanged"]) == 7
    assert first["left_unpublished"] == []  # team.md's `id:` came later: it keeps its article
    (docs / "legal.md").unlink()
    assert sync(runner, docs, kb)["unpublished"] == ["legal.md"]
