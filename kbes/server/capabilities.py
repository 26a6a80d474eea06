"""What kbes says it can do, said once for both protocol eras: the 2025 handshake's
`initialize` and 2026-07-28's `server/discover` declare the same capabilities, and each flag is
true only where kbes acts on it.

kbes sends no `list_changed` notification, so every `listChanged` is false. Tools and prompts
are fixed for the life of the process. The resource list (the granted knowledge bases) changes
only when a person creates a knowledge base under `--grant-all`, and it is served with a zero
TTL, so a client that lists again sees it at once. Ringing on that change would mean tailing
the log for every open handshake-era session (a stdio session is open for its whole life) and
sending on session channels the SDK gives no close signal for; the doorbell polls only while
someone listens (`kbes.server.push`). `resources.subscribe` is true on both eras: handshake
clients subscribe, 2026-07-28 clients listen, and both ring on change."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server

LIST_CHANGED = NotificationOptions(
    prompts_changed=False, resources_changed=False, tools_changed=False
)
"""The list-changed notifications kbes sends: none."""


class KbesServer(Server[Any]):
    """The SDK's lowlevel server with one capability declaration for every era. The SDK derives
    2026-07-28's `listChanged` from whether `subscriptions/listen` is served (kbes serves it
    for resource changes, so each flag would read true), and the handshake's from the
    `NotificationOptions` its caller passes; here both come from `LIST_CHANGED`."""

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        return super().get_capabilities(LIST_CHANGED, experimental_capabilities, extensions)


def honored(requested: types.SubscriptionFilter) -> types.SubscriptionFilter:
    """What a `subscriptions/listen` stream is acknowledged for: the resources it names, and
    only the list-changed kinds kbes sends (none), so the acknowledgment promises no more than
    the capabilities."""
    return requested.model_copy(
        update={
            "tools_list_changed": requested.tools_list_changed
            if LIST_CHANGED.tools_changed
            else None,
            "prompts_list_changed": requested.prompts_list_changed
            if LIST_CHANGED.prompts_changed
            else None,
            "resources_list_changed": requested.resources_list_changed
            if LIST_CHANGED.resources_changed
            else None,
        }
    )
