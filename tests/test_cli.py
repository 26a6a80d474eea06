"""The acceptance walk-through of the store, driven through the CLI as a user would."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cli_harness import head, ok
from click.testing import CliRunner
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from views_dump import dump

from kbes.cli import main


def tool(runner: CliRunner, name: str, *args: str) -> tuple[int, dict]:
    result = runner.invoke(main, ["tool", name, *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "reset.md").write_text(
        "# Reset your password\n\nOpen Settings, choose Security, click Reset password.\n"
    )
    (folder / "billing.md").write_text("# Billing\n\nInvoices are emailed monthly.\n")
    (folder / "two-factor.md").write_text("Use an authenticator app, or a recovery code.\n")
    return folder


def test_walkthrough(runner: CliRunner, docs: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    imported = ok(runner, "import", str(docs), "--kb", kb, "--publish")
    assert imported.splitlines()[-1] == "3 added, 0 saved, 3 published, 0 unchanged"
    assert ok(runner, "import", str(docs), "--kb", kb, "--publish").splitlines() == [
        "0 added, 0 saved, 0 published, 3 unchanged"
    ]

    code, found = tool(
        runner,
        "search_knowledge_base",
        f"knowledge_base_id={kb}",
        "query=reset password",
        "limit:=5",
    )
    assert code == 0
    assert found["hits"][0]["title"] == "Reset your password"
    hit = found["hits"][0]
    code, read = tool(
        runner,
        "read_knowledge_article",
        f"knowledge_base_id={kb}",
        f"article_id={hit['article_id']}",
    )
    assert code == 0
    assert read["content"] == "Open Settings, choose Security, click Reset password."
    assert read["citation"] == hit["citation"]

    edit = [
        "edit_knowledge_article",
        f"knowledge_base_id={kb}",
        f"article_id={hit['article_id']}",
        "content=Use the new reset page.",
        f"expected_version={read['updated_at']}",
        "idempotency_key=change-1",
    ]
    code, first = tool(runner, *edit)
    assert code == 0 and first["replay"] is False
    assert first["updated_at"] > read["updated_at"]
    events_before = ok(runner, "events", "--kb", kb, "--json").splitlines()
    code, again = tool(runner, *edit)
    assert code == 0 and again == {**first, "replay": True}
    assert ok(runner, "events", "--kb", kb, "--json").splitlines() == events_before
    assert json.loads(events_before[-1])["type"] == "saved"

    stale = [*edit[:-1], "idempotency_key=change-2"]
    code, conflict = tool(runner, *stale)
    assert code == 1
    assert conflict["code"] == "version_conflict"
    assert conflict["current_version"] == first["updated_at"]

    ok(runner, "article", "unpublish", "--kb", kb, hit["article_id"])
    code, gone = tool(
        runner,
        "read_knowledge_article",
        f"knowledge_base_id={kb}",
        f"article_id={hit['article_id']}",
    )
    assert code == 1 and gone["code"] == "gone"
    code, page = tool(
        runner,
        "poll_resource_events",
        "resource_type=knowledge_base",
        f"resource_id={kb}",
        "after_sequence:=0",
    )
    assert code == 0
    assert (page["events"][-1]["type"], page["events"][-1]["article_id"]) == (
        "unpublished",
        hit["article_id"],
    )


def test_reimport_saves_only_changed_files(runner: CliRunner, docs: Path) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    ok(runner, "import", str(docs), "--kb", kb, "--publish")
    (docs / "billing.md").write_text("# Billing and invoices\n\nInvoices are emailed weekly.\n")
    (docs / "two-factor.md").write_text("Use an authenticator app.\n")  # no heading: same title
    out = ok(runner, "import", str(docs), "--kb", kb, "--publish").splitlines()
    assert out[-1] == "0 added, 2 saved, 0 published, 1 unchanged"
    # Each changed file is named with the event it got.
    assert sorted((line.split()[0], line.split()[-1]) for line in out[:-1]) == [
        ("retitled", "billing.md"), ("saved", "two-factor.md")
    ]  # fmt: skip
    events = [json.loads(line) for line in ok(runner, "events", "--kb", kb, "--json").splitlines()]
    assert sorted(e["type"] for e in events[3:]) == ["retitled", "saved"]
    assert [e["type"] for e in events[:3]] == ["published"] * 3


def test_draft_with_a_unique_word_is_invisible(runner: CliRunner) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    draft = ok(
        runner,
        "article",
        "add",
        "--kb",
        kb,
        "--title",
        "Plans",
        "--content",
        "The quixotical roadmap.",
    ).strip()
    code, found = tool(
        runner, "search_knowledge_base", f"knowledge_base_id={kb}", "query=quixotical"
    )
    assert (code, found["hits"]) == (0, [])
    code, read = tool(
        runner, "read_knowledge_article", f"knowledge_base_id={kb}", f"article_id={draft}"
    )
    assert (code, read["code"]) == (1, "not_found")
    code, page = tool(
        runner, "poll_resource_events", "resource_type=knowledge_base", f"resource_id={kb}"
    )
    assert (code, page["events"]) == (0, [])
    listed = ok(runner, "article", "list", "--kb", kb)
    assert "draft" in listed and "Plans" in listed


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["search_knowledge_base", "query=ok"], "knowledge_base_id"),
        (["search_knowledge_base", "knowledge_base_id=K", "query=a"], "query"),
        (["search_knowledge_base", "knowledge_base_id=K", "query=" + "a" * 201], "query"),
        (["search_knowledge_base", "knowledge_base_id=K", "query=ok", "limit:=0"], "limit"),
        (["search_knowledge_base", "knowledge_base_id=K", "query=ok", "limit:=21"], "limit"),
        (["search_knowledge_base", "knowledge_base_id=K", "query=ok", "limit=5"], "limit"),
        (["search_knowledge_base", "knowledge_base_id=K", "query=ok", "x=1"], "x"),
        (
            ["poll_resource_events", "resource_type=knowledge_base", "resource_id=K", "limit:=101"],
            "limit",
        ),
        (
            [
                "poll_resource_events",
                "resource_type=knowledge_base",
                "resource_id=K",
                "after_sequence:=-1",
            ],
            "after_sequence",
        ),
        (
            [
                "edit_knowledge_article",
                "knowledge_base_id=K",
                "article_id=A",
                "content=x",
                "expected_version=not a date",
                "idempotency_key=k",
            ],
            "expected_version",
        ),
        (
            [
                "edit_knowledge_article",
                "knowledge_base_id=K",
                "article_id=A",
                "content=x",
                "expected_version=2026-11-30T09:00:00Z",
                "idempotency_key=",
            ],
            "idempotency_key",
        ),
    ],
)
def test_bad_tool_input_exits_non_zero_naming_the_field(
    runner: CliRunner, args: list[str], field: str
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    args = [a.replace("=K", f"={kb}") for a in args]
    code, body = tool(runner, *args)
    assert code == 1
    assert body["code"] == "invalid_argument"
    assert body["field"] == field


def test_malformed_tool_arguments_are_usage_errors(runner: CliRunner) -> None:
    result = runner.invoke(main, ["tool", "search_knowledge_base", "query"])
    assert result.exit_code == 2
    assert "is not key=value (a string) or key:=json (raw JSON)" in result.output
    result = runner.invoke(main, ["tool", "search_knowledge_base", "limit:=five"])
    assert result.exit_code == 2 and "must be JSON" in result.output
    result = runner.invoke(main, ["tool", "delete_everything"])
    assert result.exit_code == 2 and "delete_everything" in result.output


@pytest.mark.parametrize("where", ["knowledge_base_id", "article_id"])
def test_kbes_tool_refuses_a_padded_id_naming_the_blanks(
    runner: CliRunner, db_path: Path, where: str
) -> None:
    """A padded id: over MCP, tests/test_mcp_approval.py checks that `" KB "` is refused before
    the user is asked; `kbes tool`, which asks nobody, answers it the same way: `not_found`,
    nothing written, and a message that says the blanks are the problem."""
    kb = ok(runner, "kb", "create", "Support").strip()
    article = ok(runner, "article", "add", "--kb", kb, "--title", "T", "--content", "x",
                 "--publish").strip()  # fmt: skip
    read = json.loads(ok(runner, "tool", "read_knowledge_article", f"knowledge_base_id={kb}",
                         f"article_id={article}"))  # fmt: skip
    before = head(db_path)
    ids = {"knowledge_base_id": kb, "article_id": article}
    for padded in (f" {ids[where]} ", f"{ids[where]}\t"):
        arguments = {**ids, where: padded}
        result = runner.invoke(main, ["tool", "edit_knowledge_article",
                                      *(f"{k}={v}" for k, v in arguments.items()),
                                      "content=y", f"expected_version={read['updated_at']}",
                                      "idempotency_key=padded"])  # fmt: skip
        assert result.exit_code == 1
        refused = json.loads(result.stdout)
        assert refused["code"] == "not_found"
        assert repr(padded) in refused["message"], refused
        assert "blanks around it" in refused["message"]
    assert head(db_path) == before


def test_kbes_tool_serves_the_diff_tool_the_readme_lists(runner: CliRunner, db_path: Path) -> None:
    """A person at a shell may try the opt-in diff tool before serving it: the same answer an
    agent of `kbes serve --history-tools` gets."""
    import msgspec

    from kbes import open_store
    from kbes.tools import call_tool

    kb = ok(runner, "kb", "create", "Support").strip()
    add = ["article", "add", "--kb", kb, "--title", "VPN", "--content", "Use vpn.example."]
    article = ok(runner, *add, "--publish").strip()
    _, read = tool(
        runner, "read_knowledge_article", f"knowledge_base_id={kb}", f"article_id={article}"
    )
    ok(runner, "article", "save", "--kb", kb, article, "--content", "Use vpn2.example.")
    arguments = {
        "knowledge_base_id": kb,
        "article_id": article,
        "since_version": read["citation"]["updated_at"],
    }
    code, diff = tool(runner, "diff_knowledge_article", *(f"{k}={v}" for k, v in arguments.items()))
    assert code == 0
    assert diff["changed"] is True and "+Use vpn2.example." in diff["diff"]
    store = open_store(db_path)
    try:
        answer = call_tool(store, "diff_knowledge_article", arguments)
        assert diff == msgspec.to_builtins(answer)
    finally:
        store.close()


def test_serve_help_points_to_the_page_with_the_rotation_steps(runner: CliRunner) -> None:
    text = " ".join(ok(runner, "serve", "--help").split())
    assert "(rotation: see docs/operations.md)" in text and "README" not in text
    page = Path(__file__).resolve().parent.parent / "docs" / "operations.md"
    assert "**Rotating the keys**" in page.read_text(encoding="utf-8")


def test_rebuild_reproduces_the_views(runner: CliRunner, docs: Path, db_path: Path) -> None:
    from kbes import open_store

    kb = ok(runner, "kb", "create", "Support").strip()
    ok(runner, "import", str(docs), "--kb", kb, "--publish")
    store = open_store(db_path)
    store.catch_up()
    before = dump(store.views)
    store.close()
    out = ok(runner, "rebuild")
    # The knowledge base, 3 articles drafted and published, the folder's record (2 events).
    assert out.splitlines()[-1] == "rebuilt views from 9 events"
    store = open_store(db_path)
    assert dump(store.views) == before
    store.close()


def test_errors_name_the_fix(runner: CliRunner) -> None:
    ok(runner, "kb", "create", "Support")
    result = runner.invoke(main, ["article", "add", "--kb", "nope", "--title", "T"])
    assert result.exit_code == 2
    assert "--content TEXT or --file PATH" in result.output
    result = runner.invoke(
        main, ["article", "add", "--kb", "nope", "--title", "T", "--content", "x"]
    )
    assert result.exit_code == 1
    assert "not_found: no knowledge base nope" in result.output


def test_every_command_has_help(runner: CliRunner) -> None:
    def walk(group, path):
        for name, cmd in getattr(group, "commands", {}).items():
            yield [*path, name], cmd
            yield from walk(cmd, [*path, name])

    for path, cmd in walk(main, []):
        assert cmd.help, f"kbes {' '.join(path)} has no help text"
        assert runner.invoke(main, [*path, "--help"]).exit_code == 0


CREATING = ("kb", "create")
"""The one command that creates a database; every other one needs an existing database."""

SOME_ID = "00000000-0000-0000-0000-000000000001"
NEEDS_DB = {
    ("audit",): ["CITATIONS"],
    ("log", "export"): [],
    ("kb", "list"): [],
    ("article", "add"): ["--kb", SOME_ID, "--title", "T", "--content", "c"],
    ("article", "save"): ["--kb", SOME_ID, SOME_ID, "--content", "c"],
    ("article", "publish"): ["--kb", SOME_ID, SOME_ID],
    ("article", "unpublish"): ["--kb", SOME_ID, SOME_ID],
    ("article", "list"): ["--kb", SOME_ID],
    ("article", "show"): ["--kb", SOME_ID, SOME_ID],
    ("article", "history"): ["--kb", SOME_ID, SOME_ID],
    ("article", "diff"): ["--kb", SOME_ID, SOME_ID, "2026-11-30T09:00:00Z"],
    ("import",): ["FOLDER", "--kb", SOME_ID],
    ("events",): ["--kb", SOME_ID],
    ("tool",): ["read_knowledge_article", f"knowledge_base_id={SOME_ID}", f"article_id={SOME_ID}"],
    ("rebuild",): [],
    ("embed",): [],
    ("serve",): ["--grant-all"],
    ("token", "add"): ["bot", "--grant", SOME_ID, "--tokens", "TOKENS"],
}
"""Every command but `kb create`, with arguments that get it as far as opening the database."""


def db_commands() -> dict[tuple[str, ...], str]:
    """Every command taking the store's `--db` (KBES_DB), with its help text as printed."""
    found: dict[tuple[str, ...], str] = {}

    def walk(group, path):
        for name, cmd in getattr(group, "commands", {}).items():
            db = next((p for p in cmd.params if p.name == "db"), None)
            if db is not None and db.envvar == "KBES_DB":
                output = CliRunner().invoke(main, [*path, name, "--help"]).output
                found[(*path, name)] = " ".join(output.split())
            walk(cmd, [*path, name])

    walk(main, [])
    return found


def test_db_help_says_whether_a_missing_database_is_created() -> None:
    commands = db_commands()
    assert set(commands) == {CREATING, *NEEDS_DB}
    must_exist = "--db FILE The kbes database, which must exist (nothing is created)"
    created = "--db FILE The kbes database: a SQLite file (created if missing)"
    for path, text in commands.items():
        if path == CREATING:
            assert created in text, path
        else:
            assert must_exist in text, path
            assert "created if missing" not in text, path
        assert "postgresql://user:password@host:port/dbname" in text, path
        assert "[env var: KBES_DB; default: kbes.sqlite]" in text, path


@pytest.mark.parametrize("path", sorted(NEEDS_DB))
def test_commands_refuse_a_missing_database(tmp_path: Path, path: tuple[str, ...]) -> None:
    citations = tmp_path / "citations.jsonl"
    citations.write_text("")
    folder = tmp_path / "docs"
    folder.mkdir()
    tokens = tmp_path / "tokens.txt"
    given = {"CITATIONS": str(citations), "FOLDER": str(folder), "TOKENS": str(tokens)}
    args = [*path, *(given.get(arg, arg) for arg in NEEDS_DB[path])]
    for how in ("--db", "KBES_DB"):
        missing = tmp_path / f"missing-{how}.sqlite"
        if how == "--db":
            result = CliRunner().invoke(main, [*args, "--db", str(missing)])
        else:
            result = CliRunner().invoke(main, args, env={"KBES_DB": str(missing)})
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        assert f"no kbes database at {str(missing)!r}" in result.stderr
        assert "pass --db PATH (or set KBES_DB) to an existing database" in result.stderr
        if path == ("audit",):
            assert "or audit an exported log with --log EVENTS.jsonl" in result.stderr
        elif path != ("log", "export"):
            assert "or create one with `kbes kb create NAME`" in result.stderr
        assert not missing.exists()
    assert not tokens.exists()


def test_only_kb_create_creates_a_database(tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    result = CliRunner().invoke(main, ["kb", "create", "Support", "--db", str(new)])
    assert result.exit_code == 0, result.output
    assert new.is_file()
    result = CliRunner().invoke(main, ["kb", "list", "--db", str(new)])
    assert result.exit_code == 0 and "Support" in result.stdout


def test_a_database_of_another_kind_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n")
    cases = [
        (["kb", "create", "X", "--db", str(other)], "is a SQLite database without a kbes log"),
        (["kb", "list", "--db", str(other)], "is a SQLite database without a kbes log"),
        (["kb", "list", "--db", str(junk)], "file is not a database"),
        (["kb", "list", "--db", "mysql://u@h/x"], "a SQLite file or in PostgreSQL"),
        # A URL missing its colon is not taken for a file path, nor echoed with its password.
        (["kb", "create", "X", "--db", "postgresql//u:secret@h/db"], "is not a URL: write "
         "postgresql://user:password@host:port/dbname (a colon and two slashes"),
        (["kb", "list", "--db", "postgres:/u:secret@h/db"], "'postgres:/u:***@h/db' is not a URL"),
    ]  # fmt: skip
    for args, message in cases:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, args
        assert "secret" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.db", "other.db"]
    with sqlite3.connect(other) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert tables == {"notes"}
    assert junk.read_text() == "not a database\n"


class Dog(Aggregate):
    """An aggregate of another eventsourcing application."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_another_eventsourcing_applications_log_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    """Issue 35: its events table has kbes's name, so kbes took it for its own and added its
    tables to it. docs/cli.md promises a refusal."""
    other = tmp_path / "dogs.sqlite"
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(other)}
    application: Application[Any] = Application(env=env)
    application.save(Dog("Rex"))
    application.close()
    with sqlite3.connect(other) as db:
        before = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    for args in (["kb", "list"], ["kb", "create", "X"], ["article", "list", "--kb", "x"]):
        result = CliRunner().invoke(main, [*args, "--db", str(other)])
        assert result.exit_code == 2, (args, result.output)
        assert "holds another eventsourcing application's log, not kbes's" in result.stderr
    with sqlite3.connect(other) as db:
        assert {row[0] for row in db.execute("SELECT name FROM sqlite_master")} == before


def test_a_file_named_like_a_scheme_is_still_a_file(tmp_path: Path, monkeypatch) -> None:
    """Only a string with an `@` is taken for a mistyped URL; `postgres//kb.sqlite` is a path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "postgres").mkdir()
    for path in ("postgres//kb.sqlite", "postgresql:kb.sqlite"):
        created = CliRunner().invoke(main, ["kb", "create", "X", "--db", path])
        assert created.exit_code == 0, created.output
        assert created.stderr == f"created the kbes database {path}\n"
    assert (tmp_path / "postgres" / "kb.sqlite").is_file()
    assert (tmp_path / "postgresql:kb.sqlite").is_file()


def test_not_found_at_the_shell_points_at_kb_list(runner: CliRunner) -> None:
    ok(runner, "kb", "create", "Support")
    result = runner.invoke(main, ["article", "list", "--kb", SOME_ID])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: not_found: no knowledge base {SOME_ID} is available here; "
        "`kbes kb list` shows the knowledge bases in this database\n"
    )


@pytest.mark.slow
def test_only_kbes_serve_loads_the_mcp_sdk(tmp_path: Path) -> None:
    """The SDK is kbes's slowest import; `kbes --help`, `kbes serve --help` and a command that
    works on the store must not pay for it. Run in a fresh interpreter, since this one's tests
    may have imported it already."""
    import subprocess
    import sys

    db = tmp_path / "kb.sqlite"
    script = (
        "import sys\n"
        "from kbes.cli import main\n"
        "create = ['kb', 'create', 'X', '--db', sys.argv[1]]\n"
        "for args in (['--help'], ['serve', '--help'], create):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as e:\n"
        "        assert e.code == 0, (args, e.code)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
