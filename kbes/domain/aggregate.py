"""What every kbes aggregate shares: how the aggregate cache copies one."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

_IMMUTABLE = frozenset({str, int, float, bool, UUID, datetime, type(None)})

A = TypeVar("A", bound=Aggregate)


def copy_aggregate(aggregate: A, memo: dict[int, object]) -> A:
    """The deep copy the aggregate cache hands each command, made cheaply: attributes that are
    immutable (ids, text, flags, instants: all of an article's) are shared, anything else is
    deep-copied. Every edit takes one such copy, so `copy.deepcopy`'s generic walk would be
    paid on the hot path."""
    clone = object.__new__(type(aggregate))
    state = clone.__dict__
    for name, value in vars(aggregate).items():
        state[name] = value if type(value) in _IMMUTABLE else copy.deepcopy(value, memo)
    return clone
