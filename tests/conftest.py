"""Shared fixtures: every test gets a real SQLite file of its own. And the two tiers: a test
that starts a process or a server is marked `slow`; `pytest -m "not slow"` runs the rest, in
this process, and refuses (fails) any unmarked test that starts one."""

from __future__ import annotations

import multiprocessing.process
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from kbes import KnowledgeBaseStore, open_store


@pytest.fixture
def anyio_backend() -> str:
    """The MCP tests' event loop (`pytest.mark.anyio`): asyncio, as the SDK's own tests use."""
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "kbes.sqlite"


@pytest.fixture
def store(db_path: Path) -> Iterator[KnowledgeBaseStore]:
    s = open_store(db_path)
    yield s
    s.close()


@pytest.fixture
def kb(store: KnowledgeBaseStore) -> str:
    return str(store.create_knowledge_base("Support"))


@pytest.fixture(autouse=True)
def no_author_from_the_developer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own KBES_AUTHOR never reaches a test: each test that wants one sets it."""
    monkeypatch.delenv("KBES_AUTHOR", raising=False)


@pytest.fixture
def every_index_in_a_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """For the tests of the keyword index's folders: even a small knowledge base's index has
    one (`KBES_KEYWORD_FOLDER_FROM=0`), in this process and the ones it starts."""
    monkeypatch.setenv("KBES_KEYWORD_FOLDER_FROM", "0")


@pytest.fixture
def runner(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A CLI runner whose commands use this test's database (through KBES_DB)."""
    monkeypatch.setenv("KBES_DB", str(db_path))
    return CliRunner()


# Hypothesis: `ci` (the default) keeps the property suites to a bounded number of examples per
# test; `long` is the documented deeper run (HYPOTHESIS_PROFILE=long, see docs/security.md).
# Tests that fix their own max_examples keep it. `ci` is derandomized: every CI run draws the
# same examples, so a red run is reproducible and a green one is not luck; `long` explores.
settings.register_profile(
    "ci",
    max_examples=50,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "long",
    max_examples=2_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# The fast tier ---------------------------------------------------------------------------------

STARTS = {
    "subprocess.Popen": "starts a process",
    "os.fork": "forks",
    "os.forkpty": "forks",
    "os.posix_spawn": "starts a process",
    "os.spawn": "starts a process",
    "os.system": "starts a shell",
    "os.exec": "replaces this process",
    "socket.bind": "binds a socket (a server)",
}
"""Python's audit events for starting a process or a server (multiprocessing's spawn raises
none, so `BaseProcess.start` is watched instead)."""

SERVER_FIXTURES = ("pg",)
"""Fixtures that start a server: a test that uses one is slow without a mark of its own (the
PostgreSQL tests' `pg`, tests/pg_server.py, starts a throwaway cluster)."""


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if uses.intersection(SERVER_FIXTURES) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


_unmarked: list[str] = []
"""While an unmarked test is set up and runs: its id, then what it started."""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _unmarked and event in STARTS:
        _refuse(f"{STARTS[event]} ({event}{args[:2]!r})")


def _refuse(what: str) -> None:
    _unmarked.append(what)
    raise RuntimeError(
        f"{_unmarked[0]} {what}: mark it @pytest.mark.slow (the fast tier, "
        '`pytest -m "not slow"`, runs in this process only)'
    )


sys.addaudithook(_audit)  # a hook cannot be removed; it acts only while `_unmarked` is set
_start_process = multiprocessing.process.BaseProcess.start


def _watched_start(self: multiprocessing.process.BaseProcess) -> None:
    if _unmarked:
        _refuse("starts a process (multiprocessing)")
    _start_process(self)


multiprocessing.process.BaseProcess.start = _watched_start  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None]:
    """Watch an unmarked test from its setup (where a module's fixture that starts a server is
    set up) to the end of its call. Not its teardown: that is where a fixture set up by an
    earlier, slow test of the module may stop its server."""
    if item.get_closest_marker("slow") is None:
        _unmarked[:] = [item.nodeid]
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None]:
    """Fail an unmarked test that started something, even if it caught the refusal."""
    try:
        result = yield
        if len(_unmarked) > 1:
            pytest.fail(f"{_unmarked[0]} {_unmarked[1]}: mark it @pytest.mark.slow", pytrace=False)
        return result
    finally:
        _unmarked.clear()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _unmarked.clear()  # also after a setup that failed, when no call ran
