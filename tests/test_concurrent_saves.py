"""People's writes at the same time, on SQLite and PostgreSQL: last writer wins, nothing crashes.

`kbes article save` three at a time on one article made 18 of 45 exit 1 with an IntegrityError
traceback (UNIQUE constraint on originator_id, originator_version), and two `kbes import` runs
of one folder into one knowledge base failed the same way: each loaded the article, another
process wrote it first, and the version it meant to write was taken. Now the store tries the
write again on a fresh load (kbes.store.commands `last_writer_wins`), and where it still cannot
write, the command says so in one line. Real processes, real databases."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbes import open_store
from kbes.log.history import History

pytestmark = pytest.mark.slow

KBES = [sys.executable, "-c", "from kbes.cli import main; main()"]
ROUNDS = 15
AT_ONCE = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A SQLite file, or a fresh database on the suite's real PostgreSQL server."""
    if request.param == "sqlite":
        yield str(tmp_path / "kbes.sqlite")
        return
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
    from pg_server import running_pg

    for pg in running_pg():
        yield pg.create_database()


def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "KBES_VIEWS": str(tmp_path / "views.sqlite")}


def start(*args: str, environ: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*KBES, *args], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=180)
    return process.returncode, out, err


def test_three_saves_at_once_on_one_article_all_land(database: str, tmp_path: Path) -> None:
    environ = env(tmp_path)
    store = open_store(database, views=tmp_path / "views.sqlite")
    try:
        kb = str(store.create_knowledge_base("Support"))
        article = str(store.add_article(kb, "Refunds", "Refunds take five days.", publish=True))
    finally:
        store.close()
    failures = []
    for round_ in range(ROUNDS):
        savers = [
            start(
                "article",
                "save",
                "--kb",
                kb,
                article,
                "--content",
                f"Version {round_}.{n}",
                "--db",
                database,
                environ=environ,
            )
            for n in range(AT_ONCE)
        ]
        failures += [(code, err) for code, _, err in map(finish, savers) if code != 0]
    assert failures == []
    store = open_store(database, views=tmp_path / "views.sqlite")
    try:
        saved = [v for v in History.of(store).versions(article) if v.type == "saved"]
    finally:
        store.close()
    assert len(saved) == ROUNDS * AT_ONCE  # every save wrote its own version


def test_two_imports_of_one_folder_at_once_both_finish(database: str, tmp_path: Path) -> None:
    environ = env(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(300):
        (folder / f"note-{i:03d}.md").write_text(f"# Note {i}\n\nRefunds take {i} days.\n")
    for round_ in range(3):
        store = open_store(database, views=tmp_path / "views.sqlite")
        try:
            kb = str(store.create_knowledge_base(f"Support {round_}"))
        finally:
            store.close()
        imports = [
            start("import", str(folder), "--kb", kb, "--publish", "--db", database, environ=environ)
            for _ in range(2)
        ]
        results = [finish(p) for p in imports]
        assert [(code, err) for code, _, err in results] == [(0, "")] * 2
        # One wrote every article; the other, planned again on fresh loads, found them there.
        assert sorted(out.splitlines()[-1] for _, out, _ in results) == [
            "0 added, 0 saved, 0 published, 300 unchanged",
            "300 added, 0 saved, 300 published, 0 unchanged",
        ]


def test_a_save_that_keeps_losing_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the write still cannot land after every try, the person reads one line and
    nothing is written. Every try is made to lose (another writer always first)."""
    from click.testing import CliRunner
    from eventsourcing.persistence import IntegrityError

    from kbes.cli import main
    from kbes.store import commands
    from kbes.store.event_log import EventLog

    db = tmp_path / "kbes.sqlite"
    store = open_store(db)
    kb = str(store.create_knowledge_base("Support"))
    article = str(store.add_article(kb, "Refunds", "Refunds take five days.", publish=True))
    head = store.head()
    store.close()
    tries: list[int] = []

    def always_taken(self: EventLog, *objs: object, **kwargs: object) -> None:
        tries.append(1)
        raise IntegrityError("UNIQUE constraint failed: stored_events.originator_id")

    monkeypatch.setattr(EventLog, "save", always_taken)
    result = CliRunner().invoke(
        main, ["article", "save", "--kb", kb, article, "--content", "New", "--db", str(db)]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: busy: another process wrote article {article} first each of the "
        f"{commands.WRITE_ATTEMPTS} times this command tried (each time on the article as it "
        "then stood); nothing was written, run the command again\n"
    )
    assert len(tries) == commands.WRITE_ATTEMPTS
    monkeypatch.undo()
    store = open_store(db)
    assert store.head() == head
    store.close()
