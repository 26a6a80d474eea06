"""A stop of a real `kbes serve --http` (SIGTERM from systemd or docker, SIGINT from Ctrl-C) is
clean: exit status 0 and one line saying so, even with a client's event stream open. It was a
43-line CancelledError traceback and status 1, so systemd counted every stop as a failure
(issue 35, defect 10)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest
from mcp_harness import http_server, seed
from raw_http import PROTOCOL, Session, client

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_exits_0_and_says_so_in_one_line(tmp_path: Path, stop: signal.Signals) -> None:
    data = seed(tmp_path / "kbes.sqlite")
    with http_server(data.db, "--grant-all") as server, client() as http:
        session = Session(http, server.url)
        assert session.open().status_code == 200
        streaming = threading.Event()

        def listen() -> None:  # the standalone event stream a client keeps open
            headers = {"Accept": "text/event-stream", "mcp-protocol-version": PROTOCOL}
            assert session.id is not None
            headers["mcp-session-id"] = session.id
            try:
                with http.stream("GET", server.url, headers=headers) as response:
                    assert response.status_code == 200
                    streaming.set()
                    for _ in response.iter_bytes():
                        pass
            except Exception:  # the server closing it is the point
                streaming.set()

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        assert streaming.wait(timeout=10)
        before = server.log()
        server.process.send_signal(stop)
        assert server.process.wait(timeout=30) == 0, server.log()
        after = server.log()[len(before) :]
    assert after == f"kbes serve: stopped ({stop.name})\n", after
