"""What one agent tool is: its name and words for the model, its wire types, its annotations,
and the function that answers it once the caller's grants have admitted the request.

A call has two steps, so a server can put the user's approval between them: `Tool.admit`
parses the arguments and checks the grants (nothing is read or written yet), and the
`Admitted` call it returns `answer`s. `Tool.run` and `kbes.tools.call_tool` take both at once."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import msgspec

from kbes.domain.author import Author
from kbes.domain.clock import parse_timestamp, sub_microsecond
from kbes.domain.errors import NotATime
from kbes.domain.limits import DEFAULT_LIMITS, Limits, encodes
from kbes.tools.codes import InvalidArgument
from kbes.tools.grants import Grants, admit
from kbes.tools.refusals import Asked, invalid_argument, not_unicode, refusal, refusing
from kbes.tools.wire import Request

if TYPE_CHECKING:
    from kbes.store.application import KnowledgeBaseStore

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


class NamesKnowledgeBase(Protocol):
    """A request with a `knowledge_base_id` field, as all but the poll's have."""

    @property
    def knowledge_base_id(self) -> str: ...


def knowledge_base_of(request: NamesKnowledgeBase) -> str:
    """The knowledge base a request names, as the caller wrote it."""
    return request.knowledge_base_id


@dataclass(frozen=True)
class Tool:
    """One agent tool: its contract, and `answer`, which runs it on a knowledge base the
    caller's grants admitted. `scope` reads that knowledge base's id off a request (raising a
    `KbesError` when the request cannot name one, as a poll of an unknown resource type).
    `heavy`: an answer may keep a CPU busy for a while (a diff, bounded as it is), so a server
    runs such calls one at a time, beside the others rather than in their place. `authored`:
    the tool writes, and `answer` takes the call's author as a fourth argument (`author`),
    which the door that took the call knows (a token's name, a declared client), never the
    arguments."""

    name: str
    title: str
    description: str
    request: type[msgspec.Struct]
    result: type[msgspec.Struct]
    annotations: dict[str, bool]
    answer: Callable[..., msgspec.Struct] = field(repr=False)
    scope: Callable[[Any], str] = field(default=knowledge_base_of, repr=False)
    heavy: bool = False
    authored: bool = False

    def request_type(self, limits: Limits = DEFAULT_LIMITS) -> type[msgspec.Struct]:
        """The request struct as a store with `limits` (its `store.limits`) takes it; an extra
        tool's own struct, not a `Request`, is taken as it is."""
        if issubclass(self.request, Request):
            return self.request.under(limits)
        return self.request

    def input_schema(self, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
        """The schema of the arguments, as a store with `limits` takes them."""
        return inline_schema(self.request_type(limits))

    def output_schema(self) -> dict[str, Any]:
        return inline_schema(self.result)

    def parse(
        self, arguments: dict[str, Any] | bytes | str | None, limits: Limits = DEFAULT_LIMITS
    ) -> msgspec.Struct:
        """Validate raw arguments against the request struct, under the `limits` of the store
        that will answer (`store.limits`); `invalid_argument` otherwise."""
        request = self.request_type(limits)
        try:
            if isinstance(arguments, bytes | str):
                parsed = msgspec.json.decode(arguments, type=request)
            else:
                parsed = msgspec.convert(arguments or {}, request)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            raise invalid_argument(e) from None
        except UnicodeEncodeError:
            # msgspec encodes a string to UTF-8 to parse it as a date-time, and a lone
            # surrogate ("\ud800", which JSON can escape) has no UTF-8 form.
            raise lone_surrogate(arguments) from None
        refuse_sub_microsecond(request, arguments)
        return parsed

    @property
    def writes(self) -> bool:
        """Whether the tool may write (it is not annotated read-only): a server asks the user
        to approve each such call."""
        return self.annotations.get("readOnlyHint") is not True

    def admit(
        self,
        arguments: dict[str, Any] | bytes | str | None,
        grants: Grants,
        limits: Limits = DEFAULT_LIMITS,
    ) -> Admitted:
        """The first step of a call: parse the arguments (under the answering store's
        `limits`) and check them against the grants (`invalid_argument`, or `not_found` for a
        knowledge base they do not admit). A server asks the user to approve a write only
        after it, so bad or ungranted input is refused without asking."""
        return self.admitted(self.parse(arguments, limits), grants)

    def admitted(self, request: Any, grants: Grants) -> Admitted:
        """A parsed request past the one grant check."""
        return Admitted(self, request, admit(self.scope(request), grants))

    def run(
        self, store: KnowledgeBaseStore, request: Any, grants: Grants, author: Author | None = None
    ) -> msgspec.Struct:
        """Admit the parsed request, then answer it (as `author`, for a tool that writes)."""
        return self.admitted(request, grants).by(author).answer(store)


@dataclass(frozen=True)
class Admitted:
    """A call the grants admitted to `knowledge_base`, not yet answered: the step where a
    server asks the user to approve a write (`writes`), with `request` to show them."""

    tool: Tool
    request: Any
    knowledge_base: UUID
    author: Author | None = None
    """Who the call's writes are recorded as: set by the door (`by`), never from `request`."""

    @property
    def writes(self) -> bool:
        return self.tool.writes

    def by(self, author: Author | None) -> Admitted:
        """The same call, its writes recorded as `author`'s (None: the store's default, the
        person running the process)."""
        return replace(self, author=author)

    def answer(self, store: KnowledgeBaseStore) -> msgspec.Struct:
        """The second step: run the tool on the store. The facts it is refused for become
        the wire's refusals (`KbesError`) here, worded for what the caller asked."""
        with refusing(self.asked):
            if self.tool.authored:
                return self.tool.answer(store, self.request, self.knowledge_base, self.author)
            return self.tool.answer(store, self.request, self.knowledge_base)

    @property
    def asked(self) -> Asked:
        """The call's ids as the caller wrote them, and whether it writes."""
        return Asked(
            knowledge_base_id=self.tool.scope(self.request),
            article_id=getattr(self.request, "article_id", None),
            writes=self.writes,
        )


@functools.cache
def time_fields(request: type[msgspec.Struct]) -> tuple[tuple[str, str], ...]:
    """(name, JSON key) of each date-time field of `request` (a version, in the five tools)."""
    return tuple(
        (f.name, f.encode_name)
        for f in msgspec.inspect.type_info(request).fields  # type: ignore[attr-defined]
        if isinstance(getattr(f.type, "type", f.type), msgspec.inspect.DateTimeType)
    )


def refuse_sub_microsecond(
    request: type[msgspec.Struct], arguments: dict[str, Any] | bytes | str | None
) -> None:
    """`invalid_argument` for a date-time argument finer than a microsecond, which msgspec
    rounds to the nearest one: a version so rounded could name a version the text does not,
    and every other door refuses it (`kbes.domain.clock.parse_timestamp`)."""
    fields = time_fields(request)
    if not fields or not arguments:
        return
    if isinstance(arguments, bytes | str):
        arguments = msgspec.json.decode(arguments, type=dict[str, msgspec.Raw])
    for name, key in fields:
        raw = arguments.get(key)
        if isinstance(raw, msgspec.Raw):
            raw = msgspec.json.decode(raw)
        if isinstance(raw, str) and sub_microsecond(raw):
            try:
                parse_timestamp(raw)
            except ValueError as e:
                raise refusal(NotATime(raw, str(e), name)) from None


def lone_surrogate(arguments: Any) -> InvalidArgument:
    """`invalid_argument` naming the first field whose text holds a lone surrogate."""
    fields = arguments.items() if isinstance(arguments, dict) else []
    return not_unicode(next((k for k, v in fields if isinstance(v, str) and not encodes(v)), None))


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
