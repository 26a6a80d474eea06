"""Every stdio line gets an answer: the SDK's stdio transport drops the ones it cannot parse.

`mcp.server.stdio.stdio_server` puts a line that fails `jsonrpc_message_adapter.validate_json`
on the read stream as an exception, and the server's dispatcher logs that at debug level and
drops it. So garbage, `{}`, a batch or truncated JSON got no `-32700`/`-32600` (the streamable
HTTP transport answers them, with 400), and a request holding an escaped lone surrogate
(`"\\ud800"`, which the SDK's JSON parser refuses and Python's accepts) left its client
waiting for an answer that never came. `AnsweringReadStream` wraps the read stream handed to
`Server.run` (the SDK's `ReadStream` protocol), answers each such line on the write stream with
a JSON-RPC error built from the SDK's own types, logs why on stderr, and passes every parsed
message through untouched.

The upstream report: docs/upstream/mcp-stdio-drops-unparseable-lines.md."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

logger = logging.getLogger(__name__)

SHOWN = 200
"""How much of a refused line the log shows."""


class AnsweringReadStream:
    """The SDK's read stream, minus the exceptions: each is answered and logged instead."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write_stream = write_stream

    @property
    def last_context(self) -> Any:
        """The sender's context, which the dispatcher reads off the stream it was given."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        return await self._next_message(self._inner.receive)

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage:
        return await self._next_message(self._inner.__anext__)

    async def _next_message(self, get: Callable[[], Awaitable[Any]]) -> SessionMessage:
        """The next parsed message `get` yields, each refused line answered on the way: one
        loop for both ways the dispatcher reads (`receive` and async iteration)."""
        while True:
            item = await get()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)

    async def _answer(self, error: Exception) -> None:
        try:
            answer = refusal(error)
        except Exception:  # reading the refused line failed too: still answered, never fatal
            logger.exception("stdio: reading a refused line failed")
            answer = types.PARSE_ERROR, "Parse error: the line could not be read", None, ""
        if answer is None:
            return
        code, message, request_id, line = answer
        shown = line if len(line) <= SHOWN else f"{line[:SHOWN]}… ({len(line)} characters)"
        logger.warning("stdio: refused a line (%s): %s: %r", code, message, shown)
        if code == 0:  # a notification: JSON-RPC sends no answer to one
            return
        body = types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )
        await self._write_stream.send(SessionMessage(body))


def refusal(error: Exception) -> tuple[int, str, int | str | None, str] | None:
    """(code, message, id to answer, the line) for a line the SDK could not take: code 0 for a
    notification, which gets no answer; None for a blank line. The id is recovered when
    Python's JSON parser reads the line, so a client waiting on that id hears back."""
    if not isinstance(error, ValidationError) or not error.errors():
        return types.INTERNAL_ERROR, f"the line could not be read: {error}", None, ""
    errors = error.errors()
    first = errors[0]
    if first["type"] == "json_invalid":
        value = first.get("input")
        line = value if isinstance(value, str) else ""
        if not line.strip():
            return None
        try:
            parsed = json.loads(line)
        except (ValueError, RecursionError):  # nested deeper than Python's parser goes
            return types.PARSE_ERROR, f"Parse error: {first['msg']}", None, line.strip()
        if _has_surrogate(parsed):
            message = (
                "Parse error: the line escapes a lone UTF-16 surrogate (such as \\ud800), "
                "which is not Unicode text; send each character whole"
            )
        else:
            message = f"Parse error: {first['msg']}"
        return _code(parsed, types.PARSE_ERROR), message, _id(parsed), line.strip()
    value = _message(errors)
    line = json.dumps(value, ensure_ascii=True)[: SHOWN * 2]
    if isinstance(value, list):
        message = "Invalid Request: batches are not supported; send one JSON-RPC message a line"
    else:
        message = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
    return _code(value, types.INVALID_REQUEST), message, _id(value), line


def _message(errors: list[Any]) -> Any:
    """The parsed line, from the errors of a line that is JSON but no JSON-RPC message: the
    input of an error on the whole message, or of a missing field (its parent's input)."""
    for entry in errors:
        if len(entry["loc"]) <= 1 or (entry["type"] == "missing" and len(entry["loc"]) == 2):
            return entry.get("input")
    return None


def _code(parsed: Any, code: int) -> int:
    """0 for a notification (a method and no id), else `code`."""
    if isinstance(parsed, dict) and "method" in parsed and "id" not in parsed:
        return 0
    return code


def _id(parsed: Any) -> int | str | None:
    """The request's id if it is one that can be answered, else None (JSON-RPC's null)."""
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool):
        return None
    if isinstance(request_id, int):
        return request_id
    if isinstance(request_id, str) and not _has_surrogate(request_id):
        return request_id
    return None


def _has_surrogate(value: Any) -> bool:
    """Whether a parsed line holds a lone surrogate, which UTF-8 cannot carry."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:  # as deep as Python's parser goes: no id is read from it anyway
        return False
    return False
