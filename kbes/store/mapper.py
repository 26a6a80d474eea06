"""Stored events as compact JSON through msgspec: encoded natively (datetime, UUID) and decoded
into a typed struct per event class, which is both stricter and faster than the default
JSON transcoder."""

from __future__ import annotations

import dataclasses
import typing
from datetime import datetime
from functools import cache
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.domain import CanSnapshotAggregate
from eventsourcing.persistence import (
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
    Transcoder,
)
from eventsourcing.utils import get_topic, resolve_topic

from kbes.domain.author import Author
from kbes.store.internals import AGGREGATE_TIMESTAMPS

_BASE_FIELDS = frozenset({"originator_id", "originator_version"})


class MsgspecTranscoder(Transcoder):
    """Untyped msgspec JSON, for state that has no declared type."""

    def encode(self, obj: Any) -> bytes:
        return msgspec.json.encode(obj)

    def decode(self, data: bytes) -> Any:
        return msgspec.json.decode(data)


_encoder = msgspec.json.Encoder()


def _fields(cls: type, timestamp: Any = None) -> list[tuple[str, Any] | tuple[str, Any, Any]]:
    """The typed fields of an event class's stored state (the timestamp as `timestamp` when
    given, else as typed); a versioned class (`class_version` > 1) also reads the stored
    `class_version`, absent (1) in the state of a version-1 event."""
    hints = typing.get_type_hints(cls)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
        (f.name, timestamp if timestamp and f.name == "timestamp" else hints.get(f.name, Any))
        for f in dataclasses.fields(cls)
        if f.name not in _BASE_FIELDS
    ]
    if _class_version(cls) > 1:
        fields.append(("class_version", int, 1))
    return fields


def _class_version(cls: type) -> int:
    return int(getattr(cls, "class_version", 1))


@cache
def _decoder_for(cls: type) -> msgspec.json.Decoder[Any]:
    struct = msgspec.defstruct(f"{cls.__qualname__}State", _fields(cls), kw_only=True)
    return msgspec.json.Decoder(struct)


@cache
def _struct_for(cls: type) -> type[msgspec.Struct]:
    """The typed state of `cls`'s current version, for an upcast state to be converted to."""
    return msgspec.defstruct(f"{cls.__qualname__}Current", _fields(cls), kw_only=True)


def _current(cls: type, decoder: msgspec.json.Decoder[Any], state: bytes) -> Any | None:
    """The state decoded typed, if it was written at `cls`'s current version; None for an
    older version's state, which must be upcast first (`_upcast`). A version-1 class's state
    always decodes here (or fails as malformed)."""
    version = _class_version(cls)
    if version == 1:
        return decoder.decode(state)
    try:
        decoded = decoder.decode(state)
    except msgspec.ValidationError:
        return None  # e.g. a field added since (a version-1 event has no `author`)
    return decoded if decoded.class_version == version else None


def _upcast(cls: type, state: bytes) -> dict[str, Any]:
    """An older version's stored state brought to `cls`'s current version by the class's own
    `upcast_vN_vN+1` static methods, as eventsourcing's `Mapper.to_domain_event` runs them,
    then typed as the current version's fields."""
    loose: dict[str, Any] = msgspec.json.decode(state)
    version = _class_version(cls)
    from_version = loose.pop("class_version", 1)
    while from_version < version:
        getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(loose)
        from_version += 1
    loose["class_version"] = version
    typed = msgspec.structs.asdict(msgspec.convert(loose, _struct_for(cls), strict=False))
    return typed


@cache
def _aggregate_state_types(topic: str) -> dict[str, Any]:
    aggregate_cls = resolve_topic(topic)
    hints: dict[str, Any] = {}
    for klass in reversed(aggregate_cls.__mro__):
        hints.update(getattr(klass, "__annotations__", {}))
    resolved = typing.get_type_hints(aggregate_cls)
    types = {name: resolved.get(name, Any) for name in hints}
    for name in AGGREGATE_TIMESTAMPS:
        types[name] = datetime
    return types


_fast_plans: dict[str, tuple[type, msgspec.json.Decoder[Any]] | None] = {}


class _Stamp(msgspec.Struct):
    timestamp: str


_stamp_decoder = msgspec.json.Decoder(_Stamp)


class _Authored(msgspec.Struct):
    author: Author | None = None
    """Absent (None) in an event written before kbes recorded authors, as its upcast says."""


_author_decoder = msgspec.json.Decoder(_Authored)


def _plan(topic: str) -> tuple[type, msgspec.json.Decoder[Any]] | None:
    """The topic's fast plan, worked out once per topic."""
    try:
        return _fast_plans[topic]
    except KeyError:
        plan = _fast_plans[topic] = _fast_plan(topic)
        return plan


def _fast_plan(topic: str) -> tuple[type, msgspec.json.Decoder[Any]] | None:
    """The event class of `topic` and a decoder of its fields with the timestamp left as the
    stored text; None if the event must go through `to_domain_event` (a snapshot)."""
    cls = resolve_topic(topic)
    if isinstance(cls, type) and issubclass(cls, CanSnapshotAggregate):
        return None
    struct = msgspec.defstruct(f"{cls.__qualname__}Fields", _fields(cls, str), kw_only=True)
    return cls, msgspec.json.Decoder(struct)


class MsgspecMapper(Mapper[UUID]):
    """eventsourcing's Mapper, with msgspec doing the encoding and typed decoding."""

    def __init__(self, transcoder: Transcoder | None = None, **kwargs: Any) -> None:
        super().__init__(transcoder or MsgspecTranscoder(), **kwargs)
        if self.cipher or self.compressor:
            raise ValueError("MsgspecMapper does not support ciphers or compressors")

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        state = dict(vars(domain_event))
        originator_id = state.pop("originator_id")
        originator_version = state.pop("originator_version")
        class_version = getattr(type(domain_event), "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        return StoredEvent(
            originator_id=originator_id,
            originator_version=originator_version,
            topic=get_topic(type(domain_event)),
            state=_encoder.encode(state),
        )

    def decode_fields(self, topic: str, state: bytes) -> tuple[type, Any] | None:
        """The event class and its decoded fields (a typed struct with the event's attribute
        names, its `timestamp` still the stored RFC 3339 text: see clock.timestamp_text),
        without building the domain event: all that folding a long log into the views needs.
        None for an event that needs `to_domain_event` (upcasting an older version's state,
        snapshots)."""
        plan = _plan(topic)
        if plan is None:
            return None
        cls, decoder = plan
        try:
            decoded = _current(cls, decoder, state)
            return None if decoded is None else (cls, decoded)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            msg = f"Failed to deserialise state of stored event with topic '{topic}': {e}"
            raise MapperDeserialisationError(msg) from e

    def decode_stamp(self, topic: str, state: bytes) -> tuple[type, str] | None:
        """Just an event's class and timestamp (the stored text), all the event feed reports:
        the other fields (a whole article's content) are skipped, not decoded. None as for
        `decode_fields`."""
        plan = _plan(topic)
        if plan is None:
            return None
        try:
            return plan[0], _stamp_decoder.decode(state).timestamp
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            msg = f"Failed to deserialise state of stored event with topic '{topic}': {e}"
            raise MapperDeserialisationError(msg) from e

    def decode_author(self, state: bytes) -> Author | None:
        """Just an event's author (None for one written before kbes recorded authors): the
        rest of the state is skipped, not decoded."""
        try:
            return _author_decoder.decode(state).author
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            raise MapperDeserialisationError(f"Failed to deserialise an author: {e}") from e

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        cls = resolve_topic(stored_event.topic)
        try:
            decoded = _current(cls, _decoder_for(cls), stored_event.state)
            if decoded is None:
                # Upcasting works on the loose dict, as eventsourcing's own mapper does.
                state = _upcast(cls, stored_event.state)
            else:
                state = msgspec.structs.asdict(decoded)
            state.pop("class_version", None)
            if isinstance(cls, type) and issubclass(cls, CanSnapshotAggregate):
                types = _aggregate_state_types(state["topic"])
                state["state"] = {
                    key: msgspec.convert(value, types.get(key, Any), strict=False)
                    for key, value in state["state"].items()
                }
        except (msgspec.ValidationError, msgspec.DecodeError, KeyError) as e:
            msg = (
                f"Failed to deserialise state of stored event with topic "
                f"'{stored_event.topic}', originator_id '{stored_event.originator_id}' "
                f"and originator_version {stored_event.originator_version}: {e}"
            )
            raise MapperDeserialisationError(msg) from e
        state["originator_id"] = stored_event.originator_id
        state["originator_version"] = stored_event.originator_version
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", state)
        return event
