"""Errors an agent or a person can act on. Each carries a stable `code` that tools return
as JSON, and a message that says what to do next."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import msgspec


class KbesError(Exception):
    """A failure of a kbes command, reported with a stable code."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = {k: v for k, v in details.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class InvalidArgument(KbesError):
    """A tool argument is missing, malformed or out of range."""

    code = "invalid_argument"


class NotFound(KbesError):
    """No such knowledge base or published article (or it is not granted)."""

    code = "not_found"


class Gone(KbesError):
    """The article was published once and has since been unpublished."""

    code = "gone"


class VersionConflict(KbesError):
    """The article changed since the version the caller named."""

    code = "version_conflict"


class IdempotencyKeyReused(KbesError):
    """The idempotency key was already used for a different request."""

    code = "idempotency_key_reused"


class UnsupportedResourceType(KbesError):
    """The event feed exists only for the resource types listed."""

    code = "unsupported_resource_type"


class InvalidVersion(KbesError):
    """The article never had a version at that `updated_at`: a garbled or invented citation."""

    code = "invalid"


class InvalidState(KbesError):
    """The command does not apply to the article in its current state."""

    code = "invalid_state"


class ApprovalRequired(KbesError):
    """The server asks before every write, and this client cannot be asked."""

    code = "approval_required"


class EditDeclined(KbesError):
    """The user declined (or dismissed) the approval of this write."""

    code = "edit_declined"


class EditsDisabled(KbesError):
    """The server was started with `--edits deny`."""

    code = "edits_disabled"


class KnowledgeBaseNotFound(NotFound):
    """No knowledge base by that id. Carries the id as the caller gave it, so each door (the
    tools, the CLI) phrases its own advice around it."""

    def __init__(self, knowledge_base_id: object) -> None:
        super().__init__(f"no knowledge base {knowledge_base_id}")
        self.knowledge_base_id = knowledge_base_id


class ArticleNotFound(NotFound):
    """No published article by that id in the knowledge base (drafts are not found either)."""

    def __init__(self, article_id: object) -> None:
        super().__init__(f"no published article {article_id} in this knowledge base")
        self.article_id = article_id


class ArticleElsewhere(NotFound):
    """The article exists, in another knowledge base than the one named."""

    def __init__(self, article_id: object, knowledge_base_id: object) -> None:
        super().__init__(f"article {article_id} is not in knowledge base {knowledge_base_id}")
        self.article_id = article_id
        self.knowledge_base_id = knowledge_base_id


class ArticleUnpublished(Gone):
    """The article was published once and unpublished at `unpublished_at` (its version)."""

    def __init__(self, article_id: object, unpublished_at: str) -> None:
        super().__init__(
            f"article {article_id} was unpublished at {unpublished_at}",
            unpublished_at=unpublished_at,
        )
        self.article_id = article_id
        self.unpublished_at = unpublished_at


class ArticleChanged(VersionConflict):
    """An edit named `expected_version`, and the article is at `current_version` now."""

    def __init__(self, article_id: object, current_version: str, expected_version: str) -> None:
        super().__init__(
            f"article {article_id} changed since {expected_version}: its current version "
            f"is {current_version}",
            current_version=current_version,
            expected_version=expected_version,
        )
        self.article_id = article_id
        self.current_version = current_version
        self.expected_version = expected_version


class KeyReused(IdempotencyKeyReused):
    """The idempotency key is bound to another edit (of `article_id`)."""

    def __init__(self, idempotency_key: str, article_id: object) -> None:
        super().__init__(
            f"idempotency_key {idempotency_key!r} was already used for a different edit "
            f"(article {article_id})",
            field="idempotency_key",
        )
        self.idempotency_key = idempotency_key
        self.article_id = article_id


class Unavailable(KbesError):
    """The store cannot write now (a full disk, a read-only file): nothing was written, and
    the same call can be retried later unchanged."""

    code = "unavailable"


class Busy(KbesError):
    """Another process held the store's write lock past the lock timeout (KBES_LOCK_TIMEOUT):
    nothing was written, and the same call can be retried unchanged."""

    code = "busy"


class InternalError(KbesError):
    """An unexpected failure; details are in the server's log, never on the wire."""

    code = "internal_error"


_FIELD_PATTERNS = (
    re.compile(r"at `\$\.([A-Za-z_][A-Za-z0-9_]*)"),
    re.compile(r"missing required field `([^`]+)`"),
    re.compile(r"unknown field `([^`]+)`"),
)


def invalid_argument(error: msgspec.ValidationError | msgspec.DecodeError) -> InvalidArgument:
    """Turn msgspec's validation text (which names the `$.path`) into `invalid_argument`."""
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
}
