"""A request that fails in a way nobody foresaw is answered as an error; it never stops the server.

The MCP SDK turns an `Exception` raised by a handler into an error answer, but lets any other
`BaseException` through, and over streamable HTTP one that reaches the session manager ends
its task group: every later request, for any client, is answered 500 while the process stays
up (issue 35, defect 2). pyo3 raises a Rust panic (tantivy's, say) as `PanicException`, a
`BaseException`. `ContainFailures` wraps every request and notification handler (a server
middleware) and answers such a failure `internal_error`, so only that request fails; the
stops a process must obey (cancellation, Ctrl-C, `sys.exit`) pass through untouched."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

logger = logging.getLogger(__name__)


def is_stop(error: BaseException) -> bool:
    """Whether `error` asks the task or the process to stop (never to be answered away)."""
    stops = (anyio.get_cancelled_exc_class(), KeyboardInterrupt, SystemExit, GeneratorExit)
    if isinstance(error, BaseExceptionGroup):
        return any(is_stop(inner) for inner in error.exceptions)
    return isinstance(error, stops)


def unforeseen(error: BaseException) -> bool:
    """A failure no handler answers: not an `Exception`, and no stop."""
    return not isinstance(error, Exception) and not is_stop(error)


class ContainFailures:
    """Server middleware: a handler's unforeseen `BaseException` becomes an internal error."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        try:
            return await call_next(ctx)
        except BaseException as e:
            if not unforeseen(e):
                raise
            logger.error("%s failed inside kbes", ctx.method, exc_info=e)
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"{ctx.method} failed inside kbes (the server log has the details); "
                "retrying is safe",
            ) from None
