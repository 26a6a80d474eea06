"""PostgreSQL as the shared event log, so several kbes processes on several machines can serve
one knowledge base store.

This is eventsourcing's own `eventsourcing.postgres` module (psycopg 3), not home-made
replication: every process writes to and reads from the one log. On top of it this module adds
what the SQLite store has (kbes/store/sqlite.py):

- the per-knowledge-base feed index `kb_feed(knowledge_base_id, notification_id)`, written in
  the same transaction as the events, while eventsourcing's `LOCK TABLE ... IN EXCLUSIVE MODE`
  still holds, so feed rows commit in notification-id order with their events;
- the reads of kbes.store.feed.FeedReader, as the SQLite recorder offers them: one page of one
  knowledge base's visible events and the head of the whole log, read in one statement (one
  snapshot), and the log as the views fold it.

The views (article state, version history, keyword indexes) stay in a local SQLite file per
process, fed from the shared log: search and read answer locally, and only the catch-up (one
cheap `max(notification_id)` query when already at the head) goes to the server; see
kbes.store.views_file. Open a store with `open_store("postgresql://user:pass@host:port/dbname")`
(kbes.store.postgres_url turns the URL into eventsourcing's settings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast
from uuid import UUID

try:
    # Fail here, with a useful message, not deep in eventsourcing. The extra is installed from
    # kbes's source folder, kbes not being on a package index.
    import psycopg  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "a postgresql:// database needs psycopg 3 and its pool: "
        f"pip install '.[postgres]' in kbes's source folder ({error})"
    ) from error

from eventsourcing.persistence import (
    AggregateRecorder,
    InterfaceError,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
    PostgresFactory,
)
from eventsourcing.utils import retry
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed, Identifier
from psycopg_pool import PoolTimeout

from kbes.domain.errors import Unavailable
from kbes.projections.source import StoredRow
from kbes.store.internals import AfterInsertEvents
from kbes.store.postgres_url import VIEWS_LOCK_TIMEOUT
from kbes.store.settings import (
    STARTUP_TIMEOUT_ENV,
    VIEWS_ENV,
    read_lock_timeout,
    read_startup_timeout,
)
from kbes.store.sqlite import FEED_KWARG, FEED_TABLE, KbesSQLiteDatastore
from kbes.store.views_file import claim_views, views_path

EVENTS_TABLE = "kbes_events"
"""The PostgreSQL log's table of events, as the recorder and the probe (kbes.store.probe) know
it; the snapshots are in `kbes_snapshots` (eventsourcing's `<application>_<purpose>`)."""

# Taken (per transaction) around table creation, so processes starting together on a fresh
# database do not trip over each other's CREATE TYPE / CREATE OR REPLACE FUNCTION.
_CREATE_TABLE_LOCK = 0x6B626573  # "kbes"


LIBRARY_TRIES = 10
LIBRARY_RETRY_WAIT = 0.2
"""eventsourcing retries each of its PostgreSQL recorder's statements this many times, this
many seconds apart, when a connection fails, including when the pool hands out none in time
(its `@retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)`)."""


def wait_per_try(total: float) -> float:
    """The pool's wait for a connection on each of eventsourcing's tries, so that a call that
    never gets one gives up after about `total` seconds (at least about 2.3)."""
    return max(0.05, (total - (LIBRARY_TRIES - 1) * LIBRARY_RETRY_WAIT) / LIBRARY_TRIES)


@contextmanager
def reaching_the_log(total: float) -> Iterator[None]:
    """`unavailable` for a call that got no connection to the log on any of eventsourcing's
    tries (psycopg_pool's `PoolTimeout` behind the library's `OperationalError`): the server is
    down or unreachable, or every connection stayed busy. Any other error stays what it is."""
    try:
        yield
    except OperationalError as e:
        if not isinstance(e.__cause__, PoolTimeout):
            raise
        raise Unavailable(
            f"the store got no connection to its PostgreSQL log within about {total:g} s "
            "(POSTGRES_CONNECT_TIMEOUT): the server is down or unreachable, or every "
            "connection stayed busy; nothing was written, retry later"
        ) from e


class BoundedWait(PostgresAggregateRecorder):
    """A recorder whose calls end as `unavailable` when the log cannot be reached (see
    `reaching_the_log`); `wait` is the store's POSTGRES_CONNECT_TIMEOUT."""

    wait: float = 3.0

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Any:
        with reaching_the_log(self.wait):
            return super().insert_events(stored_events, **kwargs)

    def select_events(self, originator_id: UUID | str, **kwargs: Any) -> Any:
        with reaching_the_log(self.wait):
            return super().select_events(originator_id, **kwargs)


class PostgresFeedRecorder(AfterInsertEvents, PostgresApplicationRecorder):
    """eventsourcing's PostgreSQL application recorder, plus the per-knowledge-base feed index
    that keeps a poll O(page) (same table and contract as kbes.store.sqlite's SQLite one). Its
    calls end as `unavailable` when the log cannot be reached, as `BoundedWait`'s do."""

    wait: float = 3.0

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        events_table_name: str = EVENTS_TABLE,
        feed_table_name: str = FEED_TABLE,
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        if datastore.enable_db_functions:
            # That path inserts through a stored function and skips the hooks that write the
            # feed index: polls would silently miss events.
            raise OSError("kbes does not support POSTGRES_ENABLE_DB_FUNCTIONS; unset it")
        self.check_identifier_length(feed_table_name)
        self.feed_table_name = feed_table_name
        schema = Identifier(datastore.schema)
        feed = Identifier(feed_table_name)
        events = Identifier(self.events_table_name)
        self.sql_create_statements.append(
            SQL(
                "CREATE TABLE IF NOT EXISTS {schema}.{feed} ("
                "knowledge_base_id uuid NOT NULL, "
                "notification_id bigint NOT NULL, "
                "PRIMARY KEY (knowledge_base_id, notification_id))"
            ).format(schema=schema, feed=feed)
        )
        self.insert_feed_statement = SQL(
            "INSERT INTO {schema}.{feed} (knowledge_base_id, notification_id) "
            "SELECT * FROM unnest(%s::uuid[], %s::bigint[])"
        ).format(schema=schema, feed=feed)
        # The head and the page in one statement: in autocommit, one statement is one
        # snapshot, and the table lock makes ids commit in order, so nothing at or below the
        # head can appear later. The page is cut from kb_feed's primary key first, then each
        # event is fetched by its unique notification_id index: O(page), whatever the size of
        # the log. The LIMITs keep both subqueries from being flattened into a plain join, for
        # which the planner may choose a merge join walking the events index from the start,
        # or (in a generic plan of the prepared statement) a hash join over a scan of the log.
        self.select_feed_statement = SQL(
            "SELECT h.head, p.notification_id, p.originator_id, p.originator_version, "
            "p.topic, p.state "
            "FROM (SELECT max(notification_id) AS head FROM {schema}.{events}) AS h "
            "LEFT JOIN LATERAL ("
            "SELECT e.notification_id, e.originator_id, e.originator_version, e.topic, e.state "
            "FROM (SELECT notification_id FROM {schema}.{feed} "
            "WHERE knowledge_base_id = %s AND notification_id > %s "
            "ORDER BY notification_id LIMIT %s) AS f "
            "CROSS JOIN LATERAL (SELECT * FROM {schema}.{events} "
            "WHERE notification_id = f.notification_id LIMIT 1) AS e"
            ") AS p ON true "
            "ORDER BY p.notification_id"
        ).format(schema=schema, feed=feed, events=events)

    @retry((InterfaceError, OperationalError), max_attempts=LIBRARY_TRIES, wait=LIBRARY_RETRY_WAIT)
    def create_table(self) -> None:
        """Create the types, tables, index and function in one transaction, serialised by an
        advisory lock: eventsourcing's own `create_table` fails when several processes start
        at once on a fresh database (duplicate `pg_type` rows from concurrent CREATE TABLE IF
        NOT EXISTS; "tuple concurrently updated" from CREATE OR REPLACE FUNCTION). Tried as
        eventsourcing tries its other calls: the pool's wait for a connection is one try's
        share of POSTGRES_CONNECT_TIMEOUT, which eight processes connecting at once on a busy
        machine can exceed. A copy of the library's, pinned by tests/test_internals.py."""
        with self.datastore.transaction(commit=True) as curs:
            curs.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_TABLE_LOCK,))
            for statement in self.sql_create_statements:
                if "CREATE TYPE" in statement.as_string() and self._type_exists(curs):
                    continue
                curs.execute(statement, prepare=False)
        self.datastore.register_type_adapters()

    def _type_exists(self, curs: Cursor[DictRow]) -> bool:
        curs.execute(
            "SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
            "WHERE n.nspname = %s AND t.typname = %s",
            (self.datastore.schema, self.stored_event_type_name),
        )
        return curs.fetchone() is not None

    def _insert_events(
        self,
        curs: Cursor[DictRow],
        stored_events: Sequence[StoredEvent],
        **kwargs: Any,
    ) -> None:
        """Check the feed entries before any event is inserted, so nothing can fail in Python
        once the events are in: eventsourcing commits what it inserted when a later step
        raises a Python error, and only a database error aborts the transaction."""
        feed: Sequence[str | None] = kwargs.get(FEED_KWARG) or ()
        if feed:
            if len(feed) != len(stored_events):
                raise ValueError(f"{FEED_KWARG} has {len(feed)} entries for {len(stored_events)}")
            for kb in feed:
                if kb is not None:
                    UUID(hex=kb)
        super()._insert_events(curs, stored_events, **kwargs)

    def after_insert_events(self, curs: Any, ids: Sequence[int], **kwargs: Any) -> None:
        """Write the feed rows of the events just inserted: same transaction, table lock held
        (kbes.store.internals.AfterInsertEvents). A database error here aborts the
        transaction, events and all."""
        feed: Sequence[str | None] = kwargs.get(FEED_KWARG) or ()
        rows = [(UUID(hex=kb), nid) for kb, nid in zip(feed, ids, strict=False) if kb]
        if rows:
            curs.execute(
                self.insert_feed_statement,
                ([kb for kb, _ in rows], [nid for _, nid in rows]),
                prepare=True,
            )

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Any:
        with reaching_the_log(self.wait):
            return super().insert_events(stored_events, **kwargs)

    def select_events(self, originator_id: UUID | str, **kwargs: Any) -> Any:
        with reaching_the_log(self.wait):
            return super().select_events(originator_id, **kwargs)

    def select_notifications(self, *args: Any, **kwargs: Any) -> Any:
        with reaching_the_log(self.wait):
            return super().select_notifications(*args, **kwargs)

    def max_notification_id(self) -> int | None:
        with reaching_the_log(self.wait):
            return super().max_notification_id()

    def head(self) -> int:
        """The head of the log: its last notification id, 0 when it is empty."""
        return self.max_notification_id() or 0

    @contextmanager
    def watching(self) -> Iterator[Callable[[], int]]:
        """The head of the log for a thread that looks at it on a timer: each look borrows a
        connection of the pool, as every read does, and the pool's size is its settings' (the
        SQLite recorder, whose readers open as they are needed, keeps one of its own)."""
        yield self.head

    def select_feed_rows(
        self, knowledge_base_hex: str, after: int, limit: int
    ) -> tuple[list[StoredRow], int]:
        """One page of a knowledge base's feed and the log's head, in one statement: one
        snapshot (kbes.store.feed.FeedReader)."""
        with reaching_the_log(self.wait):
            return self._select_feed_rows(knowledge_base_hex, after, limit)

    @retry((InterfaceError, OperationalError), max_attempts=LIBRARY_TRIES, wait=LIBRARY_RETRY_WAIT)
    def _select_feed_rows(
        self, knowledge_base_hex: str, after: int, limit: int
    ) -> tuple[list[StoredRow], int]:
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(
                self.select_feed_statement,
                (UUID(hex=knowledge_base_hex), after, limit),
                prepare=True,
            )
            rows = curs.fetchall()
        head = (rows[0]["head"] if rows else None) or 0
        page = [
            (
                row["notification_id"],
                str(row["originator_id"]),
                row["originator_version"],
                row["topic"],
                bytes(row["state"]),
            )
            for row in rows
            if row["notification_id"] is not None
        ]
        return page, head

    def select_notification_rows(self, start: int, limit: int, stop: int) -> list[StoredRow]:
        """The log as the views fold it (kbes.projections.source.LogReader), read through
        eventsourcing's own `select_notifications`."""
        return [
            (n.id, str(n.originator_id), n.originator_version, n.topic, n.state)
            for n in self.select_notifications(start=start, limit=limit, stop=stop)
        ]

    def log_identity(self) -> str:
        """Which log this is: server, database and the events table's OID. A dropped and
        recreated log gets a new OID, so views built from the old one are never reused."""
        with (
            reaching_the_log(self.wait),
            self.datastore.get_connection() as conn,
            conn.cursor() as curs,
        ):
            curs.execute(
                "SELECT current_database() AS db, "
                "(SELECT oid FROM pg_database WHERE datname = current_database()) AS db_oid, "
                "to_regclass(%s::text)::oid AS table_oid",
                (self._qualified_events_table().as_string(conn),),
            )
            row = curs.fetchone()
        assert row is not None
        # psycopg_pool also takes a function or None as `kwargs`; eventsourcing's datastore
        # gives its pool a dict.
        info = cast(dict[str, Any], self.datastore.pool.kwargs)
        return (
            f"postgresql://{info.get('host')}:{info.get('port')}/{row['db']}"
            f"?schema={self.datastore.schema}&table={self.events_table_name}"
            f"&db_oid={row['db_oid']}&table_oid={row['table_oid']}"
        )

    def _qualified_events_table(self) -> Composed:
        return SQL("{0}.{1}").format(
            Identifier(self.datastore.schema), Identifier(self.events_table_name)
        )


class PostgresSnapshotRecorder(BoundedWait):
    """The snapshots table (kbes.store.application snapshots articles every 100 versions), created
    under the same advisory lock as the events table, for the same concurrent-start reason."""

    create_table = PostgresFeedRecorder.create_table
    _type_exists = PostgresFeedRecorder._type_exists


class KbesPostgresFactory(PostgresFactory):
    """eventsourcing's PostgresFactory with kbes's feed recorder, and the local SQLite file for
    this process's views (`views_datastore`)."""

    application_recorder_class = PostgresFeedRecorder
    aggregate_recorder_class = PostgresSnapshotRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        pool = self.datastore.pool
        # POSTGRES_CONNECT_TIMEOUT bounds a whole call, not each of eventsourcing's tries, and
        # the pool's other settings, which eventsourcing leaves at psycopg_pool's defaults,
        # follow it: a server that does not answer a connect is given up after it (libpq waits
        # for ever by default, holding a pool worker), and a reconnection that keeps failing
        # is dropped after it too (default 5 minutes, its retries spaced ever wider: the
        # server came back long before the pool tried again). A call then starts a fresh
        # attempt at once, so a server back up is used within seconds.
        self.wait = float(pool.timeout)
        self.startup_wait = max(
            self.wait, float(read_startup_timeout(self.env.get(STARTUP_TIMEOUT_ENV)))
        )
        self._follow(pool, self.wait)
        pool.timeout = wait_per_try(self.wait)
        self._reached = False
        self._views_datastore: KbesSQLiteDatastore | None = None
        self._recorder: PostgresFeedRecorder | None = None

    @staticmethod
    def _follow(pool: Any, wait: float) -> None:
        cast(dict[str, Any], pool.kwargs)["connect_timeout"] = max(1, round(wait))
        pool.reconnect_timeout = wait

    def reach_the_log(self) -> None:
        """Opening a store: wait for a first connection up to the start-up budget
        (KBES_STARTUP_TIMEOUT, or POSTGRES_CONNECT_TIMEOUT if longer) in one wait, connects and
        reconnections following it too; then every call is bound by the outage budget. Shared
        over eventsourcing's ten tries, the outage budget gives a try 0.12 s by default, which a
        new connection on a busy machine can exceed."""
        if self._reached:
            return
        pool = self.datastore.pool
        self._follow(pool, self.startup_wait)
        try:
            pool.open()
            with pool.connection(timeout=self.startup_wait):
                pass
        except PoolTimeout as e:
            raise Unavailable(
                f"the store got no connection to its PostgreSQL log within {self.startup_wait:g} "
                f"s of opening ({STARTUP_TIMEOUT_ENV}): the server is down or unreachable ({e})"
            ) from e
        finally:
            self._follow(pool, self.wait)
        self._reached = True

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        self.reach_the_log()
        recorder = super().aggregate_recorder(purpose)
        if isinstance(recorder, BoundedWait):
            recorder.wait = self.wait
        return recorder

    def application_recorder(self) -> PostgresFeedRecorder:
        """eventsourcing's, on the events table kbes names (`EVENTS_TABLE`)."""
        self.reach_the_log()
        recorder = PostgresFeedRecorder(self.datastore, events_table_name=EVENTS_TABLE)
        recorder.wait = self.wait
        if self.env_create_table():
            recorder.create_table()
        self._recorder = recorder
        return recorder

    @property
    def views_datastore(self) -> KbesSQLiteDatastore:
        """The local SQLite views of this process. They are a cache of the shared log, so
        `synchronous=NORMAL` is enough: a power cut can lose only the last batches, and their
        tracking position goes with them, so the next catch-up reads them again."""
        if self._views_datastore is None:
            assert self._recorder is not None, "create the application recorder first"
            identity = self._recorder.log_identity()
            path = views_path(identity, self.env.get(VIEWS_ENV), self.env.get("XDG_CACHE_HOME"))
            path.parent.mkdir(parents=True, exist_ok=True)
            datastore = KbesSQLiteDatastore(
                str(path),
                synchronous="NORMAL",
                lock_timeout=read_lock_timeout(self.env.get(VIEWS_LOCK_TIMEOUT)),
            )
            try:
                claim_views(datastore, path, identity)
            except BaseException:
                datastore.close()
                raise
            self._views_datastore = datastore
        return self._views_datastore

    def close(self) -> None:
        if self._views_datastore is not None:
            self._views_datastore.close()
        super().close()


__all__ = [
    "EVENTS_TABLE",
    "KbesPostgresFactory",
    "PostgresFeedRecorder",
]
