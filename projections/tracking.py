"""The views' tracking rows: which position of the log each part of the views reflects.

eventsourcing's `SQLiteTrackingRecorder` creates the `tracking` table (kbes.projections.database);
the rows are read and written here with plain SQL, inside the transaction that folds the view
rows, so a position commits with the rows it describes or not at all. A row is set outright
(deleted, then inserted), which holds whichever of the library's two table shapes (one row per
name, or one per position) the file has, and lets a position go back (a rebuild starts at 0, a
drop leaves the search index at -1)."""

from __future__ import annotations

from typing import Any

NEXT_TRACKING = ".next"
"""Suffix of the row of the views being built aside: the position they reflect."""

SEARCH_SUFFIX = ".search"
"""Suffix of the row of search: the position up to which the views recorded what changed for
search (projections/keyword_index.py), -1 after a drop (the keyword indexes are built whole at
the end of the replay), absent in a database older than it (follows the views)."""


def position(c: Any, name: str) -> int | None:
    """The position tracked as `name`, None when there is none."""
    c.execute("SELECT MAX(notification_id) FROM tracking WHERE application_name = ?", (name,))
    return c.fetchone()[0]


def set_position(c: Any, name: str, position: int) -> None:
    """The position tracked as `name`, set outright."""
    c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))
    c.execute("INSERT INTO tracking VALUES (?, ?)", (name, position))


def forget(c: Any, name: str) -> None:
    """No position tracked as `name`: as views that never folded an event."""
    c.execute("DELETE FROM tracking WHERE application_name = ?", (name,))


__all__ = ["NEXT_TRACKING", "SEARCH_SUFFIX", "forget", "position", "set_position"]
