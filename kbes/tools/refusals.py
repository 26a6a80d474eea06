"""The words a model reads when kbes refuses, each refusal worded once: what went wrong and what
to do next. The domain and the application raise facts (`kbes.domain.errors`), which `REFUSALS`
words, one entry per fact, into the wire's refusals (`kbes.tools.codes`); `refusing` applies it
where a call is answered. The tools, the MCP server and its resources raise the refusals made
here for what only they refuse."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import msgspec

from kbes.domain.errors import (
    AlreadyPublished,
    ArticleChanged,
    ArticleElsewhere,
    ArticleNotFound,
    ArticleNotInLog,
    ArticleUnknown,
    ArticleUnpublished,
    BlankAuthor,
    BlankName,
    BlankTitle,
    Busy,
    DiffTooLarge,
    DomainError,
    EmptyKey,
    IndexUnavailable,
    InvalidId,
    KeyReused,
    KnowledgeBaseNotFound,
    NotATime,
    NothingToSave,
    NotPublished,
    TitleCharacter,
    TooLong,
    Unavailable,
    VersionNotFound,
    WriteContended,
)
from kbes.log.importer import (
    FileBecameLink,
    FileNotText,
    FileRefused,
    NameNotText,
    NoMarkdown,
    PinTaken,
    shown,
)
from kbes.log.markdown_file import FrontMatterRefused
from kbes.tools import codes
from kbes.tools.codes import (
    ApprovalRequired,
    EditDeclined,
    EditsDisabled,
    Gone,
    IdempotencyKeyReused,
    InternalError,
    InvalidArgument,
    InvalidState,
    InvalidVersion,
    KbesError,
    NotFound,
    TooLargeToDiff,
    UnsupportedResourceType,
    VersionConflict,
)

# Ids --------------------------------------------------------------------------------------

GRANTS_HINT = "check the id against the citation or the list of granted knowledge bases"


def shown_id(value: object) -> str:
    """An id as the caller sent it; quoted, and said so, when blanks around it are why it names
    nothing (`" KB "` looks like a good id in a message otherwise)."""
    text = str(value)
    if text != text.strip():
        return f"{text!r} (it has blanks around it: pass the id exactly as the citation gives it)"
    return text


def no_knowledge_base(knowledge_base_id: object) -> NotFound:
    return NotFound(
        f"no knowledge base {shown_id(knowledge_base_id)} is available here; {GRANTS_HINT}"
    )


def no_article(article_id: object) -> NotFound:
    return NotFound(
        f"no published article {shown_id(article_id)} in this knowledge base; "
        "search the knowledge base for current articles"
    )


# Versions ---------------------------------------------------------------------------------


def no_longer_an_answer(article_id: object, unpublished_at: str) -> Gone:
    """A read (or a diff) of an article unpublished since."""
    return Gone(
        f"article {article_id} was unpublished at {unpublished_at}; it is no longer an answer. "
        "Search again for a current article.",
        unpublished_at=unpublished_at,
    )


def never_published_at(article_id: object, since_version: str) -> InvalidVersion:
    """A diff from a version no read could have cited."""
    return InvalidVersion(
        f"article {article_id} never had a published version at {since_version}, so no "
        "read could have cited it; check since_version against the citation's updated_at, "
        "or read the article again",
        since_version=since_version,
    )


def no_published_version(article_id: object, updated_at: str) -> NotFound:
    """A version-pinned resource at a draft-era version, which nobody could see."""
    return NotFound(
        f"article {article_id} has no published version at {updated_at}; "
        "check the citation's updated_at, or read the article's current URI",
        updated_at=updated_at,
    )


# The feed ---------------------------------------------------------------------------------


def unsupported_resource_type(
    resource_type: str, supported: Sequence[str]
) -> UnsupportedResourceType:
    return UnsupportedResourceType(
        f"resource_type {resource_type!r} is not served here; supported: {', '.join(supported)}",
        supported=list(supported),
    )


def past_the_head(after_sequence: int, head: int) -> InvalidArgument:
    return InvalidArgument(
        f"after_sequence {after_sequence} is past the end of the log (its last "
        f"sequence is {head}); resume from a next_sequence this tool returned, or from 0",
        field="after_sequence",
    )


# Arguments --------------------------------------------------------------------------------

NOT_UNICODE = (
    "Expected text, got a lone surrogate (an escape such as \\ud800 alone), which is not "
    "Unicode text"
)


def not_unicode(field: str | None) -> InvalidArgument:
    """A lone surrogate in the text of `field` (None when no field can be named)."""
    return InvalidArgument(NOT_UNICODE + (f" - at `$.{field}`" if field else ""), field=field)


_FIELD_PATTERNS = (
    re.compile(r"at `\$\.([A-Za-z_][A-Za-z0-9_]*)"),
    re.compile(r"missing required field `([^`]+)`"),
    re.compile(r"unknown field `([^`]+)`"),
)

_HINTS = {
    "query": "pass 2 to 200 characters of text to search for",
    "limit": "pass a whole number within the tool's limits",
    "expected_version": (
        "pass the updated_at of the citation from a recent read_knowledge_article, "
        "an RFC 3339 date-time with offset such as 2026-11-30T09:00:00.000000Z"
    ),
    "idempotency_key": "pass a non-empty key unique to this intended change, e.g. a UUID",
    "after_sequence": "pass 0 or the next_sequence returned by the previous poll",
    "content": "pass the whole new article text",
    "title": "pass one line of visible text, or omit title to keep the current one",
    "knowledge_base_id": "pass the id of a granted knowledge base",
    "article_id": "pass the article_id from a search hit or citation",
    "question": "pass the question to answer",
}


def invalid_argument(error: msgspec.ValidationError | msgspec.DecodeError) -> InvalidArgument:
    """msgspec's validation text (which names the `$.path`), the field it names, and a hint."""
    text = str(error)
    field = None
    for pattern in _FIELD_PATTERNS:
        match = pattern.search(text)
        if match:
            field = match.group(1)
            break
    hint = _HINTS.get(field or "", "")
    message = f"{text}{' - ' + hint if hint else ''}"
    return InvalidArgument(message, field=field)


def not_a_resource_uri(uri: str, templates: Sequence[str]) -> InvalidArgument:
    return InvalidArgument(
        f"{uri!r} is not a kbes resource URI; use {', '.join(templates[:-1])} or {templates[-1]}",
        field="uri",
    )


# The server's steps -----------------------------------------------------------------------


def unknown_tool(name: str, names: Sequence[str]) -> str:
    """The protocol error's message for a call of a tool the server does not serve."""
    return f"Unknown tool: {name}; this server has {', '.join(names)}"


def unknown_prompt(name: str, names: Sequence[str]) -> str:
    """The protocol error's message for a prompt the server does not serve."""
    return f"Unknown prompt: {name}; this server has {', '.join(names)}"


def unknown_prompt_argument(prompt: str, name: str, names: Sequence[str]) -> InvalidArgument:
    return InvalidArgument(
        f"the prompt {prompt} has no argument {name}; its arguments are {', '.join(names)}",
        field=name,
    )


def prompt_argument_missing(prompt: str, name: str) -> InvalidArgument:
    return InvalidArgument(
        f"the prompt {prompt} needs the argument {name}; {_HINTS.get(name, 'pass it')}",
        field=name,
    )


def not_a_cursor(value: str) -> InvalidArgument:
    return InvalidArgument(
        f"the cursor {value!r} is not a sequence number; pass the next_sequence that "
        "poll_resource_events returned with the citations, or 0",
        field="cursor",
    )


def edits_disabled(tool: str) -> EditsDisabled:
    return EditsDisabled(
        f"this kbes server was started with --edits deny, so {tool} never "
        "writes. Tell the user the change you would make; they can restart the "
        "server with --edits ask (approve each edit) or --edits allow."
    )


CANNOT_ASK = {
    "unsupported": "this MCP client does not support it",
    "other_answer": "the client answered something else",
    "no_request": "this connection cannot ask",
}
"""Why the user could not be asked, by the server's name for the case."""


def approval_required(tool: str, why: str, failure: object = None) -> ApprovalRequired:
    """The user could not be asked: `why` is a key of `CANNOT_ASK`, or "failed" with the
    client's `failure`."""
    reason = f"the client failed: {failure}" if why == "failed" else CANNOT_ASK[why]
    return ApprovalRequired(
        f"this kbes server asks the user to approve every {tool} call through MCP "
        f"elicitation, and {reason}; nothing was written. To let edits through without asking, "
        "the user can restart the server with --edits allow.",
        setting="--edits allow",
    )


def edit_declined(tool: str, action: str) -> EditDeclined:
    """The user answered the approval with `action` (decline, or cancel: dismissed)."""
    return EditDeclined(
        f"the user {'declined' if action == 'decline' else 'dismissed'} this "
        f"{tool} call; nothing was written. Do not retry it unless the user asks "
        "you to; tell them what you wanted to change instead.",
        action=action,
    )


def internal_error(tool: str) -> InternalError:
    return InternalError(
        f"{tool} failed inside kbes (the server log has the details); "
        "nothing is known to be written. Retrying the same call is safe."
    )


# Limits of the MCP server --------------------------------------------------------------------


def too_many_subscriptions(limit: int) -> str:
    """A handshake-era session asked for one `resources/subscribe` URI past its limit."""
    return (
        f"this session already holds {limit} resource subscriptions, the most kbes allows "
        "one session (kbes serve --max-subscriptions); unsubscribe from URIs you no longer "
        "cite, or subscribe to the knowledge base's URI, which rings for any of its articles"
    )


def too_many_sessions(who: str, limit: int, idle_seconds: float) -> str:
    """A new HTTP session refused: `who` (a token's NAME, or a client address) holds `limit`."""
    return (
        f"{who} already holds {limit} open MCP sessions, the most kbes allows one client "
        "(kbes serve --max-sessions-per-client); end sessions you no longer use with HTTP "
        f"DELETE, or retry once one has been idle for {idle_seconds:g} s and has expired"
    )


# The facts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """What the caller asked, as they wrote it, for the words of a refusal of it: a refusal
    names the ids as sent (a store names the knowledge base by the UUID it parsed), and an
    unpublished article is worded for a write or for a read."""

    knowledge_base_id: object = None
    article_id: object = None
    writes: bool = False


NOT_ASKED = Asked()
"""For a fact met outside any one call's question: it is worded by its own fields."""


def _unknown_knowledge_base(fact: KnowledgeBaseNotFound, asked: Asked) -> NotFound:
    given = asked.knowledge_base_id
    return no_knowledge_base(fact.knowledge_base_id if given is None else given)


def _no_article(fact: ArticleNotFound, asked: Asked) -> NotFound:
    return no_article(fact.article_id)


def _unpublished(fact: ArticleUnpublished, asked: Asked) -> Gone:
    if not asked.writes:
        return no_longer_an_answer(fact.article_id, fact.unpublished_at)
    return Gone(
        f"article {fact.article_id} was unpublished at {fact.unpublished_at}; "
        "it cannot be edited through this tool",
        unpublished_at=fact.unpublished_at,
    )


def _version_conflict(fact: ArticleChanged, asked: Asked) -> VersionConflict:
    return VersionConflict(
        f"article {fact.article_id} changed since {fact.expected_version}: its current version "
        f"is {fact.current_version}. Read it again, re-apply your change to the current "
        "content, and edit with the new version.",
        current_version=fact.current_version,
        expected_version=fact.expected_version,
    )


def _key_reused(fact: KeyReused, asked: Asked) -> IdempotencyKeyReused:
    return IdempotencyKeyReused(
        f"idempotency_key {fact.idempotency_key!r} was already used for a different edit "
        f"(article {fact.article_id}); use a new key for a new change",
        field="idempotency_key",
    )


def _too_large_to_diff(fact: DiffTooLarge, asked: Asked) -> TooLargeToDiff:
    """A diff whose two versions differ too much, too intricately, to diff in bounded time."""
    return TooLargeToDiff(
        f"article {asked.article_id} changed too much since {fact.since_version} to diff: its "
        f"{fact.old_lines} lines then and {fact.new_lines} lines now differ in too many places. "
        "Call read_knowledge_article to read it as it is now, and cite that read's citation.",
        since_version=fact.since_version,
        updated_at=fact.updated_at,
        old_lines=fact.old_lines,
        new_lines=fact.new_lines,
    )


def _no_version(fact: VersionNotFound, asked: Asked) -> InvalidVersion:
    """A version-pinned resource at a time the article has no version at."""
    return InvalidVersion(
        f"article {fact.article_id} never had a version at {fact.updated_at}; check the "
        "citation's updated_at",
        updated_at=fact.updated_at,
    )


def _not_a_time(fact: NotATime, asked: Asked) -> InvalidArgument:
    return InvalidArgument(
        f"{fact.value!r} is not an RFC 3339 time with an offset ({fact.reason}); "
        "pass e.g. 2026-11-30T09:00:00.000000Z",
        field=fact.field,
    )


def _blank_title(fact: BlankTitle, asked: Asked) -> InvalidArgument:
    return InvalidArgument(
        "the title is blank; give a few words saying what the article is about", field="title"
    )


def _title_character(fact: TitleCharacter, asked: Asked) -> InvalidArgument:
    return InvalidArgument(
        f"the title has the control or format character U+{ord(fact.char):04X} "
        f"(category {fact.category}) at position {fact.position}; titles are one line of "
        "visible text, so remove it",
        field=fact.field,
    )


def _empty_key(fact: EmptyKey, asked: Asked) -> InvalidArgument:
    return InvalidArgument(
        "the idempotency key is empty; pass a key unique to this change, e.g. a UUID",
        field="idempotency_key",
    )


_WHAT = {"title": "the title", "content": "the content", "idempotency_key": "the idempotency key"}


def _too_long(fact: TooLong, asked: Asked) -> InvalidArgument:
    return InvalidArgument(
        f"{_WHAT.get(fact.field, fact.field)} is {fact.length} characters; "
        f"the limit is {fact.limit} ({fact.variable})",
        field=fact.field,
    )


def _write_contended(fact: WriteContended, asked: Asked) -> codes.Busy:
    what = f"article {fact.article_id}" if fact.article_id is not None else "these articles"
    return codes.Busy(
        f"{what} kept being written by another process ({fact.attempts} attempts); "
        "nothing was written, retry",
        attempts=fact.attempts,
    )


def _file_refused(fact: FileRefused, asked: Asked) -> InvalidArgument:
    return InvalidArgument(
        f"{shown(fact.name)}: {refusal(fact.cause, asked).message}", field=fact.cause.field
    )


REFUSALS: dict[type[DomainError], Callable[[Any, Asked], KbesError]] = {
    KnowledgeBaseNotFound: _unknown_knowledge_base,
    ArticleNotFound: _no_article,
    ArticleUnknown: lambda fact, asked: NotFound(f"no article {fact.article_id}"),
    ArticleNotInLog: lambda fact, asked: NotFound(f"no article {fact.article_id} in this log"),
    ArticleElsewhere: lambda fact, asked: NotFound(
        f"article {fact.article_id} is not in knowledge base {fact.knowledge_base_id}"
    ),
    ArticleUnpublished: _unpublished,
    AlreadyPublished: lambda fact, asked: InvalidState(f"article {fact.article_id} is published"),
    NotPublished: lambda fact, asked: InvalidState(f"article {fact.article_id} is not published"),
    ArticleChanged: _version_conflict,
    KeyReused: _key_reused,
    WriteContended: _write_contended,
    Busy: lambda fact, asked: codes.Busy(fact.reason),
    Unavailable: lambda fact, asked: codes.Unavailable(fact.reason),
    IndexUnavailable: lambda fact, asked: codes.Unavailable(
        fact.reason, knowledge_base_id=str(fact.knowledge_base_id)
    ),
    VersionNotFound: _no_version,
    DiffTooLarge: _too_large_to_diff,
    NotATime: _not_a_time,
    InvalidId: lambda fact, asked: InvalidArgument(
        f"{fact.field} {fact.value!r} is no id", field=fact.field
    ),
    BlankName: lambda fact, asked: InvalidArgument("blank name", field="name"),
    NothingToSave: lambda fact, asked: InvalidArgument("no content and no title to save"),
    # An author never comes from a tool's arguments; a Python caller may still pass a blank one.
    BlankAuthor: lambda fact, asked: InvalidArgument("blank author", field=fact.field),
    BlankTitle: _blank_title,
    TitleCharacter: _title_character,
    EmptyKey: _empty_key,
    TooLong: _too_long,
    NoMarkdown: lambda fact, asked: InvalidArgument(
        f"no *.md or *.markdown in {fact.folder}", field="DIR"
    ),
    FrontMatterRefused: lambda fact, asked: InvalidArgument(
        f"front matter: {fact.reason}", field="front_matter"
    ),
    PinTaken: lambda fact, asked: InvalidArgument(
        f"front matter id {fact.pin!r} is also {shown(fact.other)}'s", field="front_matter"
    ),
    NameNotText: lambda fact, asked: InvalidArgument(
        f"{shown(fact.name)}: name not UTF-8", field="DIR"
    ),
    FileNotText: lambda fact, asked: InvalidArgument(f"{fact.path}: {fact.reason}", field="DIR"),
    FileBecameLink: lambda fact, asked: InvalidArgument(
        f"{fact.path} is now a symbolic link", field="DIR"
    ),
    FileRefused: _file_refused,
}
"""Each fact's refusal on the wire: its code, the model's words and the details beside them,
for what the caller `Asked`. One entry per fact (`tests/test_refusal_tables.py`)."""


def refusal(fact: DomainError, asked: Asked = NOT_ASKED) -> KbesError:
    """The wire's refusal of `fact` for what the caller asked."""
    return REFUSALS[type(fact)](fact, asked)


def problem(fact: DomainError) -> str:
    """The model's words for a fact, alone (what a request's own check says of a value)."""
    return refusal(fact).message


@contextmanager
def refusing(asked: Asked = NOT_ASKED) -> Iterator[None]:
    """The one place a call's facts become the wire's refusals: where a tool call, a resource
    read or a prompt is answered."""
    try:
        yield
    except DomainError as fact:
        raise refusal(fact, asked) from None
