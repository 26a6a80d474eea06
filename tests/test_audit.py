"""`kbes audit` through the CLI, on one real history: saves that do and do not touch quoted
passages, a retitle, unpublishes and republishes, garbled citations; then the same answers from
an exported log, and `--as-of` before the changes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from click.testing import CliRunner, Result

from kbes import SimulatedClock, open_store
from kbes.cli import main
from kbes.tools import TOOLS
from kbes.tools.wire import ArticleResult, ReadRequest

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
QUOTE_KEPT = "Open Settings, choose Security, click Reset password."
QUOTE_LOST = "Connect to vpn.example.com on port 443."
QUOTE_RETITLED = "Printers are on the second floor."


@dataclass
class World:
    db: str
    """A SQLite file's path or a postgresql:// URL, as `--db` takes it."""
    citations: Path
    kb: str
    other_kb: str
    ids: dict[str, str]
    cited: dict[str, str]
    """Name -> the updated_at the citation carries."""
    times: dict[str, str]
    """Labelled instants of the changes."""


def stamp(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def shift(updated_at: str, microseconds: int) -> str:
    instant = datetime.fromisoformat(updated_at.replace("Z", "+00:00"))
    return stamp(instant + timedelta(microseconds=microseconds))


def build(folder: Path, db: str | None = None, *, views: Path | None = None) -> World:
    """A knowledge base through a simulated morning, and a citations file given at 09:00.

    `db` is the store to build it in (default: a new SQLite file in `folder`); a
    postgresql:// URL keeps this process's views in `views`. tests/test_audit_postgres.py
    builds the same history in PostgreSQL and runs this module's tests against it."""
    clock = SimulatedClock(START)
    db = db or str(folder / "kbes.sqlite")
    store = open_store(db, clock=clock, views=views)
    kb = store.create_knowledge_base("Support")
    other_kb = store.create_knowledge_base("Billing")
    texts = {
        "kept": ("Reset password", f"Intro.\n\n{QUOTE_KEPT}\n\nIf that fails, call the desk."),
        "lost": ("VPN", f"Install the client.\n\n{QUOTE_LOST}\n\nAsk IT for a token."),
        "retitled": ("Printers", f"{QUOTE_RETITLED}\n\nUse the queue named PRN1."),
        "twice": ("Wi-Fi", "Join the network Corp.\n\nThe password is on the badge."),
        "unpublished": ("Fax", "Faxes go through the portal."),
        "back_changed": ("Parking", "Park on level 2."),
        "back_same": ("Lunch", "The canteen opens at noon."),
        "untouched": ("Holidays", "Book leave in the HR system."),
    }
    ids = {
        name: str(store.add_article(kb, title, content, publish=True))
        for name, (title, content) in texts.items()
    }
    ids["billing"] = str(
        store.add_article(other_kb, "Invoices", "Invoices are emailed monthly.", publish=True)
    )
    ids["draft"] = str(store.add_article(kb, "Draft", "Not yet."))

    cited: dict[str, str] = {}
    lines: list[dict[str, Any]] = []
    for name in texts:
        read = TOOLS["read_knowledge_article"].run(
            store, ReadRequest(knowledge_base_id=str(kb), article_id=ids[name]), None
        )
        assert isinstance(read, ArticleResult)
        citation = read.citation
        cited[name] = citation.updated_at
        line = {
            "knowledge_base_id": citation.knowledge_base_id,
            "article_id": citation.article_id,
            "updated_at": citation.updated_at,
            "answer": f"answer-{name}",  # extra keys are allowed and ignored
        }
        quote = {"kept": QUOTE_KEPT, "lost": QUOTE_LOST, "retitled": QUOTE_RETITLED}.get(name)
        if quote:
            line["quote"] = quote
        lines.append(line)
    # Garbled and invented citations.
    lines += [
        {**lines[0], "updated_at": shift(cited["kept"], +1), "quote": QUOTE_KEPT},
        {**lines[0], "updated_at": shift(cited["kept"], -1), "quote": QUOTE_KEPT},
        {**lines[7], "article_id": str(uuid4())},
        {**lines[7], "knowledge_base_id": str(uuid4())},
        {**lines[7], "article_id": ids["billing"]},
        {**lines[7], "updated_at": "yesterday"},
    ]

    times: dict[str, str] = {}

    def at(label: str, minutes: int) -> None:
        clock.set(START + timedelta(minutes=minutes))
        times[label] = stamp(clock.now())

    at("kept", 60)
    store.save_article(
        kb, ids["kept"], content=f"Intro, now longer.\n\n{QUOTE_KEPT}\n\nIf that fails, call us."
    )
    at("lost", 70)
    store.save_article(
        kb,
        ids["lost"],
        content="Install the client.\n\nConnect to vpn2.example.com on port 443.\n\nAsk IT.",
    )
    at("retitled", 80)
    store.save_article(kb, ids["retitled"], title="Printers and scanners")
    at("twice_1", 90)
    store.save_article(kb, ids["twice"], content="Join the network Corp-5G.\n\nThe password ...")
    at("unpublished", 100)
    store.unpublish_article(kb, ids["unpublished"])
    at("back_changed_off", 110)
    store.unpublish_article(kb, ids["back_changed"])
    at("back_changed_on", 120)
    store.publish_article(kb, ids["back_changed"])
    at("back_changed_save", 130)
    store.save_article(kb, ids["back_changed"], content="Park on level 3.")
    at("back_same_off", 140)
    store.unpublish_article(kb, ids["back_same"])
    at("twice_2", 150)
    store.save_article(kb, ids["twice"], content="Join Corp-5G.\n\nAsk the desk.")
    at("back_same_on", 160)
    store.publish_article(kb, ids["back_same"])
    store.close()

    citations = folder / "citations.jsonl"
    citations.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return World(db, citations, str(kb), str(other_kb), ids, cited, times)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build(tmp_path_factory.mktemp("audit"))


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)


def audit_json(world: World, *args: str) -> dict[str, Any]:
    result = run("audit", str(world.citations), *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_line(report: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {entry["line"]: entry for entry in report["citations"]}


NULLS = (
    "cited_title",
    "current_title",
    "current_updated_at",
    "saves",
    "first_save_at",
    "retitled",
    "quote_in_cited",
    "quote_intact",
    "unpublished_at",
    "republished_at",
    "now",
    "diff",
)


def test_every_classification_field(world: World) -> None:
    report = audit_json(world, "--db", world.db)
    lines = by_line(report)
    assert report["as_of"] is None
    assert report["summary"] == {
        "current": 1,
        "changed": 4,
        "gone": 3,
        "invalid": 6,
        "total": 14,
    }

    kept = lines[1]
    assert kept["class"] == "changed"
    assert kept["article_id"] == world.ids["kept"]
    assert kept["updated_at"] == world.cited["kept"]
    assert kept["quote"] == QUOTE_KEPT
    assert kept["saves"] == 1
    assert kept["first_save_at"] == world.times["kept"]
    assert kept["current_updated_at"] == world.times["kept"]
    assert kept["retitled"] is False
    assert kept["cited_title"] == kept["current_title"] == "Reset password"
    assert kept["quote_in_cited"] is True
    assert kept["quote_intact"] is True
    assert kept["unpublished_at"] is None and kept["republished_at"] is None
    assert kept["now"] is None
    assert kept["diff"].startswith(
        f"--- {world.ids['kept']}@{world.cited['kept']}\n"
        f"+++ {world.ids['kept']}@{world.times['kept']}\n"
    )
    assert "-Intro.\n+Intro, now longer.\n" in kept["diff"]
    assert f" {QUOTE_KEPT}\n" in kept["diff"]  # unchanged context, not a change
    assert "1 save since" in kept["reason"] and "quote intact" in kept["reason"]

    lost = lines[2]
    assert lost["class"] == "changed"
    assert lost["saves"] == 1 and lost["first_save_at"] == world.times["lost"]
    assert lost["retitled"] is False
    assert lost["quote_in_cited"] is True
    assert lost["quote_intact"] is False
    assert f"-{QUOTE_LOST}\n" in lost["diff"]
    assert "quote changed" in lost["reason"]

    retitled = lines[3]
    assert retitled["class"] == "changed"
    assert retitled["saves"] == 1
    assert retitled["retitled"] is True
    assert retitled["cited_title"] == "Printers"
    assert retitled["current_title"] == "Printers and scanners"
    assert retitled["quote_intact"] is True
    assert "-# Printers\n+# Printers and scanners\n" in retitled["diff"]

    twice = lines[4]
    assert twice["class"] == "changed"
    assert twice["saves"] == 2
    assert twice["first_save_at"] == world.times["twice_1"]
    assert twice["current_updated_at"] == world.times["twice_2"]
    assert twice["quote"] is None and twice["quote_intact"] is None

    unpublished = lines[5]
    assert unpublished["class"] == "gone"
    assert unpublished["unpublished_at"] == world.times["unpublished"]
    assert unpublished["now"] == "unpublished"
    assert unpublished["republished_at"] is None
    assert unpublished["saves"] == 0
    assert unpublished["diff"] is None
    assert unpublished["current_updated_at"] == world.times["unpublished"]

    back_changed = lines[6]
    assert back_changed["class"] == "gone"
    assert back_changed["unpublished_at"] == world.times["back_changed_off"]
    assert back_changed["republished_at"] == world.times["back_changed_on"]
    assert back_changed["now"] == "changed"
    assert back_changed["saves"] == 1
    assert back_changed["first_save_at"] == world.times["back_changed_save"]
    assert "-Park on level 2.\n+Park on level 3.\n" in back_changed["diff"]

    back_same = lines[7]
    assert back_same["class"] == "gone"
    assert back_same["unpublished_at"] == world.times["back_same_off"]
    assert back_same["republished_at"] == world.times["back_same_on"]
    assert back_same["now"] == "current"
    assert back_same["saves"] == 0
    assert back_same["diff"] == ""

    untouched = lines[8]
    assert untouched["class"] == "current"
    assert untouched["saves"] == 0
    assert untouched["current_updated_at"] == world.cited["untouched"]
    assert untouched["diff"] is None and untouched["first_save_at"] is None

    for number in range(9, 15):
        entry = lines[number]
        assert entry["class"] == "invalid", entry
        assert all(entry[key] is None for key in NULLS), entry
    assert "never had a version at" in lines[9]["reason"]
    assert "not published" in lines[10]["reason"]  # one µs earlier is the draft's version
    assert "never existed" in lines[11]["reason"]
    assert f"knowledge base {lines[12]['knowledge_base_id']} never existed" in lines[12]["reason"]
    assert f"never existed in knowledge base {world.kb}" in lines[13]["reason"]
    assert "not an RFC 3339 time" in lines[14]["reason"]


def test_one_microsecond_off_is_invalid_not_changed(world: World) -> None:
    lines = by_line(audit_json(world, "--db", world.db))
    # The citation of the same article with its exact updated_at is `changed`; altered by one
    # microsecond either way it names no published version, so it is `invalid`.
    assert lines[1]["class"] == "changed"
    assert lines[9]["updated_at"] == shift(world.cited["kept"], +1)
    assert lines[9]["class"] == "invalid"
    assert lines[10]["updated_at"] == shift(world.cited["kept"], -1)
    assert lines[10]["class"] == "invalid"


def test_as_of_before_the_changes_reports_them_current(world: World) -> None:
    report = audit_json(world, "--db", world.db, "--as-of", "2026-11-30T09:30:00Z")
    assert report["as_of"] == "2026-11-30T09:30:00.000000Z"
    lines = by_line(report)
    for number in range(1, 9):
        assert lines[number]["class"] == "current", lines[number]
        assert lines[number]["saves"] == 0
        assert lines[number]["current_updated_at"] == lines[number]["updated_at"]
    assert lines[2]["quote_intact"] is True  # the quoted passage was still there at 09:30
    assert report["summary"]["current"] == 8 and report["summary"]["invalid"] == 6


def test_as_of_between_changes_replays_only_that_far(world: World) -> None:
    # 10:55: "twice" has had its first save only; "back_changed" is unpublished, not yet back.
    lines = by_line(audit_json(world, "--db", world.db, "--as-of", "2026-11-30T10:55:00Z"))
    assert lines[4]["class"] == "changed" and lines[4]["saves"] == 1
    assert lines[4]["current_updated_at"] == world.times["twice_1"]
    assert lines[6]["class"] == "gone" and lines[6]["now"] == "unpublished"
    assert lines[7]["class"] == "current"  # back_same is unpublished only at 11:20


def test_as_of_before_the_citation_was_given_says_not_yet_not_invalid(world: World) -> None:
    # Issue 34: at 08:00 no citation had been given yet. The eight the whole log holds are
    # `not_yet`, their own class; the six made up or garbled stay `invalid`.
    report = audit_json(world, "--db", world.db, "--as-of", "2026-11-30T08:00:00Z")
    lines = by_line(report)
    assert [lines[n]["class"] for n in range(1, 15)] == ["not_yet"] * 8 + ["invalid"] * 6
    assert lines[1]["reason"] == (
        f"not yet given by 2026-11-30T08:00:00.000000Z: the cited version was written at "
        f"{lines[1]['updated_at']}"
    )
    assert report["summary"] == {
        "current": 0,
        "changed": 0,
        "gone": 0,
        "invalid": 6,
        "not_yet": 8,
        "total": 14,
    }
    table = run("audit", str(world.citations), "--db", world.db, "--as-of", "2026-11-30T08:00:00Z")
    assert table.stdout.splitlines()[-1] == (
        "14 citations as of 2026-11-30T08:00:00.000000Z: 0 current, 0 changed, 0 gone, "
        "6 invalid, 8 not_yet"
    )
    failed = run(
        "audit", str(world.citations), "--db", world.db, "--as-of", "2026-11-30T08:00:00Z",
        "--fail-on", "not_yet",
    )  # fmt: skip
    assert failed.exit_code == 1
    assert "8 citations in --fail-on classes (not_yet)" in failed.stderr


def test_table_summary_and_diff_on_the_terminal(world: World) -> None:
    result = run("audit", str(world.citations), "--db", world.db)
    assert result.exit_code == 0
    out = result.stdout.splitlines()
    assert out[0].split() == ["line", "class", "article_id", "updated_at", "details"]
    assert out[-1] == "14 citations: 1 current, 4 changed, 3 gone, 6 invalid"
    assert "@@ " not in result.stdout
    with_diff = run("audit", str(world.citations), "--db", world.db, "--diff").stdout
    assert f"--- {world.ids['lost']}@{world.cited['lost']}" in with_diff
    assert f"-{QUOTE_LOST}" in with_diff
    assert with_diff.splitlines()[-1] == out[-1]


def test_fail_on_sets_the_exit_code(world: World) -> None:
    citations, db = str(world.citations), world.db
    failed = run("audit", citations, "--db", db, "--fail-on", "gone,invalid")
    assert failed.exit_code == 1
    assert "9 citations in --fail-on classes (gone,invalid)" in failed.stderr
    current_only = world.citations.parent / "current.jsonl"
    current_only.write_text(world.citations.read_text().splitlines()[7] + "\n")
    passed = run("audit", str(current_only), "--db", db, "--fail-on", "changed,gone,invalid")
    assert passed.exit_code == 0
    assert passed.stdout.splitlines()[-1] == "1 citation: 1 current, 0 changed, 0 gone, 0 invalid"
    # Repeated flags add up; --json keeps its output and still fails.
    both = run(
        "audit", citations, "--db", db, "--fail-on", "changed", "--fail-on", "gone", "--json"
    )
    assert both.exit_code == 1
    assert json.loads(both.stdout)["summary"]["total"] == 14


def test_log_export_gives_output_identical_to_the_database(world: World) -> None:
    events = world.citations.parent / "events.jsonl"
    exported = run("log", "export", "--db", world.db)
    assert exported.exit_code == 0, exported.output
    events.write_text(exported.stdout)
    for extra in ([], ["--json"], ["--diff"], ["--as-of", "2026-11-30T10:55:00Z", "--json"]):
        from_db = run("audit", str(world.citations), "--db", world.db, *extra)
        from_log = run("audit", str(world.citations), "--log", str(events), *extra)
        assert from_db.exit_code == from_log.exit_code == 0
        assert from_log.stdout == from_db.stdout, extra
    # Exit codes agree too.
    fail_db = run("audit", str(world.citations), "--db", world.db, "--fail-on", "gone")
    fail_log = run("audit", str(world.citations), "--log", str(events), "--fail-on", "gone")
    assert (fail_db.exit_code, fail_db.stdout) == (fail_log.exit_code, fail_log.stdout)
    assert fail_db.exit_code == 1


def test_citations_from_stdin(world: World) -> None:
    result = run("audit", "-", "--db", world.db, stdin=world.citations.read_text())
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1].startswith("14 citations:")


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["--fail-on", "changed,stale"], None, "--fail-on: unknown class 'stale'"),
        (["--fail-on", ","], None, "--fail-on needs at least one class"),
        (["--as-of", "noon"], None, "--as-of 'noon' is not an RFC 3339 time"),
        (["--as-of", "2026-11-30T09:00:00"], None, "--as-of '2026-11-30T09:00:00'"),
        (
            [],
            '{"knowledge_base_id": "k", "article_id": "a", "updated_at": "t"}\nnot json\n',
            "line 2",
        ),
        ([], '{"knowledge_base_id": "k", "article_id": "a"}\n', "missing required field"),
        ([], '{"knowledge_base_id": 1, "article_id": "a", "updated_at": "t"}\n', "line 1"),
        (
            [],
            '{"knowledge_base_id": "k", "article_id": "a", "updated_at": "t", "quote": ""}\n',
            '"quote" is empty',
        ),
    ],
)
def test_bad_input_is_a_clear_error(
    world: World, tmp_path: Path, args: list[str], content: str | None, message: str
) -> None:
    citations = world.citations
    if content is not None:
        citations = tmp_path / "bad.jsonl"
        citations.write_text(content)
    result = run("audit", str(citations), "--db", world.db, *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_missing_database_is_an_error_and_creates_nothing(world: World, tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    result = run("audit", str(world.citations), "--db", str(missing))
    assert result.exit_code == 2
    assert "no kbes database at" in result.stderr
    assert not missing.exists()


def test_db_and_log_together_is_an_error(world: World, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("")
    result = run("audit", str(world.citations), "--db", world.db, "--log", str(events))
    assert result.exit_code == 2
    assert "either --db or --log" in result.stderr
