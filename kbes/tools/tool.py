"""What one agent tool is: its name and words for the model, its wire types, its annotations,
and the function that answers it once the caller's grants have admitted the request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

import msgspec

from kbes.errors import InvalidArgument, invalid_argument
from kbes.limits import encodes
from kbes.tools.grants import Grants, admit
from kbes.tools.wire import NOT_UNICODE, Request, Wire

if TYPE_CHECKING:
    from kbes.application import KnowledgeBaseStore

READ_ONLY = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "openWorldHint": False,
}
WRITE = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": True,
    "openWorldHint": True,
}


def knowledge_base_of(request: Any) -> str:
    """The knowledge base a request names, as the caller wrote it."""
    return request.knowledge_base_id  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Tool:
    """One agent tool: its contract, and `answer`, which runs it on a knowledge base the
    caller's grants admitted. `scope` reads that knowledge base's id off a request (raising a
    `KbesError` when the request cannot name one, as a poll of an unknown resource type)."""

    name: str
    title: str
    description: str
    request: type[Request]
    result: type[Wire]
    annotations: dict[str, bool]
    answer: Callable[[KnowledgeBaseStore, Any, UUID], Wire] = field(repr=False)
    scope: Callable[[Any], str] = field(default=knowledge_base_of, repr=False)

    def input_schema(self) -> dict[str, Any]:
        return inline_schema(self.request)

    def output_schema(self) -> dict[str, Any]:
        return inline_schema(self.result)

    def parse(self, arguments: dict[str, Any] | bytes | str | None) -> Request:
        """Validate raw arguments against the request struct; `invalid_argument` otherwise."""
        try:
            if isinstance(arguments, bytes | str):
                return msgspec.json.decode(arguments, type=self.request)
            return msgspec.convert(arguments or {}, self.request)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            raise invalid_argument(e) from None
        except UnicodeEncodeError:
            # msgspec encodes a string to UTF-8 to parse it as a date-time, and a lone
            # surrogate ("\ud800", which JSON can escape) has no UTF-8 form.
            raise not_unicode(arguments) from None

    def admit(self, request: Any, grants: Grants) -> UUID:
        """The knowledge base the request may touch; `not_found` if the grants do not admit
        it. The one grant check: a server calls it before asking the user to approve a write,
        so an ungranted id is refused without asking."""
        return admit(self.scope(request), grants)

    def run(self, store: KnowledgeBaseStore, request: Any, grants: Grants) -> Wire:
        """Admit the parsed request, then answer it."""
        return self.answer(store, request, self.admit(request, grants))


def not_unicode(arguments: Any) -> InvalidArgument:
    """`invalid_argument` naming the first field whose text holds a lone surrogate."""
    fields = arguments.items() if isinstance(arguments, dict) else []
    field = next((k for k, v in fields if isinstance(v, str) and not encodes(v)), None)
    return InvalidArgument(NOT_UNICODE + (f" - at `$.{field}`" if field else ""), field=field)


def inline_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """msgspec's JSON schema for `struct`, with the top-level `$ref` resolved in place, as MCP
    clients expect an object schema at the top."""
    schema = msgspec.json.schema(struct)
    defs = schema.pop("$defs", {})
    top = dict(defs.pop(struct.__name__))
    top.pop("title", None)
    if defs:
        top["$defs"] = defs
    return top
