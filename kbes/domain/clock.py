"""Time for the store comes from an injectable clock, so a simulated day can run in seconds
while the log still carries true simulated timestamps."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol

ONE_MICROSECOND = timedelta(microseconds=1)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...


class SystemClock:
    """Wall-clock time."""

    def now(self) -> datetime:
        return datetime.now(tz=UTC)


class SimulatedClock:
    """A clock that only moves when told to; the simulations drive it through a working day."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("SimulatedClock needs a timezone-aware start time")
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return self._now

    def set(self, instant: datetime) -> None:
        with self._lock:
            self._now = instant.astimezone(UTC)

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now = self._now + delta


def next_timestamp(clock: Clock, after: datetime | None) -> datetime:
    """`max(now, after + 1 µs)`: an article's versions are strictly increasing instants,
    so one `updated_at` names exactly one version even if the clock stalls or steps back."""
    now = clock.now().astimezone(UTC)
    if after is not None and now <= after:
        return after + ONE_MICROSECOND
    return now


def format_timestamp(instant: datetime) -> str:
    """RFC 3339, UTC, always with microseconds: `2026-11-30T09:00:00.000000Z`. (isoformat
    writes the same text as strftime("%Y-%m-%dT%H:%M:%S.%fZ") in half the time; a replay of
    the log formats every event's timestamp.)"""
    return instant.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def timestamp_text(value: datetime | str) -> str:
    """`format_timestamp` of an instant given as a datetime or as stored RFC 3339 text. Stored
    text is already in that form when it is UTC with microseconds (msgspec writes `Z` and
    drops only a zero fraction), so a replay of the log mostly skips parsing and formatting."""
    if isinstance(value, str):
        if len(value) == 27 and value[-1] == "Z":
            return value
        value = parse_timestamp(value)
    return format_timestamp(value)


_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.(?P<fraction>\d+))?"
    r"(?P<offset>[Zz]|[+-]\d{2}:?\d{2})?",
    re.ASCII,
)
"""RFC 3339's date-time, as the tools' wire (msgspec) reads it: seconds required, `T`, `t` or
a space between date and time, `Z` or a `+hh:mm` offset (the colon optional). The offset is
optional here only so that its absence is refused in words of its own."""


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 timestamp with an offset: the one reading of a version (or any time)
    at every door, the tools' included (`kbes.tools.tool`). Refused (ValueError): naive
    times, other ISO 8601 forms (`20261201T200000Z`, no seconds), and a fraction finer than a
    microsecond, since a version is a microsecond and rounding or truncating such a time
    would name a version the text does not (trailing zeros past the sixth digit are exact,
    and read as they are)."""
    found = _RFC3339.fullmatch(text)
    if found is None:
        raise ValueError(
            f"timestamp {text!r} is not RFC 3339: write YYYY-MM-DDTHH:MM:SS, an optional "
            "fraction of a second, then Z or an offset such as +01:00"
        )
    if found["offset"] is None:
        raise ValueError(f"timestamp {text!r} has no UTC offset; add 'Z' or '+00:00'")
    fraction = found["fraction"] or ""
    if fraction[6:].strip("0"):
        raise ValueError(
            f"timestamp {text!r} has {len(fraction)} fractional digits, finer than a "
            "microsecond: versions are exact to the microsecond (six digits), so pass the "
            "citation's updated_at as it was given"
        )
    if len(fraction) > 6:
        start = found.start("fraction")
        text = text[: start + 6] + text[found.end("fraction") :]
    try:
        instant = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as e:  # a month 13, a second 60
        raise ValueError(f"timestamp {text!r}: {e}") from None
    return to_utc(instant, text)


def sub_microsecond(text: str) -> bool:
    """Whether `text` is an RFC 3339 time whose fraction is finer than a microsecond (which
    `parse_timestamp` refuses, and msgspec would round)."""
    found = _RFC3339.fullmatch(text)
    return found is not None and bool((found["fraction"] or "")[6:].strip("0"))


def to_utc(instant: datetime, text: str | None = None) -> datetime:
    """`instant` in UTC, or ValueError when its UTC day falls outside 0001-01-01..9999-12-31
    (`0001-01-01T00:00:00+05:30` parses, but Python cannot represent it in UTC). Every door
    that takes a time from outside comes through here, so such a time is bad input, never an
    OverflowError deep in `format_timestamp`."""
    try:
        return instant.astimezone(UTC)
    except OverflowError:
        shown = text if text is not None else instant.isoformat()
        raise ValueError(
            f"{shown} is out of range: in UTC it falls outside 0001-01-01..9999-12-31"
        ) from None
