"""Shared fixtures: every test gets a real SQLite file of its own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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
