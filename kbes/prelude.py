"""Answer the opening of an MCP stdio session before the MCP SDK has finished importing.

Why: importing the official MCP SDK (`mcp` 2.x) takes most of a second (the pydantic models of
`mcp_types`, `mcp/__init__` importing the client stack), and an agent starting `kbes serve` waits
that long for its first answer. Yet over stdio a session nearly always opens the same way: a
handshake-era `initialize`, `notifications/initialized`, `tools/list`, perhaps `ping`. So
`kbes serve` imports the SDK in a background thread at once and meanwhile answers exactly those
messages here, from kbes's own msgspec-declared tools, with the bytes the SDK server would send.

As soon as anything else arrives, the connection is handed over to the SDK server: it is fed the
messages the prelude saw (requests under private ids, whose answers are dropped after checking
them against what the prelude sent), so its session state is exactly what the client believes,
and everything after passes straight through. Anything the prelude does not recognise with
certainty (another protocol era, unusual params, a malformed line) goes to the SDK untouched.
`tests/test_serve_prelude.py` runs `kbes serve` with and without the prelude and compares the
answers; `kbes serve --no-prelude` (or `KBES_SERVE_PRELUDE=0`) runs the SDK alone.

This module never imports the SDK. It also holds what the prelude and `kbes.server` must agree
on (the server's name, title, version and instructions), so that both take them from one place.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import io
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import UUID

from kbes.application import KnowledgeBaseStore
from kbes.tools import Grants, Tool

logger = logging.getLogger(__name__)

SERVER_NAME = "kbes"
SERVER_TITLE = "kbes knowledge bases"

# What the server says about itself: shared by the prelude and `kbes.server` ----------------------


def server_version() -> str:
    """The installed kbes version, as `serverInfo.version`."""
    try:
        from importlib.metadata import version

        return version("kbes")
    except Exception:
        return "0"


def canonical_id(value: object) -> str | None:
    """A knowledge-base id as the store compares them (canonical UUID text), or None."""
    try:
        return str(UUID(str(value).strip()))
    except ValueError:
        return None


def describe_grants(store: KnowledgeBaseStore, grants: Grants) -> list[tuple[str, str]]:
    """(id, name) of the granted knowledge bases that exist now, for the model's instructions."""
    store.catch_up()
    if grants is None:
        return [(row["knowledge_base_id"], row["name"]) for row in store.views.knowledge_bases()]
    named = []
    for kb in sorted(grants):
        row = store.views.knowledge_base(kb)
        if row is not None:
            named.append((kb, row["name"]))
    return named


def instructions_for(knowledge_bases: Sequence[tuple[str, str]] | None) -> str:
    """Server instructions for the model: how to cite and edit, and (when every caller sees the
    same grants) which knowledge bases to pass."""
    text = (
        "kbes serves knowledge bases whose citations are version stamps. Search or read, then "
        "cite {knowledge_base_id, article_id, updated_at}. To edit, pass the updated_at of a "
        "recent read as expected_version and a fresh idempotency_key; on version_conflict read "
        "again and re-apply. Keep poll_resource_events' next_sequence to learn later which "
        "citations changed."
    )
    if knowledge_bases:
        listed = "; ".join(f"{name} (knowledge_base_id {kb})" for kb, name in knowledge_bases)
        text += f" Knowledge bases available: {listed}."
    return text


# The SDK's protocol versions, without importing the SDK ---------------------------------------


@dataclass(frozen=True)
class ProtocolVersions:
    handshake: tuple[str, ...]
    """Versions reached through `initialize`; the prelude answers only these."""
    modern: tuple[str, ...]
    """Versions of the per-request envelope era (no handshake); always the SDK's."""


@functools.cache
def protocol_versions() -> ProtocolVersions:
    """The installed SDK's own registry, `mcp_types/version.py`, read without importing the
    `mcp_types` package (its `__init__` builds every pydantic model, a third of a second)."""
    loaded = sys.modules.get("mcp_types.version")
    if loaded is None:
        spec = importlib.util.find_spec("mcp_types")  # finds the package, does not import it
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("the MCP SDK (mcp_types) is not installed")
        path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        source = importlib.util.spec_from_file_location("kbes._mcp_types_version", path)
        if source is None or source.loader is None:
            raise ImportError(f"cannot read {path}")
        loaded = importlib.util.module_from_spec(source)
        source.loader.exec_module(loaded)
    return ProtocolVersions(
        handshake=tuple(loaded.HANDSHAKE_PROTOCOL_VERSIONS),
        modern=tuple(loaded.MODERN_PROTOCOL_VERSIONS),
    )


# The answers, shaped as the SDK shapes them -------------------------------------------------------
#
# The SDK validates every result against the wire model of the connection's protocol version
# (mcp_types/_v2025_11_25 serves every handshake version) and writes it with pydantic:
# compact JSON, non-ASCII unescaped, declared fields in the model's (alphabetical) order with
# None left out, extra keys (allowed only in the schemas) after them in their own order.

TOOLS_CAPABILITY: dict[str, Any] = {"tools": {"listChanged": False}}
"""The SDK's `get_capabilities()` for a server with a `tools/list` handler and nothing else."""
TOOL_ANNOTATION_FIELDS = (
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
    "readOnlyHint",
    "title",
)
SCHEMA_FIELDS = ("$schema", "properties", "required", "type")


def initialize_result(
    protocol_version: str,
    *,
    instructions: str | None,
    name: str = SERVER_NAME,
    title: str | None = SERVER_TITLE,
    version: str | None = None,
) -> dict[str, Any]:
    """The `initialize` result the SDK server sends for a negotiated `protocol_version`."""
    server_info = {"name": name, "title": title, "version": version or server_version()}
    result: dict[str, Any] = {
        "capabilities": TOOLS_CAPABILITY,
        "instructions": instructions,
        "protocolVersion": protocol_version,
        "serverInfo": {key: value for key, value in server_info.items() if value is not None},
    }
    return {key: value for key, value in result.items() if value is not None}


def tool_entry(tool: Tool) -> dict[str, Any]:
    """A tool's `tools/list` entry, as `kbes.server.mcp_tool` states it and the SDK writes it."""
    annotations = {
        key: tool.annotations[key]
        for key in TOOL_ANNOTATION_FIELDS
        if tool.annotations.get(key) is not None
    }
    entry: dict[str, Any] = {
        "annotations": annotations,
        "description": tool.description,
        "inputSchema": _schema(tool.input_schema()),
        "name": tool.name,
        "outputSchema": _schema(tool.output_schema()),
        "title": tool.title,
    }
    return {key: value for key, value in entry.items() if value is not None}


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    declared = {key: schema[key] for key in SCHEMA_FIELDS if schema.get(key) is not None}
    extra = {k: v for k, v in schema.items() if k not in SCHEMA_FIELDS and v is not None}
    return declared | extra


def encode(value: Any) -> bytes:
    """JSON as pydantic writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@dataclass
class Answers:
    """What the prelude may answer, encoded once."""

    tools: Iterable[Tool]
    instructions: str | None
    name: str = SERVER_NAME
    title: str | None = SERVER_TITLE
    version: str = field(default_factory=server_version)
    versions: ProtocolVersions = field(default_factory=protocol_versions)

    def __post_init__(self) -> None:
        self.tools_list = encode({"tools": [tool_entry(tool) for tool in self.tools]})
        self.initialize = {
            version: encode(
                initialize_result(
                    version,
                    instructions=self.instructions,
                    name=self.name,
                    title=self.title,
                    version=self.version,
                )
            )
            for version in self.versions.handshake
        }


def response(request_id: int | str, result: bytes) -> bytes:
    """A JSON-RPC success line, as the SDK's stdio transport writes it."""
    return b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":' + result + b"}\n"


# Recognising what the prelude answers ------------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS = frozenset({"jsonrpc", "method", "params"})


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_line(line: bytes) -> dict[str, Any] | None:
    """One message as the SDK's stdio transport would read it, or None when the prelude cannot
    be sure it reads the line exactly as the SDK does."""
    body = line.removesuffix(b"\n").removesuffix(b"\r")
    if b"\r" in body:  # the SDK reads stdin with universal newlines: a lone CR splits the line
        return None
    if _SURROGATE_ESCAPE.search(body):  # parsers differ on lone surrogates; leave it to the SDK
        return None
    try:
        message = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except ValueError:  # bad UTF-8 or bad JSON
        return None
    return message if isinstance(message, dict) else None


def request_parts(message: dict[str, Any]) -> tuple[int | str, str, Any] | None:
    """(id, method, params) of a plain JSON-RPC request, else None."""
    if not message.keys() <= _REQUEST_KEYS or message.get("jsonrpc") != "2.0":
        return None
    request_id, method = message.get("id"), message.get("method")
    valid_id = isinstance(request_id, str) or (
        type(request_id) is int and -(2**63) <= request_id < 2**63
    )
    if not valid_id or not isinstance(method, str):
        return None
    return request_id, method, message.get("params")  # type: ignore[return-value]


def is_notification(message: dict[str, Any], method: str) -> bool:
    return (
        message.keys() <= _NOTIFICATION_KEYS
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == method
    )


def legacy_initialize_version(params: Any, versions: ProtocolVersions) -> str | None:
    """The protocol version of an `initialize` whose params the SDK certainly accepts, else None.

    Deliberately narrower than the SDK: a shape it might reject (or a version it would
    counter-offer) is left to the SDK."""
    if not isinstance(params, dict) or "_meta" in params:
        return None
    version = params.get("protocolVersion")
    if not isinstance(version, str) or version not in versions.handshake:
        return None
    info = params.get("clientInfo")
    if not isinstance(info, dict) or "icons" in info:
        return None
    if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return None
    if any(not isinstance(info.get(k), str | None) for k in ("title", "description", "websiteUrl")):
        return None
    return version if _plain_capabilities(params.get("capabilities")) else None


def _plain_capabilities(capabilities: Any) -> bool:
    """Client capabilities of the plain shape every SDK model accepts: objects three levels deep
    (`roots.listChanged` a boolean), anything below."""
    if not isinstance(capabilities, dict):
        return False
    for name, capability in capabilities.items():
        if not isinstance(capability, dict):
            return False
        for key, value in capability.items():
            if (name, key) == ("roots", "listChanged"):
                if not isinstance(value, bool):
                    return False
            elif not isinstance(value, dict) or not all(
                isinstance(inner, dict) for inner in value.values()
            ):
                return False
    return True


def _empty(params: Any) -> bool:
    return params is None or params == {}


# The prelude itself ------------------------------------------------------------------------------


class SdkImport:
    """Imports a module (the SDK server, through `kbes.server`) in a background thread."""

    def __init__(self, module: str = "kbes.server") -> None:
        self._name = module
        self._module: ModuleType | None = None
        self._error: BaseException | None = None
        # Not a daemon: a process that exits before the import ends waits for it, rather than
        # finalizing the interpreter under a half-done import.
        self._thread = threading.Thread(target=self._run, name="kbes-sdk-import")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._module = importlib.import_module(self._name)
        except BaseException as e:
            self._error = e

    def module(self) -> ModuleType:
        """The imported module, once the import is done (re-raises its error)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._module is not None
        return self._module


@dataclass
class Handover:
    """What the SDK server needs to carry on the session the prelude began."""

    stdin_fd: int
    stdout_fd: int
    lead: bytes
    """Bytes the SDK reads before the wire: the replayed messages, then everything the prelude
    read but did not answer, untouched."""
    expected: dict[str, bytes]
    """Private id of a replayed request -> the answer line the prelude already sent for it."""

    def streams(self) -> tuple[Any, Any]:
        """(stdin, stdout) for the SDK's `stdio_server`."""
        import anyio

        reader = io.TextIOWrapper(
            io.BufferedReader(_LeadThenFd(self.lead, self.stdin_fd)),
            encoding="utf-8",
            errors="replace",
        )
        writer = io.TextIOWrapper(os.fdopen(self.stdout_fd, "wb", closefd=False), encoding="utf-8")
        stdout = anyio.wrap_file(writer)
        if self.expected:
            return anyio.wrap_file(reader), _Suppress(stdout, self.expected)
        return anyio.wrap_file(reader), stdout


class _LeadThenFd(io.RawIOBase):
    """Reads `lead`, then the descriptor (which it never closes)."""

    def __init__(self, lead: bytes, fd: int) -> None:
        super().__init__()
        self._lead = memoryview(lead)
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._lead:
            count = min(len(buffer), len(self._lead))
            buffer[:count] = self._lead[:count]
            self._lead = self._lead[count:]
            return count
        data = os.read(self._fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Suppress:
    """The SDK's stdout, minus its answers to replayed requests (each compared with the answer
    the prelude sent: a difference is logged, as it means the prelude is out of date)."""

    def __init__(self, stdout: Any, expected: dict[str, bytes]) -> None:
        self._stdout = stdout
        self._expected = dict(expected)

    async def write(self, text: str) -> None:
        if self._expected and _PRIVATE_ID in text:
            try:
                request_id = json.loads(text).get("id")
            except ValueError:
                request_id = None
            sent = self._expected.pop(request_id, None) if isinstance(request_id, str) else None
            if sent is not None:
                if text.encode() != sent:
                    logger.warning(
                        "kbes serve: the stdio prelude answered differently from the MCP SDK "
                        "(prelude %s, SDK %s); run with --no-prelude and report it",
                        sent.decode(errors="replace")[:300],
                        text[:300],
                    )
                return
        await self._stdout.write(text)

    async def flush(self) -> None:
        await self._stdout.flush()


_PRIVATE_ID = "kbes-prelude-"


class Prelude:
    """The stdio wire while the SDK loads: answers the handshake, then hands over."""

    def __init__(self, stdin_fd: int, stdout_fd: int, restore: list[tuple[int, int]]) -> None:
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self._restore = restore
        self._pending = bytearray()
        self._token = os.urandom(6).hex()

    @classmethod
    def claim_stdio(cls) -> Prelude | None:
        """Move the wire to private descriptors, as the SDK's `stdio_server` does: fd 0 then
        reads /dev/null and fd 1 writes to stderr, so nothing stray (a print in an import, a
        child process) can reach the protocol. `release` puts them back. None where that cannot
        be done (no POSIX descriptors, or sys.stdin/stdout are not fd 0/1): no prelude then."""
        try:
            import fcntl

            if sys.stdin.fileno() != 0 or sys.stdout.fileno() != 1:
                return None
            sys.stdout.flush()
            wires = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
        except (ImportError, AttributeError, OSError, ValueError):
            return None
        prelude = cls(wires[0], wires[1], [(wires[0], 0), (wires[1], 1)])
        try:
            for fd, diversion in ((0, _devnull), (1, _stderr_copy)):
                target = diversion()
                os.dup2(target, fd)
                os.close(target)
        except OSError:
            prelude.release()
            return None
        return prelude

    def release(self) -> None:
        """Point fd 0 and 1 back at the wire (the private descriptors stay open: a worker thread
        may still be reading one)."""
        for wire, fd in self._restore:
            with contextlib.suppress(OSError):
                os.dup2(wire, fd)
        self._restore = []

    def run(self, answers: Answers | None) -> Handover | None:
        """Answer what the prelude can; return the handover at the first message it cannot
        answer, or None if the client closed the connection first. Without answers, hand over
        at once."""
        if answers is None:
            return Handover(self.stdin_fd, self.stdout_fd, b"", {})
        lead: list[bytes] = []
        expected: dict[str, bytes] = {}
        initialized = False
        while True:
            line = self._readline()
            if line is None:
                return None
            if not line.endswith(b"\n"):  # a last line without a newline: the SDK's to read
                return self._handover(lead, line, expected)
            message = parse_line(line)
            parts = None if message is None else request_parts(message)
            answer: bytes | None = None
            if parts is not None:
                _, method, params = parts
                if not initialized:
                    if method == "initialize":
                        version = legacy_initialize_version(params, answers.versions)
                        answer = None if version is None else answers.initialize[version]
                elif method == "tools/list" and _empty(params):
                    answer = answers.tools_list
                elif method == "ping" and _empty(params):
                    answer = b"{}"
            elif (
                initialized
                and message is not None
                and is_notification(message, "notifications/initialized")
            ):
                lead.append(line)  # replayed verbatim: it completes the SDK's handshake
                continue
            if answer is None or message is None or parts is None:
                return self._handover(lead, line, expected)
            private = f"{_PRIVATE_ID}{self._token}-{len(expected) + 1}"
            try:
                sent = response(parts[0], answer)
            except (TypeError, ValueError):  # an id that cannot be echoed as the SDK would
                return self._handover(lead, line, expected)
            logger.debug("stdio prelude: answered %s", parts[1])
            self._write(sent)
            lead.append(json.dumps({**message, "id": private}, separators=(",", ":")).encode())
            lead[-1] += b"\n"
            expected[private] = response(private, answer)
            initialized = True

    def _handover(self, lead: list[bytes], line: bytes, expected: dict[str, bytes]) -> Handover:
        logger.debug(
            "stdio prelude: handing over to the MCP SDK at %r (replaying %d message(s))",
            line[:200],
            len(lead),
        )
        rest = b"".join([*lead, line, bytes(self._pending)])
        self._pending.clear()
        return Handover(self.stdin_fd, self.stdout_fd, rest, expected)

    def _readline(self) -> bytes | None:
        while True:
            end = self._pending.find(b"\n")
            if end >= 0:
                line = bytes(self._pending[: end + 1])
                del self._pending[: end + 1]
                return line
            data = os.read(self.stdin_fd, 65536)
            if not data:
                if not self._pending:
                    return None
                line = bytes(self._pending)
                self._pending.clear()
                return line
            self._pending += data

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.stdout_fd, view) :]


def _devnull() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _stderr_copy() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)
