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

from kbes.store.internals import AGGREGATE_TIMESTAMPS

_BASE_FIELDS = frozenset({"originator_id", "originator_version"})


class MsgspecTranscoder(Transcoder):
    """Untyped msgspec JSON, for state that has no declared type."""

    def encode(self, obj: Any) -> bytes:
        return msgspec.json.encode(obj)

    def decode(self, data: bytes) -> Any:
        return msgspec.json.decode(data)


_encoder = msgspec.json.Encoder()


@cache
def _decoder_for(cls: type) -> msgspec.json.Decoder[Any]:
    hints = typing.get_type_hints(cls)
    fields = [
        (f.name, hints.get(f.name, Any))
        for f in dataclasses.fields(cls)
        if f.name not in _BASE_FIELDS
    ]
    struct = msgspec.defstruct(f"{cls.__qualname__}State", fields, kw_only=True)
    return msgspec.json.Decoder(struct)


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


def _plan(topic: str) -> tuple[type, msgspec.json.Decoder[Any]] | None:
    """The topic's fast plan, worked out once per topic."""
    try:
        return _fast_plans[topic]
    except KeyError:
        plan = _fast_plans[topic] = _fast_plan(topic)
        return plan


def _fast_plan(topic: str) -> tuple[type, msgspec.json.Decoder[Any]] | None:
    """The event class of `topic` and a decoder of its fields with the timestamp left as the
    stored text; None if the event must go through `to_domain_event`."""
    cls = resolve_topic(topic)
    if getattr(cls, "class_version", 1) > 1:
        return None
    if isinstance(cls, type) and issubclass(cls, CanSnapshotAggregate):
        return None
    hints = typing.get_type_hints(cls)
    fields = [
        (f.name, str if f.name == "timestamp" else hints.get(f.name, Any))
        for f in dataclasses.fields(cls)
        if f.name not in _BASE_FIELDS
    ]
    struct = msgspec.defstruct(f"{cls.__qualname__}Fields", fields, kw_only=True)
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
        None for an event that needs `to_domain_event` (upcasting,
        snapshots)."""
        plan = _plan(topic)
        if plan is None:
            return None
        cls, decoder = plan
        try:
            return cls, decoder.decode(state)
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

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        cls = resolve_topic(stored_event.topic)
        try:
            if getattr(cls, "class_version", 1) > 1:
                # Upcasting works on the loose dict, as eventsourcing's own mapper does.
                return super().to_domain_event(stored_event)
            decoded = _decoder_for(cls).decode(stored_event.state)
            state = msgspec.structs.asdict(decoded)
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
