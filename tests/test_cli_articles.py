"""The people-side article commands read a file the way `kbes import` does, a save that changes
nothing writes nothing, and the shell's rough edges (a cursor from nowhere, a string where a
number belongs, a runaway seed range) get an error that names the fix."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_harness import head, ok
from click.testing import CliRunner

from kbes.cli import main
from kbes.domain.author import os_user


def read(runner: CliRunner, kb: str, article_id: str) -> dict:
    return json.loads(
        ok(runner, "tool", "read_knowledge_article", f"knowledge_base_id={kb}",
           f"article_id={article_id}")
    )  # fmt: skip


def test_file_heading_is_the_title_as_in_import(runner: CliRunner, tmp_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    page = tmp_path / "refunds.md"
    page.write_text("# Refunds and returns\n\nRefunds take 7 days.\n")
    article_id = ok(runner, "article", "add", "--kb", kb, "--file", str(page), "--publish").strip()
    got = read(runner, kb, article_id)
    assert (got["title"], got["content"]) == ("Refunds and returns", "Refunds take 7 days.")

    page.write_text("# Refunds and returns\n\nRefunds take 5 days.\n")
    ok(runner, "article", "save", "--kb", kb, article_id, "--file", str(page),
       "--title", "Refunds and returns")  # fmt: skip
    got = read(runner, kb, article_id)
    assert (got["title"], got["content"]) == ("Refunds and returns", "Refunds take 5 days.")

    plain = tmp_path / "plain.txt"
    plain.write_text("No heading here.\nSecond line.\n")
    result = runner.invoke(main, ["article", "add", "--kb", kb, "--file", str(plain)])
    assert result.exit_code == 2
    assert "give the title with --title, or a --file with a `# ` heading" in result.output


def test_a_save_that_changes_nothing_writes_nothing(
    runner: CliRunner, db_path: Path, tmp_path: Path
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    article_id = ok(runner, "article", "add", "--kb", kb, "--title", "Refunds", "--content",
                    "body\n", "--publish").strip()  # fmt: skip
    version = read(runner, kb, article_id)["updated_at"]
    before = head(db_path)

    result = runner.invoke(
        main, ["article", "save", "--kb", kb, article_id, "--content", "body\n"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0
    assert result.stdout.strip() == version
    assert "unchanged" in result.stderr and "nothing written" in result.stderr
    result = runner.invoke(main, ["article", "save", "--kb", kb, article_id, "--title", "Refunds"])
    assert result.exit_code == 0 and result.stdout.strip() == version
    assert head(db_path) == before

    changed = ok(runner, "article", "save", "--kb", kb, article_id, "--content", "new body")
    assert changed.strip() > version
    assert head(db_path) == before + 1


def test_file_dash_is_refused_by_name(runner: CliRunner) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    result = runner.invoke(main, ["article", "add", "--kb", kb, "--title", "T", "--file", "-"])
    assert result.exit_code == 2
    assert "'--file': standard input is not read" in result.output
    result = runner.invoke(main, ["article", "add", "--kb", kb, "--title", "T", "--file", "nope"])
    assert result.exit_code == 2
    assert "'--file': no file at nope" in result.output


def test_poll_cursor_past_the_end_is_refused(runner: CliRunner, db_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    ok(runner, "article", "add", "--kb", kb, "--title", "A", "--content", "a", "--publish")
    last = head(db_path)
    args = ["tool", "poll_resource_events", "resource_type=knowledge_base", f"resource_id={kb}"]
    page = json.loads(ok(runner, *args, f"after_sequence:={last}"))
    assert page["events"] == [] and page["next_sequence"] == last

    result = runner.invoke(main, [*args, f"after_sequence:={last + 1}"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert error["code"] == "invalid_argument" and error["field"] == "after_sequence"
    assert f"its last sequence is {last}" in error["message"]
    assert head(db_path) == last

    result = runner.invoke(main, ["events", "--kb", kb, "--after", str(last + 5)])
    assert result.exit_code == 2
    assert (
        f"Invalid value for --after: {last + 5} is past the end of the log (its last "
        f"sequence is {last})"
    ) in result.stderr
    assert "sequence" in ok(runner, "events", "--kb", kb, "--after", str(last))


def test_a_string_where_json_belongs_gets_a_hint_on_stderr(runner: CliRunner) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    result = runner.invoke(
        main,
        ["tool", "search_knowledge_base", f"knowledge_base_id={kb}", "query=refunds", "limit=5"],
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["field"] == "limit"  # stdout stays the agent's JSON
    assert result.stderr == "hint: limit=5 passes a string; pass JSON as limit:=5\n"


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ("1-100000000", "is more than 1,000 seeds"),
        ("-3", "whole numbers >= 0"),
        ("2-1", "whole numbers >= 0"),
    ],
)
def test_seed_ranges_are_bounded(seeds: str, message: str) -> None:
    result = CliRunner().invoke(main, ["sim", "day", "--seeds", seeds])
    assert result.exit_code == 2
    assert "--seeds" in result.output and message in result.output


def test_a_byte_order_mark_does_not_hide_the_heading(runner: CliRunner, tmp_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    page = tmp_path / "bom.md"
    page.write_bytes("\ufeff# Refunds\n\nBody.\n".encode())
    article_id = ok(runner, "article", "add", "--kb", kb, "--file", str(page), "--publish").strip()
    got = read(runner, kb, article_id)
    assert (got["title"], got["content"]) == ("Refunds", "Body.")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bom.md").write_bytes(page.read_bytes())
    ok(runner, "import", str(folder), "--kb", kb, "--publish")
    titles = json.loads(ok(runner, "article", "list", "--kb", kb, "--json"))
    assert sorted(a["title"] for a in titles) == ["Refunds", "Refunds"]


def test_a_refused_name_creates_no_database(tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    result = CliRunner().invoke(main, ["kb", "create", "  ", "--db", str(new)])
    assert result.exit_code == 2
    assert "a knowledge base needs a non-empty name" in result.stderr
    assert not new.exists()
    result = CliRunner().invoke(main, ["kb", "create", "Support", "--db", str(new)])
    assert result.exit_code == 0
    assert result.stderr == f"created the kbes database {new}\n"
    result = CliRunner().invoke(main, ["kb", "create", "Billing", "--db", str(new)])
    assert result.exit_code == 0 and result.stderr == ""


def test_a_sequence_beyond_64_bits_is_an_invalid_argument(runner: CliRunner) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    huge = str(2**64)
    result = runner.invoke(main, ["tool", "poll_resource_events", "resource_type=knowledge_base",
                                  f"resource_id={kb}", f"after_sequence:={huge}"])  # fmt: skip
    assert result.exit_code == 1
    error = json.loads(result.stdout)
    assert (error["code"], error["field"]) == ("invalid_argument", "after_sequence")
    for command in (["events", "--kb", kb], ["log", "export"]):
        for after in (huge, "-1", "abc", "1.5"):
            result = runner.invoke(main, [*command, "--after", after])
            assert result.exit_code == 2
            assert (
                f"Invalid value for '--after': '{after}' is not a sequence number: give a whole "
                "number from 0 (the start of the log) up to 2**63 - 1"
            ) in result.stderr


def test_sim_refuses_another_programs_database(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    result = CliRunner().invoke(
        main, ["sim", "staleness", "--seeds", "1", "--articles", "20", "--questions", "3",
               "--saves", "3", "--hours", "1", "--db", str(other)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "is a SQLite database without a kbes log" in result.stderr
    with sqlite3.connect(other) as db:
        assert {r[0] for r in db.execute("SELECT name FROM sqlite_master")} == {"notes"}


def test_show_and_history_give_a_person_every_version_drafts_included(
    runner: CliRunner, db_path: Path
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    other = ok(runner, "kb", "create", "Other").strip()
    article_id = ok(runner, "article", "add", "--kb", kb, "--title", "Refunds", "--content",
                    "Refunds take 5 days.").strip()  # fmt: skip
    ok(runner, "article", "publish", "--kb", kb, article_id)
    ok(runner, "article", "save", "--kb", kb, article_id, "--content", "Refunds take 7 days.",
       "--title", "Refunds and returns")  # fmt: skip
    ok(runner, "article", "unpublish", "--kb", kb, article_id)

    versions = json.loads(ok(runner, "article", "history", "--kb", kb, article_id, "--json"))
    assert [(v["version"], v["type"]) for v in versions] == [
        (1, "drafted"), (2, "published"), (3, "retitled"), (4, "unpublished")
    ]  # fmt: skip
    assert [v["sequence"] for v in versions] == sorted(v["sequence"] for v in versions)
    # Each version's author: here the OS user running the commands (no --author, no
    # KBES_AUTHOR), as kbes knows it.
    me = {"kind": "person", "name": os_user(), "how": "os", "approved": False}
    assert [v["author"] for v in versions] == [me] * 4
    table = ok(runner, "article", "history", "--kb", kb, article_id).splitlines()
    assert table[0].split() == ["version", "updated_at", "type", "sequence", "author"]
    first = versions[0]
    me_shown = f"{os_user()} (person, os)".split()
    assert table[2].split() == [
        "1",
        first["updated_at"],
        "drafted",
        str(first["sequence"]),
        *me_shown,
    ]

    assert ok(runner, "article", "show", "--kb", kb, article_id) == (
        "title:      Refunds and returns\n"
        f"article_id: {article_id}\n"
        "status:     unpublished\n"
        "version:    4\n"
        f"updated_at: {versions[3]['updated_at']}\n"
        "\n"
        "Refunds take 7 days.\n"
    )
    published = json.loads(ok(runner, "article", "show", "--kb", kb, article_id, "--json",
                              "--at", versions[1]["updated_at"]))  # fmt: skip
    assert published == {
        "knowledge_base_id": kb,
        "article_id": article_id,
        "title": "Refunds",
        "status": "published",
        "version": 2,
        "updated_at": versions[1]["updated_at"],
        "content": "Refunds take 5 days.",
    }
    draft = json.loads(ok(runner, "article", "show", "--kb", kb, article_id, "--json",
                          "--at", versions[0]["updated_at"]))  # fmt: skip
    assert draft["status"] == "draft"

    before = head(db_path)
    for args, code, words in [
        (["--at", "yesterday"], 2, "Invalid value for --at: 'yesterday' is not an RFC 3339 time"),
        (["--at", "2020-01-01T00:00:00Z"], 2, "never had a version at 2020-01-01T00:00:00.000000Z; "
         "`kbes article history` lists its versions"),
    ]:  # fmt: skip
        result = runner.invoke(main, ["article", "show", "--kb", kb, article_id, *args])
        assert result.exit_code == code and words in result.output, result.output
    for command in ("show", "history"):
        result = runner.invoke(main, ["article", command, "--kb", other, article_id])
        assert result.exit_code == 1
        assert result.stderr == (
            f"Error: not_found: article {article_id} is not in knowledge base {other}; "
            f"`kbes article list --kb {other}` lists its articles\n"
        )
        # A knowledge base's id in the article's place is not an article (nor a traceback).
        result = runner.invoke(main, ["article", command, "--kb", kb, kb])
        assert (result.exit_code, result.stderr) == (1, f"Error: not_found: no article {kb}\n")
    assert head(db_path) == before  # reading writes nothing
