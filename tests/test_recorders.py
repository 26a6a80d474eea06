"""eventsourcing's own test cases for recorders (`eventsourcing.tests.persistence`), run against
kbes's SQLite persistence as kbes builds it: the application recorder that also writes the feed
index, the snapshot recorder, the factory, and the views' tracking table. kbes replaces the
library's datastore (its own writer and reader connections), so the library's contract is
checked here, not assumed. The PostgreSQL ones: tests/test_recorders_postgres.py.

The cases that do not apply to kbes's SQLite persistence are left out, each for its reason:
`ProcessRecorderTestCase` (kbes has no process recorder: its views pull from the log), and
`optional_test_insert_subscribe` (the library's SQLite recorder has no subscriptions)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    ProcessRecorder,
    Tracking,
    TrackingRecorder,
)
from eventsourcing.sqlite import (
    SQLiteAggregateRecorder,
    SQLiteProcessRecorder,
    SQLiteTrackingRecorder,
)
from eventsourcing.tests.application import ExampleApplicationTestCase
from eventsourcing.tests.persistence import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
    InfrastructureFactoryTestCase,
    NonInterleavingNotificationIDsBaseCase,
    TrackingRecorderTestCase,
)
from eventsourcing.utils import Environment, get_topic

from kbes.projections import tracking
from kbes.projections.database import ViewsDatabase
from kbes.projections.views import Views
from kbes.store.event_log import EventLog
from kbes.store.settings import SYNCHRONOUS_ENV
from kbes.store.sqlite import FeedApplicationRecorder, KbesSQLiteDatastore, KbesSQLiteFactory


def sqlite_env(db: Path) -> dict[str, str]:
    """The environment `open_store` gives the application for a SQLite file."""
    return {
        "PERSISTENCE_MODULE": get_topic(KbesSQLiteFactory),
        "SQLITE_DBNAME": str(db),
        SYNCHRONOUS_ENV: "FULL",
    }


class InTemporaryFolder:
    """A new folder per test, removed after it, with what was opened in it closed first."""

    folder: Path
    opened: list[KbesSQLiteFactory | KbesSQLiteDatastore]

    def setUp(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="kbes-recorders-"))
        self.opened = []
        super().setUp()  # type: ignore[misc]

    def tearDown(self) -> None:
        super().tearDown()  # type: ignore[misc]
        for opened in self.opened:
            opened.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def new_file(self) -> Path:
        return self.folder / f"kbes-{len(self.opened)}.sqlite"

    def new_factory(self) -> KbesSQLiteFactory:
        """kbes's factory, on a new database file."""
        env = Environment(EventLog.name, sqlite_env(self.new_file()))
        factory = InfrastructureFactory.construct(env)
        assert isinstance(factory, KbesSQLiteFactory)
        self.opened.append(factory)
        return factory


class TestFeedApplicationRecorder(
    InTemporaryFolder, ApplicationRecorderTestCase[FeedApplicationRecorder]
):
    def create_recorder(self) -> FeedApplicationRecorder:
        recorder = self.new_factory().application_recorder()
        assert type(recorder) is FeedApplicationRecorder
        assert isinstance(recorder.datastore, KbesSQLiteDatastore)
        return recorder


class TestFeedApplicationRecorderNotificationIds(
    InTemporaryFolder, NonInterleavingNotificationIDsBaseCase
):
    """Two writers at once: each one's events get a run of ids of their own (the feed, and the
    views' catch-up, rely on ids that commit in order)."""

    def create_recorder(self) -> ApplicationRecorder:
        return self.new_factory().application_recorder()


class TestSnapshotRecorder(InTemporaryFolder, AggregateRecorderTestCase):
    """The recorder of the snapshots kbes takes every 100 versions of an article."""

    def create_recorder(self) -> AggregateRecorder:
        recorder = self.new_factory().aggregate_recorder(purpose="snapshots")
        assert isinstance(recorder, SQLiteAggregateRecorder)
        assert isinstance(recorder.datastore, KbesSQLiteDatastore)
        return recorder


class TestKbesSQLiteFactory(InfrastructureFactoryTestCase[KbesSQLiteFactory]):
    class TrackingRecorderSubclass(SQLiteTrackingRecorder):
        pass

    def setUp(self) -> None:
        folder = tempfile.mkdtemp(prefix="kbes-recorders-")
        self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
        self.env = Environment("TestCase", sqlite_env(Path(folder) / "kbes.sqlite"))
        super().setUp()  # the factory; closed by tearDown, before the cleanup

    def expected_factory_class(self) -> type[KbesSQLiteFactory]:
        return KbesSQLiteFactory

    def expected_aggregate_recorder_class(self) -> type[AggregateRecorder]:
        return SQLiteAggregateRecorder

    def expected_application_recorder_class(self) -> type[ApplicationRecorder]:
        return FeedApplicationRecorder

    def expected_tracking_recorder_class(self) -> type[TrackingRecorder]:
        return SQLiteTrackingRecorder

    def tracking_recorder_subclass(self) -> type[TrackingRecorder]:
        return self.TrackingRecorderSubclass

    def expected_process_recorder_class(self) -> type[ProcessRecorder]:
        return SQLiteProcessRecorder

    def test_every_recorder_uses_kbes_datastore(self) -> None:
        datastore = self.factory.datastore
        assert isinstance(datastore, KbesSQLiteDatastore)
        assert self.factory.views_datastore is datastore
        for recorder in (
            self.factory.aggregate_recorder(),
            self.factory.application_recorder(),
            self.factory.tracking_recorder(),
            self.factory.process_recorder(),
        ):
            assert getattr(recorder, "datastore") is datastore  # noqa: B009


class TestAnApplicationOnKbesSQLiteFactory(InTemporaryFolder, ExampleApplicationTestCase):
    """eventsourcing's example application (accounts, a notification log, snapshots) with
    kbes's factory as its persistence module: what docs/python-api.md offers to an
    application of one's own."""

    expected_factory_topic = get_topic(KbesSQLiteFactory)

    def setUp(self) -> None:
        super().setUp()
        environ = mock.patch.dict(os.environ, sqlite_env(self.folder / "accounts.sqlite"))
        environ.start()
        self.addCleanup(environ.stop)


class TestViewsTracking(InTemporaryFolder, TrackingRecorderTestCase):
    """The views' tracking table, as the views create it in their file (kbes's datastore)."""

    def create_recorder(self) -> TrackingRecorder:
        datastore = KbesSQLiteDatastore(str(self.new_file()))
        self.opened.append(datastore)
        return views_database(datastore)


def views_database(datastore: KbesSQLiteDatastore) -> ViewsDatabase:
    """The views' database, its tables created as a store creates them."""
    views = Views(datastore, application_name=EventLog.name)
    views.create_table()
    return views.database


@pytest.mark.parametrize("single_row_tracking", [True, False], ids=["one-row", "row-per-id"])
def test_kbes_positions_are_the_library_positions(
    tmp_path: Path, single_row_tracking: bool
) -> None:
    """kbes writes its tracking rows with plain SQL (kbes.projections.tracking), in the
    transaction that folds the views; the library's recorder reads and writes the same rows,
    in either of its table shapes, and a position kbes sets back (a rebuild) goes back."""
    datastore = KbesSQLiteDatastore(
        str(tmp_path / "views.sqlite"), single_row_tracking=single_row_tracking
    )
    db = views_database(datastore)
    name = EventLog.name
    search = name + tracking.SEARCH_SUFFIX

    def position(of: str) -> int | None:
        with db.read() as c:
            return tracking.position(c, of)

    db.insert_tracking(Tracking(name, 5))
    assert position(name) == 5
    with db.write() as c:
        tracking.set_position(c, name, 9)
        tracking.set_position(c, search, -1)
    assert db.max_tracking_id(name) == 9
    assert db.has_tracking_id(name, 9) and not db.has_tracking_id(name, 10)
    assert db.max_tracking_id(search) == -1

    with db.write() as c:
        tracking.set_position(c, name, 0)  # a rebuild starts from the beginning again
    assert db.max_tracking_id(name) == 0 and position(name) == 0
    db.insert_tracking(Tracking(name, 1))  # and the library goes on from there
    assert position(name) == 1

    with db.write() as c:
        tracking.forget(c, name)
    assert db.max_tracking_id(name) is None and position(name) is None
    assert position(search) == -1  # another name's row is left alone
    datastore.close()


# The base classes are imported for subclassing only: pytest must not collect them bare.
del AggregateRecorderTestCase, ApplicationRecorderTestCase, ExampleApplicationTestCase
del InfrastructureFactoryTestCase, NonInterleavingNotificationIDsBaseCase
del TrackingRecorderTestCase
