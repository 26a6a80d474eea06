"""What the fuzz suite throws at the five agent tools: arbitrary JSON, strings with control
characters and lone surrogates, numbers out of range, every date-time form, and valid-looking
ids in disguise. Ids and versions of the seeded database are only known at run time, so the
strategies draw `Ref`s, which `resolve` turns into text just before each call."""

from __future__ import annotations

from typing import Any, NamedTuple

from hypothesis import strategies as st

from kbes import KnowledgeBaseStore
from kbes.tools import TOOLS
from kbes.tools.wire import MAX_SEQUENCE, ArticleResult, ReadRequest


class Ref(NamedTuple):
    """A seeded id (`name` a field of `Seed`, or "retired", an unpublished article) or the
    current version of the seeded article (`name` "version"), written in `form`."""

    name: str
    form: str


ID_FORMS = ["plain", "padded", "braced", "upper", "urn", "hex", "tab", "nul", "prefix"]
VERSION_FORMS = [
    "exact", "offset", "lower", "no_fraction", "long_fraction", "space", "naive", "plus2359",
    "minus2359", "micro_off",
]  # fmt: skip

NASTY = [
    "\x00", "\n", "\r\n", "\t", "\x1b[31m", "\x7f", "\u202e", "\u200b", "\ufeff", "\u2028",
    "\ud800", "\udfff", "\ud83d", " ", "\\", '"', "%s", "{}", "' OR 1=1 --", "NEAR(", "*",
]  # fmt: skip
"""Control characters, bidi overrides, lone surrogates, and FTS5 / SQL / format syntax."""

text = st.lists(st.one_of(st.characters(), st.sampled_from(NASTY)), max_size=12).map("".join)
"""Short strings from all of Unicode, surrogates and control characters included."""

numbers = st.one_of(
    st.integers(min_value=-5, max_value=120),
    st.integers(),
    st.integers(min_value=MAX_SEQUENCE - 2, max_value=2**70),
    st.integers(max_value=-(2**63)),
    st.floats(),
    st.booleans(),
    st.sampled_from([1.0, 5.5, -0.0, 1e308, 2**63 * 1.0]),
)
"""Numbers in and out of every range, and the values a sloppy client sends for one."""

json_values = st.recursive(
    st.none() | st.booleans() | numbers | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)


OFFSETS = [
    "Z", "z", "", "+00:00", "-00:00", "+23:59", "-23:59", "+24:00", "+05:30", "-05:00",
    "+0530", "+05", " UTC", "+00:00:01", "Z+01:00",
]  # fmt: skip


RESOURCE_TYPES = ("knowledge_base", "knowledge_base", "KNOWLEDGE_BASE", "article")


@st.composite
def date_times(draw: st.DrawFn) -> str:
    """RFC 3339 and its near misses: years 0001 and 9999, the leap second, lowercase t and z,
    a space or nothing between date and time, fractions of any length, missing and extreme
    offsets."""
    year = draw(st.sampled_from([1, 2, 1970, 2026, 9998, 9999]) | st.integers(0, 10_000))
    month = draw(st.sampled_from([1, 2, 12, 0, 13]))
    day = draw(st.sampled_from([1, 28, 29, 31, 0, 32]))
    hour = draw(st.sampled_from([0, 12, 23, 24]))
    minute = draw(st.sampled_from([0, 59, 60]))
    second = draw(st.sampled_from([0, 59, 60, 61]))
    separator = draw(st.sampled_from(["T", "t", " ", "_", ""]))
    digits = draw(st.integers(0, 30))
    fraction = draw(st.text("0123456789", min_size=digits, max_size=digits))
    fraction = "." + fraction if fraction else ""
    offset = draw(
        st.sampled_from(
            [
                "Z",
                "z",
                "",
                "+00:00",
                "-00:00",
                "+23:59",
                "-23:59",
                "+24:00",
                "+05:30",
                "-05:00",
                "+0530",
                "+05",
                " UTC",
                "+00:00:01",
                "Z+01:00",
            ]
        )
    )
    return (
        f"{year:04d}-{month:02d}-{day:02d}{separator}"
        f"{hour:02d}:{minute:02d}:{second:02d}{fraction}{offset}"
    )


def ids(*names: str) -> st.SearchStrategy[Any]:
    """A seeded id, mostly as citations write it, sometimes in a disguise."""
    return st.builds(
        Ref, st.sampled_from(names), st.sampled_from(ID_FORMS) | st.just("plain") | st.just("plain")
    )


KBS = ("kb", "kb", "other_kb")
ARTICLES = ("password", "password", "billing", "other_article", "draft", "retired", "kb")
versions = st.one_of(
    st.builds(Ref, st.just("version"), st.sampled_from(VERSION_FORMS)),
    st.builds(Ref, st.just("version"), st.just("exact")),
    date_times(),
)
some_text = st.text(min_size=1, max_size=40) | st.sampled_from(["password", "billing"])
anything = st.one_of(text, json_values, st.uuids().map(str), numbers, date_times())
"""What a spoiled field holds instead of its plausible value."""

Field = tuple[str, st.SearchStrategy[Any], bool]
"""A field's name, a plausible value, and whether the tool requires it."""


@st.composite
def _arguments(draw: st.DrawFn, fields: list[Field]) -> dict[Any, Any]:
    """A plausible call with up to two fields spoiled (replaced by anything, or dropped),
    and sometimes a stray field: each example probes a few things at once, deep enough that
    most reach the tool's logic rather than stopping at the first bad field."""
    arguments: dict[Any, Any] = {}
    for name, plausible, required in fields:
        if required or draw(st.booleans()):
            arguments[name] = draw(plausible)
    names = [name for name, _, _ in fields]
    for name in draw(st.lists(st.sampled_from(names), max_size=2, unique=True)):
        if draw(st.integers(0, 4)) == 0:
            arguments.pop(name, None)
        else:
            arguments[name] = draw(anything)
    if draw(st.integers(0, 5)) == 0:
        arguments[draw(text)] = draw(json_values)
    return arguments


SMALL = st.integers(min_value=0, max_value=120)
ARGUMENTS: dict[str, st.SearchStrategy[dict[Any, Any]]] = {
    "search_knowledge_base": _arguments(
        [
            ("knowledge_base_id", ids(*KBS), True),
            ("query", some_text, True),
            ("limit", SMALL, False),
        ]
    ),
    "read_knowledge_article": _arguments(
        [("knowledge_base_id", ids(*KBS), True), ("article_id", ids(*ARTICLES), True)]
    ),
    "edit_knowledge_article": _arguments(
        [
            ("knowledge_base_id", ids(*KBS), True),
            ("article_id", ids(*ARTICLES), True),
            ("content", some_text, True),
            ("expected_version", versions, True),
            ("idempotency_key", st.uuids().map(str) | some_text, True),
            ("title", some_text, False),
        ]
    ),
    "poll_resource_events": _arguments(
        [
            ("resource_type", st.sampled_from(RESOURCE_TYPES), True),
            ("resource_id", ids(*KBS), True),
            ("after_sequence", SMALL, False),
            ("limit", SMALL, False),
        ]
    ),
    "diff_knowledge_article": _arguments(
        [
            ("knowledge_base_id", ids(*KBS), True),
            ("article_id", ids(*ARTICLES), True),
            ("since_version", versions, True),
        ]
    ),
}


def _id_form(value: str, form: str) -> str:
    return {
        "plain": value,
        "padded": f" {value} ",
        "braced": f"{{{value}}}",
        "upper": value.upper(),
        "urn": f"urn:uuid:{value}",
        "hex": value.replace("-", ""),
        "tab": f"{value}\t",
        "nul": f"{value}\x00",
        "prefix": value[:-1],
    }[form]


def _version_form(version: str, form: str) -> str:
    """The seeded article's current version (`2026-...T...123456Z`), rewritten."""
    date, _, time = version[:-1].partition("T")
    return {
        "exact": version,
        "offset": f"{date}T{time}+00:00",
        "lower": f"{date}t{time}z",
        "no_fraction": f"{date}T{time.split('.')[0]}Z",
        "long_fraction": f"{date}T{time}000000000Z",
        "space": f"{date} {time}Z",
        "naive": f"{date}T{time}",
        "plus2359": f"{date}T{time}+23:59",
        "minus2359": f"{date}T{time}-23:59",
        "micro_off": version[:-2] + str((int(version[-2]) + 1) % 10) + "Z",
    }[form]


def resolve(value: Any, ids: dict[str, str], store: KnowledgeBaseStore) -> Any:
    """`value` with every `Ref` in it replaced by the text it stands for (`ids` maps the names
    `Ref`s use to seeded ids)."""
    if isinstance(value, Ref):
        if value.name == "version":
            request = ReadRequest(knowledge_base_id=ids["kb"], article_id=ids["password"])
            current = TOOLS["read_knowledge_article"].run(store, request, None)
            assert isinstance(current, ArticleResult)
            return _version_form(current.updated_at, value.form)
        return _id_form(ids[value.name], value.form)
    if isinstance(value, dict):
        return {key: resolve(item, ids, store) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, ids, store) for item in value]
    return value
