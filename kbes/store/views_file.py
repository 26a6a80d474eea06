"""Where a process keeps its views beside a PostgreSQL log: a local SQLite file, named for the
log it is built from and refused if built from another (kbes.store.postgres opens it)."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

from kbes.store.settings import VIEWS_ENV
from kbes.store.sqlite import KbesSQLiteDatastore


def views_path(identity: str, configured: str | None = None, cache_home: str | None = None) -> Path:
    """Where this process keeps its views: `KBES_VIEWS` if set, else
    `$XDG_CACHE_HOME/kbes/views-<dbname>-<hash of the log identity>.sqlite` (`cache_home`,
    default `~/.cache/kbes/`). Processes on one machine may share the file; deleting it only
    costs a replay of the log on the next start."""
    if configured:
        return Path(configured).expanduser()
    cache = Path(cache_home or Path.home() / ".cache") / "kbes"
    dbname = urlsplit(identity).path.strip("/") or "db"
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in dbname)[:40]
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return cache / f"views-{safe}-{digest}.sqlite"


VIEWS_SOURCE = "kbes_views_source"
"""The table of a views file naming the log it was built from."""


def views_built_from(path: Path) -> str | None:
    """The log an existing views file was built from (read-only), or None if it names none."""
    if not path.is_file():
        return None
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as c:
            row = c.execute(f"SELECT log FROM {VIEWS_SOURCE}").fetchone()
    except sqlite3.OperationalError:  # no such table (yet)
        return None
    return None if row is None else str(row[0])


def claim_views(datastore: KbesSQLiteDatastore, path: Path, identity: str) -> None:
    """Record which log the views file is built from, and refuse a file built from another
    one: its rows would answer reads with articles that log never had."""
    with datastore.transaction(commit=True) as c:
        c.execute(f"CREATE TABLE IF NOT EXISTS {VIEWS_SOURCE} (log TEXT NOT NULL)")
        c.execute(f"SELECT log FROM {VIEWS_SOURCE}")
        row = c.fetchone()
        if row is None:
            c.execute(f"INSERT INTO {VIEWS_SOURCE} (log) VALUES (?)", (identity,))
        elif row["log"] != identity:
            raise OSError(
                f"the views file {path} was built from another event log ({row['log']}), "
                f"not {identity}; delete it (it is rebuilt from the log) or set {VIEWS_ENV} "
                "to another path"
            )


__all__ = ["claim_views", "views_built_from", "views_path"]
