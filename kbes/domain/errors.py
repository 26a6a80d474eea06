"""What went wrong, as facts: the ids, versions, field names and limits involved, and no more.
A fact has no wire code and no words: `str()` only lists its fields, for a developer's
traceback. Each door words facts for its own readers, in one table each: the agent contract
for models, with the wire's codes (`kbes.tools.refusals`), the CLI for people
(`kbes.cli.refusals`). Families (`NotFound`, `InvalidArgument`, ...) group facts a caller
handles alike; only their members are raised."""

from __future__ import annotations


class DomainError(Exception):
    """A fact a kbes command was refused for. Each subclass passes its constructor's arguments
    up and keeps them as attributes, which `str()` lists."""

    def __str__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


# Families ---------------------------------------------------------------------------------


class InvalidArgument(DomainError):
    """A value is malformed or out of range: `field` names it when one can be named."""

    field: str | None = None


class NotFound(DomainError):
    """Something named does not exist (or not where it was looked for)."""


class Gone(DomainError):
    """The article was published once and has since been unpublished."""


class InvalidState(DomainError):
    """The command does not apply to the article in its current state."""


class Busy(DomainError):
    """Another process held the store's write lock (or a projection's writer) too long:
    nothing was written, and the same call can be retried unchanged. `reason` is the store's
    account of which lock and why (its engine's own error included)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class Unavailable(DomainError):
    """The store cannot write now (a full disk, a read-only file, an unreachable log): nothing
    was written, and the same call can be retried later unchanged. `reason` is the store's
    account of why (its engine's own error included)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class IndexUnavailable(Unavailable):
    """One knowledge base's search index cannot be used now, for `cause` (a full disk, an
    unwritable folder, files damaged past rebuilding here): nothing was searched, and the
    other knowledge bases are unaffected."""

    def __init__(self, knowledge_base_id: object, cause: str) -> None:
        super().__init__(
            f"the search index of knowledge base {knowledge_base_id} cannot be used now: "
            f"{cause}; retry later"
        )
        self.knowledge_base_id = knowledge_base_id
        self.cause = cause


# Knowledge bases and articles ----------------------------------------------------------------


class KnowledgeBaseNotFound(NotFound):
    """No knowledge base by that id (kept as the caller gave it)."""

    def __init__(self, knowledge_base_id: object) -> None:
        super().__init__(knowledge_base_id)
        self.knowledge_base_id = knowledge_base_id


class ArticleNotFound(NotFound):
    """No published article by that id in the knowledge base (drafts are not found either)."""

    def __init__(self, article_id: object) -> None:
        super().__init__(article_id)
        self.article_id = article_id


class ArticleUnknown(NotFound):
    """No article of any status by that id."""

    def __init__(self, article_id: object) -> None:
        super().__init__(article_id)
        self.article_id = article_id


class ArticleNotInLog(NotFound):
    """No article by that id in the log a history is read from (`kbes.log.history`)."""

    def __init__(self, article_id: object) -> None:
        super().__init__(article_id)
        self.article_id = article_id


class ArticleElsewhere(NotFound):
    """The article exists, in another knowledge base than the one named."""

    def __init__(self, article_id: object, knowledge_base_id: object) -> None:
        super().__init__(article_id, knowledge_base_id)
        self.article_id = article_id
        self.knowledge_base_id = knowledge_base_id


class ArticleUnpublished(Gone):
    """The article was published once and unpublished at `unpublished_at` (its version)."""

    def __init__(self, article_id: object, unpublished_at: str) -> None:
        super().__init__(article_id, unpublished_at)
        self.article_id = article_id
        self.unpublished_at = unpublished_at


class AlreadyPublished(InvalidState):
    """A publish of an article that is published."""

    def __init__(self, article_id: object) -> None:
        super().__init__(article_id)
        self.article_id = article_id


class NotPublished(InvalidState):
    """An unpublish of an article that is not published."""

    def __init__(self, article_id: object) -> None:
        super().__init__(article_id)
        self.article_id = article_id


# Edits ----------------------------------------------------------------------------------------


class ArticleChanged(DomainError):
    """An edit named `expected_version`, and the article is at `current_version` now."""

    def __init__(self, article_id: object, current_version: str, expected_version: str) -> None:
        super().__init__(article_id, current_version, expected_version)
        self.article_id = article_id
        self.current_version = current_version
        self.expected_version = expected_version


class KeyReused(DomainError):
    """The idempotency key is bound to another edit (of `article_id`)."""

    def __init__(self, idempotency_key: str, article_id: object) -> None:
        super().__init__(idempotency_key, article_id)
        self.idempotency_key = idempotency_key
        self.article_id = article_id


class WriteContended(DomainError):
    """A person's write (last writer wins) found, `attempts` times in a row, that another
    process had written the same article first, each time after loading it afresh: nothing
    was written; `article_id` names the article when there is one."""

    def __init__(self, attempts: int, article_id: object = None) -> None:
        super().__init__(attempts, article_id)
        self.attempts = attempts
        self.article_id = article_id


# Versions -------------------------------------------------------------------------------------


class VersionNotFound(DomainError):
    """The article never had a version at exactly `updated_at`: a garbled or invented
    citation."""

    def __init__(self, article_id: object, updated_at: str) -> None:
        super().__init__(article_id, updated_at)
        self.article_id = article_id
        self.updated_at = updated_at


class DiffTooLarge(DomainError):
    """Diffing `old_lines` lines into `new_lines` would take more than `budget` matcher steps
    (`kbes.log.line_diff`): the two texts differ too much, too intricately, to diff. An
    article's diff (`kbes.log.history.unified_diff`) also names the two versions:
    `since_version` and `updated_at`."""

    def __init__(
        self,
        old_lines: int,
        new_lines: int,
        budget: int,
        since_version: str | None = None,
        updated_at: str | None = None,
    ) -> None:
        super().__init__(old_lines, new_lines, budget, since_version, updated_at)
        self.old_lines = old_lines
        self.new_lines = new_lines
        self.budget = budget
        self.since_version = since_version
        self.updated_at = updated_at


# Values ---------------------------------------------------------------------------------------


class NotATime(InvalidArgument):
    """`value` is no RFC 3339 time with an offset (`reason` says why), given as `field`."""

    field: str

    def __init__(self, value: object, reason: str, field: str) -> None:
        super().__init__(value, reason, field)
        self.value = value
        self.reason = reason
        self.field = field


class InvalidId(InvalidArgument):
    """`value`, given as `field`, is no id."""

    field: str

    def __init__(self, field: str, value: object) -> None:
        super().__init__(field, value)
        self.field = field
        self.value = value


class BlankName(InvalidArgument):
    """A knowledge base's name is empty or only blanks."""

    field = "name"


class BlankAuthor(InvalidArgument):
    """An author's name, given as `field` (`--author`, `KBES_AUTHOR`), is empty or only
    blanks."""

    field: str

    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


class NothingToSave(InvalidArgument):
    """A person's save names neither new content nor a new title."""


class BlankTitle(InvalidArgument):
    """A title that is empty or only blanks."""

    field = "title"


class TitleCharacter(InvalidArgument):
    """A title (or, as `field` says, a knowledge base's name) holding `char`, of a refused
    Unicode `category`, at `position`."""

    field: str

    def __init__(self, char: str, category: str, position: int, field: str = "title") -> None:
        super().__init__(char, category, position, field)
        self.field = field
        self.char = char
        self.category = category
        self.position = position


class EmptyKey(InvalidArgument):
    """An empty idempotency key."""

    field = "idempotency_key"


class TooLong(InvalidArgument):
    """`field` is `length` characters, over its `limit` (which the setting `variable` raises;
    empty for a fixed limit, as a knowledge base's name has)."""

    field: str

    def __init__(self, field: str, length: int, limit: int, variable: str) -> None:
        super().__init__(field, length, limit, variable)
        self.field = field
        self.length = length
        self.limit = limit
        self.variable = variable
