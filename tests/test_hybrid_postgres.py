"""Hybrid search on a PostgreSQL log: each server keeps its vectors in its own views file, and
finds by meaning what another server saved, and never what it unpublished."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_server import PgServer, running_pg

from kbes import open_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from running_pg()


def test_two_servers_on_one_log(pg: PgServer, tmp_path: Path) -> None:
    url = pg.create_database()
    writer = open_store(url, views=tmp_path / "writer.sqlite", search="hybrid")
    reader = open_store(url, views=tmp_path / "reader.sqlite", search="hybrid")
    try:
        kb = str(writer.create_knowledge_base("Home"))
        car = str(writer.add_article(kb, "Car maintenance", "Change the oil yearly.", publish=True))
        cat = str(writer.add_article(kb, "Feline care", "Feed a cat twice a day.", publish=True))
        assert reader.search(kb, "looking after my kitten", 1)[0].article_id == cat
        writer.save_article(kb, car, title="Puppy training", content="Teach a young dog to sit.")
        assert reader.search(kb, "teaching my dog tricks", 1)[0].article_id == car
        writer.unpublish_article(kb, cat)
        found = [hit.article_id for hit in reader.search(kb, "looking after my kitten", 10)]
        assert cat not in found  # and the puppy is too far from a kitten to clear the floor
        assert [hit.article_id for hit in reader.search(kb, "teaching my dog tricks", 10)] == [car]
    finally:
        writer.close()
        reader.close()
