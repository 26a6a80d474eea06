"""A throwaway PostgreSQL cluster for the tests, so `pytest` needs nothing started beforehand.

`PgServer.start()` runs `initdb` into a temporary directory and `pg_ctl start` on a free
loopback port; `stop()` shuts it down and deletes it. PostgreSQL refuses to run as root, so as
root both run as the `postgres` user (`runuser`). The cluster is throwaway, so it relaxes
durability (`fsync=off`, `synchronous_commit=off`, `full_page_writes=off`): kbes's code paths
are the same, only a power cut would lose it.

Set `KBES_TEST_POSTGRES_URL` (a role allowed to CREATE DATABASE) to use a running server
instead, e.g. a CI service container."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

EXTERNAL_URL_ENV = "KBES_TEST_POSTGRES_URL"
BINARIES = ("initdb", "pg_ctl")
RUN_AS = "postgres"


class PgUnavailable(Exception):
    """Why no server can be started here (the tests skip with this reason)."""


def find_bindir() -> Path:
    """The directory holding initdb and pg_ctl: `PG_BINDIR`, the PATH, `pg_config --bindir`,
    or Debian's /usr/lib/postgresql/<version>/bin (newest first)."""
    candidates: list[str] = []
    if os.environ.get("PG_BINDIR"):
        candidates.append(os.environ["PG_BINDIR"])
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            )
            candidates.append(out.stdout.strip())
    debian = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted(debian, key=lambda p: _version_key(Path(p).parent.name), reverse=True)
    for directory in candidates:
        if all((Path(directory) / name).is_file() for name in BINARIES):
            return Path(directory)
    raise PgUnavailable(
        "PostgreSQL binaries (initdb, pg_ctl) are absent: install PostgreSQL "
        "(e.g. apt-get install postgresql) or set PG_BINDIR"
    )


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One PostgreSQL server for a test session, and fresh databases on it."""

    def __init__(self) -> None:
        self.admin_url = ""
        self._tmp: Path | None = None
        self._bindir: Path | None = None
        self._databases = 0
        self._start_options = ""

    def start(self) -> PgServer:
        external = os.environ.get(EXTERNAL_URL_ENV)
        if external:
            self.admin_url = external
            return self
        self._bindir = find_bindir()
        self._tmp = Path(tempfile.mkdtemp(prefix="kbes-pg-"))
        data = self._tmp / "data"
        self._as_owner(self._tmp)
        self._run(
            "initdb",
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self._tmp}",
                "-c max_connections=200",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
            ]
        )
        for _attempt in range(3):  # another process may take the free port first
            port = free_port()
            started = self._run(
                "pg_ctl",
                "-D",
                str(data),
                "-l",
                str(self._tmp / "server.log"),
                "-o",
                f"{options} -p {port}",
                "-w",
                "-t",
                "30",
                "start",
                check=False,
            )
            if started.returncode == 0:
                self._start_options = f"{options} -p {port}"
                self.admin_url = f"postgresql://postgres:postgres@127.0.0.1:{port}/postgres"
                return self
        log = (self._tmp / "server.log").read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"pg_ctl start failed: {started.stderr}\n{log}")

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        self._databases += 1
        name = f"kbes_test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return urlsplit(self.admin_url)._replace(path=f"/{name}").geturl()

    def can_pause(self) -> bool:
        """Whether this cluster was started here (not `KBES_TEST_POSTGRES_URL`'s server)."""
        return self._tmp is not None

    def pause(self) -> None:
        """Stop the server as an operator would (`pg_ctl -m fast stop`), keeping its data:
        clients see their connections end and new ones refused."""
        assert self._tmp is not None, "only a cluster started here can be paused"
        self._run("pg_ctl", "-D", str(self._tmp / "data"), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start the paused server again, on the same port with the same data."""
        assert self._tmp is not None, "only a cluster started here can be resumed"
        self._run(
            "pg_ctl",
            "-D",
            str(self._tmp / "data"),
            "-l",
            str(self._tmp / "server.log"),
            "-o",
            self._start_options,
            "-w",
            "-t",
            "30",
            "start",
        )

    def stop(self) -> None:
        if self._tmp is None:
            return
        data = self._tmp / "data"
        if (data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None

    def _as_owner(self, path: Path) -> None:
        if os.geteuid() != 0:
            return
        try:
            owner = pwd.getpwnam(RUN_AS)
        except KeyError:
            raise PgUnavailable(
                f"running as root, and there is no {RUN_AS!r} user to run PostgreSQL as"
            ) from None
        os.chown(path, owner.pw_uid, owner.pw_gid)

    def _run(self, binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert self._bindir is not None
        command = [str(self._bindir / binary), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", RUN_AS, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise RuntimeError(f"{binary} failed ({result.returncode}): {result.stderr}")
        return result


def running_pg() -> Iterator[PgServer]:
    """The body of a module's `pg` fixture: a throwaway cluster, or a skip with the reason."""
    import pytest

    server = PgServer()
    try:
        server.start()
    except PgUnavailable as reason:
        pytest.skip(f"the PostgreSQL tests need a server they can start: {reason}")
    try:
        yield server
    finally:
        server.stop()
