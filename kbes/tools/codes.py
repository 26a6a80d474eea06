"""The wire's refusals: one class per stable `code` of the agent contract (docs/tools.md), each
carrying the words a model reads (`message`) and the details beside them. The domain raises
facts (`kbes.domain.errors`), which `kbes.tools.refusals` words into these; the tools, the
MCP server and its resources raise these for what only they refuse."""

from __future__ import annotations

from typing import Any, ClassVar


class KbesError(Exception):
    """A refusal as the wire carries it: a stable `code`, the model's `message`, and
    `details` (ids, versions, the field) beside it."""

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


class Unavailable(KbesError):
    """The store cannot write now (a full disk, a read-only file): nothing was written, and
    the same call can be retried later unchanged."""

    code = "unavailable"


class Busy(KbesError):
    """Another process held the store's write lock past the lock timeout (KBES_LOCK_TIMEOUT):
    nothing was written, and the same call can be retried unchanged."""

    code = "busy"


class TooLargeToDiff(KbesError):
    """Two versions differ too much, too intricately, for a diff in bounded time."""

    code = "too_large_to_diff"


# What only the MCP server refuses -------------------------------------------------------------


class ApprovalRequired(KbesError):
    """The server asks before every write, and this client cannot be asked."""

    code = "approval_required"


class EditDeclined(KbesError):
    """The user declined (or dismissed) the approval of this write."""

    code = "edit_declined"


class EditsDisabled(KbesError):
    """The server was started with `--edits deny`."""

    code = "edits_disabled"


class InternalError(KbesError):
    """An unexpected failure; details are in the server's log, never on the wire."""

    code = "internal_error"
