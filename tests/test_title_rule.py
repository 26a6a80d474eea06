"""One title rule for every door (issue 13, defect 7): an agent's edit, a person's
`kbes article add/save --title`, and `kbes import` all refuse a blank title, a control or
format character (a newline, NUL, a bidi override such as U+202E) and an over-long title, with an
error naming the title; and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import ok
from click.testing import CliRunner
from tool_calls import call, fails

from kbes import KnowledgeBaseStore
from kbes.cli import main
from kbes.domain.article import Article
from kbes.domain.errors import InvalidArgument
from kbes.domain.limits import DEFAULT_LIMITS
from kbes.tools.codes import KbesError

BAD_TITLES = [
    pytest.param("   ", id="blank"),
    pytest.param("", id="empty"),
    pytest.param("Refunds\nabc  published  2026-01-01  Forged row", id="newline"),
    pytest.param("Refunds\rback", id="carriage-return"),
    pytest.param("Ref\x00unds", id="nul"),
    pytest.param("Refunds \u202egnp.exe", id="rtl-override"),
    pytest.param("Refunds\u2028back", id="line-separator"),
    pytest.param("x" * (DEFAULT_LIMITS.title_chars + 1), id="too-long"),
]


@pytest.mark.parametrize("title", BAD_TITLES)
def test_the_aggregate_refuses_a_bad_title(title: str) -> None:
    from uuid import uuid4

    with pytest.raises(InvalidArgument) as info:
        Article.draft(uuid4(), title, "text")
    assert info.value.field == "title"
    article = Article.draft(uuid4(), "Fine", "text")
    with pytest.raises(InvalidArgument) as info:
        article.save("text", title)
    assert info.value.field == "title"
    assert article.title == "Fine" and not article.pending_events[1:]


@pytest.mark.parametrize(
    "title",
    ["Réglages — ½", "emoji \U0001f469\u200d\U0001f4bb team", "x" * DEFAULT_LIMITS.title_chars],
)
def test_ordinary_titles_pass(title: str) -> None:
    from uuid import uuid4

    assert Article.draft(uuid4(), title, "text").title == title


@pytest.mark.parametrize("title", BAD_TITLES)
def test_an_agent_title_is_invalid_argument_naming_title(
    store: KnowledgeBaseStore, kb: str, title: str
) -> None:
    article = str(store.add_article(kb, "Refunds", "Refunds take 7 days.", publish=True))
    version = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    head = store.head()
    refused = fails(
        store,
        "edit_knowledge_article",
        knowledge_base_id=kb,
        article_id=article,
        content="Refunds take 5 days.",
        expected_version=version["updated_at"],
        idempotency_key="bad-title",
        title=title,
    )
    assert refused["code"] == "invalid_argument"
    assert refused["field"] == "title"
    assert store.head() == head


@pytest.mark.parametrize("title", BAD_TITLES)
def test_a_person_title_is_refused_naming_title(runner: CliRunner, title: str) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    added = runner.invoke(main, ["article", "add", "--kb", kb, "--title", title, "--content", "x"])
    assert added.exit_code != 0
    assert "title" in added.output
    article = ok(runner, "article", "add", "--kb", kb, "--title", "Fine", "--content", "x").strip()
    saved = runner.invoke(main, ["article", "save", "--kb", kb, article, "--title", title])
    assert saved.exit_code != 0
    assert "title" in saved.output
    assert "Forged row" not in ok(runner, "article", "list", "--kb", kb)


def test_an_imported_heading_follows_the_same_rule(runner: CliRunner, tmp_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\ntext\n")
    (folder / "bad.md").write_text("# Refunds \u202egnp.exe\n\ntext\n")
    result = runner.invoke(main, ["import", str(folder), "--kb", kb])
    assert result.exit_code == 3, result.output  # the file is skipped, named, the rest imported
    assert "bad.md" in result.output and "title" in result.output
    listed = json.loads(ok(runner, "article", "list", "--kb", kb, "--json"))
    assert [a["title"] for a in listed] == ["Good"]


def test_a_newline_never_injects_a_row_in_article_list(
    store: KnowledgeBaseStore, kb: str, runner: CliRunner
) -> None:
    article = str(store.add_article(kb, "Refunds", "text", publish=True))
    version = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    with pytest.raises(KbesError):
        call(
            store,
            "edit_knowledge_article",
            knowledge_base_id=kb,
            article_id=article,
            content="text",
            expected_version=version["updated_at"],
            idempotency_key="forge",
            title="Refunds\n00000000-0000-0000-0000-000000000000  published  forged",
        )
    listing = ok(runner, "article", "list", "--kb", kb)
    assert "forged" not in listing
    assert len(listing.strip().splitlines()) == 3
