"""The MCP face of kbes: a thin layer that serves `Tool` objects over stdio or streamable HTTP.

Everything an agent can do is in `kbes.tools`; this module only translates. It advertises each
tool's name, description, annotations and JSON schemas exactly as the `Tool` states them, checks
arguments with the same msgspec structs the CLI uses, confines every call to the knowledge bases
granted to the server (and, over HTTP, to the caller's bearer token), and asks the user before
any write through MCP elicitation. Extra tools (say an opt-in `diff_knowledge_article`) are more
`Tool` objects passed to `KbesMCP(tools=...)`; a tool whose annotations say it is not read-only
goes through the same approval as `edit_knowledge_article`.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
import msgspec
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Scope

from kbes.domain.author import Author
from kbes.domain.author import client as declared_client
from kbes.domain.author import token as token_author
from kbes.domain.limits import DEFAULT_LIMITS, Limits
from kbes.server.approval import approval_message
from kbes.server.capabilities import KbesServer
from kbes.server.edit_policy import EDIT_POLICIES, EditPolicy
from kbes.server.failures import ContainFailures, unforeseen
from kbes.server.http_auth import Tokens, TokensFile, TokensFileVerifier, narrow
from kbes.server.http_sessions import SessionGuard, header
from kbes.server.identity import SERVER_NAME, SERVER_TITLE, server_version
from kbes.server.in_flight import InFlightLimit
from kbes.server.prompts import prompt_handlers
from kbes.server.push import DEFAULT_INTERVAL
from kbes.server.query_redaction import ACCESS_LOGGER
from kbes.server.rebinding import local_only
from kbes.server.resource_handlers import resource_handlers, with_links
from kbes.server.serve_limits import DEFAULT_SERVE_LIMITS, ServeLimits
from kbes.server.standing import REVOKED, GrantsNow, Revoked
from kbes.server.stdio import AnsweringReadStream
from kbes.server.stop_signal import StopSignal
from kbes.store.application import KnowledgeBaseStore
from kbes.tools import TOOLS, Admitted, Grants, Tool
from kbes.tools.codes import KbesError
from kbes.tools.refusals import (
    approval_required,
    edit_declined,
    edits_disabled,
    internal_error,
    refusing,
    unknown_tool,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")

APPROVAL_KEY = "kbes_approve_write"
"""The key of the approval question inside an `InputRequiredResult` (protocol 2026-07-28)."""
APPROVAL_STATE = "kbes-approval-asked:v1"
"""The `requestState` that proves the server asked; the SDK seals it and binds it to the call."""
APPROVAL_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
"""Nothing to fill in: accepting the form is the approval."""

STORE_THREADS = 4
"""Tool calls run SQLite work in worker threads; fewer than the store's connection pool (5), so
a burst of calls queues here instead of timing out on the pool."""
HEAVY_THREADS = 1
"""Of those, how many may run heavy work at once (a diff, an approval prompt's diff): each is
bounded (`kbes.log.line_diff`), and one at a time leaves the other threads, and most of the
GIL, to searches and reads."""
STOP_GRACE = 2.0
"""Seconds a stopping HTTP server lets the requests in flight finish before it ends them
(within hypercorn's own graceful timeout, 3 s, past which it cancels them noisily)."""


# The server ------------------------------------------------------------------------------------


class KbesMCP:
    """An MCP server over one store: the tools, the grants, the edit policy, the tokens."""

    def __init__(
        self,
        store: KnowledgeBaseStore,
        *,
        grants: Grants,
        tools: Iterable[Tool] | None = None,
        edits: EditPolicy = "ask",
        tokens: Tokens | TokensFile | None = None,
        instructions: str | None = None,
        name: str = SERVER_NAME,
        approval_keys: Sequence[str] | None = None,
        push_interval: float = DEFAULT_INTERVAL,
        limits: ServeLimits = DEFAULT_SERVE_LIMITS,
    ) -> None:
        """`approval_keys`: secrets (>= 32 bytes each) sealing the approval round trip of
        2026-07-28 clients, the first sealing and all unsealing; several servers sharing them
        accept each other's approvals. Default: a key of this process alone. `limits`: the
        timeouts and bounds every client is held to (`kbes.server.serve_limits`)."""
        if edits not in EDIT_POLICIES:
            raise ValueError(f"edits must be one of {EDIT_POLICIES}, not {edits!r}")
        self.store = store
        self.grants = grants
        self.tools: dict[str, Tool] = {}
        for tool in TOOLS.values() if tools is None else tools:
            if tool.name in self.tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
        self.edits: EditPolicy = edits
        self.tokens = tokens
        self.limits = limits
        self._listing = [mcp_tool(tool, store.limits) for tool in self.tools.values()]
        self._limiter = anyio.CapacityLimiter(STORE_THREADS)
        self._heavy = anyio.CapacityLimiter(HEAVY_THREADS)
        # Articles as resources under the caller's grants, and push on change (issue 14).
        self.tail, self.subscriptions, resources = resource_handlers(
            store,
            self._caller_grants,
            self._limiter,
            push_interval=push_interval,
            max_subscriptions=limits.max_subscriptions,
            standing=self._standing,
        )
        self.sessions: SessionGuard | None = None
        """The HTTP sessions' guard, once `http_app` has built it."""
        self.server = KbesServer(
            name,
            version=server_version(),
            title=SERVER_TITLE,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            **resources,
            **prompt_handlers(store, self._caller_grants, self._limiter, self.tools),
        )
        # Protocol 2026-07-28 asks for approval inside the call's result and resumes with the
        # answer; the boundary seals our requestState and binds it to this very call.
        security = (
            RequestStateSecurity(keys=list(approval_keys))
            if approval_keys
            else RequestStateSecurity.ephemeral()
        )
        self.server.middleware.append(RequestStateBoundary(security, default_audience=name))
        # Innermost, around every handler: a failure that is no Exception fails one request.
        self.server.middleware.append(ContainFailures())

    # Handlers -----------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._listing)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        tool = self.tools.get(params.name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=unknown_tool(params.name, list(self.tools))
            )
        result: types.CallToolResult | types.InputRequiredResult
        try:
            result = await self._run_call(ctx, params, tool)
            ended = "ok" if isinstance(result, types.CallToolResult) else "input required"
        except KbesError as e:
            result, ended = error_result(e), e.code
        if logger.isEnabledFor(logging.INFO):
            # One access line per call: who (the token's NAME from --tokens), which tool, and
            # how it ended; never the arguments, which hold article text, nor the token.
            logger.info("%s called %s: %s", self._caller_name(), tool.name, ended)
        return result

    async def _run_call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, tool: Tool
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The contract's two steps with the user's approval between them: admit (parse and
        the one grant check, so bad or ungranted input is refused without asking), approve a
        write, answer. A refusal at any step is raised as its `KbesError`."""
        call = tool.admit(params.arguments, self._caller_grants(), self.store.limits)
        if call.writes:
            with refusing(call.asked):  # the approval reads the article: the store may refuse
                question = await self._approve(ctx, params, call)
            if question is not None:
                return question
            # Past `_approve` under --edits ask, the user accepted this very call.
            author = self._author(ctx)
            call = call.by(author.approving() if self.edits == "ask" else author)
        try:
            if tool.heavy:
                async with self._heavy:
                    result = await self._in_thread(call.answer, self.store)
            else:
                result = await self._in_thread(call.answer, self.store)
        except KbesError:
            raise
        except BaseException as e:
            # A Rust panic (pyo3's PanicException) is a BaseException: answered too, so it
            # never reaches the SDK's session manager (kbes.server.failures).
            if not isinstance(e, Exception) and not unforeseen(e):
                raise
            logger.error("tool %s failed", tool.name, exc_info=e)
            raise internal_error(tool.name) from None
        return with_links(ok_result(result), result)

    async def _in_thread(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` in one of the store's worker threads."""
        return await anyio.to_thread.run_sync(function, *args, limiter=self._limiter)

    async def _approval_message(self, call: Admitted) -> str:
        """The approval prompt, read through the store: heavy work (it diffs the content)."""
        async with self._heavy:
            return await self._in_thread(approval_message, call, self.store)

    def _caller_name(self) -> str:
        """The NAME of the caller's token (HTTP with --tokens), else who the transport says."""
        if self.tokens is None:
            return "the client"
        access = get_access_token()
        return "an unknown token" if access is None else access.client_id

    def _author(self, ctx: ServerRequestContext[Any]) -> Author:
        """Who the call's writes are recorded as, from what this server knows for certain and
        never from the arguments: the NAME of the caller's bearer token (HTTP with --tokens;
        the secret is never kept), else the client as it declared itself in `clientInfo`
        (stdio, or HTTP on loopback without tokens), which nothing checks."""
        if self.tokens is not None:
            access = get_access_token()
            if access is not None:  # always, behind the bearer middleware
                return token_author(access.client_id)
        params = ctx.session.client_params
        info = None if params is None else params.client_info
        if info is None:
            return declared_client(None)
        return declared_client(info.name, info.version)

    def _caller_grants(self) -> Grants:
        """The server's grants, narrowed to the bearer token's over HTTP with --tokens."""
        if self.tokens is None:
            return self.grants
        access = get_access_token()
        holder = None if access is None else self.tokens.named(access.client_id)
        if holder is None:  # unreachable behind the bearer middleware; fail closed anyway
            return frozenset()
        return narrow(self.grants, holder.grants)

    def _standing(self) -> GrantsNow:
        """The caller's grants at each later moment, for its streams (kbes.server.standing):
        with --tokens, its token's grants in the tokens file as it is then, read again if it
        changed, or REVOKED once its NAME is gone; else the server's."""
        if self.tokens is None:
            grants = self.grants
            return lambda: grants
        access = get_access_token()
        if access is None:  # unreachable behind the bearer middleware; fail closed anyway
            return lambda: REVOKED
        tokens, name, server = self.tokens, access.client_id, self.grants

        def now() -> Grants | Revoked:
            current = tokens.refresh() if isinstance(tokens, TokensFile) else tokens
            holder = current.named(name)
            return REVOKED if holder is None else narrow(server, holder.grants)

        return now

    async def _approve(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        call: Admitted,
    ) -> types.InputRequiredResult | None:
        """None when the write may go ahead; the question to put to the user (protocol
        2026-07-28: answered in a retry of the call); or the refusal, raised."""
        name = call.tool.name
        if self.edits == "allow":
            return None
        if self.edits == "deny":
            raise edits_disabled(name)
        if not client_can_elicit(ctx.session.client_capabilities):
            raise approval_required(name, "unsupported")
        # The prompt shows the article as it is now, read through the store (in a worker).
        message = functools.partial(self._approval_message, call)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer = (params.input_responses or {}).get(APPROVAL_KEY)
            if answer is None or params.request_state != APPROVAL_STATE:
                return types.InputRequiredResult(
                    input_requests={APPROVAL_KEY: elicit_request(await message())},
                    request_state=APPROVAL_STATE,
                )
            if not isinstance(answer, types.ElicitResult):
                raise approval_required(name, "other_answer")
            action = answer.action
        else:
            if not ctx.session.can_send_request:
                raise approval_required(name, "no_request")
            try:
                answer = await ctx.session.elicit_form(
                    await message(), APPROVAL_SCHEMA, related_request_id=ctx.request_id
                )
            except MCPError as e:
                raise approval_required(name, "failed", e) from None
            action = answer.action
        if action == "accept":
            return None
        raise edit_declined(name, action)

    # Transports -------------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one client on this process's stdin/stdout until it closes them."""
        async with stdio_server() as (read_stream, write_stream):
            # The SDK drops lines it cannot parse; kbes.server.stdio answers each (see there).
            await self.server.run(
                AnsweringReadStream(read_stream, write_stream),
                write_stream,
                self.server.create_initialization_options(),
            )

    def http_app(self, host: str = "127.0.0.1", port: int = 0) -> ASGIApp:
        """The streamable HTTP app, at `/mcp`; behind bearer tokens when the server has any;
        its handshake-era sessions bounded per client and expired when idle (`SessionGuard`),
        whose end drops their subscriptions."""
        auth, verifier = None, None
        if self.tokens is not None:
            # The SDK's bearer middleware answers 401 (with WWW-Authenticate) for a missing or
            # unknown token. No authorization server is advertised: tokens come from the file.
            # Validated from plain data, as pydantic parses the URL text (the model's type is
            # the parsed URL, and building one by hand would add a trailing slash).
            auth = AuthSettings.model_validate(
                {"issuer_url": f"http://{url_host(host)}:{port}", "resource_server_url": None}
            )
            verifier = TokensFileVerifier(self.tokens)
        app = self.server.streamable_http_app(
            host=host,
            # Without tokens, only requests addressed to this server (kbes.server.rebinding);
            # with them, the SDK's default (the check on 127.0.0.1, localhost and ::1).
            transport_security=local_only(url_host(host)) if self.tokens is None else None,
            auth=auth,
            token_verifier=verifier,
            session_idle_timeout=self.limits.session_idle_timeout,
            max_sessions=self.limits.max_sessions,
        )
        # Without tokens every local client shares one address: a client at its limit has
        # its least recently used idle session ended rather than be refused (defect 11).
        self.sessions = SessionGuard(
            app,
            owner=self._owner,
            limits=self.limits,
            on_end=self.subscriptions.end_session,
            make_room=self.tokens is None,
        )
        return self.sessions

    def _owner(self, scope: Scope) -> str | None:
        """Whose sessions a request counts against: the bearer token's NAME with --tokens (None
        for a missing or unknown token, which the SDK refuses), else the client's address."""
        if self.tokens is None:
            client = scope.get("client")
            return f"client address {client[0] if client else 'unknown'}"
        value = header(scope.get("headers", ()), b"authorization") or ""
        scheme, _, token = value.partition(" ")
        holder = self.tokens.holder(token.strip()) if scheme.lower() == "bearer" else None
        return None if holder is None else f"token {holder.name}"

    async def serve_http(self, sock: socket.socket, *, log_level: str = "warning") -> str | None:
        """Serve streamable HTTP on an already bound socket until SIGINT or SIGTERM (the
        signal's name is returned), with the
        connection limits and timeouts of `self.limits` (docs/operations.md). Hypercorn, not
        uvicorn: its keep-alive timer runs from a connection's opening (and from each
        response) until the next request's headers are complete, so a client that never
        finishes its headers is closed like an idle one; uvicorn times nothing before the
        first request."""
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        host, port = sock.getsockname()[:2]
        app = InFlightLimit(self.http_app(host, port), limit=self.limits.max_connections)
        config = Config()
        config.bind = [f"fd://{os.dup(sock.fileno())}"]  # hypercorn closes its copy
        config.keep_alive_timeout = self.limits.header_timeout
        config.h11_max_incomplete_size = self.limits.max_header_bytes
        config.loglevel = log_level.upper()
        config.errorlog = logging.getLogger("hypercorn.error")
        if log_level in ("debug", "info"):
            config.accesslog = logging.getLogger(ACCESS_LOGGER)
            # The request line as uvicorn prints it, with the path but not the query string.
            config.access_log_format = '%(h)s - "%(m)s %(U)s HTTP/%(H)s" %(s)s'
        stop = StopSignal()

        async def stopping() -> None:
            await stop.event.wait()
            await app.drain(STOP_GRACE)

        async def run_server() -> None:
            # Our trigger, not hypercorn's own signal handlers, so a stop is a graceful return;
            # and hypercorn in a task of its own: on Python 3.11 the asyncio.TaskGroup it stops
            # leaves its task's cancel count raised, which in the main task turned every stop
            # into a CancelledError traceback and exit status 1 (issue 35, defect 10).
            await serve(app, config, mode="asgi", shutdown_trigger=stopping)  # type: ignore[arg-type]
            tasks.cancel_scope.cancel()

        async with anyio.create_task_group() as tasks:
            await tasks.start(stop.watch)
            if self.sessions is not None:
                tasks.start_soon(self.sessions.run)
            tasks.start_soon(run_server)
        return stop.received


# Wire shapes --------------------------------------------------------------------------------


def mcp_tool(tool: Tool, limits: Limits = DEFAULT_LIMITS) -> types.Tool:
    """The `tools/list` entry of a tool, exactly as the `Tool` states it under the `limits`
    of the store it serves."""
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema(limits),
        output_schema=tool.output_schema(),
        annotations=types.ToolAnnotations.model_validate(tool.annotations),
    )


def ok_result(result: msgspec.Struct) -> types.CallToolResult:
    """The result as structured content, and the same JSON as text for clients that only read
    text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=msgspec.json.encode(result).decode())],
        structured_content=msgspec.to_builtins(result),
    )


def error_result(error: KbesError) -> types.CallToolResult:
    """A tool error the model can read: `isError` and the error's JSON (code, message,
    details such as `field` or `current_version`)."""
    text = msgspec.json.encode(error.to_dict()).decode()
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def client_can_elicit(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared form elicitation (a bare `elicitation: {}` counts)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def elicit_request(message: str) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)
    )


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free port, read it back after)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


__all__ = [
    "APPROVAL_KEY",
    "EDIT_POLICIES",
    "EditPolicy",
    "KbesMCP",
    "bind",
    "url_host",
]
