"""How `kbes serve --http` learns it is to stop: SIGINT (Ctrl-C) or SIGTERM (systemd, docker).

Left to hypercorn, a stop cancelled the event loop's main task, so every stop ended in a
43-line `CancelledError` traceback and exit status 1, which systemd counts as a failure
(issue 35, defect 10). `StopSignal` receives both signals itself and sets an event the server
waits on (hypercorn's `shutdown_trigger`), so a stop is an ordinary, graceful return."""

from __future__ import annotations

import signal

import anyio
from anyio.abc import TaskStatus

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal:
    """The first SIGINT or SIGTERM, as an event and the signal's name."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.received: str | None = None

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Receive the signals until cancelled; the first one sets the event (a second one,
        while the server winds down, changes nothing)."""
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            task_status.started()
            async for number in signals:
                if self.received is None:
                    self.received = signal.Signals(number).name
                self.event.set()
