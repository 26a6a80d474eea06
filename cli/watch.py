"""`kbes import --watch`: the folder kept in step as it changes, until stopped.

Each batch of changes (watchfiles, debounced: a burst of changes, such as an editor's temp file
and rename or a thousand files copied in, is one batch) is followed by a whole `--sync` of the
folder, so whatever order the steps came in, the knowledge base ends as the folder ends. Files
not changed since the last sync are not read again. A sync that fails (the database busy, for
one) is said on stderr and tried again; a watcher stopped at any point, even by SIGKILL,
leaves nothing half-written, and the next sync or watcher completes what it had not."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click
from watchfiles import Change, watch

from kbes.cli.importer import event_lines, print_report, skipped_lines
from kbes.cli.refusals import refusal
from kbes.domain.author import Author
from kbes.domain.errors import DomainError
from kbes.log.folder_files import is_markdown
from kbes.log.importer import ReadCache, shown
from kbes.log.importer import import_folder as run_import
from kbes.store.application import KnowledgeBaseStore

DEBOUNCE_MS = 1_000
"""The longest a batch gathers changes while they keep coming."""
STEP_MS = 100
"""A batch ends after this long without a change."""
RETRY_MS = 1_000
"""How soon a failed sync is tried again."""


def relevant(change: Change, path: str) -> bool:
    """Changes that can change what an import reads: Markdown files, `.gitignore` files and
    folders (a renamed folder moves its files); not the database's own files."""
    name = Path(path).name
    return is_markdown(name) or name == ".gitignore" or "." not in name or Path(path).is_dir()


def watch_folder(
    store: KnowledgeBaseStore,
    folder: Path,
    kb: str,
    *,
    publish: bool,
    source: str | None,
    by: Author | None = None,
) -> None:
    """Sync once, then after each batch of changes, printing one line per file changed. The
    first sync runs once the watcher is up (its first timeout), so a change made while it runs
    or just after is seen by the watcher, never lost between the two."""
    stop = threading.Event()

    def stopped(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopped)
    watcher = _Watcher(store, folder, kb, publish, source, by)
    click.echo(f"watching {folder} (Ctrl-C to stop)", err=True)
    pending = True
    try:
        for changes in watch(
            folder,
            watch_filter=relevant,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=RETRY_MS,
            yield_on_timeout=True,
        ):
            if changes or pending:
                pending = not watcher.sync()
    except KeyboardInterrupt:
        pass
    click.echo("stopped", err=True)


class _Watcher:
    """One folder's syncs, with what the last one read and said."""

    def __init__(
        self,
        store: KnowledgeBaseStore,
        folder: Path,
        kb: str,
        publish: bool,
        source: str | None,
        by: Author | None,
    ) -> None:
        self.store, self.folder, self.kb = store, folder, kb
        self.publish, self.source, self.by = publish, source, by
        self.cache: ReadCache = {}
        self.said: dict[str, str] | None = None
        """The skipped files last said, None before the first sync."""

    def sync(self) -> bool:
        """One sync, its lines printed (a skipped file again only when its reason changed);
        False if it failed and should be tried again."""
        try:
            report = run_import(
                self.store,
                self.kb,
                self.folder,
                publish=self.publish,
                sync=True,
                source=self.source,
                cache=self.cache,
                by=self.by,
            )
        except DomainError as e:
            click.echo(f"sync failed, trying again: {refusal(e)}", err=True)
            return False
        now = skipped_lines(report)
        if self.said is None:
            print_report(report, as_json=False, sync=True)
        else:
            for line in event_lines(report):
                click.echo(line)
            for key, reason in now.items():
                if self.said.get(key) != reason:
                    click.echo(f"skipped  {shown(key)}: {reason}", err=True)
        self.said = now
        if self.store.settings.search == "hybrid":
            self.store.embed_pending()
        sys.stdout.flush()
        return True
