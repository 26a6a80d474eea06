"""eventsourcing's own test cases for recorders (`eventsourcing.tests.persistence`), run against
kbes's PostgreSQL persistence as kbes builds it from a `postgresql://` URL: the application
recorder that also writes the feed index (in the transaction, under the library's table lock),
the snapshot recorder, the factory. Each recorder gets a fresh database on the throwaway
cluster (tests/pg_server.py), so its notification ids start at 1 as the cases expect.

Left out, each for its reason: `TrackingRecorderTestCase` (with a PostgreSQL log kbes keeps
its views, and their tracking table, in a local SQLite file, whose case runs in
tests/test_recorders.py), `ProcessRecorderTestCase` (kbes has no process recorder), and
`optional_test_insert_subscribe` (kbes never subscribes: its views pull from the log)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from unittest import mock

import pytest

pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
    TrackingRecorder,
)
from eventsourcing.postgres import PostgresProcessRecorder, PostgresTrackingRecorder
from eventsourcing.tests.application import ExampleApplicationTestCase
from eventsourcing.tests.persistence import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
    InfrastructureFactoryTestCase,
    NonInterleavingNotificationIDsBaseCase,
)
from eventsourcing.utils import Environment, get_topic
from pg_server import PgServer, running_pg

from kbes.store.event_log import EventLog
from kbes.store.postgres import (
    EVENTS_TABLE,
    KbesPostgresFactory,
    PostgresFeedRecorder,
    PostgresSnapshotRecorder,
)
from kbes.store.postgres_url import postgres_env

pytestmark = pytest.mark.slow  # a throwaway PostgreSQL cluster


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from running_pg()


@pytest.fixture(scope="class")
def on_postgres(request: pytest.FixtureRequest, pg: PgServer) -> None:
    request.cls.pg = pg


@pytest.mark.usefixtures("on_postgres")
class OnPostgres:
    """Factories on fresh databases of the cluster, closed after each test."""

    pg: PgServer
    opened: list[KbesPostgresFactory]

    def setUp(self) -> None:
        self.opened = []
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        super().tearDown()  # type: ignore[misc]
        # test_concurrent_no_conflicts returns with its reader threads told to stop but not
        # joined: closing the datastore under them would close connections still in use.
        for thread in threading.enumerate():
            if thread.name.endswith("(read_continuously)"):
                thread.join(timeout=30)
        for factory in self.opened:
            factory.close()

    def new_env(self) -> dict[str, str]:
        """The environment `open_store` gives the application for a new database's URL."""
        return postgres_env(self.pg.create_database())

    def new_factory(self) -> KbesPostgresFactory:
        factory = InfrastructureFactory.construct(Environment(EventLog.name, self.new_env()))
        assert isinstance(factory, KbesPostgresFactory)
        self.opened.append(factory)
        return factory


class TestPostgresFeedRecorder(OnPostgres, ApplicationRecorderTestCase[PostgresFeedRecorder]):
    def create_recorder(self) -> PostgresFeedRecorder:
        recorder = self.new_factory().application_recorder()
        assert type(recorder) is PostgresFeedRecorder
        assert recorder.events_table_name == EVENTS_TABLE
        return recorder


class TestPostgresFeedRecorderNotificationIds(OnPostgres, NonInterleavingNotificationIDsBaseCase):
    """Two writers at once: each one's events get a run of ids of their own (the feed, and the
    views' catch-up, rely on ids that commit in order)."""

    def create_recorder(self) -> ApplicationRecorder:
        return self.new_factory().application_recorder()


class TestPostgresSnapshotRecorder(OnPostgres, AggregateRecorderTestCase):
    """The recorder of the snapshots kbes takes every 100 versions of an article."""

    def create_recorder(self) -> AggregateRecorder:
        recorder = self.new_factory().aggregate_recorder(purpose="snapshots")
        assert type(recorder) is PostgresSnapshotRecorder
        return recorder


class TestKbesPostgresFactory(OnPostgres, InfrastructureFactoryTestCase[KbesPostgresFactory]):
    class TrackingRecorderSubclass(PostgresTrackingRecorder):
        pass

    def setUp(self) -> None:
        self.env = Environment("TestCase", self.new_env())
        super().setUp()  # the factory; closed by the case's own tearDown

    def expected_factory_class(self) -> type[KbesPostgresFactory]:
        return KbesPostgresFactory

    def expected_aggregate_recorder_class(self) -> type[AggregateRecorder]:
        return PostgresSnapshotRecorder

    def expected_application_recorder_class(self) -> type[ApplicationRecorder]:
        return PostgresFeedRecorder

    def expected_tracking_recorder_class(self) -> type[TrackingRecorder]:
        return PostgresTrackingRecorder

    def tracking_recorder_subclass(self) -> type[TrackingRecorder]:
        return self.TrackingRecorderSubclass

    def expected_process_recorder_class(self) -> type[ProcessRecorder]:
        return PostgresProcessRecorder


class TestAnApplicationOnKbesPostgresFactory(OnPostgres, ExampleApplicationTestCase):
    """eventsourcing's example application (accounts, a notification log, snapshots) with
    kbes's PostgreSQL factory as its persistence module."""

    expected_factory_topic = get_topic(KbesPostgresFactory)

    def setUp(self) -> None:
        super().setUp()
        environ = mock.patch.dict(os.environ, self.new_env())
        environ.start()
        self.addCleanup(environ.stop)


# The base classes are imported for subclassing only: pytest must not collect them bare.
del AggregateRecorderTestCase, ApplicationRecorderTestCase, ExampleApplicationTestCase
del InfrastructureFactoryTestCase, NonInterleavingNotificationIDsBaseCase
