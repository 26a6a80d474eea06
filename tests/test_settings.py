"""A store's settings (kbes.store.settings): read once, when the store is opened, from the
environment and the flags; a bad value is an ordinary error naming its variable; each store
applies its own limits at every door and its tools advertise them; nothing is read at import."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import msgspec
import pytest

from kbes import open_store
from kbes.domain.errors import InvalidArgument
from kbes.domain.limits import DEFAULT_LIMITS, Limits
from kbes.log.importer import import_folder
from kbes.store.settings import BadSetting, Settings
from kbes.tools import TOOLS, call_tool
from kbes.tools.codes import KbesError
from kbes.tools.wire import EditRequest, edit_request, limited_edit_request

EDIT = TOOLS["edit_knowledge_article"]
SMALL = Limits(title_chars=5, content_chars=10, idempotency_key_chars=4)


def test_the_environment_gives_the_settings_and_flags_win() -> None:
    environ = {
        "KBES_DB": "a.sqlite",
        "KBES_SQLITE_SYNCHRONOUS": "normal",
        "KBES_LOCK_TIMEOUT": "7",
        "KBES_VIEWS": "views.sqlite",
        "KBES_MAX_TITLE_CHARS": "9",
        "PGUSER": "kb",
        "POSTGRES_POOL_SIZE": "3",
        "HOME": "/home/kb",
    }
    read = Settings.read(environ)
    assert (read.db, read.synchronous, read.lock_timeout, read.views) == (
        "a.sqlite",
        "NORMAL",
        7,
        "views.sqlite",
    )
    assert read.limits == Limits(title_chars=9)
    assert read.environ == {"PGUSER": "kb", "POSTGRES_POOL_SIZE": "3"}
    flagged = Settings.read(environ, db=Path("b.sqlite"), synchronous="off", views=Path("v"))
    assert (flagged.db, flagged.synchronous, flagged.views) == ("b.sqlite", "OFF", "v")
    # A variable a flag replaces is not read, so a bad one there does not matter.
    assert Settings.read({"KBES_SQLITE_SYNCHRONOUS": "bogus"}, synchronous="FULL").synchronous
    assert Settings.read({}) == Settings()


@pytest.mark.parametrize(
    ("variable", "value", "fix"),
    [
        ("KBES_MAX_CONTENT_CHARS", "abc", "give a whole number of characters, >= 1"),
        ("KBES_MAX_TITLE_CHARS", "0", "give a whole number of characters, >= 1"),
        ("KBES_MAX_IDEMPOTENCY_KEY_CHARS", "-3", "give a whole number of characters, >= 1"),
        ("KBES_LOCK_TIMEOUT", "0", "must be a whole number of seconds, at least 1"),
        ("KBES_LOCK_TIMEOUT", "soon", "must be a whole number of seconds, at least 1"),
        ("KBES_SQLITE_SYNCHRONOUS", "sometimes", "must be FULL, NORMAL, OFF or EXTRA"),
        ("KBES_KEYWORD_FOLDER_FROM", "-1", "must be a whole number of articles, 0 for every"),
        ("KBES_KEYWORD_FOLDER_FROM", "many", "must be a whole number of articles, 0 for every"),
    ],
)
def test_a_bad_value_is_an_ordinary_error_naming_its_variable(
    variable: str, value: str, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BadSetting) as info:
        Settings.read({variable: value})
    assert info.value.variable == variable
    assert variable in str(info.value) and fix in str(info.value)
    assert isinstance(info.value, ValueError)
    monkeypatch.setenv(variable, value)
    with pytest.raises(BadSetting):
        open_store(tmp_path / "kbes.sqlite")
    assert not (tmp_path / "kbes.sqlite").exists()


@pytest.mark.slow
def test_nothing_is_read_at_import() -> None:
    environ = {**os.environ, "KBES_MAX_CONTENT_CHARS": "lots", "KBES_LOCK_TIMEOUT": "0"}
    modules = "kbes, kbes.cli, kbes.server.mcp_server, kbes.tools, kbes.sims.day"
    imported = subprocess.run(
        [sys.executable, "-c", f"import {modules}"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )
    assert imported.returncode == 0, imported.stderr


def test_each_store_applies_and_advertises_its_own_limits(tmp_path: Path) -> None:
    tight = open_store(tmp_path / "tight.sqlite", settings=Settings(limits=SMALL))
    loose = open_store(tmp_path / "loose.sqlite")
    try:
        assert tight.limits == SMALL and loose.limits == DEFAULT_LIMITS
        kb = tight.create_knowledge_base("Support")

        def refused(field: str, call: Callable[..., object], *args: object, **kw: object) -> None:
            with pytest.raises(InvalidArgument) as info:
                call(*args, **kw)
            assert info.value.field == field

        refused("title", tight.add_article, kb, "x" * 6, "text")
        refused("content", tight.add_article, kb, "Title", "x" * 11)
        refused("content", tight.add_articles, kb, [("Title", "x" * 11)], publish=True)
        article = tight.add_article(kb, "Title", "text", publish=True)
        refused("content", tight.save_article, kb, article, content="x" * 11)
        refused("title", tight.save_article, kb, article, title="x" * 6)
        version = tight.read_article(kb, article).updated_at
        refused(
            "idempotency_key",
            tight.edit_article,
            kb,
            article,
            "new",
            expected_version=datetime.fromisoformat(version),
            idempotency_key="k" * 5,
        )
        folder = tmp_path / "docs"
        folder.mkdir()
        (folder / "long.md").write_text("# Long\n\n" + "x" * 11)
        skipped = import_folder(tight, str(kb), folder, publish=True).refused["long.md"]
        assert isinstance(skipped, InvalidArgument) and skipped.field == "content"
        arguments = {
            "knowledge_base_id": str(kb),
            "article_id": str(article),
            "content": "x" * 11,
            "expected_version": version,
            "idempotency_key": "k",
        }
        with pytest.raises(KbesError) as info:
            call_tool(tight, EDIT.name, arguments)
        assert info.value.to_dict()["field"] == "content"
        properties = EDIT.input_schema(tight.limits)["properties"]
        assert properties["content"]["maxLength"] == 10
        assert properties["title"]["maxLength"] == 5
        assert properties["idempotency_key"]["maxLength"] == 4

        # Another store of the same process keeps kbes's limits.
        other = loose.create_knowledge_base("Support")
        loose.add_article(other, "x" * 6, "x" * 11)
        assert EDIT.input_schema(loose.limits) == EDIT.input_schema()
        assert EDIT.input_schema()["properties"]["content"]["maxLength"] == 1_000_000
    finally:
        tight.close()
        loose.close()


def test_the_edit_request_under_other_limits_is_the_same_struct() -> None:
    assert edit_request(DEFAULT_LIMITS) is EditRequest
    # The two spellings of the limited fields (the class's and the builder's) agree.
    assert msgspec.json.schema(limited_edit_request(DEFAULT_LIMITS)) == msgspec.json.schema(
        EditRequest
    )
    small = edit_request(SMALL)
    assert small is edit_request(Limits(title_chars=5, content_chars=10, idempotency_key_chars=4))
    assert issubclass(small, EditRequest) and small.limits == SMALL
    assert small.__struct_fields__ == EditRequest.__struct_fields__


def test_the_postgres_connect_timeout_is_a_setting_read_once() -> None:
    """How long a call waits for a PostgreSQL connection before `unavailable`
    (tests/test_pg_outage.py shows it with a real server stopped)."""
    from kbes.store.postgres_url import postgres_env

    assert Settings.read({}).connect_timeout == 3
    both = {"POSTGRES_CONNECT_TIMEOUT": "7", "KBES_POSTGRES_CONNECT_TIMEOUT": "2"}
    assert Settings.read(both).connect_timeout == 2  # eventsourcing's order: KBES_ first
    settings = Settings.read({"POSTGRES_CONNECT_TIMEOUT": "7"})
    env = postgres_env("postgresql://u:p@h/db", settings)
    assert env["POSTGRES_CONNECT_TIMEOUT"] == env["KBES_POSTGRES_CONNECT_TIMEOUT"] == "7"
    env = postgres_env("postgresql://u:p@h/db?connect_timeout=4", settings)
    assert env["KBES_POSTGRES_CONNECT_TIMEOUT"] == "4"  # the URL's wins
    for bad in ("0", "abc", "1.5"):
        with pytest.raises(BadSetting) as refused:
            Settings.read({"POSTGRES_CONNECT_TIMEOUT": bad})
        assert refused.value.variable == "POSTGRES_CONNECT_TIMEOUT"
        assert "whole number of seconds, at least 1" in str(refused.value)
    with pytest.raises(ValueError, match="connect_timeout must be at least 1"):
        postgres_env("postgresql://u:p@h/db?connect_timeout=0")
