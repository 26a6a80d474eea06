"""What went wrong, as facts. Each error has a stable `code` (the wire's), and the ids,
versions, field names and limits involved; `str()` is a plain line for developers. The words
are each door's: the agent contract words refusals for models (`kbes.tools.refusals`), the CLI
for people (`kbes.cli.refusals`)."""

from __future__ import annotations

from typing import Any, ClassVar


class KbesError(Exception):
    """A failure of a kbes command, reported with a stable code. `message` is the text of the
    door that raised it, or the plain line of a domain fact; `details` go on the wire beside it."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = {k: v for k, v in details.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


# The codes --------------------------------------------------------------------------------


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


class IndexUnavailable(Unavailable):
    """The search index of one knowledge base cannot be used now, for `reason` (a full disk, an
    unwritable folder, files damaged past rebuilding here): nothing was searched, the other
    knowledge bases are unaffected, and the same call can be retried once the cause is gone."""

    def __init__(self, knowledge_base_id: object, reason: str) -> None:
        super().__init__(
            f"the search index of knowledge base {knowledge_base_id} cannot be used now: "
            f"{reason}; retry later"
        )
        self.knowledge_base_id = knowledge_base_id
        self.reason = reason


class WriteContended(Busy):
    """A person's write (last writer wins) found, `attempts` times in a row, that another
    process had written the same article first, each time after loading it afresh: nothing
    was written; `article_id` names the article when there is one."""

    def __init__(self, attempts: int, article_id: object = None) -> None:
        what = f"article {article_id}" if article_id is not None else "these articles"
        super().__init__(
            f"{what} kept being written by another process ({attempts} attempts); "
            "nothing was written, retry",
            attempts=attempts,
        )
        self.attempts = attempts
        self.article_id = article_id


class InternalError(KbesError):
    """An unexpected failure; details are in the server's log, never on the wire."""

    code = "internal_error"


# The facts: each carries what a door needs to word it ------------------------------------


class KnowledgeBaseNotFound(NotFound):
    """No knowledge base by that id (kept as the caller gave it)."""

    def __init__(self, knowledge_base_id: object) -> None:
        super().__init__(f"no knowledge base {knowledge_base_id}")
        self.knowledge_base_id = knowledge_base_id


class ArticleNotFound(NotFound):
    """No published article by that id in the knowledge base (drafts are not found either)."""

    def __init__(self, article_id: object) -> None:
        super().__init__(f"no published article {article_id} in this knowledge base")
        self.article_id = article_id


class ArticleUnknown(NotFound):
    """No article of any status by that id."""

    def __init__(self, article_id: object) -> None:
        super().__init__(f"no article {article_id}")
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
            f"article {article_id} is at {current_version}, not {expected_version}",
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
            f"idempotency key {idempotency_key!r} is bound to another edit of {article_id}",
            field="idempotency_key",
        )
        self.idempotency_key = idempotency_key
        self.article_id = article_id


class AlreadyPublished(InvalidState):
    """A publish of an article that is published."""

    def __init__(self, article_id: object) -> None:
        super().__init__(f"article {article_id} is published")
        self.article_id = article_id


class NotPublished(InvalidState):
    """An unpublish of an article that is not published."""

    def __init__(self, article_id: object) -> None:
        super().__init__(f"article {article_id} is not published")
        self.article_id = article_id


class VersionNotFound(InvalidVersion):
    """The article never had a version at exactly `updated_at`."""

    def __init__(self, article_id: object, updated_at: str) -> None:
        super().__init__(f"article {article_id} has no version {updated_at}", updated_at=updated_at)
        self.article_id = article_id
        self.updated_at = updated_at


class NotATime(InvalidArgument):
    """`value` is no RFC 3339 time with an offset (`reason` says why), given as `field`."""

    def __init__(self, value: object, reason: str, field: str) -> None:
        super().__init__(f"{field} {value!r}: {reason}", field=field)
        self.value = value
        self.reason = reason
        self.field = field


class InvalidId(InvalidArgument):
    """`value`, given as `field`, is no id."""

    def __init__(self, field: str, value: object) -> None:
        super().__init__(f"{field} {value!r} is no id", field=field)
        self.field = field
        self.value = value


class BlankName(InvalidArgument):
    """A knowledge base's name is empty or only blanks."""

    def __init__(self) -> None:
        super().__init__("blank name", field="name")
        self.field = "name"


class NothingToSave(InvalidArgument):
    """A person's save names neither new content nor a new title."""

    def __init__(self) -> None:
        super().__init__("no content and no title to save")


class BlankTitle(InvalidArgument):
    """A title that is empty or only blanks."""

    def __init__(self) -> None:
        super().__init__("blank title", field="title")
        self.field = "title"


class TitleCharacter(InvalidArgument):
    """A title (or, as `field` says, a knowledge base's name) holding `char`, of a refused
    Unicode `category`, at `position`."""

    def __init__(self, char: str, category: str, position: int, field: str = "title") -> None:
        super().__init__(f"{field} has U+{ord(char):04X} ({category}) at {position}", field=field)
        self.field = field
        self.char = char
        self.category = category
        self.position = position


class EmptyKey(InvalidArgument):
    """An empty idempotency key."""

    def __init__(self) -> None:
        super().__init__("empty idempotency key", field="idempotency_key")
        self.field = "idempotency_key"


class TooLong(InvalidArgument):
    """`field` is `length` characters, over its `limit` (which the setting `variable` raises;
    empty for a fixed limit, as a knowledge base's name has)."""

    def __init__(self, field: str, length: int, limit: int, variable: str) -> None:
        super().__init__(f"{field} is {length} characters, over {limit}", field=field)
        self.field = field
        self.length = length
        self.limit = limit
        self.variable = variable


class DiffTooLarge(TooLargeToDiff):
    """Diffing `old_lines` lines into `new_lines` would take more than `budget` matcher steps
    (`kbes.log.line_diff`): the two texts differ too much, too intricately, to diff."""

    def __init__(self, old_lines: int, new_lines: int, budget: int) -> None:
        super().__init__(
            f"diffing {old_lines} lines into {new_lines} takes over {budget} steps",
            old_lines=old_lines,
            new_lines=new_lines,
        )
        self.old_lines = old_lines
        self.new_lines = new_lines
        self.budget = budget
