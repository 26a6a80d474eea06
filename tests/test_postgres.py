"""kbes on PostgreSQL: the four tools, several real processes sharing one log (each with its own
local views), compare-and-swap and idempotency under a race, and a poll that stays O(page).

The tests start their own throwaway cluster (tests/pg_server.py); they skip, with the reason,
where PostgreSQL or psycopg is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from views_dump import dump

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")

import psycopg
from eventsourcing.persistence import IntegrityError
from pg_server import PgServer, running_pg
from psycopg import sql
from racers import RACERS, one_retried_edit, rival_writers, run_racers
from tool_calls import call, fails

from kbes import Article, KnowledgeBaseStore, open_store
from kbes.projections.views import Views
from kbes.store.postgres import PostgresFeedRecorder
from kbes.store.postgres_url import postgres_env
from kbes.store.settings import Settings
from kbes.store.sqlite import KbesSQLiteDatastore
from kbes.store.views_file import views_path

EVENTS_TABLE = "kbes_events"


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from running_pg()


@pytest.fixture
def pg_url(pg: PgServer) -> str:
    return pg.create_database()


@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path) -> Iterator[KnowledgeBaseStore]:
    store = open_store(pg_url, views=tmp_path / "views-main.sqlite")
    yield store
    store.close()


def pg_value(url: str, query: str, *params: Any) -> Any:
    """One value, read straight from PostgreSQL (not through kbes)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(query, params).fetchone()
        assert row is not None
        return row[0]


# The URL ----------------------------------------------------------------------------------------


def test_url_becomes_eventsourcing_postgres_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBES_VIEWS", raising=False)
    env = postgres_env("postgresql://kb%40ops:p%2Fss@db.internal:6543/kbes?pool_size=3")
    assert env["PERSISTENCE_MODULE"] == "kbes.store.postgres:KbesPostgresFactory"
    assert env["KBES_POSTGRES_HOST"] == env["POSTGRES_HOST"] == "db.internal"
    assert env["KBES_POSTGRES_PORT"] == "6543"
    assert env["KBES_POSTGRES_USER"] == "kb@ops"
    assert env["KBES_POSTGRES_PASSWORD"] == "p/ss"
    assert env["KBES_POSTGRES_DBNAME"] == "kbes"
    assert env["KBES_POSTGRES_POOL_SIZE"] == "3"
    assert "KBES_VIEWS" not in env
    views = Settings(views="/v.sqlite")
    assert postgres_env("postgres://u:p@h/d", views)["KBES_VIEWS"] == "/v.sqlite"
    assert postgres_env("postgres://u:p@h/d")["KBES_POSTGRES_PORT"] == "5432"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("postgresql://u:p@host:5432/", "names no database"),
        ("postgresql://u:p@host:99999/db", "bad port"),
        ("postgresql://u:p@host/db?sslmode=require", "unknown PostgreSQL URL parameter"),
        ("postgresql://u:p@host/db?pool_size=abc", "pool_size='abc' must be a whole number"),
        ("postgresql://u:p@host/db?connect_timeout=1.5", "whole number of seconds"),
    ],
)
def test_bad_url_is_a_clear_error(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words) as info:
        postgres_env(url)
    assert ":p@" not in str(info.value)  # the password is not echoed


# Creating the log: `kbes kb create` --------------------------------------------------------


def kbes_cli(*args: str, views: Path) -> Any:
    """`kbes ARGS...` in-process, with this test's views file."""
    from click.testing import CliRunner

    from kbes.cli import main

    return CliRunner().invoke(main, list(args), env={"KBES_VIEWS": str(views)})


def user_tables(url: str) -> int:
    return pg_value(
        url,
        "SELECT count(*) FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    )


def test_kb_create_makes_the_log_and_says_so_once(pg_url: str, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite"
    first = kbes_cli("kb", "create", "Support", "--db", pg_url, views=views)
    assert first.exit_code == 0, first.output
    shown = pg_url.replace(":postgres@", ":***@")
    assert first.stderr == f"created the kbes log in {shown}\n"
    second = kbes_cli("kb", "create", "Billing", "--db", pg_url, views=views)
    assert (second.exit_code, second.stderr) == (0, "")
    listed = kbes_cli("kb", "list", "--db", pg_url, views=views)
    assert [line.split()[1] for line in listed.stdout.splitlines()[2:]] == ["Support", "Billing"]


def test_article_show_and_history_read_the_shared_log(pg_url: str, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite"
    kb = kbes_cli("kb", "create", "Support", "--db", pg_url, views=views).stdout.strip()
    article = kbes_cli("article", "add", "--kb", kb, "--title", "Refunds", "--content", "5 days.",
                       "--publish", "--db", pg_url, views=views).stdout.strip()  # fmt: skip
    saved = kbes_cli("article", "save", "--kb", kb, article, "--content", "7 days.",
                     "--db", pg_url, views=views)  # fmt: skip
    assert saved.exit_code == 0, saved.output
    # Another process, with views of its own, reads the versions from the shared log.
    other = tmp_path / "other-views.sqlite"
    history = kbes_cli("article", "history", "--kb", kb, article, "--json", "--db", pg_url,
                       views=other)  # fmt: skip
    versions = json.loads(history.stdout)
    assert [v["type"] for v in versions] == ["drafted", "published", "saved"]
    then = kbes_cli("article", "show", "--kb", kb, article, "--json", "--at",
                    versions[1]["updated_at"], "--db", pg_url, views=other)  # fmt: skip
    assert json.loads(then.stdout)["content"] == "5 days."
    now = kbes_cli("article", "show", "--kb", kb, article, "--db", pg_url, views=other)
    assert now.stdout.endswith("\n\n7 days.\n")


def test_kb_create_refuses_at_once_what_it_could_not_finish(pg: PgServer, tmp_path: Path) -> None:
    """Each refusal names the fix, comes from one direct connection (not the pool's 30 s of
    retries), and leaves the database without a table."""
    views = tmp_path / "views.sqlite"
    owned_by_postgres = pg.create_database()
    with psycopg.connect(pg.admin_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS kbes_guest")
        conn.execute("CREATE ROLE kbes_guest LOGIN")  # PostgreSQL 15+: no CREATE on public
    with psycopg.connect(owned_by_postgres, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA other")  # the guest may use it, not create in it
        conn.execute("GRANT USAGE ON SCHEMA other TO kbes_guest")
        conn.execute("CREATE SCHEMA hidden")  # the guest may not even use it
    guest = owned_by_postgres.replace("postgres:postgres@", "kbes_guest:pw@")
    missing = owned_by_postgres.rsplit("/", 1)[0] + "/kbes_no_such_database"
    dbname = owned_by_postgres.rsplit("/", 1)[1]
    cases = [
        (guest, "role 'kbes_guest' may not create kbes's tables in schema 'public' of database "
         f"'{dbname}'; make the role the database's owner (createdb -O kbes_guest {dbname}, or "
         f"ALTER DATABASE {dbname} OWNER TO kbes_guest) or GRANT CREATE ON SCHEMA public TO "
         "kbes_guest\n"),
        # Owning the database grants nothing in another schema: only the GRANT is named.
        (guest + "?schema=other", "may not create kbes's tables in schema 'other' of database "
         f"'{dbname}'; GRANT CREATE ON SCHEMA other TO kbes_guest\n"),
        (guest + "?schema=hidden", "role 'kbes_guest' may not use schema 'hidden' of database "),
        (guest + "?schema=hidden", "; GRANT USAGE, CREATE ON SCHEMA hidden TO kbes_guest\n"),
        (owned_by_postgres + "?schema=nope", "has no schema 'nope' for kbes's log"),
        (owned_by_postgres + "?schema=Mixed", 'CREATE SCHEMA "Mixed" AUTHORIZATION postgres'),
        (missing, '"kbes_no_such_database" does not exist'),
    ]  # fmt: skip
    for url, words in cases:
        result = kbes_cli("kb", "create", "Support", "--db", url, views=views)
        assert result.exit_code == 2, result.output
        assert words in result.stderr
        assert ":pw@" not in result.stderr and ":postgres@" not in result.stderr
    assert user_tables(owned_by_postgres) == 0
    assert not views.exists()

    # Views already built from one log are refused before a second log is created beside them.
    made = kbes_cli("kb", "create", "First", "--db", pg.create_database(), views=views)
    assert made.exit_code == 0, made.output
    second = pg.create_database()
    refused = kbes_cli("kb", "create", "Second", "--db", second, views=views)
    assert refused.exit_code == 2
    assert f"KBES_VIEWS={views} holds the views of another event log" in refused.stderr
    assert user_tables(second) == 0


# The four tools -----------------------------------------------------------------------------


def test_four_tools_on_postgres(pg_store: KnowledgeBaseStore, pg_url: str, tmp_path: Path) -> None:
    store = pg_store
    kb = str(store.create_knowledge_base("Support"))
    reset = str(
        store.add_article(kb, "Reset a password", "Open Settings, then Security.", publish=True)
    )
    draft = str(store.add_article(kb, "Password policy draft", "Not yet public."))
    assert isinstance(store.log.recorder, PostgresFeedRecorder)
    assert (tmp_path / "views-main.sqlite").is_file()

    hits = call(store, "search_knowledge_base", knowledge_base_id=kb, query="password")["hits"]
    assert [h["article_id"] for h in hits] == [reset]  # drafts are invisible
    read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=reset)
    assert read["citation"] == hits[0]["citation"]
    assert (
        fails(store, "read_knowledge_article", knowledge_base_id=kb, article_id=draft)["code"]
        == "not_found"
    )

    edit = {
        "knowledge_base_id": kb,
        "article_id": reset,
        "content": "Open Settings, then Security, then Reset.",
        "expected_version": read["updated_at"],
        "idempotency_key": "fix-1",
    }
    first = call(store, "edit_knowledge_article", **edit)
    assert first["replay"] is False and first["updated_at"] > read["updated_at"]
    again = call(store, "edit_knowledge_article", **edit)
    assert again == {**first, "replay": True}
    stale = fails(store, "edit_knowledge_article", **{**edit, "idempotency_key": "fix-2"})
    assert stale["code"] == "version_conflict"
    assert stale["current_version"] == first["updated_at"]
    reused = fails(store, "edit_knowledge_article", **{**edit, "content": "something else"})
    assert reused["code"] == "idempotency_key_reused"

    store.save_article(kb, draft, content="Still a draft.")  # a draft's save: never in the feed
    store.unpublish_article(kb, reset)
    gone = fails(store, "read_knowledge_article", knowledge_base_id=kb, article_id=reset)
    assert gone["code"] == "gone"

    page = call(
        store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb, limit=2
    )
    assert [e["type"] for e in page["events"]] == ["published", "saved"]
    assert page["has_more"] is True
    assert page["events"][1]["updated_at"] == first["updated_at"]
    rest = call(
        store,
        "poll_resource_events",
        resource_type="knowledge_base",
        resource_id=kb,
        after_sequence=page["next_sequence"],
    )
    assert [e["type"] for e in rest["events"]] == ["unpublished"]
    assert rest["has_more"] is False
    head = store.head()
    assert rest["next_sequence"] == head
    caught_up = call(
        store,
        "poll_resource_events",
        resource_type="knowledge_base",
        resource_id=kb,
        after_sequence=rest["next_sequence"],
    )
    assert caught_up["events"] == [] and caught_up["next_sequence"] == head

    # The log and its feed index really are in PostgreSQL, committed together.
    assert pg_value(pg_url, f"SELECT count(*) FROM {EVENTS_TABLE}") == head
    assert (
        pg_value(pg_url, "SELECT count(*) FROM kb_feed WHERE knowledge_base_id = %s::uuid", kb) == 3
    )


def test_events_and_feed_rows_commit_together(pg_store: KnowledgeBaseStore, pg_url: str) -> None:
    """If the feed row cannot be written, the events roll back with it: both or neither."""
    store = pg_store
    kb = str(store.create_knowledge_base("Support"))
    article = str(store.add_article(kb, "Billing", "Invoices are monthly."))
    events = pg_value(pg_url, f"SELECT count(*) FROM {EVENTS_TABLE}")
    # Occupy the feed rows the next events will need, so only the feed insert fails. (A
    # person's publish would try again on a fresh load, and succeed with the next ids: the
    # application's own save, which an added article goes through, tries once.)
    next_id = pg_value(pg_url, f"SELECT last_value + 1 FROM {EVENTS_TABLE}_notification_id_seq")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for taken in (next_id, next_id + 1):
            conn.execute("INSERT INTO kb_feed VALUES (%s::uuid, %s)", (kb, taken))
    with pytest.raises(IntegrityError):
        store.add_article(kb, "Refunds", "Refunds take five days.", publish=True)
    assert pg_value(pg_url, f"SELECT count(*) FROM {EVENTS_TABLE}") == events
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM kb_feed")
    store.publish_article(kb, article)  # the aggregate cache was not poisoned by the failure
    assert pg_value(pg_url, f"SELECT count(*) FROM {EVENTS_TABLE}") == events + 1
    assert (
        pg_value(pg_url, "SELECT count(*) FROM kb_feed WHERE knowledge_base_id = %s::uuid", kb) == 1
    )


def test_bad_feed_entries_write_nothing(pg_store: KnowledgeBaseStore, pg_url: str) -> None:
    store = pg_store
    kb = store.create_knowledge_base("Support")
    before = pg_value(pg_url, f"SELECT count(*) FROM {EVENTS_TABLE}")
    article = Article.draft(kb, "Title", "Body", at=store.clock.now())
    stored = [store.log.mapper.to_stored_event(e) for e in article.collect_events()]
    with pytest.raises(ValueError, match="kb_feed has 2 entries for 1"):
        store.log.recorder.insert_events(stored, kb_feed=[kb.hex, kb.hex])
    with pytest.raises(ValueError):
        store.log.recorder.insert_events(stored, kb_feed=["not-a-uuid"])
    assert pg_value(pg_url, f"SELECT count(*) FROM {EVENTS_TABLE}") == before


# Several processes, one log ----------------------------------------------------------------


def kbes_tool(url: str, views: Path, name: str, *arguments: str) -> dict[str, Any]:
    """Run `kbes tool NAME ARGS` in its own process against the shared log, with its own
    views file."""
    script = Path(sys.executable).with_name("kbes")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from kbes.cli import main; main()"]
    )
    env = {**os.environ, "KBES_DB": url, "KBES_VIEWS": str(views)}
    done = subprocess.run(
        [*command, "tool", name, *arguments], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def test_two_processes_share_one_log_each_with_its_own_views(
    pg_store: KnowledgeBaseStore, pg_url: str, tmp_path: Path
) -> None:
    here = pg_store  # this process, views in views-main.sqlite
    there = tmp_path / "views-other.sqlite"  # another process's views
    kb = str(here.create_knowledge_base("Support"))
    article = str(here.add_article(kb, "Printer jams", "Open tray two.", publish=True))
    assert call(here, "search_knowledge_base", knowledge_base_id=kb, query="tray")["hits"]

    # The other process builds its own views from the shared log and sees this one's save.
    read = kbes_tool(
        pg_url, there, "read_knowledge_article", f"knowledge_base_id={kb}", f"article_id={article}"
    )
    assert read["content"] == "Open tray two."
    assert there.is_file()

    # A save here shows in the other process's next search (its views catch up incrementally).
    here.save_article(kb, article, content="Open tray two and remove the unicorn sticker.")
    hits = kbes_tool(
        pg_url, there, "search_knowledge_base", f"knowledge_base_id={kb}", "query=unicorn"
    )["hits"]
    assert [h["article_id"] for h in hits] == [article]
    current = hits[0]["updated_at"]

    # An edit by the other process shows in this process's next read and search.
    edited = kbes_tool(
        pg_url,
        there,
        "edit_knowledge_article",
        f"knowledge_base_id={kb}",
        f"article_id={article}",
        "content=Lift the zebra lever.",
        f"expected_version={current}",
        "idempotency_key=zebra-1",
    )
    assert edited["replay"] is False
    mine = call(here, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    assert mine["content"] == "Lift the zebra lever."
    assert mine["updated_at"] == edited["updated_at"]
    hits = call(here, "search_knowledge_base", knowledge_base_id=kb, query="zebra")["hits"]
    assert [h["updated_at"] for h in hits] == [edited["updated_at"]]
    # This process's cache is fast-forwarded from the log, so its next edit sees the new version.
    conflict = fails(
        here,
        "edit_knowledge_article",
        knowledge_base_id=kb,
        article_id=article,
        content="x",
        expected_version=current,
        idempotency_key="late",
    )
    assert conflict["code"] == "version_conflict"
    assert conflict["current_version"] == edited["updated_at"]

    # Two views files, built independently from the one log, agree row for row.
    kbes_tool(pg_url, there, "search_knowledge_base", f"knowledge_base_id={kb}", "query=zebra")
    here.catch_up()
    other = Views(KbesSQLiteDatastore(str(there)), application_name="kbes")
    try:
        assert other.database.max_tracking_id("kbes") == here.views.position
        assert dump(other) == dump(here.views)
    finally:
        other.datastore.close()


def test_processes_starting_together_on_a_fresh_database(pg: PgServer, tmp_path: Path) -> None:
    """Eight stores opened at once on an empty database all come up (eventsourcing's own
    table creation fails here with duplicate pg_type rows or "tuple concurrently updated")."""
    url = pg.create_database()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def start(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            open_store(url, views=tmp_path / f"views-{i}.sqlite").close()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert pg_value(url, "SELECT count(*) FROM kb_feed") == 0


def race_setup(url: str, tmp: Path) -> tuple[str, str, str, int]:
    store = open_store(url, views=tmp / "views-setup.sqlite")
    try:
        kb = str(store.create_knowledge_base("Race"))
        article = str(store.add_article(kb, "Contested", "original", publish=True))
        version = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
        return kb, article, version["updated_at"], store.head()
    finally:
        store.close()


def article_events(url: str, article: str) -> list[str]:
    """The article's stored events, read straight from PostgreSQL."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT topic FROM {EVENTS_TABLE} WHERE originator_id = %s::uuid "
            "ORDER BY originator_version",
            (article,),
        ).fetchall()
    return [topic.rsplit(".", 1)[-1] for (topic,) in rows]


def test_eight_processes_race_one_expected_version(pg_url: str, tmp_path: Path) -> None:
    kb, article, version, head = race_setup(pg_url, tmp_path)
    # Each racer opens the store (creating tables at the same time) with views of its own.
    outcomes = run_racers(pg_url, rival_writers(kb, article, version), views_dir=tmp_path)
    wins = [r for kind, r in outcomes if kind == "ok"]
    losses = [r for kind, r in outcomes if kind == "error"]
    assert len(wins) == 1
    assert len(losses) == RACERS - 1
    assert {e["code"] for e in losses} == {"version_conflict"}
    assert {e["current_version"] for e in losses} == {wins[0]["updated_at"]}
    assert article_events(pg_url, article) == ["Drafted", "Published", "Saved"]
    store = open_store(pg_url, views=tmp_path / "views-check.sqlite")
    try:
        assert store.head() == head + 2  # one Saved, one receipt
        final = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
        assert final["content"] in {f"writer {i}" for i in range(RACERS)}
        assert final["updated_at"] == wins[0]["updated_at"]
        page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb)
        assert [e["type"] for e in page["events"]] == ["published", "saved"]
    finally:
        store.close()


def test_one_idempotency_key_from_several_processes_writes_once(
    pg_url: str, tmp_path: Path
) -> None:
    kb, article, version, head = race_setup(pg_url, tmp_path)
    outcomes = run_racers(pg_url, one_retried_edit(kb, article, version), views_dir=tmp_path)
    assert [kind for kind, _ in outcomes] == ["ok"] * RACERS, outcomes
    replays = [r["replay"] for _, r in outcomes]
    assert replays.count(False) == 1 and replays.count(True) == RACERS - 1
    assert len({r["updated_at"] for _, r in outcomes}) == 1
    assert article_events(pg_url, article) == ["Drafted", "Published", "Saved"]
    assert pg_value(pg_url, f"SELECT max(notification_id) FROM {EVENTS_TABLE}") == head + 2


# Cost must not grow with the log -------------------------------------------------------------


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from plan_nodes(child)


def test_poll_reads_one_page_via_the_index(
    pg_store: KnowledgeBaseStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poll of a small knowledge base in a big log decodes only its page, and PostgreSQL
    fetches only that page's events: kb_feed's key, then the events' notification_id index."""
    store = pg_store
    big = str(store.create_knowledge_base("Big"))
    small = str(store.create_knowledge_base("Small"))
    for batch in range(4):
        store.add_articles(big, [(f"Big {batch}-{i}", "filler") for i in range(500)], publish=True)
        store.add_article(small, f"Small {batch}", "needle", publish=True)
    head = store.head()
    assert head > 4000
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE")

    decoded: list[int] = []
    to_domain_event = store.log.mapper.to_domain_event

    def counting(notification: Any) -> Any:
        decoded.append(notification.id)
        return to_domain_event(notification)

    monkeypatch.setattr(store.log.mapper, "to_domain_event", counting)
    # Every event through the mapper's full path, which sees each one's notification id.
    monkeypatch.setattr(store.log.mapper, "decode_stamp", lambda topic, state: None)
    page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=small)
    assert [e["type"] for e in page["events"]] == ["published"] * 4
    assert decoded == [e["sequence"] for e in page["events"]]
    assert page["next_sequence"] == head

    decoded.clear()
    middle = call(
        store,
        "poll_resource_events",
        resource_type="knowledge_base",
        resource_id=big,
        after_sequence=head // 2,
        limit=10,
    )
    assert len(middle["events"]) == 10 and middle["has_more"] is True
    assert len(decoded) == 10

    # The very statement select_feed_rows runs, explained with custom and with generic plans (a
    # prepared statement may switch to the latter): no scan of the log, one event per row.
    recorder = store.log.recorder
    assert isinstance(recorder, PostgresFeedRecorder)
    for kb, after, limit, returned in ((big, head // 2, 10, 10), (small, 0, 100, 4)):
        for mode in ("force_custom_plan", "force_generic_plan"):
            scans = explain_feed(pg_url, recorder, mode, kb, after, limit)
            assert scans and all(n["Node Type"] != "Seq Scan" for n in scans), scans
            fetched = sum(
                n["Actual Rows"] * n["Actual Loops"]
                for n in scans
                if n["Relation Name"] == EVENTS_TABLE and "Index Only" not in n["Node Type"]
            )
            assert fetched == returned, (mode, scans)


def explain_feed(
    url: str, recorder: PostgresFeedRecorder, mode: str, *params: Any
) -> list[dict[str, Any]]:
    """The scans of the feed statement's executed plan, under `plan_cache_mode = mode`."""
    with psycopg.connect(url, autocommit=True) as conn:
        text = recorder.select_feed_statement.as_string(conn)
        for n in range(1, 4):
            text = text.replace("%s", f"${n}", 1)
        conn.execute(f"SET plan_cache_mode = {mode}")
        conn.execute(f"PREPARE feed(uuid, bigint, bigint) AS {text}")
        execute = sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE feed({}, {}, {})")
        row = conn.execute(execute.format(*map(sql.Literal, params))).fetchone()
    assert row is not None
    return [
        node
        for node in plan_nodes(row[0][0]["Plan"])
        if node.get("Relation Name") in {EVENTS_TABLE, "kb_feed"}
    ]


# Where the views live -----------------------------------------------------------------------


def test_views_default_to_a_cache_file_per_log(
    pg: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KBES_VIEWS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first, second = pg.create_database(), pg.create_database()
    paths = []
    for url in (first, second, first):
        store = open_store(url)
        store.create_knowledge_base("Support")
        store.catch_up()
        paths.append(Path(store.views.datastore.pool.db_name))
        store.close()
    assert paths[0] == paths[2] != paths[1]
    assert all(p.parent == tmp_path / "cache" / "kbes" and p.is_file() for p in paths)
    assert paths[0].name.startswith("views-" + first.rsplit("/", 1)[-1])
    assert views_path("x", str(tmp_path / "mine.sqlite")) == tmp_path / "mine.sqlite"


def test_views_built_from_another_log_are_refused(pg: PgServer, tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite"
    store = open_store(pg.create_database(), views=views)
    store.close()
    with pytest.raises(OSError, match="built from another event log"):
        open_store(pg.create_database(), views=views)
