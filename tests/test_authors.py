"""Every event records its author, from what kbes knows for certain (issue 34): a person's
command (`--author`, else `KBES_AUTHOR`, else the OS user), a Python caller (what it passes),
an agent's door (the server: a token's name, a declared client; never the tool's arguments),
an approval. History, the event feed for people, the export and the audit show it, and events
written before it load with none (eventsourcing's class versioning: `upcast_v1_v2`).

The real processes (a person's `kbes` command, `kbes serve --http --tokens` and `kbes serve`
over stdio with the official MCP client) are in `test_authors_processes.py`."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import msgspec
import pytest
from click.testing import CliRunner, Result
from eventsourcing.persistence import StoredEvent
from mcp import Client
from mcp_harness import Elicitations, body, error
from mcp_types import Implementation

from kbes import KbesError, call_tool, open_store
from kbes.cli import main
from kbes.domain.article import Article
from kbes.domain.author import Author, client, os_user, person, person_running, token
from kbes.domain.errors import BlankAuthor, TitleCharacter, TooLong
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.log.export import LogSource, export_log
from kbes.log.history import History
from kbes.server.mcp_server import KbesMCP
from kbes.store.application import KnowledgeBaseStore
from kbes.store.mapper import MsgspecMapper

FIXTURE = Path(__file__).parent / "fixtures" / "log-f3b5e47"
KB = "4266fdba-60cb-4ff7-8ad7-5096c68e0f60"
REFUNDS = "aecdd287-7856-4c8f-8aed-f5db9fb89405"
SHIPPING = "19d6761e-4c32-4697-ab57-177c059e4846"

ALICE = {"kind": "person", "name": "alice", "how": "env", "approved": False}


def ok(runner: CliRunner, *args: str, **env: str) -> str:
    result = runner.invoke(main, list(args), env=env or None)
    assert result.exit_code == 0, result.output
    return result.stdout


def refused(runner: CliRunner, *args: str, **env: str) -> Result:
    result = runner.invoke(main, list(args), env=env or None)
    assert result.exit_code != 0, result.output
    return result


@pytest.fixture
def article(runner: CliRunner) -> tuple[str, str]:
    kb = ok(runner, "kb", "create", "Support", "--author", "carol").strip()
    aid = ok(
        runner, "article", "add", "--kb", kb, "--title", "Refunds", "--content", "5 days.",
        "--publish", KBES_AUTHOR="alice",
    ).strip()  # fmt: skip
    return kb, aid


def history(runner: CliRunner, kb: str, aid: str) -> list[dict[str, Any]]:
    versions: list[dict[str, Any]] = json.loads(
        ok(runner, "article", "history", "--kb", kb, aid, "--json")
    )
    return versions


def head(db: Path) -> int:
    store = open_store(db)
    try:
        return store.head()
    finally:
        store.close()


# The stored shape, and old logs -----------------------------------------------------------------


def test_the_author_is_stored_as_a_small_object_and_read_back_typed() -> None:
    kb = KnowledgeBase.create("Support", at=Article.draft(UUID(KB), "T", "c").updated_at)
    article = Article.draft(kb.id, "Title", "Body", by=person("alice"))
    article.publish(by=token("support-bot"))
    article.save("New body", by=client("claude-code", "2.1").approving())
    mapper = MsgspecMapper()
    stored = [mapper.to_stored_event(e) for e in article.collect_events()]
    assert b'"author":{"kind":"person","name":"alice","how":"api","approved":false}' in (
        stored[0].state
    )
    assert b'"class_version":2' in stored[0].state
    loaded = [mapper.to_domain_event(s) for s in stored]
    assert [e.author for e in loaded] == [
        Author("person", "alice", "api"),
        Author("token", "support-bot", "bearer"),
        Author("client", "claude-code 2.1", "declared", approved=True),
    ]
    # The fast path the views fold with reads it too.
    fields = mapper.decode_fields(stored[2].topic, stored[2].state)
    assert fields is not None and fields[1].author == loaded[2].author
    assert mapper.decode_author(stored[1].state) == Author("token", "support-bot", "bearer")


def test_a_version_1_event_is_upcast_to_no_author() -> None:
    mapper = MsgspecMapper()
    article = Article.draft(UUID(KB), "Title", "Body", by=person("alice"))
    stored = mapper.to_stored_event(article.collect_events()[0])
    state = json.loads(stored.state)
    del state["author"], state["class_version"]  # as kbes wrote it before issue 34
    old = StoredEvent(
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=json.dumps(state).encode(),
    )
    event = mapper.to_domain_event(old)
    assert event.author is None and event.title == "Title"
    assert mapper.decode_fields(old.topic, old.state) is None  # the full path upcasts it
    assert mapper.decode_author(old.state) is None
    assert Article.Drafted.upcast_v1_v2 is not None and Article.Drafted.class_version == 2


@pytest.fixture
def f3b5e47(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript((FIXTURE / "log.sql").read_text(encoding="utf-8"))
    states = [row[0] for row in sqlite3.connect(path).execute("SELECT state FROM stored_events")]
    assert states and not any(b"author" in s for s in states)  # the fixture is what it says
    return path


def test_a_log_written_by_f3b5e47_loads_with_no_authors_and_takes_new_ones(
    f3b5e47: Path, runner: CliRunner
) -> None:
    db = str(f3b5e47)
    versions = json.loads(
        ok(runner, "article", "history", "--kb", KB, REFUNDS, "--json", "--db", db)
    )
    assert [(v["type"], v["author"]) for v in versions] == [
        ("drafted", None), ("published", None), ("retitled", None), ("saved", None)
    ]  # fmt: skip
    table = ok(runner, "article", "history", "--kb", KB, REFUNDS, "--db", db).splitlines()
    assert table[2].endswith("drafted    2         (not recorded)")
    # The old log exports exactly as f3b5e47 exported it: no author key on its lines.
    assert ok(runner, "log", "export", "--db", db) == (FIXTURE / "export.jsonl").read_text()
    # Its export is an event source as it was: the same versions, none with an author.
    from_export = History(LogSource.from_path(str(FIXTURE / "export.jsonl"))).authored(REFUNDS)
    assert [(v.type, a) for v, a in from_export] == [(v["type"], None) for v in versions]
    # A person's save appends an event with its author beside the old ones.
    ok(runner, "article", "save", "--kb", KB, REFUNDS, "--content", "2 days.", "--db", db,
       KBES_AUTHOR="alice")  # fmt: skip
    versions = json.loads(
        ok(runner, "article", "history", "--kb", KB, REFUNDS, "--json", "--db", db)
    )
    assert [v["author"] for v in versions] == [None, None, None, None, ALICE]
    exported = [json.loads(line) for line in ok(runner, "log", "export", "--db", db).splitlines()]
    assert "author" not in exported[0] and exported[-1]["author"] == ALICE
    # Every class of event of that log still loads, the receipt and the folder's record too.
    store = open_store(f3b5e47)
    try:
        assert {type(e).__name__ for _, e in store.logged_events()} >= {
            "Created", "Drafted", "Published", "Saved", "Retitled", "Unpublished", "Recorded",
            "Started", "Mapped",
        }  # fmt: skip
        assert all(
            getattr(e, "author", "missing") is None for _, e in store.logged_events(0, limit=15)
        )
        assert store.get_article(SHIPPING).published is False
    finally:
        store.close()


def test_an_export_round_trips_the_author(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kbes.sqlite")
    try:
        kb = store.create_knowledge_base("Support", by=person("carol"))
        aid = store.add_article(kb, "Refunds", "5 days.", publish=True, by=person("alice"))
        edit = {"knowledge_base_id": str(kb), "article_id": str(aid), "content": "3 days.",
                "expected_version": History.of(store).versions(aid)[-1].updated_at,
                "idempotency_key": "k1"}  # fmt: skip
        call_tool(store, "edit_knowledge_article", edit, author=token("support-bot"))
        buffer = io.BytesIO()
        export_log(store, buffer)
        live = History.of(store).authored(aid)
    finally:
        store.close()
    exported = History(LogSource.from_lines(buffer.getvalue().splitlines())).authored(aid)
    assert exported == live
    assert [a for _, a in live] == [person("alice"), person("alice"), token("support-bot")]
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [line["author"]["name"] for line in lines] == [
        "carol",
        "alice",
        "alice",
        "support-bot",
        "support-bot",
    ]
    assert lines[3]["type"] == "saved" and lines[4]["type"] == "edit_recorded"


# Doors ------------------------------------------------------------------------------------------


def test_a_persons_author_comes_from_the_flag_else_the_variable_else_the_os_user(
    runner: CliRunner, article: tuple[str, str]
) -> None:
    kb, aid = article
    ok(runner, "article", "save", "--kb", kb, aid, "--content", "4 days.", "--author", "bob",
       KBES_AUTHOR="alice")  # fmt: skip
    ok(runner, "article", "save", "--kb", kb, aid, "--content", "3 days.")
    authors = [v["author"] for v in history(runner, kb, aid)]
    assert authors == [
        ALICE,
        ALICE,
        {"kind": "person", "name": "bob", "how": "flag", "approved": False},
        {"kind": "person", "name": os_user(), "how": "os", "approved": False},
    ]
    kb_line = json.loads(ok(runner, "log", "export").splitlines()[0])
    assert kb_line["author"] == {
        "kind": "person",
        "name": "carol",
        "how": "flag",
        "approved": False,
    }


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["--author", "  "], {}, "Invalid value for --author: --author is blank; give the name "
         "of the person making the change"),
        (["--author", "x" * 201], {}, "Invalid value for --author: --author is 201 characters; "
         "the limit is 200"),
        (["--author", "eve\nroot"], {}, "Invalid value for --author: --author has the control or "
         "format character U+000A (category Cc) at position 3"),
        ([], {"KBES_AUTHOR": ""}, "Invalid value for KBES_AUTHOR: KBES_AUTHOR is blank; give the "
         "name of the person making the change"),
    ],
)  # fmt: skip
def test_a_bad_author_is_refused_naming_where_it_came_from_and_writes_nothing(
    runner: CliRunner, article: tuple[str, str], db_path: Path, args: list[str],
    env: dict[str, str], said: str,
) -> None:  # fmt: skip
    kb, aid = article
    before = head(db_path)
    for command in (
        ["article", "save", "--kb", kb, aid, "--content", "x"],
        ["article", "unpublish", "--kb", kb, aid],
        ["kb", "create", "Other"],
        ["tool", "edit_knowledge_article", f"knowledge_base_id={kb}", f"article_id={aid}",
         "content=x", "expected_version=2026-11-30T09:00:00Z", "idempotency_key=k"],
    ):  # fmt: skip
        result = refused(runner, *command, *args, **env)
        assert result.exit_code == 2
        assert said in result.stderr
    assert head(db_path) == before


def test_an_import_records_the_person_running_it(runner: CliRunner, tmp_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Docs").strip()
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "faq.md").write_text("# FAQ\n\nAsk us.\n")
    ok(runner, "import", str(folder), "--kb", kb, "--publish", KBES_AUTHOR="dana")
    (folder / "faq.md").unlink()
    ok(runner, "import", str(folder), "--kb", kb, "--sync", "--author", "erin")
    lines = [json.loads(line) for line in ok(runner, "log", "export", "--kb", kb).splitlines()]
    assert [(line["type"], line["author"]["name"], line["author"]["how"]) for line in lines] == [
        ("knowledge_base_created", os_user(), "os"),
        ("drafted", "dana", "env"),
        ("published", "dana", "env"),
        ("folder_source_started", "dana", "env"),
        ("folder_mapped", "dana", "env"),
        ("unpublished", "erin", "flag"),
        ("folder_mapped", "erin", "flag"),
    ]


def test_the_library_checks_a_persons_name_as_the_cli_does() -> None:
    with pytest.raises(BlankAuthor):
        person(" ")
    with pytest.raises(TooLong):
        person("x" * 201)
    with pytest.raises(TitleCharacter):
        person_running(None, {"KBES_AUTHOR": "a\u2028b"})
    assert person_running(None, {"KBES_AUTHOR": " alice "}) == Author("person", "alice", "env")
    # A client's declared name is the client's choice: kept, made one line and bounded.
    assert client("bot\nroot", "1\u202e") == Author("client", "bot\ufffdroot 1\ufffd", "declared")
    assert client("x" * 300).name == "x" * 200
    assert client(None) == Author("client", "unknown client", "undeclared")


def test_an_agents_arguments_cannot_name_an_author(store: KnowledgeBaseStore) -> None:
    kb = store.create_knowledge_base("Support")
    aid = store.add_article(kb, "Refunds", "5 days.", publish=True, by=person("alice"))
    version = History.of(store).versions(aid)[-1].updated_at
    edit = {"knowledge_base_id": str(kb), "article_id": str(aid), "content": "3 days.",
            "expected_version": version, "idempotency_key": "k1"}  # fmt: skip
    for forged in ({"author": {"kind": "person", "name": "ceo"}}, {"author": "ceo"}):
        with pytest.raises(KbesError) as caught:
            call_tool(store, "edit_knowledge_article", {**edit, **forged}, author=token("bot"))
        assert caught.value.code == "invalid_argument"
    call_tool(store, "edit_knowledge_article", edit, author=token("bot"))
    assert History.of(store).authored(aid)[-1][1] == token("bot")


@pytest.mark.anyio
async def test_the_server_records_the_declared_client_and_the_approval(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kbes.sqlite")
    try:
        kb = str(store.create_knowledge_base("Support"))
        aid = str(store.add_article(kb, "Refunds", "5 days.", publish=True))
        user = Elicitations("accept")
        info = Implementation(name="agent-under-test", version="0.9")
        policies: tuple[tuple[Literal["ask", "allow"], str], ...] = (
            ("ask", "asked"),
            ("allow", "allowed"),
        )
        for edits, key in policies:
            server = KbesMCP(store, grants=frozenset({kb}), edits=edits)
            async with Client(server.server, elicitation_callback=user, client_info=info) as c:
                read = body(await c.call_tool(
                    "read_knowledge_article", {"knowledge_base_id": kb, "article_id": aid}
                ))  # fmt: skip
                edited = body(await c.call_tool("edit_knowledge_article", {
                    "knowledge_base_id": kb, "article_id": aid, "content": f"{key} days.",
                    "expected_version": read["updated_at"], "idempotency_key": key,
                }))  # fmt: skip
                assert edited["replay"] is False
        user.action = "decline"
        server = KbesMCP(store, grants=frozenset({kb}), edits="ask")
        async with Client(server.server, elicitation_callback=user, client_info=info) as c:
            declined = error(await c.call_tool("edit_knowledge_article", {
                "knowledge_base_id": kb, "article_id": aid, "content": "never.",
                "expected_version": edited["updated_at"], "idempotency_key": "declined",
            }))  # fmt: skip
            assert declined["code"] == "edit_declined"
        authors = [a for _, a in History.of(store).authored(aid)]
    finally:
        store.close()
    declared = Author("client", "agent-under-test 0.9", "declared")
    assert authors[2:] == [declared.approving(), declared]


# Shown where people look ----------------------------------------------------------------------


def test_history_and_the_event_feed_show_each_author_exactly(
    runner: CliRunner, article: tuple[str, str]
) -> None:
    kb, aid = article
    ok(runner, "article", "save", "--kb", kb, aid, "--content", "3 days.", "--author", "bob")
    versions = history(runner, kb, aid)
    rows = [(v["version"], v["updated_at"], v["type"], v["sequence"]) for v in versions]
    assert ok(runner, "article", "history", "--kb", kb, aid) == (
        "version  updated_at                   type       sequence  author\n"
        "-------  ---------------------------  ---------  --------  -------------------\n"
        + "".join(
            f"{n}        {at}  {kind:<9}  {seq}         {who}\n"
            for (n, at, kind, seq), who in zip(
                rows, ["alice (person, env)", "alice (person, env)", "bob (person, flag)"],
                strict=True,
            )
        )
    )  # fmt: skip
    published, saved = versions[1], versions[2]
    assert ok(runner, "events", "--kb", kb) == (
        "sequence  type       article_id" + " " * 28 + "updated_at" + " " * 19 + "author\n"
        "--------  ---------  " + "-" * 36 + "  " + "-" * 27 + "  " + "-" * 19 + "\n"
        f"{published['sequence']}         published  {aid}  {published['updated_at']}"
        "  alice (person, env)\n"
        f"{saved['sequence']}         saved      {aid}  {saved['updated_at']}  bob (person, flag)\n"
    )  # fmt: skip
    lines = [json.loads(line) for line in ok(runner, "events", "--kb", kb, "--json").splitlines()]
    assert lines == [
        {"sequence": v["sequence"], "type": v["type"], "article_id": aid,
         "updated_at": v["updated_at"], "author": v["author"]}
        for v in (published, saved)
    ]  # fmt: skip


def test_the_agents_poll_carries_no_author(store: KnowledgeBaseStore) -> None:
    """The four tools keep their contract: a poll's events are exactly the four keys."""
    kb = store.create_knowledge_base("Support")
    store.add_article(kb, "Refunds", "5 days.", publish=True, by=person("alice"))
    page = call_tool(
        store, "poll_resource_events", {"resource_type": "knowledge_base", "resource_id": str(kb)}
    )
    assert set(msgspec.to_builtins(page.events[0])) == {
        "sequence", "type", "article_id", "updated_at"
    }  # fmt: skip


def test_audit_names_who_changed_each_citation_event_by_event(
    runner: CliRunner, article: tuple[str, str], tmp_path: Path
) -> None:
    kb, aid = article
    cited = history(runner, kb, aid)[-1]["updated_at"]
    ok(runner, "article", "save", "--kb", kb, aid, "--content", "3 days.", "--author", "bob")
    ok(runner, "article", "unpublish", "--kb", kb, aid, KBES_AUTHOR="alice")
    citations = tmp_path / "citations.jsonl"
    citations.write_text(
        json.dumps({"knowledge_base_id": kb, "article_id": aid, "updated_at": cited}) + "\n"
    )
    versions = history(runner, kb, aid)
    saved, gone = versions[2]["updated_at"], versions[3]["updated_at"]
    table = ok(runner, "audit", str(citations))
    assert table.endswith(
        "\nWho changed them since they were cited:\n"
        f"line 1: gone, {aid}\n"
        "  updated_at                   type         author\n"
        "  ---------------------------  -----------  -------------------\n"
        f"  {saved}  saved        bob (person, flag)\n"
        f"  {gone}  unpublished  alice (person, env)\n"
        "1 citation: 0 current, 0 changed, 1 gone, 0 invalid\n"
    )
    report = json.loads(ok(runner, "audit", str(citations), "--json"))
    assert report["citations"][0]["changes"] == [
        {"updated_at": saved, "type": "saved",
         "author": {"kind": "person", "name": "bob", "how": "flag", "approved": False}},
        {"updated_at": gone, "type": "unpublished", "author": ALICE},
    ]  # fmt: skip
    # The exported log gives the same answer, authors included.
    events = tmp_path / "events.jsonl"
    events.write_text(ok(runner, "log", "export"))
    assert ok(runner, "audit", str(citations), "--log", str(events)) == table


# A person's compare-and-swap, and diffs of any two versions -------------------------------------


def test_a_stale_expected_version_is_refused_with_the_current_one_and_writes_nothing(
    runner: CliRunner, article: tuple[str, str], db_path: Path
) -> None:
    kb, aid = article
    read = history(runner, kb, aid)[-1]["updated_at"]
    saved = ok(runner, "article", "save", "--kb", kb, aid, "--content", "3 days.",
               "--expected-version", read).strip()  # fmt: skip
    before = head(db_path)
    for command in (
        ["article", "save", "--kb", kb, aid, "--content", "9 days."],
        ["article", "unpublish", "--kb", kb, aid],
        ["article", "publish", "--kb", kb, aid],
    ):
        result = refused(runner, *command, "--expected-version", read)
        assert result.exit_code == 1
        assert result.stderr == (
            f"Error: version_conflict: article {aid} changed since {read}: its current version "
            f"is {saved}; nothing was written. Read it again (kbes article show), re-apply your "
            f"change to the current content, and retry with --expected-version {saved}\n"
        )
    assert head(db_path) == before
    # The same instant with another offset is the same version, as for an agent's edit.
    plus_one = saved.replace("Z", "+00:00")
    ok(runner, "article", "unpublish", "--kb", kb, aid, "--expected-version", plus_one)
    bad = refused(runner, "article", "save", "--kb", kb, aid, "--content", "x",
                  "--expected-version", "yesterday")  # fmt: skip
    assert bad.exit_code == 2
    assert "Invalid value for '--expected-version': 'yesterday' is not an RFC 3339 time" in (
        bad.stderr
    )


def test_the_library_takes_a_persons_expected_version(store: KnowledgeBaseStore) -> None:
    kb = store.create_knowledge_base("Support")
    aid = store.add_article(kb, "Refunds", "5 days.", publish=True)
    read = store.get_article(aid).updated_at
    store.save_article(kb, aid, content="3 days.", expected_version=read)
    with pytest.raises(Exception) as stale:
        store.save_article(kb, aid, content="9 days.", expected_version=read)
    assert type(stale.value).__name__ == "ArticleChanged"
    assert store.get_article(aid).content == "3 days."


def test_article_diff_between_any_two_versions(runner: CliRunner, article: tuple[str, str]) -> None:
    kb, aid = article
    ok(runner, "article", "save", "--kb", kb, aid, "--content", "3 days.")
    ok(runner, "article", "save", "--kb", kb, aid, "--title", "Refund policy")
    v = [x["updated_at"] for x in history(runner, kb, aid)]
    assert ok(runner, "article", "diff", "--kb", kb, aid, v[1], v[2]) == (
        f"--- {aid}@{v[1]}\n+++ {aid}@{v[2]}\n@@ -1,3 +1,3 @@\n # Refunds\n \n-5 days.\n+3 days.\n"
    )
    assert ok(runner, "article", "diff", "--kb", kb, aid, v[1]) == (
        f"--- {aid}@{v[1]}\n+++ {aid}@{v[3]}\n@@ -1,3 +1,3 @@\n"
        "-# Refunds\n+# Refund policy\n \n-5 days.\n+3 days.\n"
    )
    assert ok(runner, "article", "diff", "--kb", kb, aid, v[2], v[2]) == ""
    garbled = refused(runner, "article", "diff", "--kb", kb, aid, "2026-11-30T09:00:00Z")
    assert garbled.exit_code == 2
    assert f"Invalid value for V1: article {aid} never had a version at" in garbled.stderr
    bad = refused(runner, "article", "diff", "--kb", kb, aid, v[1], "noon")
    assert bad.exit_code == 2 and "Invalid value for V2: 'noon' is not an RFC 3339 time" in (
        bad.stderr
    )


def test_article_diff_is_bounded_like_the_diff_tool(
    runner: CliRunner, store: KnowledgeBaseStore, kb: str
) -> None:
    from diff_texts import scattered  # texts built to defeat the matcher (test_diff_bounds)

    old, new = scattered(1000, 2)
    aid = str(store.add_article(kb, "Large", old, publish=True))
    since = store.get_article(aid).updated_at.isoformat()
    store.save_article(kb, aid, content=new)
    result = refused(runner, "article", "diff", "--kb", kb, aid, since)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: too_large_to_diff: diffing ")
