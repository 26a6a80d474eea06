"""Folding the log into the view tables, a batch at a time: what the catch-up and the rebuild
both do, and the indexes a bulk fold leaves to be built whole once it ends."""

from __future__ import annotations

from eventsourcing.sqlite import SQLiteCursor

from kbes.projections import articles, keyword_index
from kbes.projections.source import EventDecoder, LogReader, full_decode

BATCH_SIZE = 500
REPLAY_CHUNK = 5000
REPLAY_EVENTS = 200_000
REPLAY_BYTES = 64 * 1024 * 1024
"""A replay (rebuild) reads the log in chunks and writes one transaction per REPLAY_EVENTS events
or REPLAY_BYTES of folded rows: each B-tree page is then rewritten once for many rows rather
than once or more per chunk, in bounded memory (kbes bench row 6)."""


def fold(
    c: SQLiteCursor,
    log: LogReader,
    decoder: EventDecoder,
    start: int,
    head: int,
    *,
    follow: bool,
    suffix: str = "",
) -> int | None:
    """Fold one batch of the log from `start` into the views (the tables named with `suffix`),
    recording the articles it changed for search if `follow`; returns the last notification id
    folded, None when there was none."""
    batch = articles.Batch(suffix)
    last: int | None = None
    while True:
        items, read = read_items(log, decoder, start, BATCH_SIZE if follow else REPLAY_CHUNK, head)
        if read is None:
            break
        batch.add(c, items)
        last, start = read, read + 1
        if follow or start > head or batch.events >= REPLAY_EVENTS or batch.bytes >= REPLAY_BYTES:
            break
    if last is not None:
        batch.write(c, track_changes=follow)
        if follow and not suffix:
            keyword_index.record_changes(c, batch.changed, last)
    return last


def read_items(
    log: LogReader, decoder: EventDecoder, start: int, limit: int, stop: int
) -> tuple[list[articles.Item], int | None]:
    """Up to `limit` events of the log from `start` (to `stop`) as items to fold, and the last
    notification id read (None at the end). Straight from the rows, decoding each event's
    fields but building no Notification or domain event, except for events that need
    upcasting or are snapshots, which go through the mapper's full path."""
    rows = log.select_notification_rows(start, limit, stop)
    if not rows:
        return [], None
    items: list[articles.Item] = []
    decode = decoder.decode_fields
    for nid, oid, version, topic, state in rows:
        decoded = decode(topic, state)
        if decoded is None:
            event = full_decode(decoder, (nid, oid, version, topic, state))
            items.append((type(event), oid, version, event, nid))
        else:
            items.append((decoded[0], oid, version, decoded[1], nid))
    return items, rows[-1][0]


def build_indexes(c: SQLiteCursor) -> None:
    """The secondary indexes a replay or a rebuild leaves out, built whole."""
    # All IF NOT EXISTS. SQLite sorts in runs of up to cache_size: smaller runs than the
    # connection's 64 MiB cache keep the peak memory of a large rebuild down (kbes bench
    # row 6b).
    c.execute("PRAGMA cache_size")
    cache_size = c.fetchone()[0]
    c.execute("PRAGMA cache_size=-8192")
    try:
        for statement in articles.INDEXES:
            c.execute(statement)
    finally:
        c.execute(f"PRAGMA cache_size={int(cache_size)}")


LEGACY_SEARCH_TABLES = ("search_index", "search_partitions")
"""The FTS5 index and its partitions, which searched before the keyword engine did."""


def drop_legacy_search(c: SQLiteCursor) -> None:
    """Drop the FTS5 index a views file written before the keyword engine holds."""
    for table in LEGACY_SEARCH_TABLES:
        c.execute(f"DROP TABLE IF EXISTS {table}")


__all__ = [
    "BATCH_SIZE",
    "REPLAY_BYTES",
    "REPLAY_CHUNK",
    "REPLAY_EVENTS",
    "build_indexes",
    "drop_legacy_search",
    "fold",
    "read_items",
]
